"""The W2 workload: one SGD training step (zero_grad, forward, backward, step) on an
MLP 784-512-256-10, batch 128, softmax cross-entropy; plus the eager (1,) add on
requires_grad inputs, and allocated memory over a long eager loop.

Targets: funcgrad's PyTorch-style step <= 1.10x the hand-written NumPy
step; the requires_grad (1,) add <= 3.0 us; memory flat over 10,000 steps.

    python benchmarks/bench_training.py [--rounds 7] [--long]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_autodiff import BATCH, SIZES, data, numpy_value_and_grad  # noqa: E402
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

LR = 0.01


def numpy_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray):
    def step():
        _, grads = numpy_value_and_grad(params, x, y)  # bench_autodiff's hand-written backward pass
        for p, g in zip(params, grads):
            p -= LR * g

    return step


def funcgrad_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray):
    nn, F = fg.nn, fg.nn.functional
    model = nn.Sequential(nn.Linear(784, 512), nn.Tanh(), nn.Linear(512, 256), nn.Tanh(), nn.Linear(256, 10))
    for p, a in zip(model.parameters(), params):
        p._assign(fg.asarray(a.T.copy() if a.ndim == 2 else a.copy()))
    opt = fg.optim.SGD(model.parameters(), lr=LR)
    fx, fy = fg.asarray(x), fg.asarray(y)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(fx), fy)
        loss.backward()
        opt.step()

    return step


def torch_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray):
    torch = optional("torch")
    if torch is None:
        return None
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.Tanh(), torch.nn.Linear(512, 256),
                                torch.nn.Tanh(), torch.nn.Linear(256, 10))
    with torch.no_grad():
        for p, a in zip(model.parameters(), params):
            p.copy_(torch.from_numpy(a.T.copy() if a.ndim == 2 else a.copy()))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(tx), ty).backward()
        opt.step()

    return step


def jax_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray):
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    def loss_fn(p, x, y):
        W1, b1, W2, b2, W3, b3 = p
        h = jnp.tanh(jnp.tanh(x @ W1 + b1) @ W2 + b2)
        z = h @ W3 + b3
        return (jax.nn.logsumexp(z, axis=1) - jnp.take_along_axis(z, y[:, None], 1)[:, 0]).mean()

    @jax.jit
    def update(p, x, y):
        g = jax.grad(loss_fn)(p, x, y)
        return [a - LR * b for a, b in zip(p, g)]

    state = {"p": [jnp.asarray(a) for a in params]}
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def step():
        state["p"] = update(state["p"], jx, jy)
        jax.block_until_ready(state["p"])

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20)
    parser.add_argument("--long", action="store_true", help="run the full 10,000-step memory check")
    args = parser.parse_args()
    params, x, y = data()
    run = {"numpy (by hand)": numpy_step([a.copy() for a in params], x, y),
           "funcgrad": funcgrad_step(params, x, y)}
    for name, make in [("pytorch", torch_step), ("jax (jit)", jax_step)]:
        s = make(params, x, y)
        if s is not None:
            run[name] = s
    samples = interleaved_samples(run, args.rounds, args.number)
    med, best = median_and_best(samples)
    print(f"SGD step, MLP {'-'.join(map(str, SIZES))}, batch {BATCH} ({args.rounds} rounds)")
    print(f"  {'':16s} {'median round':>21s} {'best round':>21s} {'paired rounds':>14s}")
    for name in run:
        print(f"  {name:16s} {med[name] * 1e3:8.3f} ms {med[name] / med['numpy (by hand)']:6.2f}x "
              f"{best[name] * 1e3:8.3f} ms {best[name] / best['numpy (by hand)']:6.2f}x "
              f"{paired_ratio(samples, name, 'numpy (by hand)'):13.2f}x")
    print("  (paired rounds: the median over rounds of each round's ratio to numpy)")
    print("  target: funcgrad <= 1.10x numpy (by hand)")

    a, b = fg.ones((1,), requires_grad=True), fg.ones((1,), requires_grad=True)
    adds = {"funcgrad": lambda: a + b}
    torch = optional("torch")
    if torch is not None:
        ta, tb = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
        adds["pytorch"] = lambda: ta + tb
    add_samples = interleaved_samples(adds, args.rounds, 20000, pause=0.05)
    add_med, add_best = median_and_best(add_samples)
    print(f"\neager (1,) add on requires_grad inputs ({args.rounds} rounds; target: funcgrad <= 3.0 us)")
    for name in adds:
        print(f"  {name:16s} median {add_med[name] * 1e6:5.2f} us   best {add_best[name] * 1e6:5.2f} us")
    if "pytorch" in adds:
        print(f"  funcgrad / pytorch, paired rounds: {paired_ratio(add_samples, 'funcgrad', 'pytorch'):.2f}x "
              "(the machine may have a fast and a slow phase, about 1.6x apart: the ratio holds across both)")

    steps = 10_000 if args.long else 300
    step = funcgrad_step(params, x[:8], y[:8])
    for _ in range(5):
        step()
    gc.collect()
    before = fg.memory.allocated()
    for _ in range(steps):
        step()
    gc.collect()
    print(f"memory over {steps} eager training steps: {before} -> {fg.memory.allocated()} bytes allocated "
          f"({'flat' if fg.memory.allocated() == before else 'GROWING'})")


if __name__ == "__main__":
    main()
