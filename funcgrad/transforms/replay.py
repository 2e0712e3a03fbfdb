"""Backward plans: an eager backward pass seen before, replayed as a flat list of kernels.

Eager reverse mode (``fg.grad`` with no transform around it, and the tape's
``backward()``) runs each node's VJP rule: Python that binds primitives one at
a time, fits shapes and adds cotangents. In a training loop the graph is the same
on every step, so the same rules bind the same primitives on the same shapes, and
that Python is most of the cost of a small model's backward pass.

So the backward pass is keyed by the graph's *structure*: each node's rule and
parameters, its edges, the shapes, dtypes, devices and memory layouts of what it
saved (a rule may pick its computation by layout: ``core.layout_kind``), the Python
scalars it saved, and the seeds. The first time a structure is seen, its backward
pass is traced into a ``Program`` (the IR), dead code is dropped, and the program
is lowered to a list of kernel calls over slots. The next graph with that
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

from .. import tree as _tree
from ..array import Array
from ..primitives.ad import VJPFromRules
from ..primitives.core import ShapedArray, layout_kind
from .ir import Program, Var, make_program
from .lower import lower, wrap_outputs

__all__ = ["replay", "clear", "cache_info", "MAX_PLANS", "ENABLED"]

ENABLED = True  # False: every backward pass runs the rules (tests compare the two paths)
MAX_PLANS = 64  # distinct graph structures kept; when full, the cache starts over

_PLANS: dict[tuple[Any, ...], Plan | None] = {}
_MISSING = object()
_SCALARS = (int, float, bool)


class _NoPlan(Exception):
    """This graph cannot be described by its structure alone."""


def clear() -> None:
    """Forget every plan (they are rebuilt on demand)."""
    _PLANS.clear()


def cache_info() -> dict[str, int]:
    """How many graph structures have a plan, and how many were found unplannable."""
    return {"plans": sum(p is not None for p in _PLANS.values()),
            "unplannable": sum(p is None for p in _PLANS.values())}


def replay(order: list[Any], roots: list[tuple[Any, int, Any]], outputs: list[tuple[Any, int]]) -> list[Any] | None:
    """The cotangents reaching ``outputs`` ((node, output index) pairs; ``None`` for
    none), given ``roots`` ((node, output index, cotangent) seeds) and ``order``: the
    nodes with rules, children before parents. ``None`` when the graph has no plan:
    the caller runs the rules."""
    if not ENABLED:
        return None
    try:
        key, arrays = _signature(order, roots, outputs)
    except _NoPlan:
        return None
    plan = _PLANS.get(key, _MISSING)
    if plan is _MISSING:
        if len(_PLANS) >= MAX_PLANS:  # a program whose graphs keep changing: start over
            _PLANS.clear()
        plan = _PLANS[key] = _build(order, roots, outputs, arrays)
    if plan is None:
        return None
    return plan.run(arrays)


# ---- the structure of a graph ---------------------------------------------------------

def _signature(order: list[Any], roots: list[Any], outputs: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """A hashable key of everything the backward computation depends on, and the arrays
    it reads (saved arrays node by node, then the seeds)."""
    number = {id(node): i for i, node in enumerate(order)}
    key: list[Any] = []
    arrays: list[Any] = []
    add = key.append
    for node in order:
        rule = node.rule
        if rule.__class__ is not VJPFromRules:
            raise _NoPlan
        add(rule)  # the object itself: compared by identity and kept alive, so never confused
        params = node.params
        add(tuple([(k, v.__class__, v) for k, v in params.items()]) if params else None)
        for p in node.parents:
            if p is None:
                add(None)
            else:
                j = number.get(id(p[0]))
                if j is None:  # a leaf: numbered when first seen
                    j = number[id(p[0])] = len(number)
                add((j, p[1], p[2], p[3]))
        ans, args = node.residuals
        _saved_key(ans, add, arrays)
        add(len(args))
        for a in args:
            _saved_key(a, add, arrays)
    for node, idx, ct in roots:
        if ct.__class__ is not Array:
            raise _NoPlan
        j = number.get(id(node))
        if j is None:
            j = number[id(node)] = len(number)
        add((j, idx, ct._data.shape, ct._dtype, ct._device, layout_kind(ct)))
        arrays.append(ct)
    for node, idx in outputs:
        add((number.get(id(node), -1), idx))
    return tuple(key), arrays


def _saved_key(x: Any, add: Any, arrays: list[Any]) -> None:
    cls = x.__class__
    if cls is Array:
        arrays.append(x)
        add((x._data.shape, x._dtype, x._device, layout_kind(x)))
    elif cls is ShapedArray or x is None:
        add(x)
    elif cls in _SCALARS:
        add((cls, x))  # 1 and 1.0 and True are equal keys, but not the same weak scalar
    elif cls is tuple:
        add(len(x))
        for e in x:
            _saved_key(e, add, arrays)
    else:
        raise _NoPlan


def _substitute(x: Any, values: Any) -> Any:
    """``x`` (saved values) with each array replaced by the next of ``values``."""
    cls = x.__class__
    if cls is Array:
        return next(values)
    if cls is tuple:
        return tuple(_substitute(e, values) for e in x)
    return x


# ---- building a plan ---------------------------------------------------------------------

def _build(order: list[Any], roots: list[Any], outputs: list[Any], arrays: list[Any]) -> Plan | None:
    """Trace the rules' backward pass over this graph and lower it; ``None`` if it cannot be traced."""
    from .autodiff import propagate

    present: list[bool] = []

    def backward(*flat: Any) -> list[Any]:
        values = iter(flat)
        saved = [(_substitute(n.residuals[0], values), tuple(_substitute(a, values) for a in n.residuals[1]))
                 for n in order]
        pending: dict[int, list[Any]] = {}
        for node, idx, _ in roots:
            slot = pending.setdefault(id(node), [None] * node.n_out)
            ct = next(values)
            slot[idx] = ct if slot[idx] is None else slot[idx] + ct
        reached: dict[int, list[Any]] = {}  # an output's cotangents are complete when its node runs
        for node, residuals in zip(order, saved):
            cts = pending.pop(id(node), None)
            if cts is not None:
                reached[id(node)] = cts
                propagate(node, cts, pending, residuals)
        outs = [(reached.get(id(node)) or pending.get(id(node)) or [None] * (idx + 1))[idx]
                for node, idx in outputs]
        present[:] = [o is not None for o in outs]
        return [o for o in outs if o is not None]

    try:
        flat_avals = [a.aval for a in arrays]
        program, _ = make_program(backward, flat_avals, _tree.flatten(tuple(flat_avals))[1],
                                  [layout_kind(a) for a in arrays])
    except Exception:  # a rule that needs concrete values (or fails): the rules' own path decides
        return None
    return Plan(_dead_code_removed(program), present)


def _dead_code_removed(program: Program) -> Program:
    live = {id(v) for v in program.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if any(id(v) in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    program.eqns = kept[::-1]
    return program


class Plan:
    """A lowered backward program, and which outputs it produces (the others get no cotangent)."""

    def __init__(self, program: Program, present: list[bool]) -> None:
        self.lowered = lower(program)
        self.present = present

    def run(self, arrays: list[Any]) -> list[Any]:
        """The cotangents of the outputs (``None`` where none arrives), computed from
        ``arrays`` (saved arrays, then seeds) in the order the signature listed them."""
        device = arrays[0]._device
        raw = self.lowered.run([a._data for a in arrays], device.stats)
        it = iter(wrap_outputs(self.lowered, raw, arrays, device))
        return [next(it) if p else None for p in self.present]
