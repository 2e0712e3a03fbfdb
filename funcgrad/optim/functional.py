"""The optimizers as pure functions over pytrees (optax's shape), for compiled training steps.

``fg.optim.adam(lr=1e-3)`` returns an ``(init, update)`` pair: ``state = init(params)``
and ``new_params, new_state = update(grads, state, params)``. The update is the pure rule
(``rules.ADAM``, the one ``fg.optim.Adam`` wraps) applied to each leaf, so the two forms
compute the same steps and nothing is written in place: a whole step (forward, backward,
update) can be one compiled program.
The step count is a 0-d array of each parameter's dtype, so that a compiled step does not
trace again as it grows (the bias corrections are then computed in that precision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .. import ops
from .. import tree as _tree
from . import rules
from .rules import Rule

__all__ = ["GradientTransformation", "sgd", "adam", "adamw", "rmsprop", "adagrad", "adamax", "nadam", "radam",
           "adadelta", "rprop"]


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(grads, state, params) -> (params, state)``.

    Example:
        >>> tx = fg.optim.sgd(0.1)
        >>> params = {"w": fg.asarray([1.0, -1.0])}
        >>> state = tx.init(params)
        >>> params, state = tx.update({"w": fg.asarray([2.0, -2.0])}, state, params)
        >>> params["w"].tolist()
        [0.800000011920929, -0.800000011920929]
    """

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], tuple[Any, Any]]


def _functional(rule: Rule, **hyperparameters: Any) -> GradientTransformation:
    h = rule.hyperparameters(**hyperparameters)
    starts = rule.starts(h)
    name = rule.name.lower()

    def init(params: Any) -> list[dict[str, Any]]:
        """Each leaf's state with every entry the rule keeps, at its starting value (``Rule.starts``)."""
        return [{k: ops.full(() if k in ("step", "mu_product") else tuple(p.shape), v, p.dtype, device=p.device)
                 for k, v in starts.items()} for p in _tree.leaves(params)]

    def update(grads: Any, state: list[dict[str, Any]], params: Any) -> tuple[Any, list[dict[str, Any]]]:
        leaves, structure = _tree.flatten(params)
        grad_leaves = _tree.leaves(grads)
        if len(grad_leaves) != len(leaves) or len(state) != len(leaves):
            raise ValueError(f"{name}.update: {len(grad_leaves)} gradients and {len(state)} states for "
                             f"{len(leaves)} parameters (the state comes from init(params))")
        new_params, new_state = [], []
        for p, g, s in zip(leaves, grad_leaves, state):
            base, alpha, direction, s = rule.update(p, g, s, h)
            new_params.append(base + alpha * direction)
            new_state.append(s)
        return _tree.unflatten(structure, new_params), new_state

    return GradientTransformation(init, update)


def sgd(lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
        nesterov: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.SGD``'s rule as ``(init, update)``."""
    return _functional(rules.SGD, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                       nesterov=nesterov, maximize=maximize)


def adam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
         amsgrad: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adam``'s rule as ``(init, update)``."""
    return _functional(rules.ADAM, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                       maximize=maximize)


def adamw(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
          amsgrad: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.AdamW``'s rule as ``(init, update)``."""
    return _functional(rules.ADAMW, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                       maximize=maximize)


def rmsprop(lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
            centered: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.RMSprop``'s rule as ``(init, update)``."""
    return _functional(rules.RMSPROP, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                       centered=centered, maximize=maximize)


def adagrad(lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
            eps: float = 1e-10, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adagrad``'s rule as ``(init, update)``."""
    return _functional(rules.ADAGRAD, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                       initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize)


def adamax(lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
           maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adamax``'s rule as ``(init, update)``."""
    return _functional(rules.ADAMAX, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize)


def nadam(lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
          momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False,
          maximize: bool = False) -> GradientTransformation:
    """``fg.optim.NAdam``'s rule as ``(init, update)``."""
    return _functional(rules.NADAM, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                       momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)


def radam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
          decoupled_weight_decay: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.RAdam``'s rule as ``(init, update)``."""
    return _functional(rules.RADAM, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                       decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)


def adadelta(lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
             maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adadelta``'s rule as ``(init, update)``."""
    return _functional(rules.ADADELTA, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)


def rprop(lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2), step_sizes: tuple[float, float] = (1e-6, 50.0),
          maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Rprop``'s rule as ``(init, update)``."""
    return _functional(rules.RPROP, lr=lr, etas=etas, step_sizes=step_sizes, maximize=maximize)
