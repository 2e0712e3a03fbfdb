"""Reductions (sum, prod, max, min, any, all, argmax, argmin) and scans (cumsum, cumprod).

``axes`` is a sorted tuple of non-negative axes (the fg.* functions normalise
it); ``keepdims`` keeps reduced axes with size 1, as NumPy does.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np

from ..backends import cc
from ..dtypes import bool_, int32, int64
from ..errors import ShapeError
from . import lax
from .ad import defjvp, deflinear, defvjp
from .batching import axis_size, defvectorized, to_front
from .checks import normalize_axis, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .domains import DISTINCT, Domain
from .shape import expand_dims_p

__all__ = ["REDUCTIONS", "argmax_p", "argmin_p", "cumsum_p", "cumprod_p", "logsumexp_p", "softmax_cross_entropy_p",
           "softmax_cross_entropy_grad_p"]


def _reduced_shape(op: str, x: ShapedArray, axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    for a in axes:
        if not 0 <= a < max(len(x.shape), 1) or (not x.shape and a != 0):
            raise ShapeError(f"{op}: axis {a} is out of range for shape {fmt_shape(x.shape)}")
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _expand(g: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """Put reduced axes back (size 1) so ``g`` broadcasts against the input."""
    if keepdims or not axes:
        return g

    return bind(expand_dims_p, g, dimensions=axes)


_UFUNC_OF = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum", "any": "logical_or",
             "all": "logical_and"}


def _reduce_onnx(op: str) -> Any:
    """An ONNX reduction taking its axes as an input (opset 18)."""

    def emit(g: Any, ins: list[str], out: str, eqn: Any) -> None:
        g.node(op, [ins[0], g.ints(eqn.params["axes"], "axes")], [out], keepdims=int(eqn.params["keepdims"]))

    emit.__doc__ = op
    return emit


def _reduction(name: str, kernel: str, kinds: str, *, needs_elements: bool = False, out: Any = None,
               differentiable: bool = True, autocast: str | None = None, torch_name: str | None = None,
               onnx: str | None = None, tags: frozenset[str] = frozenset()) -> Primitive:
    def rule(x: ShapedArray, *, axes: tuple[int, ...], keepdims: bool) -> ShapedArray:
        require_kind(name, x.dtype, kinds, "a bool array" if kinds == "b" else
                     "a numeric array" if "c" in kinds else "a real numeric array (complex numbers have no order)")
        if needs_elements and any(x.shape[a] == 0 for a in axes if a < len(x.shape)):
            raise ShapeError(f"{name}: reducing an empty axis of shape {fmt_shape(x.shape)} has no identity")
        return ShapedArray(_reduced_shape(name, x, axes, keepdims), out or x.dtype, x.device)

    ufunc = getattr(np, _UFUNC_OF[kernel])

    keep_dtype = kernel in ("sum", "prod")  # (NumPy would widen small integers: the rule says x's dtype)

    def run_numpy(xp: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
        # ufunc.reduce directly: np.sum/np.max add microseconds of wrapper per call
        if (kernel in ("max", "min") or (kernel == "sum" and x.dtype.kind in "iu")) and axes \
                and 2 <= (block := math.prod(x.shape[a] for a in axes)) <= 16 and x.size >= 256 * block:
            return _small_blocks(ufunc, x, axes, keepdims)
        if keep_dtype:
            return xp.asarray(ufunc.reduce(x, axis=axes, keepdims=keepdims, dtype=x.dtype))
        return xp.asarray(ufunc.reduce(x, axis=axes, keepdims=keepdims))

    def run(xp: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
        if keep_dtype:
            return xp.asarray(getattr(xp, kernel)(x, axis=axes, keepdims=keepdims, dtype=x.dtype))
        return xp.asarray(getattr(xp, kernel)(x, axis=axes, keepdims=keepdims))

    run.__name__ = run_numpy.__name__ = kernel
    return Primitive(name, rule, kernel=run_numpy, gpu_kernel=run, differentiable=differentiable, autocast=autocast,
                     torch_name=torch_name, onnx=_reduce_onnx(onnx) if onnx else None, tags=tags)


def _small_blocks(ufunc: Any, x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """The maximum (minimum, integer sum) over a few elements per result, as one ufunc call per
    element of the block over every result at once: NumPy's reduce loops over each result's
    few elements (a 2x2 max pool's windows: 62 ms against 6.7 ms for (64, 64, 24, 24)
    float32). The same values, NaN included; a tie of +0 and -0 may go the other way, as it
    does between NumPy's own loops (its order follows the memory layout)."""
    axes = tuple(sorted(a % x.ndim for a in axes))
    acc: Any = None
    for position in itertools.product(*(range(x.shape[a]) for a in axes)):
        index: list[Any] = [slice(None)] * x.ndim
        for a, i in zip(axes, position):
            index[a] = i
        part = x[tuple(index)]
        if acc is None:
            acc = np.array(part)
        else:
            ufunc(acc, part, out=acc)
    return np.expand_dims(acc, axes) if keepdims else acc


REDUCTIONS: dict[str, Primitive] = {
    # (sums and products over many elements lose too much in 8 bits of mantissa: fg.autocast
    # runs them in float32)
    "reduce_sum": _reduction("reduce_sum", "sum", "biufc", autocast="float32", torch_name="Sum", onnx="ReduceSum",
                             tags=frozenset({"sum"})),
    "reduce_prod": _reduction("reduce_prod", "prod", "biufc", autocast="float32", torch_name="Prod",
                              onnx="ReduceProd"),
    "reduce_max": _reduction("reduce_max", "max", "biuf", needs_elements=True, torch_name="Max", onnx="ReduceMax",
                             tags=frozenset({"max"})),
    "reduce_min": _reduction("reduce_min", "min", "biuf", needs_elements=True, torch_name="Min", onnx="ReduceMin",
                             tags=frozenset({"min"})),
    "reduce_any": _reduction("reduce_any", "any", "b", out=bool_, differentiable=False),
    "reduce_all": _reduction("reduce_all", "all", "b", out=bool_, differentiable=False),
}


def _sum_vjp(g: Any, ans: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    return lax.broadcast_to(_expand(g, axes, keepdims), x.shape)


deflinear(REDUCTIONS["reduce_sum"], _sum_vjp)


def _winners(x: Any, ans: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, Any]:
    """Where ``x`` attains its extremum, and how many elements of each group do (ties share
    the derivative evenly, as in JAX). The count is summed in int32, exact in any order, so
    it takes the small-block path below."""
    at = lax.eq(x, _expand(ans, axes, keepdims))
    count = lax.reduce_sum(lax.convert(at, int32), axes, keepdims=keepdims)
    return at, lax.convert(count, x.dtype)


def _chosen_jvp(t: Any, ans: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    at, count = _winners(x, ans, axes, keepdims)
    return lax.reduce_sum(t * lax.convert(at, t.dtype), axes, keepdims=keepdims) / count


def _chosen_vjp(g: Any, ans: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    # the JVP's transpose, as JAX's: each winner gets its group's g / count (divided over the
    # result's shape). A product with the 0/1 mask, not a select: NumPy's select branches on
    # every element, 8x slower on a max pool's unpredictable masks.
    at, count = _winners(x, ans, axes, keepdims)
    return _expand(g / count, axes, keepdims) * lax.convert(at, g.dtype)


for _name in ("reduce_max", "reduce_min"):
    defjvp(REDUCTIONS[_name], _chosen_jvp)
    defvjp(REDUCTIONS[_name], _chosen_vjp, saves="both")
    REDUCTIONS[_name].domain = DISTINCT


def _product_of_others(x: Any, axes: tuple[int, ...]) -> Any:
    """For every element, the product of the *other* elements of its reduction group.
    Exclusive products from both sides: exact with zeros, no division."""
    nd = x.ndim
    kept = [i for i in range(nd) if i not in axes]
    perm = tuple(kept) + tuple(axes)
    xt = lax.transpose(x, perm)
    lead = tuple(xt.shape[:len(kept)])
    n = 1
    for a in axes:
        n *= x.shape[a]
    if n == 0:
        return lax.zeros(x, x.shape)
    flat = lax.reshape(xt, lead + (n,))
    pad = [(0, 0)] * len(lead) + [(1, 0)]
    left = lax.pad(lax.cumprod(lax.slice_axis(flat, -1, 0, n - 1), -1), pad, 1)
    right = lax.flip(lax.pad(lax.cumprod(lax.slice_axis(lax.flip(flat, (-1,)), -1, 0, n - 1), -1), pad, 1), (-1,))
    others = lax.reshape(left * right, xt.shape)
    inverse = tuple(sorted(range(nd), key=lambda i: perm[i]))
    return lax.transpose(others, inverse)


defjvp(REDUCTIONS["reduce_prod"], lambda t, ans, x, *, axes, keepdims: lax.reduce_sum(
    t * _product_of_others(x, axes), axes, keepdims=keepdims))
defvjp(REDUCTIONS["reduce_prod"], lambda g, ans, x, *, axes, keepdims: _expand(g, axes, keepdims) * _product_of_others(
    x, axes), saves="args")


def _arg_reduction(name: str, kernel: str) -> Primitive:
    def rule(x: ShapedArray, *, axis: int | None, keepdims: bool) -> ShapedArray:
        require_kind(name, x.dtype, "biuf", "a numeric array")
        if axis is None:
            if x.size == 0:
                raise ShapeError(f"{name}: empty array of shape {fmt_shape(x.shape)} has no {kernel[3:]}imum")
            shape = (1,) * len(x.shape) if keepdims else ()
        else:
            axis = normalize_axis(name, axis, len(x.shape))
            if x.shape and x.shape[axis] == 0:
                raise ShapeError(f"{name}: axis {axis} of shape {fmt_shape(x.shape)} is empty")
            shape = _reduced_shape(name, x, (axis,) if x.shape else (), keepdims)
        return ShapedArray(shape, int64, x.device)

    def run(xp: Any, x: Any, *, axis: int | None, keepdims: bool) -> Any:
        return xp.asarray(getattr(xp, kernel)(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)

    return Primitive(name, rule, kernel=run, differentiable=False)


argmax_p = _arg_reduction("argmax", "argmax")


def _arg_reduction_batch(prim: Primitive) -> Any:
    def rule(args: Any, dims: Any, *, axis: int | None, keepdims: bool) -> tuple[Any, int]:
        x = to_front(args[0], dims[0])
        if x.ndim == 1:  # 0-d members: index 0 each
            return lax.zeros(x, x.shape, int64), 0
        if axis is not None:
            return bind(prim, x, axis=axis % (x.ndim - 1) + 1, keepdims=keepdims), 0
        flat = bind(prim, lax.reshape(x, (x.shape[0], math.prod(x.shape[1:]))), axis=1, keepdims=False)
        return (lax.reshape(flat, (x.shape[0],) + (1,) * (x.ndim - 1)) if keepdims else flat), 0

    return rule


argmax_p.batch = _arg_reduction_batch(argmax_p)
argmin_p = _arg_reduction("argmin", "argmin")
argmin_p.batch = _arg_reduction_batch(argmin_p)


def _logsumexp_rule(x: ShapedArray, *, axes: tuple[int, ...], keepdims: bool) -> ShapedArray:
    require_kind("logsumexp", x.dtype, "f", "a floating-point array")
    return ShapedArray(_reduced_shape("logsumexp", x, axes, keepdims), x.dtype, x.device)


def _logsumexp(xp: Any, x: Any, *, axes: tuple[int, ...], keepdims: bool) -> Any:
    """log(sum(exp(x))) without overflow: shift by the (finite) max first."""
    if x.size == 0 or any(x.shape[a] == 0 for a in axes):
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return xp.full(shape, -xp.inf, dtype=x.dtype)
    m = xp.max(x, axis=axes, keepdims=True)
    if xp.isfinite(m).all():  # the usual case: each sum is at least 1, so its log is finite
        out = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
    else:  # rows of -inf (their answer is -inf: log 0), or of +inf/nan
        m = xp.where(xp.isfinite(m), m, xp.zeros((), dtype=x.dtype))
        with np.errstate(divide="ignore"):
            out = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdims else out.reshape(tuple(d for i, d in enumerate(out.shape) if i not in axes))


# A primitive rather than a composite (max, subtract, exp, sum, log, add): one kernel with
# one-line rules, measurably faster (docs/performance.md, "Fused primitives").
logsumexp_p = Primitive("logsumexp", _logsumexp_rule, kernel=_logsumexp, autocast="float32",
                        onnx=_reduce_onnx("ReduceLogSumExp"))


def _reduction_axes(x: Any, *, axes: tuple[int, ...], keepdims: bool) -> dict[str, Any]:
    return {"axes": tuple(a + 1 for a in axes if a < x.ndim - 1), "keepdims": keepdims}  # (a 0-d member: no axes)


for _prim in (*REDUCTIONS.values(), logsumexp_p):
    defvectorized(_prim, _reduction_axes)


def _softmax_weights(x: Any, ans: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    return lax.exp(x - _expand(ans, axes, keepdims))


defjvp(logsumexp_p, lambda t, ans, x, *, axes, keepdims: lax.reduce_sum(
    t * _softmax_weights(x, ans, axes, keepdims), axes, keepdims=keepdims))
defvjp(logsumexp_p, lambda g, ans, x, *, axes, keepdims: _expand(g, axes, keepdims) * _softmax_weights(
    x, ans, axes, keepdims), saves="both")


_XENT_REDUCTIONS = ("none", "sum", "mean")


def _xent_rule(logits: ShapedArray, labels: ShapedArray, *, reduction: str, ignore_index: int) -> ShapedArray:
    require_kind("softmax_cross_entropy", logits.dtype, "f", "floating-point logits")
    require_kind("softmax_cross_entropy", labels.dtype, "iu", "integer class labels")
    if len(logits.shape) != 2 or labels.shape != logits.shape[:1]:
        raise ShapeError(f"softmax_cross_entropy: logits of shape {fmt_shape(logits.shape)} need (N, C) with "
                         f"labels of shape (N,), got {fmt_shape(labels.shape)}")
    if reduction not in _XENT_REDUCTIONS:
        raise ValueError(f"softmax_cross_entropy: reduction must be one of {_XENT_REDUCTIONS}, got {reduction!r}")
    if not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
        raise TypeError(f"softmax_cross_entropy: ignore_index must be a Python int, got {ignore_index!r}")
    return ShapedArray(logits.shape[:1] if reduction == "none" else (), logits.dtype, logits.device)


def _row_max(xp: Any, z: Any) -> Any:
    """Each row's maximum of an (N, C) array. NumPy reduces a short last axis slowly (about
    7 us for 128 x 10, with the NaN checks per row); for few classes, reducing the
    transposed copy over its first axis runs element-wise across rows, 3-4x faster, with
    the same result. (Past about 64 classes the copy costs more than it saves.)"""
    if xp is np and z.shape[1] <= 32:
        return np.ascontiguousarray(z.T).max(0)
    return z.max(1)


def _softmax_parts(xp: Any, z: Any) -> tuple[Any, Any, Any]:
    """``exp(z - m)`` (a new array), its row sums and ``m``, each row's maximum: the shared
    first half of the loss and of its gradient."""
    m = _row_max(xp, z)
    e = z - m[:, None]
    xp.exp(e, out=e)
    return e, e.sum(1), m


_UNSIGNED = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}


def _label_rows(xp: Any, y: Any, classes: int, ignore_index: int) -> tuple[Any, Any, Any] | None:
    """How the labels pick rows. ``None`` in the common case, every label a class in
    ``[0, classes)`` and ``ignore_index`` not one: on NumPy that costs one maximum
    (negative labels read as unsigned are huge). Otherwise ``(counted, safe, poisoned)``:
    the rows whose label is not ``ignore_index``, the labels with out-of-range ones
    replaced by class 0 (so indexing stays in range), and the counted rows whose label is
    out of range. NumPy raises for those; on CuPy finding them would read the labels on
    the host, a device-to-host sync every step, so their loss and gradient come out NaN
    instead (PyTorch's CUDA kernels assert on the device)."""
    if xp is np:
        unsigned = y.view(_UNSIGNED[y.itemsize]) if y.dtype.kind == "i" else y
        if np.maximum.reduce(unsigned) < classes and not 0 <= ignore_index < classes:
            return None
        counted = y != ignore_index
        bad = (unsigned >= classes) & counted
        if bad.any():
            raise IndexError(f"label {y[bad][0]} is out of range for {classes} classes "
                             f"(and is not ignore_index={ignore_index})")
        return counted, np.where(counted, y, 0), None
    counted = y != ignore_index
    inside = (y >= 0) & (y < classes)
    return counted, xp.where(inside, y, 0), counted & ~inside


def _mean_over(xp: Any, total: Any, counted: Any, dtype: Any) -> Any:
    """``total`` over the number of counted rows: NaN when none count, as in PyTorch."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / counted.sum(dtype=dtype)


# Softmax cross-entropy in three passes, each over every row: the rows' maxima, exp(z - max)
# over all the logits as one flat vector loop (a row of 10 classes is too short to vectorize
# on its own: a vector loop a row cost 13 us for 128 x 10), then per row its sum (in double)
# and its loss, or its gradient w * (softmax - onehot). Used for the common case: every label
# a class, ``ignore_index`` none of them. ``e`` is the gradient itself, or scratch.
_XENT_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict z = (const {t} *)p[0];
    const {l} *restrict y = (const {l} *)p[1];
    const {t} *restrict w = (const {t} *)p[2];
    {t} *restrict out = ({t} *)p[3];
    {t} *restrict e = ({t} *)p[4];
    const int64_t m = n[1], grad = n[2], per_row_w = n[3];
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict zr = z + row * m;
        {t} top = zr[0];
        for (int64_t i = 1; i < m; i++) top = zr[i] > top ? zr[i] : top;
        for (int64_t i = 0; i < m; i++) e[row * m + i] = zr[i] - top;
        if (!grad) out[row] = top;  /* (the loss's slot keeps the row's max until the row is summed) */
    }}
    #pragma omp simd
    for (int64_t k = lo * m; k < hi * m; k++) e[k] = fg_exp(e[k]);
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict zr = z + row * m;
        {t} *restrict er = e + row * m;
        double s = 0;
        for (int64_t i = 0; i < m; i++) s += er[i];
        if (!grad) {{
            {t} v = ({t})log(s);
            v += out[row];
            out[row] = v - zr[y[row]];
            continue;
        }}
        const {t} wr = w[per_row_w ? row : 0], scale = wr / ({t})s;
        for (int64_t i = 0; i < m; i++) er[i] *= scale;
        er[y[row]] -= wr;
    }}
}}
"""
_LABEL_C = {np.dtype(np.int64): "int64_t", np.dtype(np.int32): "int32_t"}


@functools.lru_cache(maxsize=8)
def _xent_kernel(t: str, label: str) -> int | None:
    try:
        return cc.loop_kernel(_XENT_C.format(t=t, l=label))
    except cc.NativeBuildError:
        return None


def _native_xent(xp: Any, z: Any, y: Any, w: Any) -> Any:
    """The per-row losses (``w`` None) or the logits' gradient (``w``: the rows' shares of the
    cotangent, one or one per row) as ``_XENT_C``, where a compiler can build it and the
    types are its own (float32, float64 logits; int32, int64 labels, all in range); None
    otherwise (NumPy's kernels run). Within a few ulp of them: libmvec's ``exp``, a sum in
    double."""
    if not cc.eager_native(xp) or z.dtype not in (np.float32, np.float64) or y.dtype not in _LABEL_C or \
            not z.flags.c_contiguous or not y.flags.c_contiguous:
        return None
    address = _xent_kernel(cc.C_TYPE_OF[z.dtype], _LABEL_C[y.dtype])
    if address is None:
        return None
    rows, classes = z.shape
    weights = np.zeros(1, z.dtype) if w is None else np.ascontiguousarray(w, z.dtype).reshape(-1)
    e = np.empty(z.shape, z.dtype)
    out = e if w is not None else np.empty(rows, z.dtype)
    cc.run(address, [z, y, weights], [out, e], [rows, classes, w is not None, weights.size > 1])
    return out


def _xent(xp: Any, z: Any, y: Any, *, reduction: str, ignore_index: int) -> Any:
    """Per row: logsumexp(z) - z[label], in one pass over the logits, 0 where the label is
    ``ignore_index``; then their sum, or their mean over the counted rows."""
    n, classes = z.shape
    rows = _label_rows(xp, y, classes, ignore_index) if n else None
    native = _native_xent(xp, z, y, None) if rows is None and z.size else None
    if native is not None:
        per_row = native
    elif z.size == 0:
        per_row = xp.zeros(z.shape[:1], z.dtype)
    else:
        _, s, m = _softmax_parts(xp, z)
        per_row = xp.log(s)  # a row with no finite maximum is NaN, as in PyTorch
        per_row += m
        per_row -= z[xp.arange(n), y if rows is None else rows[1]]
        if rows is not None:
            counted, _, poisoned = rows
            per_row = xp.where(counted, per_row, xp.zeros((), z.dtype))
            if poisoned is not None:
                per_row = xp.where(poisoned, xp.full((), np.nan, z.dtype), per_row)
    if reduction == "none":
        return per_row
    total = xp.sum(per_row, axis=(0,))
    if reduction == "sum":
        return total
    if rows is None:
        return total / n if n else total * float("nan")
    return _mean_over(xp, total, rows[0], z.dtype)


# Softmax cross-entropy with class labels, the loss of nearly every classifier: one
# primitive instead of log_softmax + mask + gather + mean (PyTorch fuses it too). The
# ignored rows are masked inside the kernel, so the labels never need reading on the host.
# The sum or mean is inside too, so its backward folds into the gradient kernel
# (docs/performance.md has the measurements).
softmax_cross_entropy_p = Primitive("softmax_cross_entropy", _xent_rule, kernel=_xent, autocast="float32")


def _rows_counted(y: Any, ignore_index: int, dtype: Any) -> Any:
    """Per member, how many rows count (their label is not ``ignore_index``)."""
    return lax.reduce_sum(lax.convert(lax.ne(y, ignore_index), dtype), (1,))


def _xent_batch(args: Any, dims: Any, *, reduction: str, ignore_index: int) -> tuple[Any, int]:
    """Every member's rows as one (B*N, C) batch of rows, then each member's sum or mean."""
    n = axis_size(args, dims)
    z, y = (to_front(a, d, n) for a, d in zip(args, dims))
    _, rows, classes = z.shape
    per_row = bind(softmax_cross_entropy_p, lax.reshape(z, (n * rows, classes)), lax.reshape(y, (n * rows,)),
                   reduction="none", ignore_index=ignore_index)
    per_row = lax.reshape(per_row, (n, rows))
    if reduction == "none":
        return per_row, 0
    total = lax.reduce_sum(per_row, (1,))
    return (total if reduction == "sum" else total / _rows_counted(y, ignore_index, z.dtype)), 0


softmax_cross_entropy_p.batch = _xent_batch


def _xent_grad_rule(g: ShapedArray, logits: ShapedArray, labels: ShapedArray, *, reduction: str,
                    ignore_index: int) -> ShapedArray:
    loss = _xent_rule(logits, labels, reduction=reduction, ignore_index=ignore_index)
    if g.shape != loss.shape or g.dtype != logits.dtype:
        raise ShapeError(f"softmax_cross_entropy_grad: a cotangent of shape {fmt_shape(g.shape)} ({g.dtype}) for "
                         f"reduction={reduction!r} over logits of shape {fmt_shape(logits.shape)} "
                         f"({logits.dtype}): it must be {fmt_shape(loss.shape)} ({logits.dtype})")
    return logits


def _xent_grad(xp: Any, g: Any, z: Any, y: Any, *, reduction: str, ignore_index: int) -> Any:
    """The logits' cotangent: w * (softmax(z) - onehot(label)) per row, where w is the
    row's share of ``g`` (all of it for "sum", 1/count of it for "mean", its own entry
    for "none") and 0 for an ignored row: one exp over the logits, then the labels'
    entries. (A row with no finite maximum has no softmax: it comes out NaN, as in PyTorch.)"""
    n, classes = z.shape
    if z.size == 0:
        return xp.zeros(z.shape, z.dtype)
    rows = _label_rows(xp, y, classes, ignore_index)
    if rows is None:
        w, labels = (g / n if reduction == "mean" else g), y
    else:
        counted, labels, poisoned = rows
        w = _mean_over(xp, g, counted, z.dtype) if reduction == "mean" else g
        w = xp.where(counted, w, xp.zeros((), z.dtype))
        if poisoned is not None:
            w = xp.where(poisoned, xp.full((), np.nan, z.dtype), w)
    native = _native_xent(xp, z, y, w) if rows is None else None
    if native is not None:
        return native
    out, s, _ = _softmax_parts(xp, z)
    out *= (w / s)[:, None]
    out[xp.arange(n), labels] -= w
    return out


# The backward of softmax_cross_entropy as one kernel (PyTorch has the same pair:
# cross_entropy's backward is its own operation). Its own rules give second derivatives.
softmax_cross_entropy_grad_p = Primitive("softmax_cross_entropy_grad", _xent_grad_rule, kernel=_xent_grad,
                                        autocast="float32")


def _xent_grad_batch(args: Any, dims: Any, *, reduction: str, ignore_index: int) -> tuple[Any, int]:
    n = axis_size(args, dims)
    g, z, y = (to_front(a, d, n) for a, d in zip(args, dims))
    _, rows, classes = z.shape
    if reduction == "mean":
        g = g / _rows_counted(y, ignore_index, z.dtype)
    if reduction != "none":
        g = lax.broadcast_to(lax.expand_dims(g, (1,)), (n, rows))
    out = bind(softmax_cross_entropy_grad_p, lax.reshape(g, (n * rows,)), lax.reshape(z, (n * rows, classes)),
               lax.reshape(y, (n * rows,)), reduction="none", ignore_index=ignore_index)
    return lax.reshape(out, (n, rows, classes)), 0


softmax_cross_entropy_grad_p.batch = _xent_grad_batch


def _xent_softmax(z: Any) -> Any:
    return lax.exp(z - bind(logsumexp_p, z, axes=(1,), keepdims=True))


def _picked(t: Any, y: Any) -> Any:
    """``t[i, y[i]]`` per row."""
    return lax.gather(t, lax.iota(y, y.shape[0]), y)


def _counted(y: Any, ignore_index: int) -> tuple[Any, Any]:
    """The rows whose label counts (it is not ``ignore_index``), and the labels with the
    others replaced by class 0, so that picking stays in range."""
    counted = lax.ne(y, ignore_index)
    return counted, lax.select(counted, y, 0)


def _reduce_rows(per_row: Any, counted: Any, reduction: str) -> Any:
    """As the kernel reduces: the sum, or the mean over the counted rows."""
    if reduction == "none":
        return per_row
    total = lax.reduce_sum(per_row, (0,))
    if reduction == "sum":
        return total
    return total / lax.reduce_sum(lax.convert(counted, per_row.dtype), (0,))


def _xent_jvp(t: Any, ans: Any, z: Any, y: Any, *, reduction: str, ignore_index: int) -> Any:
    counted, labels = _counted(y, ignore_index)
    per_row = lax.select(counted, lax.reduce_sum(_xent_softmax(z) * t, (1,)) - _picked(t, labels), 0.0)
    return _reduce_rows(per_row, counted, reduction)


def _row_weights(g: Any, y: Any, *, reduction: str, ignore_index: int) -> Any:
    """Each row's share of the loss's cotangent ``g``, as the gradient kernel takes it."""
    counted, _ = _counted(y, ignore_index)
    if reduction == "mean":
        g = g / lax.reduce_sum(lax.convert(counted, g.dtype), (0,))
    return lax.select(counted, g, 0.0)


def _softmax_jvp(w: Any, z: Any, t: Any) -> Any:
    """w * (d softmax(z) . t), one weight per row. The softmax Jacobian is symmetric, so
    this is also its VJP."""
    s = _xent_softmax(z)
    st = s * t
    return lax.expand_dims(w, (1,)) * (st - s * lax.reduce_sum(st, (1,), keepdims=True))


defjvp(softmax_cross_entropy_p, _xent_jvp, None)
defvjp(softmax_cross_entropy_p, lambda g, ans, z, y, **params: bind(softmax_cross_entropy_grad_p, g, z, y, **params),
       None, saves="args")
defjvp(softmax_cross_entropy_grad_p, lambda t, ans, g, z, y, **params: bind(softmax_cross_entropy_grad_p, t, z, y,
                                                                            **params),
       lambda t, ans, g, z, y, **params: _softmax_jvp(_row_weights(g, y, **params), z, t), None)
defvjp(softmax_cross_entropy_grad_p, lambda c, ans, g, z, y, **params: _xent_jvp(c, None, z, y, **params),
       lambda c, ans, g, z, y, **params: _softmax_jvp(_row_weights(g, y, **params), z, c), None, saves="args")


def _scan(name: str, kernel: str) -> Primitive:
    def rule(x: ShapedArray, *, axis: int) -> ShapedArray:
        require_kind(name, x.dtype, "iufc", "a numeric array")
        normalize_axis(name, axis, len(x.shape))
        return x

    def run(xp: Any, x: Any, *, axis: int) -> Any:
        return getattr(xp, kernel)(x, axis=axis, dtype=x.dtype)

    return Primitive(name, rule, kernel=run, autocast="float32")  # (running sums and products: in float32)


cumsum_p = _scan("cumsum", "cumsum")
deflinear(cumsum_p, lambda g, ans, x, *, axis: lax.flip(lax.cumsum(lax.flip(g, (axis,)), axis), (axis,)))
cumprod_p = _scan("cumprod", "cumprod")  # its rules are below


def _axis(x: Any, *, axis: int, **params: Any) -> dict[str, Any]:
    return {"axis": axis % max(x.ndim - 1, 1) + 1, **params}


for _prim in (cumsum_p, cumprod_p):
    defvectorized(_prim, _axis)


def _shifted(v: Any, step: int, axis: int, fill: float) -> Any:
    """``v`` moved ``step`` places forward along ``axis``, ``fill`` coming in at the front."""
    n = v.shape[axis]
    widths = [(0, 0)] * v.ndim
    widths[axis] = (step, 0)
    return lax.pad(lax.slice_axis(v, axis, 0, n - step), widths, fill)


def _unshifted(w: Any, step: int, axis: int) -> Any:
    """The transpose of ``_shifted`` with zero fill: ``w`` moved ``step`` places back."""
    n = w.shape[axis]
    widths = [(0, 0)] * w.ndim
    widths[axis] = (0, step)
    return lax.pad(lax.slice_axis(w, axis, step, n), widths)


def _cumprod_rounds(x: Any, axis: int) -> list[tuple[Any, int]]:
    """cumprod as log2(n) rounds of multiplies (Hillis and Steele's scan: round r multiplies
    each entry by the one 2**r before it): each round's input and shift."""
    n, y, step, rounds = x.shape[axis], x, 1, []
    while step < n:
        rounds.append((y, step))
        y = y * _shifted(y, step, axis, 1.0)
        step *= 2
    return rounds


def _cumprod_jvp(t: Any, ans: Any, x: Any, *, axis: int) -> Any:
    """The rounds' product rule, round by round: no division anywhere."""
    for y, step in _cumprod_rounds(x, axis):
        t = t * _shifted(y, step, axis, 1.0) + y * _shifted(t, step, axis, 0.0)
    return t


def _cumprod_vjp(g: Any, ans: Any, x: Any, *, axis: int) -> Any:
    """The transpose of ``_cumprod_jvp``'s linear map, rounds in reverse."""
    for y, step in reversed(_cumprod_rounds(x, axis)):
        g = g * _shifted(y, step, axis, 1.0) + _unshifted(g * y, step, axis)
    return g


# cumprod's textbook derivative, ans * cumsum(t / x), divides by x: an exact zero makes it
# NaN where the true derivative is finite (PyTorch and JAX give it). Its rules are instead
# the derivatives of the same product computed by multiplies alone (the kernel stays
# NumPy's cumprod); being compositions, they differentiate again to every order. Random
# points are drawn away from zero; tests/test_gradients.py checks points with zeros against
# JAX, to second order.
cumprod_p.domain = Domain(avoid=(0.0,), margin=0.3)
defjvp(cumprod_p, _cumprod_jvp)
defvjp(cumprod_p, _cumprod_vjp, saves="args")
