"""Checkpointing: activation memory held at the end of the forward pass, and time.

A 16-layer tanh MLP (width 1024, batch 256, float32). Without checkpointing the
backward pass keeps every layer's activation; ``fg.checkpoint`` over groups of
4 layers keeps only each group's input. Measured with ``fg.memory`` (live buffer
bytes), and the same with PyTorch's ``torch.utils.checkpoint`` when installed.
Targets (issue 3): <= 0.3x the bytes of no checkpointing, at <= 1.4x the time.

    python benchmarks/bench_checkpoint.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved, optional  # noqa: E402

import funcgrad as fg  # noqa: E402

DEPTH, WIDTH, BATCH, GROUP = 16, 1024, 256, 4
MiB = 2 ** 20


def make() -> tuple[list[fg.Array], fg.Array]:
    rng = np.random.default_rng(0)
    Ws = [fg.asarray((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)) for _ in range(DEPTH)]
    return Ws, fg.asarray(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))


def layers(Ws: list[fg.Array], h: fg.Array) -> fg.Array:
    for W in Ws:
        h = fg.tanh(h @ W)
    return h


def forward(Ws: list[fg.Array], x: fg.Array, group: int | None) -> fg.Array:
    if group is None:
        return layers(Ws, x).sum()
    h = x
    for i in range(0, DEPTH, group):
        h = fg.checkpoint(lambda v, chunk=Ws[i:i + group]: layers(chunk, v))(h)
    return h.sum()


def held_after_forward(Ws: list[fg.Array], x: fg.Array, group: int | None) -> int:
    gc.collect()
    base = fg.memory.allocated()
    out, f_vjp = fg.vjp(lambda *w: forward(list(w), x, group), *Ws)
    gc.collect()
    held = fg.memory.allocated() - base
    del out, f_vjp
    return held


def torch_held(group: int | None) -> int | None:
    torch = optional("torch")
    if torch is None:
        return None
    from torch.utils.checkpoint import checkpoint

    rng = np.random.default_rng(0)
    Ws = [torch.tensor((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32), requires_grad=True)
          for _ in range(DEPTH)]
    x = torch.from_numpy(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))

    def run(chunk: list, h: object) -> object:
        for W in chunk:
            h = torch.tanh(h @ W)
        return h

    saved: list[int] = []

    def pack(t: object) -> object:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        h = x
        for i in range(0, DEPTH, group or DEPTH):
            chunk = Ws[i:i + (group or DEPTH)]
            h = checkpoint(run, chunk, h, use_reentrant=False) if group else run(chunk, h)
        loss = h.sum()
    seen, total = set(), 0
    for t in saved:
        if t.data_ptr() not in seen and not any(t is W for W in Ws):
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    del loss
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    Ws, x = make()
    plain, ckpt = held_after_forward(Ws, x, None), held_after_forward(Ws, x, GROUP)
    print(f"{DEPTH}-layer tanh MLP, width {WIDTH}, batch {BATCH}: bytes the backward pass holds after the forward")
    print(f"  funcgrad  no checkpoint {plain / MiB:6.1f} MiB   checkpoint every {GROUP} layers {ckpt / MiB:6.1f} MiB"
          f"   ratio {ckpt / plain:.2f}x (target <= 0.3x)")
    tp, tc = torch_held(None), torch_held(GROUP)
    if tp is not None:
        print(f"  pytorch   no checkpoint {tp / MiB:6.1f} MiB   checkpoint every {GROUP} layers {tc / MiB:6.1f} MiB"
              f"   ratio {tc / tp:.2f}x")
    grad_plain = fg.grad(lambda ws: forward(ws, x, None))
    grad_ckpt = fg.grad(lambda ws: forward(ws, x, GROUP))
    med = interleaved({"plain": lambda: grad_plain(Ws), "checkpoint": lambda: grad_ckpt(Ws)}, args.rounds, 1)
    print(f"  time of grad: no checkpoint {med['plain'] * 1e3:.1f} ms, checkpoint {med['checkpoint'] * 1e3:.1f} ms, "
          f"ratio {med['checkpoint'] / med['plain']:.2f}x (target <= 1.4x)")


if __name__ == "__main__":
    main()
