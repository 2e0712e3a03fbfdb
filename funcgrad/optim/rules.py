"""The update rules: PyTorch's documented algorithms, one small class each."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..errors import ArgumentTypeError, ArgumentValueError
from .optimizer import Optimizer


def _check(name: str, **checks: tuple[Any, Any]) -> None:
    """PyTorch's hyperparameter checks: ``value, ok(value)`` per argument; the first that fails
    raises (``ArgumentTypeError`` for a value the check cannot even compare)."""
    for arg, (value, ok) in checks.items():
        try:
            good = bool(ok(value))
        except (TypeError, IndexError):
            raise ArgumentTypeError(f"{name}: {arg} must be a number (or numbers), got {type(value).__name__} "
                                    f"{value!r}") from None
        if not good:
            raise ArgumentValueError(f"{name}: invalid {arg} value: {value!r}")


def _at_least_zero(value: Any) -> bool:
    return bool(value >= 0.0)


def _betas_ok(betas: Any) -> bool:
    return len(tuple(betas)) == 2 and all(0.0 <= b < 1.0 for b in betas)

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop"]


class SGD(Optimizer):
    """SGD with momentum, dampening, Nesterov momentum and (L2) weight decay."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False) -> None:
        _check("SGD", lr=(lr, _at_least_zero), momentum=(momentum, _at_least_zero),
               weight_decay=(weight_decay, _at_least_zero))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The SGD step: momentum (or Nesterov's look-ahead), dampening and weight decay as PyTorch's."""
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
        _check(type(self).__name__, lr=(lr, _at_least_zero), eps=(eps, _at_least_zero), betas=(betas, _betas_ok),
               weight_decay=(weight_decay, _at_least_zero))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The Adam step: bias-corrected first and second moments (and their running maximum with amsgrad)."""
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
        _check("RMSprop", lr=(lr, _at_least_zero), eps=(eps, _at_least_zero), momentum=(momentum, _at_least_zero),
               weight_decay=(weight_decay, _at_least_zero), alpha=(alpha, _at_least_zero))
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The RMSprop step: gradients scaled by a running root-mean-square (centred, with momentum)."""
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


def _decayed(p: Any, g: Any, group: dict[str, Any]) -> Any:
    """The gradient, negated for ``maximize``, with L2 weight decay added."""
    if group.get("maximize"):
        g = -g
    return g + group["weight_decay"] * p if group.get("weight_decay") else g


def _signed_and_decayed(p: Any, g: Any, group: dict[str, Any]) -> tuple[Any, Any]:
    """NAdam's and RAdam's start: ``maximize``, then weight decay on the weights
    (``decoupled_weight_decay``, as AdamW) or added to the gradient."""
    if group["maximize"]:
        g = -g
    wd = group["weight_decay"]
    if wd:
        if group["decoupled_weight_decay"]:
            p = p * (1 - group["lr"] * wd)
        else:
            g = g + wd * p
    return p, g


def _moments(g: Any, state: dict[str, Any], b1: float, b2: float) -> tuple[Any, Any]:
    """Adam's running first and second moments of the gradient, from nothing on the first step."""
    m, v = state.get("exp_avg"), state.get("exp_avg_sq")
    m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
    v = (1 - b2) * (g * g) if v is None else b2 * v + (1 - b2) * (g * g)
    return m, v


class Adagrad(Optimizer):
    """Adagrad: steps scaled by the root of the running sum of squared gradients."""

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, maximize: bool = False) -> None:
        _check("Adagrad", lr=(lr, _at_least_zero), lr_decay=(lr_decay, _at_least_zero),
               weight_decay=(weight_decay, _at_least_zero),
               initial_accumulator_value=(initial_accumulator_value, _at_least_zero),
               eps=(eps, _at_least_zero))
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps, maximize=maximize,
                                      initial_accumulator_value=initial_accumulator_value))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The Adagrad step: gradients scaled by the root of their running sum of squares."""
        g = _decayed(p, g, group)
        step = state.get("step", 0) + 1
        total = state.get("sum")
        total = (group["initial_accumulator_value"] + g * g) if total is None else total + g * g
        state.update(step=step, sum=total)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        return p, -clr, g / (ops.sqrt(total) + group["eps"])


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, maximize: bool = False) -> None:
        _check("Adamax", lr=(lr, _at_least_zero), eps=(eps, _at_least_zero), betas=(betas, _betas_ok),
               weight_decay=(weight_decay, _at_least_zero))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The Adamax step: the first moment over the running infinity norm of the gradients."""
        (b1, b2), eps = group["betas"], group["eps"]
        g = _decayed(p, g, group)
        step = state.get("step", 0) + 1
        m, u = state.get("exp_avg"), state.get("exp_inf")
        m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
        u = ops.abs(g) + eps if u is None else ops.maximum(b2 * u, ops.abs(g) + eps)
        state.update(step=step, exp_avg=m, exp_inf=u)
        return p, -group["lr"] / (1 - b1 ** step), m / u


class NAdam(Optimizer):
    """Adam with Nesterov momentum and a momentum schedule (Dozat's NAdam, as PyTorch's)."""

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False,
                 maximize: bool = False) -> None:
        _check("NAdam", lr=(lr, _at_least_zero), eps=(eps, _at_least_zero), betas=(betas, _betas_ok),
               weight_decay=(weight_decay, _at_least_zero), momentum_decay=(momentum_decay, _at_least_zero))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The NAdam step: Adam's moments with Nesterov momentum on a decaying schedule."""
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        p, g = _signed_and_decayed(p, g, group)
        step = state.get("step", 0) + 1
        mu = b1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        mu_product = state.get("mu_product", 1.0) * mu
        m, v = _moments(g, state, b1, b2)
        state.update(step=step, mu_product=mu_product, exp_avg=m, exp_avg_sq=v)
        denom = ops.sqrt(v / (1 - b2 ** step)) + eps
        direction = ((1 - mu) / (1 - mu_product)) * g + (mu_next / (1 - mu_product * mu_next)) * m
        return p, -lr, direction / denom


class RAdam(Optimizer):
    """Rectified Adam: plain momentum steps until the second moment's variance is tractable."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, maximize: bool = False) -> None:
        _check("RAdam", lr=(lr, _at_least_zero), eps=(eps, _at_least_zero), betas=(betas, _betas_ok),
               weight_decay=(weight_decay, _at_least_zero))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The RAdam step: a momentum step until the variance is tractable, then rectified Adam."""
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        p, g = _signed_and_decayed(p, g, group)
        step = state.get("step", 0) + 1
        m, v = _moments(g, state, b1, b2)
        state.update(step=step, exp_avg=m, exp_avg_sq=v)
        bias1, bias2 = 1 - b1 ** step, 1 - b2 ** step
        rho_inf = 2 / (1 - b2) - 1
        rho = rho_inf - 2 * step * b2 ** step / bias2
        if isinstance(rho, float):  # (a Python step: the class's loop picks the branch)
            if rho <= 5:  # (the variance is not yet tractable: a momentum step)
                return p, -lr / bias1, m
            rect = ((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)) ** 0.5
            return p, -lr * rect * bias2 ** 0.5 / bias1, m / (ops.sqrt(v) + eps)
        # an array step (the functional form, maybe compiled): both branches, one selected
        tractable = rho > 5
        ratio = (rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)
        rect = ops.sqrt(ops.where(tractable, ratio, 1.0))
        adaptive = rect * ops.sqrt(bias2) * m / (ops.sqrt(v) + eps)
        return p, -lr / bias1, ops.where(tractable, adaptive, m)


class Adadelta(Optimizer):
    """Adadelta: steps scaled by the ratio of running root-mean-squares of updates and gradients."""

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
                 maximize: bool = False) -> None:
        _check("Adadelta", lr=(lr, _at_least_zero), rho=(rho, lambda rho: 0.0 <= rho <= 1.0), eps=(eps, _at_least_zero),
               weight_decay=(weight_decay, _at_least_zero))
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The Adadelta step: the ratio of running RMS of updates and of gradients times the gradient."""
        rho, eps = group["rho"], group["eps"]
        g = _decayed(p, g, group)
        square_avg, acc_delta = state.get("square_avg"), state.get("acc_delta")
        square_avg = (1 - rho) * (g * g) if square_avg is None else rho * square_avg + (1 - rho) * (g * g)
        delta = ops.sqrt((ops.zeros_like(g) if acc_delta is None else acc_delta) + eps) / ops.sqrt(square_avg + eps) * g
        acc_delta = (1 - rho) * (delta * delta) if acc_delta is None else rho * acc_delta + (1 - rho) * (delta * delta)
        state.update(step=state.get("step", 0) + 1, square_avg=square_avg, acc_delta=acc_delta)
        return p, -group["lr"], delta


class Rprop(Optimizer):
    """Rprop: each weight's step size grows while its gradient keeps its sign and shrinks when it flips."""

    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50.0), maximize: bool = False) -> None:
        _check("Rprop", lr=(lr, _at_least_zero), etas=(etas, lambda etas: 0.0 < etas[0] < 1.0 < etas[1]))
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), maximize=maximize))

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> tuple[Any, float, Any]:
        """The Rprop step: each weight's own step size, grown or shrunk by its gradient's sign changes."""
        (eta_minus, eta_plus), (low, high) = group["etas"], group["step_sizes"]
        if group["maximize"]:
            g = -g
        prev = state.get("prev")
        step_size = state.get("step_size")
        if step_size is None:
            step_size = ops.full_like(g, group["lr"])
        if prev is not None:
            agreement = g * prev
            factor = ops.where(agreement > 0, eta_plus, ops.where(agreement < 0, eta_minus, 1.0)).astype(g.dtype)
            step_size = ops.clip(step_size * factor, low, high)
            g = ops.where(agreement < 0, 0.0, g).astype(g.dtype)
        state.update(step=state.get("step", 0) + 1, prev=g, step_size=step_size)
        return p, -1.0, ops.sign(g) * step_size
