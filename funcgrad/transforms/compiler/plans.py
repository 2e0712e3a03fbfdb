"""Backward plans: an eager backward pass seen before, replayed as a flat list of kernels.

Eager reverse mode (``fg.grad`` with no transform around it, and the tape's
``backward()``) runs each node's VJP rule: Python that binds primitives one at
a time, fits shapes and adds cotangents. In a training loop the graph is the same
on every step, so the same rules bind the same primitives on the same shapes, and
that Python is most of the cost of a small model's backward pass.

So the backward pass is keyed by the graph's *structure*: each node's rule and
parameters, its edges, the shapes, strides, dtypes and devices of what it saved
(a rule may pick its computation by memory layout: ``core.layout_kind``), the
Python scalars it saved, and the seeds. The first time a structure is seen, its backward
pass is traced into a ``Program`` (the IR) and compiled (``pipeline.py``: its passes,
then one lowered function of kernel calls), kept in the plans' ``ProgramCache``. The next graph with that
structure runs the plan on its own saved arrays: the same kernels, on the same
inputs, in the same order, as the rules would run, so the results are identical.
(PyTorch's "compiled autograd" caches backward graphs the same way.)

A graph runs its rules as before when a plan cannot stand in for them: a rule that
is user code (``custom_vjp``, ``autograd.Function``, ``checkpoint``), a saved value
that is not an array or a Python scalar, or a rule that needs a concrete value.
Callers use plans only with no transform active and no history to record
(``create_graph=False``); hooks and ``retain_grad`` also take the rules' path.
"""

from __future__ import annotations

from typing import Any

from ... import tree as _tree
from ...array import Array, ArrayBase
from ...primitives.ad import VJPFromRules
from ...primitives.core import ShapedArray, layout_kind
from ..autodiff.graph import substitute, use_backward_plans, walk
from ..ir import Program, ProgramCache, make_program
from .lower import wrap_outputs
from .pipeline import compile_program

__all__ = ["replay", "clear", "cache_info", "MAX_PLANS", "ENABLED"]

ENABLED = True  # False: every backward pass runs the rules (tests compare the two paths)
MAX_PLANS = 64  # distinct graph structures kept (the least recently used goes first)

_PLANS = ProgramCache("backward plans", MAX_PLANS)
_SCALARS = (int, float, bool)


class _NoPlan(Exception):
    """This graph cannot be described by its structure alone."""


def clear() -> None:
    """Forget every plan (they are rebuilt on demand)."""
    _PLANS.clear()


def cache_info() -> dict[str, int]:
    """How many graph structures have a plan, and how many were found unplannable."""
    entries = _PLANS.values()
    return {"plans": sum(p is not None for p in entries), "unplannable": sum(p is None for p in entries)}


def replay(roots: list[tuple[Any, int, Any]], outputs: list[tuple[Any, int]] | None,
           keep_history: bool = False) -> tuple[list[Any], list[Any]] | None:
    """Run the backward pass from ``roots`` ((node, output index, cotangent) seeds) by its
    plan. Returns ``(cotangents, nodes)``: the cotangents reaching ``outputs`` ((node,
    output index) pairs; ``None`` where none arrives), or with ``outputs=None`` one per
    leaf node of the graph as ``(leaf, cotangent)`` pairs; and the graph's nodes.
    ``None`` when the graph has no plan: the caller runs the rules. With ``keep_history``
    (the tape records), a graph that reads an array with autograd history has no plan:
    its rules must run so that the tape records them."""
    if not ENABLED:
        return None
    try:
        key, nodes, arrays, leaves = _signature(roots, outputs)
    except _NoPlan:
        return None
    if keep_history:
        for a in arrays:
            if a._autograd is not None:
                return None
    try:
        plan = _PLANS.get(key)
    except TypeError:  # a parameter that cannot be hashed (a list, say): no key, no plan
        return None
    if plan is ProgramCache.MISSING:
        wanted = outputs if outputs is not None else [(leaf, 0) for leaf in leaves]
        plan = _PLANS.put(key, _build(nodes, roots, wanted, arrays))
    if plan is None:
        return None
    got = plan.run(arrays)
    return (got if outputs is not None else list(zip(leaves, got))), nodes


# ---- the structure of a graph ---------------------------------------------------------

def _signature(roots: list[Any], outputs: list[Any] | None) -> tuple[tuple[Any, ...], list[Any], list[Any], list[Any]]:
    """One walk of the graph: a hashable key of everything its backward computation depends
    on; its nodes; the arrays the backward reads (saved arrays node by node, then the
    seeds); and its leaf nodes.

    The walk goes breadth-first from the roots, through each node's parents in order, and
    numbers the nodes as it meets them: an order that depends only on the graph's shape,
    so the same program gets the same key. A node's parents are named by their numbers,
    so the key also says which values are shared. (The walk's order is not a topological
    one; ``_build`` orders the backward pass as the rules do.)"""
    nodes: list[Any] = []
    number: dict[int, int] = {}
    for r in roots:
        if id(r[0]) not in number:
            number[id(r[0])] = len(nodes)
            nodes.append(r[0])
    leaves: list[Any] = []
    key: list[Any] = []
    arrays: list[Any] = []
    add = key.append
    for node in nodes:  # grows as parents are met (a list iterator sees appended items)
        if node.out_metas is not None:  # the tape's hooks or retain_grad: walk step by step
            raise _NoPlan
        rule = node.rule
        if rule is None:  # a leaf
            leaves.append(node)
            add(None)
            continue
        residuals = node.residuals
        if not rule.plannable or residuals.__class__ is not tuple:
            raise _NoPlan  # user code as a rule (custom_vjp, Function, checkpoint), or a freed graph
        params = node.params
        if params:
            for v in params.values():
                if isinstance(v, ArrayBase):  # compared by identity in a key: never trusted
                    raise _NoPlan
            params = tuple([(k, v.__class__, v) for k, v in params.items()])
        else:
            params = None
        # (a primitive's rules keep its output(s) and its inputs; another rule, its own tuple)
        saved = (residuals[0], *residuals[1]) if rule.__class__ is VJPFromRules else residuals
        # the rule object itself: compared by identity and kept alive, so never confused
        edges: list[Any] = [rule, params, len(saved)]
        for p in node.parents:
            if p is None:
                edges.append(None)
                continue
            k = number.get(id(p[0]))
            if k is None:
                k = number[id(p[0])] = len(nodes)
                nodes.append(p[0])
            edges.append((k, p[1], p[2], p[3].name))
        add(tuple(edges))
        for a in saved:
            cls = a.__class__
            if cls is Array:  # the common cases, inline
                arrays.append(a)
                d = a._data
                add((d.shape, d.strides, a._dtype.name, a._device))
            elif cls is ShapedArray:
                add((a.shape, a.dtype.name, a.device))
            else:
                _saved_key(a, add, arrays)
    for node, idx, ct in roots:
        if ct.__class__ is not Array:
            raise _NoPlan
        add((number[id(node)], idx, ct._data.shape, ct._data.strides, ct._dtype.name, ct._device))
        arrays.append(ct)
    if outputs is not None:
        for node, idx in outputs:
            add((number.get(id(node), -1), idx))
    return tuple(key), nodes, arrays, leaves


def _saved_key(x: Any, add: Any, arrays: list[Any]) -> None:
    cls = x.__class__
    if cls is Array:
        arrays.append(x)
        add((x._data.shape, x._data.strides, x._dtype.name, x._device))
    elif cls is ShapedArray:
        add((x.shape, x.dtype.name, x.device))
    elif x is None:
        add(x)
    elif cls in _SCALARS:
        add((cls, x))  # 1 and 1.0 and True are equal keys, but not the same weak scalar
    elif cls is tuple:
        add(len(x))
        for e in x:
            _saved_key(e, add, arrays)
    else:
        raise _NoPlan


# ---- building a plan ---------------------------------------------------------------------

def _build(nodes: list[Any], roots: list[Any], outputs: list[Any], arrays: list[Any]) -> Plan | None:
    """Trace the rules' backward pass over this graph and lower it; ``None`` if it cannot be traced."""
    present: list[bool] = []
    ruled = [n for n in nodes if n.rule is not None]

    def backward(*flat: Any) -> list[Any]:
        values = iter(flat)  # in the signature's order: saved arrays node by node, then seeds
        saved = [substitute(n.residuals, values) for n in ruled]
        residuals_of = {id(n): r for n, r in zip(ruled, saved)}
        seeds = [(node, idx, next(values)) for node, idx, _ in roots]
        reached: dict[int, list[Any]] = {}  # each node's output cotangents, complete when it runs

        def visit(node: Any, cts: list[Any]) -> None:
            reached[id(node)] = cts

        # the rules' own walk: every graph with this key adds each value's cotangents in the
        # order its rules would
        walk(seeds, visit, residuals_of=lambda node: residuals_of[id(node)])
        outs = [(reached.get(id(node)) or [None] * (idx + 1))[idx] for node, idx in outputs]
        present[:] = [o is not None for o in outs]
        return [o for o in outs if o is not None]

    try:
        flat_avals = [a.aval for a in arrays]
        program, _ = make_program(backward, flat_avals, _tree.flatten(tuple(flat_avals))[1],
                                  [layout_kind(a) for a in arrays])
    except Exception:  # a rule that needs concrete values (or fails): the rules' own path decides
        return None
    return Plan(program, present)


class Plan:
    """A lowered backward program, and which outputs it produces (the others get no cotangent)."""

    def __init__(self, program: Program, present: list[bool]) -> None:
        self.lowered = compile_program(program, "a backward plan")
        self.present = present

    def run(self, arrays: list[Any]) -> list[Any]:
        """The cotangents of the outputs (``None`` where none arrives), computed from
        ``arrays`` (saved arrays, then seeds) in the order the signature listed them."""
        device = arrays[0]._device
        raw = self.lowered.run([a._data for a in arrays], device.stats)
        it = iter(wrap_outputs(self.lowered, raw, arrays, device))
        return [next(it) if p else None for p in self.present]


use_backward_plans(replay)
