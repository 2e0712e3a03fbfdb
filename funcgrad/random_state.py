"""The global random state that PyTorch-style code uses (``fg.manual_seed``).

Two pieces: NumPy's generator, which ``nn.init`` draws from eagerly, and the key of
``fg.random``'s default generator (``fg.rand``, ``Dropout``). The key lives here, below
the arrays and the transforms, so that ``fg.compile`` can pass it into a program and take
the new key out (``transforms/compiled.py``): a compiled function that draws from the
default generator draws fresh numbers on every call. (Functional code passes keys.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["manual_seed", "generator", "default_key", "set_default_key"]

_GENERATOR = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Reseed the global generator (nn initialisers, Dropout)."""
    global _GENERATOR
    _GENERATOR = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    return _GENERATOR


_DEFAULT_KEY: list[Any] = [None]  # fg.random's default generator's key (an array once fg.random is loaded)


def default_key() -> Any:
    return _DEFAULT_KEY[0]


def set_default_key(key: Any) -> None:
    _DEFAULT_KEY[0] = key
