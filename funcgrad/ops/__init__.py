"""The ``fg.*`` array functions (NumPy names and semantics), built from primitives."""

from __future__ import annotations

import re
import sys
import types
from typing import Any

from ..array import provide
from ..errors import named_errors
from .creation import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .index import *  # noqa: F403
from .linalg import *  # noqa: F403
from .numpy_compat import *  # noqa: F403
from .reduce import *  # noqa: F403
from .sets import *  # noqa: F403
from .shape import *  # noqa: F403
from . import creation, elementwise, index, linalg, numpy_compat, reduce, sets, shape  # noqa: E402

# What ``from funcgrad.ops import *`` (and so ``fg``) takes: the functions, not this
# package's imports or its submodules' names.
# (``+=`` of each module's list: the form type checkers read statically)
__all__: list[str] = []
__all__ += creation.__all__
__all__ += elementwise.__all__
__all__ += index.__all__
__all__ += linalg.__all__
__all__ += reduce.__all__
__all__ += shape.__all__
__all__ += numpy_compat.__all__
__all__ += sets.__all__

# One-line summaries of the functions whose meaning is NumPy's own (the generated
# elementwise ones among them); the others carry their docstrings where they are defined.
_SUMMARIES = {
    "abs": "The absolute value, elementwise.", "absolute": "The absolute value, elementwise.",
    "add": "``x1 + x2``, elementwise (broadcast).", "subtract": "``x1 - x2``, elementwise (broadcast).",
    "multiply": "``x1 * x2``, elementwise (broadcast).", "divide": "``x1 / x2``, elementwise (true division).",
    "true_divide": "``x1 / x2``, elementwise (true division).",
    "floor_divide": "``x1 // x2``, elementwise (rounded towards minus infinity).",
    "remainder": "``x1 % x2``, elementwise (the divisor's sign, as Python).",
    "maximum": "The larger of each pair, elementwise (NaN if either is).",
    "minimum": "The smaller of each pair, elementwise (NaN if either is).",
    "arctan2": "The angle of the point ``(x2, x1)``, elementwise.", "atan2": "The angle of the point ``(x2, x1)``.",
    "hypot": "``sqrt(x1**2 + x2**2)`` without overflow, elementwise.",
    "copysign": "``x1``'s magnitude with ``x2``'s sign, elementwise.",
    "logaddexp": "``log(exp(x1) + exp(x2))`` without overflow, elementwise.",
    "nextafter": "The next float after ``x1`` towards ``x2``, elementwise.",
    "bitwise_and": "Bitwise AND, elementwise.", "bitwise_or": "Bitwise OR, elementwise.",
    "bitwise_xor": "Bitwise XOR, elementwise.", "bitwise_invert": "Bitwise NOT, elementwise.",
    "bitwise_left_shift": "``x1 << x2``, elementwise.", "bitwise_right_shift": "``x1 >> x2``, elementwise.",
    "equal": "``x1 == x2``, elementwise.", "not_equal": "``x1 != x2``, elementwise.",
    "less": "``x1 < x2``, elementwise.", "less_equal": "``x1 <= x2``, elementwise.",
    "greater": "``x1 > x2``, elementwise.", "greater_equal": "``x1 >= x2``, elementwise.",
    "logical_and": "Logical AND of truth values, elementwise.", "logical_or": "Logical OR, elementwise.",
    "logical_xor": "Logical XOR, elementwise.", "logical_not": "Logical NOT, elementwise.",
    "isnan": "Whether each value is NaN.", "isinf": "Whether each value is infinite.",
    "isfinite": "Whether each value is finite.", "signbit": "Whether each value's sign bit is set (-0.0 too).",
    "negative": "``-x``, elementwise.", "positive": "``+x``: the values unchanged.",
    "exp": "``e**x``, elementwise.", "exp2": "``2**x``, elementwise.", "expm1": "``exp(x) - 1``, accurate near 0.",
    "log": "The natural logarithm, elementwise.", "log2": "The base-2 logarithm, elementwise.",
    "log10": "The base-10 logarithm, elementwise.", "log1p": "``log(1 + x)``, accurate near 0.",
    "sqrt": "The square root, elementwise.", "rsqrt": "``1 / sqrt(x)``, elementwise.",
    "sin": "The sine, elementwise.", "cos": "The cosine, elementwise.", "tan": "The tangent, elementwise.",
    "arcsin": "The inverse sine, elementwise.", "asin": "The inverse sine, elementwise.",
    "arccos": "The inverse cosine, elementwise.", "acos": "The inverse cosine, elementwise.",
    "arctan": "The inverse tangent, elementwise.", "atan": "The inverse tangent, elementwise.",
    "sinh": "The hyperbolic sine, elementwise.", "cosh": "The hyperbolic cosine, elementwise.",
    "tanh": "The hyperbolic tangent, elementwise.", "arcsinh": "The inverse hyperbolic sine, elementwise.",
    "asinh": "The inverse hyperbolic sine, elementwise.", "arccosh": "The inverse hyperbolic cosine, elementwise.",
    "acosh": "The inverse hyperbolic cosine, elementwise.", "arctanh": "The inverse hyperbolic tangent.",
    "atanh": "The inverse hyperbolic tangent, elementwise.", "sigmoid": "``1 / (1 + exp(-x))``, without overflow.",
    "erf": "The error function, elementwise.",
    "lgamma": "``log|Gamma(x)|``, elementwise (SciPy's ``gammaln``); its derivative is ``digamma``.",
    "reciprocal": "``1 / x``, elementwise.",
    "sign": "-1, 0 or 1 by each value's sign.", "square": "``x * x``, elementwise.",
    "floor": "Rounded down, elementwise (integers unchanged).", "ceil": "Rounded up, elementwise (integers unchanged).",
    "trunc": "Rounded towards zero, elementwise (integers unchanged).",
    "integer_pow": "``x ** y`` for a Python int ``y``, by repeated multiplication.",
    "all": "Whether every value along ``axis`` is true.", "any": "Whether any value along ``axis`` is true.",
    "amax": "The maximum along ``axis`` (``max``).", "amin": "The minimum along ``axis`` (``min``).",
    "max": "The maximum along ``axis``.", "min": "The minimum along ``axis``.",
    "argmax": "The index of the maximum along ``axis`` (the first, at ties).",
    "argmin": "The index of the minimum along ``axis`` (the first, at ties).",
    "sum": "The sum along ``axis``.", "prod": "The product along ``axis``.",
    "std": "The standard deviation along ``axis`` (``ddof`` as NumPy).",
    "count_nonzero": "The number of nonzero values along ``axis``.",
    "cumprod": "The cumulative product along ``axis``.", "cumulative_prod": "The cumulative product along ``axis``.",
    "argsort": "The indices that sort ``x`` along ``axis`` (stable).", "sort": "``x`` sorted along ``axis`` (stable).",
    "atleast_1d": "``x`` with at least one axis.", "atleast_2d": "``x`` with at least two axes.",
    "broadcast_arrays": "The arrays broadcast to one shape (views).",
    "broadcast_shapes": "The shape that ``shapes`` broadcast to.",
    "concat": "Arrays joined along an existing axis.", "concatenate": "Arrays joined along an existing axis.",
    "stack": "Arrays joined along a new axis.", "unstack": "The slices of ``x`` along ``axis``.",
    "hstack": "Arrays joined along the second axis (the first for 1-D).", "vstack": "Arrays joined as rows.",
    "expand_dims": "``x`` with a new size-1 axis at ``axis``.", "squeeze": "``x`` without its size-1 axes.",
    "moveaxis": "``x`` with axes moved to new positions.", "swapaxes": "``x`` with two axes exchanged.",
    "transpose": "``x`` with its axes permuted (reversed by default).",
    "permute_dims": "``x`` with its axes permuted.", "matrix_transpose": "The transpose of the last two axes.",
    "ravel": "``x`` flattened to one axis.", "pad": "``x`` padded at the ends of each axis.",
    "take_along_axis": "Values picked along ``axis`` by an index array of the same rank.",
    "getitem": "``x[index]``: basic and advanced indexing, as NumPy.",
    "empty_like": "An array of ``x``'s shape (zeros: arrays cannot be written later).",
    "zeros_like": "Zeros of ``x``'s shape and dtype.", "ones_like": "Ones of ``x``'s shape and dtype.",
    "full_like": "``fill_value`` in ``x``'s shape and dtype.", "eye": "A matrix with ones on diagonal ``k``.",
    "tri": "A lower-triangular matrix of ones (below diagonal ``k``).",
    "inner": "The inner product over the last axes.", "vdot": "The dot product of two flattened arrays.",
}

# The elementwise functions' examples, each call with what it prints (checked against NumPy's
# and SciPy's functions when written; tests/test_docstrings.py runs them).
_EXAMPLES = {
    'abs': ('fg.abs(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, 0.0, 2.5]'),
    'absolute': ('fg.absolute(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, 0.0, 2.5]'),
    'add': ('fg.add(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()', '[[-5.0, -11.0], [9.0, 3.0]]'),
        'subtract': ('fg.subtract(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                     '[[-9.0, -3.0], [5.0, 11.0]]'),
        'multiply': ('fg.multiply(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                     '[[-14.0, 28.0], [14.0, -28.0]]'),
        'divide': ('fg.divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                   '[[-3.5, 1.75], [3.5, -1.75]]'),
        'true_divide': ('fg.true_divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                        '[[-3.5, 1.75], [3.5, -1.75]]'),
        'floor_divide': ('fg.floor_divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                         '[[-4.0, 1.0], [3.0, -2.0]]'),
        'remainder': ('fg.remainder(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                      '[[1.0, -3.0], [1.0, -1.0]]'),
        'maximum': ('fg.maximum(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                    '[[2.0, -4.0], [7.0, 7.0]]'),
        'minimum': ('fg.minimum(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                    '[[-7.0, -7.0], [2.0, -4.0]]'),
    'arctan2': ('fg.arctan2(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[0.245, 0.6435]'),
    'atan2': ('fg.atan2(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[0.245, 0.6435]'),
    'hypot': ('fg.hypot(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[4.1231, 5.0]'),
    'copysign': ('fg.copysign(fg.asarray([1.0, 2.0]), fg.asarray([-1.0, 0.0])).tolist()', '[-1.0, 2.0]'),
    'logaddexp': ('fg.logaddexp(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[4.0486, 4.3133]'),
    'nextafter': ('(fg.nextafter(fg.asarray([1.0]), fg.asarray([2.0])) - 1.0).tolist()', '[1.1920928955078125e-07]'),
    'bitwise_and': ('fg.bitwise_and(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[0, 0]'),
    'bitwise_or': ('fg.bitwise_or(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[14, 11]'),
    'bitwise_xor': ('fg.bitwise_xor(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[14, 11]'),
    'bitwise_invert': ('fg.bitwise_invert(fg.asarray([0, 5])).tolist()', '[-1, -6]'),
    'bitwise_left_shift': ('fg.bitwise_left_shift(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[48, 20]'),
    'bitwise_right_shift': ('fg.bitwise_right_shift(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[3, 5]'),
    'equal': ('fg.equal(fg.asarray([1, 2, 3]), 2).tolist()', '[False, True, False]'),
    'not_equal': ('fg.not_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[True, False, True]'),
    'less': ('fg.less(fg.asarray([1, 2, 3]), 2).tolist()', '[True, False, False]'),
    'less_equal': ('fg.less_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[True, True, False]'),
    'greater': ('fg.greater(fg.asarray([1, 2, 3]), 2).tolist()', '[False, False, True]'),
    'greater_equal': ('fg.greater_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[False, True, True]'),
        'logical_and': ('fg.logical_and(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                        '[True, False, False]'),
        'logical_or': ('fg.logical_or(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                       '[True, True, False]'),
        'logical_xor': ('fg.logical_xor(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                        '[False, True, False]'),
    'logical_not': ('fg.logical_not(fg.asarray([True, False])).tolist()', '[False, True]'),
    'isnan': ('fg.isnan(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[False, False, False, True]'),
    'isinf': ('fg.isinf(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[False, False, True, False]'),
    'isfinite': ('fg.isfinite(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[True, True, False, False]'),
    'signbit': ('fg.signbit(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[True, False, False, False]'),
    'negative': ('fg.negative(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, -0.0, -2.5]'),
    'positive': ('fg.positive(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.5, 0.0, 2.5]'),
    'exp': ('fg.exp(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.6487, 2.7183]'),
    'exp2': ('fg.exp2(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.4142, 2.0]'),
    'expm1': ('fg.expm1(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.6487, 1.7183]'),
    'log': ('fg.log(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-0.6931, 0.0]'),
    'log2': ('fg.log2(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-1.0, 0.0]'),
    'log10': ('fg.log10(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-0.301, 0.0]'),
    'log1p': ('fg.log1p(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4055, 0.6931]'),
    'sqrt': ('fg.sqrt(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.7071, 1.0]'),
    'rsqrt': ('fg.rsqrt(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.4142, 1.0]'),
    'sin': ('fg.sin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4794, 0.8415]'),
    'cos': ('fg.cos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.8776, 0.5403]'),
    'tan': ('fg.tan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5463, 1.5574]'),
    'arcsin': ('fg.arcsin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5236, 1.5708]'),
    'asin': ('fg.asin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5236, 1.5708]'),
    'arccos': ('fg.arccos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.0472, 0.0]'),
    'acos': ('fg.acos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.0472, 0.0]'),
    'arctan': ('fg.arctan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4636, 0.7854]'),
    'atan': ('fg.atan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4636, 0.7854]'),
    'sinh': ('fg.sinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5211, 1.1752]'),
    'cosh': ('fg.cosh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.1276, 1.5431]'),
    'tanh': ('fg.tanh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4621, 0.7616]'),
    'arcsinh': ('fg.arcsinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4812, 0.8814]'),
    'asinh': ('fg.asinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4812, 0.8814]'),
    'arccosh': ('fg.arccosh(fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()', '[0.0, 1.317]'),
    'acosh': ('fg.acosh(fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()', '[0.0, 1.317]'),
    'arctanh': ('fg.arctanh(fg.asarray([0.0, 0.5], dtype=fg.float64)).round(4).tolist()', '[0.0, 0.5493]'),
    'atanh': ('fg.atanh(fg.asarray([0.0, 0.5], dtype=fg.float64)).round(4).tolist()', '[0.0, 0.5493]'),
    'sigmoid': ('fg.sigmoid(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.6225, 0.7311]'),
    'erf': ('fg.erf(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5205, 0.8427]'),
    'lgamma': ('fg.lgamma(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5724, 0.0]'),
    'reciprocal': ('fg.reciprocal(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[2.0, 1.0]'),
    'sign': ('fg.sign(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 1.0]'),
    'square': ('fg.square(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[2.25, 0.0, 6.25]'),
    'floor': ('fg.floor(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-2.0, 0.0, 2.0]'),
    'ceil': ('fg.ceil(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 3.0]'),
    'trunc': ('fg.trunc(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 2.0]'),
    'integer_pow': ('fg.integer_pow(fg.asarray([1.0, 2.0, 3.0]), 3).tolist()', '[1.0, 8.0, 27.0]'),
}
_BOOLEAN = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
            "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "signbit"}


def _elementwise_doc(name: str, summary: str, fn: Any) -> str:
    """An elementwise function's Google-style docstring: its summary, its operands, its
    result and its example (``_EXAMPLES``)."""
    binary = fn.__code__.co_argcount == 2 and name != "integer_pow"
    if binary:
        summary = re.sub(r"\bx2\b", "y", re.sub(r"\bx1\b", "x", summary))
        args = "x: an array or a Python number.\n    y: another, broadcast against ``x``; the two promote to one dtype."
    elif name == "integer_pow":
        args = "x: an array.\n    y: the exponent, a Python int."
    else:
        args = "x: an array or a Python number."
    kind = "A bool array" if name in _BOOLEAN else "An array"
    shape = "the operands' broadcast shape" if binary else "``x``'s shape"
    call, shown = _EXAMPLES[name]
    return (f"{summary}\n\nArgs:\n    {args}\n\nReturns:\n    {kind} of {shape}.\n\n"
            f"Example:\n    >>> {call}\n    {shown}\n")


_module = sys.modules[__name__]
for _name, _summary in _SUMMARIES.items():
    _fn = getattr(_module, _name, None)
    if _fn is not None and not (_fn.__doc__ or "").strip():
        try:
            _fn.__doc__ = _elementwise_doc(_name, _summary, _fn) if _name in _EXAMPLES else _summary
        except AttributeError:  # (a builtin: it has its own)
            pass
# Arrays' operators and methods call the functions themselves: no wrapper on their hot path.
_unchecked = types.SimpleNamespace(**{_name: getattr(_module, _name) for _name in __all__})
provide(ops=_unchecked)

# fg.* functions outside the elementwise ones name themselves in the errors of bad arguments
# (the elementwise functions check their arguments inline: user code calls them per element
# of its computation).
for _name in __all__:
    _fn = getattr(_module, _name)
    if callable(_fn) and not isinstance(_fn, type) and _name not in elementwise.__all__:
        setattr(_module, _name, named_errors(_name, _fn))
