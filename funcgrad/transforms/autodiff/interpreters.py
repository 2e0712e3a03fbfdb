"""Forward and reverse mode: the JVP and VJP interpreters.

JVP: a ``JVPTracer`` carries (primal, tangent); each primitive's ``jvp`` rule
computes both by binding primitives below this interpreter.

VJP: a ``VJPTracer`` carries its primal and the ``Node`` that made it. Nodes
form a graph (``graph.py``), as PyTorch's autograd does: each holds its rule's
residuals and its parents, and a part of the graph no output can reach is freed
with it. ``backprop`` walks the graph once in reverse topological order. Rules run
through ``bind`` in whatever interpreter is current then, which is how
``grad(grad(f))`` works: the inner backward pass is itself recorded by the outer
interpreter.
"""

from __future__ import annotations

from typing import Any

from ... import ops
from ...array import Array as _Array
from ...array import wrap_kernel_output
from ...backends.cc import EAGER_MIN
from ...errors import DTypeError
from ...primitives.ad import VJPFromRules
from ...primitives.core import aval_of, bind, current_interpreter
from ..core import Interpreter, Tracer, check_tracer
from ..grad_mode import NO_GRAD_SCOPE, is_grad_enabled, no_grad_active
from .graph import SAVED_HOOKS, Node, pack, planned, walk

__all__ = ["JVPInterpreter", "JVPTracer", "VJPInterpreter", "VJPTracer", "backprop", "check_differentiable"]


_set_interpreter = current_interpreter.set
_reset_interpreter = current_interpreter.reset


def _broadcast_tangent(t: Any, ans: Any) -> Any:
    if tuple(t.shape) != tuple(ans.shape):
        t = ops.broadcast_to(t, tuple(ans.shape))
    if t.dtype is not ans.dtype:
        t = ops.astype(t, ans.dtype)
    return t


def _is_float(x: Any) -> bool:
    """Whether ``x`` carries a derivative: real and complex floating point (integers and
    bools are constants)."""
    if x.__class__ is _Array:
        return x._dtype.kind in "fc"  # type: ignore[no-any-return]
    return getattr(x, "dtype", None) is not None and x.dtype.kind in "fc"


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
    only_own_tracers = True

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
class VJPTracer(PrimalTracer):
    __slots__ = ("node", "index")

    def __init__(self, interp: VJPInterpreter, primal: Any, node: Node, index: int) -> None:
        self._interp = interp
        self.primal = primal
        self.node = node
        self.index = index


def _edge(t: VJPTracer) -> tuple[Any, int, tuple[int, ...], Any]:
    """A tracer's edge in the graph: its node, its output index, and its shape and dtype."""
    p = t.primal
    if p.__class__ is _Array:
        return t.node, t.index, p._data.shape, p._dtype
    return t.node, t.index, tuple(p.shape), p.dtype


class _Never:
    """A switch that is never on."""

    @staticmethod
    def get() -> bool:
        return False


_NEVER = _Never()


class VJPInterpreter(Interpreter):
    """Reverse mode's recorder: each primitive applied to a value it tracks becomes a
    ``Node`` holding the rule's residuals and edges to the inputs' nodes. ``fg.vjp`` tracks
    its ``VJPTracer``s; the tape (``tape.Tape``, the same recorder) tracks arrays that
    require grad, through their autograd metadata. ``process`` reads both kinds of value
    inline (the hot path); otherwise the two differ only in the class attributes and the
    methods below ``process``: how an unusual value is unboxed (``unbox``), which rule a
    primitive without a derivative gets, how the forward pass runs below the recorder
    (``enter_below``/``exit_below``/``below``), and how outputs are boxed (``box``)."""

    name = "vjp"
    tracks_arrays = False  # the tape's values are arrays with autograd metadata; fg.vjp's are its tracers
    off: Any = _NEVER  # what pauses recording: fg.vjp's never pauses; the tape's is grad_mode.TAPE_OFF
    meta: Any = None  # the tape's AutogradMeta

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if self.off.get():
            return self.below(prim, args, params)
        primals: list[Any] = []
        parents: list[Any] = []
        live = False
        raw: list[Any] | None = []  # the kernel's arguments, while every primal is an array on one device
        device = None
        tape = self.tracks_arrays  # (then an input with tape history may go straight to a kernel)
        inference = None  # an input made in inference mode (the tape refuses it)
        for a in args:
            if a.__class__ is _Array:
                meta = a._autograd
                if meta is not None and tape and meta.requires_grad and (edge := meta.grad_fn or meta.accumulator):
                    # the tape's value: an array with history (the common case, inline)
                    parents.append((edge, meta.output_nr, a._data.shape, a._dtype))
                    live = True
                elif meta is not None and tape:
                    if meta.inference:
                        inference = a
                    a, parent = self.unbox(a)
                    parents.append(parent)
                    live = live or parent is not None
                else:
                    parents.append(None)
                p = a
            elif a.__class__ is VJPTracer and a._interp is self:  # fg.vjp's own value
                p = a.primal
                parents.append(_edge(a))
                live = True
            else:
                p, parent = self.unbox(a)
                parents.append(parent)
                live = live or parent is not None
            primals.append(p)
            if raw is not None:
                if p.__class__ is _Array and (device is None or p._device is device) and (tape or p._autograd is None):
                    device = p._device
                    raw.append(p._data)
                else:
                    raw = None
        primals_t = tuple(primals)
        if not live:
            return self.below(prim, primals_t, params)
        if inference is not None:
            raise RuntimeError(f"{prim.name}: an array made in fg.inference_mode() (shape "
                               f"{tuple(inference.shape)}) cannot be recorded for backward. Make an ordinary copy "
                               "with x.clone() outside inference mode and use that (PyTorch's rule)")
        no_grad = NO_GRAD_SCOPE.get()
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
            if raw is not None and prim.view is None and not prim.multiple_results:  # the kernel, straight
                try:
                    out = None
                    if prim.native_eager is not None and device is not None and device.kind == "cpu" and \
                            any(a.size >= EAGER_MIN for a in raw):
                        out = prim.native_eager(*raw)
                    if out is None:
                        out = (prim._kernels.get(device) or prim.kernel_for(device))(*raw, **params)
                    ans = wrap_kernel_output(out, device)  # type: ignore[arg-type]
                except Exception:  # the general path explains the failure
                    ans = self.below(prim, primals_t, params)
            else:
                ans = self.below(prim, primals_t, params)
            residuals = rule.residuals(primals_t, params, ans)
        else:
            token = self.enter_below()
            try:
                ans, residuals = rule.fwd(primals_t, params, tuple(p is not None for p in parents))
            finally:
                self.exit_below(token)
        if SAVED_HOOKS and tape:
            residuals = pack(residuals)
        if prim.multiple_results:
            return self.box(ans, Node(prim, rule, params, tuple(parents), residuals, len(ans)), primals_t)
        node = Node(prim, rule, params, tuple(parents), residuals, 1)
        if tape and ans.__class__ is _Array:  # the tape's boxing of one array, inline (``Tape.box``)
            if ans._dtype.kind in "fc":
                ans._autograd = self.meta(True, node, 0)
            return ans
        return self.box(ans, node, primals_t)

    def unbox(self, a: Any) -> tuple[Any, Any]:
        """``a``'s primal, and its edge ``(node, output index, shape, dtype)`` or ``None``
        (``process`` reads the common cases inline: this recorder's own tracers, and for the
        tape, plain arrays with history)."""
        if a.__class__ is VJPTracer and a._interp is self:
            return a.primal, _edge(a)
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
        token = self.enter_below()  # (a call-like rule's residuals run its forward pass again)
        try:
            residuals = rule.residuals(tuple(primals), params, ans)
        finally:
            self.exit_below(token)
        return self.box(ans, Node(prim, rule, params, tuple(parents), residuals, n_out), tuple(primals))

    def leaf(self, x: Any, index: int) -> VJPTracer:
        return VJPTracer(self, x, Node(None, None, None, (), None, 1, f"input {index}"), 0)


def _release(node: Any) -> None:
    node.residuals = None


def backprop(roots: list[tuple[Node, int, Any]], leaves: list[Node], release: bool = False) -> list[Any]:
    """Cotangents of ``leaves`` given ``(node, output index, cotangent)`` seeds (``None``: a
    zero). In eager mode a graph seen before replays its plan. With ``release`` (a graph
    walked once, as ``fg.grad``'s) each node's saved values are let go as soon as its rule
    has run, so the backward pass's peak holds only what is still needed."""
    if current_interpreter.get() is None:  # eager: a graph seen before replays its plan
        # (a plan runs kernels only: when the tape records, values with history need the rules)
        replayed = planned(roots, [(leaf, 0) for leaf in leaves], keep_history=is_grad_enabled())
        if replayed is not None:
            return replayed[0]
    reached = walk(roots, after=_release if release else None)
    return [reached[id(leaf)][1][0] if id(leaf) in reached else None for leaf in leaves]


def check_differentiable(x: Any, where: str) -> None:
    if getattr(x, "dtype", None) is None or x.dtype.kind not in "fc":
        dtype = getattr(x, "dtype", type(x).__name__)
        raise DTypeError(f"{where} has dtype {dtype}; derivatives are taken with respect to floating-point "
                         "(or complex) arrays only (cast with x.astype(fg.float32), or leave it out of argnums)")
