"""The optimizers as pure functions over pytrees (optax's shape), for compiled training steps.

``fg.optim.adam(lr=1e-3)`` returns an ``(init, update)`` pair: ``state = init(params)``
and ``new_params, new_state = update(grads, state, params)``. The update is the class's
own rule (``Adam.update``, the one ``fg.optim.Adam`` runs), applied to each leaf with a
copy of that leaf's state, so the two forms compute the same steps and nothing is
written in place: a whole step (forward, backward, update) can be one compiled program.
The step count is a 0-d array of each parameter's dtype, so that a compiled step does not
trace again as it grows (the bias corrections are then computed in that precision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .. import ops
from .. import tree as _tree
from ..nn.parameter import Parameter
from .rules import SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, RAdam, RMSprop, Rprop

__all__ = ["GradientTransformation", "sgd", "adam", "adamw", "rmsprop", "adagrad", "adamax", "nadam", "radam",
           "adadelta", "rprop"]


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(grads, state, params) -> (params, state)``."""

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], tuple[Any, Any]]


def _functional(cls: type, buffers: Callable[[dict[str, Any]], Any], *args: Any,
                **kwargs: Any) -> GradientTransformation:
    # the class checks the hyperparameters and holds the rule; its one parameter is a placeholder
    rule = cls([Parameter(ops.zeros((1,)))], *args, **kwargs)
    group = {k: v for k, v in rule.param_groups[0].items() if k != "params"}
    entries = buffers(group)
    starts = entries if isinstance(entries, dict) else dict.fromkeys(entries, 0.0)

    def init(params: Any) -> list[dict[str, Any]]:
        """Each leaf's state with every entry the rule keeps, at the value from which the rule's
        first step gives what it gives from nothing (zero, unless ``buffers`` says otherwise),
        so the state keeps one structure."""
        return [{k: ops.full(() if k in ("step", "mu_product") else tuple(p.shape), v, p.dtype, device=p.device)
                 for k, v in starts.items()} for p in _tree.leaves(params)]

    def update(grads: Any, state: list[dict[str, Any]], params: Any) -> tuple[Any, list[dict[str, Any]]]:
        leaves, structure = _tree.flatten(params)
        grad_leaves = _tree.leaves(grads)
        if len(grad_leaves) != len(leaves) or len(state) != len(leaves):
            raise ValueError(f"{cls.__name__.lower()}.update: {len(grad_leaves)} gradients and {len(state)} states for "
                             f"{len(leaves)} parameters (the state comes from init(params))")
        new_params, new_state = [], []
        for p, g, s in zip(leaves, grad_leaves, state):
            s = dict(s)
            step = rule.update(p, g, s, group)
            new_params.append(step[0] + step[1] * step[2] if isinstance(step, tuple) else step)
            new_state.append(s)
        return _tree.unflatten(structure, new_params), new_state

    return GradientTransformation(init, update)


def _adam_state(group: dict[str, Any]) -> tuple[str, ...]:
    return ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())


def sgd(lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
        nesterov: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.SGD``'s rule as ``(init, update)``."""
    # (with dampening, PyTorch's first step keeps the gradient itself: the buffer starts absent)
    return _functional(SGD, lambda g: ("momentum_buffer",) if g["momentum"] and not g["dampening"] else (),
                       lr, momentum, dampening, weight_decay, nesterov, maximize)


def adam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
         amsgrad: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adam``'s rule as ``(init, update)``."""
    return _functional(Adam, _adam_state, lr, betas, eps, weight_decay, amsgrad, maximize)


def adamw(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
          amsgrad: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.AdamW``'s rule as ``(init, update)``."""
    return _functional(AdamW, _adam_state, lr, betas, eps, weight_decay, amsgrad, maximize)


def rmsprop(lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
            centered: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.RMSprop``'s rule as ``(init, update)``."""
    return _functional(RMSprop, lambda g: ("step", "square_avg") + (("grad_avg",) if g["centered"] else ())
                       + (("momentum_buffer",) if g["momentum"] > 0 else ()),
                       lr, alpha, eps, weight_decay, momentum, centered, maximize)


def adagrad(lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
            eps: float = 1e-10, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adagrad``'s rule as ``(init, update)``."""
    return _functional(Adagrad, lambda g: {"step": 0.0, "sum": g["initial_accumulator_value"]},
                       lr, lr_decay, weight_decay, initial_accumulator_value, eps, maximize)


def adamax(lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
           maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adamax``'s rule as ``(init, update)``."""
    return _functional(Adamax, lambda g: ("step", "exp_avg", "exp_inf"), lr, betas, eps, weight_decay, maximize)


def nadam(lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
          momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False,
          maximize: bool = False) -> GradientTransformation:
    """``fg.optim.NAdam``'s rule as ``(init, update)``."""
    return _functional(NAdam, lambda g: {"step": 0.0, "mu_product": 1.0, "exp_avg": 0.0, "exp_avg_sq": 0.0},
                       lr, betas, eps, weight_decay, momentum_decay, decoupled_weight_decay, maximize)


def radam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
          decoupled_weight_decay: bool = False, maximize: bool = False) -> GradientTransformation:
    """``fg.optim.RAdam``'s rule as ``(init, update)``."""
    return _functional(RAdam, lambda g: ("step", "exp_avg", "exp_avg_sq"), lr, betas, eps, weight_decay,
                       decoupled_weight_decay, maximize)


def adadelta(lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
             maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Adadelta``'s rule as ``(init, update)``."""
    return _functional(Adadelta, lambda g: ("step", "square_avg", "acc_delta"), lr, rho, eps, weight_decay, maximize)


def rprop(lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2), step_sizes: tuple[float, float] = (1e-6, 50.0),
          maximize: bool = False) -> GradientTransformation:
    """``fg.optim.Rprop``'s rule as ``(init, update)`` (a zero previous gradient and step sizes
    of ``lr``: the same first step as the class's while ``lr`` lies within ``step_sizes``)."""
    return _functional(Rprop, lambda g: {"step": 0.0, "prev": 0.0, "step_size": g["lr"]}, lr, etas, step_sizes,
                       maximize)
