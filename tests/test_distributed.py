"""fg.distributed on MPI, two ranks under ``mpiexec`` (or the ``funcgrad.distributed.run``
launcher): every collective against NumPy, ``all_reduce`` inside grad/vmap/compile,
DistributedDataParallel against one process on the concatenated batches, SyncBatchNorm
against BatchNorm on the whole batch, a failing or stuck rank ending the job, and the NCCL
backend's code on a stand-in GPU. Skipped without mpi4py (the ``distributed`` extra)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mpiexec() -> str:
    pytest.importorskip("mpi4py", reason="the distributed extra is not installed (pip install 'funcgrad[distributed]')")
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install mpich)")
    return found


def run_ranks(script: str, n: int = 2, timeout: float = 240, launcher: bool = False,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``script`` on ``n`` ranks; through ``python -m funcgrad.distributed.run`` with ``launcher``."""
    mpiexec = _mpiexec()
    if launcher:
        path = os.path.join(tempfile.mkdtemp(prefix="fg-dist-"), "train.py")
        with open(path, "w") as f:
            f.write(script)
        cmd = [sys.executable, "-m", "funcgrad.distributed.run", "-n", str(n), path]
    else:
        cmd = [mpiexec, "-n", str(n), sys.executable, "-c", script]
    full_env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=ROOT)


def assert_ranks_ok(done: subprocess.CompletedProcess[str], n: int = 2) -> None:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    for r in range(n):
        assert f"rank {r}: ok" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


COLLECTIVES = r"""
import numpy as np, ml_dtypes, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and n == 2 and dist.get_backend() == "mpi"
for dtype in (np.float64, np.float32, np.int64, np.complex128, ml_dtypes.bfloat16, np.float16):
    base = np.arange(6).reshape(2, 3)
    each = [(base * (k + 1) - 2).astype(dtype) for k in range(n)]
    x = fg.asarray(each[r])
    total = (each[0].astype(np.complex128) + each[1]).astype(dtype)
    assert np.array_equal(dist.all_reduce(x).numpy(), total)
    assert dist.all_reduce(x).dtype == x.dtype
    if np.dtype(dtype).kind != "c":
        assert np.array_equal(dist.all_reduce(x, dist.ReduceOp.MAX).numpy(), np.maximum(*each))
        assert np.array_equal(dist.all_reduce(x, "min").numpy(), np.minimum(*each))
    mean = dist.all_reduce(x, "mean").numpy()
    want = total.astype(np.complex128) / n if np.dtype(dtype).kind in "fcV" or dtype in (ml_dtypes.bfloat16,) else total // n
    assert np.allclose(mean.astype(np.complex128), np.asarray(want).astype(np.complex128)), (dtype, mean, want)
    assert np.array_equal(dist.broadcast(x, src=1).numpy(), each[1])
    assert all(np.array_equal(g.numpy(), e) for g, e in zip(dist.all_gather(x), each))
    into = [None, None]
    dist.all_gather(into, x)
    assert all(np.array_equal(g.numpy(), e) for g, e in zip(into, each))
    blocks = [fg.asarray(e * (k + 1)) for k, e in enumerate([each[r], each[r]])]
    got = dist.reduce_scatter(blocks)
    assert np.array_equal(got.numpy(), (sum(e.astype(np.complex128) for e in each) * (r + 1)).astype(dtype))
    assert x.numpy().tolist() == each[r].tolist()  # the argument is unchanged: results are new arrays
    # reduce, gather and scatter: results on the named rank
    if np.dtype(dtype).kind != "c":
        red = dist.reduce(x, dst=1, op="max")
        assert np.array_equal(red.numpy(), np.maximum(*each) if r == 1 else each[r])
    red = dist.reduce(x, dst=1)
    assert np.array_equal(red.numpy(), total if r == 1 else each[r])
    got = dist.gather(x, dst=0)
    assert (got is None) if r else all(np.array_equal(g.numpy(), e) for g, e in zip(got, each))
    into = [None, None] if r == 0 else None
    dist.gather(x, into, dst=0)
    assert r or all(np.array_equal(g.numpy(), e) for g, e in zip(into, each))
    blocks = [fg.asarray(e) for e in each] if r == 1 else None
    assert np.array_equal(dist.scatter(x, blocks, src=1).numpy(), each[r])
# PyTorch's tensor forms (results returned) and Python objects
x6 = fg.asarray(np.arange(6.0).reshape(2, 3) * (r + 1))
both = [np.arange(6.0).reshape(2, 3) * (k + 1) for k in range(n)]
out = dist.all_gather_into_tensor(fg.zeros((4, 3), dtype=fg.float64), x6)
assert np.array_equal(out.numpy(), np.concatenate(both))
out = dist.reduce_scatter_tensor(fg.zeros((1, 3), dtype=fg.float64), x6)
assert np.array_equal(out.numpy(), sum(both)[r:r + 1])
objects = [None, None]
assert dist.all_gather_object(objects, {"rank": r, "loss": 0.5 * r}) is objects
assert objects == [{"rank": 0, "loss": 0.0}, {"rank": 1, "loss": 0.5}]
shared = ["config", {"lr": 0.1}] if r == 1 else [None, None]
dist.broadcast_object_list(shared, src=1)
assert shared == ["config", {"lr": 0.1}]
# bool: sum is "any", min is "all"
flags = fg.asarray(np.array([r == 0, True, False]))
assert dist.all_reduce(flags).numpy().tolist() == [True, True, False]
assert dist.all_reduce(flags, "min").numpy().tolist() == [False, True, False]
# async handles
x = fg.asarray(np.full(4, r + 1.0))
work = dist.all_reduce(x, async_op=True)
assert work.wait().numpy().tolist() == [3.0] * 4 and work.is_completed()
assert dist.broadcast(x, 0, async_op=True).wait().numpy().tolist() == [1.0] * 4
dist.barrier(async_op=True).wait()
# point to point
if r == 0:
    dist.send(fg.asarray(np.arange(5.0)), dst=1)
    handle = dist.isend(fg.asarray(np.arange(3) * 7), dst=1, tag=4)
    handle.wait()
else:
    got = dist.recv(fg.zeros(5, dtype=fg.float64), src=0)
    assert got.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    got = dist.irecv(fg.zeros(3, dtype=fg.int64), src=0, tag=4).wait()
    assert got.numpy().tolist() == [0, 7, 14]
# PyTorch's in-place spelling is refused on every rank before it communicates
assert dist.all_reduce(x, group=dist.group.WORLD).numpy().tolist() == [3.0] * 4
try:
    dist.all_reduce(x)
    raise AssertionError("a discarded result was not caught")
except fg.DistributedError as error:
    assert "t = dist.all_reduce(t)" in str(error)
try:
    dist.broadcast(x, 0)
    raise AssertionError("a discarded result was not caught")
except fg.DistributedError:
    pass
# bad arguments: typed errors naming the call
for bad, kind in ((lambda: dist.broadcast(x, src=5), fg.ArgumentValueError),
                  (lambda: dist.all_reduce(x, "prod"), fg.ArgumentValueError),
                  (lambda: dist.reduce_scatter([x]), fg.ArgumentValueError),
                  (lambda: dist.all_reduce(x, group=object()), fg.ArgumentValueError),
                  (lambda: dist.all_reduce(fg.asarray([1j]), "max"), fg.DTypeError),
                  (lambda: dist.reduce(fg.asarray([1j]), 0, "min"), fg.DTypeError),
                  (lambda: dist.reduce_scatter(x, [x, x]), fg.ArgumentValueError),
                  (lambda: dist.scatter(x, [x], src=r), fg.ArgumentValueError),
                  (lambda: dist.all_gather_into_tensor(fg.zeros(3), x), fg.ArgumentValueError),
                  (lambda: dist.all_gather_object([None], 1), fg.ArgumentValueError)):
    try:
        bad()
        raise AssertionError("accepted")
    except kind as error:
        assert "dist." in str(error) or "all_reduce" in str(error), error
# arrays that differ between ranks: every rank raises, naming each rank's array
for call in (lambda: dist.all_reduce(fg.ones(3 + r)), lambda: dist.broadcast(fg.ones(2, dtype=fg.float32 if r else fg.float64)),
             lambda: dist.all_gather(fg.ones((2, r + 1))), lambda: dist.reduce_scatter([fg.ones(r + 1)] * n),
             lambda: dist.all_reduce(fg.ones(3), "max" if r else "sum"), lambda: dist.broadcast(fg.ones(3), src=r)):
    try:
        _ = call()
        raise AssertionError("ranks with different arrays or arguments were not caught")
    except fg.DistributedError as error:
        assert "rank 0: " in str(error) and "rank 1: " in str(error) and "different arrays or arguments" in str(error)
# a message of another size, or another dtype of the same size, than the receiving array
if r == 0:
    dist.send(fg.ones(5), dst=1)
    dist.send(fg.ones(2), dst=1)
    dist.send(fg.ones(3, dtype=fg.int32), dst=1)
else:
    for like, words in ((fg.zeros(3), "sent more than the 12 bytes"), (fg.zeros(3), "sent 8 bytes"),
                        (fg.zeros(3), "sent int32 values, but the array given to receive them is float32")):
        try:
            _ = dist.recv(like, src=0)
            raise AssertionError("a message of the wrong size was not caught")
        except fg.DistributedError as error:
            assert words in str(error), error
dist.barrier()
print(f"rank {r}: ok", flush=True)
dist.destroy_process_group()
"""


def test_collectives_on_two_ranks_match_numpy() -> None:
    assert_ranks_ok(run_ranks(COLLECTIVES))


TRANSFORMS = r"""
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
w = fg.asarray(rng.normal(size=(3, 2)))
xs = [fg.asarray(rng.normal(size=(4, 3))) for _ in range(n)]
x = xs[r]

def local_loss(w, x):
    return fg.sum(fg.tanh(x @ w) ** 2)

# the ranks' program differentiated as one: the global loss is the sum of the ranks'
def global_loss(w, x):
    return dist.all_reduce(local_loss(w, x), "mean")

g = fg.grad(global_loss)(w, x)
assert np.allclose(g.numpy(), fg.grad(local_loss)(w, x).numpy())      # d(sum of ranks' outputs)/d(this rank's w)
g_all = dist.all_reduce(g, "mean")
want = fg.grad(lambda w: sum(local_loss(w, xi) for xi in xs) / n)(w)
assert np.allclose(g_all.numpy(), want.numpy(), atol=1e-12)

# a compiled data-parallel SGD step is one program with the reductions in it
def step(w, x):
    loss, g = fg.value_and_grad(local_loss)(w, x)
    return dist.all_reduce(loss, "mean"), w - 0.1 * dist.all_reduce(g, "mean")

compiled = fg.compile(step)
loss, w1 = compiled(w, x)
assert "all_reduce" in str(fg.trace(step)(w, x))
assert np.allclose(w1.numpy(), (w - 0.1 * want).numpy(), atol=1e-12)
assert np.allclose(loss.numpy(), np.mean([local_loss(w, xi).numpy() for xi in xs]))

# forward mode, max's tangent, vmap, and the tape
t = fg.asarray(np.full((3, 2), float(r + 1)))
_, tangent = fg.jvp(lambda w: dist.all_reduce(w * x[0, 0]), (w,), (t,))
assert np.allclose(tangent.numpy(), sum((k + 1) * xs[k][0, 0].numpy() for k in range(n)))
v = fg.asarray(np.array([float(r), 5.0 - r]))
_, tmax = fg.jvp(lambda v: dist.all_reduce(v, "max"), (v,), (fg.ones(2, dtype=fg.float64) * (r + 1),))
assert tmax.numpy().tolist() == [2.0, 1.0]
batched = fg.vmap(lambda row: dist.all_reduce(row, "sum"))(x)
assert np.allclose(batched.numpy(), sum(xi.numpy() for xi in xs))
leaf = fg.asarray(x.numpy(), requires_grad=True)
(dist.all_reduce(leaf, "sum") ** 2).sum().backward()
total = sum(xi.numpy() for xi in xs)
assert np.allclose(leaf.grad.numpy(), n * 2 * total)   # every rank's output depends on this rank's leaf
print(f"rank {r}: ok", flush=True)
"""


def test_all_reduce_inside_grad_vmap_and_compile() -> None:
    assert_ranks_ok(run_ranks(TRANSFORMS))


DDP = r"""
import sys, numpy as np, funcgrad as fg
import funcgrad.distributed as dist
from funcgrad.nn.parallel import DistributedDataParallel as DDP
from sklearn.datasets import load_digits

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
import os  # the launcher gives each rank torchrun's variables, and runs the script as __main__
assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == (str(r), "2", str(r))
assert __name__ == "__main__" and sys.argv[0].endswith("train.py")
digits = load_digits()
X, Y = (digits.data / 16.0).astype(np.float64), digits.target.astype(np.int64)
STEPS, PER_RANK, MICRO = 20, 16, 2

def make_model(seed):
    fg.manual_seed(seed)
    return fg.nn.Sequential(fg.nn.Linear(64, 32), fg.nn.ReLU(), fg.nn.Linear(32, 16), fg.nn.ReLU(),
                            fg.nn.Linear(16, 10)).double()

def batch(step, micro, rank):  # rank r's share of micro-batch `micro` of `step`
    start = ((step * MICRO + micro) * n + rank) * PER_RANK
    idx = np.arange(start, start + PER_RANK) % len(X)
    return fg.asarray(X[idx]), fg.asarray(Y[idx])

def reference(accumulate):
    model = make_model(0)
    opt = fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        opt.zero_grad()
        for micro in range(MICRO if accumulate else 1):
            parts = [batch(step, micro, k) for k in range(n)]
            xb, yb = fg.concatenate([p[0] for p in parts]), fg.concatenate([p[1] for p in parts])
            fg.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    return [p.numpy() for p in model.parameters()]

def data_parallel(accumulate, bucket_cap_mb, compiled=False):
    model = make_model(0 if r == 0 else 100 + r)   # rank 1 starts elsewhere: DDP broadcasts rank 0's
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    assert ddp.module is model
    if compiled:                     # fg.compile(ddp): the module compiled, the reduction around it
        ddp = fg.compile(ddp)
    opt = fg.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        opt.zero_grad()
        for micro in range(MICRO if accumulate else 1):
            xb, yb = batch(step, micro, r)
            if accumulate and micro < MICRO - 1:
                with ddp.no_sync():
                    fg.nn.functional.cross_entropy(ddp(xb), yb).backward()
            else:
                fg.nn.functional.cross_entropy(ddp(xb), yb).backward()
        opt.step()
    return ddp, [p.numpy() for p in model.parameters()]

for accumulate in (False, True):
    want = reference(accumulate)
    for cap in (25.0, 0.001):        # one bucket; a bucket per parameter
        ddp, got = data_parallel(accumulate, cap)
        worst = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
        assert worst < 1e-6, (accumulate, cap, worst)
        everyone = dist.all_gather(fg.asarray(np.concatenate([g.ravel() for g in got])))
        assert np.array_equal(everyone[0].numpy(), everyone[1].numpy())   # the ranks agree bitwise
    _, got = data_parallel(accumulate, 25.0, compiled=True)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(got, want)) < 1e-6, "compiled"
print("buckets", [len(b.params) for b in ddp._reducer.buckets])

# the state dict: PyTorch's prefix, and loading either form
ddp = DDP(make_model(0))
keys = list(ddp.state_dict())
assert keys[0] == "module.0.weight", keys
bare = ddp.module.state_dict()
ddp.load_state_dict(bare)
ddp.load_state_dict(ddp.state_dict())

# find_unused_parameters: a branch this step does not use
class TwoHeads(fg.nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b = fg.nn.Linear(4, 4), fg.nn.Linear(4, 1), fg.nn.Linear(4, 1)
    def forward(self, x, head):
        return (self.a if head == "a" else self.b)(self.body(x))

xb = fg.asarray(np.ones((2, 4)) * (r + 1))
model = TwoHeads().double()
ddp = DDP(model, find_unused_parameters=True)
ddp(xb, "a" if r == 0 else "b").sum().backward()      # each rank leaves one head unused
assert model.a.weight.grad is not None and model.b.weight.grad is not None  # used on some rank: averaged
ddp2 = DDP(TwoHeads().double(), find_unused_parameters=True)
ddp2(xb, "a").sum().backward()
assert ddp2.module.b.weight.grad is None                 # unused on every rank: left alone, as in PyTorch
ddp3 = DDP(TwoHeads().double())                          # without the flag, an unused head is an error
ddp3(xb, "a").sum().backward()
try:
    ddp3(xb, "a")
    raise AssertionError("an unfinished reduction was not reported")
except fg.DistributedError as error:
    assert "find_unused_parameters=True" in str(error) and "b.weight" in str(error)
print(f"rank {r}: ok", flush=True)
"""


def test_ddp_equals_one_process_on_the_concatenated_batches() -> None:
    """Two ranks, 20 SGD-with-momentum steps on digits, float64, with and without no_sync
    accumulation, one bucket or one per parameter: the same parameters as one process on
    the concatenated batches to 1e-6 (started through the launcher)."""
    assert_ranks_ok(run_ranks(DDP, launcher=True))


SYNC_BN = r"""
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
from funcgrad.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(1)
X = rng.normal(size=(12, 3, 4)) * 3 + 1
Y = rng.normal(size=(12, 5, 4))

def model():
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Conv1d(3, 5, 1), fg.nn.BatchNorm1d(5), fg.nn.Tanh()).double()

one = model()
opt1 = fg.optim.SGD(one.parameters(), lr=0.5)
ranks = DDP(fg.nn.SyncBatchNorm.convert_sync_batchnorm(model()))
assert isinstance(ranks.module[1], fg.nn.SyncBatchNorm)
opt2 = fg.optim.SGD(ranks.parameters(), lr=0.5)
part = slice(6 * r, 6 * r + 6) if r == 0 else slice(6, 12)
for _ in range(3):
    opt1.zero_grad(); opt2.zero_grad()
    full = fg.mean((one(fg.asarray(X)) - fg.asarray(Y)) ** 2)
    full.backward(); opt1.step()
    mine = fg.mean((ranks(fg.asarray(X[part])) - fg.asarray(Y[part])) ** 2)
    mine.backward(); opt2.step()
for a, b in zip(one.parameters(), ranks.module.parameters()):
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-10), (a, b)
for a, b in zip(one.buffers(), ranks.module.buffers()):
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-10), (a, b)
print(f"rank {r}: ok", flush=True)
"""


def test_sync_batchnorm_on_half_batches_equals_batchnorm_on_the_whole() -> None:
    assert_ranks_ok(run_ranks(SYNC_BN))


FAILS = r"""
import time, numpy as np, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi")
r = dist.get_rank()
x = fg.ones(3)
x = dist.all_reduce(x)
if r == 1:
    raise ValueError("rank 1 broke mid-step")
x = dist.all_reduce(x)     # rank 0 waits here for a rank that is gone
print("rank 0 was never aborted", flush=True)
"""

STUCK = r"""
import time, numpy as np, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi", timeout=2)
r = dist.get_rank()
if r == 1:
    time.sleep(60)          # alive, but never reaching the collective
x = dist.all_reduce(fg.ones(3))
"""


def test_a_failing_rank_aborts_the_job() -> None:
    start = time.monotonic()
    done = run_ranks(FAILS, timeout=120, launcher=True)
    assert done.returncode != 0 and time.monotonic() - start < 60
    assert "rank 1 of 2 failed; aborting the job" in done.stderr and "rank 1 broke mid-step" in done.stderr
    assert "never aborted" not in done.stdout
    assert "found in sys.modules" not in done.stderr  # runpy's warning about the launcher's module


def test_a_stuck_rank_makes_the_others_time_out() -> None:
    start = time.monotonic()
    done = run_ranks(STUCK, timeout=120)
    assert done.returncode != 0 and time.monotonic() - start < 45, done.stderr[-2000:]
    assert "DistributedTimeoutError" in done.stderr and "all_reduce(sum) (rank 0 of 2, MPI): waited" in done.stderr


# A stand-in ``cupy.cuda.nccl`` whose calls on device pointers MPI carries out, and the
# stand-in GPU: the NCCL group's code runs as on a GPU, on the host. Communicators of a
# subset of the ranks (a mesh's axes) are found by their id; a group of calls
# (groupStart/groupEnd) runs its sends and receives at once, as NCCL does.
NCCL_PRELUDE = r"""
import ctypes, sys, types, numpy as np
from mpi4py import MPI

class Stream:
    ptr = 0
    def synchronize(self): pass

class Event:
    def __init__(self, disable_timing=False): self.done = False
    def record(self, stream): self.done = True

CODES = {"NCCL_INT8": np.int8, "NCCL_UINT8": np.uint8, "NCCL_INT32": np.int32, "NCCL_UINT32": np.uint32,
         "NCCL_INT64": np.int64, "NCCL_UINT64": np.uint64, "NCCL_FLOAT16": np.float16, "NCCL_FLOAT32": np.float32,
         "NCCL_FLOAT64": np.float64}
nccl = types.ModuleType("cupy.cuda.nccl")
for i, name in enumerate(CODES):
    setattr(nccl, name, i)
nccl.NCCL_BFLOAT16 = 99
nccl.NCCL_SUM, nccl.NCCL_PROD, nccl.NCCL_MAX, nccl.NCCL_MIN = 0, 1, 2, 3
DTYPES = [np.dtype(t) for t in CODES.values()]
MPI_OPS = {0: MPI.SUM, 2: MPI.MAX, 3: MPI.MIN}
CALLS = []

def memory(ptr, count, code):  # what a device pointer holds, as NCCL reads it
    dtype = DTYPES[code]
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype)

GROUPED = []  # the sends and receives of the open groupStart, as MPI requests to start

def groupStart():
    GROUPED.append([])

def groupEnd():
    CALLS.append("group")
    MPI.Request.Waitall([start() for start in GROUPED.pop()])

class NcclCommunicator:
    # NCCL's calls on device pointers, carried out by MPI between the processes. Every rank
    # makes its communicators at the same time here (init_process_group, make_mesh), so the
    # ranks that share an id find each other through the whole world.
    def __init__(self, size, uid, rank):
        assert len(uid) == 128 and all(-128 <= b < 128 for b in uid)
        ids = sorted(set(MPI.COMM_WORLD.allgather(tuple(uid))))
        self.comm = MPI.COMM_WORLD.Split(ids.index(tuple(uid)), rank)
        assert self.comm.size == size and self.comm.rank == rank, (self.comm.size, size, self.comm.rank, rank)
    def allReduce(self, send, recv, count, dtype, op, stream):
        CALLS.append("allReduce")
        self.comm.Allreduce(memory(send, count, dtype).copy(), memory(recv, count, dtype), op=MPI_OPS[op])
    def broadcast(self, send, recv, count, dtype, root, stream):
        CALLS.append("broadcast")
        out = memory(recv, count, dtype)
        out[:] = memory(send, count, dtype)
        self.comm.Bcast(out, root=root)
    def allGather(self, send, recv, count, dtype, stream):
        CALLS.append("allGather")
        self.comm.Allgather(memory(send, count, dtype).copy(), memory(recv, count * self.comm.size, dtype))
    def reduceScatter(self, send, recv, count, dtype, op, stream):
        CALLS.append("reduceScatter")
        self.comm.Reduce_scatter_block(memory(send, count * self.comm.size, dtype).copy(), memory(recv, count, dtype),
                                       op=MPI_OPS[op])
    def send(self, buf, count, dtype, peer, stream):
        CALLS.append("send")
        if GROUPED:
            data = memory(buf, count, dtype).copy()
            GROUPED[-1].append(lambda: self.comm.Isend(data, dest=peer))
        else:
            self.comm.Send(memory(buf, count, dtype).copy(), dest=peer)
    def recv(self, buf, count, dtype, peer, stream):
        CALLS.append("recv")
        if GROUPED:
            GROUPED[-1].append(lambda: self.comm.Irecv(memory(buf, count, dtype), source=peer))
        else:
            self.comm.Recv(memory(buf, count, dtype), source=peer)
    def reduce(self, send, recv, count, dtype, op, root, stream):
        CALLS.append("reduce")
        self.comm.Reduce(memory(send, count, dtype).copy(), memory(recv, count, dtype) if self.comm.rank == root
                         else None, op=MPI_OPS[op], root=root)
    def abort(self):
        CALLS.append("abort")

nccl.NcclCommunicator, nccl.groupStart, nccl.groupEnd = NcclCommunicator, groupStart, groupEnd
nccl.get_unique_id = lambda: tuple(int(v) for v in np.random.default_rng().integers(-128, 128, 128))
cuda = types.ModuleType("cupy.cuda")
cuda.nccl, cuda.Event, cuda.get_current_stream = nccl, Event, lambda: Stream()
cuda.Device = lambda: types.SimpleNamespace(id=0)
cupy = types.ModuleType("cupy")   # NumPy under CuPy's name, as the stand-in GPU's arrays are
cupy.cuda = cuda
cupy.__getattr__ = lambda name: getattr(np, name)
cupy.asnumpy = np.asarray
sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl})

import funcgrad as fg
import funcgrad.distributed as dist
from tests.test_gpu_paths import STANDIN, device_module
device_module._DEVICES["gpu", 0] = STANDIN   # the stand-in GPU: its arrays go through the GPU paths

dist.init_process_group("nccl")
r, n = dist.get_rank(), dist.get_world_size()
"""

NCCL_STANDIN = NCCL_PRELUDE + r"""
assert dist.get_backend() == "nccl" and n == 2
x = fg.asarray(np.arange(6.0).reshape(2, 3) * (r + 1)).to("gpu")
total = fg.asarray(np.arange(6.0).reshape(2, 3) * 3)
y = dist.all_reduce(x)
assert y.device == x.device and np.array_equal(y.cpu().numpy(), total.numpy())
assert np.array_equal(dist.all_reduce(x, "mean").cpu().numpy(), total.numpy() / 2)
assert np.array_equal(dist.all_reduce(x, "max").cpu().numpy(), np.arange(6.0).reshape(2, 3) * 2)
assert np.array_equal(dist.broadcast(x, 1).cpu().numpy(), np.arange(6.0).reshape(2, 3) * 2)
parts = dist.all_gather(x)
assert [p.device for p in parts] == [x.device] * 2 and np.array_equal(parts[1].cpu().numpy(), x.cpu().numpy() * 2 / (r + 1))
got = dist.reduce_scatter(fg.stack([x, x * 10]))
assert np.array_equal(got.cpu().numpy(), total.numpy() * (1 if r == 0 else 10))
if r == 0:
    dist.send(x, 1)
else:
    assert np.array_equal(dist.recv(x, 0).cpu().numpy(), np.arange(6.0).reshape(2, 3))
try:
    _ = dist.all_reduce(fg.asarray([True]).to("gpu"))
    raise AssertionError("NCCL moved a bool array")
except fg.ArgumentValueError as error:
    assert "NCCL does not move bool" in str(error)
dist.barrier()
g = fg.grad(lambda v: dist.all_reduce(v * v).sum())(x)     # the primitive's kernel on the GPU path
assert g.device == x.device and np.allclose(g.cpu().numpy(), 2 * x.cpu().numpy() * 2)
model = fg.nn.Linear(3, 2).double().to("gpu")
ddp = fg.nn.parallel.DistributedDataParallel(model)
ddp(x).sum().backward()
assert model.weight.grad.device == x.device
assert np.array_equal(dist.reduce(x, dst=0).cpu().numpy(), total.numpy() if r == 0 else x.cpu().numpy())
got = dist.gather(x, dst=1)
assert (got is None) if r == 0 else np.array_equal(got[0].cpu().numpy(), np.arange(6.0).reshape(2, 3))
mine = dist.scatter(x, [x * 10, x * 20] if r == 0 else None, src=0)
assert mine.device == x.device and np.array_equal(mine.cpu().numpy(), np.arange(6.0).reshape(2, 3) * 10 * (r + 1))
# a message of another size, or another dtype of the same size: refused by the receiver, and
# still drained, so both ranks go on
if r == 0:
    dist.send(fg.ones(2, dtype=fg.float64).to("gpu"), dst=1)
    dist.send(fg.ones(3, dtype=fg.int64).to("gpu"), dst=1)
    dist.send(fg.ones(3, dtype=fg.float64).to("gpu") * 7, dst=1)
else:
    for words in ("sent 16 bytes, but the float64[3] array given to receive it holds 24",
                  "sent int64 values, but the array given to receive them is float64"):
        try:
            _ = dist.recv(fg.zeros(3, dtype=fg.float64).to("gpu"), src=0)
            raise AssertionError("a message that does not fit was not caught")
        except fg.DistributedError as error:
            assert words in str(error) and "NCCL" in str(error), error
    assert dist.recv(fg.zeros(3, dtype=fg.float64).to("gpu"), src=0).cpu().tolist() == [7.0, 7.0, 7.0]
assert {"allReduce", "broadcast", "allGather", "reduceScatter", "reduce", "send" if r == 0 else "recv"} <= set(CALLS)
print(f"rank {r}: ok", flush=True)
"""


def test_nccl_backend_on_the_standin_gpu() -> None:
    """The NCCL group's calls (pointers, counts, dtype and op codes, streams, events) on the
    stand-in GPU, with a stand-in ``cupy.cuda.nccl`` that carries them out through MPI."""
    assert_ranks_ok(run_ranks(NCCL_STANDIN))


RENDEZVOUS = r"""
import os, sys, types
nccl = types.ModuleType("cupy.cuda.nccl")
nccl.get_unique_id = lambda: tuple(range(-64, 64))
class NcclCommunicator:
    def __init__(self, size, uid, rank):
        print(f"rank {rank} of {size} got {uid[0]} {uid[-1]} {len(uid)}", flush=True)
nccl.NcclCommunicator = NcclCommunicator
cuda = types.ModuleType("cupy.cuda"); cuda.nccl, cuda.Device = nccl, lambda: types.SimpleNamespace(id=0)
cupy = types.ModuleType("cupy"); cupy.cuda = cuda
sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl})
import funcgrad.distributed as dist
if os.environ["RANK"] == "1":
    address = f"tcp://{os.environ.pop('MASTER_ADDR')}:{os.environ.pop('MASTER_PORT')}"
    dist.init_process_group("nccl", init_method=address, timeout=30)
else:
    dist.init_process_group("nccl", timeout=30)
assert dist.get_rank() == int(os.environ["RANK"]) and dist.get_world_size() == 2
"""


def test_nccl_ranks_meet_through_master_addr_without_mpi() -> None:
    """Without an MPI launcher the ranks find rank 0 through PyTorch's environment variables."""
    pytest.importorskip("mpi4py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "OMPI", "MPI_", "HYDRA"))}
    import socket

    with socket.socket() as probe:  # a port free right now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env.update(PYTHONPATH=ROOT, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    procs = [subprocess.Popen([sys.executable, "-c", RENDEZVOUS], env={**env, "RANK": str(k)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(2)]
    # (rank 1 is told the address as init_method="tcp://...", rank 0 through MASTER_ADDR/MASTER_PORT)
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    for k, (out, _) in enumerate(outs):
        assert f"rank {k} of 2 got -64 63 128" in out


def test_launcher_command_and_arguments() -> None:
    from funcgrad.distributed import run

    _mpiexec()
    cmd = run.command(3, ["train.py", "--lr", "0.1"], hostfile="hosts")
    assert cmd[1:5] == ["-n", "3", "-f", "hosts"] and cmd[-3:] == ["train.py", "--lr", "0.1"]
    assert cmd[5:8] == [sys.executable, "-m", "funcgrad.distributed.rank_env"]
    from funcgrad.distributed.rank_env import torchrun_env

    assert torchrun_env({"PMI_RANK": "1", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}) == {
        "RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert torchrun_env({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "RANK": "9"}) == {
        "LOCAL_RANK": "0"}  # (a variable already set is kept)
    with pytest.raises(SystemExit):
        run.main(["-n", "0", "x.py"])


def test_outside_a_group() -> None:
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.get_world_size() == 1 and dist.get_rank() == 0
    with pytest.raises(fg.DistributedError, match="init_process_group"):
        _ = dist.all_reduce(fg.ones(2))
    with pytest.raises(fg.DistributedError, match="init_process_group"):
        fg.nn.parallel.DistributedDataParallel(fg.nn.Linear(2, 2))
    with pytest.raises(fg.ArgumentValueError, match="backend must be 'mpi'"):
        dist.init_process_group("gloo")
    with pytest.raises(fg.ArgumentValueError, match="timeout must be positive"):
        dist.init_process_group("mpi", timeout=0)
    with pytest.raises(fg.ArgumentValueError, match="init_method 'tcp://h:1' is not supported; the 'mpi' backend"):
        dist.init_process_group("mpi", init_method="tcp://h:1")
    with pytest.raises(fg.ArgumentValueError, match="store= is not supported"):
        dist.init_process_group("mpi", store=object())
    with pytest.raises(TypeError):
        dist.init_process_group("mpi", wrold_size=2)  # a misspelt argument is not swallowed
    with pytest.raises(fg.ArgumentValueError, match="sub-groups"):
        fg.nn.SyncBatchNorm(3, process_group=object())
    bn = fg.nn.SyncBatchNorm(3)  # outside a group: BatchNorm
    x = fg.asarray(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    ref = fg.nn.BatchNorm1d(3)
    assert np.allclose(bn(x).numpy(), ref(x).numpy())


def test_post_accumulate_grad_hooks_run_as_each_leaf_is_complete() -> None:
    """DistributedDataParallel's hook: the last layer's gradient is ready (and stored) before
    the backward pass reaches the first layer."""
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    seen: list[tuple[str, bool, bool]] = []
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(
            lambda v, name=name: seen.append((name, v.grad is not None, model[0].weight.grad is None)))
    model(fg.ones((5, 3))).sum().backward()
    assert [s[0] for s in seen[:2]] == ["2.weight", "2.bias"] and all(s[1] for s in seen)
    assert seen[0][2]  # the first layer had no gradient yet when the last one was ready
    handle = model[0].weight.register_post_accumulate_grad_hook(lambda v: seen.append(("again", True, True)))
    handle.remove()
    seen.clear()
    model(fg.ones((5, 3))).sum().backward()
    assert "again" not in [s[0] for s in seen] and len(seen) == 4
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        fg.ones(2).register_post_accumulate_grad_hook(print)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=8), cap_kib=st.floats(0.5, 64))
def test_buckets_cover_the_parameters_in_reverse_and_close_at_the_cap(sizes: list[int], cap_kib: float) -> None:
    """PyTorch's assignment: parameters in reverse registration order, a bucket closed once it
    reaches the cap (the first at min(1 MiB, cap)), every parameter in exactly one bucket."""
    from tests.primitive_cases import world_of_one

    world_of_one()
    from funcgrad.backends import process_group
    from funcgrad.nn.parallel import _Reducer

    params = [fg.nn.Parameter(fg.zeros(n)) for n in sizes]
    reducer = _Reducer(process_group.current(), [(f"p{i}", p) for i, p in enumerate(params)], cap_kib / 1024, False)
    flat = [p for b in reducer.buckets for p in b.params]
    assert [id(p) for p in flat] == [id(p) for p in reversed(params)]
    cap = cap_kib * 1024
    for b in reducer.buckets[:-1]:
        sizes_b = [p.size * 4 for p in b.params]
        assert sum(sizes_b) >= cap and sum(sizes_b[:-1]) < cap  # closed by its last parameter
    for b in reducer.buckets:
        assert b.offsets[-1] == sum(p.size for p in b.params) and b.send.shape == (b.offsets[-1],)


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(2, 12), cap_kib=st.sampled_from([0.1, 1.0, 25 * 1024.0]), steps=st.integers(1, 3),
       accumulate=st.booleans())
def test_ddp_in_a_world_of_one_is_the_model(batch: int, cap_kib: float, steps: int, accumulate: bool) -> None:
    """With one rank every reduction is the identity: DDP's parameters after training equal
    the bare model's, for any bucket size, with and without no_sync."""
    from tests.primitive_cases import world_of_one

    world_of_one()
    rng = np.random.default_rng(batch)
    xs = [fg.asarray(rng.normal(size=(batch, 5))) for _ in range(2)]

    def train(wrap: bool) -> list[np.ndarray]:
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(5, 7), fg.nn.Tanh(), fg.nn.Linear(7, 2)).double()
        run = fg.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap_kib / 1024) if wrap else model
        opt = fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        for _ in range(steps):
            opt.zero_grad()
            if accumulate and wrap:
                with run.no_sync():
                    run(xs[0]).pow(2).mean().backward()
            elif accumulate:
                run(xs[0]).pow(2).mean().backward()
            run(xs[1]).pow(2).mean().backward()
            opt.step()
        return [p.numpy() for p in model.parameters()]

    for a, b in zip(train(True), train(False)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_discarded_ddp_leaves_no_hooks_behind() -> None:
    """The wrapper's hooks hold it weakly and go with it, and the parameters' backward
    passes may replay their plans again once no hook is left."""
    import gc

    from tests.primitive_cases import world_of_one

    world_of_one()
    model = fg.nn.Linear(3, 2)
    ddp = fg.nn.parallel.DistributedDataParallel(model)
    ddp(fg.ones((2, 3))).sum().backward()
    meta = model.weight._autograd
    assert len(meta.post_hooks) == 1 and meta.accumulator.out_metas is not None
    del ddp
    gc.collect()
    assert meta.post_hooks == [] and meta.accumulator.out_metas is None
    handle = model.weight.register_hook(lambda g: g * 2)
    assert meta.accumulator.out_metas is not None
    handle.remove()
    assert meta.accumulator.out_metas is None


def test_collectives_other_than_all_reduce_refuse_traced_values() -> None:
    """Under a transform only all_reduce is part of the program; the others say so."""
    from tests.primitive_cases import world_of_one

    world_of_one()
    x = fg.ones(3)
    assert fg.compile(lambda v: dist.all_reduce(v) * 2)(x).tolist() == [2.0, 2.0, 2.0]
    for fn in (lambda v: dist.broadcast(v, 0), lambda v: dist.all_gather(v)[0], lambda v: dist.reduce(v, 0)):
        with pytest.raises(fg.DistributedError, match="runs on concrete arrays"):
            fg.compile(fn)(x)
    with pytest.raises(fg.ArgumentValueError, match="op must be one of"):
        _ = dist.all_reduce(x, fg.ones(2))


DOCSTRING_EXAMPLES = r"""
import doctest, inspect
import funcgrad as fg
import funcgrad.distributed as dist
from funcgrad.backends.process_group import Work
dist.init_process_group("mpi")
rank = dist.get_rank()
ran = 0
for name in ["init_process_group", "get_backend", "barrier", *dist.__all__, "Work"]:
    obj = Work if name == "Work" else getattr(dist, name)
    if "Example (on two ranks" not in (inspect.getdoc(obj) or ""):
        continue
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder(recurse=False).find(obj, f"dist.{name}",
                                                            globs={"fg": fg, "dist": dist, "rank": rank}):
        runner.run(test)
    assert runner.failures == 0, f"dist.{name}: {runner.failures} failing example(s) on rank {rank}"
    ran += 1
assert ran >= 20, ran
dist.destroy_process_group()
print(f"rank {rank}: ok", flush=True)
"""


def test_the_collectives_docstring_examples_run_on_two_ranks() -> None:
    """Each ``fg.distributed`` example headed "on two ranks" runs as a doctest in both ranks
    of a process group (the single-process docstring test leaves them to this one)."""
    assert_ranks_ok(run_ranks(DOCSTRING_EXAMPLES))
