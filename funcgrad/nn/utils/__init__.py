"""``fg.nn.utils``: gradient clipping, parameters as one vector, and ``rnn.pad_sequence``."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...transforms.autodiff.api import no_grad
from . import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "rnn"]


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0) -> Any:
    """Scale the gradients so their total norm is at most ``max_norm``; returns the total norm
    (before clipping), as PyTorch does."""

    params = [parameters] if hasattr(parameters, "grad") else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return ops.asarray(0.0)
    with no_grad():
        if norm_type == float("inf"):
            total = ops.max(ops.stack([ops.max(ops.abs(g)) for g in grads]))
        else:
            total = ops.sum(ops.stack([ops.sum(ops.abs(g) ** norm_type) for g in grads])) ** (1.0 / norm_type)
        scale = min(1.0, float(max_norm) / (float(total) + 1e-6))
        if scale < 1.0:
            for p in params:
                if p.grad is not None:
                    p.grad = p.grad * scale
    return total


def _params(parameters: Any) -> list[Any]:
    return [parameters] if hasattr(parameters, "grad") else list(parameters)


def clip_grad_value_(parameters: Any, clip_value: float) -> None:
    """Clamp every gradient elementwise to ``[-clip_value, clip_value]`` (re-pointing ``.grad``)."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad = ops.clip(p.grad, -clip_value, clip_value)


def parameters_to_vector(parameters: Any) -> Any:
    """The parameters flattened and joined into one vector (in the order given)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return ops.concat([ops.reshape(p, (-1,)) for p in params])


def vector_to_parameters(vec: Any, parameters: Any) -> None:
    """Re-point each parameter at its slice of ``vec`` (the inverse of ``parameters_to_vector``)."""
    params = list(parameters)
    total = sum(p.size for p in params)
    if getattr(vec, "ndim", None) != 1 or vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: expected a vector of {total} values for the parameters, got shape "
                         f"{tuple(getattr(vec, 'shape', ()))}")
    start = 0
    with no_grad():
        for p in params:
            p.data = ops.reshape(vec[start:start + p.size], tuple(p.shape)).astype(p.dtype)
            start += p.size
