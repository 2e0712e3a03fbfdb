"""``fg.checkpoint``: recompute a function's intermediates in the backward pass.

``checkpoint(f)`` traces ``f`` into a ``Program`` and binds one call-like
primitive, ``checkpoint``, whose inputs are the program's constants (values
``f`` closes over, so gradients reach them) and ``f``'s arguments. Eagerly it
just evaluates the program. Under reverse mode its node keeps only its inputs,
plus the outputs a *policy* chooses to save; the backward pass re-runs the
program under a fresh VJP interpreter, reusing those saved outputs instead of
recomputing them.

Policies are ``policy(eqn) -> bool`` ("save this equation's outputs"):
``checkpoint_policies.nothing_saveable`` (the default) and ``dots_saveable``
(matmul and einsum outputs), or any callable of your own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ... import tree as _tree
from ...array import ArrayBase
from ...errors import ArgumentTypeError, ArgumentValueError
from ...ops import zeros_like
from ...primitives.ad import VJPRule
from ...primitives.core import Primitive, bind, current_interpreter
from ..core import new_interpreter, require_callable, user_transform
from ..ir import Eqn, Program, make_program
from ..vmap import vmap
from .api import as_array, jvp, vjp
from .graph import toposort
from .interpreters import VJPInterpreter

__all__ = ["checkpoint", "checkpoint_policies", "checkpoint_p", "saved_residuals"]


class checkpoint_policies:
    """Named policies for ``fg.checkpoint(f, policy=...)`` (``jax.checkpoint_policies``):
    each says of an equation of ``f`` whether the backward pass may keep its outputs, or
    must recompute them.

    Attributes:
        nothing_saveable: keep nothing (the least memory; ``f``'s forward runs again).
        dots_saveable: keep the outputs of matrix products (tagged ``"dot"``).
        everything_saveable: keep everything (as without ``checkpoint``).

    Example:
        >>> f = lambda w, x: fg.tanh(x @ w).sum()
        >>> w, x = fg.ones((3, 4)), fg.ones((2, 3))
        >>> g = fg.checkpoint(f, policy=fg.checkpoint_policies.dots_saveable)
        >>> fg.saved_residuals(g)(w, x)
        [('f32[3,4]', 'argument 0'), ('f32[2,3]', 'argument 1'), ('f32[2,4]', 'checkpoint')]
    """

    @staticmethod
    def nothing_saveable(eqn: Eqn) -> bool:
        """Keep nothing: recompute everything in the backward pass."""
        return False

    @staticmethod
    def dots_saveable(eqn: Eqn) -> bool:
        """Keep the outputs of matrix products (primitives tagged ``"dot"``: matmul, einsum)."""
        return "dot" in eqn.prim.tags

    @staticmethod
    def everything_saveable(eqn: Eqn) -> bool:
        """Keep every output (no recomputation)."""
        return True


_NAMED = {"nothing": checkpoint_policies.nothing_saveable, "nothing_saveable": checkpoint_policies.nothing_saveable,
          "dots": checkpoint_policies.dots_saveable, "dots_saveable": checkpoint_policies.dots_saveable,
          "everything": checkpoint_policies.everything_saveable}


def _saved_eqns(program: Program, policy: Callable[[Eqn], bool]) -> tuple[int, ...]:
    return tuple(i for i, e in enumerate(program.eqns) if policy(e))


def _impl(*args: Any, program: Program, policy: Any, saved: tuple[int, ...], n_consts: int) -> tuple[Any, ...]:
    keep: dict[int, Any] = {}

    def hook(i: int, eqn: Eqn, vals: list[Any]) -> Any:
        if i in saved_set:
            out = bind(eqn.prim, *vals, **eqn.params)
            keep[i] = out
            return out
        return None

    saved_set = set(saved)
    outs = program.eval_flat(args[n_consts:], consts=args[:n_consts], hook=hook if saved else None)
    extra = [o for i in saved for o in (keep[i] if program.eqns[i].prim.multiple_results else (keep[i],))]
    return tuple(outs) + tuple(extra)


def _abstract_eval(*avals: Any, program: Program, policy: Any, saved: tuple[int, ...], n_consts: int) -> Any:
    extra = [v.aval for i in saved for v in program.eqns[i].outputs]
    return tuple(program.out_avals) + tuple(extra)


checkpoint_p = Primitive("checkpoint", _abstract_eval, impl=_impl, multiple_results=True, loadable=True)


class _CheckpointVJP(VJPRule):
    """Keeps inputs (and policy-saved outputs); recomputes the rest in the backward pass."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        outs = bind(checkpoint_p, *primals, **params)
        n_user = len(params["program"].outvars)
        return outs, (primals, outs[n_user:])

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        primals, saved_values = residuals
        program: Program = params["program"]
        saved: tuple[int, ...] = params["saved"]
        n_consts = params["n_consts"]
        known: dict[int, Any] = {}
        it = iter(saved_values)
        for i in saved:
            n = len(program.eqns[i].outputs)
            vals = tuple(next(it) for _ in range(n))
            known[i] = vals if program.eqns[i].prim.multiple_results else vals[0]

        def hook(i: int, eqn: Eqn, vals: list[Any]) -> Any:
            if i not in known:
                return None
            interp = current_interpreter.get()
            out = known[i]
            if isinstance(interp, VJPInterpreter):
                out = interp.record_known(eqn.prim, tuple(vals), eqn.params, known[i])
            captured[i] = out
            return out

        captured: dict[int, Any] = {}

        # differentiate only what needs a cotangent: the weights a segment closes over are
        # usually constants, and their gradients would cost a matmul (and its memory) each
        wanted = [i for i, p in enumerate(primals) if needs is None or needs[i]]

        def recompute(*live: Any) -> tuple[Any, ...]:
            xs = list(primals)
            for i, v in zip(wanted, live):
                xs[i] = v
            # user outputs, then the saved outputs: at higher orders those receive cotangents too
            outs = program.eval_flat(xs[n_consts:], consts=xs[:n_consts], hook=hook)
            extra = [o for i in saved for o in (captured[i] if program.eqns[i].prim.multiple_results
                                                else (captured[i],))]
            return tuple(outs) + tuple(extra)

        outs, f_vjp = vjp(recompute, *[primals[i] for i in wanted])
        cts = tuple(zeros_like(o) if c is None else c for o, c in zip(outs, tuple(g)))
        del outs  # the recomputed outputs: only the graph's residuals need to stay
        got = iter(f_vjp(cts))
        return tuple(next(got) if i in wanted else None for i in range(len(primals)))


def _jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], **params: Any) -> tuple[Any, Any]:
    tangents = tuple(zeros_like(p) if t is None and isinstance(p, ArrayBase) else t for p, t in zip(primals, tangents))
    outs, t_outs = jvp(lambda *xs: _impl(*xs, **params), primals, tangents)  # forward mode keeps nothing
    return outs, t_outs


def _batch(args: tuple[Any, ...], dims: tuple[Any, ...], **params: Any) -> tuple[Any, Any]:
    """A checkpoint of the batched function (so its backward still recomputes), returning
    what this one does: the outputs, then the saved values its ``saved`` names."""
    member = functools.partial(_impl, **params)
    outs = checkpoint(vmap(member, in_axes=tuple(dims)), params["policy"])(*args)
    return outs, (0,) * len(outs)


checkpoint_p.vjp = _CheckpointVJP()
checkpoint_p.jvp = _jvp
checkpoint_p.batch = _batch


def checkpoint(f: Callable[..., Any], policy: Any = None, *, prevent_cse: bool = True) -> Callable[..., Any]:
    """``f`` with its intermediates recomputed, not kept, for the backward pass.

    Args:
        f: the function.
        policy: which equations' outputs may be kept: ``None`` (none), a name of
            ``checkpoint_policies`` or a callable of an equation.
        prevent_cse: accepted for JAX's signature (the recomputation is never merged away).

    Returns:
        A function computing what ``f`` computes, differentiable as it is.

    Example:
        >>> f = fg.checkpoint(lambda x: fg.sin(fg.sin(x)))
        >>> round(fg.grad(f)(fg.asarray(0.0)).item(), 6)
        1.0
    """
    require_callable("checkpoint", f)
    if policy is not None and not isinstance(policy, str) and not callable(policy):
        raise ArgumentTypeError(f"fg.checkpoint: policy must be None, one of {sorted(_NAMED)} or a callable of an "
                                f"equation, got {type(policy).__name__} {policy!r}")
    if policy is None:
        policy = checkpoint_policies.nothing_saveable
    elif isinstance(policy, str):
        if policy not in _NAMED:
            raise ArgumentValueError(f"checkpoint: unknown policy {policy!r}; use one of {sorted(_NAMED)} or a "
                                     "callable")
        policy = _NAMED[policy]

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        flat, in_tree = _tree.flatten(args)
        flat = [as_array(x) for x in flat]
        program, _ = make_program(f, [x.aval for x in flat], in_tree)
        consts = program.consts
        inner = Program(program.invars, [], [], program.eqns, program.outvars, None, None)
        inner.constvars = program.constvars  # consts arrive as the leading inputs of the primitive
        saved = _saved_eqns(program, policy)
        outs = bind(checkpoint_p, *consts, *flat, program=inner, policy=policy, saved=saved, n_consts=len(consts))
        return _tree.unflatten(program.out_tree, list(outs[:len(program.outvars)]))

    return user_transform("checkpoint", wrapped)


def saved_residuals(f: Callable[..., Any]) -> Callable[..., list[tuple[str, str]]]:
    """What reverse mode keeps for ``f``'s backward pass (``jax.ad_checkpoint.
    saved_residuals``): the arrays its rules save, each once, as ``(type, made by)`` pairs,
    where "made by" is the primitive, an argument, or a ``checkpoint`` that recomputes.

    Args:
        f: the function.

    Returns:
        A function of ``f``'s arguments returning the list of pairs.

    Example:
        >>> f = lambda w, x: fg.tanh(x @ w).sum()
        >>> w, x = fg.ones((3, 4)), fg.ones((2, 3))
        >>> fg.saved_residuals(f)(w, x)
        [('f32[2,3]', 'argument 1'), ('f32[3,4]', 'argument 0'), ('f32[2,4]', 'tanh')]
        >>> fg.saved_residuals(fg.checkpoint(f, policy=fg.checkpoint_policies.nothing_saveable))(w, x)
        [('f32[3,4]', 'argument 0'), ('f32[2,3]', 'argument 1')]
    """

    def inspect(*args: Any) -> list[tuple[str, str]]:
        flat, in_tree = _tree.flatten(args)
        flat = [as_array(x) for x in flat]
        interp = _RecordingVJP()
        with new_interpreter(interp):
            leaves = [interp.leaf(x, i) if x.dtype.kind in "fc" else x for i, x in enumerate(flat)]
            for i, x in enumerate(flat):
                interp.made_by[id(x)] = (x, f"argument {i}")
            out = f(*_tree.unflatten(in_tree, leaves))
        roots = [o.node for o in _tree.leaves(out) if hasattr(o, "node")]
        seen: set[int] = set()
        report = []
        for node in toposort(roots):
            for value in _tree.leaves(node.residuals):
                if isinstance(value, ArrayBase) and id(value) not in seen:
                    seen.add(id(value))
                    report.append((value.aval.str_short(), interp.made_by.get(id(value), (None, "a constant"))[1]))
        return report

    return inspect


class _RecordingVJP(VJPInterpreter):
    """A VJP interpreter that remembers which primitive made each value (holding the
    value, so its id cannot be reused by a later array while we inspect)."""

    def __init__(self) -> None:
        super().__init__()
        self.made_by: dict[int, tuple[Any, str]] = {}

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        out = super().process(prim, args, params)
        for o in (out if isinstance(out, tuple) else (out,)):
            value = getattr(o, "primal", o)
            self.made_by.setdefault(id(value), (value, prim.name))
        return out
