"""``fg.example_libraries``: JAX's ``jax.example_libraries`` (``optimizers``), so that JAX's
examples port by their imports."""

from __future__ import annotations

from . import optimizers

__all__ = ["optimizers"]
