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
from .core import Primitive, ShapedArray
from .rules import elementwise, require_kind

__all__ = ["UNARY", "BINARY", "COMPARISON", "select_p", "convert_element_type_p", "copy_p",
           "integer_pow_p"]

_LOW_PRECISION = ("float16", "bfloat16")


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
            return np.frompyfunc(math.erf, 1, 1)(x).astype(x.dtype)
        return erf(x)
    from cupyx.scipy.special import erf as cupy_erf

    return cupy_erf(x)


def _round(xp: Any, x: Any, decimals: int = 0) -> Any:
    return xp.round(x, decimals)


# name -> (kernel, accepted kinds); all keep their input dtype
UNARY_TABLE: dict[str, tuple[Any, str]] = {
    "neg": ("negative", "iuf"),
    "exp": ("exp", "f"), "exp2": ("exp2", "f"), "log": ("log", "f"), "log2": ("log2", "f"),
    "log10": ("log10", "f"), "log1p": ("log1p", "f"), "expm1": ("expm1", "f"),
    "sqrt": ("sqrt", "f"), "rsqrt": (_upcast(_rsqrt), "f"),
    "sin": ("sin", "f"), "cos": ("cos", "f"), "tan": ("tan", "f"),
    "arcsin": ("arcsin", "f"), "arccos": ("arccos", "f"), "arctan": ("arctan", "f"),
    "sinh": ("sinh", "f"), "cosh": ("cosh", "f"), "tanh": ("tanh", "f"),
    "arcsinh": ("arcsinh", "f"), "arccosh": ("arccosh", "f"), "arctanh": ("arctanh", "f"),
    "sigmoid": (_upcast(_sigmoid), "f"), "erf": (_upcast(_erf), "f"),
    "abs": ("absolute", "iuf"), "sign": ("sign", "iuf"), "square": ("square", "iuf"),
    "reciprocal": ("reciprocal", "f"),
    "floor": ("floor", "f"), "ceil": ("ceil", "f"), "trunc": ("trunc", "f"),
    "round": (_round, "f"),
    "bitwise_invert": ("invert", "biu"),
}
NON_DIFFERENTIABLE = {"sign", "floor", "ceil", "trunc", "round", "bitwise_invert"}

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
    name: Primitive(name, _unary_rule(name, kinds), kernel=kernel, differentiable=name not in NON_DIFFERENTIABLE)
    for name, (kernel, kinds) in UNARY_TABLE.items()
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
