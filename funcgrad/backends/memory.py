"""``fg.memory``: live and peak buffer bytes per device, and the caches behind them (CuPy's
pool on GPUs, the C heap's kept memory on the CPU, ``heap.py``).

The counters are kept by ``Buffer`` itself, so they mean the same on CPU and
GPU: bytes of funcgrad buffers alive right now. That makes claims such as
"checkpointing halves activation memory" measurable on a laptop.
"""

from __future__ import annotations

from typing import Any

from . import heap
from .device import device as _device

__all__ = ["allocated", "max_allocated", "reset_peak", "reserved", "empty_cache"]


def allocated(device: Any = "cpu") -> int:
    """Bytes held by live funcgrad buffers on ``device``.

    Example:
        >>> import gc
        >>> _ = gc.collect()  # (arrays other code left in reference cycles, freed now rather than midway)
        >>> before = fg.memory.allocated()
        >>> x = fg.ones(1000, dtype=fg.float64)
        >>> fg.memory.allocated() - before
        8000
        >>> del x
        >>> fg.memory.allocated() - before
        0
    """
    return _device(device).stats.allocated


def max_allocated(device: Any = "cpu") -> int:
    """Highest ``allocated(device)`` since start or the last ``reset_peak``.

    Example:
        >>> import gc
        >>> _ = gc.collect()
        >>> fg.memory.reset_peak()
        >>> start = fg.memory.max_allocated()
        >>> y = (fg.ones(1000, dtype=fg.float64) * 2.0).sum()  # (two 8000-byte arrays at once, at most)
        >>> fg.memory.max_allocated() - start >= 8000
        True
    """
    return _device(device).stats.peak


def reset_peak(device: Any = "cpu") -> None:
    """Start peak tracking afresh from the current allocation.

    Example:
        >>> import gc
        >>> _ = gc.collect()
        >>> fg.memory.reset_peak()
        >>> fg.memory.max_allocated() == fg.memory.allocated()
        True
    """
    stats = _device(device).stats
    stats.peak = stats.allocated


def reserved(device: Any = "gpu") -> int:
    """Bytes held for reuse but not in use: CuPy's caching pool on a GPU; on the CPU, the C
    heap's free bytes (glibc's count; 0 where it cannot be read). The CPU figure bounds what
    is kept mapped from above: after ``empty_cache`` free chunks inside the heap keep their
    count though their pages are back with the kernel.

    Example:
        >>> fg.memory.reserved("cpu") >= 0
        True
    """
    dev = _device(device)
    return heap.held() if dev.kind == "cpu" else dev.backend.reserved()  # type: ignore[attr-defined]


def empty_cache(device: Any = "gpu") -> None:
    """Give cached memory back: CuPy's unused blocks to the driver, or the C heap's kept
    memory to the kernel on the CPU.

    Example:
        >>> fg.memory.empty_cache("cpu")  # (the C heap's kept memory back to the kernel)
    """
    dev = _device(device)
    if dev.kind == "cpu":
        heap.release()
    else:
        dev.backend.empty_cache()  # type: ignore[attr-defined]
