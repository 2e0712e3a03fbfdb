"""Named dtypes and NumPy-2 type promotion.

funcgrad has its own small set of dtype objects (``fg.float32`` ...) so that
reprs read well and the promotion table is ours to pin down. Each wraps the
NumPy dtype the kernels use (bfloat16 comes from ml-dtypes) and compares equal
to it, so ``x.dtype == np.float32`` and ``np.dtype(fg.float32)`` both work.

Promotion follows NumPy 2 between arrays. Python scalars are *weak*: they take
the array's dtype when their kind fits (``f32 * 2.0 -> f32``, ``i8 + 1 -> i8``);
when they do not, they bring the default dtype of their kind, as in PyTorch and
JAX (``int64 * 2.5 -> float32``; NumPy would give float64). See docs/arrays.md.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .config import config
from .errors import DTypeError

__all__ = [
    "DType", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64", "complex64", "complex128", "component_dtype", "as_dtype", "result_type",
    "promote", "PYTHON_DTYPES", "PYTHON_SCALARS", "python_result",
    "weak_result", "can_cast", "finfo", "iinfo", "isdtype", "all_dtypes",
    "default_float", "default_complex", "default_int", "set_default_float", "set_default_dtype", "get_default_dtype",
    "set_converter",
]


# ``DType.__call__``'s conversion (``ops.asarray``, or ``astype`` of an array): the ops layer
# above sets it with ``set_converter``
_CONVERT: list[Any] = [None]


def set_converter(convert: Any) -> None:
    """Install ``convert(value, dtype)``, what calling a dtype (``fg.int64(x)``) runs."""
    _CONVERT[0] = convert


class DType:
    """One element type (``fg.float32``, ``fg.bfloat16``, ``fg.int64``...). Compares (and
    hashes) equal to its NumPy dtype.

    Example:
        >>> import numpy as np
        >>> fg.float32, fg.float32 == np.float32, fg.float32.itemsize, fg.float32.kind
        (float32, True, 4, 'f')
    """

    __slots__ = ("name", "np", "kind", "itemsize")

    def __init__(self, name: str, np_dtype: Any) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.kind = "f" if name == "bfloat16" else self.np.kind  # b, i, u, f, c
        self.itemsize = self.np.itemsize

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype; lets ``np.dtype(fg.float32)`` work."""
        return self.np

    def __call__(self, value: Any) -> Any:
        """``fg.int64(x)``: ``x`` as an array of this dtype (NumPy's and JAX's scalar types
        convert so), differentiable where a cast is."""
        return _CONVERT[0](value, self)

    @property
    def is_floating(self) -> bool:
        """Whether it is a floating-point type."""
        return self.kind == "f"

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, DType) or other is None:  # (np.dtype(None) is float64: None is no dtype here)
            return False
        try:
            return self.np == np.dtype(other)  # type: ignore[call-overload]
        except (TypeError, ValueError):  # (not dtype-like: any string, any object)
            return False

    def __hash__(self) -> int:
        return hash(self.np)

    def __reduce__(self) -> str:
        return self.name


bool_ = DType("bool", np.bool_)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)

all_dtypes: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64,
    complex64, complex128,
)
# The dtypes Python floats and complex numbers become, and that creation functions and
# integer-to-float operations default to: float32 (JAX's and PyTorch's default), or float64
# under ``set_default_float`` (``fg.set_default_dtype``, ``fg.config.update("enable_x64", True)``).
default_float = float32
default_complex = complex64
default_int = int64

BY_NUMPY_DTYPE: dict[np.dtype, DType] = {d.np: d for d in all_dtypes}
BY_NAME: dict[str, DType] = {d.name: d for d in all_dtypes}
BY_NAME["bool_"] = bool_
_BY_PYTYPE: dict[type, DType] = {bool: bool_, int: int64, float: float32, complex: complex64}


def set_default_float(dtype: DType) -> None:
    """Make ``dtype`` (float32 or float64) the default float, and its complex the default complex."""
    global default_float, default_complex
    if dtype not in (float32, float64):
        raise DTypeError(f"set_default_dtype: the default float dtype must be float32 or float64, got {dtype}")
    default_float, default_complex = dtype, (complex64 if dtype is float32 else complex128)
    _BY_PYTYPE[float], _BY_PYTYPE[complex] = default_float, default_complex


config.follow("enable_x64", lambda enabled: set_default_float(float64 if enabled else float32))


def set_default_dtype(dtype: Any) -> None:
    """PyTorch's ``torch.set_default_dtype``: the dtype (float32 or float64) Python floats,
    creation functions and integer-to-float operations give from now on.

    Args:
        dtype: ``fg.float32`` or ``fg.float64``.

    Example:
        >>> fg.set_default_dtype(fg.float64)
        >>> fg.asarray([1.5]).dtype
        float64
        >>> fg.set_default_dtype(fg.float32)
    """
    set_default_float(as_dtype(dtype, op="set_default_dtype"))


def get_default_dtype() -> DType:
    """The default float dtype (PyTorch's ``torch.get_default_dtype``): what Python floats and
    the creation functions without a dtype give.

    Returns:
        ``fg.float32``, or ``fg.float64`` after ``set_default_dtype(fg.float64)`` or with
        64-bit mode on.

    Example:
        >>> fg.get_default_dtype()
        float32
    """
    return default_float


def component_dtype(dtype: DType) -> DType:
    """The real dtype of a complex dtype's parts (``complex64 -> float32``); others unchanged."""
    return float32 if dtype is complex64 else float64 if dtype is complex128 else dtype


def as_dtype(value: Any, *, op: str = "dtype") -> DType:
    """Turn anything dtype-like (``fg.float32``, ``np.float32``, ``"float32"``,
    ``float``) into a funcgrad ``DType``, or raise ``DTypeError``."""
    if isinstance(value, DType):
        return value
    found = _BY_PYTYPE.get(value) if isinstance(value, type) else None
    if found is not None:
        return found
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    try:
        found = BY_NUMPY_DTYPE.get(np.dtype(value))
    except TypeError:
        found = None
    if found is None:
        names = ", ".join(d.name for d in all_dtypes)
        raise DTypeError(f"{op}: unsupported dtype {value!r}; funcgrad supports {names}")
    return found


def from_numpy_dtype(np_dtype: np.dtype, *, op: str = "dtype") -> DType:
    """Fast lookup for dtypes coming from kernels."""
    found = BY_NUMPY_DTYPE.get(np_dtype)
    if found is None:
        return as_dtype(np_dtype, op=op)
    return found


# ---- promotion ------------------------------------------------------------

def _numpy_like_promotion(a: DType, b: DType) -> DType:
    if a is bfloat16 or b is bfloat16:
        other = b if a is bfloat16 else a
        # bfloat16 behaves like float16 does in NumPy, but meets float16 at float32.
        if other is bfloat16:
            return bfloat16
        if other is float16:
            return float32
        via_f16 = from_numpy_dtype(np.result_type(other.np, np.float16))
        return bfloat16 if via_f16 is float16 else via_f16
    return from_numpy_dtype(np.result_type(a.np, b.np))


_PROMOTE: dict[tuple[DType, DType], DType] = {
    (a, b): _numpy_like_promotion(a, b) for a in all_dtypes for b in all_dtypes
}

_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}

# Python's numbers and the dtypes of their precision: what a Python number becomes as a
# (weakly typed) traced value, and what arithmetic among numbers alone computes in
PYTHON_DTYPES: dict[type, DType] = {bool: bool_, int: int64, float: float64, complex: complex128}
PYTHON_SCALARS = tuple(PYTHON_DTYPES)  # (for isinstance and class checks)


def python_result(kinds: Any, floating: bool = False) -> DType:
    """The dtype of arithmetic among Python numbers (or traced ones) of these dtype kinds:
    the widest kind, in 64 bits (a float at least, for ``floating`` operations)."""
    order = max(_KIND_ORDER[k] for k in kinds)
    return (bool_, int64, float64, complex128)[max(order, 2) if floating else order]


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary operation between arrays of dtypes ``a`` and ``b``."""
    return _PROMOTE[a, b]


def weak_result(dtype: DType, scalar: Any) -> DType:
    """The dtype of ``array(dtype) op scalar`` for a Python scalar (weak typing)."""
    scalar_type = _BY_PYTYPE.get(type(scalar))
    if scalar_type is None:
        if isinstance(scalar, (bool, np.bool_)):
            scalar_type = bool_
        elif isinstance(scalar, (int, np.integer)):
            scalar_type = int64
        elif isinstance(scalar, (float, np.floating)):
            scalar_type = default_float
        elif isinstance(scalar, (complex, np.complexfloating)):
            scalar_type = default_complex
        else:
            raise DTypeError(f"unsupported scalar {scalar!r} of type {type(scalar).__name__}")
    if _KIND_ORDER[scalar_type.kind] <= _KIND_ORDER[dtype.kind]:
        return dtype
    if scalar_type.kind == "c" and dtype is float64:  # a complex scalar keeps the array's precision
        return complex128
    return scalar_type


def result_type(*arrays_and_dtypes: Any) -> DType:
    """Array API ``result_type``: promote arrays, dtypes and (weak) Python scalars. A Python
    number takes the arrays' dtype where its kind fits (JAX's weak types).

    Args:
        *arrays_and_dtypes: arrays, dtypes and Python numbers.

    Returns:
        The dtype an operation on them computes in.

    Example:
        >>> fg.result_type(fg.int8, fg.uint8), fg.result_type(fg.ones(2, dtype=fg.int32), 2.0)
        (int16, float32)
    """
    strong: DType | None = None
    weak: list[Any] = []
    for item in arrays_and_dtypes:
        if isinstance(item, (bool, int, float, complex)):
            weak.append(item)
            continue
        d = item.dtype if hasattr(item, "shape") else item
        d = as_dtype(d, op="result_type")
        strong = d if strong is None else promote(strong, d)
    if strong is None:
        if not weak:
            raise ValueError("result_type: at least one array or dtype is required")
        strong = as_dtype(type(weak[0]))
        weak = weak[1:]
    for w in weak:
        strong = weak_result(strong, w)
    return strong


def can_cast(from_: Any, /, to: Any) -> bool:
    """Array API ``can_cast``: whether ``from_`` promotes to ``to`` without loss. Kinds do
    not mix: an integer dtype never casts to a float one (NumPy's and the standard's rule).

    Args:
        from_: a dtype or an array.
        to: the dtype to cast to.

    Returns:
        A Python bool.

    Example:
        >>> fg.can_cast(fg.int8, fg.int32), fg.can_cast(fg.float64, fg.float32), fg.can_cast(fg.int32, fg.float32)
        (True, False, False)
    """
    src = as_dtype(from_.dtype if hasattr(from_, "shape") else from_, op="can_cast")
    dst = as_dtype(to, op="can_cast")
    return promote(src, dst) is dst


def isdtype(dtype: Any, kind: Any) -> bool:
    """Array API ``isdtype``: whether ``dtype`` is of ``kind``.

    Args:
        dtype: a dtype.
        kind: a dtype, a kind name (``'bool'``, ``'signed integer'``, ``'unsigned integer'``,
            ``'integral'``, ``'real floating'``, ``'complex floating'``, ``'numeric'``) or a tuple
            of them (any matches).

    Returns:
        A Python bool.

    Example:
        >>> fg.isdtype(fg.float32, "real floating"), fg.isdtype(fg.int8, ("bool", "unsigned integer"))
        (True, False)
    """
    d = as_dtype(dtype, op="isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if not isinstance(kind, str):
        return d is as_dtype(kind, op="isdtype")
    table = {
        "bool": d.kind == "b",
        "signed integer": d.kind == "i",
        "unsigned integer": d.kind == "u",
        "integral": d.kind in "iu",
        "real floating": d.kind == "f",
        "complex floating": d.kind == "c",
        "numeric": d.kind in "iufc",
    }
    if kind not in table:
        raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(table)}")
    return table[kind]


class finfo:
    """Machine limits of a floating dtype (array API ``finfo``, ``torch.finfo``); a complex
    dtype gives its parts'.

    Args:
        dtype: a floating or complex dtype, or an array of one.

    Attributes:
        bits, eps, max, min, smallest_normal, resolution: NumPy's (ml_dtypes' for bfloat16).

    Example:
        >>> fg.finfo(fg.float32).eps, fg.finfo(fg.bfloat16).eps
        (1.1920928955078125e-07, 0.0078125)
        >>> fg.finfo(fg.float16)
        finfo(dtype=float16, eps=0.0009765625, min=-65504.0, max=65504.0)
    """

    def __init__(self, dtype: Any) -> None:
        if hasattr(dtype, "shape"):
            dtype = dtype.dtype
        d = component_dtype(as_dtype(dtype, op="finfo"))  # (a complex dtype: its parts', as the array API asks)
        if d.kind != "f":
            raise DTypeError(f"finfo: {d} is not a floating dtype; use iinfo")
        info = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.dtype = d
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, eps={self.eps}, min={self.min}, max={self.max})"


class iinfo:
    """Limits of an integer dtype (array API ``iinfo``, ``torch.iinfo``).

    Args:
        dtype: an integer dtype, or an array of one.

    Attributes:
        bits, min, max: as ints.

    Example:
        >>> fg.iinfo(fg.int8)
        iinfo(dtype=int8, min=-128, max=127)
        >>> fg.iinfo(fg.uint16).max
        65535
    """

    def __init__(self, dtype: Any) -> None:
        if hasattr(dtype, "shape"):
            dtype = dtype.dtype
        d = as_dtype(dtype, op="iinfo")
        if d.kind not in "iu":
            raise DTypeError(f"iinfo: {d} is not an integer dtype; use finfo")
        info = np.iinfo(d.np)
        self.dtype = d
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(dtype={self.dtype}, min={self.min}, max={self.max})"
