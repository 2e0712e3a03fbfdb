"""``fg.scipy.stats.norm``: the normal distribution of mean ``loc`` and standard deviation
``scale`` (SciPy's ``norm``), differentiable in every argument."""

from __future__ import annotations

import math
from typing import Any

from ... import ops
from ..special import erfc

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standard(x: Any, loc: Any, scale: Any) -> Any:
    """``(x - loc) / scale``, Python numbers kept weak (they take ``x``'s precision)."""
    return (ops.asarray(x) - loc) / scale


def _log(v: Any) -> Any:
    return math.log(v) if isinstance(v, (int, float)) else ops.log(v)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log of the density at ``x``."""
    z = _standard(x, loc, scale)
    return -0.5 * z * z - LOG_SQRT_2PI - _log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density at ``x``."""
    return ops.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The probability of a value at most ``x``."""
    return 0.5 * erfc(-_standard(x, loc, scale) / math.sqrt(2))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log of ``cdf``."""
    return ops.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The probability of a value above ``x`` (``1 - cdf``, accurate in the tail)."""
    return 0.5 * erfc(_standard(x, loc, scale) / math.sqrt(2))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log of ``sf``."""
    return ops.log(sf(x, loc, scale))


