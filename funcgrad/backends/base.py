"""The backend protocol: what funcgrad needs from an array library.

A backend materialises strided views of buffers without copying, runs kernels,
and moves data to and from the host. NumPy and CuPy share nearly all of it, so
``ArrayModuleBackend`` implements the protocol once over an array module ``xp``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from .device import Device

__all__ = ["Backend", "ArrayModuleBackend", "flat_span", "memory_root", "joined_view", "laid_out_together"]


class Backend(Protocol):
    device: Device
    xp: Any

    def view(self, flat: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any: ...
    def flat_span(self, arr: Any) -> tuple[Any, int, tuple[int, ...]]: ...
    def place_in(self, flat: Any, arr: Any) -> tuple[int, tuple[int, ...]]: ...
    def kernel(self, spec: Any) -> Callable[..., Any]: ...
    def from_host(self, host: np.ndarray) -> Any: ...
    def to_host(self, arr: Any) -> np.ndarray: ...
    def synchronize(self) -> None: ...


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def flat_span(xp: Any, arr: Any) -> tuple[Any, int, tuple[int, ...]]:
    """(flat, offset, strides): a 1-D view over all memory ``arr`` spans, and ``arr``'s
    offset and element strides within it (``xp``: NumPy or CuPy). Never copies. Native
    kernels read an operand where it lies through it: with no negative stride, the offset
    is 0 and ``flat`` starts at ``arr``'s first element."""
    if arr.flags.c_contiguous and arr.size:  # the common case: a fresh row-major kernel output
        return arr.reshape(-1), 0, _row_major(arr.shape)
    item = arr.itemsize
    if arr.size == 0:
        return xp.empty((0,), arr.dtype), 0, (0,) * arr.ndim
    if any(s % item for s in arr.strides):
        raise ValueError("strides are not a multiple of the item size")
    strides = tuple(s // item for s in arr.strides)
    low = sum((n - 1) * s for n, s in zip(arr.shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(arr.shape, strides) if s > 0)
    span = high - low + 1
    if span == arr.size and low == 0:
        # compact with no negative strides: ravel('K') is a view whose first element is
        # arr's first element (the lowest address), so offsets and strides carry over
        return arr.ravel(order="K"), 0, strides
    corner = arr[tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(arr.shape, strides))]
    flat = xp.lib.stride_tricks.as_strided(corner, shape=(span,), strides=(item,))
    return flat, -low, strides


def memory_root(arr: Any) -> Any:
    """The object at the end of ``arr``'s ``.base`` chain: what owns the memory it views."""
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _address(arr: Any) -> int:
    """Where ``arr``'s first element lies (NumPy's and CuPy's arrays both say)."""
    return arr.__array_interface__["data"][0]  # type: ignore[no-any-return]


def joined_view(pieces: Any, axis: int) -> np.ndarray | None:
    """NumPy arrays ``pieces`` concatenated along ``axis`` as a view, where they lie next to
    each other in one memory (the same strides, each starting where the one before ends
    along ``axis``): the gradients of a split's pieces written where the split read them
    are joined without a copy. None otherwise (and for empty pieces)."""
    first = pieces[0]
    if len(pieces) < 2 or not isinstance(first, np.ndarray) or first.base is None or not first.size:
        return None
    strides, root, at = first.strides, memory_root(first), _address(first)
    for before, piece in zip(pieces, pieces[1:]):
        at += before.shape[axis] * strides[axis]
        if not isinstance(piece, np.ndarray) or piece.strides != strides or not piece.size \
                or piece.dtype != first.dtype or _address(piece) != at or memory_root(piece) is not root:
            return None
    shape = (*first.shape[:axis], sum(p.shape[axis] for p in pieces), *first.shape[axis + 1:])
    return np.lib.stride_tricks.as_strided(first, shape, strides,  # type: ignore[no-any-return]
                                           writeable=all(p.flags.writeable for p in pieces))


def laid_out_together(likes: Any, dtype: Any) -> tuple[np.ndarray, ...] | None:
    """New arrays of ``likes``' shape and ``dtype`` in one new memory, each lying where its
    like lies relative to the others, where the likes are disjoint pieces that fill one
    span of one memory (q, k and v as heads of one fused projection). Their gradients
    then lie as the projection's result does, so joining them back copies nothing
    (``joined_view``). None otherwise."""
    first = likes[0]
    item = first.itemsize
    if not (isinstance(first, np.ndarray) and first.size and first.dtype == dtype and first.base is not None) \
            or any(s < 0 or s % item for s in first.strides):
        return None
    root = memory_root(first)
    if any(not isinstance(x, np.ndarray) or x.shape != first.shape or x.strides != first.strides
           or x.dtype != dtype or memory_root(x) is not root for x in likes[1:]):
        return None
    starts = [_address(x) for x in likes]
    low = min(starts)
    span = max(starts) - low + sum((n - 1) * s for n, s in zip(first.shape, first.strides)) + item
    if span != len(likes) * first.nbytes or any((s - low) % item for s in starts):
        return None
    if any(np.shares_memory(a, b) for i, a in enumerate(likes) for b in likes[i + 1:]):  # (exact: about 1 us)
        return None
    memory = np.empty(span // item, dtype)
    return tuple(np.lib.stride_tricks.as_strided(memory[(s - low) // item:], first.shape, first.strides)
                 for s in starts)


class ArrayModuleBackend:
    """The protocol implemented over a NumPy-compatible module (NumPy or CuPy)."""

    def __init__(self, device: Device, xp: Any) -> None:
        self.device = device
        self.xp = xp

    # -- layout ------------------------------------------------------------
    def flat_span(self, arr: Any) -> tuple[Any, int, tuple[int, ...]]:
        """(flat, offset, strides): ``flat_span`` with this backend's array module."""
        return flat_span(self.xp, arr)

    def place_in(self, flat: Any, arr: Any) -> tuple[int, tuple[int, ...]]:
        """(offset, strides): where ``arr``, a view into the memory of ``flat``, lies in it, in
        elements (the inverse of ``view``). An empty array reads no memory: (0, zeros)."""
        if arr.size == 0:
            return 0, (0,) * arr.ndim
        item = arr.itemsize
        return (_address(arr) - _address(flat)) // item, tuple(s // item for s in arr.strides)

    def view(self, flat: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any:
        if 0 in shape:  # reads no memory: its offset may point past an empty buffer
            return self.xp.empty(shape, flat.dtype)
        item = flat.itemsize
        return np.ndarray(
            shape, flat.dtype, buffer=flat, offset=offset * item, strides=tuple(s * item for s in strides)
        )

    # -- kernels -----------------------------------------------------------
    def kernel(self, spec: Any) -> Callable[..., Any]:
        """Resolve a primitive's kernel spec: a name in ``xp`` or ``f(xp, *args)``."""
        if isinstance(spec, str):
            return getattr(self.xp, spec)  # type: ignore[no-any-return]
        return functools.partial(spec, self.xp)

    # -- data movement -----------------------------------------------------
    def from_host(self, host: np.ndarray) -> Any:
        return host

    def to_host(self, arr: Any) -> np.ndarray:
        return arr

    def synchronize(self) -> None:
        pass
