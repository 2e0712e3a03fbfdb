"""Control flow: ``fg.cond``, ``fg.switch``, ``fg.while_loop``, ``fg.fori_loop`` and
``fg.scan`` (JAX's signatures and semantics).

Called eagerly (no transform active, or a predicate known now) they run the Python
directly, so the tape records through them. Under a transform the functions are traced
into sub-programs held by three call-like primitives, ``cond``, ``while`` and ``scan``,
whose rules transform the sub-programs: forward mode differentiates them, reverse mode
runs a cond (or a reversed scan) of their VJPs, and batching maps them. Every sub-program
takes the values its function closed over as leading inputs, so transforms see them too.

Reverse mode recomputes each branch or step from its inputs (a cond keeps its inputs, a
scan the carry entering each step), as a checkpoint would. ``while_loop`` has no reverse
mode (its number of steps is not known before it runs, as in JAX): use ``fori_loop`` with
Python-int bounds or ``scan``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops
from .. import tree as _tree
from ..array import Array, ArrayBase, wrap_kernel_output
from ..dtypes import int64 as _INDEX  # the index dtype, as fg.arange gives
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..primitives import lax
from ..primitives.ad import VJPFromRules, VJPRule
from ..primitives.batching import axis_size, to_front
from ..primitives.checks import as_int
from ..primitives.core import Primitive, ShapedArray, aval_of, bind, current_interpreter
from .autodiff.api import as_array, jvp, vjp
from .autodiff.interpreters import VJPInterpreter
from .compiler import native_program
from .compiler.call import compiled_call_p
from .compiler.pipeline import compile_program
from .core import Tracer, user_transform
from .grad_mode import is_grad_enabled
from .ir import Eqn, Program, Var, make_program
from .vmap import vmap

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "cond_p", "while_p", "scan_p"]


# ---- sub-programs ---------------------------------------------------------------------------

def _open(fn: Callable[..., Any], avals: list[ShapedArray], in_tree: Any) -> tuple[Program, list[Any], Any]:
    """``fn`` traced on ``avals``, with the values it closes over as leading inputs:
    (program, those values, the output's tree)."""
    program, _ = make_program(fn, avals, in_tree)
    opened = Program([*program.constvars, *program.invars], [], [], program.eqns, program.outvars, None, None)
    return opened, list(program.consts), program.out_tree


def _program(fn: Callable[..., Any], avals: Sequence[Any]) -> Program:
    """A function of flat arguments (closing over no traced value) as a program."""
    return make_program(fn, list(avals), _flat(len(avals)))[0]


def _call(program: Program, args: Sequence[Any]) -> list[Any]:
    return program.eval_flat(list(args))


def _fn(program: Program) -> Callable[..., tuple[Any, ...]]:
    return lambda *xs: tuple(program.eval_flat(list(xs)))


def _run_compiled(program: Program, args: Sequence[Any], name: str) -> list[Any]:
    """Eagerly: the program as a compiled call (its lowered code) on concrete arrays."""
    return list(bind(compiled_call_p, *args, name=name, program=program))


def common_array_device(args: Sequence[Any]) -> Any:
    """The device of ``args`` when all are concrete arrays on one device, else ``None``."""
    device = args[0]._device if args and args[0].__class__ is Array else None
    return device if device is not None and all(a.__class__ is Array and a._device is device for a in args) else None


def _avals(xs: Sequence[Any]) -> list[Any]:
    return [aval_of(x) for x in xs]


def _is_float(x: Any) -> bool:
    return getattr(x, "dtype", None) is not None and x.dtype.kind in "fc"


def _describe(tree: Any, avals: Sequence[Any]) -> str:
    return f"{tree} with " + (", ".join(a.str_short() for a in avals) if avals else "no arrays")


def _same_types(what: str, first: tuple[Any, list[Any]], other: tuple[Any, list[Any]], names: tuple[str, str]) -> None:
    (tree_a, avals_a), (tree_b, avals_b) = first, other
    if tree_a != tree_b or [(a.shape, a.dtype) for a in avals_a] != [(b.shape, b.dtype) for b in avals_b]:
        raise ShapeError(f"{what}: {names[0]} and {names[1]} must have the same structure, shapes and dtypes; "
                         f"{names[0]}: {_describe(tree_a, avals_a)}; {names[1]}: {_describe(tree_b, avals_b)}")


def _flat(n: int) -> Any:
    """The tree of ``n`` positional arguments, each one leaf."""
    return _tree.structure(tuple(range(n)))


def _flat_arrays(tree_value: Any) -> tuple[list[Any], Any]:
    flat, tree = _tree.flatten(tree_value)
    return [as_array(x) for x in flat], tree


def _tracing() -> bool:
    return current_interpreter.get() is not None


# ---- cond and switch ------------------------------------------------------------------------

def _takes(what: str, program: Any, avals: Sequence[Any]) -> None:
    """``program`` is a sub-program of ``len(avals)`` inputs (a structural check: a program
    read from a file must fit its equation before it runs)."""
    if not isinstance(program, Program) or len(program.invars) != len(avals):
        raise ArgumentValueError(f"{what}: a sub-program of {len(avals)} input(s) expected, got "
                                 f"{type(program).__name__}")


def _count(op: str, what: str, value: Any, most: int) -> int:
    value = as_int(op, value, what)
    if value > most:
        raise ArgumentValueError(f"{op}: {what} must be at most {most}, got {value}")
    return value


def _cond_abstract(index: Any, *avals: Any, branches: tuple[Program, ...]) -> tuple[Any, ...]:
    if not isinstance(branches, tuple) or not branches:
        raise ArgumentValueError("cond: branches must be a non-empty tuple of programs")
    for b in branches:
        _takes("cond", b, avals)
    return tuple(branches[0].out_avals)


def _cond_impl(index: Any, *args: Any, branches: tuple[Program, ...]) -> tuple[Any, ...]:
    return tuple(_run_compiled(branches[int(index)], args, "cond branch"))


cond_p = Primitive("cond", _cond_abstract, impl=_cond_impl, multiple_results=True, loadable=True)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[index](*operands)``, the index clamped into range (JAX's ``lax.switch``).

    Args:
        index: an integer (a Python int or an integer array of one element; traced inside
            ``fg.compile``, where the branch is picked when the program runs).
        branches: the functions to pick from; each must return the same structure of shapes
            and dtypes.
        *operands: the arguments every branch is called with.

    Returns:
        What the picked branch returns.

    Example:
        >>> fg.switch(1, [lambda x: x + 1, lambda x: x * 10], fg.asarray(2.0)).item()
        20.0
    """
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise ArgumentTypeError("fg.switch: branches must be a non-empty sequence of functions")
    if not isinstance(index, Tracer):  # known now: the chosen branch runs as plain Python
        i = as_int("fg.switch", index, "the index", minimum=None)
        return branches[min(max(i, 0), len(branches) - 1)](*operands)
    if index.shape != () or index.dtype.kind not in "iub":
        raise ArgumentTypeError(f"fg.switch: the index must be a scalar integer, got {index.aval.str_short()}")
    flat, tree = _flat_arrays(operands)
    traced = [_open(lambda *xs, b=b: b(*_tree.unflatten(tree, list(xs))), _avals(flat), _flat(len(flat)))
              for b in branches]
    for k, (_, _, out_tree) in enumerate(traced[1:], 1):
        _same_types("fg.switch" if len(branches) > 2 else "fg.cond", (traced[0][2], traced[0][0].out_avals),
                    (out_tree, traced[k][0].out_avals),
                    ("branch 0", f"branch {k}") if len(branches) > 2 else ("false_fun", "true_fun"))
    consts = [c for _, cs, _ in traced for c in cs]
    programs = tuple(_uniform(traced, k, _avals(consts), _avals(flat)) for k in range(len(traced)))
    index = ops.clip(lax.convert(index, _INDEX), 0, len(branches) - 1)
    outs = bind(cond_p, index, *consts, *flat, branches=programs)
    return _tree.unflatten(traced[0][2], list(outs))


def _concrete_predicate(pred: Any) -> bool:
    """A predicate known now, as a bool: a Python or NumPy bool or number, or a 0-d array."""
    if isinstance(pred, ArrayBase):
        if pred.shape != ():
            raise ArgumentTypeError(f"fg.cond: the predicate must be a scalar, got shape {tuple(pred.shape)}; for an "
                                    "elementwise choice use fg.where")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float, np.bool_, np.number)):
        return bool(pred)
    raise ArgumentTypeError(f"fg.cond: the predicate must be a bool, a number or a 0-d array, got "
                            f"{type(pred).__name__} {pred!r}")


def _uniform(traced: list[Any], k: int, const_avals: list[Any], operand_avals: list[Any]) -> Program:
    """Branch ``k`` as a program of every branch's closed-over values, then the operands."""
    start = sum(len(cs) for _, cs, _ in traced[:k])
    program, own, _ = traced[k]
    n = len(const_avals)
    return _program(lambda *xs: tuple(_call(program, [*xs[start:start + len(own)], *xs[n:]])),
                    [*const_avals, *operand_avals])


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (JAX's ``lax.cond``).

    Args:
        pred: a bool, or a boolean array of one element. Traced (inside ``fg.compile``), it
            picks a branch when the program runs.
        true_fun: the function called where ``pred`` holds.
        false_fun: the function called otherwise; both must return the same structure of
            shapes and dtypes.
        *operands: the arguments the branch is called with.

    Returns:
        What the branch returns. Derivatives go through the branch taken.

    Example:
        >>> fg.grad(lambda x: fg.cond(x > 0, lambda v: v * v, lambda v: -v, x))(3.0).item()
        6.0
    """
    if not callable(true_fun) or not callable(false_fun):
        raise ArgumentTypeError("fg.cond: true_fun and false_fun must be functions")
    if not isinstance(pred, Tracer):
        return (true_fun if _concrete_predicate(pred) else false_fun)(*operands)
    if pred.shape != ():
        raise ArgumentTypeError(f"fg.cond: the predicate must be a scalar, got {pred.aval.str_short()}; "
                                "for an elementwise choice use fg.where")
    return switch(lax.convert(pred, _INDEX) if pred.dtype.kind == "b" else lax.ne(pred, 0), [false_fun, true_fun],
                  *operands)


def _cond_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, branches: tuple[Program, ...]) -> Any:
    index, args = primals[0], primals[1:]
    which = [i for i, (a, t) in enumerate(zip(args, tangents[1:])) if t is not None and _is_float(a)]
    n, n_out = len(args), len(branches[0].outvars)

    def differentiated(branch: Program) -> Callable[..., Any]:
        def run(*xs: Any) -> tuple[Any, ...]:
            base = list(xs[:n])

            def part(*live: Any) -> tuple[Any, ...]:
                for i, v in zip(which, live):
                    base[i] = v
                return tuple(_call(branch, base))

            outs, t_outs = jvp(part, tuple(xs[i] for i in which), tuple(xs[n:]))
            return (*outs, *t_outs)

        return run

    ts = [tangents[1 + i] for i in which]
    avals = _avals([*args, *ts])
    programs = tuple(_program(differentiated(b), avals) for b in branches)
    outs = bind(cond_p, index, *args, *ts, branches=programs)
    return outs[:n_out], tuple(t if _is_float(o) else None for o, t in zip(outs[:n_out], outs[n_out:]))


class _CondVJP(VJPRule):
    """Keeps the inputs; the backward pass is a cond of the branches' VJPs (each
    recomputing its forward pass)."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        return bind(cond_p, *primals, **params), primals

    def bwd(self, primals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        branches: tuple[Program, ...] = params["branches"]
        index, args = primals[0], primals[1:]
        n = len(args)
        diff = [i for i, a in enumerate(args) if _is_float(a) and (needs is None or needs[1 + i])]
        floats = [j for j, a in enumerate(branches[0].out_avals) if a.dtype.kind in "fc"]
        cts = [ops.zeros(branches[0].out_avals[j].shape, branches[0].out_avals[j].dtype,
                         device=branches[0].out_avals[j].device) if g[j] is None else g[j] for j in floats]

        def pulled_back(branch: Program) -> Callable[..., Any]:
            def run(*xs: Any) -> tuple[Any, ...]:
                base = list(xs[:n])

                def part(*live: Any) -> tuple[Any, ...]:
                    for i, v in zip(diff, live):
                        base[i] = v
                    outs = _call(branch, base)
                    return tuple(outs[j] for j in floats)

                return tuple(vjp(part, *(xs[i] for i in diff))[1](tuple(xs[n:])))

            return run

        programs = tuple(_program(pulled_back(b), _avals([*args, *cts])) for b in branches)
        got = iter(bind(cond_p, index, *args, *cts, branches=programs) if diff else ())
        result: list[Any] = [None] * len(primals)
        for i in diff:
            result[1 + i] = next(got)
        return tuple(result)


def _cond_batch(args: tuple[Any, ...], dims: tuple[Any, ...], *, branches: tuple[Program, ...]) -> Any:
    index, rest, rest_dims = args[0], args[1:], dims[1:]
    n = axis_size(args, dims)
    if dims[0] is None:  # one branch for every member: the batched branches
        programs = tuple(_program(vmap(_fn(b), in_axes=rest_dims, axis_size=n), _avals(rest)) for b in branches)
        outs = bind(cond_p, index, *rest, branches=programs)
        return outs, (0,) * len(outs)
    # members choose differently: every branch on the whole batch, then each member's pick
    results = [vmap(_fn(b), in_axes=rest_dims, axis_size=n)(*rest) for b in branches]
    index = to_front(index, dims[0])
    picked = []
    for j, first in enumerate(results[0]):
        out = first
        for k in range(1, len(results)):
            mask = lax.reshape(lax.eq(index, k), (n,) + (1,) * (out.ndim - 1))
            out = lax.select(mask, results[k][j], out)
        picked.append(out)
    return tuple(picked), (0,) * len(picked)


cond_p.jvp = _cond_jvp
cond_p.vjp = _CondVJP()
cond_p.batch = _cond_batch


# ---- while_loop ------------------------------------------------------------------------------

def _while_abstract(*avals: Any, cond: Program, body: Program, n_consts: int) -> tuple[Any, ...]:
    n_consts = _count("while", "n_consts", n_consts, len(avals))
    _takes("while (cond)", cond, avals)
    _takes("while (body)", body, avals)
    if len(body.outvars) != len(avals) - n_consts:
        raise ArgumentValueError(f"while: the body returns {len(body.outvars)} values for a carry of "
                                 f"{len(avals) - n_consts}")
    return tuple(body.out_avals)


def _while_impl(*args: Any, cond: Program, body: Program, n_consts: int) -> tuple[Any, ...]:
    consts, carry = list(args[:n_consts]), list(args[n_consts:])
    while bool(_run_compiled(cond, [*consts, *carry], "while_loop cond")[0].item()):
        carry = _run_compiled(body, [*consts, *carry], "while_loop body")
    return tuple(carry)


while_p = Primitive("while", _while_abstract, impl=_while_impl, multiple_results=True, loadable=True)


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """``val = init_val; while cond_fun(val): val = body_fun(val)`` (JAX's ``lax.while_loop``).

    Args:
        cond_fun: the loop's condition, a function of the value to a bool (or a boolean
            array of one element).
        body_fun: one step: it must return what it is given, the same structure, shapes and
            dtypes.
        init_val: the first value (a pytree of arrays and numbers).

    Returns:
        The value once ``cond_fun`` no longer holds. Differentiable in forward mode;
        reverse mode raises (the number of steps is not known: use ``fori_loop`` or
        ``scan``).

    Example:
        >>> fg.while_loop(lambda v: v < 100, lambda v: v * 2, fg.asarray(3)).item()
        192
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise ArgumentTypeError("fg.while_loop: cond_fun and body_fun must be functions")
    if not _tracing():  # eager: the Python loop itself (the tape records through it)
        val = init_val
        while bool(_scalar_predicate("fg.while_loop", cond_fun(val))):
            val = body_fun(val)
        return val
    flat, tree = _flat_arrays(init_val)
    cond_prog, cond_consts, cond_tree = _open(lambda *xs: cond_fun(_tree.unflatten(tree, list(xs))), _avals(flat),
                                              _flat(len(flat)))
    out = cond_prog.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype.kind != "b":
        raise ArgumentTypeError(f"fg.while_loop: cond_fun must return a scalar bool, got {_describe(cond_tree, out)}")
    body_prog, body_consts, body_tree = _open(lambda *xs: body_fun(_tree.unflatten(tree, list(xs))), _avals(flat),
                                              _flat(len(flat)))
    _same_types("fg.while_loop", (tree, _avals(flat)), (body_tree, body_prog.out_avals),
                ("init_val", "body_fun's result"))
    consts = [*cond_consts, *body_consts]
    avals = _avals([*consts, *flat])
    nc, nb = len(cond_consts), len(body_consts)
    cond_u = _program(lambda *xs: tuple(_call(cond_prog, [*xs[:nc], *xs[nc + nb:]])), avals)
    body_u = _program(lambda *xs: tuple(_call(body_prog, [*xs[nc:nc + nb], *xs[nc + nb:]])), avals)
    outs = bind(while_p, *consts, *flat, cond=cond_u, body=body_u, n_consts=len(consts))
    return _tree.unflatten(tree, list(outs))


def _scalar_predicate(op: str, value: Any) -> Any:
    if getattr(value, "shape", ()) != ():
        raise ArgumentTypeError(f"{op}: the predicate must be a scalar, got shape {tuple(value.shape)}")
    return value.item() if isinstance(value, ArrayBase) else value


def _while_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, cond: Program, body: Program,
               n_consts: int) -> Any:
    """A loop over (value, tangent): the tangents of the closed-over values ride along unchanged."""
    consts, carry = primals[:n_consts], primals[n_consts:]
    t_consts = [i for i, (a, t) in enumerate(zip(consts, tangents)) if t is not None and _is_float(a)]
    t_carry = [i for i, a in enumerate(carry) if _is_float(a)]
    ts_c = [tangents[i] for i in t_consts]
    ts_v = [tangents[n_consts + i] if tangents[n_consts + i] is not None else ops.zeros_like(carry[i])
            for i in t_carry]
    nc, nv = len(consts), len(carry)
    new_consts = [*consts, *ts_c]

    def body_jvp(*xs: Any) -> tuple[Any, ...]:
        c, tc, v, tv = xs[:nc], xs[nc:nc + len(ts_c)], xs[nc + len(ts_c):nc + len(ts_c) + nv], xs[nc + len(ts_c) + nv:]
        base = [*c, *v]
        live = [*t_consts, *(nc + i for i in t_carry)]

        def part(*d: Any) -> tuple[Any, ...]:
            for i, x in zip(live, d):
                base[i] = x
            return tuple(_call(body, base))

        outs, t_outs = jvp(part, tuple(base[i] for i in live), (*tc, *tv))
        return (*outs, *(t_outs[i] for i in t_carry))

    avals = _avals([*new_consts, *carry, *ts_v])
    cond_new = _program(lambda *xs: tuple(_call(cond, [*xs[:nc], *xs[nc + len(ts_c):nc + len(ts_c) + nv]])), avals)
    outs = bind(while_p, *new_consts, *carry, *ts_v, cond=cond_new, body=_program(body_jvp, avals),
                n_consts=len(new_consts))
    t_out: list[Any] = [None] * nv
    for k, i in enumerate(t_carry):
        t_out[i] = outs[nv + k]
    return outs[:nv], tuple(t_out)


class _NoReverseMode(VJPRule):
    MESSAGE = ("fg.while_loop: reverse-mode differentiation (grad, vjp, jacrev, backward) is not supported: the "
               "number of steps is only known once the loop has run. Use fg.fori_loop with Python-int bounds or "
               "fg.scan, which differentiate in reverse; forward mode (jvp, jacfwd) works.")

    def fwd(self, primals: Any, params: Any, needs: Any = None) -> Any:
        raise TypeError(self.MESSAGE)

    def bwd(self, residuals: Any, g: Any, params: Any, needs: Any = None) -> Any:
        raise TypeError(self.MESSAGE)


def _while_batch(args: tuple[Any, ...], dims: tuple[Any, ...], *, cond: Program, body: Program,
                 n_consts: int) -> Any:
    """Every member's value is batched; the loop runs while any member's predicate holds,
    and a member that is done keeps its value."""
    n = axis_size(args, dims)
    consts, carry = list(args[:n_consts]), [to_front(a, d, n) for a, d in zip(args[n_consts:], dims[n_consts:])]
    in_axes = (*dims[:n_consts], *(0,) * len(carry))
    cond_b = vmap(_fn(cond), in_axes=in_axes, axis_size=n)
    body_b = vmap(_fn(body), in_axes=in_axes, axis_size=n)
    nc = len(consts)

    def any_going(*xs: Any) -> tuple[Any, ...]:
        return (lax.ne(lax.reduce_sum(lax.convert(cond_b(*xs)[0], _INDEX), (0,)), 0),)

    def step(*xs: Any) -> tuple[Any, ...]:
        going = cond_b(*xs)[0]
        new = body_b(*xs)
        return tuple(lax.select(lax.reshape(going, (n,) + (1,) * (v.ndim - 1)), v, old)
                     for v, old in zip(new, xs[nc:]))

    avals = _avals([*consts, *carry])
    outs = bind(while_p, *consts, *carry, cond=_program(any_going, avals), body=_program(step, avals), n_consts=nc)
    return outs, (0,) * len(outs)


while_p.jvp = _while_jvp
while_p.vjp = _NoReverseMode()
while_p.batch = _while_batch


# ---- scan -----------------------------------------------------------------------------------

def _scan_abstract(*avals: Any, body: Program, n_consts: int, n_carry: int, length: int,
                   reverse: bool) -> tuple[Any, ...]:
    n_consts = _count("scan", "n_consts", n_consts, len(avals))
    n_carry = _count("scan", "n_carry", n_carry, len(avals) - n_consts)
    _count("scan", "length", length, 1 << 62)
    if not isinstance(reverse, bool):
        raise ArgumentValueError(f"scan: reverse must be a bool, got {reverse!r}")
    _takes("scan (body)", body, avals)
    if len(body.outvars) < n_carry:
        raise ArgumentValueError(f"scan: the body returns {len(body.outvars)} values for a carry of {n_carry}")
    outs = body.out_avals
    return (*outs[:n_carry], *(ShapedArray((length, *a.shape), a.dtype, a.device) for a in outs[n_carry:]))


def _scan_impl(*args: Any, body: Program, n_consts: int, n_carry: int, length: int, reverse: bool) -> tuple[Any, ...]:
    """The loop in Python over the body's lowered code, on the raw arrays: each step's ys
    are written into stacked arrays made once. (Arguments that are not arrays on one
    device: the body evaluated step by step.)"""
    consts, carry = list(args[:n_consts]), list(args[n_consts:n_consts + n_carry])
    xs = args[n_consts + n_carry:]
    order = range(length - 1, -1, -1) if reverse else range(length)
    y_avals = body.out_avals[n_carry:]
    device = common_array_device(args)
    if device is None:
        ys: list[list[Any]] = [[None] * length for _ in y_avals]
        for i in order:
            outs = _call(body, [*consts, *carry, *(x[i] for x in xs)])
            carry = outs[:n_carry]
            for stack, y in zip(ys, outs[n_carry:]):
                stack[i] = y
        return (*carry, *(ops.stack(stack) if length else ops.zeros((0, *a.shape), a.dtype, device=a.device)
                          for stack, a in zip(ys, y_avals)))
    (before, before_avals, lowered), stats = _lowered(body, n_consts), device.stats
    xp = device.backend.xp
    raw_consts, raw_carry, raw_xs = [a._data for a in consts], [a._data for a in carry], [x._data for x in xs]
    if before is not None:  # the loop-invariant values, made once
        raw_consts += _raw_outputs(before, before.runner()(raw_consts, stats), raw_consts, before_avals, xp)
    looped = None if lowered.native is None or lowered.runner() is not lowered.fn else \
        native_program.scan(lowered.native, raw_consts, raw_carry, raw_xs, length, reverse, body.out_avals, stats)
    if looped is not None:  # (the steps as one native loop)
        raw_carry, raw_ys = looped
        return (*(wrap_kernel_output(r, device) for r in raw_carry), *(wrap_kernel_output(r, device) for r in raw_ys))
    raw_ys = [xp.empty((length, *a.shape), a.dtype.np) for a in y_avals]
    run, all_new, out_avals = lowered.runner(), lowered.all_new, body.out_avals
    steps = zip(*(x[::-1] if reverse else x for x in raw_xs)) if raw_xs else ((),) * length
    for i, x_i in zip(order, steps):
        inputs = raw_consts + raw_carry + list(x_i)
        outs = run(inputs, stats)
        if not all_new:
            outs = _raw_outputs(lowered, outs, inputs, out_avals, xp)
        raw_carry = outs[:n_carry]
        for stack, y in zip(raw_ys, outs[n_carry:]):
            stack[i] = y
    return (*(wrap_kernel_output(r, device) if r is not a._data else a for r, a in zip(raw_carry, carry)),
            *(wrap_kernel_output(r, device) for r in raw_ys))


def _lowered(body: Program, n_consts: int) -> tuple[Any, Any, Any]:
    """The body's loop-invariant part (``_hoisted``; None where it has none), the abstract
    values of its outputs, and the rest of the body: each through the compiler's passes (a
    backward body recomputes forward values it may not need) and lowered, once per body."""
    def make() -> tuple[Any, Any, Any]:
        before, each = _hoisted(body, n_consts)
        if before is None:
            return None, [], compile_program(each, name="fg.scan's body")
        return (compile_program(before, name="fg.scan's loop-invariant values"), before.out_avals,
                compile_program(each, name="fg.scan's body"))

    return body.derived("lowered", n_consts, make)  # type: ignore[no-any-return]


def _hoisted(body: Program, n_consts: int) -> tuple[Program | None, Program]:
    """``body`` split in two: the equations that read only the values it closes over (its
    first ``n_consts`` inputs and its constants), run once before the loop, and the rest,
    which reads their results as more closed-over values (a backward body's transposed
    weight is made once, not once a step). An effect (a debug callback) runs every step."""
    invariant = {id(v) for v in (*body.invars[:n_consts], *body.constvars)}
    before, each = [], []
    for eqn in body.eqns:
        if not eqn.prim.effectful and all(not isinstance(a, Var) or id(a) in invariant for a in eqn.inputs):
            before.append(eqn)
            invariant.update(id(o) for o in eqn.outputs)
        else:
            each.append(eqn)
    if not before:
        return None, body
    read = {id(a) for e in each for a in e.inputs if isinstance(a, Var)} | {id(a) for a in body.outvars
                                                                             if isinstance(a, Var)}
    made = [o for e in before for o in e.outputs if id(o) in read]
    consts = body.invars[:n_consts]
    return (Program(list(consts), body.constvars, body.consts, before, made),
            Program([*consts, *made, *body.invars[n_consts:]], body.constvars, body.consts, each, body.outvars))


def _raw_outputs(lowered: Any, outs: list[Any], inputs: list[Any], avals: list[Any], xp: Any) -> list[Any]:
    """A lowered program's outputs as raw arrays (an input or constant it returns as is)."""
    return [r if kind == "new" else inputs[what] if kind == "input" else what._data if kind == "const" else
            xp.asarray(what, dtype=a.dtype.np) for (kind, what), r, a in zip(lowered.out_kinds, outs, avals)]


scan_p = Primitive("scan", _scan_abstract, impl=_scan_impl, multiple_results=True, loadable=True)


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int = 1) -> tuple[Any, Any]:
    """``carry = init; for x in xs: carry, y = f(carry, x)``, the ``y`` stacked (JAX's
    ``lax.scan``).

    Args:
        f: one step, a function of ``(carry, x)`` to ``(carry, y)``; the carry it returns
            must have the structure, shapes and dtypes of ``init``.
        init: the first carry (a pytree of arrays and numbers).
        xs: a pytree of arrays scanned along their axis 0, or ``None`` (then ``length``
            steps, each given ``None``).
        length: the number of steps where ``xs`` is ``None`` (else it must match).
        reverse: run from the last ``x`` to the first (the ``y`` keep ``xs``'s order).
        unroll: accepted for JAX's signature; the loop runs one step at a time.

    Returns:
        ``(carry, ys)``: the last carry and the steps' ``y`` stacked along a new axis 0.
        Differentiable in both modes, and one loop in ``fg.compile``.

    Example:
        >>> carry, ys = fg.scan(lambda c, x: (c + x, c * x), fg.asarray(0.0), fg.arange(1.0, 5.0))
        >>> carry.item(), ys.tolist()
        (10.0, [0.0, 2.0, 9.0, 24.0])
    """
    return _scan(f, init, xs, length, reverse, unroll)


def _scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any, length: int | None, reverse: bool,
          unroll: int, weak_xs: bool = False) -> tuple[Any, Any]:
    """``scan``; ``weak_xs``: the traced slices of ``xs`` stand for Python numbers (``fori_loop``'s
    index promotes as the eager loop's Python int does)."""
    if not callable(f):
        raise ArgumentTypeError("fg.scan: f must be a function")
    if isinstance(unroll, bool) or not isinstance(unroll, int) or unroll < 1:
        raise ArgumentValueError(f"fg.scan: unroll must be a positive int, got {unroll!r}")
    x_flat, x_tree = _flat_arrays(xs)
    lengths = {x.shape[0] if x.ndim else None for x in x_flat}
    if None in lengths:
        raise ShapeError("fg.scan: every array in xs needs a leading axis to scan along; got a 0-d array")
    if length is not None:
        lengths.add(as_int("fg.scan", length, "length"))
    if len(lengths) > 1:
        raise ShapeError(f"fg.scan: xs and length disagree on the number of steps: {sorted(lengths)} "  # type: ignore[type-var]
                         f"(xs shapes: {[tuple(x.shape) for x in x_flat]}, length={length})")
    if not lengths:
        raise ArgumentValueError("fg.scan: with xs=None, give length")
    n_steps = lengths.pop()
    if n_steps is not None and n_steps >= 2 ** 63:  # (more steps than an int64 counts: refused, not run for ever)
        raise ArgumentValueError(f"fg.scan: length={n_steps} does not fit an int64 step count")
    c_flat, c_tree = _flat_arrays(init)
    if not _tracing() and n_steps:  # eager: the Python loop itself (the tape records through it)
        carry, ys, y_types = init, [], None
        for i in (range(n_steps - 1, -1, -1) if reverse else range(n_steps)):
            out = f(carry, _tree.unflatten(x_tree, [x[i] for x in x_flat]))
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ArgumentTypeError(f"fg.scan: f must return a pair (carry, y), got {type(out).__name__}")
            carry, y = out
            new_flat, new_tree = _flat_arrays(carry)
            _same_types("fg.scan", (c_tree, _avals(c_flat)), (new_tree, _avals(new_flat)),
                        ("init", f"the carry f returns at step {i}"))
            y_flat, y_tree = _flat_arrays(y)
            if y_types is None:
                y_types = (y_tree, _avals(y_flat))
            _same_types("fg.scan", y_types, (y_tree, _avals(y_flat)), ("the first step's y", f"step {i}'s y"))
            ys.append(y)
        if reverse:
            ys.reverse()
        y_leaves = [_tree.flatten(y)[0] for y in ys]
        stacked = [ops.stack([as_array(leaves[j]) for leaves in y_leaves]) for j in range(len(y_leaves[0]))]
        return carry, _tree.unflatten(_tree.flatten(ys[0])[1], stacked)
    slice_avals = [ShapedArray(tuple(x.shape[1:]), x.dtype, x.device, weak_xs) for x in x_flat]
    nc = len(c_flat)

    def step(*leaves: Any) -> Any:
        carry = _tree.unflatten(c_tree, list(leaves[:nc]))
        out = f(carry, _tree.unflatten(x_tree, list(leaves[nc:])))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ArgumentTypeError("fg.scan: f must return a pair (carry, y)")
        return out

    program, consts, out_tree = _open(step, _avals(c_flat) + slice_avals, _flat(nc + len(x_flat)))
    pair_children = out_tree.children
    new_c_tree, y_tree = pair_children[0], pair_children[1]
    _same_types("fg.scan", (c_tree, _avals(c_flat)), (new_c_tree, program.out_avals[:nc]),
                ("init", "the carry f returns"))
    outs = bind(scan_p, *consts, *c_flat, *x_flat, body=program, n_consts=len(consts), n_carry=nc, length=n_steps,
                reverse=bool(reverse))
    return _tree.unflatten(c_tree, list(outs[:nc])), _tree.unflatten(y_tree, list(outs[nc:]))


def _scan_parts(args: Sequence[Any], n_consts: int, n_carry: int) -> tuple[list[Any], list[Any], list[Any]]:
    return list(args[:n_consts]), list(args[n_consts:n_consts + n_carry]), list(args[n_consts + n_carry:])


def _scan_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, body: Program, n_consts: int, n_carry: int,
              length: int, reverse: bool) -> Any:
    """A scan over (values, tangents): every float input and carry gets a tangent (zeros
    where it has none), so the carry's structure stays the same through the steps."""
    consts, carry, xs = _scan_parts(primals, n_consts, n_carry)
    ts = [t if t is not None or not _is_float(p) else ops.zeros_like(p) for p, t in zip(primals, tangents)]
    t_consts, t_carry, t_xs = _scan_parts(ts, n_consts, n_carry)
    fc = [i for i, a in enumerate(consts) if _is_float(a)]
    fv = [i for i, a in enumerate(carry) if _is_float(a)]
    fx = [i for i, a in enumerate(xs) if _is_float(a)]
    nc, nv, nx = len(consts), len(carry), len(xs)
    n_out_y = len(body.outvars) - nv

    def step(*args: Any) -> tuple[Any, ...]:
        k = 0
        c, tc = args[k:k + nc], args[k + nc:k + nc + len(fc)]
        k += nc + len(fc)
        v, tv = args[k:k + nv], args[k + nv:k + nv + len(fv)]
        k += nv + len(fv)
        x, tx = args[k:k + nx], args[k + nx:]
        base = [*c, *v, *x]
        live = [*fc, *(nc + i for i in fv), *(nc + nv + i for i in fx)]

        def part(*d: Any) -> tuple[Any, ...]:
            for i, val in zip(live, d):
                base[i] = val
            return tuple(_call(body, base))

        outs, t_outs = jvp(part, tuple(base[i] for i in live), (*tc, *tv, *tx))
        out_t = [t_outs[i] for i in fv]
        y_t = [t for t, o in zip(t_outs[nv:], outs[nv:]) if _is_float(o)]
        return (*outs[:nv], *out_t, *outs[nv:], *y_t)

    new_consts = [*consts, *(t_consts[i] for i in fc)]
    new_carry = [*carry, *(t_carry[i] for i in fv)]
    new_xs = [*xs, *(t_xs[i] for i in fx)]
    slices = [ShapedArray(tuple(a.shape[1:]), a.dtype, a.device) for a in _avals(new_xs)]
    program = _program(step, [*_avals(new_consts), *_avals(new_carry), *slices])
    outs = bind(scan_p, *new_consts, *new_carry, *new_xs, body=program, n_consts=len(new_consts),
                n_carry=len(new_carry), length=length, reverse=reverse)
    carry_out, t_carry_out = outs[:nv], outs[nv:nv + len(fv)]
    ys, t_ys = outs[nv + len(fv):nv + len(fv) + n_out_y], outs[nv + len(fv) + n_out_y:]
    t_c: list[Any] = [None] * nv
    for i, t in zip(fv, t_carry_out):
        t_c[i] = t
    float_ys = [j for j, y in enumerate(ys) if _is_float(y)]
    t_y: list[Any] = [None] * n_out_y
    for j, t in zip(float_ys, t_ys):
        t_y[j] = t
    return (*carry_out, *ys), (*t_c, *t_y)


def _residual_eqns(body: Program, n_consts: int) -> tuple[int, ...]:
    """The body's equations whose outputs its reverse-mode rules read (a rule that keeps its
    output, or keeps an input another equation makes) and that change from step to step:
    the forward scan stacks them, as JAX's scan keeps its residuals, so the backward scan
    does not compute them again. Loop-invariant ones are computed once (``_hoisted``)."""
    varying = {id(v) for v in body.invars[n_consts:]}
    made_by: dict[int, int] = {}
    read: set[int] = set()
    for i, eqn in enumerate(body.eqns):
        if any(isinstance(a, Var) and id(a) in varying for a in eqn.inputs):
            varying.update(id(o) for o in eqn.outputs)
        rule = eqn.prim.vjp
        if isinstance(rule, VJPFromRules) and not rule.keep_nothing:
            if rule.keep_ans:
                read.add(i)
            for k in (range(len(eqn.inputs)) if rule.keep_args else rule.keep_some):
                a = eqn.inputs[k] if k < len(eqn.inputs) else None
                if isinstance(a, Var) and id(a) in made_by:
                    read.add(made_by[id(a)])
        made_by.update((id(o), i) for o in eqn.outputs)
    return tuple(i for i in sorted(read) if not body.eqns[i].prim.multiple_results
                 and id(body.eqns[i].outputs[0]) in varying)


def _eval_keeping(body: Program, args: Sequence[Any], saved: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    """The body's outputs, and the outputs of equations ``saved``."""
    kept: dict[int, Any] = {}
    wanted = set(saved)

    def hook(i: int, eqn: Eqn, vals: list[Any]) -> Any:
        if i in wanted:
            kept[i] = bind(eqn.prim, *vals, **eqn.params)
            return kept[i]
        return None

    outs = body.eval_flat(list(args), hook=hook if saved else None)
    return outs, [kept[i] for i in saved]


def _eval_knowing(body: Program, args: Sequence[Any], known: dict[int, Any]) -> list[Any]:
    """The body's outputs with the outputs of equations ``known`` given, not computed; under
    reverse mode they are recorded as that equation's results (their rules read them)."""
    def hook(i: int, eqn: Eqn, vals: list[Any]) -> Any:
        if i not in known:
            return None
        interp = current_interpreter.get()
        if isinstance(interp, VJPInterpreter):
            return interp.record_known(eqn.prim, tuple(vals), eqn.params, known[i])
        return known[i]

    return body.eval_flat(list(args), hook=hook if known else None)


class _ScanVJP(VJPRule):
    """Forward: the scan, also stacking the carry entering each step and the step's
    residuals (``_residual_eqns``). Backward: a scan the other way over (those carries and
    residuals, xs, the ys' cotangents), each step the VJP of the body with its residuals
    given (what else of the forward step the VJP reads is computed again; the compiler's
    passes drop the rest); the closed-over values' cotangents add up in the backward scan's
    carry."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        body: Program = params["body"]
        nc, nv = params["n_consts"], params["n_carry"]
        ny = len(body.outvars) - nv
        saved = _residual_eqns(body, nc)

        def step(*xs: Any) -> tuple[Any, ...]:
            out, kept = _eval_keeping(body, xs, saved)
            return (*out[:nv], *xs[nc:nc + nv], *out[nv:], *kept)

        outs = bind(scan_p, *primals, **{**params, "body": _program(step, body.in_avals)})
        return (*outs[:nv], *outs[2 * nv:2 * nv + ny]), (primals, outs[nv:2 * nv], outs[2 * nv + ny:])

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        primals, carries, kept = residuals
        if current_interpreter.get() is None and is_grad_enabled() and any(
                getattr(p, "_autograd", None) is not None for p in primals):
            # the tape records this backward pass (create_graph): the forward ran with the tape
            # off, so the saved carries and residuals have no history; run it again, recorded
            _, carries, kept = self.fwd(primals, params)[1]
        body: Program = params["body"]
        saved = _residual_eqns(body, params["n_consts"])
        nc, nv, length = params["n_consts"], params["n_carry"], params["length"]
        consts, carry, xs = _scan_parts(primals, nc, nv)
        outs_avals = _abstract_outs(body, nv, length)
        wanted = [needs is None or needs[i] for i in range(len(primals))]  # (the carries' chain runs anyway)
        fc = [i for i, a in enumerate(consts) if _is_float(a) and wanted[i]]
        fv = [i for i, a in enumerate(carry) if _is_float(a)]
        fx = [i for i, a in enumerate(xs) if _is_float(a) and wanted[nc + nv + i]]
        fy = [j for j, a in enumerate(outs_avals[nv:]) if a.dtype.kind in "fc"]
        ct = [ops.zeros(a.shape, a.dtype, device=a.device) if c is None else c for c, a in zip(g, outs_avals)]
        ct_carry = [ct[i] for i in fv]
        ct_ys = [ct[nv + j] for j in fy]
        nx, nfc = len(xs), len(fc)

        def back(*args: Any) -> tuple[Any, ...]:
            c = args[:nc]
            ct_v, acc = args[nc:nc + len(fv)], args[nc + len(fv):nc + len(fv) + nfc]
            k = nc + len(fv) + nfc
            v, x = args[k:k + nv], args[k + nv:k + nv + nx]
            ct_y, known = args[k + nv + nx:k + nv + nx + len(ct_ys)], dict(zip(saved, args[k + nv + nx + len(ct_ys):]))
            base = [*c, *v, *x]
            live = [*fc, *(nc + i for i in fv), *(nc + nv + i for i in fx)]

            def part(*d: Any) -> tuple[Any, ...]:
                for i, val in zip(live, d):
                    base[i] = val
                out = _eval_knowing(body, base, known)
                return (*(out[i] for i in fv), *(out[nv + j] for j in fy))

            got = vjp(part, *(base[i] for i in live))[1]((*ct_v, *ct_y))
            d_consts, d_carry, d_xs = got[:nfc], got[nfc:nfc + len(fv)], got[nfc + len(fv):]
            return (*d_carry, *(a + d for a, d in zip(acc, d_consts)), *d_xs)

        acc0 = [ops.zeros_like(consts[i]) for i in fc]
        scanned = [*carries, *xs, *ct_ys, *kept]
        slices = [ShapedArray(tuple(a.shape[1:]), a.dtype, a.device) for a in _avals(scanned)]
        program = _program(back, [*_avals(consts), *_avals(ct_carry), *_avals(acc0), *slices])
        outs = bind(scan_p, *consts, *ct_carry, *acc0, *scanned, body=program, n_consts=nc,
                    n_carry=len(fv) + nfc, length=length, reverse=not params["reverse"])
        d_init, d_consts, d_xs = outs[:len(fv)], outs[len(fv):len(fv) + nfc], outs[len(fv) + nfc:]
        result: list[Any] = [None] * len(primals)
        for i, d in zip(fc, d_consts):
            result[i] = d
        for i, d in zip(fv, d_init):
            result[nc + i] = d
        for i, d in zip(fx, d_xs):
            result[nc + nv + i] = d
        return tuple(result)


def _abstract_outs(body: Program, n_carry: int, length: int) -> list[Any]:
    outs = body.out_avals
    return [*outs[:n_carry], *(ShapedArray((length, *a.shape), a.dtype, a.device) for a in outs[n_carry:])]


def _scan_batch(args: tuple[Any, ...], dims: tuple[Any, ...], *, body: Program, n_consts: int, n_carry: int,
                length: int, reverse: bool) -> Any:
    """The batched body over batched carries (batch axis first) and xs whose batch axis is
    their second (the first is scanned); the stacked ys come out batched on their second."""
    n = axis_size(args, dims)
    consts, carry, xs = _scan_parts(args, n_consts, n_carry)
    c_dims, x_dims = dims[:n_consts], dims[n_consts + n_carry:]
    carry = [to_front(a, d, n) for a, d in zip(carry, dims[n_consts:n_consts + n_carry])]
    xs = [x if d is None else lax.moveaxis(x, (d,), (1,)) for x, d in zip(xs, x_dims)]
    in_axes = (*c_dims, *(0,) * n_carry, *(None if d is None else 0 for d in x_dims))
    batched = vmap(_fn(body), in_axes=in_axes, axis_size=n)
    slices = [ShapedArray(tuple(a.shape[1:]), a.dtype, a.device) for a in _avals(xs)]
    program = _program(batched, [*_avals(consts), *_avals(carry), *slices])
    outs = bind(scan_p, *consts, *carry, *xs, body=program, n_consts=n_consts, n_carry=n_carry, length=length,
                reverse=reverse)
    return outs, (*(0,) * n_carry, *(1,) * (len(outs) - n_carry))


scan_p.jvp = _scan_jvp
scan_p.vjp = _ScanVJP()
scan_p.batch = _scan_batch


# ---- fori_loop ------------------------------------------------------------------------------

def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val)`` (JAX's
    ``lax.fori_loop``).

    Args:
        lower: the first ``i`` (a Python int, or an integer array traced in ``fg.compile``).
        upper: one past the last ``i``.
        body_fun: one step, a function of ``(i, val)`` returning a value of ``val``'s
            structure, shapes and dtypes.
        init_val: the first value.

    Returns:
        The last value. With Python-int bounds the loop is a ``scan`` (reverse mode
        works); with traced bounds, a ``while_loop`` (forward mode only).

    Example:
        >>> fg.grad(lambda x: fg.fori_loop(0, 3, lambda i, v: v * x, 1.0))(2.0).item()
        12.0
    """
    if not callable(body_fun):
        raise ArgumentTypeError("fg.fori_loop: body_fun must be a function")
    static = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    if static:
        lo, hi = (as_int("fg.fori_loop", b, what, minimum=None) for b, what in ((lower, "lower"), (upper, "upper")))
        for bound, what in ((lo, "lower"), (hi, "upper")):
            if not -(2 ** 63) <= bound < 2 ** 63:  # (as traced: its index is an int64)
                raise ArgumentValueError(f"fg.fori_loop: {what}={bound} does not fit the loop index's int64")
        if not _tracing():
            val = init_val
            for i in range(lo, hi):
                val = body_fun(i, val)
            return val
        if hi <= lo:
            return init_val
        steps = ops.arange(lo, hi, dtype=_INDEX)
        return _scan(lambda val, i: (_keep_float_dtypes(body_fun(i, val), val), None), init_val, steps, None,
                     False, 1, weak_xs=True)[0]
    i0 = lax.convert(lower if isinstance(lower, ArrayBase) else ops.asarray(lower), _INDEX)
    end = lax.convert(upper if isinstance(upper, ArrayBase) else ops.asarray(upper), _INDEX)
    _, val = while_loop(lambda s: lax.lt(s[0], end),
                        lambda s: (s[0] + 1, _keep_float_dtypes(body_fun(s[0], s[1]), s[1])), (i0, init_val))
    return val


def _keep_float_dtypes(new: Any, old: Any) -> Any:
    """The body's float results in the carry's dtypes: the traced index is an int64 array,
    which would promote a float32 ``c + i`` to float64 where the eager loop's Python int
    does not (nor JAX's index). Other mismatches are left for the loop to report."""
    new_flat, new_tree = _tree.flatten(new)
    old_flat, old_tree = _tree.flatten(old)
    if new_tree != old_tree:
        return new
    return _tree.unflatten(new_tree, [n.astype(o.dtype) if _is_float(n) and _is_float(o) and n.dtype is not o.dtype
                                      else n for n, o in zip(new_flat, old_flat)])


cond = user_transform("cond", cond)
switch = user_transform("switch", switch)
while_loop = user_transform("while_loop", while_loop)
fori_loop = user_transform("fori_loop", fori_loop)
scan = user_transform("scan", scan)
