"""The PyTorch-style tape: ``requires_grad`` arrays, ``grad_fn``, ``.backward()``.

It is reverse mode's recorder (``autodiff.VJPInterpreter``) tracking concrete arrays
that require grad, like PyTorch's autograd. Eager evaluation hands it any primitive
with such an argument (through the argument's ``AutogradMeta``), and it records with
the primitives' own VJP rules, the same ones ``fg.grad`` uses. A rule's forward part runs with the
tape switched off; its residuals keep their history, so ``create_graph=True``
gives higher derivatives. ``backward`` walks the graph once in reverse
topological order and frees the residuals unless ``retain_graph=True``.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ... import ops
from ...array import Array, provide, run_eager
from ...errors import DTypeError, GraphFreedError, ShapeError
from ...primitives import core as primitives_core
from ...primitives.ad import VJPFromRules, VJPRule
from ...primitives.core import fmt_shape
from ...primitives.shape import stop_gradient_p
from ..grad_mode import TAPE_OFF, enable_grad, is_grad_enabled
from .graph import SAVED_HOOKS, Node, planned, unpacked, walk
from .interpreters import VJPInterpreter

__all__ = ["AutogradMeta", "AccumulateGrad", "backward", "grad", "enable_grad", "is_grad_enabled",
           "saved_tensors_hooks", "Tape", "TAPE"]

_FREED = object()


class AutogradMeta:
    """What the tape knows about one array (``x._autograd``)."""

    __slots__ = ("requires_grad", "grad_fn", "output_nr", "grad", "retain", "hooks", "post_hooks", "accumulator",
                 "__weakref__")

    def __init__(self, requires_grad: bool = True, grad_fn: Any = None, output_nr: int = 0) -> None:
        self.requires_grad = requires_grad
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.grad: Any = None
        self.retain = False
        self.hooks: list[Callable[[Any], Any]] | None = None
        self.post_hooks: list[Callable[[Any], Any]] | None = None  # a leaf's, after its .grad is updated
        self.accumulator: AccumulateGrad | None = None

    # ``meta.record(prim, args, params)``: eager evaluation found this metadata on an
    # argument, so the tape records the operation (``Tape.process``, set below)
    record: Any
    inference = False  # (``inference.InferenceMeta``: an array made in inference mode)


class AccumulateGrad:
    """The leaf end of the graph: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable", "parents", "n_out", "out_metas", "__weakref__")
    name = "AccumulateGrad"
    rule = None  # no rule: the backward pass ends here

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self.parents: tuple[Any, ...] = ()
        self.n_out = 1
        self.out_metas: list[Any] | None = None

    @property
    def next_functions(self) -> tuple[()]:
        return ()

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def edge_of(a: Any) -> tuple[Any, int]:
    meta = a._autograd
    if meta.grad_fn is not None:
        return meta.grad_fn, meta.output_nr
    if meta.accumulator is None:
        meta.accumulator = AccumulateGrad(a)
    return meta.accumulator, 0


class Tape(VJPInterpreter):
    """Reverse mode's recorder (``VJPInterpreter.process``) over concrete arrays that require
    grad, as PyTorch's autograd records: an argument's autograd metadata is its edge, the
    forward pass runs eagerly with the tape off, and results get metadata pointing at the
    node. Eager evaluation reaches it through that metadata (``AutogradMeta.record``); it is
    never the current interpreter, since the values it tracks are concrete."""

    name = "tape"
    tracks_arrays = True
    meta = AutogradMeta
    off = TAPE_OFF  # set inside no_grad, a rule's own forward pass and a backward pass without create_graph

    def unbox(self, a: Any) -> tuple[Any, Any]:
        cls = a.__class__
        meta = a._autograd if cls is Array else getattr(a, "_autograd", None)
        if meta is None or not meta.requires_grad:
            return a, None
        fn = meta.grad_fn or meta.accumulator or edge_of(a)[0]  # a leaf's edge: its AccumulateGrad
        if cls is not Array:  # a Parameter may change later: record an alias of its current value
            a = _snapshot(a)
        return a, (fn, meta.output_nr, a._data.shape, a._dtype)

    def untracked_rule(self, prim: Any) -> Any:
        return _zero_rule(prim)

    def enter_below(self) -> Any:
        return TAPE_OFF.set(True)

    def exit_below(self, token: Any) -> None:
        TAPE_OFF.reset(token)

    def below(self, prim: Any, primals: tuple[Any, ...], params: dict[str, Any]) -> Any:
        return run_eager(prim, primals, params)

    def box(self, ans: Any, node: Node, primals: tuple[Any, ...]) -> Any:
        """The results (``process`` boxes one array result inline; ``record_known`` comes here)."""
        outs = ans if node.multi else (ans,)
        if node.prim.impl is not None:  # user code may return an input, or an array with history: never relabel it
            outs = tuple(Array._alias(o) if o._autograd is not None or any(o is p for p in primals) else o
                         for o in outs)
        for i, o in enumerate(outs):
            if o._dtype.kind in "fc":
                o._autograd = AutogradMeta(True, node, i)
        return outs if node.multi else outs[0]


_ZERO_RULES: dict[Any, VJPFromRules] = {}


def _zero_rule(prim: Any) -> VJPFromRules | None:
    """The tape's rule for a primitive without a derivative (floor, sign, round): a float
    result still gets a ``grad_fn``, and its inputs get zero gradients, as in PyTorch.
    (Integer and bool results get no history; ``stop_gradient`` cuts it.)"""
    if prim is stop_gradient_p:
        return None
    rule = _ZERO_RULES.get(prim)
    if rule is None:
        rule = _ZERO_RULES[prim] = VJPFromRules(prim, (), saves="none")
    return rule


TAPE = Tape()
AutogradMeta.record = TAPE.process


def watch(meta: AutogradMeta, node: Any) -> None:
    """Let backward find this array's hooks and retain_grad flag (set only when asked for)."""
    if node.out_metas is None:
        node.out_metas = [None] * node.n_out
    node.out_metas[meta.output_nr if node is meta.grad_fn else 0] = weakref.ref(meta)


def unwatch(meta: AutogradMeta, node: Any) -> None:
    """Undo ``watch`` once a leaf has no hook left: its backward passes may replay plans again."""
    if not meta.hooks and not meta.post_hooks and not meta.retain and isinstance(node, AccumulateGrad):
        node.out_metas = None


def _snapshot(a: Any) -> Any:
    """An immutable alias of a mutable holder's current value (a Parameter), sharing its
    autograd metadata."""
    if type(a) is Array or not isinstance(a, Array):
        return a
    alias = Array._alias(a)
    alias._autograd = a._autograd
    return alias


class saved_tensors_hooks:
    """PyTorch's ``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``: while
    it is entered, each array the tape saves for a backward rule goes through
    ``pack_hook(array)`` and is kept as whatever that returns; the backward pass gives the
    rule ``unpack_hook(packed)`` instead, which must return an array equal to the one saved.
    So saved values can be moved elsewhere, compressed or rebuilt (FSDP gathers resharded
    parameters again). The innermost hooks apply."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError(f"saved_tensors_hooks: pack_hook and unpack_hook must be callables, got "
                            f"{type(pack_hook).__name__} and {type(unpack_hook).__name__}")
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self) -> saved_tensors_hooks:
        SAVED_HOOKS.append(self.hooks)
        return self

    def __exit__(self, *exc: Any) -> None:
        for i in range(len(SAVED_HOOKS) - 1, -1, -1):
            if SAVED_HOOKS[i] is self.hooks:
                del SAVED_HOOKS[i]
                break


def _replayed(roots: Sequence[tuple[Any, int, Any]], retain_graph: bool,
              capture: list[tuple[Any, int]] | None) -> dict[tuple[int, int], Any] | None:
    """The backward pass by its plan (``replay``), when nothing in it needs the step-by-step
    walk (hooks, retain_grad, a freed graph, user-defined rules). ``None``: walk it."""
    replayed = planned(list(roots), capture)
    if replayed is None:
        return None
    got, nodes = replayed
    if not retain_graph:
        for node in nodes:
            if node.rule is not None:
                node.residuals = _FREED
    if capture is not None:
        in_graph = {id(n) for n in nodes}
        captured = {}
        for (n, i), ct in zip(capture, got):
            if ct is None and isinstance(n, AccumulateGrad) and id(n) in in_graph:  # reached, if only by zeros
                ct = ops.zeros_like(n.variable)
            if ct is not None:
                captured[(id(n), i)] = ct
        return captured
    for leaf, ct in got:  # every leaf of the graph is reached
        _accumulate(leaf.variable, ct if ct is not None else ops.zeros_like(leaf.variable), False)
    return {}


def _backward_pass(roots: Sequence[tuple[Any, int, Any]], retain_graph: bool, create_graph: bool,
         capture: list[tuple[Any, int]] | None) -> dict[tuple[int, int], Any]:
    """The backward pass. With ``capture`` (autograd.grad) the listed (node, index)
    cotangents are returned instead of being accumulated into ``.grad``."""
    if not create_graph and primitives_core.current_interpreter.get() is None:
        replayed = _replayed(roots, retain_graph, capture)
        if replayed is not None:
            return replayed
    wanted = None if capture is None else {(id(n), i) for n, i in capture}
    got: dict[tuple[int, int], Any] = {}

    def visit(node: Any, cts: list[Any]) -> None:
        for i, ct in enumerate(cts):  # per output tensor: hooks, retain_grad, capture
            if ct is None:
                continue
            ref = node.out_metas[i] if node.out_metas is not None else None
            meta = ref() if ref is not None else None
            if meta is not None and meta.hooks:
                for hook in meta.hooks:
                    new = hook(pytorch_convention(ct))
                    ct = pytorch_convention(new) if new is not None else ct
                cts[i] = ct
            if wanted is not None and (id(node), i) in wanted:
                got[(id(node), i)] = ct
            if meta is not None and meta.retain and wanted is None:
                ct = pytorch_convention(ct)
                meta.grad = ct if meta.grad is None else ops.add(meta.grad, ct)
        if wanted is None and node.__class__ is AccumulateGrad:  # a leaf's gradient is complete: store it now
            _accumulate(node.variable, cts[0] if cts[0] is not None else ops.zeros_like(node.variable),
                        create_graph)
        if node.rule is not None and node.residuals is _FREED:
            raise GraphFreedError(
                f"backward through {node!r} a second time: its saved values were freed by the first backward. "
                "Pass retain_graph=True to the first backward() (or fg.autograd.grad) to keep them.")

    def free(node: Any) -> None:
        node.residuals = _FREED

    token = TAPE_OFF.set(not create_graph)
    try:
        leaves = walk(roots, visit, None if retain_graph else free, unpacked)
        if wanted is not None:
            for leaf, cts in leaves.values():  # reached: a zero gradient if only zeros arrived
                if isinstance(leaf, AccumulateGrad) and (id(leaf), 0) in wanted:
                    got[(id(leaf), 0)] = cts[0] if cts[0] is not None else ops.zeros_like(leaf.variable)
    finally:
        TAPE_OFF.reset(token)
    return got


class _MoveBack(VJPRule):
    """The backward rule of a move between devices (PyTorch's ToCopyBackward): the
    cotangent moves back to the device the value came from."""

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        return (g.to(params["device"]),)


_MOVE_BACK = _MoveBack()


def moved(x: Any, dst: Any) -> Any:
    """``x.to(dst)`` for an array that requires grad: the copy, recorded on the tape (when it
    records) so that gradients flow back across devices, as in PyTorch."""
    value = Array._alias(x)._to_device(dst)
    if not is_grad_enabled():
        return value
    _, parent = TAPE.unbox(x)
    node = Node(None, _MOVE_BACK, {"device": x.device}, (parent,), (), 1, label="ToCopyBackward")
    value._autograd = AutogradMeta(True, node, 0)
    return value


def _detached(x: Any) -> Any:
    return Array._alias(x) if x._autograd is not None else x


def pytorch_convention(ct: Any) -> Any:
    """A cotangent as PyTorch states gradients. The transforms follow JAX: the cotangent of a
    complex value pairs with it bilinearly, so a real loss's gradient is dL/dx - i dL/dy.
    PyTorch's ``.grad`` is its conjugate, dL/dx + i dL/dy, the direction in which the loss
    grows fastest, which ``p - lr * p.grad`` needs; the tape's gradients, seeds and hooks
    are stated that way (for real arrays the two agree)."""
    return ops.conj(ct) if ct.dtype.kind == "c" else ct


def _accumulate(variable: Any, ct: Any, create_graph: bool) -> None:
    """Add a leaf's gradient into its ``.grad``, then run its post-accumulate hooks
    (``register_post_accumulate_grad_hook``: DistributedDataParallel starts reducing there)."""
    meta = variable._autograd
    ct = pytorch_convention(ct)
    if not create_graph:
        ct = _detached(ct)
    meta.grad = ct if meta.grad is None else (ops.add(meta.grad, ct) if create_graph else _detached(
        ops.add(meta.grad, ct)))
    if meta.post_hooks:
        for hook in tuple(meta.post_hooks):
            hook(variable)


def _seed(output: Any, gradient: Any, where: str) -> Any:
    if gradient is None:
        if output.dtype.kind == "c":
            raise DTypeError(f"{where}: the output is complex ({output.dtype}), so a gradient cannot be implied "
                             "(as in PyTorch, only a real scalar's can); reduce it to a real loss (e.g. "
                             "fg.abs(y).sum()) or pass gradient=")
        if output.size != 1:
            raise ShapeError(f"{where}: the output has shape {fmt_shape(tuple(output.shape))}, so a gradient can "
                             "only be implied for scalars; pass gradient= (a cotangent of that shape) or call .sum()")
        return ops.ones_like(output)
    gradient = gradient if isinstance(gradient, Array) else ops.asarray(gradient, output.dtype)
    if tuple(gradient.shape) != tuple(output.shape):
        raise ShapeError(f"{where}: gradient of shape {fmt_shape(tuple(gradient.shape))} for an output of shape "
                         f"{fmt_shape(tuple(output.shape))}")
    return pytorch_convention(gradient)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """``fg.autograd.backward``: accumulate gradients of ``tensors`` into the leaves' ``.grad``.

    Example:
        >>> x = fg.asarray([2.0], requires_grad=True)
        >>> fg.autograd.backward((x * x).sum())
        >>> x.grad.tolist()
        [4.0]
    """
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    grads = list(grad_tensors) if isinstance(grad_tensors, (list, tuple)) else [grad_tensors] * len(tensors)
    roots = []
    for t, g in zip(tensors, grads):
        meta = getattr(t, "_autograd", None)
        if meta is None or not meta.requires_grad:
            raise RuntimeError("backward: this array does not require grad and has no grad_fn; create the inputs "
                               "with requires_grad=True (and compute outside fg.no_grad())")
        node, idx = edge_of(t)
        roots.append((node, idx, _seed(t, g, "backward")))
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is not None:  # accumulate only into these
        wanted = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        got = _backward_pass(roots, retain, create_graph, [edge_of(x) for x in wanted])
        for x in wanted:
            ct = got.get(_key(x))
            if ct is not None:
                _accumulate(x, ct, create_graph)
        return
    _backward_pass(roots, retain, create_graph, None)


def _key(x: Any) -> tuple[int, int]:
    node, idx = edge_of(x)
    return (id(node), idx)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Any, ...]:
    """``fg.autograd.grad``: gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    Example:
        >>> x = fg.asarray([2.0], requires_grad=True)
        >>> fg.autograd.grad((x ** 3).sum(), x)[0].tolist(), x.grad
        ([12.0], None)
    """
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    g_out = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs] * len(outputs)
    for x in inputs:
        if getattr(x, "_autograd", None) is None or not x._autograd.requires_grad:
            raise RuntimeError("autograd.grad: an input does not require grad")
        if x.dtype.kind not in "fc":
            raise DTypeError(f"autograd.grad: inputs must be floating point or complex, not {x.dtype}")
    roots = []
    for t, g in zip(outputs, g_out):
        if getattr(t, "_autograd", None) is None:
            raise RuntimeError("autograd.grad: an output does not require grad (it does not depend on the inputs)")
        node, idx = edge_of(t)
        roots.append((node, idx, _seed(t, g, "autograd.grad")))
    retain = create_graph if retain_graph is None else retain_graph
    got = _backward_pass(roots, retain, create_graph, [edge_of(x) for x in inputs])
    result = []
    for x in inputs:
        ct = got.get(_key(x))
        if ct is None and not allow_unused:
            raise RuntimeError("autograd.grad: an input was not used to compute the outputs; pass allow_unused=True "
                               "to get None for it")
        ct = ct if ct is None else pytorch_convention(ct)
        result.append(ct if ct is None or create_graph else _detached(ct))
    return tuple(result)



provide(tape=sys.modules[__name__])
