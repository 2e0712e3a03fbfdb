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

With ``reshard_after_forward`` (the default) what the backward rules save of a gathered
parameter is kept as its place in the gathered memory (``saved_tensors_hooks``), so the
memory is freed when the forward pass ends, and the backward pass gathers the parameter
again (``_Forward``). Gathers are started a module ahead, forward and backward (prefetch).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from .. import tree as _tree
from ..array import Array, ArrayBase
from ..backends import process_group
from ..dtypes import float64
from ..errors import ArgumentTypeError, ArgumentValueError
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops import asarray, concatenate, sqrt, zeros
from ..primitives.axes import all_gather_p
from ..primitives.collective import all_reduce_p
from ..primitives.core import bind, current_interpreter
from ..sharding import shared_over
from ..transforms import is_grad_enabled, no_grad
from ..transforms.autodiff.tape import TAPE, saved_tensors_hooks

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
    padded = concatenate([flat, zeros((size * n - flat.shape[0],), dtype=flat.dtype, device=flat.device)])
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
        """Whether the next forward passes free the gathered parameters at their end, and the
        backward pass gathers them again (``True``), or the backward graph keeps them."""
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
        self.forward: _Forward | None = None
        self.after: _State | None = None  # the module whose forward pass came next, the last time
        self.prefetched: dict[int, tuple[Any, Any]] = {}  # parameter -> (block data, all-gather started)

    def gather(self, i: int, block: Any, policy: bool) -> tuple[Any, Any]:
        """Parameter ``i`` whole from ``block``: ``(gathered, whole)``, what the all-gather
        gave (``None`` on one rank) and the parameter (``whole``). An all-gather the module
        before this one started (``prefetch``) is finished here and recorded as this one."""
        group, n, _ = _world()
        x = gathered = self.to_reduce(block, policy)
        if group is not None and n > 1:
            x = shared_over(n)(x)  # (the reduce-scatter's sum over ranks becomes their mean)
            params = {"axis_name": "fsdp", "size": n, "group": group, "axis": 0, "tiled": True}
            started = self.prefetched.pop(i, None)
            if started is not None and started[0] is block._data and policy and current_interpreter.get() is None:
                x = gathered = TAPE.record_known(all_gather_p, (x,), params, started[1].wait())
            else:
                if started is not None:  # (the block changed since: finish that all-gather, unused)
                    started[1].wait()
                x = gathered = bind(all_gather_p, x, **params)
        return gathered if n > 1 else None, self.whole(i, x, policy)

    def prefetch(self) -> None:
        """Start gathering the parameters of the module whose forward pass came after this
        one's the last time (FSDP2's forward prefetch), in the reduce dtype."""
        after = self.after
        if after is None or after.prefetched:
            return
        group, _, _ = _world()
        with no_grad():
            for i, block in enumerate(after.blocks):
                x = after.to_reduce(block, True)
                after.prefetched[i] = (block._data, _all_gather_started(group, x))

    def to_reduce(self, block: Any, policy: bool) -> Any:
        """The block in the reduce dtype, in which it is gathered, so its gradient is
        reduce-scattered in it (a cast after the gather rounds as one before it)."""
        reduce_dtype = self.mp.reduce_dtype if self.mp and policy else None
        return block if reduce_dtype is None else block.astype(reduce_dtype)

    def whole(self, i: int, gathered: Any, policy: bool) -> Any:
        """Parameter ``i`` from its gathered blocks, in the compute dtype (``policy=False``: its own)."""
        shape = self.managed[i].shape
        numel = math.prod(shape)
        full = (gathered if gathered.shape[0] == numel else gathered[:numel]).reshape(shape)  # (the padding cut off)
        param_dtype = self.mp.param_dtype if self.mp and policy else None
        return full if param_dtype is None else full.astype(param_dtype)

    def unshard(self, policy: bool = True) -> None:
        """Every parameter whole (``gather``), in place of its block (not a Parameter)."""
        _, n, _ = _world()
        # (the tape's saved values only: a traced forward pass's are the compiled program's)
        resharding = (self.reshard_after_forward and policy and n > 1 and is_grad_enabled()
                      and current_interpreter.get() is None)
        self.forward = _Forward(self) if resharding else None
        for i, (m, block) in enumerate(zip(self.managed, self.blocks)):
            gathered, full = self.gather(i, block, policy)
            if self.forward is not None:
                self.forward.watch(i, gathered, full)
            m.owner._parameters[m.name] = full
        self.gathered = True

    def reshard(self) -> None:
        for m, block in zip(self.managed, self.blocks):
            m.owner._parameters[m.name] = block
        if self.forward is not None:
            self.forward.close()
            self.forward = None
        self.gathered = False

    @contextmanager
    def unsharded(self) -> Iterator[None]:
        """The whole parameters for one forward pass (gathered now unless ``unshard`` did it
        already), the blocks again after it: the next step's parameters are new blocks.
        Resharding after forward, what the backward pass saves of them is gathered again
        when it needs it (``_Forward``)."""
        if not _ACTIVE:  # an outermost forward pass: the order starts again
            _FORWARDS.clear()
        if _LAST and _LAST[0] is not self:
            _LAST[0].after = self
        _LAST[:] = [self]
        if current_interpreter.get() is None:
            self.prefetch()
        if not self.gathered:
            self.unshard()
        _ACTIVE.append(self)
        try:
            with saved_tensors_hooks(_pack, _unpack) if self.forward is not None else nullcontext():
                yield
        finally:
            _ACTIVE.remove(self)
            if not _ACTIVE:
                _LAST.clear()
            self.reshard()


# the buffers of parameters gathered for a forward pass that reshards after it:
# id(buffer) -> (that pass, parameter index, stage: 0 what the all-gather gave, 1 the whole parameter)
_GATHERED: dict[int, tuple[_Forward, int, int]] = {}


class _Forward:
    """One forward pass of a module that reshards after it. What its backward rules save
    of a gathered parameter is kept as where it lies in the gathered memory
    (``_Resharded``), so that memory is freed at the forward pass's end. The backward pass
    gathers the parameter again from the block this pass used when a rule first needs
    it, starts gathering what the forward pass before this one saved (the module the
    backward pass reaches next), and lets a parameter go when its gradient is complete
    (PyTorch FSDP2's resharding and backward prefetch)."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.blocks = [Array._alias(b) for b in state.blocks]  # (an optimizer step re-points the blocks)
        self.again: dict[int, tuple[Any, Any]] = {}
        self.started: dict[int, Any] = {}  # all-gathers in flight
        self.saved: set[int] = set()  # the parameters the backward rules saved
        self.buffers: list[int] = []
        self.metas: list[Any] = []
        _FORWARDS.append(weakref.ref(self))

    def watch(self, i: int, gathered: Any, full: Any) -> None:
        for stage, a in enumerate((gathered, full)):
            key = id(a.buffer)
            if key not in _GATHERED:
                _GATHERED[key] = (self, i, stage)
                self.buffers.append(key)
        if gathered.requires_grad:  # its gradient complete: no rule needs the parameter again
            gathered.register_hook(functools.partial(_release, weakref.ref(self), i))
            self.metas.append(gathered._autograd)  # (the graph keeps its hooks only while it lives)

    def release(self, i: int) -> None:
        self.again.pop(i, None)

    def close(self) -> None:
        for key in self.buffers:
            _GATHERED.pop(key, None)
        self.buffers = []

    def start(self, i: int) -> None:
        if i not in self.again and i not in self.started:
            with no_grad():
                x = self.state.to_reduce(self.blocks[i], True)
            self.started[i] = _all_gather_started(_world()[0], x)

    def value(self, i: int, stage: int) -> Any:
        if i not in self.again:
            self.start(i)
            before = self.before()
            if before is not None:  # (every rank starts the same all-gathers in the same order)
                for j in sorted(before.saved):
                    before.start(j)
            gathered = self.started.pop(i).wait()
            with no_grad():
                self.again[i] = (gathered, self.state.whole(i, gathered, True))
        return self.again[i][stage]

    def before(self) -> _Forward | None:
        """The forward pass of a resharding module just before this one, still held by a graph."""
        alive = [f for f in (ref() for ref in _FORWARDS) if f is not None]
        k = next((k for k, f in enumerate(alive) if f is self), 0)
        return alive[k - 1] if k > 0 else None


_ACTIVE: list[_State] = []  # the modules whose forward passes are running
_LAST: list[_State] = []  # the module whose forward pass started last, in the running outermost one

# the resharding forward passes of the last outermost one, in the order they ran (weakly: a graph holds them)
_FORWARDS: list[weakref.ref[_Forward]] = []


def _all_gather_started(group: Any, x: Any) -> Any:
    """An all-gather of ``x``'s blocks started (a ``Work``), whose result is the gathered
    array: the blocks one after another, as ``fg.lax.all_gather(tiled=True)`` gives them."""
    device = x.device
    return group.all_gather(device.backend.xp, x._data).then(
        lambda raw: Array._from_kernel(raw.reshape(-1), device))


def _release(forward: weakref.ref[_Forward], i: int, _: Any) -> None:
    """A gathered parameter's gradient hook (holding its forward pass weakly, as the graph holds it)."""
    f = forward()
    if f is not None:
        f.release(i)


class _Resharded:
    """A saved view of a gathered parameter: which, and its layout in the gathered memory."""

    __slots__ = ("forward", "index", "stage", "layout")

    def __init__(self, forward: _Forward, index: int, stage: int, layout: Any) -> None:
        self.forward, self.index, self.stage, self.layout = forward, index, stage, layout


def _pack(a: Any) -> Any:
    where = _GATHERED.get(id(a._buf)) if getattr(a, "_buf", None) is not None else None
    if where is None:
        return a
    where[0].saved.add(where[1])
    return _Resharded(*where, a._layout_obj())


def _unpack(saved: Any) -> Any:
    if saved.__class__ is not _Resharded:
        return saved
    return Array._view_of(saved.forward.value(saved.index, saved.stage), saved.layout)


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
            if group is not None and n > 1:  # (rank 0's values, moved where the parameter lies: NCCL's GPU buffers)
                xp = p.device.backend.xp
                whole = Array._from_kernel(group.broadcast(xp, xp.ascontiguousarray(whole._data), 0).wait(), p.device)
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
            whole = asarray(state_dict[key]).to(block.device).astype(block.dtype)
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
    zero = asarray(0.0, dtype=float64, device=grads[0].device if grads else None)
    local = sum(((g.astype(float64) ** 2).sum() for g in grads), zero)
    group, n, _ = _world()
    total = sqrt(bind(all_reduce_p, local, op="sum") if group is not None and n > 1 else local)
    scale = min(1.0, float(max_norm) / (float(total.item()) + 1e-6))
    if scale < 1.0:
        with no_grad():
            for p in module.parameters():
                if p.grad is not None:
                    p.grad = p.grad * scale
    return total

