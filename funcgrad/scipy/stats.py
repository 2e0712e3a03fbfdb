"""``fg.scipy.stats``: the normal distributions of ``scipy.stats`` that ``jax.scipy.stats``
and ``autograd.scipy.stats`` provide, differentiable in every argument: ``norm`` (``pdf``,
``logpdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``) and ``multivariate_normal`` (``pdf``,
``logpdf``), with SciPy's signatures."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from .. import ops
from ..array import ArrayBase
from ..dtypes import result_type
from ..errors import ShapeError
from . import linalg as _linalg
from .special import erfc

__all__ = ["norm", "multivariate_normal"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standard(x: Any, loc: Any, scale: Any) -> Any:
    """``(x - loc) / scale``, Python numbers kept weak (they take ``x``'s precision)."""
    return (ops.asarray(x) - loc) / scale


def _log(v: Any) -> Any:
    return math.log(v) if isinstance(v, (int, float)) else ops.log(v)


def _norm_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = _standard(x, loc, scale)
    return -0.5 * z * z - _LOG_SQRT_2PI - _log(scale)


def _norm_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ops.exp(_norm_logpdf(x, loc, scale))


def _norm_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return 0.5 * erfc(-_standard(x, loc, scale) / math.sqrt(2))


def _norm_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ops.log(_norm_cdf(x, loc, scale))


def _norm_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return 0.5 * erfc(_standard(x, loc, scale) / math.sqrt(2))


def _norm_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ops.log(_norm_sf(x, loc, scale))


norm = SimpleNamespace(pdf=_norm_pdf, logpdf=_norm_logpdf, cdf=_norm_cdf, logcdf=_norm_logcdf, sf=_norm_sf,
                       logsf=_norm_logsf)
"""The normal distribution of mean ``loc`` and standard deviation ``scale`` (SciPy's ``norm``)."""


def _mvn_logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    x = ops.asarray(x)
    n = x.shape[-1] if x.ndim else 1
    mean = ops.zeros((n,), dtype=x.dtype) if mean is None else ops.asarray(mean)
    cov = cov if isinstance(cov, ArrayBase) else ops.asarray(cov, dtype=result_type(x, 1.0))  # (numbers: x's precision)
    if cov.ndim < 2:  # a variance, or the variances of independent coordinates
        cov = ops.eye(n, dtype=result_type(cov, 1.0)) * cov
    if tuple(cov.shape[-2:]) != (n, n):
        raise ShapeError(f"multivariate_normal: x has {n} coordinates but cov has shape {tuple(cov.shape)}")
    low = _linalg.cholesky(cov, lower=True)
    diff = x - mean
    z = _linalg.solve_triangular(low, ops.swapaxes(diff, -1, -2) if diff.ndim > 1 else diff, lower=True)
    z = ops.swapaxes(z, -1, -2) if diff.ndim > 1 else z
    log_det = ops.sum(ops.log(ops.diagonal(low, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * ops.sum(z * z, axis=-1) - log_det - n * _LOG_SQRT_2PI


def _mvn_pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    return ops.exp(_mvn_logpdf(x, mean, cov, allow_singular))


multivariate_normal = SimpleNamespace(logpdf=_mvn_logpdf, pdf=_mvn_pdf)
"""The multivariate normal of mean ``mean`` and covariance ``cov`` (SciPy's; ``x`` has the
coordinates last, with any batch axes before)."""
