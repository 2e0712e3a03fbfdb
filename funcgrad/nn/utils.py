"""``fg.nn.utils``: gradient clipping."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..transforms.api import no_grad

__all__ = ["clip_grad_norm_"]


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


