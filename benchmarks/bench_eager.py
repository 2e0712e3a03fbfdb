"""Eager per-operation time: ``a + b`` on float32 (1,) and (1000,), the (1,) add on
inputs that require grad (recorded by the tape; PyTorch's autograd records it too), and a
(64, 64) @ (64, 64) matmul, in funcgrad, NumPy, and PyTorch / JAX when installed.

All contenders run in one process and are interleaved round by round, with a
short pause when switching framework (NumPy's BLAS threads spin ~0.1 s after a
call). Reported: the median per-call time and its ratio to NumPy. Targets:
funcgrad (1,) add <= 2.0 us, matmul within 1.2x NumPy.

    python benchmarks/bench_eager.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import funcgrad as fg


def per_call(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def contenders(shape_a: tuple[int, ...], shape_b: tuple[int, ...], op: str) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    fa, fb = fg.asarray(a), fg.asarray(b)
    run: dict[str, Callable[[], Any]] = {}
    if op == "add":
        run["numpy"] = lambda: a + b
        run["funcgrad"] = lambda: fa + fb
    elif op == "add_grad":
        ga, gb = fg.tensor(a, requires_grad=True), fg.tensor(b, requires_grad=True)
        run["numpy"] = lambda: a + b
        run["funcgrad"] = lambda: ga + gb
    else:
        run["numpy"] = lambda: a @ b
        run["funcgrad"] = lambda: fa @ fb
    try:
        import torch

        torch.set_num_threads(max(1, torch.get_num_threads()))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if op == "add_grad":
            ta, tb = ta.clone().requires_grad_(), tb.clone().requires_grad_()
        run["pytorch"] = (lambda: ta + tb) if op.startswith("add") else (lambda: ta @ tb)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        ja, jb = jnp.asarray(a), jnp.asarray(b)
        if op.startswith("add"):
            run["jax"] = lambda: (ja + jb).block_until_ready()
        else:
            run["jax"] = lambda: (ja @ jb).block_until_ready()
        run["jax"]()
        del jax
    except ImportError:
        pass
    return run


def bench(label: str, run: dict[str, Callable[[], Any]], rounds: int, number: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in run}
    for fn in run.values():  # warm up
        per_call(fn, number // 10 + 1)
    for _ in range(rounds):
        for name, fn in run.items():
            time.sleep(0.12)  # let BLAS worker threads go idle before switching framework
            samples[name].append(per_call(fn, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    base = med["numpy"]
    print(f"\n{label}")
    print(f"  {'':10s} {'median':>12s} {'vs numpy':>10s}")
    for name, t in med.items():
        print(f"  {name:10s} {t * 1e6:10.2f} us {t / base:9.2f}x")
    return med


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    add1 = bench("a + b, float32 (1,)", contenders((1,), (1,), "add"), args.rounds, 20000)
    bench("a + b, float32 (1000,)", contenders((1000,), (1000,), "add"), args.rounds, 20000)
    bench("a + b, float32 (1,), requires_grad (jax: no recording)", contenders((1,), (1,), "add_grad"), args.rounds,
          20000)
    mm = bench("a @ b, float32 (64, 64) @ (64, 64)", contenders((64, 64), (64, 64), "matmul"), args.rounds, 2000)
    print("\ntargets:")
    print(f"  funcgrad (1,) add: {add1['funcgrad'] * 1e6:.2f} us (target <= 2.0 us)")
    print(f"  funcgrad matmul / numpy: {mm['funcgrad'] / mm['numpy']:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
