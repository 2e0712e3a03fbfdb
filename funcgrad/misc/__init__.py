"""``fg.misc``: the helpers HIPS autograd's examples import, under autograd's names:
``flatten`` (a pytree as one vector, and back) and the loop-style optimizers ``sgd``,
``rmsprop`` and ``adam`` that take ``grad(x, i)``."""

from __future__ import annotations

from . import flatten, optimizers

__all__ = ["flatten", "optimizers"]
