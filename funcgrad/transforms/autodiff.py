"""Forward and reverse mode: the JVP and VJP interpreters.

JVP: a ``JVPTracer`` carries (primal, tangent); each primitive's ``jvp`` rule
computes both by binding primitives below this interpreter.

VJP: a ``VJPTracer`` carries its primal and the ``Node`` that made it. Nodes
form a graph, as PyTorch's autograd does: each holds its rule's residuals and
its parents, and a part of the graph no output can reach is freed with it.
``backprop`` walks the graph once in reverse topological order. Rules run
through ``bind`` in whatever interpreter is current then, which is how
``grad(grad(f))`` works: the inner backward pass is itself recorded by the outer
interpreter.

Broadcasting and dtype are fitted here, in one place (``fit``): a rule returns
cotangents in the output's broadcast shape, and they are summed back to each
input's shape.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any

from .. import ops
from ..array import Array as _Array
from ..array import run_on_arrays
from ..errors import DTypeError, ShapeError
from ..primitives.ad import VJPFromRules
from ..primitives.core import aval_of, bind, current_interpreter, fmt_shape
from .core import Interpreter, Tracer, check_tracer
from .replay import replay

__all__ = ["JVPInterpreter", "JVPTracer", "VJPInterpreter", "VJPTracer", "Node", "backward_name", "backprop", "walk",
           "fit", "no_grad_active", "no_grad_scope"]


_set_interpreter = current_interpreter.set
_reset_interpreter = current_interpreter.reset

# ---- no_grad: derivative interpreters that were active when it started see constants ----

_NO_GRAD: contextvars.ContextVar[Any] = contextvars.ContextVar("funcgrad_no_grad", default=None)
_EAGER = object()  # no_grad entered with no interpreter active


def no_grad_scope() -> Any:
    return _NO_GRAD


# The tape is off inside a rule's own forward computation and in a backward pass without
# create_graph; no_grad turns it off too. ``is_grad_enabled`` says whether it records now.
TAPE_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_tape_off", default=False)
_NEVER_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_vjp_off", default=False)


class GradMode:
    """A context manager that is also a decorator, with or without parentheses, on functions
    and methods alike (``no_grad``, ``enable_grad``): subclasses define the scope's
    ``__enter__`` and ``__exit__``."""

    def __init__(self, fn: Any = None) -> None:
        self._fn = fn
        self._tokens: list[Any] = []
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:  # @fg.no_grad() used as a decorator factory
            (fn,) = args
            return type(self)(fn)
        with type(self)():
            return self._fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """As a decorator on a method: bound to the instance, as a function would be."""
        return self if obj is None else functools.partial(self.__call__, obj)


def is_grad_enabled() -> bool:
    """Whether the tape records now (not inside ``no_grad`` or a rule's own computation)."""
    return not TAPE_OFF.get() and _NO_GRAD.get() is None


def no_grad_active(interp: Interpreter) -> bool:
    """Whether ``interp`` runs under a ``no_grad`` block that started inside it."""
    entry = _NO_GRAD.get()
    if entry is None or entry is _EAGER:
        return False
    return bool(entry.encloses(interp))


# ---- fitting cotangents and tangents ------------------------------------------------

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
        value = ops.astype(value, dtype)
    return value


def _broadcast_tangent(t: Any, ans: Any) -> Any:
    if tuple(t.shape) != tuple(ans.shape):
        t = ops.broadcast_to(t, tuple(ans.shape))
    if t.dtype is not ans.dtype:
        t = ops.astype(t, ans.dtype)
    return t


def _is_float(x: Any) -> bool:
    if x.__class__ is _Array:
        return x._dtype.kind == "f"  # type: ignore[no-any-return]
    return getattr(x, "dtype", None) is not None and x.dtype.kind == "f"


# ---- forward mode --------------------------------------------------------------------

class PrimalTracer(Tracer):
    """A derivative tracer: it carries a primal value, so it is as concrete as that value."""

    __slots__ = ("primal",)
    primal: Any

    @property
    def aval(self) -> Any:
        return aval_of(self.primal)

    # read straight from the primal: the ops layer asks for these on every operation
    @property
    def shape(self) -> tuple[int, ...]:
        return self.primal.shape  # type: ignore[no-any-return]

    @property
    def dtype(self) -> Any:
        return self.primal.dtype

    @property
    def device(self) -> Any:
        return self.primal.device

    @property
    def ndim(self) -> int:
        return self.primal.ndim  # type: ignore[no-any-return]

    @property
    def size(self) -> int:
        return self.primal.size  # type: ignore[no-any-return]

    def _concrete(self, why: str) -> Any:
        p = self.primal
        return p._concrete(why) if isinstance(p, Tracer) else p


class JVPTracer(PrimalTracer):
    __slots__ = ("tangent",)

    def __init__(self, interp: JVPInterpreter, primal: Any, tangent: Any) -> None:
        self._interp = interp
        self.primal = primal
        self.tangent = tangent


class JVPInterpreter(Interpreter):
    name = "jvp"

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        primals, tangents, live = [], [], False
        for a in args:
            if isinstance(a, JVPTracer) and a._interp is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
                live = True
            else:
                if isinstance(a, Tracer):
                    check_tracer(self, a)
                primals.append(a)
                tangents.append(None)
        token = _set_interpreter(self.parent)
        try:
            if not live or not prim.differentiable or no_grad_active(self):
                return bind(prim, *primals, **params)
            if prim.jvp is None:
                raise NotImplementedError(f"no JVP rule for primitive {prim.name!r}")
            ans, t_out = prim.jvp(tuple(primals), tuple(tangents), **params)
            if prim.multiple_results:
                return tuple(a if t is None or not _is_float(a) else JVPTracer(self, a, _broadcast_tangent(t, a))
                             for a, t in zip(ans, t_out))
            if t_out is None or not _is_float(ans):
                return ans
            return JVPTracer(self, ans, _broadcast_tangent(t_out, ans))
        finally:
            _reset_interpreter(token)


# ---- reverse mode --------------------------------------------------------------------

# PyTorch's names for the backward functions of some primitives (``x.grad_fn`` shows them)
_TORCH_NAMES = {"integer_pow": "Pow", "pow": "Pow", "reduce_sum": "Sum", "reduce_prod": "Prod", "reduce_max": "Max",
                "reduce_min": "Min", "neg": "Neg", "sub": "Sub", "div": "Div", "matmul": "Mm", "getitem": "Index",
                "gather": "Index", "scatter": "IndexPut", "select": "Where", "convert_element_type": "ToCopy",
                "broadcast_to": "Expand", "expand_dims": "Unsqueeze", "transpose": "Permute", "reshape": "View"}
_BACKWARD_NAMES: dict[str, str] = {}


def backward_name(prim_name: str) -> str:
    """``mul`` -> ``MulBackward``, ``reduce_sum`` -> ``SumBackward``, as PyTorch names them."""
    name = _BACKWARD_NAMES.get(prim_name)
    if name is None:
        base = _TORCH_NAMES.get(prim_name) or "".join(part.capitalize() for part in prim_name.split("_"))
        name = _BACKWARD_NAMES[prim_name] = f"{base}Backward"
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
        return f"{call.__name__}Backward" if call is not None else backward_name(self.prim.name)

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return tuple((p[0], p[1]) if p is not None else (None, 0) for p in self.parents)

    def __repr__(self) -> str:
        return f"<{self.name}>"


class VJPTracer(PrimalTracer):
    __slots__ = ("node", "index")

    def __init__(self, interp: VJPInterpreter, primal: Any, node: Node, index: int) -> None:
        self._interp = interp
        self.primal = primal
        self.node = node
        self.index = index


class VJPInterpreter(Interpreter):
    """Reverse mode's recorder: each primitive applied to a value it tracks becomes a
    ``Node`` holding the rule's residuals and edges to the inputs' nodes. ``fg.vjp`` tracks
    its ``VJPTracer``s; the tape (``tape.Tape``, the same recorder) tracks arrays that
    require grad, through their autograd metadata. The two differ only in the four methods
    below ``process``: how a value is unboxed, which rule a primitive without a derivative gets, how the forward
    pass runs below the recorder, and how outputs are boxed."""

    name = "vjp"
    kernels_see_history = False  # an input with tape history goes through the tape, never straight to a kernel
    off = _NEVER_OFF  # a flag that pauses recording (the tape's: no_grad, a rule's own forward pass)

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if self.off.get():
            return self.below(prim, args, params)
        primals: list[Any] = []
        parents: list[Any] = []
        live = False
        raw: list[Any] | None = []  # the kernel's arguments, while every primal is an array on one device
        device = None
        unbox, any_history = self.unbox, self.kernels_see_history
        for a in args:
            p, parent = unbox(a)
            primals.append(p)
            parents.append(parent)
            if parent is not None:
                live = True
            if raw is not None:
                if (p.__class__ is _Array and (device is None or p._device is device)
                        and (any_history or p._autograd is None)):
                    device = p._device
                    raw.append(p._data)
                else:
                    raw = None
        primals_t = tuple(primals)
        if not live:
            return self.below(prim, primals_t, params)
        no_grad = _NO_GRAD.get()
        if prim.differentiable and (no_grad is None or not no_grad_active(self)):
            rule = prim.vjp
            if rule is None:
                raise NotImplementedError(f"no VJP rule for primitive {prim.name!r}")
        else:
            rule = self.untracked_rule(prim)
            if rule is None:  # nothing to record: the value itself
                return self.below(prim, primals_t, params)
        if rule.__class__ is VJPFromRules and prim.impl is None and self.parent is None and no_grad is None:
            # the common case, eager below: run the kernel (it binds nothing) and keep what the rule needs
            if raw is not None and prim.view is None and not prim.multiple_results:
                ans = run_on_arrays(prim, raw, device, primals_t, params)
            else:
                ans = self.below(prim, primals_t, params)
            residuals = rule.residuals(primals_t, params, ans)
        else:
            token = self.enter_below()
            try:
                ans, residuals = rule.fwd(primals_t, params, tuple(p is not None for p in parents))
            finally:
                self.exit_below(token)
        n_out = len(ans) if prim.multiple_results else 1
        return self.box(ans, Node(prim, rule, params, tuple(parents), residuals, n_out), primals_t)

    def unbox(self, a: Any) -> tuple[Any, Any]:
        """``a``'s primal, and its edge ``(node, output index, shape, dtype)`` or ``None``."""
        if a.__class__ is VJPTracer and a._interp is self:
            p = a.primal
            if p.__class__ is _Array:
                return p, (a.node, a.index, p._data.shape, p._dtype)
            return p, (a.node, a.index, tuple(p.shape), p.dtype)
        if isinstance(a, Tracer):
            check_tracer(self, a)
        return a, None

    def untracked_rule(self, prim: Any) -> Any:
        """The rule for a primitive without a derivative (or under ``no_grad``): ``None``, its
        results are constants."""
        return None

    def enter_below(self) -> Any:
        return _set_interpreter(self.parent)

    def exit_below(self, token: Any) -> None:
        _reset_interpreter(token)

    def below(self, prim: Any, primals: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """``prim`` evaluated below this recorder."""
        token = self.enter_below()
        try:
            return bind(prim, *primals, **params)
        finally:
            self.exit_below(token)

    def box(self, ans: Any, node: Node, primals: tuple[Any, ...]) -> Any:
        """The recorded outputs: float results carry ``node``."""
        if node.multi:
            return tuple(VJPTracer(self, a, node, i) if _is_float(a) else a for i, a in enumerate(ans))
        return VJPTracer(self, ans, node, 0) if _is_float(ans) else ans

    def record_known(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        """Like ``process``, but the primal output is already known (a checkpoint
        policy saved it): record the node without running the primitive."""
        primals, parents = zip(*map(self.unbox, args)) if args else ((), ())
        rule = prim.vjp
        if rule is None or not prim.differentiable or all(p is None for p in parents):
            return ans
        n_out = len(ans) if prim.multiple_results else 1
        return self.box(ans, Node(prim, rule, params, tuple(parents), rule.residuals(tuple(primals), params, ans),
                                  n_out), tuple(primals))

    def leaf(self, x: Any, index: int) -> VJPTracer:
        return VJPTracer(self, x, Node(None, None, None, (), None, 1, f"input {index}"), 0)


def _toposort(roots: list[Node]) -> list[Node]:
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


def walk(roots: Any, visit: Any = None, after: Any = None, residuals_of: Any = None) -> Reached:
    """The one reverse walk, shared by ``fg.vjp``/``fg.grad``, the tape and backward plans.

    Seeds ``(node, output index, cotangent)`` roots, then visits every node they reach once,
    in reverse topological order, when all its cotangents have arrived (``None`` is a zero).
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
    for node in reversed(_toposort([r[0] for r in roots])):
        cts = pending.pop(id(node), None)
        if cts is None:
            continue
        if visit is not None:
            visit(node, cts)
        if node.rule is None:
            leaves[id(node)] = (node, cts)
            continue
        propagate(node, cts, pending, None if residuals_of is None else residuals_of(node))
        del cts
        if after is not None:
            after(node)
    return leaves


def _release(node: Any) -> None:
    node.residuals = None


def backprop(roots: list[tuple[Node, int, Any]], leaves: list[Node], release: bool = False) -> list[Any]:
    """Cotangents of ``leaves`` given ``(node, output index, cotangent)`` seeds (``None``: a
    zero). In eager mode a graph seen before replays its plan. With ``release`` (a graph
    walked once, as ``fg.grad``'s) each node's saved values are let go as soon as its rule
    has run, so the backward pass's peak holds only what is still needed."""
    if current_interpreter.get() is None:  # eager: a graph seen before replays its plan
        # (a plan runs kernels only: when the tape records, values with history need the rules)
        replayed = replay(roots, [(leaf, 0) for leaf in leaves], keep_history=is_grad_enabled())
        if replayed is not None:
            return replayed[0]
    reached = walk(roots, after=_release if release else None)
    return [reached[id(leaf)][1][0] if id(leaf) in reached else None for leaf in leaves]


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


def check_differentiable(x: Any, where: str) -> None:
    if getattr(x, "dtype", None) is None or x.dtype.kind != "f":
        dtype = getattr(x, "dtype", type(x).__name__)
        raise DTypeError(f"{where} has dtype {dtype}; derivatives are taken with respect to floating-point "
                         "arrays only (cast with x.astype(fg.float32), or leave it out of argnums)")
