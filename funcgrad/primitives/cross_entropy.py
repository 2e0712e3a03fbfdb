"""Softmax cross-entropy with class labels, the loss of nearly every classifier.

One primitive instead of log_softmax + mask + gather + mean (PyTorch fuses it too), its
backward another (PyTorch has the same pair: cross_entropy's backward is its own
operation), and a third computing both from one pass over the logits, which the compiler's
``join_siblings`` pass puts where a program computes the loss and its gradient (every
``value_and_grad`` of a classifier). The ignored rows are masked inside the kernels, so
the labels never need reading on the host; the sum or mean is inside too, so the backward
folds it into the gradient (``docs/performance.md`` has the measurements).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from . import lax
from .ad import InputsVJP, add_optional, defjvp, defvjp
from .batching import axis_size, to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .reduce import logsumexp_p

__all__ = ["softmax_cross_entropy_p", "softmax_cross_entropy_grad_p", "softmax_cross_entropy_and_grad_p"]

_REDUCTIONS = ("none", "sum", "mean")


def _xent_rule(logits: ShapedArray, labels: ShapedArray, *, reduction: str, ignore_index: int) -> ShapedArray:
    require_kind("softmax_cross_entropy", logits.dtype, "f", "floating-point logits")
    require_kind("softmax_cross_entropy", labels.dtype, "iu", "integer class labels")
    if len(logits.shape) != 2 or labels.shape != logits.shape[:1]:
        raise ShapeError(f"softmax_cross_entropy: logits of shape {fmt_shape(logits.shape)} need (N, C) with "
                         f"labels of shape (N,), got {fmt_shape(labels.shape)}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"softmax_cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
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


# The loss, its gradient or both, for the common case (every label a class, ``ignore_index``
# none of them; a label out of range stops the kernel at once, and NumPy's kernels below
# take the call). Three passes, each over every row: the rows' maxima, exp(z - max) over all
# the logits as one flat vector loop (a row of 10 classes is too short to vectorize on its
# own: a vector loop a row cost 13 us for 128 x 10), then per row its sum (in double), its
# loss and its gradient w * (softmax - onehot). The loss's sum or mean adds the rows in
# double. ``e`` is the gradient itself, or scratch; ``rows`` the per-row losses, or scratch.
# One call does what NumPy takes a dozen for, each of which costs 3-5 us right after a
# matrix product (the interpreter's and NumPy's own state evicted from the caches).
_XENT_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict z = (const {t} *)p[0];
    const {l} *restrict y = (const {l} *)p[1];
    const {t} *restrict w = (const {t} *)p[2];
    {t} *restrict rows = ({t} *)p[3];
    {t} *restrict e = ({t} *)p[4];
    {t} *restrict total = ({t} *)p[5];
    int64_t *restrict bad = (int64_t *)p[6];
    const int64_t m = n[1], loss = n[2], grad = n[3], per_row_w = n[4], reduction = n[5];
    bad[0] = 0;
    for (int64_t row = lo; row < hi; row++)
        if ((uint64_t)(int64_t)y[row] >= (uint64_t)m) {{ bad[0] = row + 1; return; }}
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict zr = z + row * m;
        {t} top = zr[0];
        for (int64_t i = 1; i < m; i++) top = zr[i] > top ? zr[i] : top;
        for (int64_t i = 0; i < m; i++) e[row * m + i] = zr[i] - top;
        rows[row] = top;  /* (the row's slot keeps its max until the row is summed) */
    }}
    #pragma omp simd
    for (int64_t k = lo * m; k < hi * m; k++) e[k] = fg_exp(e[k]);
    double sum = 0;
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict zr = z + row * m;
        {t} *restrict er = e + row * m;
        double s = 0;
        for (int64_t i = 0; i < m; i++) s += er[i];
        if (loss) {{
            {t} v = ({t})log(s);
            v += rows[row];
            rows[row] = v - zr[y[row]];
            sum += rows[row];
        }}
        if (grad) {{
            {t} wr = w[per_row_w ? row : 0];
            if (reduction == 2) wr = wr / ({t})(hi - lo);
            const {t} scale = wr / ({t})s;
            for (int64_t i = 0; i < m; i++) er[i] *= scale;
            er[y[row]] -= wr;
        }}
    }}
    if (loss && reduction) total[0] = ({t})(reduction == 2 ? sum / (double)(hi - lo) : sum);
}}
"""
_LABEL_C = {np.dtype(np.int64): "int64_t", np.dtype(np.int32): "int32_t"}
_LOGITS = (np.dtype(np.float32), np.dtype(np.float64))


@functools.lru_cache(maxsize=64)
def _call_plan(dtype: Any, label: Any, rows: int, classes: int, loss: bool, grad: bool, per_row_w: bool,
               reduction: str) -> tuple[Any, int, np.ndarray, np.ndarray] | None:
    """``(call, kernel, meta, no_weights)`` for one kind of call (its types, sizes and what it
    computes): worked out once, so a call makes its results and calls the kernel, nothing
    else (right after a matrix product, each Python or NumPy step costs 3-5 us). None where
    no compiler can build the kernel."""
    try:
        address = cc.loop_kernel(_XENT_C.format(t=cc.C_TYPE_OF[dtype], l=_LABEL_C[label]))
    except cc.NativeBuildError:
        return None
    size = dtype.itemsize
    meta = cc.sizes_and_bytes(3, 4, [rows, classes, loss, grad, per_row_w, _REDUCTIONS.index(reduction)],
                              [rows * classes * size, rows * label.itemsize, (rows if per_row_w else 1) * size,
                               rows * size, rows * classes * size, size, 8])
    return cc.caller(), address, meta, np.zeros(1, dtype)


def _native(xp: Any, z: Any, y: Any, w: Any, reduction: str, ignore_index: int, loss: bool) -> Any:
    """``[loss, gradient]`` by ``_XENT_C`` (``loss``: whether the loss is wanted; ``w``: the
    loss's cotangent, one or one per row, where the gradient is), where a compiler can build
    it, the types are its own (float32, float64 logits; int32, int64 labels) and every
    label is a class; None otherwise, and NumPy's kernels run. Within a few ulp of them:
    libmvec's ``exp``, sums in double."""
    dtype = z.dtype
    if not cc.eager_native(xp) or dtype not in _LOGITS or y.dtype not in _LABEL_C or not z.size or \
            0 <= ignore_index < z.shape[1] or not z.flags.c_contiguous or not y.flags.c_contiguous:
        return None
    rows, classes = z.shape
    if w is not None and (w.__class__ is not np.ndarray or w.dtype != dtype or not w.flags.c_contiguous):
        w = np.ascontiguousarray(w, dtype)
    plan = _call_plan(dtype, y.dtype, rows, classes, loss, w is not None, w is not None and w.size > 1, reduction)
    if plan is None:
        return None
    call, address, meta, no_weights = plan
    per_row, e, total, bad = np.empty(rows, dtype), np.empty(z.shape, dtype), np.empty((), dtype), \
        np.empty(1, np.int64)
    call(1, address, meta, 0, rows, z, y, no_weights if w is None else w, per_row, e, total, bad)
    if bad[0]:
        return None
    return [(per_row if reduction == "none" else total) if loss else None, e if w is not None else None]


def _xent(xp: Any, z: Any, y: Any, *, reduction: str, ignore_index: int) -> Any:
    """Per row: logsumexp(z) - z[label], in one pass over the logits, 0 where the label is
    ``ignore_index``; then their sum, or their mean over the counted rows."""
    native = _native(xp, z, y, None, reduction, ignore_index, loss=True)
    if native is not None:
        return native[0]
    n, classes = z.shape
    rows = _label_rows(xp, y, classes, ignore_index) if n else None
    if z.size == 0:
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
    native = _native(xp, z, y, g, reduction, ignore_index, loss=False)
    if native is not None:
        return native[1]
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
    out, s, _ = _softmax_parts(xp, z)
    out *= (w / s)[:, None]
    out[xp.arange(n), labels] -= w
    return out


# Its own rules give second derivatives.
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


def _gradient_of(c: Any, z: Any, y: Any, **params: Any) -> Any:
    """The gradient for cotangent ``c``: the loss's VJP, and the gradient's derivative along
    its own cotangent (it is linear in it)."""
    return bind(softmax_cross_entropy_grad_p, c, z, y, **params)


def _gradient_in_z(c: Any, g: Any, z: Any, y: Any, **params: Any) -> Any:
    """The gradient's derivative in the logits applied to ``c`` (symmetric: its JVP and VJP)."""
    return _softmax_jvp(_row_weights(g, y, **params), z, c)


defjvp(softmax_cross_entropy_p, _xent_jvp, None)
defvjp(softmax_cross_entropy_p, lambda g, ans, z, y, **params: _gradient_of(g, z, y, **params), None, saves="args")
defjvp(softmax_cross_entropy_grad_p, lambda t, ans, g, z, y, **params: _gradient_of(t, z, y, **params),
       lambda t, ans, g, z, y, **params: _gradient_in_z(t, g, z, y, **params), None)
defvjp(softmax_cross_entropy_grad_p, lambda c, ans, g, z, y, **params: _xent_jvp(c, None, z, y, **params),
       lambda c, ans, g, z, y, **params: _gradient_in_z(c, g, z, y, **params), None, saves="args")


# ---- the loss and its gradient together -------------------------------------------------
# (g, z, y) -> [softmax_cross_entropy(z, y), softmax_cross_entropy_grad(g, z, y)]: one exp
# over the logits where the two kernels take two. Programs do not bind it: the compiler's
# ``join_siblings`` pass writes it where a program has both (``Primitive.joins``). Its
# rules are its parts'.

def _joined_rule(g: ShapedArray, logits: ShapedArray, labels: ShapedArray, *, reduction: str,
                 ignore_index: int) -> list[ShapedArray]:
    return [_xent_rule(logits, labels, reduction=reduction, ignore_index=ignore_index),
            _xent_grad_rule(g, logits, labels, reduction=reduction, ignore_index=ignore_index)]


def _joined(xp: Any, g: Any, z: Any, y: Any, *, reduction: str, ignore_index: int) -> list[Any]:
    native = _native(xp, z, y, g, reduction, ignore_index, loss=True)
    if native is not None:
        return native  # type: ignore[no-any-return]
    return [_xent(xp, z, y, reduction=reduction, ignore_index=ignore_index),
            _xent_grad(xp, g, z, y, reduction=reduction, ignore_index=ignore_index)]


softmax_cross_entropy_and_grad_p = Primitive("softmax_cross_entropy_and_grad", _joined_rule, kernel=_joined,
                                            multiple_results=True, autocast="float32")
softmax_cross_entropy_p.joins = {softmax_cross_entropy_grad_p: softmax_cross_entropy_and_grad_p}


def _joined_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], **params: Any) -> tuple[Any, Any]:
    g, z, y = primals
    tg, tz, _ = tangents
    ans = bind(softmax_cross_entropy_and_grad_p, g, z, y, **params)
    loss_t = lax.zeros(ans[0], tuple(ans[0].shape)) if tz is None else _xent_jvp(tz, None, z, y, **params)
    grad_t = add_optional(None if tg is None else _gradient_of(tg, z, y, **params),
                          None if tz is None else _gradient_in_z(tz, g, z, y, **params))
    return ans, (loss_t, lax.zeros(z, tuple(z.shape)) if grad_t is None else grad_t)


class _JoinedVJP(InputsVJP):
    """Keeps the inputs; each input's cotangent is the sum of its parts' (the loss's
    through ``z`` alone)."""

    prim = softmax_cross_entropy_and_grad_p

    def bwd(self, residuals: Any, c: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        g, z, y = residuals
        c_loss, c_grad = c
        gz = None if c_loss is None else _gradient_of(c_loss, z, y, **params)
        if c_grad is None:
            return None, gz, None
        gz = add_optional(gz, _gradient_in_z(c_grad, g, z, y, **params))
        return _xent_jvp(c_grad, None, z, y, **params), gz, None


def _joined_batch(args: Any, dims: Any, **params: Any) -> tuple[list[Any], list[int]]:
    n = axis_size(args, dims)
    g, z, y = (to_front(a, d, n) for a, d in zip(args, dims))
    return [_xent_batch((z, y), (0, 0), **params)[0], _xent_grad_batch((g, z, y), (0, 0, 0), **params)[0]], [0, 0]


softmax_cross_entropy_and_grad_p.jvp = _joined_jvp
softmax_cross_entropy_and_grad_p.vjp = _JoinedVJP()
softmax_cross_entropy_and_grad_p.batch = _joined_batch
