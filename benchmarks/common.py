"""Shared helpers: interleaved timing of several contenders in one process (median and best rounds)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def per_call(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def interleaved_samples(run: dict[str, Callable[[], Any]], rounds: int, number: int,
                        pause: float = 0.12) -> dict[str, list[float]]:
    """Per-call seconds of each contender in every round, alternating contenders every
    round and pausing when switching (NumPy's BLAS threads spin ~0.1 s after a call)."""
    for fn in run.values():
        per_call(fn, max(1, number // 5))
    samples: dict[str, list[float]] = {k: [] for k in run}
    for _ in range(rounds):
        for name, fn in run.items():
            time.sleep(pause)
            samples[name].append(per_call(fn, number))
    return samples


def interleaved(run: dict[str, Callable[[], Any]], rounds: int, number: int, pause: float = 0.12) -> dict[str, float]:
    """Median per-call seconds of each contender (see ``interleaved_samples``)."""
    return {k: statistics.median(v) for k, v in interleaved_samples(run, rounds, number, pause).items()}


def median_and_best(samples: dict[str, list[float]]) -> tuple[dict[str, float], dict[str, float]]:
    """The median round and the best round of each contender. On a shared machine the
    best round is the steadier measure (other work only ever adds time); both are printed."""
    return ({k: statistics.median(v) for k, v in samples.items()}, {k: min(v) for k, v in samples.items()})


def paired_ratio(samples: dict[str, list[float]], num: str, den: str) -> float:
    """The median over rounds of ``num``'s time / ``den``'s time in the same round. Both ran
    seconds apart, so a slow phase of the machine that spans a round cancels out of the
    ratio; a third measure beside the median and best rounds, which each rank contenders'
    rounds on their own."""
    return statistics.median(a / b for a, b in zip(samples[num], samples[den]))


def optional(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        return None


def blas_line() -> str:
    """Which BLAS library funcgrad's products call (``fg.config.blas``), for a report's head:
    the products of a model step are most of its time, and MKL's and OpenBLAS's differ."""
    from funcgrad.backends import cc

    found = cc.blas()
    if found is None:
        return "funcgrad's products: NumPy's (no BLAS native code can call)"
    how = "one thread a call, shared out over funcgrad's threads" if found.sequential else "threaded by itself"
    return f"funcgrad's products: {found.name} ({how}; fg.config.blas = {cc.config.blas!r})"
