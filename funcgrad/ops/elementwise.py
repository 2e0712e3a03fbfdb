"""Elementwise ``fg.*`` functions: promotion, then one ``bind``.

``_binary`` is the eager hot path for ``a + b``: two arrays of one dtype go
straight to ``bind``; anything else is promoted here (NumPy 2 rules, weak
Python scalars) so the primitive sees one dtype and programs show every cast.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..array import Array, ArrayBase, evaluate
from ..errors import DTypeError
from ..primitives import lax
from ..primitives.checks import as_int, require_kind
from ..primitives.core import bind, current_interpreter
from ..primitives.elementwise import (
    BINARY,
    BINARY_TABLE,
    COMPARISON,
    UNARY,
    UNARY_TABLE,
    bind_polygamma,
    conj_p,
    convert_element_type_p,
    imag_p,
    integer_pow_p,
    real_p,
    select_p,
)
from .creation import asarray, full

_current = current_interpreter.get  # (the fast paths below write out bind's eager case)


def _evaluated_now() -> bool:
    """Whether an operation of plain arrays alone is evaluated at once under the current
    interpreter: it passes such operations on, and so do those below it
    (``Interpreter.plain_is_eager``). (The fast paths ask whether there is one first.)"""
    return getattr(_current(), "plain_is_eager", False)

__all__ = [
    "astype", "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "power",
    "pow", "maximum", "minimum", "arctan2", "atan2", "hypot", "copysign", "logaddexp", "nextafter",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "bitwise_invert",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "signbit",
    "negative", "positive", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid", "erf", "lgamma", "digamma", "polygamma",
    "abs", "absolute",
    "sign", "square", "reciprocal", "floor", "ceil", "trunc", "round", "where", "clip", "integer_pow",
]

_SCALARS = _dt.PYTHON_SCALARS


def _to_array(x: Any) -> Any:
    """Arrays and Python scalars pass; NumPy scalars/arrays and lists become arrays."""
    if isinstance(x, (ArrayBase, bool, int, float, complex)):
        return x
    return asarray(x)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """Cast to ``dtype``. With ``copy=False`` an array already of that dtype is returned as is."""
    dt = _dt.as_dtype(dtype, op="astype")
    x = as_operand(x)
    if x.dtype.kind == "c" and dt.kind not in "cb":
        raise DTypeError(f"astype: casting {x.dtype} to {dt} would drop the imaginary part; take fg.real(x) or "
                         "fg.abs(x) first (the array API does not permit the cast)")
    if dt is x.dtype and not copy:
        out = returned_as_is(x)
    else:
        out = bind(convert_element_type_p, x, new_dtype=dt)
    return out.to(device) if device is not None else out


def cast_to(x: Any, dt: _dt.DType) -> Any:
    return x if isinstance(x, _SCALARS) or x.dtype is dt else bind(convert_element_type_p, x, new_dtype=dt)


def promote(op: str, args: tuple[Any, ...], *, floating: bool = False, device: Any = None) -> tuple[Any, ...]:
    """Bring operands to one dtype: arrays by NumPy 2 promotion, then weak scalars;
    ``floating`` ops turn integer results into the default float (as PyTorch and JAX do).
    Scalars alone become an array on ``device`` (the other operands', e.g. a condition's)."""
    args = tuple(_to_array(a) for a in args)
    strong = [a for a in args if not isinstance(a, _SCALARS) and not a.weak]
    if not strong:
        if not any(getattr(a, "weak", False) for a in args):  # scalars only: make the first one an array
            args = (asarray(args[0], device=device),) + args[1:]
            strong = [args[0]]
        else:  # Python numbers alone, some traced (weak): computed as Python computes them, in 64 bits
            dt = _dt.python_result((_dt.PYTHON_DTYPES[type(a)].kind if isinstance(a, _SCALARS) else a.dtype.kind
                                    for a in args), floating)
            return tuple(cast_to(a, dt) for a in args)
    dt = strong[0].dtype
    for a in strong[1:]:
        dt = _dt.promote(dt, a.dtype)
    for a in args:
        if isinstance(a, _SCALARS):
            dt = _dt.weak_result(dt, a)
        elif a.weak:  # a traced Python number: as the number would
            dt = _dt.weak_result(dt, _PY_EXAMPLE[a.dtype.kind])
    if floating and dt.kind not in "fc":
        dt = _dt.default_float
    if dt.kind == "c" and op in BINARY_TABLE and "c" not in BINARY_TABLE[op][1]:
        require_kind(op, dt, BINARY_TABLE[op][1], "real arrays")
    return tuple(cast_to(a, dt) for a in args)


# a Python number of each dtype kind, for what a traced (weak) number promotes like
_PY_EXAMPLE = {"b": True, "u": 1, "i": 1, "f": 1.0, "c": 1j}

# (dtype kind, Python scalar type) pairs where the scalar takes the array's dtype
_WEAK_FITS = {("f", float), ("f", int), ("f", bool), ("i", int), ("i", bool), ("u", int), ("u", bool),
              ("b", bool), ("c", complex), ("c", float), ("c", int), ("c", bool)}


def _binary_fn(name: str, *, floating: bool = False) -> Any:
    """The ``fg.*`` function of a binary primitive, with the eager fast paths inline:
    same-dtype arrays, and an array with a Python scalar that fits its dtype."""
    prim = BINARY[name]
    kinds = "".join(k for k in BINARY_TABLE[name][1] if not floating or k in "fc")  # (where the fast path may go)

    def fn(x: Any, y: Any, /) -> Any:
        if x.__class__ is Array:
            dt = x._dtype
            if dt.kind in kinds and (
                (y.__class__ is Array and y._dtype is dt) or (dt.kind, y.__class__) in _WEAK_FITS
            ):
                if _current() is None or _evaluated_now():
                    return evaluate(prim, (x, y), {})
                return bind(prim, x, y)
        elif y.__class__ is Array and (y._dtype.kind, x.__class__) in _WEAK_FITS and y._dtype.kind in kinds:
            return evaluate(prim, (x, y), {}) if _current() is None or _evaluated_now() else bind(prim, x, y)
        elif isinstance(x, ArrayBase):  # tracers: the same checks through the public attributes
            dt = x.dtype
            if dt.kind in kinds and (
                (isinstance(y, ArrayBase) and y.dtype is dt) or (dt.kind, y.__class__) in _WEAK_FITS
            ):
                return bind(prim, x, y)
        return bind(prim, *promote(prim.name, (x, y), floating=floating))

    fn.__name__ = name
    return fn


add, subtract, multiply, floor_divide, remainder, maximum, minimum = (_binary_fn(n) for n in (
    "add", "sub", "mul", "floor_divide", "remainder", "maximum", "minimum"))
bitwise_and, bitwise_or, bitwise_xor, bitwise_left_shift, bitwise_right_shift = (_binary_fn(n) for n in (
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"))
# integer operands give the default float
divide, arctan2, hypot, copysign, logaddexp, nextafter = (_binary_fn(n, floating=True) for n in (
    "div", "atan2", "hypot", "copysign", "logaddexp", "nextafter"))
true_divide, atan2 = divide, arctan2


def power(x: Any, y: Any, /) -> Any:
    """``x ** y``. A Python int exponent uses repeated multiplication (``integer_pow``),
    never NumPy's generic ``pow`` (which is ~17x slower for ``x**3`` in float32)."""
    if isinstance(y, int) and not isinstance(y, bool) and isinstance(x, ArrayBase) and builtins.abs(y) <= 64:
        return integer_pow(x, y)
    return bind(BINARY["pow"], *promote("pow", (x, y)))


pow = power


def integer_pow(x: Any, y: int) -> Any:
    x = as_operand(x)
    y = as_int("integer_pow", y, "the exponent", minimum=None)
    if y < 0 and x.dtype.kind not in "fc":
        x = cast_to(x, _dt.default_float)
    if x.dtype is _dt.bool_:
        x = cast_to(x, _dt.int64)
    return bind(integer_pow_p, x, y=y)


def _comparison_fn(name: str) -> Any:
    prim = COMPARISON[name]

    def fn(x: Any, y: Any, /) -> Any:
        if x.__class__ is Array and (
            (y.__class__ is Array and x._dtype is y._dtype) or (x._dtype.kind, y.__class__) in _WEAK_FITS
        ):
            return bind(prim, x, y)
        return bind(prim, *promote(prim.name, (x, y)))

    return fn


equal, not_equal, less, less_equal, greater, greater_equal = (_comparison_fn(n) for n in (
    "eq", "ne", "lt", "le", "gt", "ge"))


def _as_bool(x: Any) -> Any:
    x = _to_array(x)
    if isinstance(x, _SCALARS):
        return bool(x)
    return cast_to(x, _dt.bool_)


def _logical_fn(name: str) -> Any:
    prim = COMPARISON[name]

    def fn(x: Any, y: Any, /) -> Any:
        x, y = _as_bool(x), _as_bool(y)
        if isinstance(x, bool) and isinstance(y, bool):
            x = _to_array(np.bool_(x))
        return bind(prim, x, y)

    return fn


logical_and = _logical_fn("logical_and")
logical_or = _logical_fn("logical_or")
logical_xor = _logical_fn("logical_xor")


def logical_not(x: Any, /) -> Any:
    return bind(COMPARISON["logical_not"], _as_bool(_to_array(x) if not isinstance(x, ArrayBase) else x))


def _float_test(name: str, int_answer: bool) -> Any:
    prim = COMPARISON[name]

    def fn(x: Any, /) -> Any:
        x = as_operand(x)
        if x.dtype.kind not in "fc":  # integers are never nan/inf; their sign bit is their sign
            if name == "signbit":
                return less(x, 0)
            return full(x.shape, int_answer, _dt.bool_, device=x.device)
        return bind(prim, x)

    return fn


def returned_as_is(x: Any) -> Any:
    """``x`` as a result returned unchanged: a Parameter (mutable) gives a view of its current
    value instead, which its later updates do not reach (``Array._own``)."""
    return x._own() if isinstance(x, Array) else x


def as_operand(x: Any) -> Any:
    x = _to_array(x)
    if isinstance(x, _SCALARS):
        x = asarray(x)
    return x


isnan = _float_test("isnan", False)
isinf = _float_test("isinf", False)
isfinite = _float_test("isfinite", True)
signbit = _float_test("signbit", False)


def _unary_fn(name: str, *, floating: bool = False, int_identity: bool = False) -> Any:
    """``floating``: integer input is cast to the default float first (``exp(int) -> float32``).
    ``int_identity``: integer input is returned unchanged (``floor(int) -> int``)."""
    prim = UNARY[name]
    real_only = "c" not in UNARY_TABLE[name][1]

    def fn(x: Any, /) -> Any:
        x = as_operand(x)
        kind = x.dtype.kind
        if kind != "f":  # (floats, the common case, check nothing more)
            if kind == "c":
                if real_only:  # (NumPy's kernel may take it; the primitive does not)
                    require_kind(name, x.dtype, UNARY_TABLE[name][1], "a real array")
                if name == "tanh":
                    return _complex_tanh(prim, x)
            elif int_identity:
                return returned_as_is(x)
            elif floating:
                x = cast_to(x, _dt.default_float)
            elif kind == "b" and name == "neg":
                raise DTypeError("negative: the - operator is not defined for a bool array (as in NumPy and "
                                 "PyTorch); use ~x or fg.logical_not(x)")
            elif kind == "b" and name != "bitwise_invert":
                x = cast_to(x, _dt.int64)
        if _current() is None or x.__class__ is Array and _evaluated_now():
            return evaluate(prim, (x,), {})
        return bind(prim, x)

    fn.__name__ = name
    return fn


def _complex_tanh(prim: Any, x: Any) -> Any:
    """Complex ``tanh`` with the array API's limit: ``tanh(+inf + bj)`` of a finite ``b`` is
    ``1 + 0j`` with the zero taking ``b``'s sign (NumPy's takes ``sin(2b)``'s)."""
    out = bind(prim, x)
    re, im = bind(real_p, x), bind(imag_p, x)
    limit = bind(COMPARISON["logical_and"], bind(COMPARISON["eq"], re, np.inf), bind(COMPARISON["isfinite"], im))
    one = lax.full(out, tuple(out.shape), 1 + 0j)  # (a primitive: no constant in a traced program)
    signed = bind(select_p, bind(COMPARISON["signbit"], im), bind(conj_p, one), one)
    return bind(select_p, limit, signed, out)


negative = _unary_fn("neg")
# integer input computes in the default float
exp, exp2, log, log2, log10, log1p, expm1, sqrt, rsqrt = (_unary_fn(n, floating=True) for n in (
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt"))
sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh = (
    _unary_fn(n, floating=True) for n in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                                          "arcsinh", "arccosh", "arctanh"))
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
sigmoid, erf, reciprocal, lgamma = (_unary_fn(n, floating=True) for n in ("sigmoid", "erf", "reciprocal", "lgamma"))


def polygamma(n: int, x: Any, /) -> Any:
    """The ``n``-th derivative of the digamma function at ``x`` (``torch.polygamma``, SciPy's
    ``polygamma``); differentiable to any order (its derivative is order ``n + 1``)."""
    n = as_int("polygamma", n, "n")
    x = as_operand(x)
    if x.dtype.kind != "f":
        require_kind("polygamma", x.dtype, "iub", "a real array")
        x = cast_to(x, _dt.default_float)
    return bind_polygamma(x, n)


def digamma(x: Any, /) -> Any:
    """``d/dx log Gamma(x)`` (``torch.digamma``, SciPy's ``digamma`` and ``psi``)."""
    return polygamma(0, x)
abs = absolute = _unary_fn("abs")
sign, square = _unary_fn("sign"), _unary_fn("square")
floor, ceil, trunc = (_unary_fn(n, int_identity=True) for n in ("floor", "ceil", "trunc"))  # integers: unchanged
bitwise_invert = _unary_fn("bitwise_invert")


def positive(x: Any, /) -> Any:
    return returned_as_is(as_operand(x))


def round(x: Any, /, decimals: int = 0) -> Any:
    """Round half to even, as NumPy; integers are returned unchanged."""
    x = as_operand(x)
    if x.dtype.kind not in "fc":
        return returned_as_is(x)
    return bind(UNARY["round"], x, decimals=decimals)


def where(condition: Any, x: Any, y: Any, /) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (``np.where`` of three
    arguments, ``torch.where``); the gradient flows to the chosen side only.

    Args:
        condition: a bool array.
        x: the values where it holds (an array or a number).
        y: the values elsewhere.

    Returns:
        The three broadcast together.

    Example:
        >>> fg.where(fg.asarray([True, False]), fg.asarray([1.0, 2.0]), 0.0).tolist()
        [1.0, 0.0]
    """
    if condition.__class__ is Array and condition._dtype is _dt.bool_ and x.__class__ is Array and (
        (y.__class__ is Array and y._dtype is x._dtype) or (x._dtype.kind, y.__class__) in _WEAK_FITS
    ):
        return bind(select_p, condition, x, y)
    cond = _as_bool(condition)
    if isinstance(cond, bool):
        cond = _to_array(np.bool_(cond))
    x, y = promote("where", (x, y), device=cond.device)  # where(mask, 1.0, 0.0): on the mask's device
    return bind(select_p, cond, x, y)


def clip(x: Any, /, min: Any = None, max: Any = None, *, a_min: Any = None, a_max: Any = None) -> Any:
    """Limit values to ``[min, max]`` (either may be ``None``; ``a_min``/``a_max`` are NumPy's names)."""
    min = a_min if a_min is not None else min
    max = a_max if a_max is not None else max
    out = as_operand(x)
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max)
    return out if (min is not None or max is not None) else astype(out, out.dtype)
