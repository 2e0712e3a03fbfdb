"""Scaled dot-product attention on nanoGPT's heads (16 x 4 heads of 64 tokens, width 32,
float32, causal): forward, and forward + backward, as funcgrad's primitives (the native
``attention`` and ``attention_grad`` loops), as the composite funcgrad runs with a mask
(products, masked softmax, products), and as PyTorch's and JAX's (jax.jit) when installed.

Contenders run interleaved in one process, in contiguous blocks after a pause
(common.interleaved_samples); ratios are paired against the primitive. The inputs are
views into one fused projection, as a transformer's are.

    python benchmarks/bench_attention.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

BATCH, HEADS, TOKENS, WIDTH = 16, 4, 64, 32


def _fused() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((BATCH, TOKENS, 3 * HEADS * WIDTH)).astype(np.float32)


def _funcgrad(masked: bool) -> dict[str, Any]:
    """The primitive (``is_causal``), or the composite (the same mask given as an array)."""
    F = fg.nn.functional
    qkv = fg.asarray(_fused())
    mask = fg.asarray(np.tril(np.ones((TOKENS, TOKENS), bool)))

    def attend(t: Any) -> Any:
        q, k, v = (x.reshape(BATCH, TOKENS, HEADS, WIDTH).transpose(1, 2) for x in t.split(HEADS * WIDTH, 2))
        if masked:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    cotangent = fg.asarray(np.random.default_rng(1).standard_normal((BATCH, HEADS, TOKENS, WIDTH)).astype(np.float32))
    return {"forward": lambda: attend(qkv), "forward + backward": lambda: fg.vjp(attend, qkv)[1](cotangent)}


def _torch() -> dict[str, Any] | None:
    torch = optional("torch")
    if torch is None:
        return None
    qkv = torch.tensor(_fused(), requires_grad=True)
    cotangent = torch.tensor(np.random.default_rng(1).standard_normal((BATCH, HEADS, TOKENS, WIDTH)).astype(np.float32))

    def attend() -> Any:
        q, k, v = (x.view(BATCH, TOKENS, HEADS, WIDTH).transpose(1, 2) for x in qkv.split(HEADS * WIDTH, 2))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward() -> Any:
        with torch.no_grad():
            return attend()

    def both() -> Any:
        return torch.autograd.grad(attend(), qkv, cotangent)

    return {"forward": forward, "forward + backward": both}


def _jax() -> dict[str, Any] | None:
    jax = optional("jax")
    if jax is None:
        return None
    jnp = jax.numpy
    qkv = jnp.asarray(_fused())
    cotangent = jnp.asarray(np.random.default_rng(1).standard_normal((BATCH, TOKENS, HEADS, WIDTH)).astype(np.float32))

    def attend(t: Any) -> Any:
        q, k, v = (x.reshape(BATCH, TOKENS, HEADS, WIDTH) for x in jnp.split(t, 3, axis=2))
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)  # (batch, tokens, heads, width)

    forward = jax.jit(attend)
    both = jax.jit(lambda t, c: jax.vjp(attend, t)[1](c))
    return {"forward": lambda: forward(qkv).block_until_ready(),
            "forward + backward": lambda: both(qkv, cotangent)[0].block_until_ready()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    fg.config.compile_backend = "c"
    contenders = {"funcgrad primitive": _funcgrad(False), "funcgrad composite": _funcgrad(True),
                  "PyTorch": _torch(), "jax.jit": _jax()}
    print(f"attention, ({BATCH}, {HEADS}, {TOKENS}, {WIDTH}) float32, causal: medians of {args.rounds} rounds")
    for part in ("forward", "forward + backward"):
        run = {name: c[part] for name, c in contenders.items() if c is not None}
        samples = interleaved_samples(run, args.rounds, 100, pause=0.25)  # (blocks of 50-300 ms)
        med, best = median_and_best(samples)
        print(f" {part}")
        for name in run:
            ratio = "" if name == "funcgrad primitive" else \
                f"{paired_ratio(samples, name, 'funcgrad primitive'):6.2f}x the primitive's time"
            print(f"  {name:20s} {med[name] * 1e3:7.3f} ms (best {best[name] * 1e3:7.3f})  {ratio}")


if __name__ == "__main__":
    main()
