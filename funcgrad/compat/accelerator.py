"""``fg.accelerator``: PyTorch's device-agnostic questions (``torch.accelerator``), answered
for funcgrad's ``"gpu"`` devices, so scripts that pick their device with it port unchanged."""

from __future__ import annotations

from typing import Any

from ..backends.cupy_backend import gpu_count
from ..backends.device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "synchronize"]


def is_available() -> bool:
    """Whether a GPU is usable (CuPy installed and a device visible).

    Example:
        >>> fg.accelerator.is_available() == (fg.accelerator.current_accelerator() is not None)
        True
    """
    return gpu_count() > 0


def current_accelerator() -> Any:
    """The GPU device, or ``None`` when there is none (as PyTorch's).

    Example:
        >>> device = fg.accelerator.current_accelerator()
        >>> device is None or device.type == "cuda"
        True
    """
    return _device("gpu") if is_available() else None


def device_count() -> int:
    """How many GPUs are visible.

    Example:
        >>> fg.accelerator.device_count() == fg.cuda.device_count()
        True
    """
    return gpu_count()


def synchronize(device: Any = None) -> None:
    """Wait for every kernel queued on the GPU to finish.

    Example:
        >>> if fg.accelerator.is_available():
        ...     fg.accelerator.synchronize()
    """
    _device("gpu" if device is None else device).backend.synchronize()
