"""Primitive wrappers for derivative rules: each function binds one primitive (or a few).

Rules compute with these and with the arithmetic operators of the values they are handed
(``g * y`` binds ``mul``), so a rule stays on the primitives' floor and serves every
transform: whichever interpreter is current records its binds. Unlike ``fg.*`` nothing
here promotes or checks arguments: a rule's operands already share one dtype, and axes
are already normalised (as JAX's ``lax`` is to ``jax.numpy``).

Constants take a value to stand beside (``full(like, ...)``): evaluation is chosen by the
data, so a constant made in a rule lands on its operands' device, under any transform.
Primitives are found by name when called, because the family modules that define them
import this module for their own rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dtypes import DType, int64
from .core import REGISTRY, bind

__all__ = [
    "exp", "log", "sin", "cos", "sinh", "cosh", "rsqrt", "reciprocal", "sigmoid", "sign", "floor", "integer_pow",
    "pow", "eq", "ne", "gt", "lt", "ge", "logical_and", "signbit", "select", "convert", "const", "full", "zeros",
    "iota", "eye", "tril", "triu", "reduce_sum", "reshape", "broadcast_to", "transpose", "matrix_transpose",
    "matrix_conj_transpose",
    "moveaxis", "expand_dims", "squeeze", "flip", "slice_axis", "pad", "matmul", "cumsum", "cumprod",
    "gather", "take_along_axis", "abs", "real", "imag", "conj", "gelu_grad",
]


NAMES: set[str] = set()  # the primitives named here: checked against the registry at import


def _bind_by_name(name: str) -> Any:
    NAMES.add(name)

    def call(*args: Any, **params: Any) -> Any:
        return bind(REGISTRY[name], *args, **params)

    call.__name__ = name
    return call


exp, log, sin, cos, sinh, cosh = (_bind_by_name(n) for n in ("exp", "log", "sin", "cos", "sinh", "cosh"))
rsqrt, reciprocal, sigmoid = (_bind_by_name(n) for n in ("rsqrt", "reciprocal", "sigmoid"))
gelu_grad = _bind_by_name("gelu_grad")
sign, floor, pow, signbit = (_bind_by_name(n) for n in ("sign", "floor", "pow", "signbit"))
eq, ne, gt, lt, ge = (_bind_by_name(n) for n in ("eq", "ne", "gt", "lt", "ge"))
logical_and, select = _bind_by_name("logical_and"), _bind_by_name("select")
abs, real, imag, conj = (_bind_by_name(n) for n in ("abs", "real", "imag", "conj"))


def integer_pow(x: Any, y: int) -> Any:
    return bind(REGISTRY["integer_pow"], x, y=y)


def convert(x: Any, dtype: DType) -> Any:
    return x if x.dtype is dtype else bind(REGISTRY["convert_element_type"], x, new_dtype=dtype)


# ---- constants --------------------------------------------------------------------------

def full(like: Any, shape: Sequence[int], value: Any, dtype: DType | None = None) -> Any:
    """``value`` everywhere, on ``like``'s device (its dtype unless ``dtype``)."""
    return bind(REGISTRY["full"], like, shape=tuple(shape), value=value, dtype=dtype or like.dtype)


def zeros(like: Any, shape: Sequence[int], dtype: DType | None = None) -> Any:
    return full(like, shape, 0, dtype)


def const(like: Any, value: complex) -> Any:
    """A 0-d constant in ``like``'s dtype: two Python scalars alone (``select(c, 1.0, -1.0)``)
    would have no dtype, and a rule computes in the precision of what it differentiates."""
    return full(like, (), value)


def iota(like: Any, n: int, dtype: DType = int64) -> Any:
    """0, 1, ..., n - 1."""
    return bind(REGISTRY["iota"], like, n=n, dtype=dtype)


def _rows_cols(like: Any, n: int) -> tuple[Any, Any]:
    i = iota(like, n)
    return reshape(i, (n, 1)), reshape(i, (1, n))


def eye(like: Any, n: int, dtype: DType | None = None) -> Any:
    rows, cols = _rows_cols(like, n)
    return convert(eq(rows, cols), dtype or like.dtype)


def tril(x: Any) -> Any:
    """The lower triangle of the last two (square) axes, zeros above."""
    rows, cols = _rows_cols(x, x.shape[-1])
    return select(ge(rows, cols), x, 0.0)


def triu(x: Any) -> Any:
    rows, cols = _rows_cols(x, x.shape[-1])
    return select(ge(cols, rows), x, 0.0)


# ---- shapes -----------------------------------------------------------------------------

def reduce_sum(x: Any, axes: Sequence[int], keepdims: bool = False) -> Any:
    return bind(REGISTRY["reduce_sum"], x, axes=tuple(a % x.ndim for a in axes), keepdims=keepdims)


def reshape(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else bind(REGISTRY["reshape"], x, new_sizes=shape)


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else bind(REGISTRY["broadcast_to"], x, shape=shape)


def transpose(x: Any, permutation: Sequence[int]) -> Any:
    permutation = tuple(permutation)
    return x if permutation == tuple(range(x.ndim)) else bind(REGISTRY["transpose"], x, permutation=permutation)


def matrix_transpose(x: Any) -> Any:
    n = x.ndim
    return transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def matrix_conj_transpose(x: Any) -> Any:
    """The conjugate transpose of the last two axes (the transpose, for real matrices)."""
    xt = matrix_transpose(x)
    return conj(xt) if x.dtype.kind == "c" else xt


def moveaxis(x: Any, source: Sequence[int], destination: Sequence[int]) -> Any:
    n = x.ndim
    source, destination = [a % n for a in source], [a % n for a in destination]
    order = [a for a in range(n) if a not in source]
    for d, s in sorted(zip(destination, source)):
        order.insert(d, s)
    return transpose(x, order)


def expand_dims(x: Any, dimensions: Sequence[int]) -> Any:
    """New size-1 axes at ``dimensions``, positions in the result."""
    n = x.ndim + len(dimensions)
    return bind(REGISTRY["expand_dims"], x, dimensions=tuple(sorted(d % n for d in dimensions)))


def squeeze(x: Any, dimensions: Sequence[int]) -> Any:
    return bind(REGISTRY["squeeze"], x, dimensions=tuple(sorted(d % x.ndim for d in dimensions)))


def flip(x: Any, axes: Sequence[int]) -> Any:
    return bind(REGISTRY["flip"], x, axes=tuple(sorted(a % x.ndim for a in axes)))


def slice_axis(x: Any, axis: int, start: int, stop: int) -> Any:
    """Elements ``start:stop`` (non-negative, in range) along ``axis``."""
    index = tuple((start, stop, 1) if a == axis % x.ndim else (0, d, 1) for a, d in enumerate(x.shape))
    return bind(REGISTRY["slice"], x, index=index)


def pad(x: Any, pad_width: Sequence[tuple[int, int]], value: Any = 0, mode: str = "constant") -> Any:
    return bind(REGISTRY["pad"], x, pad_width=tuple(tuple(w) for w in pad_width), mode=mode, value=value)


def matmul(a: Any, b: Any) -> Any:
    return bind(REGISTRY["matmul"], a, b)


def cumsum(x: Any, axis: int) -> Any:
    return bind(REGISTRY["cumsum"], x, axis=axis % x.ndim)


def cumprod(x: Any, axis: int) -> Any:
    return bind(REGISTRY["cumprod"], x, axis=axis % x.ndim)


# ---- indexing ---------------------------------------------------------------------------

def gather(x: Any, *indices: Any) -> Any:
    """``x[i0, i1, ...]``: one integer index array per axis, broadcast together."""
    return bind(REGISTRY["gather"], x, *indices, template=(("a",),) * len(indices))


def take_along_axis(x: Any, indices: Any, axis: int) -> Any:
    """``indices`` (of ``x``'s rank) pick along ``axis``; every other axis indexes itself."""
    n = x.ndim
    grids = [indices if d == axis else reshape(iota(indices, x.shape[d]), (1,) * d + (x.shape[d],) + (1,) * (n - d - 1))
             for d in range(n)]
    return gather(x, *grids)
