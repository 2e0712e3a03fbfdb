"""Helpers for writing batching rules next to their primitives (``vmap``).

A batching rule maps a primitive over one more axis. ``prim.batch(args, dims, **params)``
receives the arguments with their batch axes in ``dims`` (an int per array, ``None`` for an
argument that is the same for every member: not mapped, as are Python scalars) and returns
``(out, out_dim)`` (tuples of both for a primitive of several results). It computes by
binding primitives (``lax``), so whatever interpreter is below ``vmap`` records them.

Most rules come from a few patterns, as in Autodidax:

* ``defbroadcasting``: elementwise primitives. Batched operands get the batch axis in front
  and enough size-1 axes to line up with the others; NumPy broadcasting does the rest.
* ``defvectorized``: a primitive of one array whose parameters name its axes. The batch
  axis goes in front and the parameters are rewritten to skip it (``shift_axes`` ...).
* ``defbatched_matrices``: operands whose leading axes already broadcast as a batch
  (matmul, solve...): the batch axis goes in front of those.
* ``batch_by_loop``: the primitive once per member, the results stacked. Always right, and
  slow: for the few primitives no other rule fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import lax
from .core import REGISTRY, Primitive, ShapedArray, aval_of, bind

__all__ = ["axis_size", "to_front", "with_batch", "defbroadcasting", "defvectorized", "defbatched_matrices",
           "batch_by_loop", "defunbatched", "shift_axes", "logical_ndim", "lined_up"]


def axis_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    """The batch size: the length of any mapped argument's batch axis."""
    return next(a.shape[d] for a, d in zip(args, dims) if d is not None)


def to_front(x: Any, d: int | None, size: int | None = None) -> Any:
    """``x`` with its batch axis first; an unmapped ``x`` broadcast to ``size`` members
    (when given: a rule whose operands must all be batched)."""
    if d is None:
        return x if size is None else lax.broadcast_to(x, (size, *x.shape))
    return x if d == 0 else lax.moveaxis(x, (d,), (0,))


def with_batch(x: Any, d: int | None, rank: int) -> Any:
    """A mapped ``x`` with its batch axis first and size-1 axes after it, up to ``rank`` axes
    besides the batch: it then broadcasts, batch first, against unmapped operands of up to
    that rank. An unmapped ``x`` is returned as it is."""
    if d is None:
        return x
    x = to_front(x, d)
    missing = rank - (x.ndim - 1)
    return lax.reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:])) if missing > 0 else x


def logical_ndim(x: Any, d: int | None) -> int:
    """The rank one member sees."""
    return len(aval_of(x).shape) - (d is not None) if hasattr(x, "shape") else 0


def shift_axes(axes: Any, by: int = 1) -> Any:
    return tuple(a + by for a in axes)


def lined_up(args: Sequence[Any], dims: Sequence[int | None]) -> int | None:
    """Where the batch axis of an elementwise primitive's result is when the primitive
    applied to the operands as they are is already the batched result (one operand, or
    two batch-first, or one batch-first and the other unmapped of lower rank, which NumPy
    broadcasting lines up with the members); ``None`` when they need lining up first."""
    if len(args) == 1:
        return dims[0]
    if len(args) == 2:
        (a, b), (da, db) = args, dims
        if (da == 0 and (db is None and getattr(b, "ndim", 0) < a.ndim or db == 0 and a.ndim == b.ndim)) \
                or (db == 0 and da is None and getattr(a, "ndim", 0) < b.ndim):
            return 0
    return None


def defbroadcasting(prim: Primitive) -> None:
    """An elementwise primitive: one batch axis in front of every mapped operand."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        if len(args) <= 2:  # (the usual cases, decided without lists)
            d = lined_up(args, dims)
            if d is not None:
                return bind(prim, *args, **params), d
        shapes = [getattr(a, "shape", ()) for a in args]  # (a Python number has none)
        mapped = [d for d in dims if d is not None]
        if len(mapped) == 1 and len(shapes) - shapes.count(()) == 1:
            return bind(prim, *args, **params), mapped[0]  # one array operand: its axis stays where it is
        ranks = [len(s) - (d is not None) for s, d in zip(shapes, dims)]
        rank = max(ranks)
        if all(d is None or (d == 0 and r == rank) for d, r in zip(dims, ranks)):  # batch first already
            return bind(prim, *args, **params), 0
        return bind(prim, *(with_batch(a, d, rank) for a, d in zip(args, dims)), **params), 0

    rule.elementwise = True  # type: ignore[attr-defined]  # (vmap may apply ``lined_up`` itself)
    prim.batch = rule


def defvectorized(prim: Primitive, params_for: Callable[..., dict[str, Any]] | None = None) -> None:
    """A primitive of one array (operand 0; any others are unmapped): the batch axis goes in
    front and ``params_for(x, **params)`` (``x`` the batched operand) rewrites the
    parameters to skip it. The result's batch axis is its first."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        if len(dims) > 1 and any(d is not None for d in dims[1:]):
            return batch_by_loop(prim)(args, dims, **params)
        x = args[0] if dims[0] == 0 else to_front(args[0], dims[0])
        new = params_for(x, **params) if params_for is not None else params
        return bind(prim, x, *args[1:], **new), 0

    prim.batch = rule


def defbatched_matrices(prim: Primitive, cores: Callable[..., Sequence[int]]) -> None:
    """Operands whose leading axes broadcast as a batch and whose last ``cores(*ranks)``
    axes the primitive works on (2 for a matrix): each mapped operand gets the batch axis in
    front of all of those, so the members line up. The result's batch axis is its first."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        ranks = [logical_ndim(a, d) for a, d in zip(args, dims)]
        core = cores(*ranks)
        lead = max(r - c for r, c in zip(ranks, core))
        ops = [with_batch(a, d, lead + c) for a, d, c in zip(args, dims, core)]
        return bind(prim, *ops, **params), 0

    prim.batch = rule


def defunbatched(prim: Primitive) -> None:
    """A primitive whose result does not depend on its operands' values (``full``, ``iota``:
    the operand only says which device): the same for every member."""
    prim.batch = lambda args, dims, **params: (bind(prim, *(_member(a, d, 0) for a, d in zip(args, dims)),
                                                    **params), None)


def _member(x: Any, d: int | None, k: int) -> Any:
    """Member ``k`` of a mapped ``x``."""
    if d is None:
        return x
    return lax.squeeze(lax.slice_axis(x, d, k, k + 1), (d,))


def batch_by_loop(prim: Primitive) -> Callable[..., Any]:
    """The rule that binds ``prim`` once per member and stacks the results (batch axis first)."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> Any:
        n = axis_size(args, dims)
        if n == 0:  # no member to run: empty results of the shapes one member's would have
            return _empty_results(prim, args, dims, params)
        runs = [bind(prim, *(_member(a, d, k) for a, d in zip(args, dims)), **params) for k in range(n)]
        if prim.multiple_results:
            outs = tuple(_stack([run[i] for run in runs]) for i in range(len(runs[0]))) if runs else ()
            return outs, (0,) * len(outs)
        return _stack(runs), 0

    return rule


def _empty_results(prim: Primitive, args: Sequence[Any], dims: Sequence[int | None], params: dict[str, Any]) -> Any:
    like = next(a for a, d in zip(args, dims) if d is not None)
    avals = [aval_of(a) for a in args]
    member = [v if d is None else ShapedArray(tuple(s for i, s in enumerate(v.shape) if i != d), v.dtype, v.device)
              for v, d in zip(avals, dims)]
    out: Any = prim.abstract_eval(*member, **params)
    if prim.multiple_results:
        outs = tuple(lax.zeros(like, (0, *o.shape), o.dtype) for o in out)
        return outs, (0,) * len(outs)
    return lax.zeros(like, (0, *out.shape), out.dtype), 0


def _stack(parts: list[Any]) -> Any:
    parts = [lax.expand_dims(p, (0,)) for p in parts]
    return parts[0] if len(parts) == 1 else bind(REGISTRY["concatenate"], *parts, axis=0)
