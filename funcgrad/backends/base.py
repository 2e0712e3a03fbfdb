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

__all__ = ["Backend", "ArrayModuleBackend", "flat_span"]


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
        return (self._address(arr) - self._address(flat)) // item, tuple(s // item for s in arr.strides)

    @staticmethod
    def _address(arr: Any) -> int:
        return arr.__array_interface__["data"][0]  # type: ignore[no-any-return]

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
