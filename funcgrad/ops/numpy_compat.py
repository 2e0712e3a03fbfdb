"""NumPy functions that numerical code (JAX's and autograd's examples) calls, as
compositions of the other ``fg.*`` functions: each differentiates through what it is
made of, and is checked against NumPy (``tests/test_numpy_compat.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import ArgumentValueError, ShapeError
from ..primitives.checks import as_int, normalize_axis
from ..primitives.core import bind
from ..primitives.elementwise import conj_p, imag_p, real_p
from .creation import arange, asarray, zeros, zeros_like
from .elementwise import (
    abs,
    arctan2,
    as_operand,
    equal,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    logaddexp,
    logical_and,
    logical_or,
    maximum,
    minimum,
    remainder,
    returned_as_is,
    sin,
    trunc,
    where,
)
from .linalg import outer
from .shape import (
    atleast_1d,
    broadcast_to,
    concatenate,
    diagonal,
    flip,
    moveaxis,
    reshape,
    sort,
    split,
    stack,
    swapaxes,
    transpose,
    vstack,
)

__all__ = ["diag", "append", "mod", "fmod", "diff", "gradient", "kron", "cross", "select", "rot90", "rollaxis",
           "flipud", "fliplr", "hsplit", "vsplit", "dsplit", "row_stack", "column_stack", "dstack", "atleast_3d",
           "partition", "nan_to_num", "sinc", "logaddexp2", "fabs", "fmin", "fmax", "radians", "degrees",
           "deg2rad", "rad2deg", "real", "imag", "conj", "conjugate", "angle", "ndim", "size", "permute", "isclose",
           "allclose", "real_if_close"]
# (``shape`` too, as ``fg.shape``: funcgrad/__init__.py takes it, since in this package the name is a module's)


def diag(v: Any, k: int = 0) -> Any:
    """A 1-D array's square matrix with it on diagonal ``k``; a 2-D array's diagonal ``k``."""
    v = as_operand(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"diag: expects a 1-D or 2-D array, got shape {tuple(v.shape)}")
    length, shift = v.shape[0], -k if k < 0 else k
    positions = arange(length, device=v.device)
    rows, cols = (positions + shift, positions) if k < 0 else (positions, positions + shift)
    return zeros((length + shift, length + shift), v.dtype, device=v.device).at[rows, cols].set(v)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``arr`` followed by ``values`` (both flattened when ``axis`` is None)."""
    arr, values = as_operand(arr), asarray(values)
    if axis is None:
        return concatenate([reshape(arr, (-1,)), reshape(values, (-1,))])
    return concatenate([arr, values], axis=axis)


def mod(x1: Any, x2: Any) -> Any:
    """Python's remainder, with the divisor's sign (``remainder``)."""
    return remainder(x1, x2)


def fmod(x1: Any, x2: Any) -> Any:
    """C's remainder, with the dividend's sign: ``x1 - trunc(x1 / x2) * x2``."""
    x1 = as_operand(x1)
    quotient = trunc(x1 / x2)
    out = x1 - quotient * x2
    return out.astype(x1.dtype) if x1.dtype.kind in "iu" and getattr(asarray(x2), "dtype", x1.dtype).kind in "iu" \
        else out


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th difference along ``axis``; NumPy's ``prepend`` / ``append`` join values
    (a number spans the other axes) before and after first."""
    a = returned_as_is(as_operand(a))
    n = as_int("diff", n, "n", minimum=0)
    axis = normalize_axis("diff", axis, a.ndim)
    if prepend is not None or append is not None:
        def edge(v: Any) -> Any:
            v = as_operand(v)
            if v.ndim == 0:
                v = broadcast_to(v, tuple(1 if d == axis else s for d, s in enumerate(a.shape)))
            return v
        parts = ([] if prepend is None else [edge(prepend)]) + [a] + ([] if append is None else [edge(append)])
        a = concatenate(parts, axis=axis)
    for _ in range(min(n, a.shape[axis])):  # (past the axis's length the result stays empty)
        length = a.shape[axis]
        head = tuple(slice(1, length) if d == axis else slice(None) for d in range(a.ndim))
        tail = tuple(slice(0, length - 1) if d == axis else slice(None) for d in range(a.ndim))
        a = a[head] - a[tail]
    return a


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Central differences inside, one-sided differences at the ends (NumPy's ``gradient``
    with scalar spacings and ``edge_order=1``); a list for several axes."""
    f = as_operand(f)
    if edge_order != 1:
        raise ArgumentValueError("gradient: only edge_order=1")
    axes = list(range(f.ndim)) if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    spacings = list(varargs) if len(varargs) > 1 else [varargs[0] if varargs else 1.0] * len(axes)
    out = []
    for ax, h in zip(axes, spacings):
        ax %= f.ndim
        n = f.shape[ax]
        if n < 2:
            raise ShapeError(f"gradient: axis {ax} needs at least 2 points, got shape {tuple(f.shape)}")

        def part(start: int, stop: int, ax: int = ax) -> Any:
            return f[tuple(slice(start, stop) if d == ax else slice(None) for d in range(f.ndim))]

        pieces = [(part(1, 2) - part(0, 1)) / h]
        if n > 2:
            pieces.append((part(2, n) - part(0, n - 2)) / (2.0 * h))
        pieces.append((part(n - 1, n) - part(n - 2, n - 1)) / h)
        out.append(concatenate(pieces, axis=ax))
    return out[0] if len(out) == 1 else out


def kron(a: Any, b: Any) -> Any:
    """The Kronecker product (blocks ``a[i, j] * b``)."""
    a, b = atleast_1d(as_operand(a)), atleast_1d(as_operand(b))
    nd = a.ndim if a.ndim >= b.ndim else b.ndim
    a = reshape(a, (1,) * (nd - a.ndim) + tuple(a.shape))
    b = reshape(b, (1,) * (nd - b.ndim) + tuple(b.shape))
    product = reshape(outer(reshape(a, (-1,)), reshape(b, (-1,))), tuple(a.shape) + tuple(b.shape))
    order = [k for d in range(nd) for k in (d, nd + d)]  # interleave each axis of a with b's
    return reshape(product.transpose(order), tuple(x * y for x, y in zip(a.shape, b.shape)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Any:
    """The cross product of 3-vectors: along ``axisa`` of ``a`` and ``axisb`` of ``b``, the
    result's vectors along ``axisc`` (NumPy's; ``axis`` sets all three)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(as_operand(a), axisa, -1), moveaxis(as_operand(b), axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ShapeError(f"cross: vectors of 3 components needed, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    x1, y1, z1 = (a[..., i] for i in range(3))
    x2, y2, z2 = (b[..., i] for i in range(3))
    return moveaxis(stack([y1 * z2 - z1 * y2, z1 * x2 - x1 * z2, x1 * y2 - y1 * x2], axis=-1), -1, axisc)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """The first choice whose condition holds, elementwise; ``default`` where none does."""
    if len(condlist) != len(choicelist):
        raise ArgumentValueError(f"select: {len(condlist)} conditions for {len(choicelist)} choices")
    out = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    return asarray(out)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """``m`` turned by 90 degrees ``k`` times, from the first axis towards the second."""
    m = as_operand(m)
    k = as_int("rot90", k, "k", minimum=None) % 4
    if len(axes) != 2:
        raise ArgumentValueError(f"rot90: axes must be two axes, got {axes!r}")
    axes = tuple(normalize_axis("rot90", a, m.ndim) for a in axes)  # type: ignore[assignment]
    if axes[0] == axes[1]:
        raise ArgumentValueError(f"rot90: the two axes must differ, got {axes!r}")
    if k == 0:
        return returned_as_is(m)
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    if k == 1:
        return swapaxes(flip(m, axes[1]), axes[0], axes[1])
    return flip(swapaxes(m, axes[0], axes[1]), axes[1])


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Axis ``axis`` moved to lie before position ``start`` (NumPy's older ``moveaxis``)."""
    a = as_operand(a)
    axis %= a.ndim
    start = start % (a.ndim + 1) if start < 0 else start
    return moveaxis(a, axis, start - 1 if axis < start else start)


def flipud(m: Any) -> Any:
    """Rows in reverse order (axis 0)."""
    return flip(m, 0)


def fliplr(m: Any) -> Any:
    """Columns in reverse order (axis 1)."""
    return flip(m, 1)


def hsplit(a: Any, indices_or_sections: Any) -> list[Any]:
    """``split`` along the second axis (the first for 1-D)."""
    a = as_operand(a)
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(a: Any, indices_or_sections: Any) -> list[Any]:
    """``split`` along the first axis."""
    return split(a, indices_or_sections, 0)


def dsplit(a: Any, indices_or_sections: Any) -> list[Any]:
    """``split`` along the third axis."""
    return split(a, indices_or_sections, 2)


def row_stack(tup: Sequence[Any], *, dtype: Any = None) -> Any:
    """``vstack``."""
    return vstack(tup, dtype=dtype)


def column_stack(arrays: Sequence[Any]) -> Any:
    """1-D arrays as the columns of a 2-D array; 2-D arrays side by side."""
    columns = [reshape(a, (-1, 1)) if a.ndim < 2 else a for a in (atleast_1d(as_operand(x)) for x in arrays)]
    return concatenate(columns, axis=1)


def atleast_3d(x: Any) -> Any:
    """``x`` with at least three axes: ``(1, 1, 1)`` from 0-d, ``(1, n, 1)`` from 1-D,
    ``(m, n, 1)`` from 2-D."""
    x = as_operand(x)
    if x.ndim == 0:
        return reshape(x, (1, 1, 1))
    if x.ndim == 1:
        return reshape(x, (1, x.shape[0], 1))
    return reshape(x, tuple(x.shape) + (1,)) if x.ndim == 2 else x


def dstack(arrays: Sequence[Any]) -> Any:
    """Arrays stacked along the third axis."""
    return concatenate([atleast_3d(a) for a in arrays], axis=2)


def partition(a: Any, kth: int, axis: int = -1, kind: str = "introselect", order: Any = None) -> Any:
    """Entries around the ``kth`` smallest: it in its sorted place, smaller ones before it,
    larger ones after (a full sort satisfies NumPy's contract, and is what this returns)."""
    a = as_operand(a)
    length = a.shape[axis % a.ndim] if a.ndim else 1
    if not -length <= kth < length:
        raise ArgumentValueError(f"partition: kth={kth} is out of range for an axis of length {length}")
    return sort(a, axis=axis)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """NaN as ``nan``, infinities as the largest finite values (or ``posinf``/``neginf``)."""
    x = as_operand(x)
    if x.dtype.kind != "f":
        return returned_as_is(x)
    info = _dt.finfo(x.dtype)
    high = info.max if posinf is None else posinf
    low = info.min if neginf is None else neginf
    x = where(isnan(x), nan, x)
    return where(isinf(x), where(less(x, 0), low, high), x)


def sinc(x: Any) -> Any:
    """``sin(pi x) / (pi x)``, 1 at 0. At 0 the value is its Maclaurin series in ``x`` (to
    ``x**8``), so every derivative up to the eighth is the function's there too
    (``grad(grad(sinc))(0.)`` is ``-pi**2 / 3``, as JAX gives)."""
    x = as_operand(x)
    zero = equal(x, 0)
    safe = where(zero, 1.0, x) * math.pi
    at_zero = where(zero, x, 0.0) * math.pi
    u = at_zero * at_zero
    series = 1.0 + u * (-1 / 6 + u * (1 / 120 + u * (-1 / 5040 + u * (1 / 362880))))
    return where(zero, series, sin(safe) / safe)


def logaddexp2(x1: Any, x2: Any) -> Any:
    """``log2(2**x1 + 2**x2)`` without overflow."""
    return logaddexp(as_operand(x1) * math.log(2.0), as_operand(x2) * math.log(2.0)) / math.log(2.0)


def fabs(x: Any) -> Any:
    """The absolute value, as a float."""
    x = as_operand(x)
    return abs(x) if x.dtype.kind == "f" else abs(x).astype(_dt.float64)


def fmin(x1: Any, x2: Any) -> Any:
    """The smaller of each pair, ignoring NaN (a NaN only where both are)."""
    return where(isnan(x1), x2, where(isnan(x2), x1, minimum(x1, x2)))


def fmax(x1: Any, x2: Any) -> Any:
    """The larger of each pair, ignoring NaN (a NaN only where both are)."""
    return where(isnan(x1), x2, where(isnan(x2), x1, maximum(x1, x2)))


def radians(x: Any) -> Any:
    """Degrees to radians."""
    return as_operand(x) * (math.pi / 180.0)


def degrees(x: Any) -> Any:
    """Radians to degrees."""
    return as_operand(x) * (180.0 / math.pi)


deg2rad, rad2deg = radians, degrees


def real(x: Any) -> Any:
    """The real part (of a real array: ``x`` itself)."""
    x = as_operand(x)
    return bind(real_p, x) if x.dtype.kind == "c" else returned_as_is(x)


def imag(x: Any) -> Any:
    """The imaginary part (of a real array: zeros)."""
    x = as_operand(x)
    return bind(imag_p, x) if x.dtype.kind == "c" else zeros_like(x)


def conj(x: Any) -> Any:
    """The complex conjugate (of a real array: ``x`` itself)."""
    x = as_operand(x)
    return bind(conj_p, x) if x.dtype.kind == "c" else returned_as_is(x)


conjugate = conj  # NumPy's other name


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    """Where ``|a - b| <= atol + rtol * |b|`` (NumPy's test, not symmetric in ``a`` and ``b``);
    equal infinities are close, NaN only to NaN with ``equal_nan``."""
    a, b = as_operand(a), as_operand(b)
    with np.errstate(invalid="ignore", over="ignore"):  # (inf - inf, as NumPy's isclose, silently)
        distance = abs(a - b)
    near = logical_and(logical_and(isfinite(a), isfinite(b)), less_equal(distance, atol + rtol * abs(b)))
    close = logical_or(near, logical_and(equal(a, b), isinf(a)))  # (the same infinity)
    return logical_or(close, logical_and(isnan(a), isnan(b))) if equal_nan else close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    """Whether every pair is ``isclose``, as a 0-d bool array (JAX's form: it stays traceable,
    and ``if``/``assert`` read it as NumPy's bool)."""
    return isclose(a, b, rtol, atol, equal_nan).all()


def real_if_close(a: Any, tol: float = 100) -> Any:
    """The real part where every imaginary part is within ``tol`` machine epsilons of 0 (a
    choice of result dtype made on the values, so ``a`` must be concrete), else ``a``."""
    a = as_operand(a)
    if a.dtype.kind != "c":
        return returned_as_is(a)
    limit = tol * _dt.finfo(a.dtype).eps if tol > 1 else tol
    return real(a) if bool((abs(imag(a)) <= limit).all()) else returned_as_is(a)


def angle(x: Any, deg: bool = False) -> Any:
    """The argument of each value, ``atan2(imag, real)`` (of a real value: 0, or pi where it is negative)."""
    x = as_operand(x)
    if x.dtype.kind == "c":
        out = arctan2(imag(x), real(x))
        return out * (180.0 / math.pi) if deg else out
    dtype = x.dtype if x.dtype.kind == "f" else _dt.float64
    half_turn = asarray(180.0 if deg else math.pi, dtype=dtype, device=x.device)
    return where(less(x, 0), half_turn, asarray(0.0, dtype=dtype, device=x.device))


def shape(a: Any) -> tuple[int, ...]:
    """NumPy's ``shape``: the shape of an array, a traced value, a number or nested sequences.

    Args:
        a: an array, a traced value, a Python number or nested sequences.

    Returns:
        A tuple of ints.

    Example:
        >>> fg.shape([[1, 2, 3], [4, 5, 6]]), fg.shape(3.0)
        ((2, 3), ())
    """
    return tuple(a.shape) if hasattr(a, "shape") else tuple(asarray(a).shape)


def ndim(a: Any) -> int:
    """NumPy's ``ndim``: how many axes ``a`` has."""
    return len(shape(a))


def size(a: Any, axis: int | None = None) -> int:
    """NumPy's ``size``: how many elements ``a`` has (along ``axis``, when given)."""
    dims = shape(a)
    if axis is None:
        return math.prod(dims)
    return dims[normalize_axis("size", axis, len(dims))]


def permute(x: Any, dims: Sequence[int], /) -> Any:
    """PyTorch's ``permute``: ``x`` with its axes in the order ``dims`` (NumPy's ``transpose``)."""
    return transpose(x, dims)
