"""Backends: where buffers live and kernels run.

``Device`` objects name places; each lazily owns a backend implementing the
small protocol in ``base.py`` (NumPy for ``cpu``, CuPy for ``gpu:N``).
"""

from __future__ import annotations

from ..errors import DeviceUnavailableError
from . import cudnn, heap, mps
from .base import ArrayModuleBackend, Backend
from .buffer import Buffer
from .device import CPU, Device, device, devices

__all__ = ["ArrayModuleBackend", "Backend", "Buffer", "CPU", "Device", "DeviceUnavailableError",
           "cudnn", "device", "devices", "heap", "mps"]

