"""Reverse mode on an MLP 784-512-256-10, batch 128, softmax cross-entropy.

Prints, in one process, for each framework: the loss (forward) time, the
value_and_grad time, and their ratio; and funcgrad's value_and_grad against the
hand-written NumPy forward+backward. funcgrad's loss is measured written two ways:
with ``F.cross_entropy`` (as the PyTorch contender uses its own) and with the
logsumexp formula (as the JAX contender). Targets: value_and_grad / loss
<= 2.3, and funcgrad eager value_and_grad within 1.15x of hand-written NumPy.

    python benchmarks/bench_autodiff.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

SIZES = (784, 512, 256, 10)
BATCH = 128


def data() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        params += [(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32),
                   np.zeros(n_out, np.float32)]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return params, x, y


def _numpy_forward(p: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, tuple]:
    W1, b1, W2, b2, W3, b3 = p
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    m = z.max(1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(1, keepdims=True)) + m
    return (lse[:, 0] - z[np.arange(len(y)), y]).mean(), (h1, h2, z, lse)


def numpy_value_and_grad(p: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """The MLP's loss and gradient, written by hand."""
    value, (h1, h2, z, lse) = _numpy_forward(p, x, y)
    W1, b1, W2, b2, W3, b3 = p
    dz = np.exp(z - lse)
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh2 = (dz @ W3.T) * (1 - h2 * h2)
    dh1 = (dh2 @ W2.T) * (1 - h1 * h1)
    return value, [x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0)]


def numpy_contenders(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> dict:
    return {"loss": lambda: _numpy_forward(params, x, y)[0], "vg": lambda: numpy_value_and_grad(params, x, y)}


def funcgrad_loss(p: list, x: fg.Array, y: fg.Array, formula: bool = False) -> fg.Array:
    """The loss as a user writes it: ``F.cross_entropy`` (as the PyTorch contender does), or
    with ``formula=True`` spelled out with logsumexp and take_along_axis (as the JAX one)."""
    W1, b1, W2, b2, W3, b3 = p
    h = fg.tanh(x @ W1 + b1)
    h = fg.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    if formula:
        return (fg.logsumexp(z, axis=1) - fg.take_along_axis(z, y[:, None], 1)[:, 0]).mean()
    return fg.nn.functional.cross_entropy(z, y)


def funcgrad_contenders(params: list[np.ndarray], x: np.ndarray, y: np.ndarray, formula: bool = False) -> dict:
    p = [fg.asarray(a) for a in params]
    fx, fy = fg.asarray(x), fg.asarray(y)
    vg = fg.value_and_grad(funcgrad_loss)
    return {"loss": lambda: funcgrad_loss(p, fx, fy, formula), "vg": lambda: vg(p, fx, fy, formula)}


def torch_contenders(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> dict | None:
    torch = optional("torch")
    if torch is None:
        return None
    p = [torch.tensor(a, requires_grad=True) for a in params]
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def loss_fn():
        W1, b1, W2, b2, W3, b3 = p
        h = torch.tanh(tx @ W1 + b1)
        h = torch.tanh(h @ W2 + b2)
        return torch.nn.functional.cross_entropy(h @ W3 + b3, ty)

    def loss():
        with torch.no_grad():
            return loss_fn()

    def vg():
        value = loss_fn()
        return value, torch.autograd.grad(value, p)

    return {"loss": loss, "vg": vg}


def jax_loss(p, x, y):
    """The MLP's loss in jax.numpy (JAX is imported by the caller that has it)."""
    import jax
    import jax.numpy as jnp

    W1, b1, W2, b2, W3, b3 = p
    h = jnp.tanh(x @ W1 + b1)
    h = jnp.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    return (jax.nn.logsumexp(z, axis=1) - jnp.take_along_axis(z, y[:, None], 1)[:, 0]).mean()


def jax_contenders(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> dict | None:
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    p = [jnp.asarray(a) for a in params]
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    loss = jax.jit(jax_loss)
    vg = jax.jit(jax.value_and_grad(jax_loss))
    return {"loss": lambda: loss(p, jx, jy).block_until_ready(),
            "vg": lambda: jax.block_until_ready(vg(p, jx, jy))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20)
    args = parser.parse_args()
    params, x, y = data()
    frameworks = {"numpy (by hand)": numpy_contenders(params, x, y), "funcgrad": funcgrad_contenders(params, x, y),
                  "funcgrad formula": funcgrad_contenders(params, x, y, formula=True)}
    for name, make in [("pytorch", torch_contenders), ("jax (jit)", jax_contenders)]:
        c = make(params, x, y)
        if c is not None:
            frameworks[name] = c
    run = {f"{fw}|{k}": fn for fw, c in frameworks.items() for k, fn in c.items()}
    samples = interleaved_samples(run, args.rounds, args.number)
    med, best = median_and_best(samples)
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, softmax cross-entropy ({args.rounds} rounds)")
    for label, t in (("median round", med), ("best round", best)):
        print(f"  {label:16s} {'loss':>10s} {'value_and_grad':>15s} {'vg / loss':>10s} {'vg vs numpy':>12s}")
        base = t["numpy (by hand)|vg"]
        for fw in frameworks:
            lo, vg = t[f"{fw}|loss"], t[f"{fw}|vg"]
            print(f"  {fw:16s} {lo * 1e3:8.3f}ms {vg * 1e3:13.3f}ms {vg / lo:9.2f}x {vg / base:11.2f}x")
    print(f"  {'paired rounds':16s} {'':>10s} {'':>15s} {'vg / loss':>10s} {'vg vs numpy':>12s}  "
          "(median of each round's ratio)")
    for fw in frameworks:
        print(f"  {fw:16s} {'':>10s} {'':>15s} {paired_ratio(samples, f'{fw}|vg', f'{fw}|loss'):9.2f}x "
              f"{paired_ratio(samples, f'{fw}|vg', 'numpy (by hand)|vg'):11.2f}x")
    print("\ntargets: funcgrad vg/loss <= 2.3; funcgrad vg / numpy-by-hand vg <= 1.15")
    print("(funcgrad: F.cross_entropy, as the PyTorch contender; funcgrad formula: logsumexp and "
          "take_along_axis, as the JAX one)")


if __name__ == "__main__":
    main()
