"""Creating arrays: from Python data, NumPy, DLPack, and the NumPy creation functions.

Defaults (documented in docs/arrays.md): Python floats become float32 and
Python ints int64, like PyTorch; NumPy arrays keep their dtype. ``array``
always copies, ``from_numpy`` never does, ``asarray`` copies only what it must
(a NumPy array is copied so a later write to it cannot reach funcgrad).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .. import dtypes as _dt
from ..array import Array, ArrayBase, wrap_kernel_output
from ..backends.device import CPU, Device
from ..backends.device import device as _as_device
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..primitives.checks import as_int, as_shape, normalize_axis
from ..primitives.core import bind
from ..primitives.shape import broadcast_to_p, concatenate_p, expand_dims_p

__all__ = ["array", "asarray", "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "tri"]


_F = TypeVar("_F", bound=Callable[..., Any])


def _grad_leaf(fn: _F) -> _F:
    """Creation functions take ``requires_grad=`` (PyTorch): the result becomes a leaf of the tape."""

    @functools.wraps(fn)
    def create(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if kwargs.get("requires_grad"):
            if out.requires_grad and not out.is_leaf:
                raise RuntimeError(f"{fn.__name__}(requires_grad=True) on an array with history: use .detach() first")
            if args and out is args[0]:  # asarray returned its input: do not mark the caller's array
                out = out.detach()
            out.requires_grad_(True)
        return out

    return create  # type: ignore[return-value]


def _contains_arrays(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and any(isinstance(o, (ArrayBase, np.ndarray, np.generic)) for o in obj)


def _host_array(obj: Any, dtype: _dt.DType | None, op: str) -> np.ndarray:
    """Python data -> a fresh NumPy array with funcgrad's default dtypes."""
    if isinstance(obj, (list, tuple)) and any(isinstance(o, Array) and o.device is not CPU for o in obj):
        raise TypeError(f"{op}: nested GPU arrays; use fg.stack")
    try:
        host = np.array(obj, dtype=dtype.np if dtype is not None else None)
    except ValueError as exc:
        if "inhomogeneous" in str(exc) or "sequence" in str(exc):
            raise ShapeError(f"{op}: ragged nested sequence (the rows have different lengths): {exc}") from None
        raise ValueError(f"{op}: {exc}") from None
    except OverflowError as exc:
        raise DTypeError(f"{op}: {exc}") from None
    if dtype is None:
        if host.dtype in (np.float64, np.complex128) and _is_python_data(obj):  # Python floats: the default float
            host = host.astype((_dt.default_float if host.dtype == np.float64 else _dt.default_complex).np)
        elif host.dtype.kind == "O":
            raise DTypeError(f"{op}: cannot make an array of Python objects ({type(obj).__name__})")
        elif host.dtype.kind in "US":
            raise DTypeError(f"{op}: strings are not supported")
    _dt.as_dtype(host.dtype, op=op)
    return host


def _is_python_data(obj: Any) -> bool:
    """Python floats become the default float (float32, as in PyTorch and JAX); objects that carry a dtype
    (NumPy arrays and scalars, pandas frames, anything with ``__array__``) keep theirs."""
    if hasattr(obj, "__array__") or hasattr(obj, "__array_interface__") or hasattr(obj, "dtype"):
        return False
    return not _contains_arrays(obj)


def _place(host: np.ndarray, device: Device) -> Array:
    if device is CPU:
        return Array._from_kernel(host, CPU)
    return Array._from_kernel(device.backend.from_host(host), device)


def _holds_arrays(obj: Any) -> bool:
    """Whether a nested sequence holds a funcgrad array or a traced value anywhere."""
    if isinstance(obj, ArrayBase):
        return True
    return isinstance(obj, (list, tuple)) and any(_holds_arrays(o) for o in obj)


def _stacked(obj: Any, dt: _dt.DType | None, device: Any, op: str) -> Any:
    """A nested sequence holding funcgrad arrays or traced values, built by stacking them,
    so derivatives flow through it in every transform and on the tape (JAX's rule: the
    dtype is the arrays' promoted one, Python scalars weak)."""
    leaves: list[Any] = []

    def collect(o: Any) -> None:
        if isinstance(o, (list, tuple)):
            for e in o:
                collect(e)
        else:
            leaves.append(o if isinstance(o, (ArrayBase, bool, int, float)) else asarray(o))

    collect(obj)
    dtype = dt if dt is not None else _dt.result_type(*leaves)
    if device is None:
        device = next((leaf.device for leaf in leaves if isinstance(leaf, ArrayBase)), None)
    converted = iter(leaves)

    def build(o: Any) -> Any:
        if isinstance(o, (list, tuple)):
            if not o:
                raise ShapeError(f"{op}: an empty sequence beside arrays (the rows have different lengths)")
            parts = [build(e) for e in o]
            shapes = {tuple(p.shape) for p in parts}
            if len(shapes) != 1:
                raise ShapeError(f"{op}: ragged nested sequence: its elements have shapes {sorted(shapes)}")
            return bind(concatenate_p, *[bind(expand_dims_p, p, dimensions=(0,)) for p in parts], axis=0)
        leaf = next(converted)
        if isinstance(leaf, ArrayBase):
            return leaf.astype(dtype, copy=False)
        return full((), leaf, dtype, device=device)

    return build(obj)


@_grad_leaf
def array(obj: Any, dtype: Any = None, *, device: Any = None, copy: bool = True, ndmin: int = 0, ndmax: int = 0,
          requires_grad: bool = False) -> Array:
    """A new array holding a copy of ``obj`` (nested lists, scalars, NumPy or funcgrad arrays).
    A sequence holding arrays or traced values stacks them, keeping their derivatives.
    NumPy's ``ndmin`` prepends axes of size one up to that many; ``ndmax`` bounds the axes
    read from nested sequences (deeper ones would be NumPy's object arrays, which funcgrad
    has not: an error says so).

    Example:
        >>> fg.array([1, 2], ndmin=3).shape
        (1, 1, 2)
    """
    out = _array(obj, dtype, device, copy)
    if ndmax and isinstance(obj, (list, tuple)) and out.ndim > ndmax:
        raise ArgumentValueError(f"array: the data has {out.ndim} levels of nesting, more than ndmax={ndmax} (NumPy "
                                 f"would keep the deeper ones as Python objects; funcgrad arrays hold numbers)")
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + tuple(out.shape))
    return out


def _array(obj: Any, dtype: Any, device: Any, copy: bool) -> Any:
    dt = None if dtype is None else _dt.as_dtype(dtype, op="array")
    if isinstance(obj, (list, tuple)) and _holds_arrays(obj):
        out = _stacked(obj, dt, None if device is None else _as_device(device), "array")
        return out.to(device) if device is not None and isinstance(out, Array) else out
    if isinstance(obj, ArrayBase) and not isinstance(obj, Array):  # a traced value: a copy that keeps its derivative
        return obj.astype(dt if dt is not None else obj.dtype)
    if isinstance(obj, Array):
        out = obj.astype(dt, copy=copy) if dt is not None else (obj.astype(obj.dtype) if copy else obj._own())
        return out.to(device) if device is not None else out
    dev = _as_device(device)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        return _array(from_dlpack(obj), dt, device, copy)
    return _place(_host_array(obj, dt, "array"), dev)


@_grad_leaf
def asarray(obj: Any, dtype: Any = None, *, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Any:
    """An array from ``obj`` (the array API's ``asarray``): ``obj`` itself when it already
    fits, else converted, with NumPy's dtype rules except that Python floats give the
    default float (float32; float64 in 64-bit mode).

    Args:
        obj: an array, a NumPy array, a scalar, or nested sequences of them.
        dtype: the result's dtype (inferred if not given).
        device: where the result lives.
        copy: ``True`` always copies, ``False`` never does (an error where it would have to).
        requires_grad: make it a leaf of the tape (PyTorch's ``tensor(..., requires_grad=True)``).

    Returns:
        An ``fg.Array``.

    Example:
        >>> fg.asarray([[1, 2], [3, 4]]).dtype, fg.asarray([0.5, 1.5]).dtype
        (int64, float32)
    """
    if isinstance(obj, ArrayBase):
        out = (obj._own() if isinstance(obj, Array) else obj) if dtype is None else obj.astype(dtype, copy=bool(copy))
        if copy and out is obj:
            out = obj.astype(obj.dtype)
        return out.to(device) if device is not None and isinstance(out, Array) else out
    if copy is False:
        if isinstance(obj, np.ndarray) and (dtype is None or _dt.as_dtype(dtype) == obj.dtype):
            return from_numpy(obj).to(device) if device is not None else from_numpy(obj)
        raise ValueError("asarray(copy=False): this input cannot be used without a copy")
    return array(obj, dtype, device=device)


def from_numpy(a: np.ndarray) -> Array:
    """Zero-copy: the array shares ``a``'s memory. Do not write to ``a`` afterwards
    (funcgrad assumes buffers never change)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    _dt.as_dtype(a.dtype, op="from_numpy")
    if any(s % a.itemsize for s in a.strides):
        a = a.copy()
    return Array._from_kernel(a, CPU)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """Import any DLPack producer (PyTorch, JAX, CuPy, NumPy) zero-copy where possible. The
    array shares the producer's memory: do not write to the source afterwards (funcgrad
    assumes buffers never change). A PyTorch tensor that requires grad comes in detached
    (its autograd history stays in PyTorch); bfloat16, which NumPy's and CuPy's DLPack
    readers lack, comes in through a 16-bit integer view of the same memory.

    Args:
        x: an object with ``__dlpack__`` and ``__dlpack_device__``.
        device: where the result goes (a copy if that is not where ``x`` lies).
        copy: ``True`` copies the memory; otherwise it is shared where possible.

    Returns:
        The array.

    Example:
        >>> import numpy as np
        >>> fg.from_dlpack(np.arange(3.0))
        Array([0., 1., 2.], dtype=float64, device=cpu)
    """
    if not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a DLPack producer), got {type(x).__name__}")
    if getattr(x, "requires_grad", False) and hasattr(x, "detach"):
        x = x.detach()
    bfloat16 = str(getattr(x, "dtype", "")).endswith("bfloat16")
    if bfloat16:
        x = x.view(_int16_of(x))
    kind, index = x.__dlpack_device__()
    if int(kind) == 1:  # kDLCPU
        raw = np.from_dlpack(x)
        dev = CPU
    else:
        dev = _as_device(f"gpu:{index}")
        raw = dev.backend.xp.from_dlpack(x)
    if bfloat16:
        raw = raw.view(_dt.bfloat16.np)
    raw = raw.copy() if copy else raw
    out = from_numpy(raw) if dev is CPU else Array._from_kernel(raw, dev)
    return out.to(device) if device is not None else out


def _int16_of(x: Any) -> Any:
    """int16 as ``x``'s library spells it: PyTorch's own dtype, NumPy's for JAX and CuPy."""
    library = sys.modules.get(type(x).__module__.split(".")[0])
    return getattr(library, "int16", np.int16)


def _resolve(dtype: Any, default: _dt.DType, op: str) -> _dt.DType:
    return default if dtype is None else _dt.as_dtype(dtype, op=op)


def _shape(shape: Any, op: str) -> tuple[int, ...]:
    return as_shape(op, shape)


def create(device: Any, make: Any) -> Array:
    dev = _as_device(device)
    if dev is CPU:
        return Array._from_kernel(make(np), CPU)
    return Array._from_kernel(dev.backend.kernel(make)(), dev)


@_grad_leaf
def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None, requires_grad: bool = False) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (dtype inferred from it, weakly)."""
    if isinstance(fill_value, ArrayBase) and not _is_constant(fill_value):  # keeps the fill value's derivative
        dt = fill_value.dtype if dtype is None else _dt.as_dtype(dtype, op="full")
        sh = _shape(shape, "full")
        value = fill_value.astype(dt, copy=False)
        return value if tuple(value.shape) == sh else bind(broadcast_to_p, value, shape=sh)  # type: ignore[return-value]
    if dtype is None:
        if isinstance(fill_value, ArrayBase):
            dtype = fill_value.dtype
            fill_value = fill_value.item()
        else:
            dtype = _dt.as_dtype(type(fill_value)) if isinstance(fill_value, (bool, int, float, complex)) else \
                _dt.as_dtype(np.asarray(fill_value).dtype, op="full")
    dt = _dt.as_dtype(dtype, op="full")
    sh = _shape(shape, "full")
    if isinstance(fill_value, int) and not isinstance(fill_value, bool) and dt.kind in "iu":
        info = np.iinfo(dt.np)
        if not info.min <= fill_value <= info.max:
            raise DTypeError(f"full: the fill value {fill_value} does not fit {dt} ([{info.min}, {info.max}])")
    return create(device, lambda xp: xp.full(sh, fill_value, dtype=dt.np))


def _sizes(op: str, shape: Any, size: tuple[Any, ...], dtype: Any) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype (the default float unless given) from PyTorch's ``zeros(3, 4,
    dtype=...)``, ``zeros((3, 4))`` or NumPy's ``zeros((3, 4), float)``: a last positional
    that is not an int is the dtype."""
    size = size if shape is None else (shape, *size)
    if not size:
        raise TypeError(f"{op}: missing the shape (zeros((3, 4)) or zeros(3, 4))")
    if len(size) > 1 and not (isinstance(size[-1], (int, np.integer)) and not isinstance(size[-1], bool)):
        if dtype is not None:
            raise TypeError(f"{op}: the dtype is given twice, as {size[-1]!r} and dtype={dtype!r}")
        size, dtype = size[:-1], size[-1]
        if len(size) > 1:
            raise TypeError(f"{op}: expected a shape then at most a dtype, got {(*size, dtype)!r}")
    return _shape(size[0] if len(size) == 1 else size, op), _resolve(dtype, _dt.default_float, op)


@_grad_leaf
def zeros(shape: Any = None, *size: Any, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Array:
    """Zeros of a shape, in NumPy's form or PyTorch's.

    Args:
        shape: an int or a tuple (NumPy's and the array API's form).
        *size: PyTorch's further sizes: ``zeros(3, 4)``.
        dtype: the dtype (the default float unless given).
        device: where the result lives.
        requires_grad: make it a leaf of the tape.

    Returns:
        An ``fg.Array`` of zeros.

    Example:
        >>> fg.zeros((2, 3)).shape == fg.zeros(2, 3).shape == (2, 3)
        True
    """
    sh, dt = _sizes("zeros", shape, size, dtype)
    return create(device, lambda xp: xp.zeros(sh, dtype=dt.np))


@_grad_leaf
def ones(shape: Any = None, *size: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Array:
    """Ones of a shape, in the forms ``zeros`` takes."""
    sh, dt = _sizes("ones", shape, size, dtype)
    return create(device, lambda xp: xp.ones(sh, dtype=dt.np))


@_grad_leaf
def empty(shape: Any = None, *size: Any, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Array:
    """Uninitialised in NumPy; here zeros, since an array can never be written later."""
    sh, dt = _sizes("empty", shape, size, dtype)
    return zeros(sh, dtype=dt, device=device)


def _backend_like(x: Array, fill: str) -> Array:
    """Zeros or ones of a concrete array's shape, dtype and device, straight from its backend:
    every backward pass makes its seed this way (``ones_like`` of the loss), 3.5 -> 1.3 us."""
    data = x._data
    return wrap_kernel_output(getattr(x._device.backend.xp, fill)(data.shape, data.dtype), x._device)


def _like(x: Any, dtype: Any, device: Any, shape: Any = None) -> tuple[tuple[int, ...], Any, Any]:
    """``x``'s shape (or NumPy's ``shape=``), dtype and device, each unless given."""
    x = x if isinstance(x, ArrayBase) else asarray(x)
    size = tuple(x.shape) if shape is None else as_shape("like", shape)
    return size, (x.dtype if dtype is None else dtype), (x.device if device is None else device)


def _like_fn(fill: str, make: Any) -> Any:
    """``zeros_like`` / ``ones_like``: a concrete array's shape, dtype and device straight
    from its backend, anything else through ``zeros`` / ``ones``."""

    def like(x: Any, /, dtype: Any = None, *, device: Any = None, requires_grad: bool = False,
             shape: Any = None) -> Array:
        if x.__class__ is Array and dtype is None and device is None and shape is None:
            return _backend_like(x, fill)
        size, dt, dev = _like(x, dtype, device, shape)
        return make(size, dt, device=dev)  # type: ignore[no-any-return]

    like.__name__ = like.__qualname__ = f"{fill}_like"
    return _grad_leaf(like)


zeros_like, ones_like = _like_fn("zeros", zeros), _like_fn("ones", ones)


@_grad_leaf
def empty_like(x: Any, /, dtype: Any = None, *, device: Any = None, requires_grad: bool = False,
               shape: Any = None) -> Array:
    return zeros_like(x, dtype, device=device, shape=shape)


@_grad_leaf
def full_like(x: Any, /, fill_value: Any, dtype: Any = None, *, device: Any = None,
              requires_grad: bool = False, shape: Any = None) -> Array:
    size, dt, dev = _like(x, dtype, device, shape)
    return full(size, fill_value, dt, device=dev)


@_grad_leaf
def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, *, device: Any = None,
           requires_grad: bool = False) -> Array:
    """Evenly spaced values in ``[start, stop)``, as ``np.arange``.

    Args:
        start: the first value (or ``stop``, when ``stop`` is not given).
        stop: the end, excluded.
        step: the spacing.
        dtype: the dtype (int64 for ints, the default float for floats, unless given).
        device: where the result lives.
        requires_grad: make it a leaf of the tape.

    Returns:
        A 1-D ``fg.Array``.

    Example:
        >>> fg.arange(5).tolist(), fg.arange(0.0, 1.0, 0.25).tolist()
        ([0, 1, 2, 3, 4], [0.0, 0.25, 0.5, 0.75])
    """
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if (v is None and name != "stop") or not (v is None or isinstance(v, (int, float, np.integer, np.floating,
                                                                              ArrayBase))) or isinstance(v, bool):
            raise ArgumentTypeError(f"arange: {name} must be a number, got {v!r} ({type(v).__name__})")
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) or (isinstance(v, ArrayBase) and v.dtype.kind == "f")
                       for v in (start, stop, step))
        dtype = _dt.default_float if is_float else _dt.default_int
    dt = _dt.as_dtype(dtype, op="arange")
    if step == 0:
        raise ArgumentValueError("arange: step must not be zero")
    lo, hi = (0, start) if stop is None else (start, stop)
    if not any(isinstance(v, ArrayBase) for v in (lo, hi, step)):
        length = max(0, int(np.ceil((float(hi) - float(lo)) / float(step))))
        if length > 1 << 48:
            raise ArgumentValueError(f"arange: {start}, {stop}, {step} would hold {length} elements, more than any "
                                     "array can")
    if any(isinstance(v, ArrayBase) and not _is_constant(v) for v in (start, stop, step)):
        return _differentiable_arange(start, stop, step, dt, device)
    return create(device, lambda xp: xp.arange(lo, hi, step, dtype=dt.np))  # (stop None: step still counts)


def _is_constant(x: Any) -> bool:
    """A concrete array with no tape history: creation may read its value."""
    return isinstance(x, Array) and not x.requires_grad


def _differentiable_arange(start: Any, stop: Any, step: Any, dt: _dt.DType, device: Any) -> Any:
    """``start + step * i``: the length comes from the values (a traced value must be
    concrete: ``ConcretizationError`` under ``fg.trace``), the elements keep derivatives."""
    if stop is None:
        start, stop = 0, start
    lo, hi, by = (float(v) for v in (start, stop, step))
    n = max(0, int(np.ceil((hi - lo) / by)))
    steps = arange(n, dtype=dt, device=device if device is not None else _device_of(start, stop, step))
    return (start + step * steps).astype(dt, copy=False)  # steps is an array: its operators are fg.*'s


def _device_of(*values: Any) -> Any:
    return next((v.device for v in values if isinstance(v, ArrayBase)), None)


@_grad_leaf
def linspace(start: Any, stop: Any, num: int = 50, dtype: Any = None, *, device: Any = None,
             endpoint: bool = True, requires_grad: bool = False, retstep: bool = False, axis: int = 0) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop``, as ``np.linspace``; array (or
    traced) endpoints keep their derivatives.

    Args:
        start: the first value (a number or an array).
        stop: the last value (included unless ``endpoint`` is false).
        num: how many values.
        dtype: the dtype (the default float unless given).
        device: where the result lives.
        endpoint: include ``stop``.
        requires_grad: make it a leaf of the tape.
        retstep: also return the spacing (NumPy's).
        axis: where the samples' axis goes among array endpoints' axes (NumPy's).

    Returns:
        The values (and the spacing, with ``retstep``).

    Example:
        >>> fg.linspace(0.0, 1.0, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if retstep or axis != 0:
        values = linspace(start, stop, num, dtype, device=device, endpoint=endpoint, requires_grad=requires_grad)
        if axis != 0 and values.ndim > 1:  # (the samples' axis 0 moved to ``axis``)
            at = normalize_axis("linspace", axis, values.ndim)
            values = values.permute(*range(1, at + 1), 0, *range(at + 1, values.ndim))
        div = (num - 1 if endpoint else num) or 1
        return (values, (stop - start) / div) if retstep else values
    num = as_int("linspace", num, "num (the number of samples)")
    if any(isinstance(v, ArrayBase) and not _is_constant(v) for v in (start, stop)):
        dt = _dt.as_dtype(dtype, op="linspace") if dtype is not None else _dt.result_type(start, stop, 0.0)
        steps = arange(num, dtype=dt, device=device if device is not None else _device_of(start, stop))
        div = (num - 1 if endpoint else num) or 1
        fraction = steps / float(div)  # an array: its operators are fg.*'s
        return (start + (stop - start) * fraction).astype(dt, copy=False)
    dt = _resolve(dtype, _dt.default_float, "linspace")
    return create(device, lambda xp: xp.linspace(start, stop, num, endpoint=endpoint).astype(dt.np))


@_grad_leaf
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None,
        requires_grad: bool = False) -> Array:
    """The identity (``N`` rows, ``M`` columns, ones on diagonal ``k``)."""
    dt = _resolve(dtype, _dt.default_float, "eye")
    n_rows = as_int("eye", N, "N (the rows)")
    n_cols = None if M is None else as_int("eye", M, "M (the columns)")
    k = as_int("eye", k, "k (the diagonal)", minimum=None)
    return create(device, lambda xp: xp.eye(n_rows, n_cols, k=k, dtype=dt.np))


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None) -> Array:
    """Ones at and below diagonal ``k`` of an ``N`` x ``M`` array."""
    dt = _resolve(dtype, _dt.default_float, "tri")
    return create(device, lambda xp: xp.tri(N, M, k, dtype=dt.np))


def _convert(value: Any, dtype: Any) -> Any:
    """``fg.int64(x)``: an array (a traced one included) cast, anything else ``asarray``'d."""
    return value.astype(dtype) if isinstance(value, ArrayBase) else asarray(value, dtype=dtype)


_dt.set_converter(_convert)
