"""Checkpointing: the peak memory of a whole gradient computation, and its time.

A 16-layer tanh MLP (width 512, batch 256, float32), with and without ``fg.checkpoint``
over four 4-layer segments (sqrt(L) segments). Two gradients:

* ``input``: with respect to the input, the weights closed over (the backward pass costs
  about one forward pass, so recomputing one forward costs about 1.5x);
* ``weights``: with respect to every weight, as in training (the backward pass costs
  about two forward passes: recomputing costs about 1.33x).

The peak is what must fit in memory: the high-water mark of the forward and backward
passes together, by ``fg.memory.max_allocated`` and by ``tracemalloc`` (NumPy reports its
buffers to it), above what was live before. Targets: peak <= 0.6x without
checkpointing, time <= 1.4x. PyTorch (``torch.utils.checkpoint``) and JAX
(``jax.checkpoint`` under ``jit``) time ratios are printed when they are installed; their
peaks are not (PyTorch's CPU allocator keeps no peak counter, and the process's resident
size does not show one either: memory freed by the warm-up call is reused).

    python benchmarks/bench_checkpoint.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402
from funcgrad.testing import peak_memory  # noqa: E402

DEPTH, WIDTH, BATCH, GROUP = 16, 512, 256, 4
MiB = 2 ** 20


def data() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32) for _ in range(DEPTH)]
    return ws, rng.standard_normal((BATCH, WIDTH)).astype(np.float32)


def layers(ws: list[Any], h: Any, tanh: Callable[[Any], Any]) -> Any:
    for w in ws:
        h = tanh(h @ w)
    return h


def segmented_loss(ws: list[Any], x: Any, group: int | None, tanh: Callable[[Any], Any],
                   checkpoint: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]) -> Any:
    """The MLP's summed output; with ``group``, each ``group`` layers under ``checkpoint``
    (the framework's, as ``checkpoint(f)(x)``)."""
    if group is None:
        return layers(ws, x, tanh).sum()
    for i in range(0, DEPTH, group):
        x = checkpoint(lambda u, chunk=ws[i:i + group]: layers(chunk, u, tanh))(x)
    return x.sum()


def fg_loss(ws: list[Any], x: Any, group: int | None) -> Any:
    return segmented_loss(ws, x, group, fg.tanh, fg.checkpoint)


def fg_runs(ws_np: list[np.ndarray], x_np: np.ndarray, group: int | None) -> dict[str, Callable[[], Any]]:
    ws, x = [fg.asarray(w) for w in ws_np], fg.asarray(x_np)

    def tape_input() -> Any:
        v = x.detach().requires_grad_()
        fg_loss(ws, v, group).backward()
        return v.grad

    def tape_weights() -> Any:
        params = [w.detach().requires_grad_() for w in ws]
        fg_loss(params, x, group).backward()
        return [p.grad for p in params]

    return {"input, fg.grad": lambda: fg.grad(lambda v: fg_loss(ws, v, group))(x),
            "input, tape": tape_input,
            "weights, fg.grad": lambda: fg.grad(lambda w: fg_loss(w, x, group))(ws),
            "weights, tape": tape_weights}


def torch_runs(ws_np: list[np.ndarray], x_np: np.ndarray) -> dict[str, Callable[[], Any]] | None:
    torch = optional("torch")
    if torch is None:
        return None
    from torch.utils.checkpoint import checkpoint

    ws, x = [torch.from_numpy(w) for w in ws_np], torch.from_numpy(x_np)

    def loss(params: list[Any], v: Any, group: int | None) -> Any:
        return segmented_loss(params, v, group, torch.tanh,
                              lambda f: lambda u: checkpoint(f, u, use_reentrant=False))

    def make(what: str, group: int | None) -> Callable[[], Any]:
        def run() -> Any:
            if what == "input":
                v = x.clone().requires_grad_()
                loss(ws, v, group).backward()
                return v.grad
            params = [w.clone().requires_grad_() for w in ws]
            loss(params, x, group).backward()
            return [p.grad for p in params]
        return run

    return {f"{what} {'ckpt' if g else 'plain'}": make(what, g) for what in ("input", "weights") for g in (None, GROUP)}


def jax_runs(ws_np: list[np.ndarray], x_np: np.ndarray) -> dict[str, Callable[[], Any]] | None:
    jax = optional("jax")
    if jax is None:
        return None
    import jax.numpy as jnp

    ws, x = [jnp.asarray(w) for w in ws_np], jnp.asarray(x_np)

    def loss(params: list[Any], v: Any, group: int | None) -> Any:
        return segmented_loss(params, v, group, jnp.tanh, jax.checkpoint)

    out = {}
    for g in (None, GROUP):
        by_input = jax.jit(jax.grad(lambda v, p, g=g: loss(p, v, g)))
        by_weights = jax.jit(jax.grad(lambda p, v, g=g: loss(p, v, g)))
        name = "ckpt" if g else "plain"
        out[f"input {name}"] = lambda f=by_input: f(x, ws).block_until_ready()
        out[f"weights {name}"] = lambda f=by_weights: jax.block_until_ready(f(ws, x))
    return out


def ratios(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float, float]]:
    """Per gradient kind: checkpointed / plain time as (median, best, paired). The contenders
    are one framework's, so they alternate without a pause (as steps of a training loop
    follow each other: a pause lets the machine give back the memory and threads a warm
    loop reuses, which taxes the variant that allocates more)."""
    samples = interleaved_samples(runs, rounds, 3, pause=0.0)
    med, best = median_and_best(samples)
    out = {}
    for what in ("input", "weights"):
        plain, ckpt = f"{what} plain", f"{what} ckpt"
        out[what] = (med[ckpt] / med[plain], best[ckpt] / best[plain], paired_ratio(samples, ckpt, plain))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    ws, x = data()
    print(f"{DEPTH}-layer tanh MLP, width {WIDTH}, batch {BATCH}, float32; checkpoint every {GROUP} layers")
    print("peak of the whole gradient computation (fg.memory / tracemalloc), target <= 0.6x:")
    plain_runs, ckpt_runs = fg_runs(ws, x, None), fg_runs(ws, x, GROUP)
    for name in plain_runs:
        (p, pt), (c, ct) = peak_memory(plain_runs[name]), peak_memory(ckpt_runs[name])
        print(f"  {name:18} no checkpoint {p / MiB:6.2f} / {pt / MiB:6.2f} MiB   checkpoint {c / MiB:6.2f} / "
              f"{ct / MiB:6.2f} MiB   ratio {c / p:.2f}x")
    print("time, checkpoint / no checkpoint (median, best, paired rounds), target <= 1.4x:")
    timed = {f"{what} {kind}": runs[f"{what}, fg.grad"] for kind, runs in (("plain", plain_runs), ("ckpt", ckpt_runs))
             for what in ("input", "weights")}
    contenders = {"funcgrad": timed, "pytorch": torch_runs(ws, x), "jax": jax_runs(ws, x)}
    for name, runs in contenders.items():
        if runs is None:
            print(f"  {name:9} not installed")
            continue
        for what, (m, b, p) in ratios(runs, args.rounds).items():
            print(f"  {name:9} {what:8} {m:.2f} / {b:.2f} / {p:.2f}")
        time.sleep(0.25)


if __name__ == "__main__":
    main()
