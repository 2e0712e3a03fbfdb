"""The optimizers' update rules as pure functions (the shape of optax's and MLX's rules):
the source both forms run. ``fg.optim.Adam`` and the other classes wrap a rule in PyTorch's
stateful optimizer (``optimizers.py``); ``fg.optim.adam()`` returns it as an ``(init,
update)`` pair for compiled steps (``functional.py``).

A ``Rule`` is PyTorch's documented algorithm:

* ``update(p, g, state, h) -> (base, alpha, direction, state)``: the parameter's new value
  is ``base + alpha * direction`` (``base`` is ``p`` unless the rule changed it first,
  as decoupled weight decay does), and ``state`` the parameter's new running values (a new
  dict: the one given is never changed). ``h`` holds the hyperparameters. The step count
  may be a Python int (the classes) or a 0-d array (the functional form), so a compiled
  step does not trace again as it grows.
* ``check(h)``: PyTorch's checks of the hyperparameters, as typed errors.
* ``starts(h)``: the entries a fresh state holds in the functional form, each at the value
  from which the rule's first step gives what it gives from nothing (so the state keeps
  one structure from the first step on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .. import ops
from ..errors import ArgumentTypeError, ArgumentValueError

__all__ = ["Rule", "check", "at_least_zero", "SGD", "ADAM", "ADAMW", "RMSPROP", "ADAGRAD", "ADAMAX", "NADAM",
           "RADAM", "ADADELTA", "RPROP"]

Step = tuple[Any, Any, Any, dict[str, Any]]


class Rule(NamedTuple):
    """One optimizer's algorithm (see the module docstring)."""

    name: str
    update: Callable[[Any, Any, dict[str, Any], dict[str, Any]], Step]
    check: Callable[[dict[str, Any]], None]
    starts: Callable[[dict[str, Any]], dict[str, float]]

    def hyperparameters(self, **h: Any) -> dict[str, Any]:
        """``h``, checked."""
        self.check(h)
        return h


def check(name: str, **checks: tuple[Any, Any]) -> None:
    """PyTorch's hyperparameter checks: ``value, ok(value)`` per argument; the first that fails
    raises (``ArgumentTypeError`` for a value the check cannot even compare)."""
    for arg, (value, ok) in checks.items():
        try:
            good = bool(ok(value))
        except (TypeError, IndexError, KeyError):
            raise ArgumentTypeError(f"{name}: {arg} must be a number (or numbers), got {type(value).__name__} "
                                    f"{value!r}") from None
        if not good:
            raise ArgumentValueError(f"{name}: invalid {arg} value: {value!r}")


def at_least_zero(value: Any) -> bool:
    return bool(value >= 0.0)


def _betas_ok(betas: Any) -> bool:
    return len(tuple(betas)) == 2 and all(0.0 <= b < 1.0 for b in betas)


def _adam_checks(name: str) -> Callable[[dict[str, Any]], None]:
    def checks(h: dict[str, Any]) -> None:
        check(name, lr=(h["lr"], at_least_zero), eps=(h["eps"], at_least_zero), betas=(h["betas"], _betas_ok),
              weight_decay=(h["weight_decay"], at_least_zero),
              **({"momentum_decay": (h["momentum_decay"], at_least_zero)} if "momentum_decay" in h else {}))
        h["betas"] = tuple(h["betas"])

    return checks


def _decayed(p: Any, g: Any, h: dict[str, Any]) -> Any:
    """The gradient, negated for ``maximize``, with L2 weight decay added."""
    if h.get("maximize"):
        g = -g
    return g + h["weight_decay"] * p if h.get("weight_decay") else g


def _signed_and_decayed(p: Any, g: Any, h: dict[str, Any], decoupled: bool) -> tuple[Any, Any]:
    """``maximize``, then weight decay on the weights (decoupled, as AdamW) or added to the gradient."""
    if h["maximize"]:
        g = -g
    wd = h["weight_decay"]
    if wd:
        if decoupled:
            p = p * (1 - h["lr"] * wd)
        else:
            g = g + wd * p
    return p, g


def _moments(g: Any, state: dict[str, Any], b1: float, b2: float) -> tuple[Any, Any]:
    """Adam's running first and second moments of the gradient, from nothing on the first step."""
    m, v = state.get("exp_avg"), state.get("exp_avg_sq")
    m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
    v = (1 - b2) * (g * g) if v is None else b2 * v + (1 - b2) * (g * g)
    return m, v


# ---- SGD ---------------------------------------------------------------------------------

def _sgd(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """Momentum (or Nesterov's look-ahead), dampening and weight decay as PyTorch's."""
    state = dict(state)
    g = _decayed(p, g, h)
    momentum = h["momentum"]
    if momentum:
        buf = state.get("momentum_buffer")
        buf = g if buf is None else momentum * buf + (1 - h["dampening"]) * g
        state["momentum_buffer"] = buf
        g = g + momentum * buf if h["nesterov"] else buf
    return p, -h["lr"], g, state


def _sgd_checks(h: dict[str, Any]) -> None:
    check("SGD", lr=(h["lr"], at_least_zero), momentum=(h["momentum"], at_least_zero),
          weight_decay=(h["weight_decay"], at_least_zero))
    if h["nesterov"] and (h["momentum"] <= 0 or h["dampening"] != 0):
        raise ArgumentValueError("SGD: Nesterov momentum requires a momentum and zero dampening")


# (with dampening, PyTorch's first step keeps the gradient itself: the buffer starts absent)
SGD = Rule("SGD", _sgd, _sgd_checks,
           lambda h: {"momentum_buffer": 0.0} if h["momentum"] and not h["dampening"] else {})


# ---- Adam, AdamW ---------------------------------------------------------------------------

def _adam(decoupled: bool) -> Callable[..., Step]:
    def update(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
        """Bias-corrected first and second moments (and their running maximum with amsgrad)."""
        state = dict(state)
        lr, (b1, b2), eps = h["lr"], h["betas"], h["eps"]
        p, g = _signed_and_decayed(p, g, h, decoupled)
        step = state.get("step", 0) + 1
        m, v = _moments(g, state, b1, b2)
        state.update(step=step, exp_avg=m, exp_avg_sq=v)
        bias1, bias2 = 1 - b1 ** step, 1 - b2 ** step
        if h["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            v = v if vmax is None else ops.maximum(vmax, v)
            state["max_exp_avg_sq"] = v
        denom = ops.sqrt(v) / bias2 ** 0.5 + eps
        return p, -lr / bias1, m / denom, state

    return update


def _adam_starts(h: dict[str, Any]) -> dict[str, float]:
    return dict.fromkeys(("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if h["amsgrad"] else ()), 0.0)


ADAM = Rule("Adam", _adam(decoupled=False), _adam_checks("Adam"), _adam_starts)
ADAMW = Rule("AdamW", _adam(decoupled=True), _adam_checks("AdamW"), _adam_starts)


# ---- RMSprop, Adagrad, Adamax --------------------------------------------------------------

def _rmsprop(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """Gradients scaled by a running root-mean-square (centred, with momentum)."""
    state = dict(state)
    alpha, eps, lr = h["alpha"], h["eps"], h["lr"]
    g = _decayed(p, g, h)
    sq = state.get("square_avg")
    sq = (1 - alpha) * (g * g) if sq is None else alpha * sq + (1 - alpha) * (g * g)
    state["square_avg"] = sq
    state["step"] = state.get("step", 0) + 1
    if h["centered"]:
        ga = state.get("grad_avg")
        ga = (1 - alpha) * g if ga is None else alpha * ga + (1 - alpha) * g
        state["grad_avg"] = ga
        avg = ops.sqrt(sq - ga * ga) + eps
    else:
        avg = ops.sqrt(sq) + eps
    if h["momentum"] > 0:
        buf = state.get("momentum_buffer")
        buf = g / avg if buf is None else h["momentum"] * buf + g / avg
        state["momentum_buffer"] = buf
        return p, -lr, buf, state
    return p, -lr, g / avg, state


RMSPROP = Rule("RMSprop", _rmsprop, lambda h: check(
    "RMSprop", lr=(h["lr"], at_least_zero), eps=(h["eps"], at_least_zero), momentum=(h["momentum"], at_least_zero),
    weight_decay=(h["weight_decay"], at_least_zero), alpha=(h["alpha"], at_least_zero)),
    lambda h: dict.fromkeys(("step", "square_avg") + (("grad_avg",) if h["centered"] else ())
                            + (("momentum_buffer",) if h["momentum"] > 0 else ()), 0.0))


def _adagrad(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """Gradients scaled by the root of their running sum of squares."""
    state = dict(state)
    g = _decayed(p, g, h)
    step = state.get("step", 0) + 1
    total = state.get("sum")
    total = (h["initial_accumulator_value"] + g * g) if total is None else total + g * g
    state.update(step=step, sum=total)
    clr = h["lr"] / (1 + (step - 1) * h["lr_decay"])
    return p, -clr, g / (ops.sqrt(total) + h["eps"]), state


ADAGRAD = Rule("Adagrad", _adagrad, lambda h: check(
    "Adagrad", lr=(h["lr"], at_least_zero), lr_decay=(h["lr_decay"], at_least_zero),
    weight_decay=(h["weight_decay"], at_least_zero),
    initial_accumulator_value=(h["initial_accumulator_value"], at_least_zero), eps=(h["eps"], at_least_zero)),
    lambda h: {"step": 0.0, "sum": h["initial_accumulator_value"]})


def _adamax(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """The first moment over the running infinity norm of the gradients."""
    state = dict(state)
    (b1, b2), eps = h["betas"], h["eps"]
    g = _decayed(p, g, h)
    step = state.get("step", 0) + 1
    m, u = state.get("exp_avg"), state.get("exp_inf")
    m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
    u = ops.abs(g) + eps if u is None else ops.maximum(b2 * u, ops.abs(g) + eps)
    state.update(step=step, exp_avg=m, exp_inf=u)
    return p, -h["lr"] / (1 - b1 ** step), m / u, state


ADAMAX = Rule("Adamax", _adamax, _adam_checks("Adamax"), lambda h: dict.fromkeys(("step", "exp_avg", "exp_inf"), 0.0))


# ---- NAdam, RAdam --------------------------------------------------------------------------

def _nadam(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """Adam's moments with Nesterov momentum on a decaying schedule (Dozat's NAdam, as PyTorch's)."""
    state = dict(state)
    lr, (b1, b2), eps = h["lr"], h["betas"], h["eps"]
    p, g = _signed_and_decayed(p, g, h, h["decoupled_weight_decay"])
    step = state.get("step", 0) + 1
    mu = b1 * (1.0 - 0.5 * 0.96 ** (step * h["momentum_decay"]))
    mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * h["momentum_decay"]))
    mu_product = state.get("mu_product", 1.0) * mu
    m, v = _moments(g, state, b1, b2)
    state.update(step=step, mu_product=mu_product, exp_avg=m, exp_avg_sq=v)
    denom = ops.sqrt(v / (1 - b2 ** step)) + eps
    direction = ((1 - mu) / (1 - mu_product)) * g + (mu_next / (1 - mu_product * mu_next)) * m
    return p, -lr, direction / denom, state


NADAM = Rule("NAdam", _nadam, _adam_checks("NAdam"),
             lambda h: {"step": 0.0, "mu_product": 1.0, "exp_avg": 0.0, "exp_avg_sq": 0.0})


def _radam(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """A momentum step until the second moment's variance is tractable, then rectified Adam."""
    state = dict(state)
    lr, (b1, b2), eps = h["lr"], h["betas"], h["eps"]
    p, g = _signed_and_decayed(p, g, h, h["decoupled_weight_decay"])
    step = state.get("step", 0) + 1
    m, v = _moments(g, state, b1, b2)
    state.update(step=step, exp_avg=m, exp_avg_sq=v)
    bias1, bias2 = 1 - b1 ** step, 1 - b2 ** step
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * step * b2 ** step / bias2
    if isinstance(rho, float):  # (a Python step: the branch is picked here)
        if rho <= 5:  # (the variance is not yet tractable: a momentum step)
            return p, -lr / bias1, m, state
        rect = ((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)) ** 0.5
        return p, -lr * rect * bias2 ** 0.5 / bias1, m / (ops.sqrt(v) + eps), state
    # an array step (the functional form, maybe compiled): both branches, one selected
    tractable = rho > 5
    ratio = (rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)
    rect = ops.sqrt(ops.where(tractable, ratio, 1.0))
    adaptive = rect * ops.sqrt(bias2) * m / (ops.sqrt(v) + eps)
    return p, -lr / bias1, ops.where(tractable, adaptive, m), state


RADAM = Rule("RAdam", _radam, _adam_checks("RAdam"), lambda h: dict.fromkeys(("step", "exp_avg", "exp_avg_sq"), 0.0))


# ---- Adadelta, Rprop -----------------------------------------------------------------------

def _adadelta(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """The ratio of running RMS of updates and of gradients times the gradient."""
    state = dict(state)
    rho, eps = h["rho"], h["eps"]
    g = _decayed(p, g, h)
    square_avg, acc_delta = state.get("square_avg"), state.get("acc_delta")
    square_avg = (1 - rho) * (g * g) if square_avg is None else rho * square_avg + (1 - rho) * (g * g)
    delta = ops.sqrt((ops.zeros_like(g) if acc_delta is None else acc_delta) + eps) / ops.sqrt(square_avg + eps) * g
    acc_delta = (1 - rho) * (delta * delta) if acc_delta is None else rho * acc_delta + (1 - rho) * (delta * delta)
    state.update(step=state.get("step", 0) + 1, square_avg=square_avg, acc_delta=acc_delta)
    return p, -h["lr"], delta, state


ADADELTA = Rule("Adadelta", _adadelta, lambda h: check(
    "Adadelta", lr=(h["lr"], at_least_zero), rho=(h["rho"], lambda rho: 0.0 <= rho <= 1.0),
    eps=(h["eps"], at_least_zero), weight_decay=(h["weight_decay"], at_least_zero)),
    lambda h: dict.fromkeys(("step", "square_avg", "acc_delta"), 0.0))


def _rprop(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Step:
    """Each weight's own step size, grown while its gradient keeps its sign, shrunk when it flips."""
    state = dict(state)
    (eta_minus, eta_plus), (low, high) = h["etas"], h["step_sizes"]
    if h["maximize"]:
        g = -g
    prev = state.get("prev")
    step_size = state.get("step_size")
    if step_size is None:
        step_size = ops.full_like(g, h["lr"])
    if prev is not None:
        agreement = g * prev
        factor = ops.where(agreement > 0, eta_plus, ops.where(agreement < 0, eta_minus, 1.0)).astype(g.dtype)
        step_size = ops.clip(step_size * factor, low, high)
        g = ops.where(agreement < 0, 0.0, g).astype(g.dtype)
    state.update(step=state.get("step", 0) + 1, prev=g, step_size=step_size)
    return p, -1.0, ops.sign(g) * step_size, state


def _rprop_checks(h: dict[str, Any]) -> None:
    check("Rprop", lr=(h["lr"], at_least_zero), etas=(h["etas"], lambda etas: 0.0 < etas[0] < 1.0 < etas[1]))
    h["etas"], h["step_sizes"] = tuple(h["etas"]), tuple(h["step_sizes"])


# (a zero previous gradient and step sizes of ``lr``: the same first step as from nothing
# while ``lr`` lies within ``step_sizes``)
RPROP = Rule("Rprop", _rprop, _rprop_checks, lambda h: {"step": 0.0, "prev": 0.0, "step_size": h["lr"]})
