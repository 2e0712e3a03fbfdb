"""Reductions (sum, prod, max, min, any, all, argmax, argmin) and scans (cumsum, cumprod).

``axes`` is a sorted tuple of non-negative axes (the fg.* functions normalise
it); ``keepdims`` keeps reduced axes with size 1, as NumPy does.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..dtypes import bool_, int32, int64
from ..errors import ShapeError
from . import lax
from .ad import defjvp, deflinear, defvjp
from .batching import defvectorized, to_front
from .checks import normalize_axis, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .domains import DISTINCT, Domain
from .shape import expand_dims_p

__all__ = ["REDUCTIONS", "argmax_p", "argmin_p", "cumsum_p", "cumprod_p", "logsumexp_p"]


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
