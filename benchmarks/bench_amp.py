"""Mixed precision on the CPU: the W2 MLP (784-512-256-10, batch 128) training step in float32
and under ``fg.autocast(bfloat16)``, eager (PyTorch-style: forward, backward, SGD step) and
compiled, against PyTorch's CPU autocast when installed. Ratios are paired (interleaved
rounds, see common.py).

funcgrad computes a bfloat16 product as the hardware does (inputs rounded to bfloat16,
float32 accumulation), on NumPy's float32 BLAS: there is no faster bfloat16 kernel to call,
so autocast adds the rounding casts and saves nothing; the ratio says what they cost.

    python benchmarks/bench_amp.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

SIZES, BATCH = (784, 512, 256, 10), 128


def funcgrad_step(low):
    fg.manual_seed(0)
    nn = fg.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.Tanh(), nn.Linear(SIZES[1], SIZES[2]), nn.Tanh(),
                          nn.Linear(SIZES[2], SIZES[3]))
    opt = fg.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = fg.asarray(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = fg.asarray(rng.integers(0, SIZES[-1], BATCH))

    def step():
        opt.zero_grad()
        with fg.autocast("cpu", dtype=fg.bfloat16, enabled=low):
            loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def compiled_step(low):
    rng = np.random.default_rng(0)
    params = [fg.asarray(rng.standard_normal((a, b)).astype(np.float32) * 0.05) for a, b in zip(SIZES, SIZES[1:])]
    x = fg.asarray(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = fg.asarray(rng.integers(0, SIZES[-1], BATCH))

    def loss(p, xb):
        with fg.autocast("cpu", dtype=fg.bfloat16, enabled=low):
            h = fg.tanh(xb @ p[0])
            h = fg.tanh(h @ p[1])
            return fg.nn.functional.cross_entropy(h @ p[2], y)

    @fg.compile
    def step(p, xb):
        g = fg.grad(loss)(p, xb)
        return [w - 0.01 * gw for w, gw in zip(p, g)]

    state = {"p": params}

    def run():
        state["p"] = step(state["p"], x)

    return run


def torch_step(torch, low):
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.Tanh(), nn.Linear(SIZES[1], SIZES[2]), nn.Tanh(),
                          nn.Linear(SIZES[2], SIZES[3]))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(BATCH, SIZES[0]), torch.randint(0, SIZES[-1], (BATCH,))

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    run = {"fg f32": funcgrad_step(False), "fg bf16": funcgrad_step(True),
           "fg compiled f32": compiled_step(False), "fg compiled bf16": compiled_step(True)}
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        run.update({"torch f32": torch_step(torch, False), "torch bf16": torch_step(torch, True)})
    samples = interleaved_samples(run, args.rounds, 20, pause=0.25)
    median, best = median_and_best(samples)
    print(f"W2 MLP {'-'.join(map(str, SIZES))}, batch {BATCH}: one training step")
    for name in run:
        print(f"  {name:18s} {1e3 * median[name]:7.3f} ms (best {1e3 * best[name]:.3f})")
    print(f"  bf16 autocast / f32, eager:    {paired_ratio(samples, 'fg bf16', 'fg f32'):.2f}x")
    print(f"  bf16 autocast / f32, compiled: {paired_ratio(samples, 'fg compiled bf16', 'fg compiled f32'):.2f}x")
    if torch is not None:
        print(f"  PyTorch bf16 autocast / f32:   {paired_ratio(samples, 'torch bf16', 'torch f32'):.2f}x")
        print(f"  funcgrad bf16 / PyTorch bf16:  {paired_ratio(samples, 'fg bf16', 'torch bf16'):.2f}x")


if __name__ == "__main__":
    main()
