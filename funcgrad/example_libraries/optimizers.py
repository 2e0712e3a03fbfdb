"""JAX's ``jax.example_libraries.optimizers``: each optimizer is a triple ``(init_fun,
update_fun, get_params)`` over pytrees of arrays.

``opt_state = init_fun(params)``, ``opt_state = update_fun(i, grads, opt_state)`` (``i``
the step number, which schedules read), ``params = get_params(opt_state)``. The rules are
JAX's, to the order of their operations, so a ported JAX script takes the same steps;
they are not ``fg.optim``'s (PyTorch's), which differ: RMSProp adds ``eps`` outside the
square root there and inside it here, Adagrad here keeps a momentum of its scaled
gradients, Adam here divides by the bias corrections before the square root. A step size
is a number or a schedule, a function of the step number (``exponential_decay`` ...).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from .. import ops
from .. import tree as _tree

__all__ = ["Optimizer", "OptimizerState", "optimizer", "sgd", "momentum", "nesterov", "adagrad", "rmsprop",
           "rmsprop_momentum", "adam", "adamax", "make_schedule", "constant", "exponential_decay",
           "inverse_time_decay", "polynomial_decay", "piecewise_constant", "l2_norm", "clip_grads"]


class OptimizerState(NamedTuple):
    """Each parameter's state (a tuple per leaf, the leaf's value first) and the tree they fill."""

    states: tuple[tuple[Any, ...], ...]
    tree: Any


class Optimizer(NamedTuple):
    init_fn: Callable[[Any], OptimizerState]
    update_fn: Callable[[Any, Any, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Any]


Schedule = Callable[[Any], Any]


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule from a number (constant) or a schedule itself."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if isinstance(scalar_or_schedule, (int, float)) or ops.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"optimizers: a step size must be a number or a schedule, got {type(scalar_or_schedule).__name__}")


def optimizer(opt_maker: Callable[..., tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]]
              ) -> Callable[..., Optimizer]:
    """JAX's decorator: ``opt_maker`` defines the rule for one array (``init(x) -> state``,
    ``update(i, g, state) -> state``, ``get(state) -> x``); the result applies it to each
    leaf of a pytree of parameters."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(params: Any) -> OptimizerState:
            leaves, tree = _tree.flatten(params)
            return OptimizerState(tuple(_as_tuple(init(x)) for x in leaves), tree)

        def tree_update(i: Any, grads: Any, state: OptimizerState) -> OptimizerState:
            grad_leaves = _tree.leaves(grads)
            if len(grad_leaves) != len(state.states):
                raise ValueError(f"optimizers: {len(grad_leaves)} gradients for {len(state.states)} parameters")
            return OptimizerState(tuple(_as_tuple(update(i, g, _unpacked(s))) for g, s in
                                        zip(grad_leaves, state.states)), state.tree)

        def tree_get_params(state: OptimizerState) -> Any:
            return _tree.unflatten(state.tree, [get_params(_unpacked(s)) for s in state.states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


def _with_zeros(count: int) -> Callable[[Any], tuple[Any, ...]]:
    """An ``init`` keeping ``x0`` and ``count`` arrays of zeros like it."""
    return lambda x0: (x0, *(ops.zeros_like(x0) for _ in range(count)))


def _first(state: Any) -> Any:
    return state[0]


def _as_tuple(state: Any) -> tuple[Any, ...]:
    return state if isinstance(state, tuple) else (state,)


def _unpacked(state: tuple[Any, ...]) -> Any:
    return state[0] if len(state) == 1 else state


@optimizer
def sgd(step_size: float | Schedule) -> Any:
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step(i) * g), (lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> Any:
    """Heavy-ball momentum: ``v = mass * v + g``, ``x - step_size(i) * v``."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step(i) * velocity, velocity

    return _with_zeros(1), update, _first


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> Any:
    """Nesterov's accelerated gradient: ``v = mass * v + g``, ``x - step_size(i) * (mass * v + g)``."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step(i) * (mass * velocity + g), velocity

    return _with_zeros(1), update, _first


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> Any:
    """Adagrad with momentum on its scaled gradients (JAX's)."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, g_sq, m = state
        g_sq = g_sq + ops.square(g)
        g_sq_inv_sqrt = ops.where(g_sq > 0, 1.0 / ops.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step(i) * m, g_sq, m

    return _with_zeros(2), update, _first


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8) -> Any:
    """RMSProp: ``a = gamma * a + (1 - gamma) * g**2``, ``x - step_size(i) * g / sqrt(a + eps)``."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + ops.square(g) * (1.0 - gamma)
        return x - step(i) * g / ops.sqrt(avg_sq_grad + eps), avg_sq_grad

    return _with_zeros(1), update, _first


@optimizer
def rmsprop_momentum(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> Any:
    """RMSProp with momentum on its scaled steps."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + ops.square(g) * (1.0 - gamma)
        mom = momentum * mom + step(i) * g / ops.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return _with_zeros(2), update, _first


@optimizer
def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Any:
    """Adam: bias-corrected moments, ``x - step_size(i) * mhat / (sqrt(vhat) + eps)``."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * ops.square(g) + b2 * v
        mhat = m / (1 - ops.asarray(b1, dtype=m.dtype) ** (i + 1))
        vhat = v / (1 - ops.asarray(b2, dtype=m.dtype) ** (i + 1))
        return x - step(i) * mhat / (ops.sqrt(vhat) + eps), m, v

    return _with_zeros(2), update, _first


@optimizer
def adamax(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Any:
    """Adamax: the infinity norm in Adam's place of the second moment."""
    step = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = ops.maximum(b2 * u, ops.abs(g))
        return x - (step(i) / (1 - ops.asarray(b1, dtype=m.dtype) ** (i + 1))) * m / (u + eps), m, u

    return _with_zeros(2), update, _first


# ---- schedules ---------------------------------------------------------------------------------

def constant(step_size: float) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size: float, decay_steps: float, decay_rate: float) -> Schedule:
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size: float, decay_steps: float, decay_rate: float, staircase: bool = False) -> Schedule:
    if staircase:
        return lambda i: step_size / (1 + decay_rate * ops.floor(ops.asarray(i) / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size: float, decay_steps: int, final_step_size: float, power: float = 1.0) -> Schedule:
    def schedule(i: Any) -> Any:
        done = ops.minimum(ops.asarray(i), decay_steps)
        return (step_size - final_step_size) * (1 - done / decay_steps) ** power + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` from ``boundaries[k - 1]`` (exclusive) on: one more value than boundaries."""
    boundaries, values = ops.asarray(boundaries), ops.asarray(values)
    if values.ndim != 1 or boundaries.ndim != 1 or values.shape[0] != boundaries.shape[0] + 1:
        raise ValueError("piecewise_constant: values must have one more entry than boundaries")
    return lambda i: values[ops.sum(ops.asarray(i) > boundaries)]


# ---- utilities ----------------------------------------------------------------------------------

def l2_norm(tree: Any) -> Any:
    """The l2 norm of all the leaves of ``tree`` together."""
    return ops.sqrt(sum(ops.sum(ops.square(x)) for x in _tree.leaves(tree)))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """``grad_tree`` scaled down so its l2 norm is at most ``max_norm``."""
    norm = l2_norm(grad_tree)
    factor = ops.where(norm < max_norm, 1.0, max_norm / norm)
    return _tree.map(lambda g: g * factor, grad_tree)
