"""``Buffer``: one flat block of memory on one device, which no array's values ever see change.

Every array is a view (shape, strides, offset) over a buffer. Buffers count
their bytes into the device's memory counters while they live, which is what
``fg.memory.allocated`` reports on CPU as on GPU.

What a user can reach of a buffer (``owner``, ``flat``, ``Array.numpy()``, DLPack)
is read-only: ``read_only`` makes a NumPy view whose base exposes the memory as
read-only, so no ``setflags(write=True)`` or ``.base`` chain leads to a writable
array. A GPU buffer (CuPy has no read-only arrays) is handed out as a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtypes import from_numpy_dtype

if TYPE_CHECKING:
    from .device import Device

__all__ = ["Buffer", "read_only"]


class _ReadOnlyMemory:
    """Exposes an array's memory through ``__array_interface__`` flagged read-only. NumPy
    arrays made from it cannot be made writable, and it offers no public path to the
    array it keeps alive."""

    __slots__ = ("__array_interface__", "_keep")

    def __init__(self, arr: Any) -> None:
        self._keep = arr
        interface = dict(arr.__array_interface__)
        interface["data"] = (interface["data"][0], True)
        self.__array_interface__ = interface


def read_only(arr: Any) -> Any:
    """A read-only NumPy array over ``arr``'s memory (same shape, strides and dtype) that no
    caller can turn writable: the form in which funcgrad hands memory to users."""
    if arr.size == 0:
        out = arr.copy()
    else:
        out = np.asarray(_ReadOnlyMemory(arr))
        if out.dtype != arr.dtype:  # ml-dtypes (bfloat16) travel as raw bytes through the interface
            out = out.view(arr.dtype)
    out.flags.writeable = False
    return out


class Buffer:
    """Owns the memory of one backend allocation.

    ``owner`` is the backend array the memory came from (a kernel output, or
    the user's NumPy array for ``from_numpy``); ``flat`` is a 1-D view of the
    whole block in address order. Both are read-only for users; funcgrad itself
    reads ``_raw_owner`` and ``_raw_flat``.

    Example:
        >>> x = fg.asarray([[1.0, 2.0], [3.0, 4.0]])
        >>> x.buffer, x[1].buffer is x.buffer
        (<Buffer cpu float32 4 elements>, True)
    """

    __slots__ = ("_raw_owner", "device", "nbytes", "_flat", "__weakref__")

    def __init__(self, owner: Any, device: Device, *, counted: bool = False) -> None:
        """``counted``: the bytes are already in the device's counters (an array
        that owned its memory hands it over); the buffer releases them when it dies."""
        self._raw_owner = owner
        self.device = device
        nbytes = owner.nbytes
        self.nbytes = nbytes
        self._flat: Any = None
        if not counted:
            stats = device.stats
            stats.allocated += nbytes
            if stats.allocated > stats.peak:
                stats.peak = stats.allocated

    def __del__(self) -> None:
        self.device.stats.allocated -= self.nbytes

    @property
    def _raw_flat(self) -> Any:
        """The block as a 1-D backend array in memory order (no copy; funcgrad's own)."""
        if self._flat is None:
            self._flat = self.device.backend.flat_span(self._raw_owner)[0]
        return self._flat

    @property
    def owner(self) -> Any:
        """The array the memory came from, read-only (a copy on a GPU)."""
        return self._exposed(self._raw_owner)

    @property
    def flat(self) -> Any:
        """The block as a 1-D array in memory order, read-only (a copy on a GPU)."""
        return self._exposed(self._raw_flat)

    def _exposed(self, arr: Any) -> Any:
        return read_only(arr) if isinstance(arr, np.ndarray) else arr.copy()

    @property
    def size(self) -> int:
        """Number of elements in the block."""
        return int(self._raw_flat.shape[0])

    @property
    def dtype(self) -> Any:
        """The element type."""
        return from_numpy_dtype(self._raw_owner.dtype)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<Buffer {self.device} {self.dtype} {self.size} elements>"
