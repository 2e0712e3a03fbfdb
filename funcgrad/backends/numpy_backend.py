"""The CPU backend: NumPy arrays over host memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import ArrayModuleBackend

if TYPE_CHECKING:
    from .device import Device

__all__ = ["NumpyBackend"]


class NumpyBackend(ArrayModuleBackend):
    def __init__(self, device: Device) -> None:
        super().__init__(device, np)
