"""``peak_memory``: the high-water mark of one call, by ``fg.memory`` and by ``tracemalloc``."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

from ..backends import memory
from ..config import config

__all__ = ["peak_memory"]


def peak_memory(run: Callable[[], Any], device: Any = "cpu") -> tuple[int, int]:
    """``(fg.memory peak, tracemalloc peak)`` in bytes of one call of ``run``, above what was
    live before it. ``run`` is called once first, so caches (backward plans) exist before
    the measured call. NumPy reports its buffers to ``tracemalloc``, so on the CPU the two
    agree up to Python's own objects: a check that ``fg.memory`` sees the real peak. The
    write guard (``fg.config.write_guard``) is off for the measured call: its copies of the
    inputs are not the program's memory.

    Example:
        >>> import gc
        >>> _ = gc.collect()
        >>> fg.testing.peak_memory(lambda: fg.ones(1000, dtype=fg.float64) * 2.0)[0]  # (the ones and the product)
        16000
    """
    run()
    gc.collect()
    base = memory.allocated(device)
    memory.reset_peak(device)
    guard, config.write_guard = config.write_guard, False
    tracemalloc.start()
    try:
        out = run()
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        config.write_guard = guard
    del out
    return memory.max_allocated(device) - base, traced
