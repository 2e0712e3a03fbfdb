"""``fg.lax``: JAX's ``jax.lax`` names for funcgrad's operations, and the collectives over
named axes.

The collectives (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``ppermute``, ``all_to_all``, ``axis_index``) act across the members of an axis a
transform binds: ``fg.vmap(f, axis_name="i")`` binds ``"i"`` to its batch, and
``fg.shard_map`` each axis of a mesh of ranks. They take pytrees, and ``psum``, ``pmean``,
``pmax``, ``pmin``, ``all_gather`` and ``axis_index`` a tuple of names (the axes taken
together, the first the major; the others one name). A name no running transform binds
raises ``UnboundAxisError`` (``primitives/axes.py`` has the primitives and their rules).

The rest are funcgrad's own functions under ``jax.lax``'s names and argument forms:
control flow (``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``),
``stop_gradient``, and the elementwise and shape operations a JAX program calls.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from . import ops
from . import tree as _tree
from .array import ArrayBase
from .errors import ArgumentValueError
from .ops.reference_docs import sections
from .primitives import axes as _axes
from .primitives.axes import UnboundAxisError
from .primitives.core import bind
from .transforms import cond, fori_loop, scan, stop_gradient, switch, while_loop
from .transforms.autodiff.api import as_array

__all__ = [
    "UnboundAxisError", "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all",
    "axis_index", "axis_size", "cond", "switch", "while_loop", "fori_loop", "scan", "map", "stop_gradient",
    "add", "sub", "mul", "div", "neg", "exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "logistic",
    "sqrt", "rsqrt", "abs", "sign", "floor", "ceil", "round", "max", "min", "pow", "integer_pow", "square",
    "reciprocal", "erf", "lgamma", "digamma", "polygamma",
    "atan2", "select", "clamp", "convert_element_type", "reshape", "transpose", "squeeze",
    "expand_dims", "concatenate", "broadcast", "dot", "iota", "full", "cumsum", "cumprod", "sort",
]


def _names(op: str, axis_name: Any) -> tuple[Any, ...]:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names:
        raise ArgumentValueError(f"fg.lax.{op}: axis_name names no axis")
    return names


def _one_name(op: str, axis_name: Any) -> Any:
    names = _names(op, axis_name)
    if len(names) != 1:
        raise ArgumentValueError(f"fg.lax.{op}: takes one axis name, got {axis_name!r}")
    return names[0]


def axis_size(axis_name: Any) -> int:
    """How many members the axis (or axes, together) called ``axis_name`` has."""
    return math.prod(_axes.axis_size("axis_size", n) for n in _names("axis_size", axis_name))


def _leaves(fn: Callable[[Any], Any], x: Any) -> Any:
    """``fn`` of each leaf of ``x`` (an array is its own one leaf)."""
    return fn(x) if isinstance(x, ArrayBase) else _tree.map(fn, x)


def _over(op: str, prim: Any, x: Any, axis_name: Any, **params: Any) -> Any:
    """``prim`` over each named axis in turn (the last first), on every leaf of ``x``."""
    if isinstance(x, ArrayBase) and not isinstance(axis_name, (tuple, list)):  # (one array over one axis)
        return bind(prim, x, **_axes.axis_params(op, axis_name), **params)
    axes = [_axes.axis_params(op, n) for n in _names(op, axis_name)]

    def leaf(v: Any) -> Any:
        v = as_array(v)
        for axis in reversed(axes):
            v = bind(prim, v, **axis, **params)
        return v

    return _leaves(leaf, x)


def psum(x: Any, axis_name: Any) -> Any:
    """The sum over the members of ``axis_name`` of each leaf of ``x``, in every member."""
    return _over("psum", _axes.psum_p, x, axis_name)


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean over the members of ``axis_name`` of each leaf of ``x``, in every member."""
    if isinstance(x, ArrayBase) and not isinstance(axis_name, (tuple, list)):  # (one array over one axis)
        axis = _axes.axis_params("pmean", axis_name)
        return bind(_axes.psum_p, x, **axis) / axis["size"]
    n = axis_size(axis_name)
    return _leaves(lambda v: v / n, psum(x, axis_name))


def pmax(x: Any, axis_name: Any) -> Any:
    """The largest value over the members of ``axis_name``, elementwise (NaN propagates)."""
    return _over("pmax", _axes.pmax_p, x, axis_name)


def pmin(x: Any, axis_name: Any) -> Any:
    """The smallest value over the members of ``axis_name``, elementwise (NaN propagates)."""
    return _over("pmin", _axes.pmin_p, x, axis_name)


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every member's ``x`` stacked along a new axis ``axis`` in the members' order (``tiled``:
    concatenated along the existing axis ``axis``), in every member."""
    names = _names("all_gather", axis_name)

    def leaf(v: Any) -> Any:
        v = as_array(v)
        for k, name in enumerate(reversed(names)):  # the minor name first; the others concatenate onto it
            v = bind(_axes.all_gather_p, v, **_axes.axis_params("all_gather", name), axis=axis, tiled=tiled or k > 0)
        return v

    return _leaves(leaf, x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, tiled: bool = False) -> Any:
    """``psum`` whose result member ``i`` keeps only block ``i`` of axis ``scatter_dimension``
    (whose size is the axis size, or with ``tiled`` a multiple of it)."""
    named = _axes.axis_params("psum_scatter", _one_name("psum_scatter", axis_name))
    return _leaves(lambda v: bind(_axes.psum_scatter_p, as_array(v), **named, scatter_dimension=scatter_dimension,
                                    tiled=tiled), x)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Member ``t`` receives member ``s``'s ``x`` for each pair ``(s, t)`` of ``perm``;
    members no pair sends to receive zeros."""
    named = _axes.axis_params("ppermute", _one_name("ppermute", axis_name))
    pairs = tuple((int(s), int(t)) for s, t in perm)
    return _leaves(lambda v: bind(_axes.ppermute_p, as_array(v), **named, perm=pairs), x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *, tiled: bool = False) -> Any:
    """Axis ``split_axis`` cut in one block per member, block ``i`` sent to member ``i``, and
    the blocks received stacked along a new axis ``concat_axis`` (``tiled``: the split axis
    keeps its place, and the blocks are concatenated along ``concat_axis``)."""
    named = _axes.axis_params("all_to_all", _one_name("all_to_all", axis_name))
    return _leaves(lambda v: bind(_axes.all_to_all_p, as_array(v), **named, split_axis=split_axis,
                                    concat_axis=concat_axis, tiled=tiled), x)


def axis_index(axis_name: Any) -> Any:
    """This member's position along ``axis_name`` (int32; for several names, the position in
    their product, the first the major)."""
    index: Any = None
    for name in _names("axis_index", axis_name):
        named = _axes.axis_params("axis_index", name)
        group = named.get("group")  # (a mesh axis's ranks: the index on the device their group moves)
        k = bind(_axes.axis_index_p, ops.zeros((0,), device=group.device if group is not None else None), **named)
        index = k if index is None else index * named["size"] + k
    return index


def map(f: Callable[[Any], Any], xs: Any) -> Any:  # noqa: A001  (jax.lax.map)
    """``f`` over the leading axis of ``xs``, one member at a time: ``scan`` with no carry."""
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]


# ---- jax.lax's names for funcgrad's operations ------------------------------------------------

add, sub, mul, div, neg = ops.add, ops.subtract, ops.multiply, ops.divide, ops.negative
exp, expm1, log, log1p = ops.exp, ops.expm1, ops.log, ops.log1p
sin, cos, tan, tanh = ops.sin, ops.cos, ops.tan, ops.tanh
logistic, sqrt, rsqrt, abs, sign = ops.sigmoid, ops.sqrt, ops.rsqrt, ops.abs, ops.sign  # noqa: A001
floor, ceil, round, square, reciprocal = ops.floor, ops.ceil, ops.round, ops.square, ops.reciprocal  # noqa: A001
max, min, pow, erf, atan2 = ops.maximum, ops.minimum, ops.power, ops.erf, ops.atan2  # noqa: A001
lgamma, digamma, polygamma = ops.lgamma, ops.digamma, ops.polygamma
reshape, transpose, squeeze, expand_dims = ops.reshape, ops.transpose, ops.squeeze, ops.expand_dims
cumsum, cumprod, sort = ops.cumsum, ops.cumprod, ops.sort


def integer_pow(x: Any, y: int) -> Any:
    return as_array(x) ** int(y)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred``, else ``on_false`` (jax.lax.select: no broadcasting of ``pred``)."""
    return ops.where(pred, on_true, on_false)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002  (jax.lax.clamp's order and names)
    return ops.clip(x, min, max)


def convert_element_type(x: Any, new_dtype: Any) -> Any:
    return as_array(x).astype(new_dtype)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    return ops.concatenate(list(operands), axis=dimension)


def broadcast(x: Any, sizes: Sequence[int]) -> Any:
    """``x`` with new leading axes of ``sizes``."""
    x = as_array(x)
    return ops.broadcast_to(x, (*sizes, *x.shape))


def dot(a: Any, b: Any) -> Any:
    return ops.matmul(a, b)


def iota(dtype: Any, size: int) -> Any:
    return ops.arange(size, dtype=dtype)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    return ops.full(tuple(shape), fill_value, dtype=dtype)


# ---- the reference sections ------------------------------------------------------------------

# The summaries of the functions that wrap one primitive.
_SUMMARIES = {
    'clamp': "``x`` limited to ``[min, max]`` elementwise (``jax.lax.clamp``'s argument order).",
    'concatenate': 'Arrays joined along ``dimension`` (``jax.lax.concatenate``).',
    'convert_element_type': '``x`` in another dtype (``jax.lax.convert_element_type``).',
    'dot': 'The product of vectors and matrices (``jax.lax.dot``): ``a @ b`` for ranks 1 and 2.',
    'full': 'An array of ``fill_value`` everywhere (``jax.lax.full``).',
    'integer_pow': '``x ** y`` for a Python int ``y``, by repeated multiplication (``jax.lax.integer_pow``).',
    'iota': '``0, 1, ..., size - 1`` in ``dtype`` (``jax.lax.iota``).',
}

# Each function's example (the values ``jax.lax`` gives, checked when written) and what each
# of its parameters means.
_REFERENCE: dict[str, tuple[str, str, dict[str, str]]] = {
    'psum': (
        'fg.vmap(lambda v: fg.lax.psum(v, "i"), axis_name="i")(fg.arange(4.0)).tolist()',
        '[6.0, 6.0, 6.0, 6.0]',
        {
            'x': 'the value (an array, or a pytree of arrays).',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'pmean': (
        'fg.vmap(lambda v: fg.lax.pmean(v, "i"), axis_name="i")(fg.arange(4.0)).tolist()',
        '[1.5, 1.5, 1.5, 1.5]',
        {
            'x': 'the value (an array, or a pytree of arrays).',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'pmax': (
        'fg.vmap(lambda v: fg.lax.pmax(v, "i"), axis_name="i")(fg.arange(4.0)).tolist()',
        '[3.0, 3.0, 3.0, 3.0]',
        {
            'x': 'the value (an array, or a pytree of arrays).',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'pmin': (
        'fg.vmap(lambda v: fg.lax.pmin(v, "i"), axis_name="i")(fg.arange(4.0)).tolist()',
        '[0.0, 0.0, 0.0, 0.0]',
        {
            'x': 'the value (an array, or a pytree of arrays).',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'axis_index': (
        'fg.vmap(lambda v: fg.lax.axis_index("i") * v, axis_name="i")(fg.arange(4.0)).tolist()',
        '[0.0, 1.0, 4.0, 9.0]',
        {
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'axis_size': (
        'fg.vmap(lambda v: v * fg.lax.axis_size("i"), axis_name="i")(fg.arange(3.0)).tolist()',
        '[0.0, 3.0, 6.0]',
        {
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
        }),
    'all_gather': (
        'fg.vmap(lambda v: fg.lax.all_gather(v, "i"), axis_name="i")(fg.arange(2.0)).tolist()',
        '[[0.0, 1.0], [0.0, 1.0]]',
        {
            'x': 'the value.',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
            'axis': 'where the new axis of members goes.',
            'tiled': 'concatenate along ``axis`` instead of stacking.',
        }),
    'ppermute': (
        ('fg.vmap(lambda v: fg.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), '
         'axis_name="i")(fg.arange(4.0)).tolist()'),
        '[3.0, 0.0, 1.0, 2.0]',
        {
            'x': 'the value (an array, or a pytree of arrays).',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
            'perm': 'pairs ``(source, target)`` of member positions; each appears at most once on each side.',
        }),
    'psum_scatter': (
        'fg.vmap(lambda v: fg.lax.psum_scatter(v, "i"), axis_name="i")(fg.arange(4.0).reshape(2, 2)).tolist()',
        '[2.0, 4.0]',
        {
            'x': ('the value; axis ``scatter_dimension`` has one block per member (or is split evenly with '
                  '``tiled``).'),
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
            'scatter_dimension': 'the axis cut among the members.',
            'tiled': 'keep the axis (of size divided by the members) instead of removing it.',
        }),
    'all_to_all': (
        'fg.vmap(lambda v: fg.lax.all_to_all(v, "i", 0, 0), axis_name="i")(fg.arange(4.0).reshape(2, 2)).tolist()',
        '[[0.0, 2.0], [1.0, 3.0]]',
        {
            'x': 'the value.',
            'axis_name': ('the name of a mapped axis (``fg.vmap(..., axis_name=)``, a mesh axis under '
                          '``fg.shard_map``), or a tuple of them.'),
            'split_axis': 'the axis cut in one block per member.',
            'concat_axis': 'the axis the received blocks are joined along.',
            'tiled': ('split and join within existing axes (else the split axis has one entry per member and '
                      'goes away).'),
        }),
    'broadcast': (
        'fg.lax.broadcast(fg.asarray([1.0, 2.0]), (2,)).tolist()',
        '[[1.0, 2.0], [1.0, 2.0]]',
        {
            'x': 'the array.',
            'sizes': 'the new leading axes.',
        }),
    'clamp': (
        'fg.lax.clamp(0.0, fg.asarray([-1.0, 0.5, 2.0]), 1.0).tolist()',
        '[0.0, 0.5, 1.0]',
        {
            'min': "the lower bound (a scalar or of ``x``'s shape).",
            'x': 'the array.',
            'max': 'the upper bound.',
        }),
    'concatenate': (
        'fg.lax.concatenate([fg.ones(2), fg.zeros(1)], 0).tolist()',
        '[1.0, 1.0, 0.0]',
        {
            'operands': 'arrays of one dtype, the same shape but along ``dimension``.',
            'dimension': 'the axis to join along.',
        }),
    'convert_element_type': (
        'fg.lax.convert_element_type(fg.asarray([1.7, -1.7]), fg.int32).tolist()',
        '[1, -1]',
        {
            'x': 'the array.',
            'new_dtype': 'the dtype (floats to ints round towards zero).',
        }),
    'dot': (
        'fg.lax.dot(fg.asarray([[1.0, 2.0]]), fg.asarray([[3.0], [4.0]])).tolist()',
        '[[11.0]]',
        {
            'a': 'a vector or matrix.',
            'b': 'another.',
        }),
    'full': (
        'fg.lax.full((2,), 7.0).tolist()',
        '[7.0, 7.0]',
        {
            'shape': 'the shape.',
            'fill_value': 'the value.',
            'dtype': "the dtype (the value's by default).",
        }),
    'integer_pow': (
        'fg.lax.integer_pow(fg.asarray([2.0, 3.0]), 3).tolist()',
        '[8.0, 27.0]',
        {
            'x': 'the array.',
            'y': 'the exponent, a Python int (repeated multiplication).',
        }),
    'iota': (
        'fg.lax.iota(fg.int32, 4).tolist()',
        '[0, 1, 2, 3]',
        {
            'dtype': 'the dtype.',
            'size': 'how many: ``0, 1, ..., size - 1``.',
        }),
    'map': (
        'fg.lax.map(lambda r: r.sum(), fg.arange(6.0).reshape(3, 2)).tolist()',
        '[1.0, 5.0, 9.0]',
        {
            'f': 'a function of one member.',
            'xs': 'arrays (or a pytree of them) sharing a leading axis.',
        }),
    'select': (
        'fg.lax.select(fg.asarray([True, False]), fg.ones(2), fg.zeros(2)).tolist()',
        '[1.0, 0.0]',
        {
            'pred': "a bool array of the operands' shape (or a scalar).",
            'on_true': 'the values where it holds.',
            'on_false': 'the values where not.',
        }),
}

for _name, (_call, _shown, _described) in _REFERENCE.items():
    _fn = globals()[_name]
    _fn.__doc__ = sections(_SUMMARIES.get(_name) or _fn.__doc__ or "",
                           [(p, _described[p]) for p in inspect.signature(_fn).parameters], [f">>> {_call}", _shown])
del _name, _call, _shown, _described, _fn
