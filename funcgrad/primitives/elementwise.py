"""Elementwise primitives: unary, binary, select, casts.

Most are one table row: name, kernel (a NumPy/CuPy function name or a small
function of ``xp``), and which dtype kinds they accept. Operands of an
elementwise primitive share one dtype (Python scalars are weak); ``fg.add`` and
friends promote before binding, so the programs show every cast.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import DType, bool_
from ..errors import DTypeError
from . import lax
from .ad import defjvp, deflinear, defvjp
from .core import Primitive, ShapedArray
from .domains import DISTINCT, NONZERO, POSITIVE, Domain
from .rules import elementwise, require_kind

__all__ = ["UNARY", "BINARY", "COMPARISON", "select_p", "convert_element_type_p", "copy_p",
           "integer_pow_p"]

_LOW_PRECISION = ("float16", "bfloat16")
_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)


def _upcast(fn: Any) -> Any:
    """Run a float kernel in float32 for float16/bfloat16 inputs, then cast back."""

    def kernel(xp: Any, x: Any) -> Any:
        if x.dtype.name in _LOW_PRECISION:
            return fn(xp, x.astype(np.float32)).astype(x.dtype)
        return fn(xp, x)

    kernel.__name__ = fn.__name__
    return kernel


def _sigmoid(xp: Any, x: Any) -> Any:
    # exp(-log(1 + exp(-x))) never overflows, for large |x| of either sign.
    return xp.exp(-xp.logaddexp(0, -x))


def _rsqrt(xp: Any, x: Any) -> Any:
    return 1 / xp.sqrt(x)


def _erf(xp: Any, x: Any) -> Any:
    if xp is np:
        try:
            from scipy.special import erf
        except ImportError:  # scipy is optional: an exact but slower loop
            # (a 0-d input gives a Python float back, not an object array: asarray first)
            return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=object).astype(x.dtype)
        return erf(x)
    from cupyx.scipy.special import erf as cupy_erf

    return cupy_erf(x)


def _round(xp: Any, x: Any, decimals: int = 0) -> Any:
    return xp.round(x, decimals)


def _relu(xp: Any, x: Any) -> Any:
    return xp.maximum(x, x.dtype.type(0))  # a zero of x's own dtype (bfloat16 would promote a Python 0)


# One row per unary primitive, all keeping their input dtype: its kernel, the dtype kinds
# it accepts, its derivative d(x, ans) (one function serves both modes: t * d and g * d;
# None: no derivative), what d reads (what the backward pass keeps), and where the
# derivative is checked (None: REAL).
_UNIT = Domain(-0.8, 0.8)
UNARY_TABLE: dict[str, tuple[Any, str, Any, str | None, Domain | None]] = {
    "neg": ("negative", "iuf", lambda x, a: -1.0, "nothing", None),
    "exp": ("exp", "f", lambda x, a: a, "ans", None),
    "exp2": ("exp2", "f", lambda x, a: a * _LN2, "ans", None),
    "log": ("log", "f", lambda x, a: lax.reciprocal(x), "args", POSITIVE),
    "log2": ("log2", "f", lambda x, a: lax.reciprocal(x * _LN2), "args", POSITIVE),
    "log10": ("log10", "f", lambda x, a: lax.reciprocal(x * _LN10), "args", POSITIVE),
    "log1p": ("log1p", "f", lambda x, a: lax.reciprocal(x + 1.0), "args", Domain(-0.7, 3.0)),
    "expm1": ("expm1", "f", lambda x, a: a + 1.0, "ans", None),
    "sqrt": ("sqrt", "f", lambda x, a: 0.5 / a, "ans", POSITIVE),
    "rsqrt": (_upcast(_rsqrt), "f", lambda x, a: -0.5 * a * a * a, "ans", POSITIVE),
    "sin": ("sin", "f", lambda x, a: lax.cos(x), "args", None),
    "cos": ("cos", "f", lambda x, a: -lax.sin(x), "args", None),
    "tan": ("tan", "f", lambda x, a: 1.0 + a * a, "ans", Domain(-1.2, 1.2)),
    "arcsin": ("arcsin", "f", lambda x, a: lax.rsqrt(1.0 - x * x), "args", _UNIT),
    "arccos": ("arccos", "f", lambda x, a: -lax.rsqrt(1.0 - x * x), "args", _UNIT),
    "arctan": ("arctan", "f", lambda x, a: lax.reciprocal(1.0 + x * x), "args", None),
    "sinh": ("sinh", "f", lambda x, a: lax.cosh(x), "args", None),
    "cosh": ("cosh", "f", lambda x, a: lax.sinh(x), "args", None),
    "tanh": ("tanh", "f", lambda x, a: 1.0 - a * a, "ans", None),
    "arcsinh": ("arcsinh", "f", lambda x, a: lax.rsqrt(x * x + 1.0), "args", None),
    "arccosh": ("arccosh", "f", lambda x, a: lax.rsqrt(x * x - 1.0), "args", Domain(1.3, 3.0)),
    "arctanh": ("arctanh", "f", lambda x, a: lax.reciprocal(1.0 - x * x), "args", _UNIT),
    "sigmoid": (_upcast(_sigmoid), "f", lambda x, a: a * (1.0 - a), "ans", None),
    "erf": (_upcast(_erf), "f", lambda x, a: _TWO_OVER_SQRT_PI * lax.exp(-(x * x)), "args", None),
    "abs": ("absolute", "iuf", lambda x, a: lax.sign(x), "args", NONZERO),
    "square": ("square", "iuf", lambda x, a: 2.0 * x, "args", None),
    "reciprocal": ("reciprocal", "f", lambda x, a: -(a * a), "ans", NONZERO),
    # max(x, 0) as one operation (PyTorch's relu): NaN stays NaN, the derivative at 0 is 0
    # (maximum's splits ties), and the MLP's value_and_grad with fg.maximum(x, 0.0) in its
    # place takes 1.26x as long (paired rounds)
    "relu": (_relu, "iuf", lambda x, a: lax.convert(lax.gt(a, 0), a.dtype), "ans", NONZERO),
    "sign": ("sign", "iuf", None, None, None), "floor": ("floor", "f", None, None, None),
    "ceil": ("ceil", "f", None, None, None), "trunc": ("trunc", "f", None, None, None),
    "round": (_round, "f", None, None, None), "bitwise_invert": ("invert", "biu", None, None, None),
}
NON_DIFFERENTIABLE = {name for name, row in UNARY_TABLE.items() if row[2] is None}

BINARY_TABLE: dict[str, tuple[Any, str]] = {
    "add": ("add", "biuf"), "sub": ("subtract", "iuf"), "mul": ("multiply", "biuf"),
    "div": ("true_divide", "f"), "floor_divide": ("floor_divide", "iuf"), "remainder": ("remainder", "iuf"),
    "pow": ("power", "iuf"), "maximum": ("maximum", "biuf"), "minimum": ("minimum", "biuf"),
    "atan2": ("arctan2", "f"), "hypot": ("hypot", "f"), "copysign": ("copysign", "f"),
    "logaddexp": ("logaddexp", "f"), "nextafter": ("nextafter", "f"),
    "bitwise_and": ("bitwise_and", "biu"), "bitwise_or": ("bitwise_or", "biu"),
    "bitwise_xor": ("bitwise_xor", "biu"), "left_shift": ("left_shift", "iu"),
    "right_shift": ("right_shift", "iu"),
}
NON_DIFFERENTIABLE |= {"floor_divide", "nextafter", "bitwise_and", "bitwise_or", "bitwise_xor",
                       "left_shift", "right_shift"}

# -> bool results
COMPARISON_TABLE: dict[str, tuple[Any, str, int]] = {
    "eq": ("equal", "biuf", 2), "ne": ("not_equal", "biuf", 2), "lt": ("less", "biuf", 2),
    "le": ("less_equal", "biuf", 2), "gt": ("greater", "biuf", 2), "ge": ("greater_equal", "biuf", 2),
    "logical_and": ("logical_and", "b", 2), "logical_or": ("logical_or", "b", 2),
    "logical_xor": ("logical_xor", "b", 2), "logical_not": ("logical_not", "b", 1),
    "isnan": ("isnan", "f", 1), "isinf": ("isinf", "f", 1), "isfinite": ("isfinite", "f", 1),
    "signbit": ("signbit", "f", 1),
}


def _unary_rule(name: str, kinds: str) -> Any:
    def rule(x: Any, **params: Any) -> ShapedArray:
        return elementwise(name, x, kinds=kinds)

    return rule


def _binary_rule(name: str, kinds: str, out: DType | None = None) -> Any:
    def rule(x: Any, y: Any) -> ShapedArray:
        return elementwise(name, x, y, kinds=kinds, out_dtype=out)

    return rule


def _bool_rule(name: str, kinds: str) -> Any:
    def rule(*args: Any) -> ShapedArray:
        return elementwise(name, *args, kinds=kinds, out_dtype=bool_)

    return rule


UNARY: dict[str, Primitive] = {
    name: Primitive(name, _unary_rule(name, kinds), kernel=kernel, differentiable=deriv is not None, domain=domain)
    for name, (kernel, kinds, deriv, _uses, domain) in UNARY_TABLE.items()
}
BINARY: dict[str, Primitive] = {
    name: Primitive(name, _binary_rule(name, kinds), kernel=kernel, differentiable=name not in NON_DIFFERENTIABLE)
    for name, (kernel, kinds) in BINARY_TABLE.items()
}
COMPARISON: dict[str, Primitive] = {
    name: Primitive(name, _bool_rule(name, kinds), kernel=kernel, differentiable=False)
    for name, (kernel, kinds, _arity) in COMPARISON_TABLE.items()
}


# ---- the few that are not table rows -----------------------------------------

def _select_rule(cond: Any, x: Any, y: Any) -> ShapedArray:
    if not isinstance(cond, ShapedArray):
        raise DTypeError("where: the condition must be a bool array")
    require_kind("where", cond.dtype, "b", "a bool condition")
    out = elementwise("where", x, y)
    return elementwise("where", ShapedArray(cond.shape, out.dtype, cond.device), out)


select_p = Primitive("select", _select_rule, kernel="where")


def _integer_pow(xp: Any, x: Any, *, y: int) -> Any:
    """x**y by repeated squaring: far faster than a generic pow for small y."""
    if y == 0:
        return xp.ones_like(x)
    n, acc, base = abs(y), None, x
    while True:
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if not n:
            break
        base = base * base
    if acc is x:
        acc = x.copy()
    return 1 / acc if y < 0 else acc


def _integer_pow_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    aval = elementwise("integer_pow", x, kinds="iuf")
    if y < 0 and aval.dtype.kind != "f":
        raise DTypeError(f"integer_pow: integer {aval.dtype} to the negative power {y}")
    return aval


integer_pow_p = Primitive("integer_pow", _integer_pow_rule, kernel=_integer_pow)


def _convert(xp: Any, x: Any, *, new_dtype: DType) -> Any:
    return x.astype(new_dtype.np)


def _convert_rule(x: ShapedArray, *, new_dtype: DType) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, x.device)


convert_element_type_p = Primitive("convert_element_type", _convert_rule, kernel=_convert)


def _copy(xp: Any, x: Any) -> Any:
    return x.copy(order="C")


copy_p = Primitive("copy", lambda x: x, kernel=_copy)


# ---- derivatives ----------------------------------------------------------------------

def _unary_rules(prim: Primitive, deriv: Any, uses: str) -> None:
    defjvp(prim, lambda t, ans, x, **p: t * deriv(x, ans))
    defvjp(prim, lambda g, ans, x, **p: g * deriv(x, ans), saves=uses)


for _name, (_kernel, _kinds, _deriv, _uses, _domain) in UNARY_TABLE.items():
    if _deriv is not None:
        _unary_rules(UNARY[_name], _deriv, _uses)

# Where each binary derivative is checked (everything else: REAL, the default).
for _name, _domain in {
    "div": NONZERO, "pow": POSITIVE, "maximum": DISTINCT, "minimum": DISTINCT, "atan2": NONZERO,
    "hypot": NONZERO, "copysign": NONZERO, "remainder": Domain(kind="remainder"),
}.items():
    BINARY[_name].domain = _domain
integer_pow_p.domain = Domain(0.3, 2.0)


def _max_min_rules(prim: Primitive, winner: Any) -> None:
    """Ties split the gradient evenly (as JAX does), so the sum over inputs stays exact."""

    def share(x: Any, y: Any) -> Any:
        one = lax.const(x if hasattr(x, "dtype") else y, 1.0)
        return lax.select(winner(x, y), one, lax.select(lax.eq(x, y), 0.5 * one, 0.0))

    defjvp(prim, lambda t, ans, x, y: t * share(x, y), lambda t, ans, x, y: t * share(y, x))
    defvjp(prim, lambda g, ans, x, y: g * share(x, y), lambda g, ans, x, y: g * share(y, x), saves="args")


def _safe_log(x: Any) -> Any:
    return lax.log(lax.select(lax.eq(x, 0), 1.0, x))


defjvp(BINARY["add"], lambda t, ans, x, y: t, lambda t, ans, x, y: t)
defvjp(BINARY["add"], lambda g, ans, x, y: g, lambda g, ans, x, y: g, saves="nothing")
defjvp(BINARY["sub"], lambda t, ans, x, y: t, lambda t, ans, x, y: -t)
defvjp(BINARY["sub"], lambda g, ans, x, y: g, lambda g, ans, x, y: -g, saves="nothing")
defjvp(BINARY["mul"], lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t)
defvjp(BINARY["mul"], lambda g, ans, x, y: g * y, lambda g, ans, x, y: x * g, saves="args")
defjvp(BINARY["div"], lambda t, ans, x, y: t / y, lambda t, ans, x, y: -t * ans / y)
defvjp(BINARY["div"], lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * ans / y, saves="both")
def _pow_exponent_factor(ans: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dy = x**y * log(x). At x = 0 it is 0 for y >= 0 (x**y is 0 or 1 nearby); for
    y < 0, where x**y is infinite, it is NaN (as JAX gives)."""
    x = x if hasattr(x, "dtype") else lax.const(ans, x)  # a Python scalar base: its log in the result's dtype
    return lax.select(lax.logical_and(lax.eq(x, 0), lax.ge(y, 0)), 0.0, ans * _safe_log(x))


defjvp(BINARY["pow"], lambda t, ans, x, y: t * y * lax.pow(x, y - 1),
       lambda t, ans, x, y: t * _pow_exponent_factor(ans, x, y))
defvjp(BINARY["pow"], lambda g, ans, x, y: g * y * lax.pow(x, y - 1),
       lambda g, ans, x, y: g * _pow_exponent_factor(ans, x, y), saves="both")
_max_min_rules(BINARY["maximum"], lax.gt)
_max_min_rules(BINARY["minimum"], lax.lt)
defjvp(BINARY["atan2"], lambda t, ans, x, y: t * y / (x * x + y * y), lambda t, ans, x, y: -t * x / (x * x + y * y))
defvjp(BINARY["atan2"], lambda g, ans, x, y: g * y / (x * x + y * y), lambda g, ans, x, y: -g * x / (x * x + y * y),
       saves="args")
defjvp(BINARY["hypot"], lambda t, ans, x, y: t * x / ans, lambda t, ans, x, y: t * y / ans)
defvjp(BINARY["hypot"], lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans, saves="both")


def _copysign_factor(x: Any, ans: Any) -> Any:
    one = lax.const(ans, 1.0)
    return lax.select(lax.eq(lax.signbit(x), lax.signbit(ans)), one, -one)


defjvp(BINARY["copysign"], lambda t, ans, x, y: t * _copysign_factor(x, ans), None)
defvjp(BINARY["copysign"], lambda g, ans, x, y: g * _copysign_factor(x, ans), None, saves=(0, "ans"))
# d logaddexp(x, y) / dx = exp(x - ans) = sigmoid(x - y): the same number, but finite where x
# or y is +inf (exp(inf - inf) is NaN; the derivative is 1 or 0 there, as PyTorch gives).
defjvp(BINARY["logaddexp"], lambda t, ans, x, y: t * lax.sigmoid(x - y), lambda t, ans, x, y: t * lax.sigmoid(y - x))
defvjp(BINARY["logaddexp"], lambda g, ans, x, y: g * lax.sigmoid(x - y), lambda g, ans, x, y: g * lax.sigmoid(y - x),
       saves="args")
defjvp(BINARY["remainder"], lambda t, ans, x, y: t, lambda t, ans, x, y: -t * lax.floor(x / y))
defvjp(BINARY["remainder"], lambda g, ans, x, y: g, lambda g, ans, x, y: -g * lax.floor(x / y), saves="args")

defjvp(select_p, None, lambda t, ans, c, x, y: lax.select(c, t, 0.0), lambda t, ans, c, x, y: lax.select(c, 0.0, t))
defvjp(select_p, None, lambda g, ans, c, x, y: lax.select(c, g, 0.0), lambda g, ans, c, x, y: lax.select(c, 0.0, g),
       saves=(0,))


def _integer_pow_deriv(x: Any, y: int) -> Any:
    if y == 0:
        return lax.zeros(x, x.shape)
    return y * x if y == 2 else (lax.full(x, x.shape, 1) if y == 1 else y * lax.integer_pow(x, y - 1))


defjvp(integer_pow_p, lambda t, ans, x, y: t * _integer_pow_deriv(x, y))
defvjp(integer_pow_p, lambda g, ans, x, y: g * _integer_pow_deriv(x, y), saves="args")


def _convert_back(g: Any, ans: Any, x: Any, new_dtype: DType) -> Any:
    return lax.convert(g, x.dtype) if x.dtype.kind == "f" else None


deflinear(convert_element_type_p, _convert_back)
deflinear(copy_p, lambda g, ans, x: g)
