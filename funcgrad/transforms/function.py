"""``fg.autograd.Function``: PyTorch's custom-gradient class.

``forward(ctx, *args)`` and ``backward(ctx, *grads)`` are static methods;
``ctx.save_for_backward(...)``, ``ctx.saved_tensors`` and ``ctx.needs_input_grad``
work as in PyTorch. On concrete arrays, ``apply`` records one node on the tape.
Inside functional transforms (``fg.grad``, ``fg.vjp``, ``fg.trace``) it is a
``custom_vjp`` underneath, so the same class serves both styles.
"""

from __future__ import annotations

from typing import Any

from .. import tree as _tree
from ..array import Array, ArrayBase
from ..ops import zeros
from .api import stop_gradient
from .autodiff import TAPE_OFF, Node, is_grad_enabled
from .core import Tracer
from .custom import check_cotangent, custom_vjp
from .tape import AutogradMeta, _edge

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``; any attribute may be set on it."""

    def __init__(self, needs_input_grad: tuple[bool, ...] = ()) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved: tuple[Any, ...] = ()
        self._non_differentiable: tuple[Any, ...] = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """These outputs of ``forward`` carry no gradient (and get a zero one in ``backward``)."""
        self._non_differentiable = outputs

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None (not zeros) for an output nothing used."""
        self.materialize_grads = value

    def _is_non_differentiable(self, output: Any) -> bool:
        return any(output is o for o in self._non_differentiable)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        return self._saved


class _Named:
    def __init__(self, name: str, multiple: bool) -> None:
        self.name = name
        self.multiple_results = multiple


class _FunctionRule:
    """Calls the user's ``backward`` when the tape reaches this node."""

    def __init__(self, cls: type, array_positions: list[int], n_args: int, outputs: tuple[Any, ...],
                 inputs: tuple[Any, ...] = ()) -> None:
        self.cls, self.positions, self.n_args = cls, array_positions, n_args
        self.outputs = outputs  # (shape, dtype, device) of each output: zeros for the unused ones
        self.inputs = inputs  # the abstract value of each array input: its gradient must match

    def bwd(self, ctx: FunctionCtx, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        cts = g if isinstance(g, tuple) else (g,)
        if ctx.materialize_grads:  # PyTorch's default: an output nothing used gets zeros, not None

            cts = tuple(zeros(out[0], out[1], device=out[2]) if ct is None and out is not None else ct
                        for ct, out in zip(cts, self.outputs))
        grads = self.cls.backward(ctx, *cts)
        grads = grads if isinstance(grads, tuple) else (grads,)
        if len(grads) != self.n_args:
            raise TypeError(f"{self.cls.__name__}.backward returned {len(grads)} gradients for {self.n_args} inputs "
                            "of forward (return None for inputs without a gradient)")
        for k, (i, aval) in enumerate(zip(self.positions, self.inputs)):
            if needs is None or needs[k]:
                check_cotangent(f"{self.cls.__name__}.backward", i, grads[i], aval)
        return tuple(grads[i] for i in self.positions)


class Function:
    """Subclass with ``forward(ctx, ...)`` and ``backward(ctx, *grads)``; call ``MyFn.apply(...)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("subclasses of fg.autograd.Function define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("subclasses of fg.autograd.Function define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        if any(isinstance(leaf, Tracer) for leaf in _tree.leaves(args)):
            return cls._apply_functional(*args)
        positions = [i for i, a in enumerate(args) if isinstance(a, Array)]
        needs = tuple(isinstance(a, Array) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        token = TAPE_OFF.set(True)
        try:
            out = cls.forward(ctx, *args)
        finally:
            TAPE_OFF.reset(token)
        if not (any(needs) and is_grad_enabled()):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        parents = tuple((*_edge(args[i]), tuple(args[i].shape), args[i]._dtype) if needs[i] else None
                        for i in positions)
        avals = tuple((tuple(o.shape), o.dtype, o.device) if isinstance(o, Array) else None for o in outs)
        rule = _FunctionRule(cls, positions, len(args), avals, tuple(args[i].aval for i in positions))
        fn = Node(_Named(cls.__name__, isinstance(out, tuple)), rule, {}, parents, ctx, len(outs),
                  f"{cls.__name__}Backward")
        marked = []
        for i, o in enumerate(outs):
            if isinstance(o, Array) and o._dtype.kind == "f" and not ctx._is_non_differentiable(o):
                if o._autograd is not None or any(o is a for a in args):
                    o = Array._view_of(o, o._layout_obj())  # never relabel an input or an array with history
                o._autograd = AutogradMeta(True, fn, i)
            marked.append(o)
        return tuple(marked) if isinstance(out, tuple) else marked[0]

    @classmethod
    def _apply_functional(cls, *args: Any) -> Any:
        """Inside fg.grad / fg.vjp / fg.trace: the same rule as a custom_vjp."""
        dynamic = [i for i, a in enumerate(args) if isinstance(a, ArrayBase)]
        static = tuple(i for i in range(len(args)) if i not in dynamic)

        non_differentiable: set[int] = set()  # output positions forward marked

        def forward(*a: Any) -> tuple[Any, FunctionCtx]:
            ctx = FunctionCtx(tuple(i in dynamic for i in range(len(a))))
            out = cls.forward(ctx, *a)
            outs = out if isinstance(out, tuple) else (out,)
            non_differentiable.update(i for i, o in enumerate(outs) if ctx._is_non_differentiable(o))
            return out, ctx

        def fun(*a: Any) -> Any:
            return forward(*a)[0]

        fun.__name__ = cls.__name__

        def bwd(*rest: Any) -> Any:
            ctx, g = rest[-2], rest[-1]
            grads = cls.backward(ctx, *(g if isinstance(g, tuple) else (g,)))
            grads = grads if isinstance(grads, tuple) else (grads,)
            return tuple(grads[i] for i in dynamic)

        rule = custom_vjp(fun, nondiff_argnums=static)
        rule.defvjp(forward, bwd)
        out = rule(*args)
        if not non_differentiable:
            return out

        outs = tuple(stop_gradient(o) if i in non_differentiable else o
                     for i, o in enumerate(out if isinstance(out, tuple) else (out,)))
        return outs if isinstance(out, tuple) else outs[0]
