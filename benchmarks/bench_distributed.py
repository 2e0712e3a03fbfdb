"""Data-parallel throughput: two single-threaded ranks against one single-threaded process
on the W2 step (MLP 784-512-256-10, per-rank batch 128, float32, SGD; a PyTorch-style
step: zero_grad, forward, loss.backward(), opt.step()), with DistributedDataParallel on
MPI. Prints the throughput ratio (samples/s on two ranks over one; target >= 1.7x on a
2-core machine), the share of the step spent waiting on gradient all-reduces, how the
bucket size moves both, and PyTorch's DistributedDataParallel (gloo) when installed.

One-rank and two-rank runs alternate, round by round (each a fresh job of 60 timed steps);
the ratios are paired per round, then the median is printed. Then fully sharded data
parallel (funcgrad.distributed.fsdp.fully_shard on each Linear and the model) against
DistributedDataParallel on two ranks: the W2 step's time, and for a model of 67 MB
(four Linear(2048, 2048)) with Adam, the bytes each rank holds in parameters, gradients
and optimizer state after a step (targets: <= 1.3x the time, <= 0.6x the bytes).

    python benchmarks/bench_distributed.py [--rounds 5] [--steps 60]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

STEPS_WARM = 10
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def launcher_world() -> tuple[int, int]:
    """This process's rank and the world size, as the MPI launcher (MPICH or Open MPI) set them."""
    env = os.environ
    return (int(env.get("PMI_RANK") or env.get("OMPI_COMM_WORLD_RANK") or 0),
            int(env.get("PMI_SIZE") or env.get("OMPI_COMM_WORLD_SIZE") or 1))


def timed(step, steps: int, barrier) -> float:
    """Seconds per step after the warm-up, every rank starting and ending together."""
    for _ in range(STEPS_WARM):
        step()
    barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    barrier()
    return (time.perf_counter() - start) / steps


def worker_funcgrad(steps: int, bucket_mb: float) -> dict[str, float] | None:
    import funcgrad as fg
    import funcgrad.distributed as dist

    rank, world = launcher_world()
    if world > 1:
        dist.init_process_group("mpi")
    nn = fg.nn
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.Tanh(), nn.Linear(512, 256), nn.Tanh(), nn.Linear(256, 10))
    run = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb) if world > 1 else model
    opt = fg.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    x = fg.asarray(rng.random((128, 784), dtype=np.float32))
    y = fg.asarray(rng.integers(0, 10, 128))

    def step() -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(run(x), y).backward()
        opt.step()

    waited = []

    def barrier() -> None:  # (and the reducer's waiting so far, read at the start and the end)
        if world > 1:
            dist.barrier()
            waited.append(run._reducer.wait_seconds)

    elapsed = timed(step, steps, barrier)
    if rank != 0:
        return None
    wait = (waited[-1] - waited[-2]) / steps if world > 1 else 0.0
    return {"step_s": elapsed, "wait_s": wait, "buckets": len(run._reducer.buckets) if world > 1 else 0}


def worker_fsdp(steps: int, bucket_mb: float) -> dict[str, float] | None:
    """Two ranks: the W2 step with DDP and with FSDP, timed alternately; then the bytes
    held for a 67 MB model with Adam under each."""
    import funcgrad as fg
    import funcgrad.distributed as dist
    from funcgrad.distributed import fsdp

    rank, world = launcher_world()
    dist.init_process_group("mpi")
    nn = fg.nn

    def mlp(sizes):
        fg.manual_seed(0)
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.Tanh()]
        return nn.Sequential(*layers[:-1])

    def sharded(model, reshard=True):
        for layer in model:
            if isinstance(layer, nn.Linear):
                fsdp.fully_shard(layer, reshard_after_forward=reshard)
        return fsdp.fully_shard(model, reshard_after_forward=reshard)

    def wrap(name, model):
        if name == "ddp":
            return nn.parallel.DistributedDataParallel(model)
        return sharded(model, reshard=name == "fsdp")

    rng = np.random.default_rng(rank)
    x = fg.asarray(rng.random((128, 784), dtype=np.float32))
    y = fg.asarray(rng.integers(0, 10, 128))
    steps_of = {}
    names = ("ddp", "fsdp", "fsdp-keep")  # (fsdp-keep: reshard_after_forward=False)
    for name in names:
        model = mlp((784, 512, 256, 10))
        run = wrap(name, model)
        opt = fg.optim.SGD(model.parameters(), lr=0.01)

        def step(run=run, opt=opt) -> None:
            opt.zero_grad()
            nn.functional.cross_entropy(run(x), y).backward()
            opt.step()

        steps_of[name] = step
    from funcgrad.backends import process_group

    waited = [0.0]
    wait = process_group.Work.wait

    def counted(work, timeout=None):  # (the seconds spent waiting on collectives, whichever)
        start = time.perf_counter()
        try:
            return wait(work, timeout)
        finally:
            waited[0] += time.perf_counter() - start

    process_group.Work.wait = counted
    times: dict[str, list[float]] = {name: [] for name in names}
    waits: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(3):
        for name, step in steps_of.items():
            before = waited[0]
            times[name].append(timed(step, steps, dist.barrier))
            waits[name].append((waited[0] - before) / (steps + STEPS_WARM + 2))  # (the barriers' waits too)
    process_group.Work.wait = wait
    held, between = {}, {}
    big = fg.asarray(np.random.default_rng(1).random((16, 2048), dtype=np.float32))
    for name in names:
        model = mlp((2048,) * 5)
        run = wrap(name, model)
        opt = fg.optim.Adam(model.parameters(), lr=1e-3)
        gc.collect()  # (the last model's modules and states refer to each other)
        before = big.device.stats.allocated
        loss = (run(big) ** 2).mean()
        between[name] = big.device.stats.allocated - before  # (what the forward pass left for the backward)
        loss.backward()
        del loss
        opt.step()
        state = [v for s in opt.state.values() for v in (s.values() if isinstance(s, dict) else [s])
                 if isinstance(v, fg.Array)]
        held[name] = sum(p.nbytes + (p.grad.nbytes if p.grad is not None else 0) for p in model.parameters()) + \
            sum(v.nbytes for v in state)
        del run, model, opt
    if rank != 0:
        return None
    return {"fsdp_over_ddp": [f / d for f, d in zip(times["fsdp"], times["ddp"])],  # (paired: the same round)
            **{f"{k}_step_s": float(np.median(v)) for k, v in times.items()},
            **{f"{k}_wait_s": float(np.median(v)) for k, v in waits.items()},
            **{f"{k}_bytes": v for k, v in held.items()}, **{f"{k}_between": v for k, v in between.items()}}


def worker_torch(steps: int, bucket_mb: float) -> dict[str, float] | None:
    import torch
    import torch.distributed as tdist

    torch.set_num_threads(1)
    rank, world = launcher_world()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.Tanh(), torch.nn.Linear(512, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 10))
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29611")
        tdist.init_process_group("gloo", rank=rank, world_size=world)
        run = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb)
    else:
        run = model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    x, y = torch.rand((128, 784), generator=gen), torch.randint(0, 10, (128,), generator=gen)

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(run(x), y).backward()
        opt.step()

    elapsed = timed(step, steps, tdist.barrier if world > 1 else lambda: None)
    if world > 1:
        tdist.destroy_process_group()
    return {"step_s": elapsed, "wait_s": float("nan"), "buckets": 0} if rank == 0 else None


def launch(framework: str, ranks: int, steps: int, bucket_mb: float) -> dict[str, float]:
    here = os.path.abspath(__file__)
    args = [here, "--worker", framework, "--steps", str(steps), "--bucket-mb", str(bucket_mb)]
    if ranks == 1:
        cmd = [sys.executable, *args]
    else:
        cmd = [sys.executable, "-m", "funcgrad.distributed.run", "-n", str(ranks), *args]
    env = {**os.environ, **THREADS}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{framework} on {ranks} rank(s) failed:\n{done.stderr[-3000:]}")
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--worker", default=None)
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    parser.add_argument("--fsdp-only", action="store_true", help="only FSDP against DistributedDataParallel")
    options = parser.parse_args()
    if options.worker is not None:
        fn = {"funcgrad": worker_funcgrad, "fsdp": worker_fsdp, "torch": worker_torch}[options.worker]
        result = fn(options.steps, options.bucket_mb)
        if result is not None:
            print(json.dumps(result), flush=True)
        return

    if not options.fsdp_only:
        data_parallel(options)
    fsdp_against_ddp(options)


def data_parallel(options: argparse.Namespace) -> None:
    print(f"W2 step (MLP 784-512-256-10, batch 128 per rank), single-threaded ranks, {options.rounds} rounds of "
          f"{options.steps} steps\n")
    contenders = [("funcgrad", 25.0), ("funcgrad", 0.25), ("funcgrad", 0.01)]
    if have("torch"):
        contenders.append(("torch", 25.0))
    rows: dict[tuple[str, float], list[tuple[float, float, float, int]]] = {c: [] for c in contenders}
    for _ in range(options.rounds):
        for framework, mb in contenders:
            one = launch(framework, 1, options.steps, mb)
            time.sleep(0.25)
            two = launch(framework, 2, options.steps, mb)
            time.sleep(0.25)
            rows[framework, mb].append((2 * one["step_s"] / two["step_s"], two["wait_s"] / two["step_s"],
                                        two["step_s"], int(two["buckets"])))
    print(f"{'contender':<28} {'throughput 2 ranks / 1':>24} {'waiting on all-reduce':>22} {'step (2 ranks)':>16}")
    for (framework, mb), got in rows.items():
        ratio = statistics.median(g[0] for g in got)
        wait = statistics.median(g[1] for g in got)
        step = statistics.median(g[2] for g in got)
        buckets = f", {got[0][3]} buckets" if framework == "funcgrad" else ""
        share = "n/a" if np.isnan(wait) else f"{100 * wait:.1f}% of the step"
        print(f"{framework + f' ({mb:g} MiB{buckets})':<28} {ratio:>23.2f}x {share:>22} {1e3 * step:>13.2f} ms")
    print("\ntarget: >= 1.7x for funcgrad at the default bucket size (25 MiB)")


def fsdp_against_ddp(options: argparse.Namespace) -> None:
    fsdp_rounds = [launch("fsdp", 2, options.steps, 25.0) for _ in range(max(1, options.rounds))]
    paired = [q for r in fsdp_rounds for q in r["fsdp_over_ddp"]]
    ratio = statistics.median(paired)
    got = fsdp_rounds[-1]
    fsdp_ms, ddp_ms = (1e3 * statistics.median(r[k] for r in fsdp_rounds) for k in ("fsdp_step_s", "ddp_step_s"))
    print(f"\nFSDP against DDP on two ranks: W2 step {fsdp_ms:.2f} ms against {ddp_ms:.2f} ms ({ratio:.2f}x, the "
          f"median of {len(paired)} paired rounds, {min(paired):.2f}-{max(paired):.2f}x; target <= 1.3x); 67 MB "
          f"model with Adam, bytes held per rank: {got['fsdp_bytes'] / 2**20:.1f} MiB against "
          f"{got['ddp_bytes'] / 2**20:.1f} MiB ({got['fsdp_bytes'] / got['ddp_bytes']:.2f}x; target <= 0.6x)")
    share = {k: statistics.median(r[f"{k}_wait_s"] / r[f"{k}_step_s"] for r in fsdp_rounds)
             for k in ("fsdp", "fsdp-keep", "ddp")}
    print(f"  waiting on collectives: FSDP {100 * share['fsdp']:.0f}% of the step, without resharding "
          f"{100 * share['fsdp-keep']:.0f}%, DDP {100 * share['ddp']:.0f}%")
    keep = statistics.median(r["fsdp-keep_step_s"] / r["ddp_step_s"] for r in fsdp_rounds)
    print(f"  reshard_after_forward=False: W2 step {keep:.2f}x DDP's; held between forward and backward on the 67 MB "
          f"model: FSDP {got['fsdp_between'] / 2**20:.1f} MiB, FSDP without resharding "
          f"{got['fsdp-keep_between'] / 2**20:.1f} MiB, DDP {got['ddp_between'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
