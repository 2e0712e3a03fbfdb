"""fg.distributed on MPI: the collectives against NumPy on two ranks (mpiexec), and the
errors of a process that has not joined a group. Skipped without mpi4py (the
``distributed`` extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

import funcgrad as fg
import funcgrad.distributed as dist

SCRIPT = r"""
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and n == 2
for dtype in (np.float64, np.float32, np.int64):
    x = fg.asarray((np.arange(6).reshape(2, 3) * (r + 1)).astype(dtype))
    each = [(np.arange(6).reshape(2, 3) * (k + 1)).astype(dtype) for k in range(n)]
    assert np.array_equal(dist.all_reduce(x).numpy(), sum(each))
    assert np.array_equal(dist.all_reduce(x, dist.ReduceOp.MAX).numpy(), np.max(each, axis=0))
    assert np.array_equal(dist.all_reduce(x, "min").numpy(), np.min(each, axis=0))
    mean = dist.all_reduce(x, "mean").numpy()
    assert np.allclose(mean, sum(each) / n if x.dtype.kind == "f" else sum(each) // n)
    assert np.array_equal(dist.broadcast(x, src=1).numpy(), each[1])
    assert all(np.array_equal(g.numpy(), e) for g, e in zip(dist.all_gather(x), each))
    assert x.numpy().tolist() == each[r].tolist()  # the argument is unchanged: results are new arrays
dist.barrier()
print(f"rank {r}: ok", flush=True)
dist.destroy_process_group()
"""


def test_collectives_on_two_ranks_match_numpy() -> None:
    pytest.importorskip("mpi4py", reason="the distributed extra is not installed (pip install 'funcgrad[distributed]')")
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec on PATH (pip install mpich)")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "rank 0: ok" in done.stdout and "rank 1: ok" in done.stdout


def test_outside_a_group() -> None:
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.get_world_size() == 1 and dist.get_rank() == 0
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(fg.ones(2))
    with pytest.raises(fg.ArgumentValueError, match="backend 'nccl' is not available yet"):
        dist.init_process_group("nccl")
