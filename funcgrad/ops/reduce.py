"""Reductions and scans with NumPy's ``axis=``/``keepdims=`` (plus composites:
mean, var, std, logsumexp, count_nonzero)."""

from __future__ import annotations

import builtins
from typing import Any

from .. import dtypes as _dt
from ..errors import ArgumentValueError
from ..primitives.checks import normalize_axes, normalize_axis
from ..primitives.core import bind
from ..primitives.elementwise import imag_p, real_p
from ..primitives.reduce import REDUCTIONS, argmax_p, argmin_p, cumprod_p, cumsum_p, logsumexp_p
from .elementwise import as_operand, cast_to, greater, maximum, minimum, sqrt, square, subtract, where
from .shape import broadcast_to, pad, reshape

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "any", "all", "argmax", "argmin",
           "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "logsumexp", "count_nonzero"]


def _accumulator(x: Any, dtype: Any) -> Any:
    """The array API's (and NumPy's) accumulation dtype: bool and signed integers in int64,
    unsigned integers in uint64."""
    if dtype is not None:
        return cast_to(x, _dt.as_dtype(dtype, op="sum"))
    if x.dtype.kind == "u":
        return x if x.dtype is _dt.uint64 else cast_to(x, _dt.uint64)
    if x.dtype.kind in "bi" and x.dtype is not _dt.int64:
        return cast_to(x, _dt.int64)
    return x


def _reduce(name: str, x: Any, axis: Any, keepdims: bool) -> Any:
    prim, params = REDUCTIONS[name], {"axes": normalize_axes(name, axis, x.ndim), "keepdims": bool(keepdims)}
    if x.dtype.kind == "c":  # NumPy's kernels order complex numbers; the primitives that need an order refuse them
        prim.abstract_eval(x.aval, **params)
    return bind(prim, x, **params)


def _masked(x: Any, mask: Any, fill: Any) -> Any:
    """NumPy's ``where=`` of a reduction: ``x`` where ``mask``, the reduction's identity
    ``fill`` elsewhere (``mask`` broadcast to ``x``)."""
    return x if mask is None else _select(as_operand(mask), x, fill)


def sum(x: Any, /, axis: Any = None, *, keepdims: bool = False, dtype: Any = None, initial: Any = None,
        where: Any = None) -> Any:
    """The sum of the elements, as ``np.sum``.

    Args:
        x: the array.
        axis: an axis or a tuple of them (all by default).
        keepdims: keep the summed axes, of size 1.
        dtype: the type to sum in (the input's, or int64 for small ints and bools).
        initial: a value added to the sum (NumPy's).
        where: a mask of the elements to include (NumPy's).

    Returns:
        The sum.

    Example:
        >>> fg.sum(fg.arange(6).reshape(2, 3), axis=0).tolist()
        [3, 5, 7]
    """
    out = _reduce("reduce_sum", _masked(_accumulator(as_operand(x), dtype), where, 0), axis, keepdims)
    return out if initial is None else out + initial


def prod(x: Any, /, axis: Any = None, *, keepdims: bool = False, dtype: Any = None, initial: Any = None,
         where: Any = None) -> Any:
    """The product (along ``axis``); NumPy's ``initial`` (a factor) and ``where`` (a mask) too."""
    out = _reduce("reduce_prod", _masked(_accumulator(as_operand(x), dtype), where, 1), axis, keepdims)
    return out if initial is None else out * initial


def _extreme(name: str, op: str, x: Any, axis: Any, keepdims: bool, initial: Any, mask: Any) -> Any:
    x = as_operand(x)
    if mask is not None:
        if initial is None:
            raise ArgumentValueError(f"{op}: a where= mask needs initial= (the value of a window it leaves empty), "
                                     "as in NumPy")
        x = _masked(x, mask, initial)
    out = _lexicographic(name, x, axis, keepdims) if x.dtype.kind == "c" else _reduce(name, x, axis, keepdims)
    if initial is None:
        return out
    return (maximum if name == "reduce_max" else minimum)(out, initial)


def max(x: Any, /, axis: Any = None, *, keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """The largest element (along ``axis``); complex numbers in NumPy's order (by real part,
    then imaginary part); NumPy's ``initial`` (a lower bound) and ``where`` (a mask) too."""
    return _extreme("reduce_max", "max", x, axis, keepdims, initial, where)


def min(x: Any, /, axis: Any = None, *, keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """The smallest element (along ``axis``); complex numbers in NumPy's order; NumPy's
    ``initial`` (an upper bound) and ``where`` (a mask) too."""
    return _extreme("reduce_min", "min", x, axis, keepdims, initial, where)


def _lexicographic(name: str, x: Any, axis: Any, keepdims: bool) -> Any:
    """The extreme complex number by real part, ties broken by imaginary part (NumPy's order):
    the extreme real part, then the extreme imaginary part among the elements that have it."""
    re, im = bind(real_p, x), bind(imag_p, x)
    top_re = _reduce(name, re, axis, True)
    other = float("-inf") if name == "reduce_max" else float("inf")
    top_im = _reduce(name, where(re == top_re, im, other), axis, keepdims)
    top_re = _reduce(name, top_re, axis, keepdims)
    return top_re + 1j * top_im


amax, amin = max, min


def any(x: Any, /, axis: Any = None, *, keepdims: bool = False, where: Any = None) -> Any:
    """Whether any element (along ``axis``) is true; NumPy's ``where`` mask too."""
    return _reduce("reduce_any", _masked(cast_to(as_operand(x), _dt.bool_), where, False), axis, keepdims)


def all(x: Any, /, axis: Any = None, *, keepdims: bool = False, where: Any = None) -> Any:
    """Whether every element (along ``axis``) is true; NumPy's ``where`` mask too."""
    return _reduce("reduce_all", _masked(cast_to(as_operand(x), _dt.bool_), where, True), axis, keepdims)


def count_nonzero(x: Any, /, axis: Any = None, *, keepdims: bool = False) -> Any:
    return sum(cast_to(as_operand(x), _dt.bool_), axis, keepdims=keepdims)


def argmax(x: Any, /, axis: int | None = None, *, keepdims: bool = False) -> Any:
    return bind(argmax_p, as_operand(x), axis=axis, keepdims=bool(keepdims))


def argmin(x: Any, /, axis: int | None = None, *, keepdims: bool = False) -> Any:
    return bind(argmin_p, as_operand(x), axis=axis, keepdims=bool(keepdims))


_select = where  # (the reductions' own parameter is called where, as NumPy's)


def _count(x: Any, axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _floating(x: Any) -> Any:
    return x if x.dtype.kind in "fc" else cast_to(x, _dt.default_float)


def mean(x: Any, /, axis: Any = None, *, keepdims: bool = False, dtype: Any = None, where: Any = None) -> Any:
    """The arithmetic mean, as ``np.mean``, except that integer input gives the default float
    (float32, as JAX and PyTorch; NumPy gives float64).

    Args:
        x: the array.
        axis: an axis or a tuple of them (all by default).
        keepdims: keep the averaged axes, of size 1.
        dtype: the type to compute in (NumPy's).
        where: a mask: the mean of the elements it selects (NumPy's).

    Returns:
        The mean.

    Example:
        >>> fg.mean(fg.asarray([1, 2, 4])).dtype
        float32
    """
    x = _floating(as_operand(x) if dtype is None else cast_to(as_operand(x), _dt.as_dtype(dtype, op="mean")))
    axes = normalize_axes("mean", axis, x.ndim)
    if where is not None:
        total = bind(REDUCTIONS["reduce_sum"], _masked(x, where, 0), axes=axes, keepdims=bool(keepdims))
        return total / _kept(where, x, axes, keepdims)
    n = _count(x, axes)
    total = bind(REDUCTIONS["reduce_sum"], x, axes=axes, keepdims=bool(keepdims))
    return total / n if n else total * float("nan")


_mean = mean  # (var's own parameter is called mean, as NumPy's)


def _kept(mask: Any, x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """How many elements a ``where=`` mask keeps along ``axes`` (the mask broadcast to ``x``)."""
    kept = cast_to(broadcast_to(cast_to(as_operand(mask), _dt.bool_), tuple(x.shape)), x.dtype)
    return bind(REDUCTIONS["reduce_sum"], kept, axes=axes, keepdims=bool(keepdims))


def var(x: Any, /, axis: Any = None, *, ddof: int = 0, correction: Any = None, keepdims: bool = False,
        dtype: Any = None, where: Any = None, mean: Any = None) -> Any:
    """Variance with NumPy's ``ddof`` (the array API's ``correction`` is accepted too), and
    NumPy's ``dtype``, ``where`` (of the masked elements) and ``mean`` (the mean, given)."""
    if correction is not None:
        ddof = correction
    x = _floating(as_operand(x) if dtype is None else cast_to(as_operand(x), _dt.as_dtype(dtype, op="var")))
    axes = normalize_axes("var", axis, x.ndim)
    center = _mean(x, axes, keepdims=True, where=where) if mean is None else as_operand(mean)
    centered = subtract(x, center)
    squares = (square(centered) if x.dtype.kind != "c"  # complex: |x - m|^2, real
               else square(bind(real_p, centered)) + square(bind(imag_p, centered)))
    total = bind(REDUCTIONS["reduce_sum"], _masked(squares, where, 0), axes=axes, keepdims=bool(keepdims))
    if where is not None:
        return total / (_kept(where, x, axes, keepdims) - ddof)
    dof = _count(x, axes) - ddof
    if dof > 0:
        return total / dof
    return total / 0.0  # no degrees of freedom left: inf, or NaN for 0/0 (NumPy and PyTorch)


def root_of_squares(v: Any) -> Any:
    """``sqrt(v)`` of a sum of squares (a variance, a squared norm), with derivative 0 where
    ``v`` is 0: PyTorch's and autograd's subgradient for ``std`` and 2-norms, where the
    square root's own would give 0 * inf, NaN. The root is taken of positive values only."""
    positive = greater(v, 0)
    return where(positive, sqrt(where(positive, v, 1.0)), v * 0.0)  # (0 stays 0, NaN stays NaN)


def std(x: Any, /, axis: Any = None, *, ddof: int = 0, correction: Any = None, keepdims: bool = False,
        dtype: Any = None, where: Any = None, mean: Any = None) -> Any:
    """Standard deviation, ``sqrt(var)`` (``var``'s parameters); its derivative where the
    values are all equal is 0 (``root_of_squares``)."""
    return root_of_squares(var(x, axis, ddof=ddof, correction=correction, keepdims=keepdims, dtype=dtype,
                               where=where, mean=mean))


def logsumexp(x: Any, /, axis: Any = None, *, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` along ``axis``, without overflow (the max is subtracted first)."""
    x = _floating(as_operand(x))
    params = {"axes": normalize_axes("logsumexp", axis, x.ndim), "keepdims": bool(keepdims)}
    if x.dtype.kind == "c":
        logsumexp_p.abstract_eval(x.aval, **params)
    return bind(logsumexp_p, x, **params)


def _scan(prim: Any, name: str, x: Any, axis: Any, dtype: Any) -> Any:
    x = _accumulator(as_operand(x), dtype)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return bind(prim, x, axis=normalize_axis(name, axis, x.ndim))


def cumsum(x: Any, /, axis: Any = None, *, dtype: Any = None) -> Any:
    """Running sum along ``axis`` (NumPy: ``axis=None`` scans the flattened array)."""
    return _scan(cumsum_p, "cumsum", x, axis, dtype)


def cumprod(x: Any, /, axis: Any = None, *, dtype: Any = None) -> Any:
    return _scan(cumprod_p, "cumprod", x, axis, dtype)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Array API 2023.12 ``cumulative_sum``."""
    x = as_operand(x)
    out = cumsum(x, axis if axis is not None or x.ndim != 1 else 0, dtype=dtype)
    if include_initial:
        ax = normalize_axis("cumulative_sum", axis if axis is not None else 0, out.ndim)
        out = pad(out, [(1, 0) if i == ax else (0, 0) for i in builtins.range(out.ndim)])
    return out


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Array API 2024.12 ``cumulative_prod`` (``include_initial``: a leading 1)."""
    x = as_operand(x)
    out = cumprod(x, axis if axis is not None or x.ndim != 1 else 0, dtype=dtype)
    if include_initial:
        ax = normalize_axis("cumulative_prod", axis if axis is not None else 0, out.ndim)
        out = pad(out, [(1, 0) if i == ax else (0, 0) for i in builtins.range(out.ndim)], constant_values=1)
    return out
