"""The C heap as the CPU's caching allocator.

NumPy takes every array's memory from ``malloc``. glibc serves large blocks with fresh
``mmap``s and hands freed memory at the top of its heap back to the kernel, so a training
step's activations are page-faulted and zeroed again on every step (nanoGPT's step here:
18,000 faults, 40% of its time). PyTorch's CUDA allocator keeps freed blocks for reuse; on
the CPU glibc can do the same if asked. ``keep_freed(n)`` asks it to keep up to ``n`` bytes
of freed memory mapped, ``held()`` says how much it holds, ``release()`` gives it back.
Where the C library is not glibc these do nothing.
"""

from __future__ import annotations

import ctypes

from ..config import config

__all__ = ["held", "keep_freed", "release"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20  # the largest threshold older glibc accepts on 64-bit machines
_GLIBC_DEFAULT = 128 << 10


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()
_MALLINFO2 = getattr(_LIBC, "mallinfo2", None)  # (glibc 2.33 on)
if _MALLINFO2 is not None:
    _MALLINFO2.restype = _MallInfo2


_set_once = False  # whether the thresholds were ever set: until then glibc's own policy holds


def keep_freed(nbytes: int) -> bool:
    """Keep up to ``nbytes`` of freed memory for reuse, and take blocks up to that size from
    the heap rather than from mappings of their own (older glibc allows 32 MiB at most
    there). ``0`` leaves glibc's own policy alone (its thresholds adapt to the sizes freed),
    or, once thresholds were set, sets glibc's starting ones: freed memory goes back at once.
    Returns whether glibc took the setting."""
    global _set_once
    if _LIBC is None:
        return False
    if nbytes <= 0 and not _set_once:
        return True
    _set_once = True
    size = min(int(nbytes), 2**31 - 1) if nbytes > 0 else _GLIBC_DEFAULT
    took = _LIBC.mallopt(_M_MMAP_THRESHOLD, size) or _LIBC.mallopt(_M_MMAP_THRESHOLD, min(size, _MMAP_THRESHOLD_MAX))
    return bool(_LIBC.mallopt(_M_TRIM_THRESHOLD, size)) and bool(took)


def held() -> int:
    """Free bytes in the heap's main arena (0 where that cannot be read): what it can reuse,
    an upper bound on what it keeps resident, since ``release()`` returns the pages of free
    chunks inside the heap to the kernel without taking them off its free lists."""
    return 0 if _MALLINFO2 is None else int(_MALLINFO2().fordblks)


def release() -> None:
    """Give the heap's freed memory back to the kernel (``malloc_trim(0)``)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


config.follow("cpu_heap_cache", keep_freed)  # type: ignore[arg-type]
