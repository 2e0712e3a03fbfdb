"""fg.vmap against Python loops, torch.func and jax.vmap.

Workloads (docs/performance.md has the targets):
  per-example gradients of an MLP 64-128-10 with softmax cross-entropy, batch 256:
      a Python loop of fg.grad, fg.vmap(fg.grad), fg.compile(fg.vmap(fg.grad)),
      torch.func.vmap(torch.func.grad), jax.jit(jax.vmap(jax.grad))
  jacrev of tanh(W @ x), 256 -> 256: fg.jacrev (vmap over the rows) against one VJP per
      row in a Python loop (how jacrev worked before vmap), torch.func.jacrev, jax.jacrev
  batch normalisation of (256, 512) float32 written per example with named-axis pmean
      (fg.vmap(axis_name=)) against the same written with reductions over the batch axis,
      eager and compiled, and jax.vmap with jax.lax.pmean (target: within 1.2x)

Contenders run interleaved in one process, 10-20 calls a round (at least ~10 ms: the first
calls after the pause between contenders run on a cold machine); the ratios are paired
(each round's ratio, then the median).

    python benchmarks/bench_vmap.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

SIZES, BATCH = (64, 128, 10), 256


def data():
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((SIZES[0], SIZES[1])) * 0.1, "b1": np.zeros(SIZES[1]),
              "w2": rng.standard_normal((SIZES[1], SIZES[2])) * 0.1, "b2": np.zeros(SIZES[2])}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[2], BATCH)
    return params, x, y


def per_example_funcgrad(params, x, y):
    p = {k: fg.asarray(v) for k, v in params.items()}
    fx, fy = fg.asarray(x), fg.asarray(y)

    def loss(p, x, y):
        h = fg.tanh(x @ p["w1"] + p["b1"])
        return fg.nn.functional.cross_entropy((h @ p["w2"] + p["b2"])[None], y[None])

    per_example = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))
    compiled = fg.compile(per_example)
    grad = fg.grad(loss)
    return {"loop of grad": lambda: [grad(p, fx[i], fy[i]) for i in range(BATCH)],
            "vmap(grad)": lambda: per_example(p, fx, fy), "compile(vmap(grad))": lambda: compiled(p, fx, fy)}


def per_example_torch(params, x, y):
    torch = optional("torch")
    if torch is None:
        return None
    p = {k: torch.from_numpy(v) for k, v in params.items()}
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def loss(p, x, y):
        h = torch.tanh(x @ p["w1"] + p["b1"])
        return torch.nn.functional.cross_entropy((h @ p["w2"] + p["b2"])[None], y[None])

    per_example = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
    return {"torch.func vmap(grad)": lambda: per_example(p, tx, ty)}


def per_example_jax(params, x, y):
    jax = optional("jax")
    if jax is None:
        return None
    import jax.numpy as jnp

    p = {k: jnp.asarray(v) for k, v in params.items()}
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return jax.nn.logsumexp(logits) - logits[y]

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    return {"jax.jit(vmap(grad))": lambda: jax.block_until_ready(per_example(p, jx, jy))}


def jacobian_contenders():
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    x = rng.standard_normal(256).astype(np.float32)
    fw, fx = fg.asarray(w), fg.asarray(x)

    def f(v):
        return fg.tanh(fw @ v)

    def loop_jacrev():  # one VJP per output element, as jacrev ran before vmap
        out, f_vjp = fg.vjp(f, fx)
        eye = fg.eye(256, dtype=fg.float32)
        return fg.stack([f_vjp(eye[i])[0] for i in range(256)])

    run = {"fg.jacrev (vmap)": lambda: fg.jacrev(f)(fx), "loop of vjp": loop_jacrev}
    torch = optional("torch")
    if torch is not None:
        tw, tx = torch.from_numpy(w), torch.from_numpy(x)
        run["torch.func.jacrev"] = lambda: torch.func.jacrev(lambda v: torch.tanh(tw @ v))(tx)
    jax = optional("jax")
    if jax is not None:
        import jax.numpy as jnp

        jw, jx = jnp.asarray(w), jnp.asarray(x)
        jac = jax.jit(jax.jacrev(lambda v: jnp.tanh(jw @ v)))
        run["jax.jit(jacrev)"] = lambda: jax.block_until_ready(jac(jx))
    return run


def report(title: str, run: dict, rounds: int, number: int, base: str) -> None:
    samples = interleaved_samples(run, rounds, number, pause=0.25)
    med, best = median_and_best(samples)
    print(title)
    for key in run:
        ratio = f"{paired_ratio(samples, key, base):8.2f}x {base}" if key != base else ""
        print(f"  {key:26s} {med[key] * 1e3:9.3f} ms (best {best[key] * 1e3:8.3f})  {ratio}")


def normalisation_contenders() -> dict:
    x = np.random.default_rng(3).standard_normal((256, 512)).astype(np.float32)
    fx = fg.asarray(x)

    def per_example(v):
        mean = fg.lax.pmean(v, "batch")
        return (v - mean) / fg.sqrt(fg.lax.pmean((v - mean) ** 2, "batch") + 1e-5)

    def whole(xs):
        mean = xs.mean(0)
        return (xs - mean) / fg.sqrt(((xs - mean) ** 2).mean(0) + 1e-5)

    named = fg.vmap(per_example, axis_name="batch")
    run = {"vmap with pmean": lambda: named(fx), "reductions over axis 0": lambda: whole(fx),
           "compiled vmap with pmean": (lambda f: lambda: f(fx))(fg.compile(named)),
           "compiled reductions": (lambda f: lambda: f(fx))(fg.compile(whole))}
    jax = optional("jax")
    if jax is not None:
        jnp = jax.numpy

        def jax_example(v):
            mean = jax.lax.pmean(v, "batch")
            return (v - mean) / jnp.sqrt(jax.lax.pmean((v - mean) ** 2, "batch") + 1e-5)

        jitted, jx = jax.jit(jax.vmap(jax_example, axis_name="batch")), jnp.asarray(x)
        run["jax.jit(jax.vmap) with pmean"] = lambda: jitted(jx).block_until_ready()
    for fn in run.values():
        fn()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    params, x, y = data()
    run = dict(per_example_funcgrad(params, x, y))
    for extra in (per_example_torch(params, x, y), per_example_jax(params, x, y)):
        run.update(extra or {})
    for fn in run.values():
        fn()
    report(f"per-example gradients, MLP {'-'.join(map(str, SIZES))}, batch {BATCH}", run, args.rounds, 10,
           base="vmap(grad)")
    report("jacrev of tanh(W @ x), 256 -> 256", jacobian_contenders(), args.rounds, 20, base="fg.jacrev (vmap)")
    report("batch normalisation, (256, 512) float32: named-axis pmean against reductions",
           normalisation_contenders(), args.rounds, 120, base="reductions over axis 0")


if __name__ == "__main__":
    main()
