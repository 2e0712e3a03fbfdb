"""Public testing helpers: ``check_grads``, ``peak_memory`` and hypothesis ``strategies``."""

from __future__ import annotations

import importlib

from .gradcheck import check_grads, numerical_jvp
from .memory import peak_memory

__all__ = ["check_grads", "numerical_jvp", "peak_memory", "strategies"]


def __getattr__(name: str):  # strategies need hypothesis (a test extra): import on first use
    if name == "strategies":
        return importlib.import_module(f"{__name__}.strategies")
    raise AttributeError(name)
