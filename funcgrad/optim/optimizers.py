"""PyTorch's optimizer classes: each wraps one pure rule of ``rules.py`` in the stateful
``Optimizer`` (param groups, per-parameter state, ``step``, ``state_dict``). The class
holds the state and re-points each parameter; the rule computes the step."""

from __future__ import annotations

from typing import Any

from . import fused, rules
from .optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop"]


class RuleOptimizer(Optimizer):
    """An ``Optimizer`` whose update is a pure rule (``rules.Rule``)."""

    rule: rules.Rule

    def __init__(self, params: Any, **hyperparameters: Any) -> None:
        super().__init__(params, self.rule.hyperparameters(**hyperparameters))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, Any, Any]:
        """The rule's step; its new running values replace the parameter's ``state``."""
        base, alpha, direction, new = self.rule.update(p, g, state, group)
        state.update(new)
        return base, alpha, direction


class SGD(RuleOptimizer):
    """SGD with momentum, dampening, Nesterov momentum and (L2) weight decay, PyTorch's rule.

    Args:
        params: the parameters (``fg.nn.Parameter``s), or parameter groups (dicts).
        lr: the learning rate.
        momentum: the momentum factor.
        dampening: the dampening of the momentum.
        weight_decay: L2 weight decay, added to the gradient.
        nesterov: Nesterov momentum.
        maximize: ascend the objective.

    Example:
        >>> w = fg.nn.Parameter(fg.asarray([1.0, -2.0]))
        >>> opt = fg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
        >>> w.tolist()   # torch.optim.SGD's, bit for bit
        [0.46000000834465027, -0.9200000166893005]
    """

    rule = rules.SGD

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False) -> None:
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, maximize=maximize)


class Adam(RuleOptimizer):
    """Adam, PyTorch's rule (L2 weight decay added to the gradient; see AdamW for decoupled
    decay).

    Args:
        params: as SGD's (so are ``lr``, ``weight_decay`` and ``maximize``).
        betas: the decay rates of the running means of the gradient and its square.
        eps: added to the denominator.
        amsgrad: keep the largest running mean of the squared gradient.
        fused: PyTorch's switch. ``None`` runs each float32 or float64 CPU parameter's step
            as one native loop where a compiler is found (``optim/fused.py``: the rule's
            bits), the rule elsewhere; ``True`` insists on the loop; ``False`` runs the rule.

    Example:
        >>> w = fg.nn.Parameter(fg.asarray([1.0, -2.0]))
        >>> (w * w).sum().backward()
        >>> fg.optim.Adam([w], lr=0.1).step()   # the first step moves each weight by lr
        >>> w.tolist()
        [0.9000000357627869, -1.899999976158142]
    """

    rule = rules.ADAM
    decoupled = False

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize, fused=fused)

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> Any:
        """The native loop's new value where it runs (``fused``), else the rule's step."""
        if group.get("fused") is not False:
            new = fused.adam_step(type(self).__name__, p, g, state, group, self.decoupled)
            if new is not None:
                return new
        return super().update(p, g, state, group)


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step),
    PyTorch's rule; the arguments are Adam's (``weight_decay`` 0.01 by default)."""

    rule = rules.ADAMW
    decoupled = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize, fused=fused)


class RMSprop(RuleOptimizer):
    """RMSprop (PyTorch's): steps scaled by a running mean of squared gradients."""

    rule = rules.RMSPROP

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered, maximize=maximize)


class Adagrad(RuleOptimizer):
    """Adagrad: steps scaled by the root of the running sum of squared gradients."""

    rule = rules.ADAGRAD

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, maximize: bool = False) -> None:
        super().__init__(params, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps, maximize=maximize,
                         initial_accumulator_value=initial_accumulator_value)


class Adamax(RuleOptimizer):
    """Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

    rule = rules.ADAMAX

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize)


class NAdam(RuleOptimizer):
    """Adam with Nesterov momentum and a momentum schedule (Dozat's NAdam, as PyTorch's)."""

    rule = rules.NADAM

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                         momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay)


class RAdam(RuleOptimizer):
    """Rectified Adam: plain momentum steps until the second moment's variance is tractable."""

    rule = rules.RADAM

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                         decoupled_weight_decay=decoupled_weight_decay)


class Adadelta(RuleOptimizer):
    """Adadelta: steps scaled by the ratio of running root-mean-squares of updates and gradients."""

    rule = rules.ADADELTA

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> Any:
        """The step as one native loop where it runs (``optim/fused.py``: the rule's bits),
        else the rule's step."""
        new = fused.adadelta_step(p, g, state, group)
        return super().update(p, g, state, group) if new is None else new


class Rprop(RuleOptimizer):
    """Rprop: each weight's step size grows while its gradient keeps its sign and shrinks when it flips."""

    rule = rules.RPROP

    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50.0), maximize: bool = False) -> None:
        super().__init__(params, lr=lr, etas=etas, step_sizes=step_sizes, maximize=maximize)
