"""``fg.memory``: live and peak buffer bytes per device, and CuPy's pool.

The counters are kept by ``Buffer`` itself, so they mean the same on CPU and
GPU: bytes of funcgrad buffers alive right now. That makes claims such as
"checkpointing halves activation memory" measurable on a laptop.
"""

from __future__ import annotations

from typing import Any

from .device import device as _device

__all__ = ["allocated", "max_allocated", "reset_peak", "reserved", "empty_cache"]


def allocated(device: Any = "cpu") -> int:
    """Bytes held by live funcgrad buffers on ``device``."""
    return _device(device).stats.allocated


def max_allocated(device: Any = "cpu") -> int:
    """Highest ``allocated(device)`` since start or the last ``reset_peak``."""
    return _device(device).stats.peak


def reset_peak(device: Any = "cpu") -> None:
    """Start peak tracking afresh from the current allocation."""
    stats = _device(device).stats
    stats.peak = stats.allocated


def reserved(device: Any = "gpu") -> int:
    """Bytes CuPy's caching pool holds from the driver (0 on CPU, which has no pool)."""
    dev = _device(device)
    return 0 if dev.kind == "cpu" else dev.backend.reserved()  # type: ignore[attr-defined]


def empty_cache(device: Any = "gpu") -> None:
    """Give CuPy's unused cached blocks back to the driver (no-op on CPU)."""
    dev = _device(device)
    if dev.kind != "cpu":
        dev.backend.empty_cache()  # type: ignore[attr-defined]
