"""Reverse mode's graph: one node class, one walk, one backward step.

Every recorder (``fg.vjp``'s ``VJPInterpreter``, the tape) links a ``Node`` per recorded
primitive; ``walk`` visits the nodes an output reaches once, in reverse topological
order, and ``propagate`` runs one node's rule. ``fg.grad``, ``loss.backward()`` and the
backward plans all go through them. Broadcasting and dtype are fitted in one place
(``fit``): a rule returns cotangents in the output's broadcast shape, and they are summed
back to each input's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import ops
from ...array import ArrayBase
from ...errors import ShapeError
from ...primitives.core import fmt_shape
from ..observe import observer

__all__ = ["Node", "Packed", "Reached", "SAVED_HOOKS", "backward_name", "fit", "pack", "planned", "propagate",
           "substitute", "toposort", "unpacked", "use_backward_plans", "walk"]


def fit(value: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Sum a broadcast cotangent back to ``shape`` and cast it to ``dtype``."""
    vshape = tuple(value.shape)
    if vshape == shape and value.dtype is dtype:
        return value

    if vshape != shape:
        lead = len(vshape) - len(shape)
        inner = tuple(i + lead for i, d in enumerate(shape) if d == 1 and vshape[i + lead] != 1)
        if inner:  # axes broadcast from size 1: keep them, as size 1
            value = ops.sum(value, inner, keepdims=True)
        if lead:  # leading axes added by broadcasting: drop them (no reshape needed)
            value = ops.sum(value, tuple(range(lead)))
    if value.dtype is not dtype:
        if value.dtype.kind == "c" and dtype.kind != "c":  # a real input promoted to complex: Re of its cotangent
            value = ops.real(value)
        value = ops.astype(value, dtype)
    return value


# PyTorch's names for the backward functions of some primitives (``x.grad_fn`` shows them)
_BACKWARD_NAMES: dict[Any, str] = {}


def backward_name(prim: Any) -> str:
    """``mul`` -> ``MulBackward``, ``reduce_sum`` -> ``SumBackward``: PyTorch's name
    (``Primitive.torch_name``), else the primitive's name in CamelCase."""
    name = _BACKWARD_NAMES.get(prim)
    if name is None:
        base = prim.torch_name or "".join(part.capitalize() for part in prim.name.split("_"))
        name = _BACKWARD_NAMES[prim] = f"{base}Backward"
    return name


class Node:
    """One recorded primitive application, the one node class of every graph reverse mode
    walks: ``fg.vjp``'s, and the tape's (``x.grad_fn``). A leaf has no rule: the walk ends
    there. ``next_functions`` leads to the inputs' nodes, as in PyTorch."""

    __slots__ = ("prim", "rule", "params", "parents", "residuals", "n_out", "multi", "label", "out_metas",
                 "__weakref__")

    def __init__(self, prim: Any, rule: Any, params: Any, parents: tuple[Any, ...], residuals: Any, n_out: int,
                 label: str | None = None) -> None:
        self.prim = prim
        self.rule = rule
        self.params = params
        self.parents = parents  # per input: (node, out_index, shape, dtype) or None
        self.residuals = residuals
        self.n_out = n_out
        self.multi = prim is not None and prim.multiple_results  # its cotangent is then a tuple
        self.label = label  # a name of its own (a leaf, an autograd.Function)
        self.out_metas: list[Any] | None = None  # the tape's: per output, a weakref to its hooks/retain_grad

    @property
    def name(self) -> str:
        """PyTorch's name for it: ``MulBackward``; a call of user code is named after the code."""
        if self.label:
            return self.label
        call = self.params.get("call") if isinstance(self.params, dict) else None
        return f"{call.__name__}Backward" if call is not None else backward_name(self.prim)

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return tuple((p[0], p[1]) if p is not None else (None, 0) for p in self.parents)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def toposort(roots: list[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, parents before children (iterative DFS)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for p in node.parents:
            if p is not None and id(p[0]) not in seen:
                stack.append((p[0], False))
    return order


Reached = dict[int, tuple[Any, list[Any]]]  # a walk's leaves: id -> (leaf, its output cotangents)


# ---- the hook for backward plans: reverse mode knows nothing of the compiler; the plans
# (``transforms.replay``, which compiles backward passes) plug in from above, here.
_PLANNERS: list[Callable[..., Any]] = []


def use_backward_plans(run: Callable[..., Any]) -> None:
    """Install ``run(roots, outputs, keep_history) -> (cotangents, nodes) | None`` as what an
    eager backward pass (``fg.grad``, ``backward()``) tries before running its rules; it
    answers ``None`` for a graph it has no plan for (``transforms.replay.replay`` documents the
    contract). One planner: a second replaces the first."""
    _PLANNERS[:] = [run]


def planned(roots: list[Any], outputs: list[Any] | None, keep_history: bool = False) -> Any:
    """The backward pass from ``roots`` by the installed plans, or ``None``: run the rules."""
    return _PLANNERS[0](roots, outputs, keep_history) if _PLANNERS else None


def walk(roots: Any, visit: Any = None, after: Any = None, residuals_of: Any = None) -> Reached:
    """The one reverse walk, shared by ``fg.vjp``/``fg.grad``, the tape and backward plans.

    Seeds ``(node, output index, cotangent)`` roots, then visits every node they reach once,
    in reverse topological order, when all its cotangents have arrived (``None`` is a zero);
    with a ``visit``, a leaf is visited as soon as the last node using it has run.
    ``visit(node, cts)`` sees each node's output cotangents first and may replace them in
    place (the tape's hooks, ``retain_grad``, ``autograd.grad``'s captures); then the node's
    rule runs (``propagate``, with ``residuals_of(node)`` in place of its own saved values
    when given), and ``after(node)`` may free what it saved. Returns the leaves reached
    (nodes without a rule), ``id -> (leaf, cotangents)``."""
    pending: dict[int, list[Any]] = {}
    for node, idx, ct in roots:
        slot = pending.setdefault(id(node), [None] * node.n_out)
        slot[idx] = ct if slot[idx] is None else slot[idx] + ct
    leaves: Reached = {}
    order = toposort([r[0] for r in roots])
    # per leaf, the edges into it still to run: at 0 its cotangent is complete, and a visitor
    # (the tape's hooks) sees it then; without a visitor nothing can tell, so nothing is counted
    uses: dict[int, int] | None = None
    if visit is not None:
        uses = {}
        for node in order:
            for p in node.parents:
                if p is not None and p[0].rule is None:
                    uses[id(p[0])] = uses.get(id(p[0]), 0) + 1

    def reach(leaf: Any, cts: list[Any]) -> None:
        if visit is not None:
            visit(leaf, cts)
        leaves[id(leaf)] = (leaf, cts)

    watching = observer.get()  # (a profiler: each step is a range named after its node, MulBackward)
    for node in reversed(order):
        cts = pending.pop(id(node), None)
        if cts is None:
            continue
        if node.rule is None:
            reach(node, cts)
            continue
        if visit is not None:
            visit(node, cts)
        if watching is None:
            propagate(node, cts, pending, None if residuals_of is None else residuals_of(node))
        else:
            with watching.step(node.name):
                propagate(node, cts, pending, None if residuals_of is None else residuals_of(node))
        del cts
        if after is not None:
            after(node)
        if uses is None:
            continue
        for p in node.parents:  # a leaf whose last use just ran is reached now, not at the end of the
            if p is not None and p[0].rule is None:  # order (DistributedDataParallel reduces it meanwhile)
                left = uses[id(p[0])] = uses[id(p[0])] - 1
                if left == 0 and id(p[0]) in pending:
                    reach(p[0], pending.pop(id(p[0])))
    return leaves


def propagate(node: Any, cts: list[Any], pending: dict[int, list[Any]], residuals: Any = None) -> None:
    """One backward step, shared by ``fg.vjp``, the tape and backward plans: run ``node``'s
    rule on its output cotangents (and its saved ``residuals``, or others a plan traces
    with), fit each result to its input, and add it into the parent's slot. ``None`` is a
    zero: a parent it reaches gets a slot (so a leaf reached only by zeros gets a zero
    gradient, as in PyTorch), and a node reached only by zeros runs no rule."""
    g = tuple(cts) if node.multi else cts[0]
    needs = tuple(p is not None for p in node.parents)
    if g is None or (node.multi and all(c is None for c in g)):  # only zeros arrive: they pass on as zeros
        in_cts: tuple[Any, ...] = (None,) * len(node.parents)
    else:
        in_cts = node.rule.bwd(node.residuals if residuals is None else residuals, g, node.params, needs)
    for parent, ct in zip(node.parents, in_cts):
        if parent is None:
            continue
        pnode, pidx, shape, dtype = parent
        if ct is None:  # a zero cotangent (floor's, copysign's sign argument): the parent is still reached
            pending.setdefault(id(pnode), [None] * pnode.n_out)
            continue
        ct = fit(ct, shape, dtype)
        if ct.shape != shape and tuple(ct.shape) != tuple(shape):
            raise ShapeError(f"{node.name}: the backward rule gave a cotangent of shape {fmt_shape(tuple(ct.shape))} "
                             f"for an input of shape {fmt_shape(tuple(shape))}")
        slot = pending.setdefault(id(pnode), [None] * pnode.n_out)
        slot[pidx] = ct if slot[pidx] is None else ops.add(slot[pidx], ct)


# ``fg.autograd.graph.saved_tensors_hooks``: (pack, unpack) pairs, the innermost last
SAVED_HOOKS: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []


class Packed:
    """A node's saved values as a pack hook turned them (each array replaced by what
    ``pack`` gave), with the ``unpack`` that turns them back before the node's rule runs."""

    __slots__ = ("saved", "unpack")

    def __init__(self, saved: Any, unpack: Callable[[Any], Any]) -> None:
        self.saved, self.unpack = saved, unpack


def _map_saved(saved: Any, fn: Callable[[Any], Any], arrays: bool) -> Any:
    if isinstance(saved, tuple):
        return tuple(_map_saved(e, fn, arrays) for e in saved)
    if isinstance(saved, list):
        return [_map_saved(e, fn, arrays) for e in saved]
    if isinstance(saved, _Slot):
        return fn(saved.value)
    if arrays and isinstance(saved, ArrayBase):
        return _Slot(fn(saved))
    return saved


class _Slot:
    """What a pack hook made of one saved array (told apart from the saved non-arrays)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def pack(saved: Any) -> Packed:
    """``saved`` (a rule's residuals: arrays in nested tuples) through the innermost pack hook."""
    pack_hook, unpack_hook = SAVED_HOOKS[-1]
    return Packed(_map_saved(saved, pack_hook, True), unpack_hook)


def unpacked(node: Any) -> Any:
    """``node``'s saved values unpacked for its rule, or ``None`` when they were not packed."""
    saved = node.residuals
    if saved.__class__ is not Packed:
        return None
    return _map_saved(saved.saved, saved.unpack, False)


def substitute(saved: Any, values: Any) -> Any:
    """A node's saved values with each array replaced by the next of ``values``: how a traced
    backward pass (a plan, a compiled call's backward half) reads residuals as its inputs."""
    if isinstance(saved, ArrayBase):
        return next(values)
    if isinstance(saved, tuple):
        return tuple(substitute(e, values) for e in saved)
    return saved
