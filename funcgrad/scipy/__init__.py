"""``fg.scipy``: the SciPy functions that JAX's and autograd's ``scipy`` modules provide,
differentiable (``funcgrad.scipy.special``)."""

from __future__ import annotations

from . import special

__all__ = ["special"]
