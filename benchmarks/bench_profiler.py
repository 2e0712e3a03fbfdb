"""The profiler's cost: a (1,) add and the W2-sized MLP step outside a profile, inside one,
and inside one recording shapes and memory; the cost per event is the difference.
Interleaved rounds (common.py).

    python benchmarks/bench_profiler.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_samples, median_and_best  # noqa: E402

import funcgrad as fg  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    x = fg.ones(1)
    model = fg.nn.Sequential(fg.nn.Linear(784, 512), fg.nn.Tanh(), fg.nn.Linear(512, 10))
    batch = fg.asarray(np.random.default_rng(0).standard_normal((128, 784)).astype(np.float32))

    def add():  # 100 events per call: the block's entry and exit are spread over them
        for _ in range(100):
            x + x

    def step():
        model(batch).sum().backward()

    def inside(fn, **options):
        prof = fg.profiler.profile(**options)

        def run():
            with prof:
                fn()
            prof._events.clear()  # (keep the recording from growing across rounds)

        return run

    for name, fn, n, events in (("100 (1,) adds", add, 300, 100), ("MLP forward+backward", step, 50, None)):
        samples = interleaved_samples({"outside": fn, "profiled": inside(fn),
                                       "profiled, shapes+memory": inside(fn, record_shapes=True, profile_memory=True)},
                                      args.rounds, n)
        median, _ = median_and_best(samples)
        print(f"{name}:")
        for k, v in median.items():
            extra = 1e6 * (v - median["outside"])
            per = f", {extra / events:.2f} us per event" if events and k != "outside" else ""
            print(f"  {k:24s} {1e6 * v:9.2f} us  (+{extra:.2f}{per})")


if __name__ == "__main__":
    main()
