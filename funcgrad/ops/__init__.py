"""The ``fg.*`` array functions (NumPy names and semantics), built from primitives."""

from __future__ import annotations

import inspect
import sys
import types

from ..array import provide
from ..errors import named_errors
from .reference_docs import ELEMENTWISE, FUNCTIONS, elementwise_doc, function_doc
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

_module = sys.modules[__name__]
for _name, _summary in _SUMMARIES.items():
    _fn = getattr(_module, _name, None)
    if _fn is not None and not (_fn.__doc__ or "").strip():
        try:
            _fn.__doc__ = elementwise_doc(_name, _summary, _fn) if _name in ELEMENTWISE else _summary
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

# The array functions' reference sections (``reference_docs``), on the functions users call.
for _name in FUNCTIONS:
    _fn = getattr(_module, _name)
    _parameters = [(p.name, p.kind is p.VAR_POSITIONAL) for p in inspect.signature(_fn).parameters.values()]
    _fn.__doc__ = function_doc(_name, _fn.__doc__ or "", _parameters)
