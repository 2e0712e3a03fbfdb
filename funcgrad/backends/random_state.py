"""The global random state that PyTorch-style code uses (``fg.manual_seed``).

Two pieces: NumPy's generator, which ``nn.init`` draws from eagerly, and the key of
``fg.random``'s default generator (``fg.rand``, ``Dropout``). The key lives here, below
the arrays and the transforms, so that ``fg.compile`` can pass it into a program and take
the new key out (``transforms/compiler/jit.py``): a compiled function that draws from the
default generator draws fresh numbers on every call. (Functional code passes keys.)
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

import numpy as np

__all__ = ["manual_seed", "generator", "default_key", "set_default_key", "vmap_draws", "enter_vmap", "exit_vmap"]

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


# The ``fg.vmap`` calls around the code now running, outermost first, each as
# ``(name, randomness, size, box, mapped)``: how a draw from a generator (``fg.rand``,
# ``Dropout``) behaves inside them (``torch.func.vmap``'s ``randomness``); ``box``, which makes
# a value with one entry per member (a leading axis) that vmap's batched value; and
# ``mapped(x)``, whether ``x`` already differs between that vmap's members (a key the user
# mapped over, as ``functional_call(..., rng=keys)`` under vmap passes).
_VMAP_DRAWS: ContextVar[tuple[Any, ...]] = ContextVar("funcgrad_vmap_draws", default=())


def vmap_draws() -> tuple[Any, ...]:
    return _VMAP_DRAWS.get()


def enter_vmap(name: str, randomness: str, size: int, box: Any, mapped: Any) -> Token[tuple[Any, ...]]:
    """Called by ``fg.vmap`` around the mapped function; ``exit_vmap(token)`` after."""
    return _VMAP_DRAWS.set((*_VMAP_DRAWS.get(), (name, randomness, size, box, mapped)))


def exit_vmap(token: Token[tuple[Any, ...]]) -> None:
    _VMAP_DRAWS.reset(token)
