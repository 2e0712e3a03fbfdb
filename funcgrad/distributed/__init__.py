"""``fg.distributed``: process groups and collectives on an existing engine: MPI through
``mpi4py`` on CPUs, NCCL through ``cupy.cuda.nccl`` on GPUs (``docs/distributed.md``).

Arrays are immutable, so a collective returns its result as a new array
(``x = dist.all_reduce(x)``) where PyTorch writes into its argument; a call that throws
that result away (PyTorch's spelling) raises ``DistributedError`` before it communicates,
on every rank alike. ``all_reduce`` is a primitive: it works inside ``fg.grad``,
``fg.vmap`` and ``fg.compile``. Every wait has the group's ``timeout``, and a rank that
dies of an uncaught exception aborts the job, so the others never hang.
"""

from __future__ import annotations

import bisect
import datetime
import dis
import os
import pickle
import sys
import time
import traceback
from typing import Any

import numpy as np

from ..array import Array, ArrayBase, wrap_kernel_output
from ..backends import cupy_backend, process_group
from ..backends.process_group import DEFAULT_TIMEOUT, Work
from ..errors import ArgumentTypeError, ArgumentValueError, DistributedError, DistributedTimeoutError, DTypeError
from ..ops import asarray, concatenate, stack
from ..primitives.collective import all_reduce_p
from ..primitives.core import bind
from .launcher_env import LAUNCHER_RANK

__all__ = ["init_process_group", "is_initialized", "get_rank", "get_world_size", "get_backend", "barrier",
           "destroy_process_group", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "send", "recv",
           "isend", "irecv", "reduce", "gather", "scatter", "all_gather_into_tensor", "reduce_scatter_tensor",
           "all_gather_object", "broadcast_object_list", "ReduceOp", "group", "Work", "DistributedError",
           "DistributedTimeoutError", "is_available"]


class group:  # noqa: N801  (PyTorch's spelling: dist.group.WORLD)
    """The process groups: only the whole world exists (``WORLD``, also spelled ``None``).

    Example:
        >>> fg.distributed.group.WORLD is None  # (dist.all_reduce(x, group=dist.group.WORLD) is the default group)
        True
    """

    WORLD = None


def _world(given: Any, name: str) -> None:
    if given is not None:
        raise ArgumentValueError(f"dist.{name}: only the whole world is a process group here (group=None or "
                                 "dist.group.WORLD); sub-groups (new_group) are not supported")


class ReduceOp:
    """PyTorch's reduction names for ``all_reduce`` and ``reduce_scatter``.

    Example:
        >>> fg.distributed.ReduceOp.SUM, fg.distributed.ReduceOp.AVG
        ('sum', 'mean')
    """

    SUM, AVG, MAX, MIN = "sum", "mean", "max", "min"


def is_available() -> bool:
    """Whether an engine is installed (``mpi4py``; the ``distributed`` extra).

    Example:
        >>> if fg.distributed.is_available():  # (mpi4py installed: launch with python -m funcgrad.distributed.run)
        ...     pass
    """
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _seconds(timeout: Any) -> float:
    if timeout is None:
        return DEFAULT_TIMEOUT
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if not seconds > 0:
        raise ArgumentValueError(f"init_process_group: timeout must be positive, got {timeout!r}")
    return seconds


def _launched_by_mpi() -> bool:
    return any(v in os.environ for v in LAUNCHER_RANK)


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("fg.distributed needs mpi4py and an MPI: pip install 'funcgrad[distributed]'") from exc
    return MPI


def init_process_group(backend: str = "mpi", init_method: str | None = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the process group. ``"mpi"``: rank and size come from the MPI launcher
    (``python -m funcgrad.distributed.run -n 2 train.py``, or ``mpiexec``). ``"nccl"``: GPU
    collectives; the ranks meet through MPI when an MPI launcher started them, else through
    ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` as in PyTorch (or
    ``init_method="tcp://host:port"``). ``timeout`` (seconds or a ``timedelta``; 30 minutes
    by default) bounds every wait. ``group_name``, ``pg_options`` and ``device_id`` are
    PyTorch's and change nothing here.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.is_initialized(), dist.get_world_size(), dist.get_backend()  # (after init_process_group("mpi"))
        (True, 2, 'mpi')
    """
    seconds = _seconds(timeout)
    if store is not None:
        raise ArgumentValueError("init_process_group: store= is not supported; the ranks meet through MPI, or "
                                 "MASTER_ADDR/MASTER_PORT (init_method='env://' or 'tcp://host:port')")
    if init_method is not None and init_method != "env://":
        if not init_method.startswith("tcp://") or backend != "nccl":
            raise ArgumentValueError(f"init_process_group: init_method {init_method!r} is not supported; the 'mpi' "
                                     "backend meets through its launcher, 'nccl' through 'env://' or 'tcp://host:port'")
        host, _, port = init_method[len("tcp://"):].rpartition(":")
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = host, port
    if backend == "mpi":
        mpi = _mpi()
        new: Any = process_group.MPIGroup(mpi.COMM_WORLD, mpi, seconds)
        _check_size(new.size, new.rank, world_size, rank)
    elif backend == "nccl":
        new = _nccl_group(world_size, rank, seconds)
    else:
        raise ArgumentValueError(f"init_process_group: backend must be 'mpi' (CPU, through mpi4py) or 'nccl' (GPU, "
                                 f"through CuPy), got {backend!r}")
    process_group.join(new)
    if new.size > 1:
        _abort_on_uncaught()


def _check_size(size: int, rank: int, want_size: int, want_rank: int) -> None:
    env = os.environ.get("WORLD_SIZE")
    want_size = want_size if want_size > 0 else (int(env) if env else size)
    if want_size != size or (want_rank >= 0 and want_rank != rank):
        raise DistributedError(
            f"init_process_group: MPI started {size} process(es) (this is rank {rank}) but {want_size} were asked for "
            f"(world_size or WORLD_SIZE); start the job with `python -m funcgrad.distributed.run -n {want_size} "
            "script.py` (or mpiexec -n ...)")


def _nccl_group(world_size: int, rank: int, seconds: float) -> Any:
    cupy = cupy_backend.import_cupy()
    nccl = cupy.cuda.nccl
    if _launched_by_mpi():
        comm = _mpi().COMM_WORLD
        rank, size = int(comm.Get_rank()), int(comm.Get_size())
        uid = comm.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
    else:
        rank = rank if rank >= 0 else int(os.environ.get("RANK", 0))
        size = world_size if world_size > 0 else int(os.environ.get("WORLD_SIZE", 1))
        mine = process_group.nccl_id_bytes(nccl.get_unique_id()) if rank == 0 else None
        uid = process_group.nccl_id(process_group.exchange_id(mine, rank, size, seconds))
    return process_group.NCCLGroup(cupy, rank, size, uid, seconds)


ABORT_GRACE_S = 0.5  # how long a failing rank waits for its last output to reach the launcher
_HOOKED: list[Any] = []  # the excepthook installed, once per process


def _abort_on_uncaught() -> None:
    """A rank that dies of an uncaught exception prints it and aborts the whole job
    (MPI_Abort: the launcher ends the other ranks), so they do not wait on it forever."""
    if _HOOKED:
        return
    previous = sys.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        joined = process_group.joined()
        if joined is None or joined.size == 1:
            previous(kind, value, tb)
            return
        sys.stderr.write(f"fg.distributed: rank {joined.rank} of {joined.size} failed; aborting the job\n")
        traceback.print_exception(kind, value, tb)
        sys.stderr.flush()
        sys.stdout.flush()
        # MPI_Abort makes the launcher kill every rank at once, and output still in its pipes
        # is lost: give it a moment to forward what this rank just wrote
        time.sleep(ABORT_GRACE_S)
        joined.abort(1)

    sys.excepthook = hook
    _HOOKED.append(hook)


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not).

    Example:
        >>> rank = fg.distributed.get_rank() if fg.distributed.is_initialized() else 0
        >>> 0 <= rank < fg.distributed.get_world_size()
        True
    """
    return process_group.joined() is not None


def get_rank() -> int:
    """This process's rank in the group (outside one, ``RANK`` or 0).

    Example:
        >>> 0 <= fg.distributed.get_rank() < fg.distributed.get_world_size()
        True
    """
    return process_group.current().rank if is_initialized() else int(os.environ.get("RANK", 0))


def get_world_size() -> int:
    """How many processes the group holds (outside one, ``WORLD_SIZE`` or 1).

    Example:
        >>> fg.distributed.get_world_size() >= 1
        True
    """
    return process_group.current().size if is_initialized() else int(os.environ.get("WORLD_SIZE", 1))


def get_backend() -> str:
    """``"mpi"`` or ``"nccl"``.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.get_backend()
        'mpi'
    """
    return str(process_group.current().backend)


def barrier(async_op: bool = False) -> Work | None:
    """Wait until every process reaches this point.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.barrier()  # (returns once both ranks have called it)
    """
    work = process_group.current().barrier()
    return work if async_op else work.wait()


def destroy_process_group() -> None:
    """Leave the group (MPI itself finalizes when the process exits).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.is_initialized()  # (until destroy_process_group())
        True
    """
    process_group.leave()


# ---- PyTorch's spelling: a result thrown away ----------------------------------------------

_NEXT_OP: dict[Any, tuple[list[int], list[str]]] = {}


def _check_used(name: str, fix: str) -> None:
    """Refuse a call whose result the caller throws away (``dist.all_reduce(t)`` as a
    statement): in PyTorch it changes ``t``, here it would do nothing. Read from the
    caller's bytecode: the instruction after the call pops its value."""
    frame = sys._getframe(2)
    code = frame.f_code
    table = _NEXT_OP.get(code)
    if table is None:
        instructions = list(dis.get_instructions(code))
        table = _NEXT_OP[code] = ([i.offset for i in instructions], [i.opname for i in instructions])
    offsets, names = table
    k = bisect.bisect_right(offsets, frame.f_lasti)
    if k < len(names) and names[k] == "POP_TOP":
        raise DistributedError(f"dist.{name}(...) returns its result and leaves its argument unchanged (arrays are "
                               f"immutable; PyTorch writes in place): write {fix}")


# ---- collectives ---------------------------------------------------------------------------

def _array(x: Any, name: str) -> Any:
    if isinstance(x, ArrayBase):
        return x
    if isinstance(x, (list, tuple)):
        raise ArgumentTypeError(f"dist.{name}: expected an array, got a {type(x).__name__}")
    return asarray(x)


def _raw(x: Any, name: str) -> tuple[Any, Any]:
    """The backend module of ``x`` and its raw buffer (the group makes it contiguous)."""
    if not isinstance(x, Array):
        raise DistributedError(f"dist.{name} runs on concrete arrays; under fg.grad, fg.vmap or fg.compile only "
                               "dist.all_reduce is part of the program (call the others outside the transform)")
    return x.device.backend.xp, x._data


def _wrap(raw: Any, like: Array) -> Array:
    return wrap_kernel_output(raw, like.device)


def _op(op: Any, name: str, x: Any = None) -> str:
    if not isinstance(op, str) or op not in process_group.OPS:
        raise ArgumentValueError(f"dist.{name}: op must be one of {list(process_group.OPS)} (or dist.ReduceOp.SUM, "
                                 f"...), got {op!r}")
    if x is not None and op in ("max", "min") and x.dtype.kind == "c":
        raise DTypeError(f"dist.{name}({op}): complex numbers have no order; got {x.dtype}")
    return str(op)


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Any:
    """``tensor`` combined over every rank (``sum``, ``mean``, ``max`` or ``min``), as a new
    array; with ``async_op=True`` a ``Work`` whose ``wait()`` returns it. Differentiable,
    and usable inside ``fg.grad``, ``fg.vmap`` and ``fg.compile``.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> x = fg.ones(2) * (rank + 1)
        >>> dist.all_reduce(x).tolist(), dist.all_reduce(x, "max").tolist()
        ([3.0, 3.0], [2.0, 2.0])
    """
    _world(group, "all_reduce")
    _check_used("all_reduce", "`t = dist.all_reduce(t)`")
    x, op = _array(tensor, "all_reduce"), _op(op, "all_reduce")
    if not async_op:
        return bind(all_reduce_p, x, op=op)
    if not isinstance(x, Array):
        raise DistributedError("dist.all_reduce: async_op=True needs a concrete array (under a transform, the "
                               "collective is part of the program: call it without async_op)")
    all_reduce_p.abstract_eval(x.aval, op=op)
    xp, raw = _raw(x, "all_reduce")
    process_group.check_same(process_group.current(), raw, f"dist.all_reduce({op})", f"op={op}")
    return process_group.current().all_reduce(xp, raw, op).then(lambda out: _wrap(out.reshape(raw.shape), x))


def broadcast(tensor: Any, src: int = 0, group: Any = None, async_op: bool = False) -> Any:
    """Rank ``src``'s ``tensor`` on every rank, as a new array (every rank passes one of the
    same shape and dtype).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.broadcast(fg.asarray([1.0, 2.0]) * (rank + 1), src=0).tolist()
        [1.0, 2.0]
    """
    _world(group, "broadcast")
    _check_used("broadcast", "`t = dist.broadcast(t, src)`")
    x = _array(tensor, "broadcast")
    _check_rank(src, "broadcast", "src")
    xp, raw = _raw(x, "broadcast")
    process_group.check_same(process_group.current(), raw, "dist.broadcast", f"src={int(src)}")
    work = process_group.current().broadcast(xp, raw, src).then(lambda out: _wrap(out, x))
    return work if async_op else work.wait()


def all_gather(tensor_list: Any, tensor: Any = None, group: Any = None, async_op: bool = False) -> Any:
    """Every rank's array (all of one shape and dtype), in rank order: ``dist.all_gather(x)``
    returns the list; PyTorch's ``dist.all_gather(tensor_list, x)`` fills ``tensor_list``.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> [a.tolist() for a in dist.all_gather(fg.asarray([float(rank)]))]
        [[0.0], [1.0]]
    """
    _world(group, "all_gather")
    into = tensor_list if tensor is not None else None
    x = _array(tensor if tensor is not None else tensor_list, "all_gather")
    group_ = process_group.current()
    if into is not None and (not isinstance(into, list) or len(into) != group_.size):
        raise ArgumentValueError(f"dist.all_gather: tensor_list must be a list of {group_.size} arrays (one per rank)")
    xp, raw = _raw(x, "all_gather")
    process_group.check_same(group_, raw, "dist.all_gather")
    work = group_.all_gather(xp, raw).then(lambda out: _rows(out, x, into))
    return work if async_op else work.wait()


def _rows(out: Any, like: Array, into: list[Any] | None) -> list[Array] | None:
    """A gathered (world, ...) buffer as one array per rank, also put in ``into`` (PyTorch's list)."""
    if out is None:
        return None
    got = [_wrap(out[r].copy(), like) for r in range(out.shape[0])]
    if into is not None:
        into[:] = got
    return got


def reduce_scatter(input_list: Any, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Any:
    """Rank ``r`` gets block ``r`` of the inputs combined over every rank: ``input_list`` is a
    list of one array per rank (or one array whose first axis has one entry per rank).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> blocks = [fg.asarray([1.0]) * (rank + 1), fg.asarray([10.0]) * (rank + 1)]
        >>> dist.reduce_scatter(blocks).tolist() == [[3.0], [30.0]][rank]
        True
    """
    _world(group, "reduce_scatter")
    _check_used("reduce_scatter", "`out = dist.reduce_scatter(input_list)`")
    group_ = process_group.current()
    if isinstance(op, (list, tuple)):
        raise ArgumentValueError("dist.reduce_scatter(output, input_list) is PyTorch's spelling; here the result is "
                                 "returned: `out = dist.reduce_scatter(input_list, op)`")
    if isinstance(input_list, (list, tuple)):
        if len(input_list) != group_.size:
            raise ArgumentValueError(f"dist.reduce_scatter: pass one array per rank ({group_.size}), as a list; "
                                     f"got {len(input_list)}")
        x = stack([_array(t, "reduce_scatter") for t in input_list])
    else:
        x = _array(input_list, "reduce_scatter")
        if x.ndim == 0 or x.shape[0] != group_.size:
            raise ArgumentValueError(f"dist.reduce_scatter: the input's first axis must have one entry per rank "
                                     f"({group_.size}), got shape {tuple(x.shape)}")
    op = _op(op, "reduce_scatter", x)
    xp, raw = _raw(x, "reduce_scatter")
    process_group.check_same(group_, raw, f"dist.reduce_scatter({op})")
    work = group_.reduce_scatter(xp, raw, op).then(lambda out: _wrap(out, x))
    return work if async_op else work.wait()


def reduce(tensor: Any, dst: int = 0, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Any:
    """``tensor`` combined over every rank, on rank ``dst``; the other ranks get their own
    ``tensor`` back (PyTorch leaves theirs as it was).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> x = fg.ones(2) * (rank + 1)
        >>> dist.reduce(x, dst=0).tolist() == [[3.0, 3.0], [2.0, 2.0]][rank]  # (rank 1 keeps its own)
        True
    """
    _world(group, "reduce")
    _check_used("reduce", "`t = dist.reduce(t, dst)`")
    x = _array(tensor, "reduce")
    op = _op(op, "reduce", x)
    _check_rank(dst, "reduce", "dst")
    group_ = process_group.current()
    xp, raw = _raw(x, "reduce")
    process_group.check_same(group_, raw, f"dist.reduce({op})")
    work = group_.reduce(xp, raw, op, int(dst)).then(lambda out: x if out is None else _wrap(out, x))
    return work if async_op else work.wait()


def gather(tensor: Any, gather_list: Any = None, dst: int = 0, group: Any = None, async_op: bool = False) -> Any:
    """Every rank's ``tensor``, in rank order, on rank ``dst`` (a list there, ``None`` on the
    others); PyTorch's ``gather_list`` argument, given on ``dst``, is filled too.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> got = dist.gather(fg.asarray([float(rank)]), dst=0)
        >>> got is None if rank == 1 else [a.tolist() for a in got] == [[0.0], [1.0]]
        True
    """
    _world(group, "gather")
    x = _array(tensor, "gather")
    _check_rank(dst, "gather", "dst")
    group_ = process_group.current()
    if gather_list is not None and (not isinstance(gather_list, list) or len(gather_list) != group_.size):
        raise ArgumentValueError(f"dist.gather: gather_list must be a list of {group_.size} arrays (one per rank)")
    xp, raw = _raw(x, "gather")
    process_group.check_same(group_, raw, "dist.gather")
    work = group_.gather(xp, raw, int(dst)).then(lambda out: _rows(out, x, gather_list))
    return work if async_op else work.wait()


def scatter(tensor: Any, scatter_list: Any = None, src: int = 0, group: Any = None, async_op: bool = False) -> Any:
    """Rank ``r`` gets ``scatter_list[r]`` from rank ``src`` (a list of one array per rank,
    given on ``src``), shaped and typed like ``tensor``; returned (``tensor`` is unchanged).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> pieces = [fg.asarray([5.0]), fg.asarray([7.0])] if rank == 0 else None
        >>> dist.scatter(fg.zeros(1), pieces, src=0).tolist() == [[5.0], [7.0]][rank]
        True
    """
    _world(group, "scatter")
    _check_used("scatter", "`t = dist.scatter(t, scatter_list, src)`")
    x = _array(tensor, "scatter")
    _check_rank(src, "scatter", "src")
    group_ = process_group.current()
    xp, raw = _raw(x, "scatter")
    process_group.check_same(group_, raw, "dist.scatter")
    stacked = None
    if group_.rank == src:
        if not isinstance(scatter_list, (list, tuple)) or len(scatter_list) != group_.size:
            raise ArgumentValueError(f"dist.scatter: rank {src} must pass scatter_list, one array per rank "
                                     f"({group_.size})")
        parts = [_array(t, "scatter") for t in scatter_list]
        if any(tuple(p.shape) != tuple(x.shape) or p.dtype != x.dtype for p in parts):
            raise ArgumentValueError(f"dist.scatter: every array of scatter_list must have the shape and dtype of "
                                     f"tensor ({x.dtype}{list(x.shape)})")
        stacked = _raw(stack(parts), "scatter")[1]
    work = group_.scatter(xp, stacked, raw, int(src)).then(lambda out: _wrap(out, x))
    return work if async_op else work.wait()


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None, async_op: bool = False) -> Any:
    """Every rank's ``input_tensor`` joined along the first axis (PyTorch's name); the result
    is returned, and ``output_tensor`` (PyTorch writes into it) gives only its shape.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> dist.all_gather_into_tensor(None, fg.asarray([float(rank), float(rank)])).tolist()
        [0.0, 0.0, 1.0, 1.0]
    """
    _world(group, "all_gather_into_tensor")
    _check_used("all_gather_into_tensor", "`out = dist.all_gather_into_tensor(out, x)`")
    x = _array(input_tensor, "all_gather_into_tensor")
    size = process_group.current().size
    want = (x.shape[0] * size, *x.shape[1:]) if x.ndim else (size,)
    if output_tensor is not None and tuple(_array(output_tensor, "all_gather_into_tensor").shape) != want:
        raise ArgumentValueError(f"dist.all_gather_into_tensor: the output must have shape {want}, got "
                                 f"{tuple(output_tensor.shape)}")
    work = all_gather(x, async_op=True)
    joined = work.then(lambda parts: concatenate([p.reshape(1) if p.ndim == 0 else p for p in parts]))
    return joined if async_op else joined.wait()


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,  # noqa: A002
                          async_op: bool = False) -> Any:
    """``input`` (each rank's, its first axis in world-size blocks) combined over the ranks;
    rank ``r`` gets block ``r`` (PyTorch's name). Returned; ``output`` gives only its shape.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> x = fg.asarray([1.0, 2.0]) * (rank + 1)
        >>> dist.reduce_scatter_tensor(None, x).tolist() == [[3.0], [6.0]][rank]
        True
    """
    _world(group, "reduce_scatter_tensor")
    _check_used("reduce_scatter_tensor", "`out = dist.reduce_scatter_tensor(out, x)`")
    x = _array(input, "reduce_scatter_tensor")
    size = process_group.current().size
    if x.ndim == 0 or x.shape[0] % size:
        raise ArgumentValueError(f"dist.reduce_scatter_tensor: the input's first axis must divide into {size} blocks, "
                                 f"got shape {tuple(x.shape)}")
    block = (x.shape[0] // size, *x.shape[1:])
    if output is not None and tuple(_array(output, "reduce_scatter_tensor").shape) != block:
        raise ArgumentValueError(f"dist.reduce_scatter_tensor: the output must have shape {block}, got "
                                 f"{tuple(output.shape)}")
    out = reduce_scatter(x.reshape(size, *block), op, async_op=async_op)
    return out


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> list[Any]:
    """Every rank's ``obj`` (any picklable Python object), in rank order, filling
    ``object_list`` as PyTorch does (and returning it). The ranks of one job trust each
    other, as in PyTorch: objects travel pickled (files never are: ``fg.load``).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> objects = [None, None]
        >>> _ = dist.all_gather_object(objects, {"rank": rank})
        >>> objects
        [{'rank': 0}, {'rank': 1}]
    """
    _world(group, "all_gather_object")
    group_ = process_group.current()
    if not isinstance(object_list, list) or len(object_list) != group_.size:
        raise ArgumentValueError(f"dist.all_gather_object: object_list must be a list of {group_.size} entries")
    got = _gather_bytes(group_, pickle.dumps(obj), "all_gather_object")
    object_list[:] = [pickle.loads(b) for b in got]  # noqa: S301
    return object_list


def _gather_bytes(group_: Any, data: bytes, name: str) -> list[bytes]:
    if not hasattr(group_, "all_gather_bytes"):
        raise DistributedError(f"dist.{name} needs the MPI backend (Python objects travel through MPI)")
    return group_.all_gather_bytes(data, name)  # type: ignore[no-any-return]


def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None) -> list[Any]:
    """Rank ``src``'s ``object_list`` entries on every rank, in place (PyTorch's semantics:
    every rank passes a list of the same length).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> settings = [{"lr": 0.1} if rank == 0 else None]
        >>> _ = dist.broadcast_object_list(settings, src=0)
        >>> settings
        [{'lr': 0.1}]
    """
    _world(group, "broadcast_object_list")
    _check_rank(src, "broadcast_object_list", "src")
    group_ = process_group.current()
    if not isinstance(object_list, list):
        raise ArgumentTypeError("dist.broadcast_object_list: object_list must be a list")
    sent = pickle.dumps(list(object_list)) if group_.rank == src else b""
    got = pickle.loads(_gather_bytes(group_, sent, "broadcast_object_list")[int(src)])  # noqa: S301
    if len(got) != len(object_list):
        raise ArgumentValueError(f"dist.broadcast_object_list: rank {src} sent {len(got)} objects into a list of "
                                 f"{len(object_list)}")
    object_list[:] = got
    return object_list


def _check_rank(r: Any, name: str, what: str) -> None:
    size = process_group.current().size
    if not isinstance(r, (int, np.integer)) or not 0 <= int(r) < size:
        raise ArgumentValueError(f"dist.{name}: {what} must be a rank in [0, {size}), got {r!r}")


def _point_to_point(name: str, base: str, tensor: Any, peer: Any, role: str, group: Any) -> tuple[Any, Any, Any]:
    """What a send or a receive checks first (the group, the array, the peer's rank, as
    ``base`` names them), then the array, its backend module and its raw buffer."""
    _world(group, name)
    x = _array(tensor, base)
    _check_rank(peer, base, role)
    xp, raw = _raw(x, name)
    return x, xp, raw


def isend(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Start sending ``tensor`` to rank ``dst``; ``wait()`` on the result.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> work = dist.isend(fg.asarray([3.0]), dst=1) if rank == 0 else dist.irecv(fg.zeros(1), src=0)
        >>> result = work.wait()
        >>> rank == 0 or result.tolist() == [3.0]
        True
    """
    _, xp, raw = _point_to_point("isend", "send", tensor, dst, "dst", group)
    return process_group.current().send(xp, raw, int(dst), int(tag))


def send(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (which calls ``recv``).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> if rank == 0:
        ...     dist.send(fg.asarray([1.0, 2.0]), dst=1)
        ... else:
        ...     assert dist.recv(fg.zeros(2), src=0).tolist() == [1.0, 2.0]
    """
    _world(group, "send")
    isend(tensor, dst, group, tag).wait()


def irecv(tensor: Any, src: int, group: Any = None, tag: int = 0) -> Work:
    """Start receiving from rank ``src`` an array shaped like ``tensor``; ``wait()`` returns it.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> work = dist.irecv(fg.zeros(1), src=1) if rank == 0 else dist.isend(fg.asarray([4.0]), dst=0)
        >>> result = work.wait()
        >>> rank == 1 or result.tolist() == [4.0]
        True
    """
    x, xp, raw = _point_to_point("irecv", "recv", tensor, src, "src", group)
    return process_group.current().recv(xp, raw, int(src), int(tag)).then(lambda out: _wrap(out, x))


def recv(tensor: Any, src: int, group: Any = None, tag: int = 0) -> Array:
    """The array rank ``src`` sent, shaped and typed like ``tensor`` (returned: ``tensor`` is unchanged).

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> got = dist.recv(fg.zeros(2), src=0) if rank == 1 else dist.send(fg.asarray([1.0, 2.0]), dst=1)
        >>> got is None if rank == 0 else got.tolist() == [1.0, 2.0]
        True
    """
    _world(group, "recv")
    _check_used("recv", "`t = dist.recv(t, src)`")
    return irecv(tensor, src, group, tag).wait()  # type: ignore[no-any-return]
