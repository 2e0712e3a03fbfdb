"""``fg.scipy``: the SciPy functions that JAX's and autograd's ``scipy`` modules provide,
differentiable (``funcgrad.scipy.special``, ``.linalg``, ``.stats``)."""

from __future__ import annotations

from . import linalg, special, stats

__all__ = ["special", "linalg", "stats"]
