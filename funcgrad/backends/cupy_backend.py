"""The GPU backend: CuPy arrays in device memory. CuPy is imported lazily.

Everything here must import without CuPy: ``check_gpu`` turns a missing CuPy
or a missing GPU into a ``DeviceUnavailableError`` that says which one it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DeviceUnavailableError
from .base import ArrayModuleBackend

if TYPE_CHECKING:
    from .device import Device

__all__ = ["CupyBackend", "check_gpu", "gpu_count", "import_cupy"]


@functools.cache
def import_cupy() -> Any:
    try:
        import cupy
    except ImportError as exc:
        raise DeviceUnavailableError(
            "device('gpu') needs CuPy, which is not installed: pip install 'funcgrad[gpu]' "
            f"(import cupy failed: {exc})"
        ) from None
    return cupy


def gpu_count() -> int:
    """How many GPUs CuPy sees; 0 without CuPy or without a driver."""
    try:
        cupy = import_cupy()
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def check_gpu(index: int) -> None:
    cupy = import_cupy()
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:
        raise DeviceUnavailableError(
            f"device('gpu:{index}'): CuPy is installed but no GPU is usable ({exc})"
        ) from None
    if count == 0:
        raise DeviceUnavailableError(f"device('gpu:{index}'): CuPy is installed but found no GPU")
    if not 0 <= index < count:
        raise DeviceUnavailableError(f"device('gpu:{index}'): only {count} GPU(s) present (gpu:0..gpu:{count - 1})")


class CupyBackend(ArrayModuleBackend):
    def __init__(self, device: Device) -> None:
        cupy = import_cupy()
        super().__init__(device, cupy)
        self._cuda_device = cupy.cuda.Device(device.index)

    def view(self, flat: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any:
        if 0 in shape:
            return self.xp.empty(shape, flat.dtype)
        item = flat.itemsize
        return self.xp.ndarray(
            shape, flat.dtype, memptr=flat.data + offset * item, strides=tuple(s * item for s in strides)
        )

    @staticmethod
    def _address(arr: Any) -> int:
        return arr.data.ptr  # type: ignore[no-any-return]

    def kernel(self, spec: Any) -> Callable[..., Any]:
        base = super().kernel(spec)
        if self.device.index == 0:
            return base
        cuda_device = self._cuda_device

        def on_device(*args: Any, **params: Any) -> Any:
            with cuda_device:
                return base(*args, **params)

        return on_device

    def from_host(self, host: np.ndarray) -> Any:
        with self._cuda_device:
            return self.xp.asarray(host)

    def to_host(self, arr: Any) -> np.ndarray:
        return self.xp.asnumpy(arr)

    def from_other_gpu(self, arr: Any) -> Any:
        with self._cuda_device:
            return arr.copy()  # peer copy onto this device

    def synchronize(self) -> None:
        with self._cuda_device:
            self.xp.cuda.get_current_stream().synchronize()

    # -- memory pool -------------------------------------------------------
    def reserved(self) -> int:
        return int(self.xp.get_default_memory_pool().total_bytes())

    def empty_cache(self) -> None:
        self.xp.get_default_memory_pool().free_all_blocks()
