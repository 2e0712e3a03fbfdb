"""``fg.nn.parallel``: data parallelism with PyTorch's semantics. ``DistributedDataParallel``
trains on a process group (``fg.distributed``), one process per device; ``DataParallel``
splits each batch over several devices in one process.

Each rank runs the whole model on its share of the batch. At construction rank 0's
parameters and buffers are copied to every rank. During ``loss.backward()`` each leaf's
gradient is complete as soon as the last operation using it has run back (the tape
reaches leaves early for this); a post-accumulate hook copies it into its bucket, and a
full bucket starts a non-blocking all-reduce while the backward pass goes on. Buckets are
launched in one order on every rank (the collectives must match); the last gradient waits
for them all and hands every parameter the average as its ``.grad``.
"""

from __future__ import annotations

import itertools
import sys
import time
import weakref
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import ops, tree
from ..array import Array, wrap_kernel_output
from ..backends import device, devices, process_group
from ..errors import DeviceMismatchError, DistributedError
from ..transforms import is_grad_enabled
from ..transforms.autodiff.graph import toposort
from ..transforms.autodiff.tape import AccumulateGrad
from .module import Module, functional_call

__all__ = ["DistributedDataParallel", "DDP", "DataParallel"]

FIRST_BUCKET_MB = 1.0  # PyTorch's: the first gradients to arrive start communicating sooner


class _Bucket:
    """Parameters whose gradients travel in one all-reduce, packed into one flat buffer."""

    def __init__(self, params: list[Any]) -> None:
        self.params = params
        self.offsets = [0, *itertools.accumulate(p.size for p in params)]
        first = params[0]
        self.device, self.xp = first.device, first.device.backend.xp
        self.send = self.xp.zeros(self.offsets[-1], first.dtype.np)
        self.left = 0
        self.work: Any = None
        self.results: list[Any] = []

    def result_buffer(self) -> Any:
        """Where the reduced gradients land: a buffer of an earlier step that no array uses
        any more (no reference left but this list's), else a fresh one. Reusing memory
        matters here: on a VM, an all-reduce into fresh pages costs about as much as the
        whole step (page faults under the MPI copy). Arrays stay immutable, since a buffer
        is reused only once nothing can see it."""
        for buf in self.results:
            if sys.getrefcount(buf) == 3:  # this list, the loop variable, getrefcount's argument
                return buf
        buf = self.xp.empty_like(self.send)
        if len(self.results) < 3:
            self.results.append(buf)
        return buf


class _Reducer:
    """The gradient buckets of one DistributedDataParallel and the state of one backward pass."""

    def __init__(self, group: Any, named: list[tuple[str, Any]], bucket_cap_mb: float, find_unused: bool) -> None:
        self.group, self.find_unused = group, find_unused
        self.names = {id(p): n for n, p in named}
        self.buckets: list[_Bucket] = []
        cap, size = min(FIRST_BUCKET_MB, bucket_cap_mb) * 2**20, 0
        current: list[Any] = []
        for _, p in reversed(named):  # gradients arrive roughly from the last layer to the first
            if current and (p.dtype, p.device) != (current[0].dtype, current[0].device):
                self.buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += p.size * p.dtype.itemsize
            if size >= cap:  # full (PyTorch's rule: a bucket closes once it reaches the cap)
                self.buckets.append(_Bucket(current))
                cap, current, size = bucket_cap_mb * 2**20, [], 0
        if current:
            self.buckets.append(_Bucket(current))
        self.where = {id(p): (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        self.armed = False
        self.ready: set[int] = set()
        self.used_here: set[int] = set()
        self.next_launch = 0
        self.wait_seconds = 0.0  # spent waiting for all-reduces to finish (the benchmark prints it)
        ref = weakref.ref(self)  # the hooks must not keep a discarded wrapper's buckets alive

        def ready(p: Any) -> None:
            reducer = ref()
            if reducer is not None:
                reducer.grad_ready(p)

        handles = [p.register_post_accumulate_grad_hook(ready) for _, p in named]
        weakref.finalize(self, lambda: [h.remove() for h in handles])

    def check_finished(self) -> None:
        """PyTorch's rule: a backward pass that reduced some gradients must have reduced all."""
        if self.armed and self.ready:
            missing = [self.names[id(p)] for b in self.buckets for p in b.params if id(p) not in self.ready]
            self.armed = False
            raise DistributedError(
                f"DistributedDataParallel: the last backward pass gave no gradient to {len(missing)} parameter(s) "
                f"({', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}), so no rank could finish reducing "
                "gradients. Pass find_unused_parameters=True if a step may leave parameters unused, or make every "
                "output take part in the loss")

    def arm(self, outputs: Any) -> None:
        """Expect one backward pass from ``outputs``."""
        self.armed, self.ready, self.next_launch = True, set(), 0
        for b in self.buckets:
            b.left, b.work = len(b.params), None
        if self.find_unused:
            roots = [a._autograd.grad_fn or a._autograd.accumulator for a in tree.leaves(outputs)
                     if isinstance(a, Array) and a._autograd is not None and a._autograd.requires_grad]
            nodes: list[Any] = toposort([r for r in roots if r is not None])
            reached = {id(n.variable) for n in nodes if isinstance(n, AccumulateGrad)}
            self.used_here = {id(p) for b in self.buckets for p in b.params if id(p) in reached}
            for b in self.buckets:
                for p in b.params:
                    if id(p) not in reached:
                        self.mark(p, None)

    def disarm(self) -> None:
        self.armed = False

    def grad_ready(self, p: Any) -> None:
        if self.armed:
            self.mark(p, p.grad)

    def mark(self, p: Any, grad: Any) -> None:
        if id(p) in self.ready:
            raise DistributedError(f"DistributedDataParallel: parameter {self.names[id(p)]} got a gradient twice in "
                                   "one step (a second backward through the same forward); reduce once per forward")
        self.ready.add(id(p))
        b, i = self.where[id(p)]
        lo, hi = b.offsets[i], b.offsets[i + 1]
        if grad is None:
            b.send[lo:hi] = 0
        else:  # divided by the world size on the way in (PyTorch's order: average, then sum)
            b.xp.divide(grad._data.reshape(-1), self.group.size, out=b.send[lo:hi])
        b.left -= 1
        while self.next_launch < len(self.buckets) and self.buckets[self.next_launch].left == 0:
            launch = self.buckets[self.next_launch]
            launch.work = self.group.all_reduce(launch.xp, launch.send, "sum", launch.result_buffer())
            self.next_launch += 1
        if self.next_launch == len(self.buckets):
            self.finish()
        else:
            for other in self.buckets[:self.next_launch]:  # MPI makes progress inside its calls
                other.work.is_completed()

    def finish(self) -> None:
        self.armed = False
        globally_used = None
        if self.find_unused:  # a parameter no rank used keeps its .grad, as in PyTorch
            flat = [1 if id(p) in self.used_here else 0 for b in self.buckets for p in b.params]
            xp = self.buckets[0].xp
            globally_used = iter(self.group.all_reduce(xp, xp.asarray(flat, dtype="int64"), "max").wait().tolist())
        start = time.perf_counter()
        results = [b.work.wait() for b in self.buckets]
        self.wait_seconds += time.perf_counter() - start
        for b, out in zip(self.buckets, results):
            whole = wrap_kernel_output(out, b.device)
            for i, p in enumerate(b.params):
                if globally_used is not None and not next(globally_used):
                    continue
                p.grad = whole[b.offsets[i]:b.offsets[i + 1]].reshape(tuple(p.shape))


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training: ``ddp(x)`` runs it, and ``backward``
    averages every gradient over the ranks, bucket by bucket while the pass goes on.

    ``bucket_cap_mb`` (25, PyTorch's) sizes the buckets (the first is 1 MiB);
    ``find_unused_parameters`` lets a step leave parameters without gradients;
    ``broadcast_buffers`` copies rank 0's buffers (BatchNorm's statistics) before each
    training forward. ``no_sync()`` accumulates gradients locally; the next step outside
    it reduces the sum. ``ddp.module`` is the model; ``ddp.state_dict()`` has PyTorch's
    ``module.`` prefix and ``load_state_dict`` takes keys with or without it.
    ``device_ids``, ``output_device``, ``dim``, ``check_reduction``, ``gradient_as_bucket_view``
    and ``static_graph`` are PyTorch's and change nothing here: the model runs where its
    parameters are, and gradients are always views of their bucket's result."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float = 25.0,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, init_sync: bool = True) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an fg.nn.Module, got {type(module).__name__}")
        if process_group is not None:
            raise DistributedError("DistributedDataParallel: only the whole world is a process group here "
                                   "(process_group=None); sub-groups are not supported")
        group = _group()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        named, seen = [], set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                named.append((name, p))
        _check_same_model(group, named)
        if init_sync:
            for _, p in module.named_parameters():
                p.data = _broadcast(group, p)
            self._sync_buffers(group)
        self._reducer = _Reducer(group, named, float(bucket_cap_mb), find_unused_parameters)

    def _sync_buffers(self, group: Any) -> None:
        for name, buf in list(self.module.named_buffers()):
            owner, _, attr = name.rpartition(".")
            setattr(self.module.get_submodule(owner) if owner else self.module, attr, _broadcast(group, buf))

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The module's output; in a training step its backward pass then averages gradients."""
        return self._step(self.module, inputs, kwargs)

    def _step(self, run: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self._reducer.check_finished()
        group = _group()
        if self.broadcast_buffers and self.training and group.size > 1:
            self._sync_buffers(group)
        out = run(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._reducer.arm(out)
        else:
            self._reducer.disarm()
        return out

    def __fg_compile__(self, **options: Any) -> Any:
        """``fg.compile(ddp)``: the wrapped module compiled, with the reduction around it, so
        every call prepares its backward pass as an uncompiled call does."""
        return _CompiledDDP(self, self.module.__fg_compile__(**options))

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes of forwards run inside keep their gradients local (they add up)."""
        previous, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    @property
    def communication_wait_seconds(self) -> float:
        """Seconds this process has spent waiting for gradient all-reduces to finish."""
        return self._reducer.wait_seconds

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        """Keys with PyTorch's ``module.`` prefix, or the bare model's keys."""
        if state_dict and not any(k.startswith("module.") for k in state_dict):
            state_dict = {f"module.{k}": v for k, v in state_dict.items()}
        return super().load_state_dict(state_dict, strict)


DDP = DistributedDataParallel


class _CompiledDDP:
    """``fg.compile(ddp)``: calls run the compiled module between DistributedDataParallel's
    steps; every other attribute is the wrapper's."""

    def __init__(self, ddp: DistributedDataParallel, compiled: Any) -> None:
        self._ddp, self._compiled = ddp, compiled

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self._ddp._step(self._compiled, inputs, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ddp, name)


class DataParallel(Module):
    """PyTorch's single-process data parallelism over several devices: each call splits the
    array inputs along ``dim`` into one chunk per device, runs the module on device 0 and a
    copy of its parameters on each other device, and gathers the outputs on
    ``output_device``. The copies are moves the tape records, so ``backward`` sums every
    device's gradient into the parameters. As in PyTorch, buffer updates (BatchNorm's
    statistics) come from device 0's chunk, and with no GPU (``device_ids`` empty) it is
    the module itself. DistributedDataParallel is faster: one process per device, no
    gathering on device 0.

    Example:
        >>> model = fg.nn.DataParallel(fg.nn.Linear(2, 1))  # (no GPU: the module itself on the CPU)
        >>> model(fg.ones((4, 2))).shape
        (4, 1)
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected an fg.nn.Module, got {type(module).__name__}")
        self.module = module
        if device_ids is None:
            device_ids = [d for d in devices() if d.kind == "gpu"]
        self.device_ids = [device(f"gpu:{d}" if isinstance(d, int) else d) for d in device_ids]
        self.output_device = (device(f"gpu:{output_device}" if isinstance(output_device, int) else output_device)
                              if output_device is not None else (self.device_ids[0] if self.device_ids else None))
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The module on every device's chunk of the inputs, outputs gathered on ``output_device``."""
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        first = self.device_ids[0]
        state: dict[str, Array] = dict(self.module.named_parameters())
        state.update(self.module.named_buffers())
        for name, value in state.items():
            if value.device != first:
                raise DeviceMismatchError(f"DataParallel: the module's parameters and buffers must be on {first} "
                                          f"(device_ids[0]), but {name} is on {value.device}; call "
                                          f"module.to({str(first)!r}) first")
        pieces = _scatter((inputs, kwargs), len(self.device_ids), self.dim)
        outputs = []
        for k, (args, kw) in enumerate(pieces):
            dev = self.device_ids[k]
            args, kw = tree.map(lambda a, dev=dev: a.to(dev) if isinstance(a, Array) else a, (args, kw))
            if k == 0:
                outputs.append(self.module(*args, **kw))
            else:  # a replica: the parameters moved (recorded), the module's own left alone
                outputs.append(functional_call(self.module, {n: v.to(dev) for n, v in state.items()}, *args, **kw))
        return _gather(outputs, self.output_device, self.dim)


def _scatter(tree_: Any, n: int, dim: int) -> list[Any]:
    """Up to ``n`` copies of ``tree_`` whose arrays hold consecutive chunks along ``dim``
    (``torch.chunk``'s sizes); other leaves are repeated."""
    leaves, treedef = tree.flatten(tree_)
    sizes = [a.shape[dim] for a in leaves if isinstance(a, Array) and a.ndim > dim]
    if not sizes:
        return [tree_]
    step = -(-sizes[0] // n)
    chunks = max(1, -(-sizes[0] // step)) if sizes[0] else 1
    return [tree.unflatten(treedef, [a[(slice(None),) * dim + (slice(k * step, (k + 1) * step),)]
                                     if isinstance(a, Array) and a.ndim > dim else a for a in leaves])
            for k in range(chunks)]


def _gather(outputs: list[Any], dst: Any, dim: int) -> Any:
    """The outputs' arrays moved to ``dst`` and joined along ``dim`` (0-d ones stacked)."""
    flat = [tree.flatten(o) for o in outputs]
    treedef = flat[0][1]
    joined = []
    for parts in zip(*(leaves for leaves, _ in flat)):
        if isinstance(parts[0], Array):
            moved = [p.to(dst) for p in parts]
            joined.append(ops.stack(moved) if parts[0].ndim == 0 else ops.concatenate(moved, axis=dim))
        else:
            joined.append(parts[0])
    return tree.unflatten(treedef, joined)


def _group() -> Any:
    try:
        return process_group.current()
    except DistributedError as exc:
        raise DistributedError("DistributedDataParallel: call fg.distributed.init_process_group() first (and start "
                               "the job with `python -m funcgrad.distributed.run -n N script.py`)") from exc


def _broadcast(group: Any, a: Any) -> Array:
    xp = a.device.backend.xp
    return wrap_kernel_output(group.broadcast(xp, a._data, 0).wait(), a.device)


def _check_same_model(group: Any, named: list[tuple[str, Any]]) -> None:
    """Every rank must wrap the same parameters (shapes and dtypes), or the buckets would not match."""
    signature = zlib.crc32(repr([(tuple(p.shape), p.dtype.name) for _, p in named]).encode())
    mine = np.array([len(named), signature], dtype=np.int64)
    every = group.all_gather(np, mine).wait()
    if not (every == mine).all():
        raise DistributedError(f"DistributedDataParallel: the ranks wrap different models (rank {group.rank} has "
                               f"{len(named)} parameters; per rank: {every[:, 0].tolist()}, or their shapes differ)")
