"""``fg.cuda``: PyTorch's ``torch.cuda`` questions about GPUs, answered for funcgrad's
``"gpu"`` devices (CuPy), so ``fg.cuda.is_available()`` ports unchanged. funcgrad has one
random generator for every device, so the seeding functions seed that one."""

from __future__ import annotations

from typing import Any

from ..backends import memory
from ..backends.cupy_backend import gpu_count
from ..backends.device import device as _device
from ..random.generator import manual_seed as _manual_seed

__all__ = ["is_available", "device_count", "current_device", "synchronize", "manual_seed", "manual_seed_all",
           "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "empty_cache"]


def is_available() -> bool:
    """Whether a GPU is usable (CuPy installed and a device visible).

    Example:
        >>> fg.cuda.is_available() == (fg.cuda.device_count() > 0)
        True
    """
    return gpu_count() > 0


def device_count() -> int:
    """How many GPUs are visible.

    Example:
        >>> fg.cuda.device_count() >= 0
        True
    """
    return gpu_count()


def current_device() -> int:
    """The index of the GPU that ``"gpu"`` means: 0.

    Example:
        >>> fg.cuda.current_device()
        0
    """
    return 0


def _gpu(index: Any) -> Any:
    return _device(f"gpu:{0 if index is None else getattr(index, 'index', index)}")


def synchronize(device: Any = None) -> None:
    """Wait for every kernel queued on the GPU to finish.

    Example:
        >>> if fg.cuda.is_available():
        ...     y = fg.ones(1024, device="gpu") * 2.0
        ...     fg.cuda.synchronize()  # (the product has run)
    """
    _gpu(device).backend.synchronize()


def manual_seed(seed: int) -> None:
    """Seed funcgrad's generator (one for every device), as ``fg.manual_seed``.

    Example:
        >>> fg.cuda.manual_seed(0)
        >>> a = fg.rand(2).tolist()
        >>> _ = fg.manual_seed(0)
        >>> fg.rand(2).tolist() == a
        True
    """
    _manual_seed(seed)


manual_seed_all = manual_seed


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live arrays on the GPU.

    Example:
        >>> if fg.cuda.is_available():
        ...     x = fg.ones(256, device="gpu")
        ...     assert fg.cuda.memory_allocated() >= x.nbytes
    """
    return memory.allocated(_gpu(device))


def max_memory_allocated(device: Any = None) -> int:
    """The peak of ``memory_allocated`` since the start or the last reset.

    Example:
        >>> if fg.cuda.is_available():
        ...     x = fg.ones(256, device="gpu")
        ...     assert fg.cuda.max_memory_allocated() >= fg.cuda.memory_allocated()
    """
    return memory.max_allocated(_gpu(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start counting the peak from now.

    Example:
        >>> if fg.cuda.is_available():
        ...     fg.cuda.reset_peak_memory_stats()
        ...     assert fg.cuda.max_memory_allocated() == fg.cuda.memory_allocated()
    """
    memory.reset_peak(_gpu(device))


def memory_reserved(device: Any = None) -> int:
    """Bytes the GPU memory pool holds, in use or cached.

    Example:
        >>> if fg.cuda.is_available():
        ...     x = fg.ones(256, device="gpu")
        ...     assert fg.cuda.memory_reserved() >= 0
    """
    return memory.reserved(_gpu(device))


def empty_cache() -> None:
    """Return the memory pool's unused blocks to the GPU.

    Example:
        >>> if fg.cuda.is_available():
        ...     fg.cuda.empty_cache()
    """
    memory.empty_cache(_gpu(None))
