"""Elementwise primitives: unary, binary, select, casts.

Most are one table row: name, kernel (a NumPy/CuPy function name or a small function of
``xp``), the dtype kinds it accepts, its derivative, what that reads, and where it is
checked. Operands of an elementwise primitive share one dtype (Python scalars are weak);
``fg.add`` and friends promote before binding, so the programs show every cast.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ..backends import cc
from ..dtypes import DType, bool_, component_dtype
from ..errors import ArgumentTypeError, DTypeError
from . import lax
from .ad import defelementwise, defjvp, deflinear, defvjp
from .batching import defbroadcasting
from .checks import elementwise, require_kind
from .core import REGISTRY, Primitive, ShapedArray, annotate
from .domains import DISTINCT, NONZERO, POSITIVE, Domain

__all__ = ["UNARY", "BINARY", "COMPARISON", "select_p", "convert_element_type_p", "copy_p", "in_float32",
           "integer_pow_p", "real_p", "imag_p", "conj_p", "polygamma_p", "bind_polygamma"]

_LOW_PRECISION = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})
_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)
_SQRT_HALF, _INV_SQRT_2PI = math.sqrt(0.5), 1.0 / math.sqrt(2.0 * math.pi)


def in_float32(fn: Any) -> Any:
    """Run a float kernel in float32 when its (last) array is float16/bfloat16, then cast the
    result (each of its results) back to that dtype."""

    def kernel(xp: Any, *arrays: Any, **params: Any) -> Any:
        dtype = arrays[-1].dtype
        if dtype in _LOW_PRECISION:
            out = fn(xp, *(a.astype(np.float32) for a in arrays), **params)
            return tuple(o.astype(dtype) for o in out) if isinstance(out, tuple) else out.astype(dtype)
        return fn(xp, *arrays, **params)

    kernel.__name__ = fn.__name__
    return kernel


def _sigmoid(xp: Any, x: Any) -> Any:
    # exp(-log(1 + exp(-x))) never overflows, for large |x| of either sign.
    return xp.exp(-xp.logaddexp(0, -x))


def _expm1(xp: Any, x: Any) -> Any:
    """``exp(x) - 1``; of a complex ``x = a + ib``, ``expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b``
    (no cancellation near 0), with the array API's special values at infinities and zeros."""
    if x.dtype.kind != "c":
        return xp.expm1(x)
    a, b = x.real, x.imag
    with np.errstate(invalid="ignore", over="ignore"):
        re = xp.expm1(a) * xp.cos(b) - 2 * xp.sin(b / 2) ** 2 + 0.0
        im = xp.where(b == 0, b, xp.exp(a) * xp.sin(b))  # a real x keeps its zero (even at a = inf, NaN)
        wild = ~xp.isfinite(b)
        re = xp.where((a == -xp.inf) & wild, -1.0, xp.where((a == xp.inf) & wild, xp.inf, re))
        im = xp.where((a == -xp.inf) & wild, 0.0, xp.where((a == xp.inf) & wild, xp.nan, im))
    out = xp.empty_like(x)
    out.real, out.imag = re, im
    return out


def _rsqrt(xp: Any, x: Any) -> Any:
    return 1 / xp.sqrt(x)


def _erf(xp: Any, x: Any) -> Any:
    return _special(xp, x, "erf")


def _erfc(xp: Any, x: Any) -> Any:
    return _special(xp, x, "erfc")


def _special(xp: Any, x: Any, name: str) -> Any:
    """``erf`` or ``erfc`` of ``x``. Float32: a native loop of C's (glibc's vector one: 1 ulp,
    4 in its AVX-512 version), where a compiler can build it: SciPy computes float32 in
    float64, several times slower."""
    native = _native_unary(xp, x, name + "({0})") if x.dtype == np.float32 else None
    if native is not None:
        return native
    if xp is np:
        try:
            import scipy.special
        except ImportError:  # scipy is optional: an exact but slower loop
            # (a 0-d input gives a Python float back, not an object array: asarray first)
            return np.asarray(np.frompyfunc(getattr(math, name), 1, 1)(x), dtype=object).astype(x.dtype)
        return getattr(scipy.special, name)(x)
    import cupyx.scipy.special

    return getattr(cupyx.scipy.special, name)(x)


def _gelu(xp: Any, x: Any) -> Any:
    """``x Phi(x)``, Phi the normal distribution function (PyTorch's exact GELU), written as
    JAX writes it, ``Phi(x) = erfc(-x / sqrt 2) / 2``: a negative x keeps its relative
    precision, which ``1 + erf(x / sqrt 2)`` loses in float32. One native loop where a
    compiler can build it (the composite's passes over x and its 2 MB temporaries cost a
    transformer's MLP more than its matmuls; float32 Phi from one inlined exponential,
    ``cc.PRELUDE``'s ``fg_normal_tail``); NumPy and SciPy's ``erfc`` otherwise."""
    native = _native_unary(xp, x, "fg_gelu({0})")
    if native is not None:
        return native
    return 0.5 * x * _erfc(xp, -x * _SQRT_HALF)


def _gelu_grad(xp: Any, x: Any) -> Any:
    """GELU's derivative ``Phi(x) + x phi(x)``, phi the normal density: its backward pass as
    one loop, as ``_gelu`` (in float32 Phi and phi share one exponential)."""
    native = _native_unary(xp, x, "fg_gelu_grad({0})")
    if native is not None:
        return native
    return 0.5 * _erfc(xp, -x * _SQRT_HALF) + x * (xp.exp(-0.5 * (x * x)) * _INV_SQRT_2PI)


def _native_unary(xp: Any, x: Any, expr: str) -> Any:
    """C expression ``expr`` over a float32 or float64 NumPy array as one native loop
    (``cc.elementwise``), under the C backend; None otherwise."""
    return cc.elementwise(expr, (x,), x.dtype) if cc.eager_native(xp) and x.dtype in (np.float32, np.float64) \
        else None


def _round(xp: Any, x: Any, decimals: int = 0) -> Any:
    return xp.round(x, decimals)


def _relu(xp: Any, x: Any) -> Any:
    return xp.maximum(x, x.dtype.type(0))  # a zero of x's own dtype (bfloat16 would promote a Python 0)


def _scipy_special(xp: Any) -> Any:
    """SciPy's (or CuPy's) special functions, or None where SciPy is not installed."""
    if xp is not np:
        from cupyx.scipy import special as cupy_special

        return cupy_special
    try:
        from scipy import special
    except ImportError:  # scipy is optional: the kernels below fall back to their own series
        return None
    return special


def _lgamma(xp: Any, x: Any) -> Any:
    """``log|Gamma(x)|`` (SciPy's ``gammaln``; the C library's ``lgamma`` without SciPy)."""
    special = _scipy_special(xp)
    if special is not None:
        return special.gammaln(x)
    return np.asarray(np.frompyfunc(math.lgamma, 1, 1)(x), dtype=object).astype(x.dtype)


def _polygamma(xp: Any, x: Any, n: int = 0) -> Any:
    """The ``n``-th derivative of the digamma function (SciPy's ``polygamma``, ``digamma`` for
    ``n = 0``); without SciPy, the recurrence up to ``x >= 10`` and the asymptotic series."""
    special = _scipy_special(xp)
    if special is not None:
        # (the order as an array: CuPy's polygamma compares it elementwise)
        return (special.digamma(x) if n == 0 else special.polygamma(xp.asarray(n), x)).astype(x.dtype)
    return polygamma_series(np.asarray(x, np.float64), n).astype(x.dtype)


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def polygamma_series(x: np.ndarray, n: int) -> np.ndarray:
    """psi^(n)(x) for x > 0: psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1) up to
    x >= 10, then the asymptotic expansion in Bernoulli numbers."""
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    with np.errstate(all="ignore"):
        shift = np.zeros_like(x)
        y = x.copy()
        while True:
            small = y < 10
            if not small.any():
                break
            shift = shift + np.where(small, sign * math.factorial(n) / y ** (n + 1), 0.0)
            y = np.where(small, y + 1, y)
        if n == 0:
            tail = np.log(y) - 0.5 / y
            for k, b in enumerate(_BERNOULLI, start=1):
                tail = tail - b / (2 * k * y ** (2 * k))
        else:
            tail = math.factorial(n - 1) / y ** n + math.factorial(n) / (2 * y ** (n + 1))
            for k, b in enumerate(_BERNOULLI, start=1):
                tail = tail + b * math.factorial(2 * k + n - 1) / (math.factorial(2 * k) * y ** (2 * k + n))
            tail = tail * sign
        return np.where(x > 0, tail + shift, np.nan)


# psi^(n) as a primitive with the order as a parameter: its derivative is the next order
polygamma_p = Primitive("polygamma", lambda x, n=0: elementwise("polygamma", x, kinds="f"),
                        kernel=in_float32(_polygamma), differentiable=True, domain=POSITIVE, arity=(1, 1),
                        autocast="widen")
defbroadcasting(polygamma_p)
defelementwise(polygamma_p, lambda t, ans, x, n=0: t * bind_polygamma(x, n + 1), saves="args")


def bind_polygamma(x: Any, n: int) -> Any:
    """``psi^(n)(x)`` (``lgamma``'s derivative is ``n = 0``)."""
    return polygamma_p.bind(x, n=int(n))


# One row per unary primitive, all keeping their input dtype: its kernel, the dtype kinds
# it accepts, its derivative d(x, ans) (one function serves both modes: t * d and g * d;
# None: no derivative), what d reads (what the backward pass keeps), and where the
# derivative is checked (None: REAL).
_UNIT = Domain(-0.8, 0.8)
UNARY_TABLE: dict[str, tuple[Any, str, Any, str | None, Domain | None]] = {
    "neg": ("negative", "iufc", lambda x, a: -1.0, "nothing", None),
    "exp": ("exp", "fc", lambda x, a: a, "ans", None),
    "exp2": ("exp2", "fc", lambda x, a: a * _LN2, "ans", None),
    "log": ("log", "fc", lambda x, a: lax.reciprocal(x), "args", POSITIVE),
    "log2": ("log2", "fc", lambda x, a: lax.reciprocal(x * _LN2), "args", POSITIVE),
    "log10": ("log10", "fc", lambda x, a: lax.reciprocal(x * _LN10), "args", POSITIVE),
    "log1p": ("log1p", "fc", lambda x, a: lax.reciprocal(x + 1.0), "args", Domain(-0.7, 3.0)),
    "expm1": (_expm1, "fc", lambda x, a: a + 1.0, "ans", None),
    "sqrt": ("sqrt", "fc", lambda x, a: 0.5 / a, "ans", POSITIVE),
    "rsqrt": (in_float32(_rsqrt), "fc", lambda x, a: -0.5 * a * a * a, "ans", POSITIVE),
    "sin": ("sin", "fc", lambda x, a: lax.cos(x), "args", None),
    "cos": ("cos", "fc", lambda x, a: -lax.sin(x), "args", None),
    "tan": ("tan", "fc", lambda x, a: 1.0 + a * a, "ans", Domain(-1.2, 1.2)),
    "arcsin": ("arcsin", "fc", lambda x, a: lax.rsqrt(1.0 - x * x), "args", _UNIT),
    "arccos": ("arccos", "fc", lambda x, a: -lax.rsqrt(1.0 - x * x), "args", _UNIT),
    "arctan": ("arctan", "fc", lambda x, a: lax.reciprocal(1.0 + x * x), "args", None),
    "sinh": ("sinh", "fc", lambda x, a: lax.cosh(x), "args", None),
    "cosh": ("cosh", "fc", lambda x, a: lax.sinh(x), "args", None),
    "tanh": ("tanh", "fc", lambda x, a: 1.0 - a * a, "ans", None),
    "arcsinh": ("arcsinh", "fc", lambda x, a: lax.rsqrt(x * x + 1.0), "args", None),
    "arccosh": ("arccosh", "fc", lambda x, a: lax.rsqrt(x * x - 1.0), "args", Domain(1.3, 3.0)),
    "arctanh": ("arctanh", "fc", lambda x, a: lax.reciprocal(1.0 - x * x), "args", _UNIT),
    "sigmoid": (in_float32(_sigmoid), "f", lambda x, a: a * (1.0 - a), "ans", None),
    "erf": (in_float32(_erf), "f", lambda x, a: _TWO_OVER_SQRT_PI * lax.exp(-(x * x)), "args", None),
    "lgamma": (in_float32(_lgamma), "f", lambda x, a: bind_polygamma(x, 0), "args", POSITIVE),
    "gelu": (in_float32(_gelu), "f", lambda x, a: lax.gelu_grad(x), "args", None),
    # d/dx (Phi + x phi) = phi (2 - x^2)
    "gelu_grad": (in_float32(_gelu_grad), "f", lambda x, a: lax.exp(-0.5 * (x * x)) * (_INV_SQRT_2PI * (2.0 - x * x)),
                  "args", None),
    "abs": ("absolute", "iufc", lambda x, a: lax.sign(x), "args", NONZERO),
    "square": ("square", "iufc", lambda x, a: 2.0 * x, "args", None),
    "reciprocal": ("reciprocal", "fc", lambda x, a: -(a * a), "ans", NONZERO),
    # max(x, 0) as one operation (PyTorch's relu): NaN stays NaN, the derivative at 0 is 0
    # (maximum's splits ties), and it is faster than the composite (docs/performance.md)
    "relu": (_relu, "iuf", lambda x, a: lax.convert(lax.gt(a, 0), a.dtype), "ans", NONZERO),
    "sign": ("sign", "iufc", None, None, None), "floor": ("floor", "f", None, None, None),
    "ceil": ("ceil", "f", None, None, None), "trunc": ("trunc", "f", None, None, None),
    "round": (_round, "fc", None, None, None), "bitwise_invert": ("invert", "biu", None, None, None),
}


def _share(winner: Any) -> Any:
    """max/min: 1 where this operand wins, 0.5 at ties (as JAX splits them, so the sum over
    both operands stays exact), else 0."""

    def rule(t: Any, ans: Any, x: Any, y: Any) -> Any:
        one = lax.const(x if hasattr(x, "dtype") else y, 1.0)
        return t * lax.select(winner(x, y), one, lax.select(lax.eq(x, y), 0.5 * one, 0.0))

    return rule


_MAX, _MIN = _share(lax.gt), _share(lax.lt)


def _pow_exponent_factor(ans: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dy = x**y * log(x). At x = 0 it is 0 for y >= 0 (x**y is 0 or 1 nearby); for
    y < 0, where x**y is infinite, it is NaN (as JAX gives)."""
    x = x if hasattr(x, "dtype") else lax.const(ans, x)  # a Python scalar base: its log in the result's dtype
    safe_log = lax.log(lax.select(lax.eq(x, 0), 1.0, x))
    return lax.select(lax.logical_and(lax.eq(x, 0), lax.ge(y, 0)), 0.0, ans * safe_log)


def _pow_base_factor(t: Any, x: Any, y: Any) -> Any:
    """t * d(x**y)/dx = t * y * x**(y - 1). Where y is 0 the function is the constant 1, so
    this is 0, at x = 0 too, where x**(y - 1) is infinite (as JAX and PyTorch give); the base
    is replaced there before the power, so no higher derivative meets the infinity either."""
    if not hasattr(y, "dtype"):  # a Python scalar exponent
        return t * 0.0 if y == 0 else t * y * lax.pow(x, y - 1)
    constant = lax.eq(y, 0)
    return lax.select(constant, 0.0, t * y * lax.pow(lax.select(constant, 1.0, x), y - 1))


def _copysign_factor(x: Any, ans: Any) -> Any:
    one = lax.const(ans, 1.0)
    return lax.select(lax.eq(lax.signbit(x), lax.signbit(ans)), one, -one)


# One row per binary primitive: its kernel, the dtype kinds it accepts, and its derivative in
# each operand, ``d(t, ans, x, y)``: the tangent (or cotangent) ``t`` times that partial
# (elementwise, so one rule serves both modes; None: no derivative); then what the rules
# read and where they are checked (None: REAL).
_NONE = (None, None, None, None)
BINARY_TABLE: dict[str, tuple[Any, ...]] = {
    "add": ("add", "biufc", lambda t, a, x, y: t, lambda t, a, x, y: t, "nothing", None),
    "sub": ("subtract", "iufc", lambda t, a, x, y: t, lambda t, a, x, y: -t, "nothing", None),
    "mul": ("multiply", "biufc", lambda t, a, x, y: t * y, lambda t, a, x, y: x * t, "args", None),
    "div": ("true_divide", "fc", lambda t, a, x, y: t / y, lambda t, a, x, y: -t * a / y, "both", NONZERO),
    "pow": ("power", "iufc", lambda t, a, x, y: _pow_base_factor(t, x, y),
            lambda t, a, x, y: t * _pow_exponent_factor(a, x, y), "both", POSITIVE),
    "maximum": ("maximum", "biuf", _MAX, lambda t, a, x, y: _MAX(t, a, y, x), "args", DISTINCT),
    "minimum": ("minimum", "biuf", _MIN, lambda t, a, x, y: _MIN(t, a, y, x), "args", DISTINCT),
    "atan2": ("arctan2", "f", lambda t, a, x, y: t * y / (x * x + y * y), lambda t, a, x, y: -t * x / (x * x + y * y),
              "args", NONZERO),
    "hypot": ("hypot", "f", lambda t, a, x, y: t * x / a, lambda t, a, x, y: t * y / a, "both", NONZERO),
    "copysign": ("copysign", "f", lambda t, a, x, y: t * _copysign_factor(x, a), None, (0, "ans"), NONZERO),
    # d/dx = exp(x - ans) = sigmoid(x - y): the same number, but finite where x or y is +inf
    # (exp(inf - inf) is NaN; the derivative is 1 or 0 there, as PyTorch gives)
    "logaddexp": ("logaddexp", "f", lambda t, a, x, y: t * lax.sigmoid(x - y),
                  lambda t, a, x, y: t * lax.sigmoid(y - x), "args", None),
    "remainder": ("remainder", "iuf", lambda t, a, x, y: t, lambda t, a, x, y: -t * lax.floor(x / y), "args",
                  Domain(kind="remainder")),
    "floor_divide": ("floor_divide", "iuf", *_NONE), "nextafter": ("nextafter", "f", *_NONE),
    "bitwise_and": ("bitwise_and", "biu", *_NONE), "bitwise_or": ("bitwise_or", "biu", *_NONE),
    "bitwise_xor": ("bitwise_xor", "biu", *_NONE), "left_shift": ("left_shift", "iu", *_NONE),
    "right_shift": ("right_shift", "iu", *_NONE),
}

# -> bool results
COMPARISON_TABLE: dict[str, tuple[Any, str, int]] = {
    "eq": ("equal", "biufc", 2), "ne": ("not_equal", "biufc", 2), "lt": ("less", "biuf", 2),
    "le": ("less_equal", "biuf", 2), "gt": ("greater", "biuf", 2), "ge": ("greater_equal", "biuf", 2),
    "logical_and": ("logical_and", "b", 2), "logical_or": ("logical_or", "b", 2),
    "logical_xor": ("logical_xor", "b", 2), "logical_not": ("logical_not", "b", 1),
    "isnan": ("isnan", "fc", 1), "isinf": ("isinf", "fc", 1), "isfinite": ("isfinite", "fc", 1),
    "signbit": ("signbit", "f", 1),
}


# Each primitive that C computes as NumPy does, as a C expression: fused kernels write a run
# of them as one statement each (CUDA's in ``compiler/lower.py``, native CPU loops in
# ``compiler/native.py``). The ``fg_`` helpers are the few C lacks (a NaN-propagating
# max/min, relu, sigmoid, reciprocal, and a faster float32 tanh and exp); ``{out}`` is the
# result's C type.
C_EXPR = {
    "neg": "-{0}", "square": "{0} * {0}", "abs": "fabs({0})", "reciprocal": "fg_reciprocal({0})",
    "relu": "fg_relu({0})", "sigmoid": "fg_sigmoid({0})", "tanh": "fg_tanh({0})", "arcsin": "asin({0})",
    "gelu": "fg_gelu({0})", "gelu_grad": "fg_gelu_grad({0})", "exp": "fg_exp({0})",
    "arccos": "acos({0})", "arctan": "atan({0})", "arcsinh": "asinh({0})", "arccosh": "acosh({0})",
    "arctanh": "atanh({0})",
    **{name: f"{name}({{0}})" for name in ("exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
                                           "sin", "cos", "tan", "sinh", "cosh", "erf", "floor", "ceil",
                                           "trunc")},
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}", "pow": "pow({0}, {1})",
    "maximum": "fg_max({0}, {1})", "minimum": "fg_min({0}, {1})", "atan2": "atan2({0}, {1})",
    "hypot": "hypot({0}, {1})", "copysign": "copysign({0}, {1})",
    "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}",
    "ge": "{0} >= {1}", "logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_not": "!{0}",
    "select": "fg_where({0}, {1}, {2})", "convert_element_type": "({out})({0})",
}


def _shape_rule(name: str, kinds: str, out: DType | None = None, kernel: Any = None) -> Any:
    """The shape rule of an elementwise primitive; its parameters are its kernel's keyword
    parameters (``round``'s ``decimals``), and no others: a program that names another (a
    hostile file) is refused where it is read, not where it runs."""
    allowed = _kernel_params(kernel)

    def rule(*args: Any, **params: Any) -> ShapedArray:
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ArgumentTypeError(f"{name}: unexpected parameter(s) {unknown}; it takes "
                                    f"{sorted(allowed) or 'none'}")
        aval = elementwise(name, *args, kinds=kinds, out_dtype=out)
        if name in _REAL_RESULTS and aval.dtype.kind == "c":  # |z|, Re z, Im z of a complex z are real
            return ShapedArray(aval.shape, component_dtype(aval.dtype), aval.device)
        return aval

    return rule


_REAL_RESULTS = {"abs", "real", "imag"}


def _kernel_params(kernel: Any) -> frozenset[str]:
    """The parameters a kernel function takes after ``xp`` and its arrays (those with a default)."""
    try:
        parameters = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):  # a kernel name, or a NumPy ufunc: no parameters
        return frozenset()
    return frozenset(p.name for p in parameters if p.default is not p.empty or p.kind is p.KEYWORD_ONLY)


def _unary(name: str, kernel: Any, kinds: str, deriv: Any, reads: str, domain: Domain | None) -> Primitive:
    prim = Primitive(name, _shape_rule(name, kinds, kernel=kernel), kernel=kernel, differentiable=deriv is not None,
                     domain=domain, arity=(1, 1), autocast="widen")
    defbroadcasting(prim)
    if deriv is not None:
        defelementwise(prim, lambda t, ans, x, **p: t * deriv(x, ans), saves=reads)
    return prim


def _binary(name: str, kernel: Any, kinds: str, dx: Any, dy: Any, reads: Any, domain: Domain | None) -> Primitive:
    prim = Primitive(name, _shape_rule(name, kinds, kernel=kernel), kernel=kernel, differentiable=dx is not None,
                     domain=domain, arity=(2, 2), autocast="widen")
    defbroadcasting(prim)
    if dx is not None:
        defelementwise(prim, dx, dy, saves=reads)
    return prim


UNARY: dict[str, Primitive] = {name: _unary(name, *row) for name, row in UNARY_TABLE.items()}  # type: ignore[arg-type]


# |z| of a complex z is not holomorphic: its tangent is Re(conj(z) t) / |z|, and its
# cotangent (paired bilinearly with t, as JAX pairs them) is g conj(z) / |z|
def _abs_jvp(t: Any, ans: Any, x: Any) -> Any:
    return lax.real(lax.conj(x) * t) / ans if x.dtype.kind == "c" else t * lax.sign(x)


def _abs_vjp(g: Any, ans: Any, x: Any) -> Any:
    return lax.convert(g / lax.abs(x), x.dtype) * lax.conj(x) if x.dtype.kind == "c" else g * lax.sign(x)


defjvp(UNARY["abs"], _abs_jvp)
defvjp(UNARY["abs"], _abs_vjp, saves="args")
# relu's tangent and cotangent pass where the result is positive and are zero elsewhere, as
# PyTorch's threshold_backward (an infinite cotangent at a negative input gives 0, not NaN):
# a comparison and a select, two passes
defelementwise(UNARY["relu"], lambda t, ans, x: lax.select(lax.gt(ans, 0), t, 0.0), saves="ans")
BINARY: dict[str, Primitive] = {name: _binary(name, *row) for name, row in BINARY_TABLE.items()}
COMPARISON: dict[str, Primitive] = {
    name: Primitive(name, _shape_rule(name, kinds, bool_), kernel=kernel, differentiable=False, arity=(arity, arity))
    for name, (kernel, kinds, arity) in COMPARISON_TABLE.items()
}
for _prim in COMPARISON.values():
    defbroadcasting(_prim)


# ---- the few that are not table rows

def _select_rule(cond: Any, x: Any, y: Any) -> ShapedArray:
    if not isinstance(cond, ShapedArray):
        raise DTypeError("where: the condition must be a bool array")
    require_kind("where", cond.dtype, "b", "a bool condition")
    out = elementwise("where", x, y, kinds="biufc")
    return elementwise("where", ShapedArray(cond.shape, out.dtype, cond.device), out, kinds="biufc")


select_p = Primitive("select", _select_rule, kernel="where", autocast="widen", torch_name="Where", onnx="Where")
defelementwise(select_p, None, lambda t, ans, c, x, y: lax.select(c, t, 0.0),
               lambda t, ans, c, x, y: lax.select(c, 0.0, t), saves=(0,))
defbroadcasting(select_p)


def _by_squaring(x: Any, n: int, mul: Callable[[Any, Any], Any]) -> Any:
    """x ** n (n >= 1) by repeated squaring, ``mul`` making each product: the kernel's on
    arrays, the simplification's as equations, so both multiply in one order."""
    acc, base = None, x
    while True:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if not n:
            return acc
        base = mul(base, base)


def _integer_pow(xp: Any, x: Any, *, y: int) -> Any:
    """x**y by repeated squaring: far faster than a generic pow for small y."""
    if y == 0:
        return xp.ones_like(x)
    acc = _by_squaring(x, abs(y), operator.mul)
    if acc is x:
        acc = x.copy()  # type: ignore[union-attr]
    return 1 / acc if y < 0 else acc  # type: ignore[operator]


def _integer_pow_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    aval = elementwise("integer_pow", x, kinds="iufc")
    if y < 0 and aval.dtype.kind not in "fc":
        raise DTypeError(f"integer_pow: integer {aval.dtype} to the negative power {y}")
    return aval


def _integer_pow_deriv(x: Any, y: int) -> Any:
    if y == 0:
        return lax.zeros(x, x.shape)
    return y * x if y == 2 else (lax.full(x, x.shape, 1) if y == 1 else y * lax.integer_pow(x, y - 1))


def _integer_pow_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Pow"""
    g.node("Pow", [ins[0], g.scalar(eqn.params["y"], eqn)], [out])


def _as_products(eqn: Any, ctx: Any) -> Any:
    """x ** 3 -> x * (x * x), and every power up to 16 (1/... for negative ones): the products
    the kernel's repeated squaring makes, in its order, as equations that fuse with their
    neighbours (so ``x ** 3`` and ``x * x * x`` end in the same loop, with the same bits)."""
    y, x = eqn.params["y"], eqn.inputs[0]
    if y in (0, 1) or abs(y) > 16:
        return None
    steps: list[Any] = []

    def mul(a: Any, b: Any) -> Any:
        steps.append(ctx.step(BINARY["mul"], [a, b], eqn, {}))
        return steps[-1].outputs[0]

    acc = _by_squaring(x, abs(y), mul)
    if y < 0:
        steps.append(ctx.step(BINARY["div"], [ctx.literal(1), acc], eqn, {}))
    steps[-1] = ctx.equation(steps[-1].prim, steps[-1].inputs, eqn, {})
    return steps


integer_pow_p = Primitive("integer_pow", _integer_pow_rule, kernel=_integer_pow, domain=Domain(0.3, 2.0),
                          autocast="widen", torch_name="Pow", onnx=_integer_pow_onnx, simplify=_as_products)
defelementwise(integer_pow_p, lambda t, ans, x, y: t * _integer_pow_deriv(x, y), saves="args")
defbroadcasting(integer_pow_p)


def _convert(xp: Any, x: Any, *, new_dtype: DType) -> Any:
    return x.astype(new_dtype.np)


def _convert_rule(x: ShapedArray, *, new_dtype: DType) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, x.device, x.weak)  # (a traced Python number stays one)


def _convert_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Cast"""
    g.node("Cast", ins, [out], to=g.dtype_code(eqn.params["new_dtype"]))


convert_element_type_p = Primitive("convert_element_type", _convert_rule, kernel=_convert, torch_name="ToCopy",
                                   onnx=_convert_onnx)
def _convert_vjp(g: Any, ans: Any, x: Any, new_dtype: DType) -> Any:
    if x.dtype.kind not in "fc":  # integers and bools carry no derivative
        return None
    return lax.convert(lax.real(g) if g.dtype.kind == "c" and x.dtype.kind == "f" else g, x.dtype)


deflinear(convert_element_type_p, _convert_vjp)
defbroadcasting(convert_element_type_p)


def _copy(xp: Any, x: Any) -> Any:
    return x.copy(order="C")


copy_p = Primitive("copy", lambda x: x, kernel=_copy, onnx="Identity")
deflinear(copy_p, lambda g, ans, x: g)
defbroadcasting(copy_p)


# ---- the parts of complex numbers: linear over the reals, so each cotangent is the transpose
# under the bilinear pairing Re(g t): Re z -> g + 0i, Im z -> -i g, conj z -> conj g
# (NumPy's real and imag are views into the complex array: a kernel's result owns its memory)
real_p = Primitive("real", _shape_rule("real", "c"), kernel=lambda xp, x: xp.real(x).copy())
deflinear(real_p, lambda g, ans, x: lax.convert(g, x.dtype))
imag_p = Primitive("imag", _shape_rule("imag", "c"), kernel=lambda xp, x: xp.imag(x).copy())
deflinear(imag_p, lambda g, ans, x: lax.convert(g, x.dtype) * -1j)
conj_p = Primitive("conj", _shape_rule("conj", "c"), kernel="conjugate")
deflinear(conj_p, lambda g, ans, x: lax.conj(g))
for _prim in (real_p, imag_p, conj_p):
    defbroadcasting(_prim)



# ---- facts by name, checked against the registry at import (``core.annotate``)

annotate("c_expr", C_EXPR)


def _native_eager(expr: str, result: str) -> Callable[..., Any]:
    """A large eager application of ``expr`` as one native loop (``cc.elementwise``) for
    float32 or float64 operands of one dtype (a select's condition, a logical operation's
    operands bool), under the C backend; None otherwise. ``result``: ``"same"`` (the
    operands' dtype), ``"bool"``, or ``"select"`` (the chosen values' dtype)."""
    def run(*raw: Any) -> Any:
        if not cc.eager_native(np) or any(a.__class__ is not np.ndarray for a in raw):
            return None
        n = max(a.size for a in raw)
        if n < cc.EAGER_PLAIN_MIN and all(a.size in (n, 1) for a in raw):
            return None  # (NumPy's loops are as fast where nothing broadcasts along a row, and no thread helps)
        values = raw[1:] if result == "select" else raw
        dtype = values[0].dtype
        if (dtype not in (np.float32, np.float64) and not (result == "bool" and dtype == np.bool_)) or \
                any(a.dtype != dtype for a in values) or (result == "select" and raw[0].dtype != np.bool_):
            return None
        return cc.elementwise(expr, raw, np.bool_ if result == "bool" else dtype)

    return run


# The primitives whose C expression gives NumPy's bits (IEEE arithmetic, sqrt, comparisons,
# NaN-propagating max/min, rounding to integers, selects): their large eager applications run
# natively, the transcendental functions' stay NumPy's (a few ulp from libmvec's).
_EXACT = ("neg", "abs", "square", "reciprocal", "relu", "sqrt", "floor", "ceil", "trunc", "add", "sub", "mul", "div",
          "maximum", "minimum", "copysign")
_EXACT_BOOL = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not")
annotate("native_eager", {**{name: _native_eager(C_EXPR[name], "same") for name in _EXACT},
                          **{name: _native_eager(C_EXPR[name], "bool") for name in _EXACT_BOOL},
                          "select": _native_eager(C_EXPR["select"], "select")})
# what ``fg.autocast`` runs in float32 rather than the inputs' dtype: results that lose too
# much in 8 bits of mantissa
annotate("autocast", dict.fromkeys(("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "rsqrt",
                                    "reciprocal", "arcsin", "arccos", "sinh", "cosh", "tan"), "float32"))
annotate("torch_name", {"pow": "Pow", "neg": "Neg", "sub": "Sub", "div": "Div"})
# one ONNX node of the same inputs
annotate("onnx", {
    "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "relu": "Relu", "sqrt": "Sqrt", "abs": "Abs", "sin": "Sin", "cos": "Cos", "tan": "Tan",
    "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "reciprocal": "Reciprocal", "pow": "Pow",
    "maximum": "Max", "minimum": "Min", "eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
    "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_not": "Not", "isnan": "IsNaN",
    "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
})


def _square_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Mul"""
    g.node("Mul", [ins[0], ins[0]], [out])


def _rsqrt_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Sqrt + Reciprocal"""
    g.node("Reciprocal", [g.node("Sqrt", ins)], [out])


def _ne_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Equal + Not"""
    g.node("Not", [g.node("Equal", ins)], [out])


def _gelu_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Mul + Erf + Add + Mul + Mul"""
    phi = g.node("Add", [g.node("Erf", [g.node("Mul", [ins[0], g.scalar(_SQRT_HALF, eqn)])]), g.scalar(1.0, eqn)])
    g.node("Mul", [g.node("Mul", [ins[0], g.scalar(0.5, eqn)]), phi], [out])


annotate("onnx", {"square": _square_onnx, "rsqrt": _rsqrt_onnx, "ne": _ne_onnx, "gelu": _gelu_onnx})


# ---- algebraic identities the simplification pass applies (``Primitive.simplify``)

def _unit(unit: float, commutes: bool) -> Any:
    """``x op unit`` (and ``unit op x`` where op commutes) is ``x``."""

    def rule(eqn: Any, ctx: Any) -> Any:
        a, b = eqn.inputs
        for x, u in ((a, b), (b, a)) if commutes else ((a, b),):
            if ctx.is_number(u, unit) and ctx.same_type(x, eqn.outputs[0]):
                return x
        return None

    return rule


def _double_negation(eqn: Any, ctx: Any) -> Any:
    """-(-x) is x."""
    inner = ctx.producer(eqn.inputs[0])
    if inner is not None and inner.prim is UNARY["neg"] and ctx.same_type(inner.inputs[0], eqn.outputs[0]):
        return inner.inputs[0]
    return None


_ADD_ZERO = _unit(0, True)


def _sum(eqn: Any, ctx: Any) -> Any:
    """``x + 0`` is ``x``; and ``x + u``, where ``u`` is zeros with values added at an index
    (an indexing's gradient) or values padded with zeros (a slice's), is ``x`` with the
    values added there. So the gradients of a split's pieces add into one buffer, rather
    than each into zeros of its own that are then summed: pieces that meet are joined
    (``_joined_pads``: three padded pieces and two ``add``s of the whole array become one
    ``concatenate``), and the others are added into that buffer (``scatter``)."""
    same = _ADD_ZERO(eqn, ctx)
    if same is not None:
        return same
    scatter, full = REGISTRY["scatter"], REGISTRY["full"]
    out = eqn.outputs[0]
    a, b = eqn.inputs
    joined = _joined_pads(eqn, ctx)
    if joined is not None:
        return joined
    for x, u in ((a, b), (b, a)):
        padded = _zero_pad(eqn, ctx, u)
        if padded is not None and ctx.same_type(x, out):
            g = padded.inputs[0]  # (the region as a scatter's slice template: ("s", start, stop, step) an axis)
            template = tuple(("s", lo, lo + n, 1) if n else ("s", 0, 0, 1)
                             for (lo, _), n in zip(padded.params["pad_width"], g.aval.shape))
            return ctx.equation(scatter, [x, g], eqn, {"template": template, "mode": "add"})
        update = ctx.producer(u)
        if update is None or update.prim is not scatter or update.params["mode"] != "add" \
                or not (ctx.same_type(x, out) and ctx.same_type(u, out)):
            continue
        zeros = ctx.producer(update.inputs[0])
        if ctx.is_number(update.inputs[0], 0) or (zeros is not None and zeros.prim is full
                                                   and not isinstance(zeros.params["value"], bool)
                                                   and zeros.params["value"] == 0):
            return ctx.equation(scatter, [x, *update.inputs[1:]], eqn, update.params)
    return None


def _zero_pad(eqn: Any, ctx: Any, u: Any) -> Any:
    """The equation padding ``u`` with zeros to ``eqn``'s output type, or None."""
    update = ctx.producer(u)
    if update is None or update.prim is not REGISTRY["pad"] or update.params["mode"] != "constant" \
            or isinstance(update.params["value"], bool) or update.params["value"] != 0 \
            or not ctx.same_type(u, eqn.outputs[0]):
        return None
    return update


def _joined_pads(eqn: Any, ctx: Any) -> Any:
    """``pad(a) + pad(b)`` where the two pieces lie side by side along one axis and match
    along the others: the two pieces joined, padded once (the gradient of a split: its
    pieces' gradients written once each, into one array, as ``concatenate`` writes them,
    instead of zeros and additions). A piece that is itself such a join along the same axis
    is spliced in, so three pieces are one ``concatenate``."""
    first, second = (_zero_pad(eqn, ctx, u) for u in eqn.inputs)
    if first is None or second is None:
        return None
    shapes = (first.inputs[0].aval.shape, second.inputs[0].aval.shape)
    regions = [[(lo, lo + n) for (lo, _), n in zip(e.params["pad_width"], shape)]
               for e, shape in zip((first, second), shapes)]
    differ = [k for k, (r, t) in enumerate(zip(*regions)) if r != t]
    if len(differ) != 1:
        return None
    (axis,) = differ
    if regions[1][axis][1] == regions[0][axis][0]:  # (the second operand's piece comes first)
        first, second = second, first
    elif regions[0][axis][1] != regions[1][axis][0]:
        return None
    concatenate = REGISTRY["concatenate"]
    pieces: list[Any] = []
    for e in (first, second):
        g = e.inputs[0]
        inner = ctx.producer(g)
        joins = inner is not None and inner.prim is concatenate and inner.params["axis"] == axis
        pieces.extend(inner.inputs if joins else [g])
    out = eqn.outputs[0]
    widths = list(first.params["pad_width"])
    widths[axis] = (widths[axis][0], second.params["pad_width"][axis][1])
    if not any(lo or hi for lo, hi in widths):  # (the pieces fill the whole array)
        return ctx.equation(concatenate, pieces, eqn, {"axis": axis})
    shape = tuple(n - lo - hi for n, (lo, hi) in zip(out.aval.shape, widths))
    joined = ctx.step(concatenate, pieces, eqn, {"axis": axis}, aval=ShapedArray(shape, out.aval.dtype,
                                                                                   out.aval.device))
    return [joined, ctx.equation(REGISTRY["pad"], joined.outputs, eqn,
                                 {**first.params, "pad_width": tuple(widths)})]


annotate("simplify", {"add": _sum, "mul": _unit(1, True), "sub": _unit(0, False),
                      "div": _unit(1, False), "neg": _double_negation})
