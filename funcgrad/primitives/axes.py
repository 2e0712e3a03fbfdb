"""Collectives over named axes (``fg.lax.psum`` and the rest, JAX's semantics).

A named axis is one a transform binds while the function runs: ``fg.vmap(f,
axis_name="i")`` binds ``"i"`` to its batch, so a collective over ``"i"`` inside ``f``
acts across the batch's members. Each collective is a primitive with its ``axis_name``
and the axis's ``size`` among its parameters, so it differentiates, batches and traces like
any other:

* The batching interpreter that binds the name applies the primitive's ``axis_batch`` rule:
  the collective written as ordinary primitives over the batch axis (``psum`` is a sum
  over it, ``all_gather`` moves it into place...). Any other ``vmap`` applies ``batch``:
  the collective of each of its members, as ``defvectorized`` gives.
* Reverse mode follows JAX: ``psum``'s transpose is ``psum`` (every member's loss counts),
  ``all_gather``'s is ``psum_scatter`` and the other way round, ``ppermute``'s the inverse
  permutation, ``all_to_all``'s the exchange back. ``pmax``/``pmin`` pass the tangent of
  the member(s) holding the extreme, ties shared (JAX has no rule for them).
* ``fg.shard_map`` binds each axis of a mesh of ranks with the process group of its ranks,
  which the collectives carry as their ``group`` parameter: their kernels run across the
  ranks (``ACROSS_RANKS``, MPI's collectives on each rank's block).
* A collective no transform takes raises ``UnboundAxisError``, unless its axis has one
  member (then it is computed where it is: ``psum`` of one member is the value).

``bound_axes`` is the stack of names the running transforms bind, innermost last;
``fg.lax``'s functions check a name against it before they bind.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..dtypes import int32
from ..errors import ArgumentValueError, FuncgradError, ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import to_front
from .core import REGISTRY, Primitive, ShapedArray, aval_of, bind, fmt_shape
from .elementwise import BINARY

__all__ = ["UnboundAxisError", "axis_params", "axis_size", "binding", "bound_axes", "psum_p", "pmax_p", "pmin_p",
           "all_gather_p", "psum_scatter_p", "ppermute_p", "all_to_all_p", "axis_index_p", "COLLECTIVES"]


class UnboundAxisError(FuncgradError, NameError):
    """A collective names an axis no running transform binds (``fg.vmap(axis_name=)``)."""


# (name, size, group): group is None for a vmap's batch, the process group of a mesh axis's
# ranks for fg.shard_map's
_BOUND: ContextVar[tuple[tuple[Any, int, Any], ...]] = ContextVar("funcgrad_bound_axes", default=())


def bound_axes() -> tuple[tuple[Any, int, Any], ...]:
    """The ``(name, size, group)`` of every axis the running transforms bind, innermost last."""
    return _BOUND.get()


def bind_axis(name: Any, size: int, group: Any = None) -> Any:
    """Bind axis ``name`` of ``size`` members (a vmap's batch, or with ``group``, a process
    group of ``size`` ranks, a mesh axis of ``fg.shard_map``) until ``unbind_axis(token)``
    with the token this returns. (Two calls, not a context manager: every named vmap call
    makes them.)"""
    return _BOUND.set((*_BOUND.get(), (name, size, group)))


unbind_axis = _BOUND.reset


class binding:
    """``bind_axis`` for the duration of a block."""

    __slots__ = ("axis", "token")

    def __init__(self, name: Any, size: int, group: Any = None) -> None:
        self.axis = (name, size, group)

    def __enter__(self) -> None:
        self.token = bind_axis(*self.axis)

    def __exit__(self, *exc: Any) -> None:
        unbind_axis(self.token)


def axis_params(op: str, name: Any) -> dict[str, Any]:
    """The parameters that name the innermost axis called ``name`` in a collective: its name
    and size, and under ``fg.shard_map`` the process group of its ranks (a vmap's batch has
    none); ``UnboundAxisError`` naming it, and ``fg.lax.{op}``, if no axis is called that."""
    for bound, size, group in reversed(_BOUND.get()):
        if bound == name:
            return {"axis_name": name, "size": size} if group is None else \
                {"axis_name": name, "size": size, "group": group}
    names = ", ".join(repr(n) for n, _, _ in _BOUND.get()) or "none"
    raise UnboundAxisError(f"fg.lax.{op}: unbound axis name {name!r} (the axes bound here: {names}); bind it with "
                           f"fg.vmap(..., axis_name={name!r}) or fg.shard_map over a mesh with that axis")


def axis_size(op: str, name: Any) -> int:
    """The size of the innermost axis called ``name``."""
    return axis_params(op, name)["size"]  # type: ignore[no-any-return]


def _same(x: ShapedArray, *, axis_name: Any, size: int, group: Any = None) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, x.device)


def _axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: axis {axis} is out of range for {ndim} dimension(s)")
    return axis % ndim


def _shifted(*keys: str) -> Any:
    """The parameters of one member's collective for a batch with one more axis in front:
    axes ``keys`` counted from the front move up by one."""
    return lambda **p: {**p, **{k: p[k] + 1 for k in keys if p[k] >= 0}}


def _collective(name: str, rule: Any, axis_batch: Any, vectorized: Any = None, **kw: Any) -> Primitive:
    """A collective: ``rule`` its shape rule, ``axis_batch`` its rule under the vmap that binds
    its axis, ``vectorized`` its parameters under any other vmap. Its kernel runs it across
    a mesh axis's ranks (``group``), or computes an axis of one member in place; with
    neither it is unbound. ``group`` is a parameter, so a compiled program or a backward
    pass made inside ``shard_map`` still knows the ranks after it returns."""
    def kernel(xp: Any, *raw: Any, axis_name: Any, size: int, group: Any = None, **params: Any) -> Any:
        if group is not None:
            return ACROSS_RANKS[name](group, xp, *raw, **params)  # type: ignore[operator]
        if size != 1:
            raise UnboundAxisError(f"{name}: no transform binds axis {axis_name!r} (of {size} members) here")
        return ONE_MEMBER[name](xp, *raw, **params)  # type: ignore[operator]

    def checked(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> Any:
        """``axis_batch`` after the shape rule's checks, on what one member sees."""
        rule(*(aval_of(a) if d is None else _member_aval(a, d) for a, d in zip(args, dims)), **params)
        return axis_batch(args, dims, **params)

    # (psum's shape rule checks nothing: its batch rule is called directly, as every named
    # vmap's psum and pmean call it)
    prim = Primitive(name, rule, kernel=kernel, axis_batch=axis_batch if rule is _same else checked, **kw)

    def other_axis(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        """Another vmap's batch: the collective of each of its members (batch axis first)."""
        x = to_front(args[0], dims[0])
        new = vectorized(**params) if vectorized is not None else params
        return bind(prim, x, **new), 0

    prim.batch = other_axis
    return prim


def _member_aval(x: Any, d: int) -> ShapedArray:
    """What one member of a batch sees of ``x``, mapped along axis ``d``."""
    shape = tuple(x.shape)
    return ShapedArray(shape[:d] + shape[d + 1:], x.dtype, x.device)


# ---- psum, pmax, pmin ------------------------------------------------------------------------

def _reduction_batch(kind: str) -> Any:
    name = f"reduce_{kind}"  # (registered after this module)

    def rule(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any, size: int) -> tuple[Any, None]:
        (x,), (d,) = args, dims
        if d is None:  # the same value in every member
            return (x * size if kind == "sum" else x), None
        return bind(REGISTRY[name], x, axes=(d,), keepdims=False), None

    return rule


psum_p = _collective("psum", _same, _reduction_batch("sum"))
pmax_p = _collective("pmax", _same, _reduction_batch("max"))
pmin_p = _collective("pmin", _same, _reduction_batch("min"))
defjvp(psum_p, lambda t, ans, x, **p: bind(psum_p, t, **p))
defvjp(psum_p, lambda g, ans, x, **p: bind(psum_p, g, **p), saves="nothing")


def _holders(ans: Any, x: Any, params: dict[str, Any]) -> tuple[Any, Any]:
    """Where this member holds the extreme, and how many members hold it there (ties share)."""
    holds = lax.eq(x, ans)
    return holds, bind(psum_p, lax.convert(holds, x.dtype), **params)


def _extreme_jvp(t: Any, ans: Any, x: Any, **params: Any) -> Any:
    holds, count = _holders(ans, x, params)
    return BINARY["div"].bind(bind(psum_p, lax.select(holds, t, lax.const(t, 0)), **params), count)


def _extreme_vjp(g: Any, ans: Any, x: Any, **params: Any) -> Any:
    holds, count = _holders(ans, x, params)
    return lax.select(holds, BINARY["div"].bind(bind(psum_p, g, **params), count), lax.const(g, 0))


for _prim in (pmax_p, pmin_p):
    defjvp(_prim, _extreme_jvp)
    defvjp(_prim, _extreme_vjp)


# ---- all_gather, psum_scatter ----------------------------------------------------------------

def _all_gather_rule(x: ShapedArray, *, axis_name: Any, size: int, axis: int, tiled: bool,
                     group: Any = None) -> ShapedArray:
    if tiled:
        a = _axis("all_gather", axis, len(x.shape))
        shape = (*x.shape[:a], x.shape[a] * size, *x.shape[a + 1:])
    else:
        a = _axis("all_gather", axis, len(x.shape) + 1)
        shape = (*x.shape[:a], size, *x.shape[a:])
    return ShapedArray(shape, x.dtype, x.device)


def _merge(x: Any, a: int) -> Any:
    """Axes ``a`` and ``a + 1`` as one (the first the major)."""
    return lax.reshape(x, (*x.shape[:a], x.shape[a] * x.shape[a + 1], *x.shape[a + 2:]))


def _split(x: Any, a: int, n: int) -> Any:
    """Axis ``a`` as ``(n, size // n)``."""
    return lax.reshape(x, (*x.shape[:a], n, x.shape[a] // n, *x.shape[a + 1:]))


def _all_gather_batch(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any, size: int, axis: int,
                      tiled: bool) -> tuple[Any, None]:
    (x,), (d,) = args, dims
    member = x.ndim - (d is not None)
    a = axis % (member if tiled else member + 1)
    if d is None:
        x, d = lax.broadcast_to(lax.expand_dims(x, (0,)), (size, *x.shape)), 0
    out = lax.moveaxis(x, (d,), (a,))
    return (_merge(out, a) if tiled else out), None


all_gather_p = _collective("all_gather", _all_gather_rule, _all_gather_batch, _shifted("axis"))


def _psum_scatter_rule(x: ShapedArray, *, axis_name: Any, size: int, scatter_dimension: int,
                       tiled: bool, group: Any = None) -> ShapedArray:
    s = _axis("psum_scatter", scatter_dimension, len(x.shape))
    n = x.shape[s]
    if (n % size if tiled else n != size):
        raise ShapeError(f"psum_scatter: axis {s} of shape {fmt_shape(x.shape)} has size {n}, which "
                         f"{'is not a multiple of' if tiled else 'is not'} the size {size} of axis {axis_name!r}")
    shape = (*x.shape[:s], n // size, *x.shape[s + 1:]) if tiled else (*x.shape[:s], *x.shape[s + 1:])
    return ShapedArray(shape, x.dtype, x.device)


def _psum_scatter_batch(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any, size: int,
                        scatter_dimension: int, tiled: bool) -> tuple[Any, int]:
    (x,), (d,) = args, dims
    total = x * size if d is None else lax.reduce_sum(x, (d,))
    s = scatter_dimension % total.ndim
    return (_split(total, s, size) if tiled else total), s


psum_scatter_p = _collective("psum_scatter", _psum_scatter_rule, _psum_scatter_batch, _shifted("scatter_dimension"))


def _named(p: dict[str, Any]) -> dict[str, Any]:
    """The parameters that name the axis: its name, size and (under shard_map) group."""
    return {k: p[k] for k in ("axis_name", "size", "group") if k in p}


def _gathered_as_scattered(p: dict[str, Any]) -> dict[str, Any]:
    return {**_named(p), "scatter_dimension": p["axis"], "tiled": p["tiled"]}


def _scattered_as_gathered(p: dict[str, Any]) -> dict[str, Any]:
    return {**_named(p), "axis": p["scatter_dimension"], "tiled": p["tiled"]}


defjvp(all_gather_p, lambda t, ans, x, **p: bind(all_gather_p, t, **p))
defvjp(all_gather_p, lambda g, ans, x, **p: bind(psum_scatter_p, g, **_gathered_as_scattered(p)), saves="nothing")
defjvp(psum_scatter_p, lambda t, ans, x, **p: bind(psum_scatter_p, t, **p))
defvjp(psum_scatter_p, lambda g, ans, x, **p: bind(all_gather_p, g, **_scattered_as_gathered(p)), saves="nothing")


# ---- ppermute, all_to_all, axis_index --------------------------------------------------------

def _ppermute_rule(x: ShapedArray, *, axis_name: Any, size: int, perm: tuple[tuple[int, int], ...],
                   group: Any = None) -> ShapedArray:
    sources, targets = [s for s, _ in perm], [t for _, t in perm]
    for k in (*sources, *targets):
        if not 0 <= k < size:
            raise ArgumentValueError(f"ppermute: member {k} of perm {list(perm)} is not in axis {axis_name!r} of "
                                     f"size {size}")
    if len(set(sources)) < len(sources) or len(set(targets)) < len(targets):
        raise ArgumentValueError(f"ppermute: perm {list(perm)} names a member twice as a source or a target")
    return ShapedArray(x.shape, x.dtype, x.device)


def _ppermute_batch(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any, size: int,
                    perm: tuple[tuple[int, int], ...]) -> tuple[Any, int]:
    """Member ``t`` receives member ``s``'s value for each ``(s, t)``; the others zeros."""
    (x,), (d,) = args, dims
    x = lax.broadcast_to(lax.expand_dims(x, (0,)), (size, *x.shape)) if d is None else to_front(x, d)
    source = dict((t, s) for s, t in perm)
    rows = [lax.slice_axis(x, 0, source[t], source[t] + 1) if t in source else lax.zeros(x, (1, *x.shape[1:]))
            for t in range(size)]
    return (rows[0] if size == 1 else bind(REGISTRY["concatenate"], *rows, axis=0)), 0


ppermute_p = _collective("ppermute", _ppermute_rule, _ppermute_batch)
defjvp(ppermute_p, lambda t, ans, x, **p: bind(ppermute_p, t, **p))
defvjp(ppermute_p, lambda g, ans, x, **p: bind(ppermute_p, g, **{**p, "perm": tuple((t, s) for s, t in p["perm"])}),
       saves="nothing")


def _all_to_all_rule(x: ShapedArray, *, axis_name: Any, size: int, split_axis: int, concat_axis: int,
                     tiled: bool, group: Any = None) -> ShapedArray:
    n = len(x.shape)
    s, c = _axis("all_to_all", split_axis, n), _axis("all_to_all", concat_axis, n)
    if (x.shape[s] % size if tiled else x.shape[s] != size):
        raise ShapeError(f"all_to_all: split axis {s} of shape {fmt_shape(x.shape)} has size {x.shape[s]}, which "
                         f"{'is not a multiple of' if tiled else 'is not'} the size {size} of axis {axis_name!r}")
    shape = list(x.shape)
    if tiled:
        shape[s] //= size
        shape[c] *= size
    else:
        del shape[s]
        shape.insert(c, size)
    return ShapedArray(tuple(shape), x.dtype, x.device)


def _all_to_all_batch(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any, size: int,
                      split_axis: int, concat_axis: int, tiled: bool) -> tuple[Any, int]:
    """Member ``i`` receives block ``i`` of every member's split axis, stacked (or, tiled,
    concatenated) along the concat axis in the members' order."""
    (x,), (d,) = args, dims
    x = lax.broadcast_to(lax.expand_dims(x, (0,)), (size, *x.shape)) if d is None else to_front(x, d)
    member = x.ndim - 1
    s, c = split_axis % member, concat_axis % member
    if tiled:
        x = _split(x, 1 + s, size)  # (members, ..., block index, block, ...)
    out = lax.moveaxis(x, (1 + s,), (0,))  # (block index: who receives, sender, the rest)
    out = lax.moveaxis(out, (1,), (1 + c,))  # the senders along the concat axis
    return (_merge(out, 1 + c) if tiled else out), 0


all_to_all_p = _collective("all_to_all", _all_to_all_rule, _all_to_all_batch, _shifted("split_axis", "concat_axis"))
defjvp(all_to_all_p, lambda t, ans, x, **p: bind(all_to_all_p, t, **p))
defvjp(all_to_all_p, lambda g, ans, x, **p: bind(all_to_all_p, g, **{**p, "split_axis": p["concat_axis"],
                                                                       "concat_axis": p["split_axis"]}),
       saves="nothing")


def _axis_index_rule(like: ShapedArray, *, axis_name: Any, size: int, group: Any = None) -> ShapedArray:
    return ShapedArray((), int32, like.device)


def _axis_index_batch(args: Sequence[Any], dims: Sequence[int | None], *, axis_name: Any,
                      size: int) -> tuple[Any, int]:
    return lax.iota(args[0], size, int32), 0


# Its operand only says which device (an empty array): the same for every member of another vmap.
axis_index_p = _collective("axis_index", _axis_index_rule, _axis_index_batch, differentiable=False)
axis_index_p.batch = lambda args, dims, **p: (bind(axis_index_p, lax.zeros(args[0], (0,)), **p), None)

COLLECTIVES = (psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p, axis_index_p)


# ---- the kernels: an axis of one member, and a mesh axis's ranks -----------------------------

def _fresh(xp: Any, x: Any) -> Any:
    return xp.array(x, copy=True)


ONE_MEMBER = {
    "psum": _fresh, "pmax": _fresh, "pmin": _fresh,
    "all_gather": lambda xp, x, *, axis, tiled: _fresh(xp, x if tiled else xp.expand_dims(x, axis)),
    "psum_scatter": lambda xp, x, *, scatter_dimension, tiled: _fresh(
        xp, x if tiled else xp.squeeze(x, scatter_dimension)),
    "ppermute": lambda xp, x, *, perm: _fresh(xp, x) if perm else xp.zeros_like(x),
    "all_to_all": lambda xp, x, *, split_axis, concat_axis, tiled: _fresh(
        xp, x if tiled else xp.expand_dims(xp.squeeze(x, split_axis), concat_axis)),
    "axis_index": lambda xp, like: xp.zeros((), np.int32),
}


def _blocks(xp: Any, x: Any, axis: int, n: int, tiled: bool) -> Any:
    """``x``'s axis ``axis`` cut in ``n`` blocks, the block index first (contiguous, to send)."""
    if tiled:
        x = x.reshape(*x.shape[:axis], n, x.shape[axis] // n, *x.shape[axis + 1:])
    return xp.ascontiguousarray(xp.moveaxis(x, axis, 0))


def _stacked(xp: Any, received: Any, axis: int, tiled: bool) -> Any:
    """Blocks received from each rank (the rank first) along ``axis``: a new axis, or tiled
    concatenated onto the axis there."""
    out = xp.moveaxis(received, 0, axis)
    if tiled:
        out = out.reshape(*out.shape[:axis], out.shape[axis] * out.shape[axis + 1], *out.shape[axis + 2:])
    return xp.ascontiguousarray(out)


def _gather_ranks(group: Any, xp: Any, x: Any, *, axis: int, tiled: bool) -> Any:
    return _stacked(xp, group.all_gather(xp, x).wait(), axis % (x.ndim + (not tiled)), tiled)


def _scatter_ranks(group: Any, xp: Any, x: Any, *, scatter_dimension: int, tiled: bool) -> Any:
    # (block r of every rank, summed: tiled, the block keeps the scattered axis's place)
    return group.reduce_scatter(xp, _blocks(xp, x, scatter_dimension % x.ndim, group.size, tiled), "sum").wait()


def _exchange_ranks(group: Any, xp: Any, x: Any, *, split_axis: int, concat_axis: int, tiled: bool) -> Any:
    # block j to rank j; what arrives is (sender, *block), each block keeping the split axis tiled
    received = group.all_to_all(xp, _blocks(xp, x, split_axis % x.ndim, group.size, tiled)).wait()
    return _stacked(xp, received, concat_axis % x.ndim, tiled)


ACROSS_RANKS = {
    "psum": lambda group, xp, x: group.all_reduce(xp, x, "sum").wait().reshape(x.shape),
    "pmax": lambda group, xp, x: group.all_reduce(xp, x, "max").wait().reshape(x.shape),
    "pmin": lambda group, xp, x: group.all_reduce(xp, x, "min").wait().reshape(x.shape),
    "all_gather": _gather_ranks, "psum_scatter": _scatter_ranks,
    "ppermute": lambda group, xp, x, *, perm: group.permute(xp, x, perm).wait(),
    "all_to_all": _exchange_ranks,
    "axis_index": lambda group, xp, like: xp.asarray(group.rank, np.int32),
}
