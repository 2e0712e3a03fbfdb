"""Real models, one training step each: funcgrad eager and ``fg.compile(model)`` against
PyTorch eager and ``torch.compile``, the same source run with each library's imports.

  nanoGPT   examples/nanogpt.py's GPT: 4 layers, 4 heads, width 128, batch 16 x 64
            tokens, AdamW (forward, loss, backward, step)
  MNIST     examples/pytorch_mnist.py's Net (pytorch/examples' CNN), batch 64, Adadelta

Contenders run interleaved in one process, each timed in contiguous blocks after a pause
(common.interleaved_samples); the ratios are paired against PyTorch eager.

    python benchmarks/bench_models.py [--rounds 5] [--no-torch-compile]
"""

from __future__ import annotations

import argparse
import os
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import blas_line, interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _module(file: str, library: str) -> types.ModuleType:
    """An example's source run with ``library``'s imports (``funcgrad`` or ``torch``)."""
    with open(os.path.join(EXAMPLES, file)) as f:
        source = f.read()
    if library == "torch":
        source = source.replace("import funcgrad as torch", "import torch").replace("funcgrad.", "torch.")
    module = types.ModuleType(f"{file[:-3]}_{library}")
    sys.modules[module.__name__] = module  # (dataclasses look their module up)
    exec(compile(source, f"{file} ({library})", "exec"), module.__dict__)  # noqa: S102 - this repository's example
    return module


def _seeded(lib: types.ModuleType, seed: int) -> None:
    lib.manual_seed(seed)


def nanogpt(library: str, compiled: bool):
    lib = optional(library)
    m = _module("nanogpt.py", library)
    _seeded(lib, 0)
    config = m.GPTConfig(block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=True)
    model = m.GPT(config)
    optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=3e-4, betas=(0.9, 0.95), device_type="cpu")
    rng = np.random.default_rng(0)
    x, y = (lib.as_tensor(rng.integers(0, 65, (16, 64))) for _ in range(2))
    forward = lib.compile(model) if compiled else model

    def step():
        _, loss = forward(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    step()
    return {"step": step}


def mnist(library: str, compiled: bool):
    lib = optional(library)
    m = _module("pytorch_mnist.py", library)
    _seeded(lib, 0)
    model = m.Net()
    optimizer = m.optim.Adadelta(model.parameters(), lr=1.0)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, 64)
    x, y = lib.as_tensor(images), lib.as_tensor(labels)
    forward = lib.compile(model) if compiled else model
    model.train()

    def step():
        optimizer.zero_grad()
        loss = m.F.nll_loss(forward(x), y)
        loss.backward()
        optimizer.step()
        return loss

    step()
    return {"step": step}


def report(title: str, contenders: dict, rounds: int, number: int) -> None:
    run = {name: c["step"] for name, c in contenders.items() if c is not None}
    samples = interleaved_samples(run, rounds, number, pause=0.25)
    med, best = median_and_best(samples)
    print(title)
    for name in run:
        ratio = f"{paired_ratio(samples, name, 'PyTorch eager'):6.2f}x PyTorch eager" \
            if "PyTorch eager" in run and name != "PyTorch eager" else ""
        print(f"  {name:22s} {med[name] * 1e3:9.2f} ms (best {best[name] * 1e3:8.2f})  {ratio}")


def _contenders(make, torch_compile: bool) -> dict:
    out = {"funcgrad eager": make("funcgrad", False)}
    try:
        out["fg.compile(model)"] = make("funcgrad", True)
    except Exception as exc:  # noqa: BLE001 - a contender that cannot run is left out, with the reason
        print(f"(fg.compile(model) left out: {type(exc).__name__}: {exc})")
    if optional("torch") is not None:
        out["PyTorch eager"] = make("torch", False)
        if torch_compile:
            try:
                out["torch.compile"] = make("torch", True)
            except Exception as exc:  # noqa: BLE001
                print(f"(torch.compile left out: {type(exc).__name__}: {exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-torch-compile", action="store_true")
    args = parser.parse_args()
    print(blas_line())
    report("nanoGPT step (4 layers, 4 heads, width 128, batch 16 x 64, AdamW)",
           _contenders(nanogpt, not args.no_torch_compile), args.rounds, 3)
    report("MNIST CNN step (pytorch/examples' Net, batch 64, Adadelta)",
           _contenders(mnist, not args.no_torch_compile), args.rounds, 3)


if __name__ == "__main__":
    main()
