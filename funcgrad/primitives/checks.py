"""Shape and dtype rules shared by the primitive families.

They run in abstract evaluation (and after a kernel failure, to explain it), so
each one raises a typed error that names the operation and the user's shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.device import CPU
from ..dtypes import DType
from ..errors import ArgumentTypeError, ArgumentValueError, DeviceMismatchError, DTypeError, ShapeError
from .core import ShapedArray, fmt_shape

__all__ = ["broadcast_shapes", "elementwise", "normalize_axis", "normalize_axes", "common_device",
           "require_kind", "is_scalar", "as_int", "as_shape"]


def as_int(op: str, value: Any, what: str = "size", *, minimum: int | None = 0) -> int:
    """A count, size or index argument as an int: ``ArgumentTypeError`` for anything that is not
    an integer (``2.5``, ``"3"``, ``None``, a bool), ``ArgumentValueError`` below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if getattr(value, "shape", None) == () and getattr(getattr(value, "dtype", None), "kind", None) in ("i", "u"):
            value = int(value)  # a 0-d integer array
        else:
            raise ArgumentTypeError(f"{op}: {what} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ArgumentValueError(f"{op}: {what} must be at least {minimum}, got {value}")
    return value


def as_shape(op: str, shape: Any, *, allow_unknown: bool = False) -> tuple[int, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple. ``allow_unknown``: one
    ``-1`` may stand for a size to infer (reshape)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ArgumentTypeError(f"{op}: a shape must be an int or a sequence of ints, got {shape!r} "
                                f"({type(shape).__name__})")
    out = tuple(as_int(op, d, "every dimension of a shape", minimum=None) for d in shape)
    negative = [d for d in out if d < (-1 if allow_unknown else 0)]
    if negative:
        raise ShapeError(f"{op}: negative dimension in shape {out}")
    return out


def is_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex))


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of ``shapes``; ``ShapeError`` naming all of them if they do not fit."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d != 1:
                    if size not in (1, d):
                        listed = " and ".join(fmt_shape(tuple(s)) for s in shapes)
                        raise ShapeError(f"{op}: shapes {listed} do not broadcast "
                                         f"(axis {i}: {size} vs {d})")
                    size = d
        out.append(size)
    return tuple(out)


def common_device(op: str, avals: Sequence[Any]) -> Any:
    """The one device of the abstract arrays among ``avals`` (the CPU when there are none)."""
    devices = list(dict.fromkeys(a.device for a in avals if isinstance(a, ShapedArray)))
    if len(devices) > 1:
        raise DeviceMismatchError(f"{op}: arrays are on different devices: {devices[0]} and {devices[1]}")
    return devices[0] if devices else CPU


def require_kind(op: str, dtype: DType, kinds: str, what: str) -> None:
    """Raise ``DTypeError`` unless ``dtype.kind`` is one of ``kinds`` (b, i, u, f, c)."""
    if dtype.kind not in kinds:
        raise DTypeError(f"{op}: expected {what}, got {dtype}")


def elementwise(op: str, *args: Any, kinds: str = "biuf", out_dtype: DType | None = None) -> ShapedArray:
    """Abstract evaluation of an elementwise primitive: broadcast shapes, one
    shared dtype among arrays (the fg.* functions promote before binding), and
    Python scalars weak."""
    arrays = [a for a in args if isinstance(a, ShapedArray)]
    if not arrays:
        raise DTypeError(f"{op}: needs at least one array argument")
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype is not dtype:
            raise DTypeError(f"{op}: operand dtypes {dtype} and {a.dtype} differ; "
                             "promote them first (the fg.* functions do)")
    require_kind(op, dtype, kinds, _KIND_WORDS.get(kinds, f"an array of kind {kinds}"))
    for a in args:
        if not isinstance(a, ShapedArray) and not is_scalar(a):
            raise DTypeError(f"{op}: unsupported operand {a!r} of type {type(a).__name__}")
    shape = broadcast_shapes(op, *(a.shape for a in arrays))
    weak = out_dtype is None and all(a.weak for a in arrays)  # Python numbers' arithmetic stays a Python number's
    return ShapedArray(shape, out_dtype or dtype, common_device(op, arrays), weak)


_KIND_WORDS = {"biuf": "a real numeric or bool array", "f": "a real floating-point array",
               "iuf": "a real numeric array",
               "biu": "an integer or bool array", "iu": "an integer array", "b": "a bool array",
               "biufc": "a numeric or bool array", "iufc": "a numeric array", "fc": "a floating-point array",
               "c": "a complex array"}


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise ArgumentTypeError(f"{op}: axis must be an int, got {axis!r} ({type(axis).__name__})")
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise ShapeError(f"{op}: axis {axis} is out of range for an array with {ndim} dimension(s)")
    return axis % ndim if ndim else 0


def normalize_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``None`` -> every axis; int or sequence -> sorted, checked, non-negative, no repeats."""
    if axis is None:
        return tuple(range(ndim))
    if axis.__class__ is int and -ndim <= axis < ndim:
        return (axis % ndim,)
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise ArgumentTypeError(f"{op}: axis must be an int, a tuple of ints or None, got {axis!r} "
                                f"({type(axis).__name__})")
    out = tuple(sorted(normalize_axis(op, a, ndim) for a in axes))
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {axis!r}")
    return out
