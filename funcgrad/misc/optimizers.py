"""Autograd's loop-style optimizers: ``opt(grad, x0, callback=None, num_iters=..., ...)``
calls ``grad(x, i)`` once per iteration (and ``callback(x, i, g)``) and returns the final
``x``. ``x0`` may be any pytree of arrays: the loop runs on its flattened vector."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import ops
from .flatten import flatten

__all__ = ["sgd", "rmsprop", "adam"]


def _on_vectors(step_loop: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``step_loop`` on the flattened ``x0``, handing ``grad`` and ``callback`` the tree."""

    @functools.wraps(step_loop)
    def optimizer(grad: Callable[[Any, int], Any], x0: Any, callback: Callable[..., Any] | None = None,
                  *args: Any, **kwargs: Any) -> Any:
        x, unflatten = flatten(x0)

        def flat_grad(v: Any, i: int) -> Any:
            return flatten(grad(unflatten(v), i))[0]

        flat_callback = None if callback is None else (lambda v, i, g: callback(unflatten(v), i, unflatten(g)))
        return unflatten(step_loop(flat_grad, x, flat_callback, *args, **kwargs))

    return optimizer


@_on_vectors
def sgd(grad: Any, x: Any, callback: Any = None, num_iters: int = 200, step_size: float = 0.1,
        mass: float = 0.9) -> Any:
    """Stochastic gradient descent with momentum ``mass``."""
    velocity = ops.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@_on_vectors
def rmsprop(grad: Any, x: Any, callback: Any = None, num_iters: int = 100, step_size: float = 0.1,
            gamma: float = 0.9, eps: float = 1e-8) -> Any:
    """Steps scaled by a running root-mean-square of the gradients."""
    avg_sq_grad = ops.ones_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g ** 2 * (1 - gamma)
        x = x - step_size * g / (ops.sqrt(avg_sq_grad) + eps)
    return x


@_on_vectors
def adam(grad: Any, x: Any, callback: Any = None, num_iters: int = 100, step_size: float = 0.001, b1: float = 0.9,
         b2: float = 0.999, eps: float = 1e-8) -> Any:
    """Adam (Kingma and Ba): bias-corrected running moments of the gradients."""
    m, v = ops.zeros_like(x), ops.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        m_hat, v_hat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        x = x - step_size * m_hat / (ops.sqrt(v_hat) + eps)
    return x
