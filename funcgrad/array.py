"""``Array``: immutable metadata (shape, strides, offset, dtype, device) over a ``Buffer``.

Two classes split the work:

* ``ArrayBase`` holds everything that is only *calls*: operators and methods
  that forward to the ``fg.*`` functions. Anything array-like that the
  transforms add later (tracers) inherits it, so ``x + 1`` means one thing.
* ``Array`` is the concrete array. Its backend array (``_data``, a NumPy or
  CuPy array with exactly this view's shape and strides) is built once, when the
  array is made: kernel outputs *are* their backend array, and a view builds
  its own from the buffer. So the eager path never re-derives a view.

Eager evaluation lives here too (``evaluate``): ``bind`` with no interpreter active
asks its first array argument to evaluate the primitive, and an array that requires
grad hands it to the tape through its autograd metadata.

No array's values ever change, so views are always safe to share. ``x[...] = v``
raises; ``x.at[...].set(v)`` returns a new array. What users reach of the memory is
read-only (``Buffer``). The one write into a buffer is an optimizer step adding into a
``Parameter``'s own buffer when nothing else can reach it (``optim/optimizer.py``), which
no holder can observe.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from typing_extensions import Self

from . import dtypes as _dt
from .backends.base import memory_root
from .backends.buffer import Buffer, read_only
from .backends.cc import EAGER_MIN
from .backends.device import CPU, Device
from .backends.device import device as _as_device
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    DeviceMismatchError,
    DTypeError,
    FuncgradError,
    ShapeError,
    UnknownAttributeError,
)
from .primitives import core as _core
from .primitives.checks import as_int, normalize_axis
from .primitives.core import ANY, Layout, Primitive, ShapedArray, explain_failure, fmt_shape
from .primitives.elementwise import copy_p
from .primitives.shape import reshape_p, stop_gradient_p, strict_view

_UNSET: Any = object()  # an argument the caller did not pass

__all__ = ["Array", "ArrayBase"]

_NP_TO_DTYPE = _dt.BY_NUMPY_DTYPE
_generic = np.generic


# Arrays' methods are the fg.* functions (``funcgrad.ops``) and the tape's
# (``funcgrad.transforms.autodiff.tape``), two floors up: those import this module, so each hands
# itself over when it loads (``provide``). This is the one place a floor reaches up.
_ops: Any = None
_tape: Any = None


def provide(*, ops: Any = None, tape: Any = None) -> None:
    """Called once by ``funcgrad.ops`` (the fg.* functions, unwrapped: no argument-naming
    layer on the operators' hot path) and by the tape (``requires_grad_``, ``backward``...)."""
    global _ops, _tape
    if ops is not None:
        _ops = ops
        # the forward operators are the functions themselves: one Python frame less on the hottest path
        for dunder, name in (("__add__", "add"), ("__sub__", "subtract"), ("__mul__", "multiply"),
                             ("__truediv__", "divide"), ("__matmul__", "matmul")):
            setattr(ArrayBase, dunder, getattr(ops, name))
    if tape is not None:
        _tape = tape


def _no_out(name: str, out: Any) -> None:
    """NumPy's functions (``np.sum(x)``) call our methods with ``out=None``; arrays are immutable."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported; funcgrad arrays are immutable, use the return value")


class ArrayBase:
    """Operators and NumPy-style methods shared by every array-like in funcgrad.

    Example:
        >>> isinstance(fg.ones(2), fg.ArrayBase)  # (and every tracer a transform passes to a function)
        True
        >>> fg.grad(lambda x: float(isinstance(x, fg.ArrayBase)) * x.sum())(fg.ones(2)).tolist()
        [1.0, 1.0]
    """

    __slots__ = ()
    __array_priority__ = 100.0  # ndarray (op) Array defers to Array's reflected operator

    # subclasses provide: shape, dtype, device, ndim, size

    weak = False  # a concrete array is never weakly typed (a traced Python number is: ShapedArray.weak)

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return int(self.shape[0])

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # -- arithmetic ----------------------------------------------------------
    if TYPE_CHECKING:  # (at run time each is the fg.* function itself, installed by ``provide``)
        def __add__(self, other: Any, /) -> Self: ...
        def __sub__(self, other: Any, /) -> Self: ...
        def __mul__(self, other: Any, /) -> Self: ...
        def __truediv__(self, other: Any, /) -> Self: ...
        def __matmul__(self, other: Any, /) -> Self: ...
    else:
        __add__: Any
        __sub__: Any
        __mul__: Any
        __truediv__: Any
        __matmul__: Any
    def __radd__(self, other: Any) -> Self: return _ops.add(other, self)
    def __rsub__(self, other: Any) -> Self: return _ops.subtract(other, self)
    def __rmul__(self, other: Any) -> Self: return _ops.multiply(other, self)
    def __rtruediv__(self, other: Any) -> Self: return _ops.divide(other, self)
    def __floordiv__(self, other: Any) -> Self: return _ops.floor_divide(self, other)
    def __rfloordiv__(self, other: Any) -> Self: return _ops.floor_divide(other, self)
    def __mod__(self, other: Any) -> Self: return _ops.remainder(self, other)
    def __rmod__(self, other: Any) -> Self: return _ops.remainder(other, self)
    def __pow__(self, other: Any) -> Self: return _ops.power(self, other)
    def __rpow__(self, other: Any) -> Self: return _ops.power(other, self)
    def __rmatmul__(self, other: Any) -> Self: return _ops.matmul(other, self)
    def __neg__(self) -> Self: return _ops.negative(self)
    def __pos__(self) -> Self: return _ops.positive(self)
    def __abs__(self) -> Self: return _ops.abs(self)
    def __invert__(self) -> Self: return _ops.bitwise_invert(self)
    def __and__(self, other: Any) -> Self: return _ops.bitwise_and(self, other)
    def __rand__(self, other: Any) -> Self: return _ops.bitwise_and(other, self)
    def __or__(self, other: Any) -> Self: return _ops.bitwise_or(self, other)
    def __ror__(self, other: Any) -> Self: return _ops.bitwise_or(other, self)
    def __xor__(self, other: Any) -> Self: return _ops.bitwise_xor(self, other)
    def __rxor__(self, other: Any) -> Self: return _ops.bitwise_xor(other, self)
    def __lshift__(self, other: Any) -> Self: return _ops.bitwise_left_shift(self, other)
    def __rlshift__(self, other: Any) -> Self: return _ops.bitwise_left_shift(other, self)
    def __rshift__(self, other: Any) -> Self: return _ops.bitwise_right_shift(self, other)
    def __rrshift__(self, other: Any) -> Self: return _ops.bitwise_right_shift(other, self)

    # -- comparison (elementwise, as in NumPy) -------------------------------
    def __eq__(self, other: Any) -> Any: return _ops.equal(self, other)  # type: ignore[override]
    def __ne__(self, other: Any) -> Any: return _ops.not_equal(self, other)  # type: ignore[override]
    def __lt__(self, other: Any) -> Self: return _ops.less(self, other)
    def __le__(self, other: Any) -> Self: return _ops.less_equal(self, other)
    def __gt__(self, other: Any) -> Self: return _ops.greater(self, other)
    def __ge__(self, other: Any) -> Self: return _ops.greater_equal(self, other)
    __hash__ = object.__hash__  # identity, as torch.Tensor: arrays can key dicts and sets

    if TYPE_CHECKING:  # (type checkers only: at run time a __getattr__ slows every attribute read)
        def __getattr__(self, name: str) -> Any: ...


    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(
            "funcgrad arrays are immutable: `x[index] = value` cannot change x. "
            "Use `x = x.at[index].set(value)`, which returns a new array (also .add, .multiply, .min, .max)."
        )

    def __getitem__(self, index: Any) -> Self:
        return _ops.getitem(self, index)

    @property
    def at(self) -> _AtIndexer:
        """Functional updates: ``x.at[idx].set(v)``, ``.add``, ``.multiply``, ``.min``, ``.max``, ``.get()``."""
        return _AtIndexer(self)

    # -- shape ----------------------------------------------------------------
    @property
    def T(self) -> Self:
        return _ops.transpose(self)

    @property
    def mT(self) -> Self:
        return _ops.matrix_transpose(self)

    @property
    def mH(self) -> Self:
        """The conjugate transpose of the last two axes (PyTorch's ``x.mH``; ``x.mT`` for real arrays)."""
        t = _ops.matrix_transpose(self)
        return _ops.conj(t) if self.dtype.kind == "c" else t

    def reshape(self, *shape: Any) -> Self:
        return _ops.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def transpose(self, *axes: Any) -> Self:
        """NumPy's ``transpose(axes)`` (a permutation of every axis: a tuple, or one int per
        axis) and PyTorch's ``transpose(dim0, dim1)`` (swap two). On a 2-D array the two
        readings of ``transpose(0, 1)`` differ (unchanged, or swapped): that is an error
        naming both; ``transpose(1, 0)``, ``.T`` and ``swapaxes(0, 1)`` swap."""
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        elif len(axes) == 2 and all(isinstance(a, int) for a in axes):
            if self.ndim != 2:  # not a permutation of every axis: PyTorch's swap
                return _ops.swapaxes(self, *axes)
            if axes[0] % 2 == 0 and axes[1] % 2 == 1:
                raise ArgumentValueError(
                    "transpose(0, 1) on a 2-D array reads two ways: NumPy's permutation (0, 1) leaves it unchanged, "
                    "PyTorch's swaps dims 0 and 1. Write x.T or x.swapaxes(0, 1) to swap, or x.transpose((0, 1)) "
                    "for NumPy's permutation.")
        return _ops.transpose(self, axes or None)

    def permute(self, *dims: Any) -> Self:
        return self.transpose(*dims)

    def swapaxes(self, axis1: int, axis2: int) -> Self:
        return _ops.swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Any = None) -> Self:
        return _ops.squeeze(self, axis)

    def expand_dims(self, axis: Any) -> Self:
        return _ops.expand_dims(self, axis)

    unsqueeze = expand_dims

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Self:
        return _ops.flatten(self, start_dim, end_dim)

    def ravel(self) -> Self:
        return _ops.reshape(self, (-1,))

    def flip(self, axis: Any = None) -> Self:
        return _ops.flip(self, axis)

    def broadcast_to(self, shape: Any) -> Self:
        return _ops.broadcast_to(self, shape)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Self:
        return _ops.diagonal(self, offset, axis1, axis2)

    def split(self, split_size_or_sections: Any, dim: int = 0) -> Any:
        """PyTorch's ``split`` (NumPy arrays have no such method): pieces of ``split_size``
        along ``dim`` (the last may be shorter), or of each size in a list. (The function
        ``fg.split(x, n)`` is NumPy's: ``n`` equal pieces.)"""
        n = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ArgumentValueError(f"split: split_size must be positive, got {size}")
            sizes = [min(size, n - start) for start in range(0, n, size)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ArgumentValueError(f"split: sizes {sizes} add up to {sum(sizes)}, not {n} (dim {dim})")
        bounds = [0]
        for k in sizes:
            bounds.append(bounds[-1] + k)
        return tuple(_ops.split(self, bounds[1:-1], dim)) if len(sizes) > 1 else (self,)

    def chunk(self, chunks: int, dim: int = 0) -> Any:
        return _ops.chunk(self, chunks, dim)

    def repeat(self, repeats: Any, axis: Any = None) -> Self:
        return _ops.repeat(self, repeats, axis)

    def take(self, indices: Any, axis: Any = None) -> Self:
        return _ops.take(self, indices, axis)

    def astype(self, dtype: Any, copy: bool = True) -> Self:
        return _ops.astype(self, dtype, copy=copy)

    def detach(self) -> Self:
        """A view with no derivative history (``fg.stop_gradient``): shares the buffer."""
        return _core.bind(stop_gradient_p, self)

    # -- reductions and math as methods (NumPy names; PyTorch's ``dim=``/``keepdim=`` too) ------
    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None, out: None = None, *,
            dim: Any = None, keepdim: bool | None = None) -> Self:
        _no_out("sum", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.sum(self, axis, keepdims=keepdims, dtype=dtype)

    def mean(self, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False, *,
             dim: Any = None, keepdim: bool | None = None) -> Self:
        _no_out("mean", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        x = self if dtype is None else self.astype(dtype)
        return _ops.mean(x, axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
             keepdim: bool | None = None) -> Self:
        _no_out("prod", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.prod(self, axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
            keepdim: bool | None = None) -> Any:
        """NumPy's maximum over ``axis``; with PyTorch's ``dim=``, PyTorch's ``(values, indices)``."""
        _no_out("max", out)
        if dim is not None:
            keep = bool(keepdim)
            return _Extremes(_ops.max(self, dim, keepdims=keep), _ops.argmax(self, dim, keepdims=keep))
        return _ops.max(self, axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
            keepdim: bool | None = None) -> Any:
        """NumPy's minimum over ``axis``; with PyTorch's ``dim=``, PyTorch's ``(values, indices)``."""
        _no_out("min", out)
        if dim is not None:
            keep = bool(keepdim)
            return _Extremes(_ops.min(self, dim, keepdims=keep), _ops.argmin(self, dim, keepdims=keep))
        return _ops.min(self, axis, keepdims=keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
               keepdim: bool | None = None) -> Self:
        _no_out("argmax", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.argmax(self, axis, keepdims=keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
               keepdim: bool | None = None) -> Self:
        _no_out("argmin", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.argmin(self, axis, keepdims=keepdims)

    def var(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: int | None = None,
            keepdims: bool = False, *, dim: Any = None, keepdim: bool | None = None, correction: int | None = None,
            unbiased: bool | None = None) -> Self:
        """NumPy's variance (``ddof=0``); with PyTorch's ``dim=``, ``correction=`` or ``unbiased=``,
        PyTorch's (``correction=1`` unless given)."""
        _no_out("var", out)
        axis, keepdims, ddof = _variance_keywords(axis, keepdims, ddof, dim, keepdim, correction, unbiased)
        return _ops.var(self if dtype is None else self.astype(dtype), axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: int | None = None,
            keepdims: bool = False, *, dim: Any = None, keepdim: bool | None = None, correction: int | None = None,
            unbiased: bool | None = None) -> Self:
        """NumPy's standard deviation (``ddof=0``); with PyTorch's ``dim=``, ``correction=`` or
        ``unbiased=``, PyTorch's (``correction=1`` unless given)."""
        _no_out("std", out)
        axis, keepdims, ddof = _variance_keywords(axis, keepdims, ddof, dim, keepdim, correction, unbiased)
        return _ops.std(self if dtype is None else self.astype(dtype), axis, ddof=ddof, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
            keepdim: bool | None = None) -> Self:
        _no_out("any", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.any(self, axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False, out: None = None, *, dim: Any = None,
            keepdim: bool | None = None) -> Self:
        _no_out("all", out)
        axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
        return _ops.all(self, axis, keepdims=keepdims)

    def cumsum(self, axis: Any = None) -> Self:
        return _ops.cumsum(self, axis)

    def clip(self, min: Any = None, max: Any = None) -> Self:
        return _ops.clip(self, min, max)

    def round(self, decimals: int = 0) -> Self:
        return _ops.round(self, decimals)

    def dot(self, other: Any) -> Self:
        return _ops.dot(self, other)

    def sort(self, axis: int = -1, descending: bool = False, *, dim: int | None = None) -> Self:
        return _ops.sort(self, axis=axis if dim is None else dim, descending=descending)

    def argsort(self, axis: int = -1, descending: bool = False, *, dim: int | None = None) -> Self:
        return _ops.argsort(self, axis=axis if dim is None else dim, descending=descending)

    def exp(self) -> Self: return _ops.exp(self)
    def log(self) -> Self: return _ops.log(self)
    def sqrt(self) -> Self: return _ops.sqrt(self)
    def tanh(self) -> Self: return _ops.tanh(self)
    def sigmoid(self) -> Self: return _ops.sigmoid(self)
    def abs(self) -> Self: return _ops.abs(self)

    # -- PyTorch spellings (docs/porting-from-pytorch.md lists them, and the two readings) --
    @property
    def is_cuda(self) -> bool:
        """Whether the array is on a GPU (PyTorch's ``is_cuda``)."""
        return bool(self.device.kind != "cpu")

    def mm(self, other: Any) -> Self:
        """The product of two matrices (PyTorch's ``mm``: 2-D only, no broadcasting)."""
        if self.ndim != 2 or getattr(other, "ndim", None) != 2:
            raise ShapeError(f"mm: expects two matrices, got shapes {fmt_shape(tuple(self.shape))} and "
                             f"{fmt_shape(tuple(getattr(other, 'shape', ())))}; use @ (matmul) to broadcast")
        return _ops.matmul(self, other)

    def numel(self) -> int:
        """The number of elements (PyTorch's ``numel()``; NumPy's ``size``)."""
        return int(self.size)

    def dim(self) -> int:
        """The number of dimensions (PyTorch's ``dim()``; NumPy's ``ndim``)."""
        return int(self.ndim)

    def t(self) -> Self:
        """The transpose of a matrix (a vector or scalar as it is), as ``torch.Tensor.t``."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects at most 2 dimensions, got shape {fmt_shape(tuple(self.shape))}; "
                             "use .mT or .swapaxes(-1, -2)")
        return _ops.transpose(self) if self.ndim == 2 else self

    def type(self, dtype: Any = None) -> Any:
        """PyTorch's ``x.type(dtype)``: this array in ``dtype``; with no argument, the dtype's name."""
        return self.dtype.name if dtype is None else self.astype(dtype)

    def type_as(self, other: Any) -> Self:
        """This array in ``other``'s dtype."""
        return self.astype(other.dtype)

    def view(self, *shape: Any) -> Self:
        """``shape`` over the same elements (PyTorch's ``view``). A traced value has no strides
        to check: it is ``reshape``; a concrete array refuses what its strides forbid."""
        return self.reshape(*shape)

    def contiguous(self) -> Self:
        """A traced value has no memory layout: itself (a concrete array copies when its
        strides are not row-major)."""
        return self

    def view_as(self, other: Any) -> Self:
        """This array's elements in ``other``'s shape, without copying (``view``'s rules)."""
        return self.view(tuple(other.shape))

    def reshape_as(self, other: Any) -> Self:
        """This array's elements in ``other``'s shape."""
        return self.reshape(tuple(other.shape))

    def expand(self, *sizes: Any) -> Self:
        """A broadcast view to ``sizes``; ``-1`` keeps a dimension (``torch.Tensor.expand``)."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise ShapeError(f"expand: {len(sizes)} sizes for an array of shape {fmt_shape(tuple(self.shape))}")
        shape = tuple(self.shape[i - lead] if d == -1 and i >= lead else d for i, d in enumerate(sizes))
        return _ops.broadcast_to(self, shape)

    def expand_as(self, other: Any) -> Self:
        """A broadcast view to ``other``'s shape."""
        return _ops.broadcast_to(self, tuple(other.shape))

    def narrow(self, dim: int, start: int, length: int) -> Self:
        """Elements ``start:start + length`` along ``dim``: a view (``torch.Tensor.narrow``)."""
        axis = normalize_axis("narrow", dim, self.ndim)
        size = self.shape[axis]
        start = as_int("narrow", start, "start", minimum=-size)
        start = start + size if start < 0 else start
        length = as_int("narrow", length, "length")
        if start + length > size:
            raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) of axis "
                             f"{axis} of an array of shape {fmt_shape(tuple(self.shape))}")
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    def clone(self) -> Self:
        """A copy with its own memory (derivatives flow through it, as PyTorch's ``clone``)."""
        return _core.bind(copy_p, self)

    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None) -> Self:
        """Zeros of ``size`` in this array's dtype and on its device (unless given)."""
        return _ops.zeros(_size_args(size), dtype or self.dtype, device=device or self.device)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None) -> Self:
        """Ones of ``size`` in this array's dtype and on its device (unless given)."""
        return _ops.ones(_size_args(size), dtype or self.dtype, device=device or self.device)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None) -> Self:
        """An array of ``size`` (zeros) in this array's dtype and on its device (unless given)."""
        return self.new_zeros(*size, dtype=dtype, device=device)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Self:
        """``fill_value`` everywhere, in this array's dtype and on its device (unless given)."""
        return _ops.full(_size_args((size,)), fill_value, dtype or self.dtype, device=device or self.device)

    def new_tensor(self, data: Any, dtype: Any = None, device: Any = None) -> Self:
        """``data`` as an array in this array's dtype and on its device (unless given)."""
        return _ops.asarray(data, dtype=dtype or self.dtype, device=device or self.device)

    def eq(self, other: Any) -> Self:
        """``self == other``, elementwise."""
        return _ops.equal(self, other)

    def ne(self, other: Any) -> Self:
        """``self != other``, elementwise."""
        return _ops.not_equal(self, other)

    def lt(self, other: Any) -> Self:
        """``self < other``, elementwise."""
        return _ops.less(self, other)

    def le(self, other: Any) -> Self:
        """``self <= other``, elementwise."""
        return _ops.less_equal(self, other)

    def gt(self, other: Any) -> Self:
        """``self > other``, elementwise."""
        return _ops.greater(self, other)

    def ge(self, other: Any) -> Self:
        """``self >= other``, elementwise."""
        return _ops.greater_equal(self, other)

    def masked_fill(self, mask: Any, value: Any) -> Self:
        """``value`` where ``mask`` is true, this array elsewhere (a new array)."""
        value = value.astype(self.dtype) if isinstance(value, ArrayBase) else _ops.asarray(
            value, dtype=self.dtype, device=self.device)
        return _ops.where(mask, value, self)

    def clamp(self, min: Any = None, max: Any = None) -> Self:
        """Values limited to ``[min, max]`` (``clip``)."""
        return _ops.clip(self, min, max)

    def clamp_min(self, min: Any) -> Self:
        """Values limited from below."""
        return _ops.clip(self, min, None)

    def clamp_max(self, max: Any) -> Self:
        """Values limited from above."""
        return _ops.clip(self, None, max)

    def add(self, other: Any, alpha: Any = 1) -> Self:
        """``self + alpha * other``."""
        return _ops.add(self, other if alpha == 1 else _ops.multiply(other, alpha))

    def sub(self, other: Any, alpha: Any = 1) -> Self:
        """``self - alpha * other``."""
        return _ops.subtract(self, other if alpha == 1 else _ops.multiply(other, alpha))

    def mul(self, other: Any) -> Self:
        """``self * other``."""
        return _ops.multiply(self, other)

    def div(self, other: Any, rounding_mode: str | None = None) -> Self:
        """``self / other``; ``rounding_mode="floor"`` or ``"trunc"`` rounds the quotient."""
        if rounding_mode is None:
            return _ops.divide(self, other)
        if rounding_mode == "floor":
            return _ops.floor_divide(self, other)
        if rounding_mode == "trunc":
            quotient = _ops.trunc(_ops.divide(self, other))
            integers = self.dtype.kind in "iu" and getattr(other, "dtype", _dt.int64).kind in "iu" and not isinstance(
                other, float)
            return quotient.astype(self.dtype) if integers else quotient  # integers stay integers, as in PyTorch
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")

    def pow(self, exponent: Any) -> Self:
        """``self ** exponent``."""
        return _ops.power(self, exponent)

    def matmul(self, other: Any) -> Self:
        """``self @ other``."""
        return _ops.matmul(self, other)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """The ``k`` largest (or smallest) entries along ``dim`` and their indices."""
        return _ops.topk(self, k, dim=dim, largest=largest, sorted=sorted)

    def float(self) -> Self:
        """This array as float32."""
        return self.astype(_dt.float32)

    def double(self) -> Self:
        """This array as float64."""
        return self.astype(_dt.float64)

    def half(self) -> Self:
        """This array as float16."""
        return self.astype(_dt.float16)

    def bfloat16(self) -> Self:
        """This array as bfloat16."""
        return self.astype(_dt.bfloat16)

    def long(self) -> Self:
        """This array as int64."""
        return self.astype(_dt.int64)

    def int(self) -> Self:
        """This array as int32."""
        return self.astype(_dt.int32)

    def bool(self) -> Self:
        """This array as bool."""
        return self.astype(_dt.bool_)

    def __round__(self, ndigits: builtins.int | None = None) -> Any:
        """``round(x)``: a Python int for a single value (as for a float); with ``ndigits``, the
        array rounded (half to even, as NumPy)."""
        if ndigits is None:
            if self.shape:
                raise TypeError(f"round() of an array of shape {tuple(self.shape)}: use fg.round(x) or x.round()")
            return round(self.item())
        return _ops.round(self, ndigits)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions (``np.mean(x)``, ``np.concatenate([x, y])``) of plain arrays work
        on their values and return NumPy arrays: NumPy computes. Where a derivative is being
        taken (a traced value, an array that requires grad or came from one), they run
        funcgrad's function of the same name instead (``np.sum(x)`` is ``fg.sum(x)``), as
        autograd's boxes do: NumPy's would read the values and drop the derivative."""
        if _differentiated(args, kwargs):
            return numpy_counterpart(func)(*args, **kwargs)
        return func(*_as_numpy(args), **_as_numpy(kwargs))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """A NumPy ufunc (``np.exp(x)``) as ``__array_function__``: on the values of plain
        arrays, funcgrad's function of the same name where a derivative is being taken, and
        where a NumPy operand meets a funcgrad one (``np.float64(2) * x``: the reflected
        operator's result)."""
        mixed = any(not isinstance(v, ArrayBase) for v in inputs)  # (a NumPy operand: x.__rmul__'s case)
        if (not mixed or "out" in kwargs) and not _differentiated(inputs, kwargs):
            return getattr(ufunc, method)(*_as_numpy(inputs), **_as_numpy(kwargs))
        if method != "__call__" or kwargs.pop("out", None) is not None:
            raise ArgumentTypeError(f"numpy.{ufunc.__name__}.{method} of an array whose derivative is being taken: "
                                    f"only a plain call runs as funcgrad's (fg.{ufunc.__name__}), and funcgrad "
                                    "arrays take no out=")
        return numpy_counterpart(ufunc)(*inputs, **kwargs)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        if api_version not in (None, "2023.12", "2022.12", "2021.12"):
            raise ValueError(f"funcgrad implements the array API 2023.12, not {api_version!r}")
        return sys.modules["funcgrad"]  # the package this array belongs to (loaded: it loaded this module)

    # -- what a concrete array answers that a traced value answers too. A traced value has
    #    no memory of its own until the program runs: it answers as a fresh, contiguous copy
    #    would, so code that asks (PyTorch code checking strides, JAX code blocking) runs
    #    under fg.grad, fg.vmap and fg.compile. ``Array`` overrides these with its own. --
    @property
    def nbytes(self) -> builtins.int:
        """The number of bytes of the elements."""
        return int(math.prod(self.shape)) * self.dtype.itemsize

    def stride(self, dim: builtins.int | None = None) -> Any:
        """Element strides (row-major for a traced value)."""
        strides = _core.contiguous_strides(tuple(self.shape))
        return strides if dim is None else strides[dim]

    @property
    def strides(self) -> tuple[builtins.int, ...]:
        """Element strides (not bytes): the same as ``stride()``."""
        return _core.contiguous_strides(tuple(self.shape))

    def storage_offset(self) -> builtins.int:
        """Where element ``[0, ..., 0]`` sits in the buffer, in elements."""
        return 0

    def is_contiguous(self) -> builtins.bool:
        """Row-major with no gaps."""
        return True

    def block_until_ready(self) -> Self:
        """Wait until the value is computed (JAX's): a traced value is, as far as its program goes."""
        return self

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """The array on ``device`` (the array API's spelling of ``to``)."""
        if stream is not None:
            raise ValueError("to_device: funcgrad has no streams to pass; give stream=None")
        return self.to(device)  # type: ignore[attr-defined]

    def cpu(self) -> Any:
        """The array on the CPU."""
        return self.to("cpu")  # type: ignore[attr-defined]

    @property
    def requires_grad(self) -> builtins.bool:
        """Whether the tape records operations on it (never for a traced value: its transform does)."""
        return False

    @property
    def grad(self) -> Any:
        """The gradient the tape accumulated (``None`` for a traced value)."""
        return None

    @property
    def grad_fn(self) -> Any:
        """The tape's node that made it (``None`` for a traced value)."""
        return None

    @property
    def is_leaf(self) -> builtins.bool:
        """Whether the tape made it (a traced value is, for the tape, a leaf)."""
        return True

    def is_inference(self) -> builtins.bool:
        """Whether it was made in ``fg.inference_mode()``."""
        return False

    def _tape_only(self, what: str) -> Any:
        raise RuntimeError(f"{what}: the tape's hooks and flags work on concrete arrays; this is a traced value "
                           f"(inside fg.grad, fg.vmap or fg.compile), whose derivatives its transform computes")

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Any:
        """Mark for the tape (concrete arrays only)."""
        return self._tape_only("requires_grad_")

    def retain_grad(self) -> Any:
        """Keep a non-leaf's gradient (concrete arrays only)."""
        return self._tape_only("retain_grad")

    def register_hook(self, hook: Any) -> Any:
        """A gradient hook (concrete arrays only)."""
        return self._tape_only("register_hook")

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """A hook after the gradient accumulates (concrete arrays only)."""
        return self._tape_only("register_post_accumulate_grad_hook")

    @property
    def buffer(self) -> Any:
        """The flat memory of a concrete array (a traced value has none yet)."""
        raise AttributeError(f"{type(self).__name__}.buffer: a traced value has no memory until its program runs; "
                             "read .buffer outside fg.grad, fg.vmap and fg.compile")


_IN_PLACE = {"zero_", "fill_", "copy_", "normal_", "uniform_", "add_", "sub_", "mul_", "div_", "clamp_",
             "masked_fill_", "index_add_", "scatter_", "addcmul_", "addcdiv_", "lerp_"}


# what to write for an in-place method whose name without the underscore is no method
_INSTEAD = {"zero_": "x = fg.zeros_like(x)", "fill_": "x = fg.full_like(x, value)",
            "normal_": "x = fg.randn_like(x) * std + mean", "uniform_": "x = fg.rand_like(x) * (b - a) + a",
            "copy_": "x = fg.asarray(other)", "masked_fill_": "x = fg.where(mask, value, x)",
            "scatter_": "x = x.at[index].set(src)", "index_add_": "x = x.at[index].add(source)",
            "addcmul_": "x = x + value * t1 * t2", "addcdiv_": "x = x + value * t1 / t2",
            "lerp_": "x = x + weight * (end - x)", "clamp_": "x = x.clamp(min, max)"}


def _explaining(name: str, why: str) -> property:
    """A property that raises ``AttributeError(why)``: ``hasattr`` stays false, and PyTorch's
    in-place methods and ``.data`` get an explanation instead of Python's bare "no attribute".
    (Properties, not ``__getattr__``: a class with ``__getattr__`` makes every attribute read
    of its instances slower, the eager path's included.)"""

    def explain(self: Any) -> Any:
        raise AttributeError(why.format(kind=type(self).__name__))

    explain.__name__ = name
    return property(explain, doc=f"Not an attribute of funcgrad arrays; reading it raises ``AttributeError`` saying "
                                 f"what to write instead ({why.split(': ', 1)[1].split('. ')[0]}).")


def _explain_in_place_habits() -> None:
    methods = {n for cls in (ArrayBase, Array) for n in vars(cls) if not n.startswith("_") and not n.endswith("_")}
    for name in sorted(_IN_PLACE | {f"{m}_" for m in methods}):
        if not any(name in vars(cls) for cls in (ArrayBase, Array)):
            instead = _INSTEAD.get(name, f"x = x.{name[:-1]}(...)")
            setattr(ArrayBase, name, _explaining(name, (
                f"{{kind}}.{name}: funcgrad arrays are immutable, so there is no in-place {name}. Write "
                f"`{instead}`, which returns a new array (for an indexed update `x = x.at[i].set(v)`; "
                "a Parameter changes through an optimizer, `with fg.no_grad(): p -= lr * p.grad`, or p.copy_(v)).")))
    ArrayBase.data = _explaining("data", (  # type: ignore[attr-defined]
        "{kind}.data: funcgrad arrays have no .data: an array is already a value that cannot change. Use "
        "x.detach() for the value without derivative history."))


class _Extremes(NamedTuple):
    """``x.max(dim=...)``: PyTorch's pair."""
    values: Any
    indices: Any


def _axis_keywords(axis: Any, keepdims: bool, dim: Any, keepdim: bool | None) -> tuple[Any, bool]:
    """NumPy's ``axis``/``keepdims`` or PyTorch's ``dim``/``keepdim`` (not both)."""
    if dim is not None:
        if axis is not None:
            raise TypeError("give axis (NumPy) or dim (PyTorch), not both")
        axis = dim
    return axis, keepdims if keepdim is None else bool(keepdim)


def _variance_keywords(axis: Any, keepdims: bool, ddof: int | None, dim: Any, keepdim: bool | None,
                       correction: int | None, unbiased: bool | None) -> tuple[Any, bool, int]:
    """NumPy's ``ddof=0``, or PyTorch's ``correction=1`` when any PyTorch keyword is given."""
    pytorch = dim is not None or correction is not None or unbiased is not None
    axis, keepdims = _axis_keywords(axis, keepdims, dim, keepdim)
    if ddof is None:
        ddof = (correction if correction is not None else int(unbiased if unbiased is not None else True)) \
            if pytorch else 0
    return axis, keepdims, ddof


def _differentiated(*values: Any) -> bool:
    """Whether any funcgrad value in ``values`` (lists, tuples and dicts walked) is traced
    or carries the tape's record (requires grad, or came from an array that does)."""
    for value in values:
        if isinstance(value, ArrayBase):
            if value.__class__ is not Array or value._autograd is not None:  # (a tracer; a Parameter)
                return True
        elif isinstance(value, (list, tuple)):
            if _differentiated(*value):
                return True
        elif isinstance(value, dict) and _differentiated(*value.values()):
            return True
    return False


def numpy_counterpart(func: Any) -> Any:
    """funcgrad's function named as NumPy's ``func`` (``numpy.linalg.solve``: ``fg.linalg.solve``),
    or ``ArgumentTypeError`` where there is none."""
    package = sys.modules["funcgrad"]  # (loaded: it loaded this module)
    module = getattr(func, "__module__", None) or "numpy"
    namespace: Any = package
    for part in module.split(".")[1:]:
        if part.startswith("_"):
            break
        namespace = getattr(namespace, part, None)
    target = getattr(namespace, func.__name__, None) if namespace is not None else None
    if not callable(target):
        raise ArgumentTypeError(f"{module}.{func.__name__} of an array whose derivative is being taken: funcgrad has "
                                f"no function of that name, and NumPy's would drop the derivative; use fg.* "
                                "functions there")
    return target


def _as_numpy(value: Any) -> Any:
    """``value`` with every funcgrad array in it as a NumPy array (``__array_function__``)."""
    if isinstance(value, ArrayBase):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return value


def _size_args(size: tuple[Any, ...]) -> Any:
    """``new_zeros(2, 3)`` or ``new_zeros((2, 3))``."""
    return tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size


class Size(int):
    """An array's ``size``: NumPy's element count, which PyTorch code may also call:
    ``x.size()`` is the shape and ``x.size(d)`` one dimension, as ``torch.Tensor.size``."""

    def __new__(cls, shape: tuple[int, ...]) -> Size:
        n = 1
        for d in shape:
            n *= d
        self = super().__new__(cls, n)
        self.shape = tuple(shape)  # type: ignore[attr-defined]
        return self

    def __call__(self, dim: int | None = None) -> Any:
        shape = self.shape  # type: ignore[attr-defined]
        return shape if dim is None else shape[normalize_axis("size", dim, len(shape))]



class Array(ArrayBase):
    """An immutable n-dimensional array: a view over a ``Buffer`` on one device
    (``fg.Tensor`` is the same class). Views (a transpose, a slice, a reshape that keeps the
    order) share the buffer with new strides; operations make new arrays; ``x.at[i].set(v)``
    is the functional update. It carries autograd state for the tape (``requires_grad``,
    ``grad``, ``backward``) as PyTorch's tensors do.

    Example:
        >>> x = fg.asarray([[1.0, 2.0], [3.0, 4.0]])
        >>> x
        Array([[1., 2.],
               [3., 4.]], dtype=float32, device=cpu)
        >>> x.T.buffer is x.buffer, x.T.stride()
        (True, (1, 2))
        >>> x.at[0, 1].set(9.0).tolist(), x.tolist()
        ([[1.0, 9.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]])
    """

    __slots__ = ("_data", "_dtype", "_device", "_buf", "_layout", "_autograd", "__weakref__")

    _data: Any
    _dtype: _dt.DType
    _device: Device
    _buf: Buffer | None
    _layout: Layout | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("create arrays with fg.array(...), fg.asarray(...) or fg.from_numpy(...)")

    # ``bind`` with no interpreter active: eager evaluation (``evaluate``, below)
    _evaluate: Any

    # -- construction (internal) ----------------------------------------------
    @staticmethod
    def _from_kernel(out: Any, device: Device) -> Array:
        """Wrap a freshly allocated backend array (a kernel's output) without copying."""
        return wrap_kernel_output(out, device)

    @staticmethod
    def _view_of(base: Array, layout: Layout) -> Array:
        """A new array over ``base``'s buffer with ``layout`` (no copy)."""
        a = object.__new__(Array)
        buf = base.buffer
        a._data = base._device.backend.view(buf._raw_flat, layout.shape, layout.strides, layout.offset)
        a._dtype = base._dtype
        a._device = base._device
        a._buf = buf
        a._layout = layout
        a._autograd = None
        return a

    @staticmethod
    def _backend_view(base: Array, data: Any) -> Array:
        """A new array over ``base``'s buffer whose data is ``data``, a view the backend made
        of ``base``'s data (its layout is worked out from addresses when asked for)."""
        a = _new(Array)
        a._data = data
        a._dtype = base._dtype
        a._device = base._device
        a._buf = base.buffer
        a._layout = None
        a._autograd = None
        return a

    def _own(self) -> Any:
        """This array as a function's result when nothing changes: itself, unless it is a
        mutable holder (a Parameter), whose later updates must not reach the result; then
        a view of its current value (with its history, recorded as a reshape)."""
        if self.__class__ is Array:
            return self
        return _core.bind(reshape_p, self, new_sizes=tuple(self._data.shape))

    @staticmethod
    def _alias(x: Array) -> Array:
        """A plain array over ``x``'s current data and buffer, without history: no new view is
        built (a Parameter re-pointed later, or a tape array, keeps this one's value)."""
        a = _new(Array)
        a._data = x._data
        a._dtype = x._dtype
        a._device = x._device
        a._buf = x.buffer  # shared: the bytes stay counted once, by the buffer
        a._layout = x._layout
        a._autograd = None
        return a

    @staticmethod
    def _apply_view(prim: Primitive, x: Array, params: dict[str, Any]) -> Array:
        native = prim.native_for(x._device)
        if native is not None:  # the backend's own call: a few times cheaper than the layout rule
            try:
                data = native(x._data, **params)
            except Exception:  # bad parameters: the rule below raises the typed error
                data = None
            # kept when it is a writable view with elements (a read-only NumPy view would not
            # export through DLPack; an empty one shares no memory to tell views from copies)
            if data is not None and data.size and getattr(data.flags, "writeable", True):
                if x._device.backend.xp.may_share_memory(data, x._data):
                    return Array._backend_view(x, data)
                return wrap_kernel_output(data, x._device)  # reshape of elements in no viewable order: a copy
        layout = prim.view(x._layout_obj(), **params)  # type: ignore[misc]
        if layout is None:  # only reshape: the elements are not in a viewable order
            x = evaluate(copy_p, (x,), {})
            layout = prim.view(x._layout_obj(), **params)  # type: ignore[misc]
        return Array._view_of(x, layout)

    def _layout_obj(self) -> Layout:
        layout = self._layout
        if layout is None:
            data, buf, backend = self._data, self.buffer, self._device.backend
            if data is buf._raw_owner:  # the array the memory came from
                flat, offset, strides = backend.flat_span(data)
                if buf._flat is None:
                    buf._flat = flat
            else:  # a view the backend made of it (eager views and basic indexing of plain arrays)
                offset, strides = backend.place_in(buf._raw_flat, data)
            layout = self._layout = Layout(tuple(data.shape), strides, offset)
        return layout

    # -- metadata ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The length of each axis."""
        return self._data.shape  # type: ignore[no-any-return]

    @property
    def dtype(self) -> _dt.DType:
        """The element type."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The device."""
        return self._device

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return self._data.ndim  # type: ignore[no-any-return]

    @property
    def size(self) -> Size:
        """The number of elements."""
        return Size(self._data.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def aval(self) -> ShapedArray:
        """The abstract value (shape, dtype, device)."""
        return ShapedArray(self.shape, self._dtype, self._device)

    @property
    def buffer(self) -> Buffer:
        """The flat memory this array is a view of (shared by all its views)."""
        buf = self._buf
        if buf is None:  # a kernel output: hand its memory (and its byte count) to a Buffer
            buf = self._buf = Buffer(self._data, self._device, counted=True)
        return buf

    def __del__(self) -> None:
        try:
            if self._buf is None:  # still owns its memory: give the bytes back
                self._device.stats.allocated -= self._data.nbytes
        except AttributeError:  # construction failed part-way: nothing was counted
            pass

    def stride(self, dim: int | None = None) -> Any:
        """Element strides, as ``torch.Tensor.stride()`` (NumPy's are in bytes)."""
        strides = self._layout_obj().strides
        return strides if dim is None else strides[dim]

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides (not bytes): the same as ``stride()``."""
        return self._layout_obj().strides

    def storage_offset(self) -> int:
        """Where element ``[0, ..., 0]`` sits in the buffer, in elements."""
        return self._layout_obj().offset

    def is_contiguous(self) -> bool:
        """Row-major with no gaps (sizes-1 axes may have any stride, as in PyTorch)."""
        expected = 1
        layout = self._layout_obj()
        for d, s in zip(reversed(layout.shape), reversed(layout.strides)):
            if d != 1:
                if s != expected:
                    return False
                expected *= d
        return True

    def contiguous(self) -> Array:
        """This array if already contiguous, else a row-major copy."""
        if self.is_contiguous():
            return self._own()
        return _core.bind(copy_p, self)  # type: ignore[no-any-return]

    def view(self, *shape: Any) -> Array:
        """Reinterpret as ``shape`` without copying; ``ViewError`` if the strides forbid it."""
        sizes = _ops.resolve_shape("view", shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                                     else shape, self.size)
        layout = strict_view(self._layout_obj(), sizes)
        if self._autograd is not None:  # with history: a recorded reshape (the same view), so gradients flow back
            return _ops.reshape(self, sizes)  # type: ignore[no-any-return]
        return Array._view_of(self, layout)

    # -- conversion -------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A read-only NumPy view of the same memory (CPU arrays only)."""
        if self._device is not CPU:
            raise TypeError(f"numpy(): the array is on {self._device}; call x.to('cpu').numpy() to copy it to the host")
        return read_only(self._data)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if self._device is not CPU:
            raise TypeError(f"cannot convert an array on {self._device} to NumPy implicitly; use x.to('cpu')")
        out = self.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = _UNSET,
                   copy: bool | None = None) -> Any:
        """DLPack export that never hands out a writable alias. A consumer that calls with the
        array API 2023.12 signature (``dl_device``, ``copy``, ``max_version`` >= 1: NumPy) gets
        a read-only view flagged read-only, which it honours; any other (PyTorch and JAX, which
        do not honour the flag), a GPU array, or ``copy=True`` gets a copy."""
        if self.dtype.name == "bfloat16" and self._device is CPU:
            raise BufferError("__dlpack__: NumPy, which holds funcgrad's CPU memory, cannot export bfloat16 "
                              "through DLPack; pass its bits instead: torch.from_numpy(x.numpy().view(np.int16))"
                              ".view(torch.bfloat16), or jnp.asarray(x)")
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if stream is not None:
            kwargs["stream"] = stream
        honours_read_only = (dl_device is not _UNSET and max_version is not None and tuple(max_version) >= (1, 0)
                             and self._device is CPU and copy is not True)
        if honours_read_only:
            return read_only(self._data).__dlpack__(**kwargs)
        if copy is False:
            raise BufferError("__dlpack__(copy=False): funcgrad exports its memory only read-only, which this "
                              "consumer does not signal it honours; export with copy=None or copy=True")
        return self._data.copy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()  # type: ignore[no-any-return]

    def _host(self) -> np.ndarray:
        return self._data if self._device is CPU else self._device.backend.to_host(self._data)

    def item(self) -> Any:
        """The single element as a Python scalar."""
        if self.size != 1:
            raise ValueError(f"item(): only an array with one element converts to a Python scalar, "
                             f"got shape {fmt_shape(self.shape)}")
        return self._python(self._host().reshape(()))

    def _python(self, host: np.ndarray) -> Any:
        if self._dtype is _dt.bfloat16 or self._dtype is _dt.float16:
            host = host.astype(np.float32)
        return host.item() if host.ndim == 0 else host.tolist()

    def tolist(self) -> Any:
        """Nested Python lists of Python scalars."""
        return self._python(self._host())

    def block_until_ready(self) -> Array:
        """Wait until the array's value is computed (a GPU's queued kernels finish), as JAX's."""
        self._device.backend.synchronize()
        return self

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """The array on ``device`` (the array API's spelling of ``to``)."""
        if stream is not None:
            raise ValueError("to_device: funcgrad has no streams to pass; give stream=None")
        return self.to(device)

    def to(self, target: Any, dtype: Any = None) -> Array:
        """Move to a device (``"cpu"``, ``"gpu"``, ``"cuda:1"``) and/or cast to a dtype.
        Returns ``self`` when nothing changes."""
        out: Array = self
        if dtype is not None or isinstance(target, (_dt.DType, type, np.dtype)) or (
            isinstance(target, str) and target in _dt.BY_NAME
        ):
            cast_to = dtype if dtype is not None else target
            out = out.astype(cast_to, copy=False)
            if dtype is None:
                return out
        return out._to_device(_as_device(target))

    def _to_device(self, dst: Device) -> Array:
        src = self._device
        if dst is src:
            return self._own()
        if self._autograd is not None and self._autograd.requires_grad:  # the tape records the move
            return _tape.moved(self, dst)  # type: ignore[no-any-return]
        if src.kind != "cpu" and dst.kind != "cpu":
            moved = dst.backend.from_other_gpu(self._data)  # type: ignore[attr-defined]
        else:
            # (np.asarray, not ascontiguousarray: that makes a 0-d array 1-d)
            moved = dst.backend.from_host(np.asarray(src.backend.to_host(self._data), order="C"))
            if moved is self._data:  # host -> host never happens (dst is not src), but never alias
                moved = moved.copy()
        return Array._from_kernel(moved, dst)

    def cpu(self) -> Array:
        return self._to_device(CPU)

    # -- Python protocol --------------------------------------------------------
    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of an array of shape {fmt_shape(self.shape)} is ambiguous; "
                             "use .any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, got {self._dtype}")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __repr__(self) -> str:
        host = self._host()
        if self._dtype is _dt.bfloat16:
            host = host.astype(np.float32)
        body = np.array2string(host, separator=", ", prefix="Array(", threshold=1000)
        grad, meta = "", self._autograd
        if meta is not None and meta.requires_grad:
            grad = f", grad_fn={meta.grad_fn!r}" if meta.grad_fn is not None else ", requires_grad=True"
        return f"Array({body}, dtype={self._dtype}, device={self._device}{grad})"

    # -- the PyTorch-style tape (funcgrad/transforms/autodiff/tape.py) ---------------------
    @property
    def requires_grad(self) -> bool:
        return self._autograd is not None and self._autograd.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Array:
        """Make this leaf array record operations for ``backward`` (PyTorch's ``requires_grad_``)."""
        if self._autograd is not None and self._autograd.grad_fn is not None:  # type: ignore[has-type]
            if not requires_grad:
                raise RuntimeError("requires_grad_(False) on a non-leaf array: use x.detach() instead")
            return self
        if requires_grad and self._autograd is not None and self._autograd.inference:  # type: ignore[has-type]
            raise RuntimeError("requires_grad_(): this array was made in fg.inference_mode(), so it can never be "
                               "recorded; use x.clone() for an ordinary copy")
        if requires_grad and self._dtype.kind not in "fc":
            raise DTypeError(f"only floating-point and complex arrays can require gradients, this one is {self._dtype}")
        if requires_grad:
            if self._autograd is None:  # type: ignore[has-type]
                self._autograd = _tape.AutogradMeta(True)
            self._autograd.requires_grad = True
        elif self._autograd is not None:
            self._autograd.requires_grad = False
        return self

    def is_inference(self) -> bool:
        """Whether this array was made in ``fg.inference_mode()`` (the tape refuses it)."""
        return self._autograd is not None and bool(self._autograd.inference)

    @property
    def is_leaf(self) -> bool:
        """True unless the array was computed from arrays that require grad."""
        return self._autograd is None or self._autograd.grad_fn is None

    @property
    def grad_fn(self) -> Any:
        return None if self._autograd is None else self._autograd.grad_fn

    @property
    def grad(self) -> Array | None:
        """The gradient accumulated by ``backward`` (leaves, and arrays that ``retain_grad()``)."""
        return None if self._autograd is None else self._autograd.grad

    @grad.setter
    def grad(self, value: Array | None) -> None:
        if value is not None and (not isinstance(value, Array) or tuple(value.shape) != tuple(self.shape)):
            got = f"shape {fmt_shape(tuple(value.shape))}" if isinstance(value, Array) else type(value).__name__
            raise ShapeError(f"grad must be None or an array of shape {fmt_shape(tuple(self.shape))}, got {got}")
        if value is not None and (value._dtype is not self._dtype or value._device is not self._device):
            raise DTypeError(f"grad must have the array's dtype and device ({self._dtype} on {self._device}), "
                             f"got {value._dtype} on {value._device}")
        if self._autograd is None:
            self._autograd = _tape.AutogradMeta(False)
        self._autograd.grad = value

    def retain_grad(self) -> None:
        """Keep this non-leaf array's gradient in ``.grad`` during ``backward``."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on an array that does not require grad")
        self._autograd.retain = True
        if self._autograd.grad_fn is not None:
            _tape.watch(self._autograd, self._autograd.grad_fn)

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad)`` runs when this array's gradient is computed; it may return a replacement."""
        if not self.requires_grad:
            raise RuntimeError("register_hook() on an array that does not require grad")
        meta = self._autograd
        if meta.hooks is None:
            meta.hooks = []
        meta.hooks.append(hook)
        _tape.watch(meta, meta.grad_fn or _tape.edge_of(self)[0])  # a leaf: its AccumulateGrad

        class _Handle:
            def remove(self_inner) -> None:
                if hook in (meta.hooks or []):
                    meta.hooks.remove(hook)
                    _tape.unwatch(meta, meta.grad_fn or meta.accumulator)

        return _Handle()

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """``hook(array)`` runs during ``backward`` right after this leaf's ``.grad`` is
        updated (PyTorch's hook of the same name; DistributedDataParallel reduces there)."""
        if not self.requires_grad or not self.is_leaf:
            raise RuntimeError("register_post_accumulate_grad_hook() needs a leaf that requires grad")
        meta = self._autograd
        if meta.post_hooks is None:
            meta.post_hooks = []
        meta.post_hooks.append(hook)
        _tape.watch(meta, _tape.edge_of(self)[0])  # run when the leaf is reached, not after the whole pass

        class _Handle:
            def remove(self_inner) -> None:
                if hook in (meta.post_hooks or []):
                    meta.post_hooks.remove(hook)
                    _tape.unwatch(meta, meta.accumulator)

        return _Handle()

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Accumulate the gradient of this array into the leaves' ``.grad`` (PyTorch semantics)."""
        _tape.backward(self, gradient, retain_graph, create_graph, inputs)

    def __str__(self) -> str:
        """The values alone, as NumPy and JAX print them (``repr`` adds dtype and device)."""
        host = self._host()
        return str(host.astype(np.float32) if self._dtype is _dt.bfloat16 else host)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and spec:
            return format(self.item(), spec)
        return str(self)

    # -- copying and pickling -------------------------------------------------
    def __reduce__(self) -> Any:
        """Pickled as its values (a NumPy array: a GPU array comes to the host and goes back),
        dtype, device and ``requires_grad``. (``fg.save`` writes files without pickle.)"""
        return _rebuild, (self._host_values(), self._dtype.name, str(self._device), bool(self.requires_grad))

    def __copy__(self) -> Array:
        """The array itself: it can never change, so a copy could never differ."""
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Array:
        """A new array with its own memory and the same values (a new leaf if it requires
        grad, with a copy of its ``.grad``)."""
        fn, args = self.__reduce__()
        out = fn(*args)
        memo[id(self)] = out
        grad = self.grad if self.requires_grad else None
        if grad is not None:
            out.grad = grad.__deepcopy__(memo)
        return out

    def _host_values(self) -> np.ndarray:
        data = self._data if self._device is CPU else self._device.backend.to_host(self._data)
        return np.array(data)


def _rebuild(values: np.ndarray, dtype: str, device: str, requires_grad: bool) -> Array:
    """An array from its pickled parts (``Array.__reduce__``)."""
    x = _ops.asarray(values.astype(_dt.as_dtype(dtype).np, copy=False))
    if device != "cpu":
        x = x.to(device)
    return x.requires_grad_(True) if requires_grad else x


def wrap_kernel_output(out: Any, device: Device) -> Array:
    """The array over a kernel's freshly allocated output: no copy, no view built.
    (A plain function, not a method: it runs once per eager operation.)"""
    if isinstance(out, _generic):
        out = np.asarray(out)
    a = _new(Array)
    a._data = out
    dtype = _NP_TO_DTYPE.get(out.dtype)
    a._dtype = dtype if dtype is not None else _dt.from_numpy_dtype(out.dtype)
    a._device = device
    a._buf = None  # built on first use (``buffer``, a view); until then the array owns its bytes
    a._layout = None  # derived from _data when first asked
    a._autograd = None  # autograd metadata (fg.transforms.tape) when the array requires grad
    stats = device.stats
    stats.allocated += out.nbytes
    if stats.allocated > stats.peak:
        stats.peak = stats.allocated
    return a


_new = object.__new__


class _AtIndexer:
    __slots__ = ("_x",)

    def __init__(self, x: Any) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> _AtRef:
        return _AtRef(self._x, index)


class _AtRef:
    """``x.at[index]``: the functional counterpart of ``x[index] op= value``."""

    __slots__ = ("_x", "_index")

    def __init__(self, x: Any, index: Any) -> None:
        self._x = x
        self._index = index

    def get(self) -> Any:
        return self._x[self._index]

    def set(self, values: Any) -> Any:
        return _ops.scatter(self._x, self._index, values, "set")

    def add(self, values: Any) -> Any:
        return _ops.scatter(self._x, self._index, values, "add")

    def multiply(self, values: Any) -> Any:
        return _ops.scatter(self._x, self._index, values, "multiply")

    def min(self, values: Any) -> Any:
        return _ops.scatter(self._x, self._index, values, "min")

    def max(self, values: Any) -> Any:
        return _ops.scatter(self._x, self._index, values, "max")

    def __getattr__(self, name: str) -> Any:
        raise UnknownAttributeError(f"x.at[...] has no method {name!r}; its methods are get, set, add, multiply, min "
                                    "and max (JAX's, less divide and power)")


def concrete_value(x: Any) -> Any:
    """The concrete ``Array`` under ``x`` (a derivative tracer carries one), or
    ``ConcretizationError`` from the tracer that has none."""
    concrete = getattr(x, "_concrete", None)
    return x if concrete is None else concrete("this operation")


# ---- eager evaluation: the interpreter at the bottom of the stack ------------------

def evaluate(prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """Evaluate ``prim`` now: check devices, run the kernel, wrap the result.

    Shapes and dtypes are not checked in Python before the kernel runs (that is the
    kernel's job, and it is fast); when the kernel fails, the primitive's abstract
    evaluation turns the failure into a typed, readable error. An argument that
    requires grad hands the operation to the tape, which its autograd metadata leads to
    (``meta.record``). The cases of plain arrays and no parameters (``a + b``,
    ``fg.tanh(x)``) are written out first: they are the hottest paths in the library, so
    their kernel call is written out too, not shared with ``run_eager``'s general one
    (``docs/performance.md`` has what sharing it costs). An elementwise primitive with a
    native loop (``Primitive.native_eager``) tries it first on CPU operands of
    ``cc.EAGER_MIN`` elements or more; below that the check is one attribute and a size.
    """
    if not params:
        if len(args) == 2:
            x, y = args
            if (x.__class__ is Array and y.__class__ is Array and x._device is y._device
                    and x._autograd is None and y._autograd is None):
                device = x._device
                xd, yd = x._data, y._data
                try:
                    if prim.native_eager is not None and (xd.size >= EAGER_MIN or yd.size >= EAGER_MIN) and \
                            device.kind == "cpu":
                        out = prim.native_eager(xd, yd)
                        if out is not None:
                            return wrap_kernel_output(out, device)
                    out = (prim._kernels.get(device) or prim.kernel_for(device))(xd, yd)
                except FuncgradError:
                    raise
                except Exception as exc:
                    raise explain_failure(prim, args, params, exc) from exc
                return wrap_kernel_output(out, device)
        elif len(args) == 1:
            x = args[0]
            if (x.__class__ is Array and x._autograd is None and prim.view is None and prim.impl is None
                    and not prim.multiple_results):
                device = x._device
                try:
                    if prim.native_eager is not None and x._data.size >= EAGER_MIN and device.kind == "cpu":
                        out = prim.native_eager(x._data)
                        if out is not None:
                            return wrap_kernel_output(out, device)
                    out = (prim._kernels.get(device) or prim.kernel_for(device))(x._data)
                except FuncgradError:
                    raise
                except Exception as exc:
                    raise explain_failure(prim, args, params, exc) from exc
                return wrap_kernel_output(out, device)
    if prim.view is not None and args[0].__class__ is Array and args[0]._autograd is None:  # metadata only
        return Array._apply_view(prim, args[0], params)
    for a in args:
        meta = a._autograd if a.__class__ is Array else getattr(a, "_autograd", None)
        if meta is not None:  # the tape records this operation (Parameters too)
            return meta.record(prim, args, params)
    return run_eager(prim, args, params)


Array._evaluate = staticmethod(evaluate)
_explain_in_place_habits()


def _zero_d(raw: list[Any]) -> list[Any]:
    """The Python numbers among a kernel's operands as 0-d arrays of the floating dtype of
    its arrays, as NumPy takes them (weakly); others as they are (the native loop declines)."""
    floats = [a.dtype for a in raw if a.__class__ is np.ndarray and a.dtype in (np.float32, np.float64)]
    return [np.asarray(a, floats[0]) if floats and a.__class__ in (int, float) else a for a in raw]


def run_eager(prim: Primitive, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """The eager evaluation itself, with no tape (the tape calls this for its forward pass)."""
    device = None
    raw: list[Any] = []
    has_scalars = False
    for a in args:
        if isinstance(a, Array):
            if device is None:
                device = a._device
            elif a._device is not device:
                raise _device_mismatch(prim, args)
            raw.append(a._data)
        elif isinstance(a, ArrayBase):  # a tracer, with no interpreter active: it escaped its transform
            return a._evaluate(prim, args, params)  # type: ignore[attr-defined]
        else:
            raw.append(a)
            has_scalars = True
    if device is None:
        device = CPU
    if prim.impl is not None:
        return prim.impl(*args, **params)
    if prim.view is not None:
        return Array._apply_view(prim, args[0], params)
    if has_scalars:
        raw = _exact_scalars(args, raw)
    try:
        if prim.native_eager is not None and device.kind == "cpu" and \
                any(getattr(a, "size", 0) >= EAGER_MIN for a in raw):
            # (a scalar as a 0-d operand: NumPy's where broadcasting one takes 6x its plain loop)
            out = prim.native_eager(*_zero_d(raw) if has_scalars else raw)
            if out is not None:
                return wrap_kernel_output(out, device)
        out = (prim._kernels.get(device) or prim.kernel_for(device))(*raw, **params)
    except FuncgradError:
        raise
    except Exception as exc:
        raise explain_failure(prim, args, params, exc) from exc
    if prim.multiple_results:
        return tuple(wrap_kernel_output(o, device) for o in out)
    if prim.aliases == ANY:
        return _over_operands(args, out, device)
    return wrap_kernel_output(out, device)


def _over_operands(args: tuple[Any, ...], out: Any, device: Device) -> Array:
    """The result of a kernel that may return an operand's memory (``Primitive.aliases`` ANY:
    a concatenate of adjacent views, one rank's all-reduce): a view of that operand's buffer
    where it does, so its bytes stay counted once; else new memory."""
    root = memory_root(out)
    for a in args:
        if isinstance(a, Array) and memory_root(a._data) is root:
            return Array._backend_view(a, out)
    return wrap_kernel_output(out, device)


def _exact_scalars(args: tuple[Any, ...], raw: list[Any]) -> list[Any]:
    """NumPy treats Python scalars weakly for its own dtypes, but ml-dtypes'
    bfloat16 promotes ``bf16 + 1.0`` to float32; give such scalars the dtype."""
    for a in args:
        if isinstance(a, Array) and a._dtype.name == "bfloat16":
            np_dtype = a._data.dtype
            return [np.asarray(r, np_dtype) if isinstance(r, float) else r for r in raw]
    return raw


def _device_mismatch(prim: Primitive, args: tuple[Any, ...]) -> DeviceMismatchError:
    devices = [f"{a.device} ({fmt_shape(a.shape)} {a.dtype})" for a in args if isinstance(a, Array)]
    return DeviceMismatchError(
        f"{prim.name}: arrays are on different devices: {', '.join(devices)}. "
        "funcgrad never moves data implicitly; move one with x.to(device)."
    )


# One-line summaries of the methods that are NumPy's or PyTorch's under the same name (each
# calls the ``fg`` function of that name, whose documentation says more).
_METHOD_SUMMARIES = {
    "T": "The transpose (axes reversed): a view.", "mT": "The transpose of the last two axes: a view.",
    "abs": "The absolute value.", "exp": "``e**x``.", "log": "The natural logarithm.", "sqrt": "The square root.",
    "tanh": "The hyperbolic tangent.", "sigmoid": "``1 / (1 + exp(-x))``.", "round": "Rounded to ``decimals``.",
    "all": "Whether every value along ``axis`` is true.", "any": "Whether any value along ``axis`` is true.",
    "argmax": "The index of the maximum along ``axis``.", "argmin": "The index of the minimum along ``axis``.",
    "argsort": "The indices that sort the array along ``axis`` (``dim``).", "sort": "Sorted along ``axis``.",
    "sum": "The sum along ``axis`` (``dim``).", "mean": "The mean along ``axis`` (``dim``).",
    "prod": "The product along ``axis`` (``dim``).", "cumsum": "The cumulative sum along ``axis``.",
    "astype": "The array in another dtype (itself when it already has it and ``copy=False``).",
    "broadcast_to": "A broadcast view to ``shape``.", "chunk": "``chunks`` nearly equal pieces along ``dim``.",
    "clip": "Values limited to ``[min, max]``.", "diagonal": "A diagonal, as a view.", "dot": "The dot product.",
    "expand_dims": "A new size-1 axis at ``axis`` (a view).", "unsqueeze": "A new size-1 axis at ``dim``.",
    "flatten": "Axes ``start_dim`` to ``end_dim`` merged into one.", "flip": "Reversed along ``axis``.",
    "permute": "The axes in the order given (a view).", "ravel": "Flattened to one axis.",
    "repeat": "Each element repeated ``repeats`` times along ``axis``.", "reshape": "The elements in a new shape.",
    "squeeze": "Size-1 axes removed (a view).", "swapaxes": "Two axes exchanged (a view).",
    "take": "Elements at ``indices`` along ``axis``.", "cpu": "The array on the CPU.",
    "aval": "The abstract value: shape, dtype and device.", "device": "The device the array lives on.",
    "dtype": "The element type.", "shape": "The length of each axis.", "ndim": "The number of axes.",
    "size": "The number of elements (an int; ``x.size()`` is PyTorch's shape).",
    "itemsize": "Bytes per element.", "nbytes": "Bytes of the elements.",
    "grad_fn": "The tape node that made this array (``None`` for a leaf or a constant).",
    "requires_grad": "Whether ``.backward()`` computes a gradient for this array.",
}
for _cls in (ArrayBase, Array):
    for _name, _summary in _METHOD_SUMMARIES.items():
        _attr = _cls.__dict__.get(_name)
        if _attr is None or (getattr(_attr, "__doc__", None) or "").strip():
            continue
        if isinstance(_attr, property):
            setattr(_cls, _name, property(_attr.fget, _attr.fset, _attr.fdel, _summary))
        else:
            _attr.__doc__ = _summary
