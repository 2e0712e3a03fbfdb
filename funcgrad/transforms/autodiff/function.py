"""``fg.autograd.Function``: PyTorch's custom-gradient class, as a custom VJP.

``forward(ctx, *args)`` and ``backward(ctx, *grads)`` are static methods;
``ctx.save_for_backward(...)``, ``ctx.saved_tensors`` and ``ctx.needs_input_grad``
work as in PyTorch. ``apply`` binds one call-like primitive (``autograd_function_call``)
whose VJP rule runs ``forward`` and keeps the ``ctx`` as its residual, then runs
``backward`` on it. So the tape records it as it records any primitive, and
``fg.grad``, ``fg.vjp`` and ``fg.trace`` see the same rule. ``forward`` runs on concrete
arrays when nothing traces it: it may use NumPy, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from ... import tree as _tree
from ...array import ArrayBase
from ...ops import zeros
from ...primitives.ad import VJPRule
from ...primitives.batching import batch_by_loop
from ...primitives.core import Primitive, ShapedArray, bind
from ..grad_mode import TAPE_OFF
from ..ir import make_program
from .api import stop_gradient
from .custom import check_cotangent

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``; any attribute may be set on it.

    Example:
        >>> class Scale(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x, k):
        ...         ctx.k = k  # (any attribute)
        ...         return x * k
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * ctx.k, None
        >>> x = fg.asarray([1.0, 2.0], requires_grad=True)
        >>> Scale.apply(x, 3.0).sum().backward()
        >>> x.grad.tolist()
        [3.0, 3.0]
    """

    def __init__(self, needs_input_grad: tuple[bool, ...] = ()) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved: tuple[Any, ...] = ()
        self._non_differentiable: tuple[Any, ...] = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep arrays for backward (read them as ``ctx.saved_tensors``)."""
        self._saved = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """These outputs of ``forward`` carry no gradient (and get a zero one in ``backward``)."""
        self._non_differentiable = outputs

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None (not zeros) for an output nothing used."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The arrays save_for_backward kept."""
        return self._saved


class _FunctionCall:
    """The parameters of one ``apply``: the class, the arguments that are not arrays, and
    what forward returned once it has run (or been traced): the output structure, the
    abstract value of each array output, its other leaves, and which outputs it marked."""

    def __init__(self, cls: type, args: tuple[Any, ...], positions: list[int]) -> None:
        self.cls, self.args, self.positions = cls, args, positions
        self.__name__ = cls.__name__
        self.in_avals = [args[i].aval for i in positions]
        self.out_tree: Any = None
        self.out_avals: list[ShapedArray] = []
        self.out_leaves: list[Any] = []  # forward's output leaves, None where an array goes
        self.marked: set[int] = set()  # array outputs marked non-differentiable

    def __repr__(self) -> str:
        return f"<{self.__name__}>"

    def needs(self, array_needs: tuple[bool, ...]) -> tuple[bool, ...]:
        """``ctx.needs_input_grad``: one flag per argument of ``forward``."""
        flags = [False] * len(self.args)
        for i, need in zip(self.positions, array_needs):
            flags[i] = need
        return tuple(flags)

    def forward(self, ctx: FunctionCtx, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """Run the user's ``forward`` on these arrays; its array outputs, flat."""
        args = list(self.args)
        for i, a in zip(self.positions, arrays):
            args[i] = a
        leaves, self.out_tree = _tree.flatten(self.cls.forward(ctx, *args))  # type: ignore[attr-defined]
        outs = tuple(o for o in leaves if isinstance(o, ArrayBase))
        self.out_leaves = [None if isinstance(o, ArrayBase) else o for o in leaves]
        self.out_avals = [o.aval for o in outs]
        self.marked = {k for k, o in enumerate(outs) if any(o is m for m in ctx._non_differentiable)}
        return outs


def _abstract_eval(*avals: Any, call: _FunctionCall) -> tuple[ShapedArray, ...]:
    """Trace ``forward`` on abstract inputs (under ``fg.trace``)."""
    ctx = FunctionCtx(call.needs((True,) * len(avals)))
    make_program(lambda *xs: call.forward(ctx, xs), list(avals), _tree.flatten(tuple(avals))[1])
    return tuple(call.out_avals)


def _impl(*arrays: Any, call: _FunctionCall) -> tuple[Any, ...]:
    """Nothing records: ``forward`` alone, with the tape off (as PyTorch runs it)."""
    token = TAPE_OFF.set(True)
    try:
        return call.forward(FunctionCtx(call.needs((False,) * len(arrays))), arrays)
    finally:
        TAPE_OFF.reset(token)


function_p = Primitive("autograd_function_call", _abstract_eval, impl=_impl, multiple_results=True)


class _FunctionVJP(VJPRule):
    """``forward`` keeps its ``ctx`` as the residual; ``backward`` gets it back."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        call: _FunctionCall = params["call"]
        ctx = FunctionCtx(call.needs((True,) * len(primals) if needs is None else needs))
        return call.forward(ctx, primals), ctx

    def bwd(self, ctx: FunctionCtx, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        call: _FunctionCall = params["call"]
        if ctx.materialize_grads:  # PyTorch's default: an output nothing used gets zeros, not None
            g = tuple(zeros(a.shape, a.dtype, device=a.device) if ct is None else ct
                      for ct, a in zip(g, call.out_avals))
        cts = iter(g)
        grads = call.cls.backward(ctx, *(next(cts) if leaf is None else None for leaf in call.out_leaves))  # type: ignore[attr-defined]
        grads = grads if isinstance(grads, tuple) else (grads,)
        if len(grads) != len(call.args):
            raise TypeError(f"{call.__name__}.backward returned {len(grads)} gradients for {len(call.args)} inputs "
                            "of forward (return None for inputs without a gradient)")
        for k, (i, aval) in enumerate(zip(call.positions, call.in_avals)):
            if needs is None or needs[k]:
                check_cotangent(f"{call.__name__}.backward", i, grads[i], aval)
        return tuple(grads[i] for i in call.positions)


def _no_forward_mode(primals: Any, tangents: Any, **params: Any) -> Any:
    raise TypeError(f"can't apply forward-mode differentiation (jvp, jacfwd, hessian) to the autograd.Function "
                    f"{params['call'].__name__}: it only defines backward. Use fg.custom_jvp, or jacrev.")


function_p.vjp = _FunctionVJP()
function_p.jvp = _no_forward_mode
# forward and backward are written for one example (PyTorch asks for a vmap rule of its own):
# under vmap, once per member
function_p.batch = batch_by_loop(function_p)


class Function:
    """Subclass with ``forward(ctx, ...)`` and ``backward(ctx, *grads)``; call ``MyFn.apply(...)``.

    Example:
        >>> class Square(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2.0 * x * g
        >>> x = fg.asarray([3.0], requires_grad=True)
        >>> Square.apply(x).sum().backward()
        >>> x.grad.tolist()
        [6.0]
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """The outputs from the inputs (define it; ``ctx`` keeps what backward needs)."""
        raise NotImplementedError("subclasses of fg.autograd.Function define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        """The gradients of the inputs from the outputs' gradients (define it)."""
        raise NotImplementedError("subclasses of fg.autograd.Function define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run forward (and record backward for the tape and the transforms)."""
        positions = [i for i, a in enumerate(args) if isinstance(a, ArrayBase)]
        call = _FunctionCall(cls, args, positions)
        outs = bind(function_p, *(args[i] for i in positions), call=call)
        arrays = iter(stop_gradient(o) if k in call.marked else o for k, o in enumerate(outs))
        return _tree.unflatten(call.out_tree, [next(arrays) if leaf is None else leaf for leaf in call.out_leaves])
