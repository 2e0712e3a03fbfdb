"""``fg.scipy.special``: ``logsumexp``, ``expit``, ``logit``, ``erf``, ``erfc``, ``xlogy``,
``xlog1py``, ``softmax``, ``log_softmax``, ``gammaln``, ``digamma`` (``psi``) and
``polygamma`` with SciPy's signatures (as ``jax.scipy.special`` and
``autograd.scipy.special``), built from funcgrad's differentiable functions."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..ops.reference_docs import sections
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


# The API reference's sections: each function's summary above, its parameters, its result
# and an example whose values are SciPy's.
_ARRAY = "an array or a Python number."
_PARAMETERS = {
    "x": _ARRAY, "p": "probabilities (an array or a Python number).", "n": "the order (a non-negative int).",
    "y": "an array or a Python number, broadcast against ``x``.", "a": "the array.",
    "axis": "the axis or axes (all by default).", "b": "weights of ``exp(a)``, broadcast against ``a``.",
    "keepdims": "keep the reduced axes, of length 1.", "return_sign": "also return the sign of the weighted sum.",
}
_F64 = "dtype=fg.float64"
_REFERENCE = {  # name: (what it returns, the example's lines)
    "polygamma": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.polygamma(1, fg.asarray([1.0, 2.0], {_F64})).round(4).tolist()", "[1.6449, 0.6449]"]),
    "logsumexp": ("The array, or ``(array, sign)`` with ``return_sign``.", [
        f">>> fg.scipy.special.logsumexp(fg.asarray([1.0, 2.0, 3.0], {_F64})).round(4).item()", "3.4076"]),
    "expit": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.expit(fg.asarray([0.0, 2.0], {_F64})).round(4).tolist()", "[0.5, 0.8808]"]),
    "logit": ("An array of ``p``'s shape.", [
        f">>> fg.scipy.special.logit(fg.asarray([0.5, 0.25], {_F64})).round(4).tolist()", "[0.0, -1.0986]"]),
    "erf": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.erf(fg.asarray([0.0, 1.0], {_F64})).round(4).tolist()", "[0.0, 0.8427]"]),
    "erfc": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.erfc(fg.asarray([0.0, 1.0], {_F64})).round(4).tolist()", "[1.0, 0.1573]"]),
    "xlogy": ("An array of the broadcast shape.", [
        f">>> x, y = fg.asarray([0.0, 2.0], {_F64}), fg.asarray([0.0, 3.0], {_F64})",
        ">>> fg.scipy.special.xlogy(x, y).round(4).tolist()", "[0.0, 2.1972]"]),
    "xlog1py": ("An array of the broadcast shape.", [
        f">>> x, y = fg.asarray([0.0, 2.0], {_F64}), fg.asarray([-1.0, 3.0], {_F64})",
        ">>> fg.scipy.special.xlog1py(x, y).round(4).tolist()", "[0.0, 2.7726]"]),
    "softmax": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.softmax(fg.asarray([[1.0, 2.0], [3.0, 4.0]], {_F64})).round(4).tolist()",
        "[[0.0321, 0.0871], [0.2369, 0.6439]]"]),
    "log_softmax": ("An array of ``x``'s shape.", [
        f">>> fg.scipy.special.log_softmax(fg.asarray([1.0, 2.0], {_F64})).round(4).tolist()", "[-1.3133, -0.3133]"]),
}
for _name, (_returns, _example) in _REFERENCE.items():
    _fn = globals()[_name]
    _fn.__doc__ = sections(_fn.__doc__ or "", [(p, _PARAMETERS[p]) for p in _fn.__code__.co_varnames[
        :_fn.__code__.co_argcount]], _example, _returns)

