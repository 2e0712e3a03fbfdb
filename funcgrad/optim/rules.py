"""The update rules: PyTorch's documented algorithms, one small class each."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..errors import ArgumentValueError
from .optimizer import Optimizer


def _check(name: str, **checks: tuple[Any, bool]) -> None:
    """PyTorch's hyperparameter checks: ``value, ok`` per argument; the first that fails raises."""
    for arg, (value, ok) in checks.items():
        if not ok:
            raise ArgumentValueError(f"{name}: invalid {arg} value: {value!r}")


def _betas_ok(betas: Any) -> bool:
    return len(tuple(betas)) == 2 and all(0.0 <= b < 1.0 for b in betas)

__all__ = ["SGD", "Adam", "AdamW", "RMSprop"]


class SGD(Optimizer):
    """SGD with momentum, dampening, Nesterov momentum and (L2) weight decay."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False) -> None:
        _check("SGD", lr=(lr, lr >= 0.0), momentum=(momentum, momentum >= 0.0),
               weight_decay=(weight_decay, weight_decay >= 0.0))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            buf = g if buf is None else momentum * buf + (1 - group["dampening"]) * g
            state["momentum_buffer"] = buf
            g = g + momentum * buf if group["nesterov"] else buf
        return p, -group["lr"], g


class Adam(Optimizer):
    """Adam (L2 weight decay added to the gradient; see AdamW for decoupled decay)."""

    decoupled = False

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False) -> None:
        _check(type(self).__name__, lr=(lr, lr >= 0.0), eps=(eps, eps >= 0.0), betas=(betas, _betas_ok(betas)),
               weight_decay=(weight_decay, weight_decay >= 0.0))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if wd:
            if self.decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        step = state.get("step", 0) + 1
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
        v = (1 - b2) * (g * g) if v is None else b2 * v + (1 - b2) * (g * g)
        state.update(step=step, exp_avg=m, exp_avg_sq=v)
        bias1, bias2 = 1 - b1 ** step, 1 - b2 ** step
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            v = v if vmax is None else ops.maximum(vmax, v)
            state["max_exp_avg_sq"] = v
        denom = ops.sqrt(v) / bias2 ** 0.5 + eps  # (``step`` is an array in the functional form)
        return p, -lr / bias1, m / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step)."""

    decoupled = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


class RMSprop(Optimizer):
    """RMSprop (PyTorch's): steps scaled by a running mean of squared gradients."""

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 maximize: bool = False) -> None:
        _check("RMSprop", lr=(lr, lr >= 0.0), eps=(eps, eps >= 0.0), momentum=(momentum, momentum >= 0.0),
               weight_decay=(weight_decay, weight_decay >= 0.0), alpha=(alpha, alpha >= 0.0))
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        alpha, eps, lr = group["alpha"], group["eps"], group["lr"]
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        sq = state.get("square_avg")
        sq = (1 - alpha) * (g * g) if sq is None else alpha * sq + (1 - alpha) * (g * g)
        state["square_avg"] = sq
        state["step"] = state.get("step", 0) + 1
        if group["centered"]:
            ga = state.get("grad_avg")
            ga = (1 - alpha) * g if ga is None else alpha * ga + (1 - alpha) * g
            state["grad_avg"] = ga
            avg = ops.sqrt(sq - ga * ga) + eps
        else:
            avg = ops.sqrt(sq) + eps
        if group["momentum"] > 0:
            buf = state.get("momentum_buffer")
            buf = g / avg if buf is None else group["momentum"] * buf + g / avg
            state["momentum_buffer"] = buf
            return p, -lr, buf
        return p, -lr, g / avg
