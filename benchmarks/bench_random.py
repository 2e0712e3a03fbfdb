"""fg.random against NumPy's default generator, jax.random and torch; and the PyTorch-style
draws (``fg.rand``, ``fg.randn``: PyTorch's own generator and transforms) against torch's.

    normal(key, (1_000_000,)) float32, uniform(key, (1_000_000,)) float32
    fg.rand / fg.randn (1_000_000) float32, fg.randperm(100_000)

Contenders run interleaved in one process; the ratios are paired (each round's ratio, then
the median) against NumPy's ``default_rng().standard_normal`` / ``random``, and the
PyTorch-style draws against ``torch.rand`` / ``randn`` / ``randperm``.

    python benchmarks/bench_random.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

N = 1_000_000


def contenders() -> dict:
    rng = np.random.default_rng(0)
    key = fg.random.key(0)
    run = {"numpy|normal": lambda: rng.standard_normal(N, dtype=np.float32),
           "numpy|uniform": lambda: rng.random(N, dtype=np.float32),
           "funcgrad|normal": lambda: fg.random.normal(key, (N,)),
           "funcgrad|uniform": lambda: fg.random.uniform(key, (N,))}
    jax = optional("jax")
    if jax is not None:
        jkey = jax.random.key(0)
        normal, uniform = jax.jit(lambda k: jax.random.normal(k, (N,))), jax.jit(lambda k: jax.random.uniform(k, (N,)))
        run["jax.jit|normal"] = lambda: normal(jkey).block_until_ready()
        run["jax.jit|uniform"] = lambda: uniform(jkey).block_until_ready()
    torch = optional("torch")
    if torch is not None:
        gen = torch.Generator().manual_seed(0)
        run["torch|normal"] = lambda: torch.randn(N, generator=gen)
        run["torch|uniform"] = lambda: torch.rand(N, generator=gen)
    return run


def torch_style() -> dict:
    """The same draws from a PyTorch generator: funcgrad's and torch's (None without torch)."""
    torch = optional("torch")
    if torch is None:
        return {}
    gen, fgen = torch.Generator().manual_seed(0), fg.Generator().manual_seed(0)
    return {"torch|randn": lambda: torch.randn(N, generator=gen), "funcgrad|randn": lambda: fg.randn(N, generator=fgen),
            "torch|rand": lambda: torch.rand(N, generator=gen), "funcgrad|rand": lambda: fg.rand(N, generator=fgen),
            "torch|randperm": lambda: torch.randperm(N // 10, generator=gen),
            "funcgrad|randperm": lambda: fg.randperm(N // 10, generator=fgen)}


def report(title: str, run: dict, rounds: int, base: str) -> None:
    """Interleaved samples of ``run``, each contender's ratio paired against ``base``'s."""
    samples = interleaved_samples(run, rounds, 5, pause=0.25)
    med, best = median_and_best(samples)
    print(title)
    for key in run:
        fw, what = key.split("|")
        ratio = f"{paired_ratio(samples, key, base + '|' + what):6.2f}x {base}" if fw != base else ""
        print(f"  {what:8s} {fw:10s} {med[key] * 1e3:8.2f} {best[key] * 1e3:8.2f}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    report("1e6 float32 values (median ms, best ms, paired ratio to NumPy)", contenders(), args.rounds, "numpy")
    run = torch_style()
    if run:
        report("PyTorch's generator: fg.rand/randn (1e6 float32), randperm (1e5) (median ms, best ms, paired ratio)",
               run, args.rounds, "torch")


if __name__ == "__main__":
    main()
