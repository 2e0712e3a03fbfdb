"""``Buffer``: one flat block of memory on one device, never written after creation.

Every array is a view (shape, strides, offset) over a buffer. Buffers count
their bytes into the device's memory counters while they live, which is what
``fg.memory.allocated`` reports on CPU as on GPU.
"""

from __future__ import annotations

from typing import Any

from .device import Device

__all__ = ["Buffer"]


class Buffer:
    """Owns the memory of one backend allocation.

    ``owner`` is the backend array the memory came from (a kernel output, or
    the user's NumPy array for ``from_numpy``); ``flat`` is a 1-D view of the
    whole block in address order, built on first use.
    """

    __slots__ = ("owner", "device", "nbytes", "_flat", "__weakref__")

    def __init__(self, owner: Any, device: Device, *, counted: bool = False) -> None:
        """``counted``: the bytes are already in the device's counters (an array
        that owned its memory hands it over); the buffer releases them when it dies."""
        self.owner = owner
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
    def flat(self) -> Any:
        """The block as a 1-D backend array in memory order (no copy)."""
        if self._flat is None:
            self._flat = self.device.backend.flat_span(self.owner)[0]
        return self._flat

    @property
    def size(self) -> int:
        """Number of elements in the block."""
        return int(self.flat.shape[0])

    @property
    def dtype(self) -> Any:
        from ..dtypes import from_numpy_dtype

        return from_numpy_dtype(self.owner.dtype)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<Buffer {self.device} {self.dtype} {self.size} elements>"
