"""``fg.scipy.special``: ``logsumexp``, ``expit``, ``logit``, ``erf``, ``erfc``, ``xlogy``,
``xlog1py``, ``softmax``, ``log_softmax``, ``gammaln``, ``digamma`` (``psi``) and
``polygamma`` with SciPy's signatures (as ``jax.scipy.special`` and
``autograd.scipy.special``), built from funcgrad's differentiable functions."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..transforms import stop_gradient

__all__ = ["logsumexp", "expit", "logit", "erf", "erfc", "xlogy", "xlog1py", "softmax", "log_softmax", "gammaln",
           "digamma", "psi", "polygamma"]

gammaln = ops.lgamma  # log|Gamma(x)|, whose derivative is digamma's
digamma = psi = ops.digamma


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of ``digamma`` at ``x`` (SciPy's argument order)."""
    return ops.polygamma(n, x)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """``log(sum(b * exp(a)))`` along ``axis`` without overflow; ``return_sign`` also gives the
    sum's sign (for weights ``b`` that may be negative)."""
    if b is None and not return_sign:
        return ops.logsumexp(a, axis=axis, keepdims=keepdims)
    a = ops.asarray(a)
    top = stop_gradient(ops.max(a, axis=axis, keepdims=True))
    top = ops.where(ops.isfinite(top), top, 0.0)
    total = ops.sum((ops.exp(a - top) if b is None else ops.asarray(b) * ops.exp(a - top)), axis=axis, keepdims=True)
    out = ops.log(ops.abs(total)) + top
    sign = ops.sign(total)
    if not keepdims:
        axes = tuple(range(a.ndim)) if axis is None else axis
        out, sign = ops.squeeze(out, axis=axes), ops.squeeze(sign, axis=axes)
    return (out, sign) if return_sign else out


def expit(x: Any) -> Any:
    """The logistic sigmoid, ``1 / (1 + exp(-x))``."""
    return ops.sigmoid(x)


def logit(p: Any) -> Any:
    """``log(p / (1 - p))``, the inverse of ``expit``."""
    p = ops.asarray(p)
    return ops.log(p) - ops.log1p(-p)


def erf(x: Any) -> Any:
    """The error function."""
    return ops.erf(x)


def erfc(x: Any) -> Any:
    """``1 - erf(x)``."""
    return 1.0 - ops.erf(x)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x`` is 0 (whatever ``y``)."""
    x, y = ops.asarray(x), ops.asarray(y)
    safe = ops.where(x == 0, 1.0, y)
    return ops.where(x == 0, 0.0, x * ops.log(safe))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x`` is 0 (whatever ``y``)."""
    x, y = ops.asarray(x), ops.asarray(y)
    safe = ops.where(x == 0, 0.0, y)
    return ops.where(x == 0, 0.0, x * ops.log1p(safe))


def softmax(x: Any, axis: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis`` (all axes by default, as SciPy's)."""
    return ops.exp(log_softmax(x, axis))


def log_softmax(x: Any, axis: Any = None) -> Any:
    """``x - logsumexp(x)`` along ``axis`` (all axes by default, as SciPy's)."""
    x = ops.asarray(x)
    return x - ops.logsumexp(x, axis=axis, keepdims=True)
