"""``flatten(tree) -> (vector, unflatten)``: a pytree of arrays as one 1-D vector and the
function that rebuilds the tree from such a vector (autograd's ``flatten``; JAX calls it
``ravel_pytree``). Both directions are differentiable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ops
from .. import tree as _tree

__all__ = ["flatten", "ravel_pytree"]


def flatten(value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The leaves of ``value`` flattened and joined into one vector (in the leaves' common
    dtype), and ``unflatten(vector)``, which gives back the tree with each leaf's shape and dtype."""
    leaves, treedef = _tree.flatten(value)
    arrays = [ops.asarray(leaf) for leaf in leaves]
    shapes = [tuple(a.shape) for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [a.size for a in arrays]
    vector = ops.concat([ops.reshape(a, (-1,)) for a in arrays]) if arrays else ops.zeros(0)

    def unflatten(flat: Any) -> Any:
        flat = ops.asarray(flat)
        if tuple(flat.shape) != (sum(sizes),):
            raise ValueError(f"unflatten: expected a vector of {sum(sizes)} values, got shape {tuple(flat.shape)}")
        parts, start = [], 0
        for shape, dtype, size in zip(shapes, dtypes, sizes):
            parts.append(ops.reshape(flat[start:start + size], shape).astype(dtype))
            start += size
        return _tree.unflatten(treedef, parts)

    return vector, unflatten


ravel_pytree = flatten
