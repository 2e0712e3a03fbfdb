"""``fg.scipy.stats.multivariate_normal``: the multivariate normal of mean ``mean`` and
covariance ``cov`` (SciPy's; ``x`` has the coordinates last, with any batch axes before),
differentiable in every argument."""

from __future__ import annotations

from typing import Any

from ... import ops
from ...array import ArrayBase
from ...dtypes import result_type
from ...errors import ShapeError
from .. import linalg as _linalg
from .norm import LOG_SQRT_2PI

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """The log of the density at ``x`` (a Cholesky factor of ``cov``, solved against)."""
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
    return -0.5 * ops.sum(z * z, axis=-1) - log_det - n * LOG_SQRT_2PI


def pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """The density at ``x``."""
    return ops.exp(logpdf(x, mean, cov, allow_singular))
