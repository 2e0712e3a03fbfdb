"""The global generator that PyTorch-style code uses: ``fg.manual_seed``.

``nn.init`` and ``Dropout`` draw from it. (Functional code should pass explicit
keys instead; the counter-based ``fg.random`` module arrives with vmap/compile.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["manual_seed", "generator"]

_GENERATOR = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Reseed the global generator (nn initialisers, Dropout)."""
    global _GENERATOR
    _GENERATOR = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    return _GENERATOR
