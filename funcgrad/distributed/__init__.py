"""``fg.distributed``: process groups and collectives on an existing engine (MPI through
``mpi4py``; ``docs/distributed.md``).

Arrays are immutable, so a collective returns its result as a new array
(``x = dist.all_reduce(x)``) where PyTorch writes into its argument. Contiguous arrays
are handed to MPI as they are (no copy); results are fresh arrays.

Not here yet: ``DistributedDataParallel``, the NCCL backend, async handles and the
launcher.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..array import Array
from ..errors import ArgumentValueError
from ..ops import asarray, from_numpy

__all__ = ["init_process_group", "is_initialized", "get_rank", "get_world_size", "barrier",
           "destroy_process_group", "all_reduce", "broadcast", "all_gather", "ReduceOp"]


class ReduceOp:
    """PyTorch's reduction names for ``all_reduce``."""

    SUM, AVG, MAX, MIN = "sum", "mean", "max", "min"


_GROUP: dict[str, Any] = {}


def init_process_group(backend: str = "mpi", **unused: Any) -> None:
    """Join the process group the launcher (``mpiexec -n N python train.py``) started."""
    if backend != "mpi":
        raise ArgumentValueError(f"init_process_group: backend {backend!r} is not available yet; use 'mpi'")
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("fg.distributed needs mpi4py and an MPI: pip install 'funcgrad[distributed]'") from exc
    _GROUP.update(comm=MPI.COMM_WORLD, mpi=MPI)


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return "comm" in _GROUP


def _comm() -> Any:
    if "comm" not in _GROUP:
        raise RuntimeError("fg.distributed: call fg.distributed.init_process_group() first")
    return _GROUP["comm"]


def get_rank() -> int:
    """This process's rank in the group."""
    return int(_comm().Get_rank()) if is_initialized() else int(os.environ.get("RANK", 0))


def get_world_size() -> int:
    """How many processes the group holds."""
    return int(_comm().Get_size()) if is_initialized() else int(os.environ.get("WORLD_SIZE", 1))


def barrier() -> None:
    """Wait until every process reaches this point."""
    _comm().Barrier()


def destroy_process_group() -> None:
    """Leave the group (MPI itself finalizes when the process exits)."""
    _GROUP.clear()


def _host(x: Any) -> np.ndarray:
    x = x if isinstance(x, Array) else asarray(x)
    return np.ascontiguousarray(x.numpy())


def all_reduce(x: Any, op: str = ReduceOp.SUM) -> Array:
    """``x`` combined over every rank (``sum``, ``mean``, ``max`` or ``min``), as a new array."""
    comm, mpi = _comm(), _GROUP["mpi"]
    ops = {"sum": mpi.SUM, "mean": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}
    if op not in ops:
        raise ArgumentValueError(f"all_reduce: op must be one of {sorted(ops)}, got {op!r}")
    send = _host(x)
    out = np.empty_like(send)
    comm.Allreduce(send, out, op=ops[op])
    if op == "mean":
        out = out / comm.Get_size() if out.dtype.kind in "fc" else out // comm.Get_size()
    return from_numpy(out)


def broadcast(x: Any, src: int = 0) -> Array:
    """Rank ``src``'s ``x`` on every rank, as a new array (the others' shapes and dtypes must match)."""
    comm = _comm()
    buf = _host(x).copy()
    comm.Bcast(buf, root=src)
    return from_numpy(buf)


def all_gather(x: Any) -> list[Array]:
    """Every rank's ``x`` (all of one shape and dtype), in rank order."""
    comm = _comm()
    send = _host(x)
    out = np.empty((comm.Get_size(), *send.shape), send.dtype)
    comm.Allgather(send, out)
    return [from_numpy(part.copy()) for part in out]
