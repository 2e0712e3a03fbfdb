"""Fully sharded data parallel with PyTorch FSDP2's API: ``fully_shard(module)``.

Each rank keeps ``1/world`` of every parameter a ``fully_shard``-ed module manages: the
parameter flattened, padded to a multiple of the world size, and cut in one contiguous
block per rank. ``module.parameters()`` are those blocks, so an optimizer keeps ``1/world``
of its state. Before the module's forward pass every rank gathers the whole parameters
(``fg.lax.all_gather`` across the process group, a primitive like any other), and the
module computes with them; after it, the module holds its blocks again.

The gradients need no hooks: the gathered parameter is a differentiable function of the
block, and the transpose of an all-gather is a reduce-scatter, so the backward pass gives
each block the sum over ranks of its part of the gradient, scaled by ``1/world`` (the mean
over ranks, as DistributedDataParallel's). Gradient accumulation (``set_requires_gradient_sync``)
is therefore exact whatever it is set to: the reduce-scatter is linear. Apply
``fully_shard`` to the submodules first and then the root, as in PyTorch: each call manages
the parameters no inner call took.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import tree as _tree
from ..array import ArrayBase
from ..backends import process_group
from ..dtypes import float64
from ..errors import ArgumentTypeError, ArgumentValueError
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops import asarray, concatenate, sqrt, zeros
from ..primitives.axes import all_gather_p
from ..primitives.collective import all_reduce_p
from ..primitives.core import bind
from ..sharding import shared_over
from ..transforms import no_grad

__all__ = ["FSDPModule", "MixedPrecisionPolicy", "fully_shard", "full_state_dict", "load_full_state_dict",
           "clip_grad_norm_", "block_of", "block_size"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """PyTorch's ``MixedPrecisionPolicy``: ``param_dtype`` the dtype parameters are gathered
    and computed in, ``reduce_dtype`` the dtype gradients are reduce-scattered in (``None``:
    the parameters' own), ``output_dtype`` what the module's floating-point outputs are
    cast to, and ``cast_forward_inputs`` whether its floating-point inputs are cast to
    ``param_dtype``."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class _Managed:
    """One parameter a module manages: where it lives and its whole shape."""

    owner: Module
    name: str
    shape: tuple[int, ...]
    block: int  # elements per rank


def block_size(numel: int, n: int) -> int:
    """Elements of each rank's block of a parameter of ``numel`` elements on ``n`` ranks."""
    return -(-max(numel, 1) // n)


def block_of(whole: Any, n: int, rank: int) -> Any:
    """Rank ``rank``'s block of ``whole``: flattened, padded with zeros to ``n`` equal
    blocks, the ``rank``-th (a new array)."""
    size = block_size(whole.size, n)
    flat = whole.reshape(-1)
    padded = concatenate([flat, zeros((size * n - flat.shape[0],), dtype=flat.dtype)])
    return padded[rank * size:(rank + 1) * size].clone()


def _world() -> tuple[Any, int, int]:
    group = process_group.joined()
    return (group, group.size, group.rank) if group is not None else (None, 1, 0)


class FSDPModule:
    """What ``fully_shard`` adds to a module's class (PyTorch's ``FSDPModule``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        state: _State = self.__dict__["_fsdp"]
        mp = state.mp
        if mp is not None and mp.param_dtype is not None and mp.cast_forward_inputs:
            args, kwargs = _cast_floats((args, kwargs), mp.param_dtype)
        with state.unsharded():
            out = super().__call__(*args, **kwargs)  # type: ignore[misc]
        return out if mp is None or mp.output_dtype is None else _cast_floats(out, mp.output_dtype)

    def reshard(self) -> None:
        """Hold the parameter blocks (what ``parameters()`` gives) and nothing gathered."""
        self.__dict__["_fsdp"].reshard()

    def unshard(self) -> None:
        """Gather the whole parameters now (the next forward uses them)."""
        self.__dict__["_fsdp"].unshard()

    def set_requires_gradient_sync(self, requires: bool, *, recurse: bool = True) -> None:
        """Accepted for PyTorch's API: gradients are reduce-scattered in every backward pass,
        and the sums accumulate to what one reduction of the accumulated gradient gives."""
        if not isinstance(requires, bool):
            raise ArgumentTypeError(f"set_requires_gradient_sync: expected a bool, got {requires!r}")

    def set_reshard_after_forward(self, reshard: bool) -> None:
        """Accepted for PyTorch's API: the gathered parameters are held by the backward graph
        until it has used them, whatever this says (``docs/distributed.md``)."""
        self.__dict__["_fsdp"].reshard_after_forward = bool(reshard)


def _cast_floats(tree_value: Any, dtype: Any) -> Any:
    return _tree.map(lambda x: x.astype(dtype) if isinstance(x, ArrayBase) and x.dtype.kind == "f" else x,
                     tree_value)


class _State:
    def __init__(self, managed: list[_Managed], reshard_after_forward: bool,
                 mp: MixedPrecisionPolicy | None) -> None:
        self.managed, self.reshard_after_forward, self.mp = managed, reshard_after_forward, mp
        self.blocks = [m.owner._parameters[m.name] for m in managed]
        self.gathered = False

    def unshard(self, policy: bool = True) -> None:
        """Each parameter gathered from the blocks, in the reduce dtype (so its gradient is
        reduce-scattered in it: a cast after the gather rounds as one before it), then cast
        to the compute dtype; ``policy=False``: in the parameters' own dtype."""
        group, n, _ = _world()
        param_dtype = self.mp.param_dtype if self.mp and policy else None
        reduce_dtype = self.mp.reduce_dtype if self.mp and policy else None
        for m, block in zip(self.managed, self.blocks):
            x = block if reduce_dtype is None else block.astype(reduce_dtype)
            if group is not None and n > 1:
                x = bind(all_gather_p, x, axis_name="fsdp", size=n, group=group, axis=0, tiled=True)
                x = shared_over(n)(x)  # (the reduce-scatter's sum over ranks becomes their mean)
            full = x[:math.prod(m.shape)].reshape(m.shape)
            m.owner._parameters[m.name] = full if param_dtype is None else full.astype(param_dtype)  # (not a Parameter)
        self.gathered = True

    def reshard(self) -> None:
        for m, block in zip(self.managed, self.blocks):
            m.owner._parameters[m.name] = block
        self.gathered = False

    @contextmanager
    def unsharded(self) -> Iterator[None]:
        """The whole parameters for one forward pass (gathered now unless ``unshard`` did it
        already), the blocks again after it: the next step's parameters are new blocks."""
        if not self.gathered:
            self.unshard()
        try:
            yield
        finally:
            self.reshard()


def fully_shard(module: Module, *, reshard_after_forward: bool = True,
                mp_policy: MixedPrecisionPolicy | None = None) -> Module:
    """Shard ``module``'s parameters (those no inner ``fully_shard`` took) over the process
    group's ranks, in place, and return it; its class becomes ``FSDP<Class>``. Rank 0's
    values are the ones kept (every rank starts from the same parameters)."""
    if not isinstance(module, Module):
        raise ArgumentTypeError(f"fully_shard: expected an fg.nn.Module, got {type(module).__name__}")
    if isinstance(module, FSDPModule):
        raise ArgumentValueError(f"fully_shard: {type(module).__name__} is already sharded")
    group, n, rank = _world()
    taken = {id(p) for m in module.modules() if isinstance(m, FSDPModule) for p in m.__dict__["_fsdp"].blocks}
    managed = []
    for owner in module.modules():
        if owner is not module and isinstance(owner, FSDPModule):
            continue
        for name, p in list(owner._parameters.items()):
            if p is None or id(p) in taken:
                continue
            whole = p.detach()
            if group is not None and n > 1:  # (rank 0's values, on the parameter's device)
                whole = asarray(group.broadcast(np, np.ascontiguousarray(whole.numpy()), 0).wait(), device=p.device)
            owner._parameters[name] = Parameter(block_of(whole, n, rank), requires_grad=p.requires_grad)
            managed.append(_Managed(owner, name, tuple(whole.shape), block_size(whole.size, n)))
            taken.add(id(owner._parameters[name]))
    cls = type(module)
    module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    module.__dict__["_fsdp"] = _State(managed, reshard_after_forward, mp_policy)
    return module


def _fsdp_states(module: Module) -> list[_State]:
    return [m.__dict__["_fsdp"] for m in module.modules() if isinstance(m, FSDPModule)]


def full_state_dict(module: Module) -> dict[str, Any]:
    """The whole, unsharded state dict (every rank gets it), keyed as the unsharded model's."""
    states = _fsdp_states(module)
    for state in states:
        with no_grad():
            state.unshard(policy=False)
    try:
        return {k: v.detach().clone() for k, v in module.state_dict().items()}
    finally:
        for state in states:
            state.reshard()


def load_full_state_dict(module: Module, state_dict: dict[str, Any]) -> None:
    """Load a whole state dict (``full_state_dict``'s, or the unsharded model's) into the
    sharded ``module``: each rank keeps its blocks."""
    _, n, rank = _world()
    names = {id(p): k for k, p in module.named_parameters()}
    for state in _fsdp_states(module):
        for m, block in zip(state.managed, state.blocks):
            key = names[id(block)]
            if key not in state_dict:
                raise ArgumentValueError(f"load_full_state_dict: the state dict has no {key!r}")
            whole = asarray(state_dict[key]).astype(block.dtype)
            if whole.size != math.prod(m.shape):
                raise ArgumentValueError(f"load_full_state_dict: {key!r} has {whole.size} elements, the "
                                         f"parameter {math.prod(m.shape)}")
            block._assign(block_of(whole, n, rank))
    rest = {k: v for k, v in state_dict.items() if k not in set(names.values())}
    if rest:
        module.load_state_dict(rest, strict=False)


def clip_grad_norm_(module: Module, max_norm: float, norm_type: float = 2.0) -> Any:
    """``fg.nn.utils.clip_grad_norm_`` over the whole, sharded gradients: the norm of every
    rank's blocks together (the padding's gradients are zeros)."""
    if norm_type != 2.0:
        raise ArgumentValueError(f"clip_grad_norm_: only the 2-norm is supported over shards, got {norm_type}")
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    local = sum(((g.astype(float64) ** 2).sum() for g in grads), asarray(0.0, dtype=float64))
    group, n, _ = _world()
    total = sqrt(bind(all_reduce_p, local, op="sum") if group is not None and n > 1 else local)
    scale = min(1.0, float(max_norm) / (float(total.item()) + 1e-6))
    if scale < 1.0:
        with no_grad():
            for p in module.parameters():
                if p.grad is not None:
                    p.grad = p.grad * scale
    return total

