"""``compiled_call``: the call-like primitive a compiled function binds, and its rules.

Its parameter is the optimised ``Program``. Eagerly its ``impl`` runs the lowered program
(``lower.py``), built once per program and per set of donated inputs. Its JVP
differentiates the program under the JVP interpreter. Its VJP is two more compiled
programs, traced once from the rules' own record of the program: a forward half that also
returns the residuals the rules keep, and a backward half from residuals and output
cotangents to the cotangents asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from ... import tree as _tree
from ...array import Array, ArrayBase
from ...dtypes import PYTHON_SCALARS as _SCALARS
from ...ops import zeros
from ...primitives.ad import VJPRule
from ...primitives.core import Primitive, ShapedArray, aval_of, current_interpreter
from ...primitives.core import bind as _bind
from ..autodiff.api import jvp, record, vjp, with_args
from ..autodiff.graph import substitute, toposort, walk
from ..autodiff.interpreters import VJPTracer
from ..core import Tracer
from ..grad_mode import is_grad_enabled
from ..ir import Program, lift_consts, make_program
from ..vmap import vmap
from .lower import LoweredFunction, lower, wrap_outputs
from .pipeline import optimize

__all__ = ["compiled_call_p", "lowered_program"]


def _abstract_eval(*avals: Any, name: str, program: Program, donated: tuple[int, ...] = ()) -> tuple[Any, ...]:
    return tuple(program.out_avals)


def _impl(*args: Any, name: str, program: Program, donated: tuple[int, ...] = ()) -> tuple[Any, ...]:
    """Eagerly: the lowered program on the arrays' raw data (all on one device), else the
    program evaluated equation by equation. A donated input the program may write into is
    passed as is when its array alone holds its memory, else as a copy."""
    device = args[0]._device if args and args[0].__class__ is Array else None
    if device is not None and all(a.__class__ is Array and a._device is device for a in args):
        lowered = lowered_program(program, name, donated)
        copies = {i for i in donated if not _owned_alone(args[i])}  # (checked before ``raw`` holds them too)
        raw = [a._data.copy() if i in copies else a._data for i, a in enumerate(args)]
        out = lowered.run(raw, device.stats)
        del raw
        return tuple(wrap_outputs(lowered, out, list(args), device))
    return tuple(program.eval_flat(args))


def lowered_program(program: Program, name: str, donated: tuple[int, ...] = ()) -> LoweredFunction:
    """``program`` lowered (once per donation pattern: ``Program.derived`` keeps it)."""
    return program.derived("lowered", donated,  # type: ignore[no-any-return]
                           lambda: lower(program, frozenset(donated), name=f"fg.compile({name})"))


def _owned_alone(a: Array) -> bool:
    """Nothing but ``a`` reaches its memory: no view, Buffer or NumPy array shares it (each
    would hold a reference to the memory), and no tape history saves it. The references
    counted: ``a`` itself, the eager path's list of raw arguments, the local name here, and
    ``getrefcount``'s own argument."""
    data = a._data
    return a._buf is None and a._autograd is None and getattr(data, "base", 0) is None and sys.getrefcount(data) <= 4


compiled_call_p = Primitive("compiled_call", _abstract_eval, impl=_impl, multiple_results=True, loadable=True,
                            label=lambda params: f"compiled_call[{params['name']}]" if params.get("name") else
                            "compiled_call")


def _as_function(program: Program) -> Callable[..., tuple[Any, ...]]:
    return lambda *xs: tuple(program.eval_flat(xs))


def _zeros_for(avals: Sequence[ShapedArray], values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(zeros(a.shape, a.dtype, device=a.device) if v is None else v for a, v in zip(avals, values))


def _jvp_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, name: str, program: Program,
              donated: tuple[int, ...] = ()) -> Any:
    return jvp(_as_function(program), primals, _zeros_for([p.aval for p in primals], tangents))


class _SplitVJP:
    """A program's reverse mode as two compiled programs: ``forward`` computes the outputs
    and the residuals the rules keep, ``backward`` maps residuals and output cotangents to
    the inputs' cotangents. Both are traced once, from the rules' own record of the
    program (the forward under a VJP interpreter inside a trace; the backward by walking
    that record with its residuals as inputs), so they compute what the rules would."""

    def __init__(self, program: Program, needs: tuple[bool, ...]) -> None:
        traced: dict[str, Any] = {}
        wanted = [i for i, n in enumerate(needs) if n]  # the inputs a cotangent is asked for

        def forward(*xs: Any) -> list[Any]:
            out, _, interp, _, _, leaves = record(with_args(_as_function(program), xs, tuple(wanted)),
                                                   tuple(xs[i] for i in wanted), False, None, "compile")
            roots = [(o.node, o.index) if isinstance(o, VJPTracer) and o._interp is interp else None for o in out]
            nodes = [n for n in toposort([r[0] for r in roots if r is not None]) if n.rule is not None]
            saved: list[Any] = []
            for node in nodes:
                _saved_arrays(node.residuals, saved)
            traced.update(roots=roots, leaves=leaves, nodes=nodes)
            return [o.primal if isinstance(o, VJPTracer) and o._interp is interp else o for o in out] + saved

        avals = [v.aval for v in program.invars]
        self.forward, _ = make_program(forward, avals, _tree.flatten(tuple(avals))[1])
        roots, leaves, nodes = traced["roots"], traced["leaves"], traced["nodes"]
        self.n_out, self.seeded = len(roots), [r is not None for r in roots]
        given = dict(zip(wanted, leaves))
        self.reached = [given.get(i) is not None for i in range(len(avals))]  # inputs given a cotangent
        in_avals = [a for i, a in enumerate(avals) if self.reached[i]]

        def backward(*flat: Any) -> list[Any]:
            values = iter(flat)
            residuals = {id(n): substitute(n.residuals, values) for n in nodes}
            seeds = [(r[0], r[1], next(values)) for r in roots if r is not None]
            got = walk(seeds, residuals_of=lambda n: residuals[id(n)])
            return [got[id(leaf)][1][0] if id(leaf) in got and got[id(leaf)][1][0] is not None
                    else zeros(a.shape, a.dtype, device=a.device)
                    for leaf, a in zip((leaf for leaf in leaves if leaf is not None), in_avals)]

        saved_avals = self.forward.out_avals[self.n_out:]
        ct_avals = [a for a, seeded in zip(program.out_avals, self.seeded) if seeded]
        flat_avals = list(saved_avals) + ct_avals
        self.backward, _ = make_program(backward, flat_avals, _tree.flatten(tuple(flat_avals))[1])
        self.forward, self.backward = optimize(self.forward), optimize(self.backward)


def _saved_arrays(x: Any, out: list[Any]) -> None:
    """The arrays among a rule's saved values, in order; anything but arrays, abstract
    values, numbers, ``None`` and tuples of them (user code's residuals) cannot be split."""
    if isinstance(x, ArrayBase):
        out.append(x)
    elif isinstance(x, tuple):
        for e in x:
            _saved_arrays(e, out)
    elif not (x is None or isinstance(x, (ShapedArray, *_SCALARS))):
        raise _Unsplittable


class _Unsplittable(Exception):
    """A rule in the program keeps values that are not arrays (user code)."""




def _split_vjp(program: Program, needs: Any) -> _SplitVJP | None:
    """The program's two halves for these inputs' cotangents (built once per pattern)."""
    needs = tuple(needs) if needs is not None else (True,) * len(program.invars)

    def split() -> _SplitVJP | None:
        try:
            return _SplitVJP(program, needs)
        except _Unsplittable:
            return None

    return program.derived("split vjp", needs, split)  # type: ignore[no-any-return]


class _CompiledVJP(VJPRule):
    """Reverse mode through a compiled call. The forward pass runs the program's compiled
    forward half (outputs and residuals) and the backward pass its compiled backward half,
    itself a compiled call: under a transform both are recorded, and the residuals carry
    their dependence on the inputs, so every order of derivative works. Where the tape
    records the backward pass (``create_graph=True``) it differentiates the program again
    from the saved inputs, whose history the tape knows. A program whose rules keep user
    code's values runs under a VJP interpreter instead."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        """Residuals: the inputs, and either the compiled halves with the forward half's saved
        values, or (a program the halves cannot describe) the VJP interpreter's ``f_vjp``."""
        program = params["program"]
        split = _split_vjp(program, needs)
        if split is None:
            outs, f_vjp = vjp(_as_function(program), *primals)
            return outs, (primals, None, f_vjp)
        flat = _bind(compiled_call_p, *primals, name=f"{params['name']}_forward", program=split.forward)
        return tuple(flat[:split.n_out]), (primals, split, tuple(flat[split.n_out:]))

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        primals, split, saved = residuals
        program = params["program"]
        cts = _zeros_for(program.out_avals, g)
        if current_interpreter.get() is None and is_grad_enabled() and any(
                getattr(p, "_autograd", None) is not None for p in primals):
            # the tape records this backward pass (create_graph): the forward half ran with the
            # tape off, so its residuals have no history; differentiate from the inputs instead
            return tuple(vjp(_as_function(program), *primals)[1](cts))
        if split is None:
            return tuple(saved(cts))  # the VJP interpreter's f_vjp
        seeded = [c for c, s in zip(cts, split.seeded) if s]
        if not seeded:  # no output depends on an input: no cotangent reaches one
            return (None,) * len(split.reached)
        got = iter(_bind(compiled_call_p, *saved, *seeded, name=f"{params['name']}_backward",
                         program=split.backward))
        return tuple(next(got) if r else None for r in split.reached)




def _batch_rule(args: tuple[Any, ...], dims: tuple[Any, ...], *, name: str, program: Program,
                donated: tuple[int, ...] = ()) -> tuple[Any, Any]:
    """Another compiled call: the program traced under ``vmap`` once per batch layout, and
    optimised. (Donation is the caller's promise about its arrays; it is not carried over.)"""
    key = (dims, next(a.shape[d] for a, d in zip(args, dims) if d is not None))
    captured: list[Any] = []

    def batch() -> Program | None:
        traced, _ = make_program(vmap(_as_function(program), in_axes=dims), [aval_of(a) for a in args],
                                 _tree.structure(tuple(args)))
        # values an enclosing trace computed (vmap broadcasting a constant output, under an
        # outer fg.compile) are that trace's: inputs of this call, and the program is this call's own
        traced, lifted = lift_consts(traced, [isinstance(c, Tracer) for c in traced.consts])
        captured.extend(lifted)
        return optimize(traced)

    # (a program that reads an enclosing trace's values is this call's own: not kept)
    batched = program.derived("batched", key, batch, keep=lambda _: not captured)
    outs = _bind(compiled_call_p, *captured, *args, name=f"vmap({name})", program=batched)
    return outs, (0,) * len(outs)


compiled_call_p.jvp = _jvp_rule
compiled_call_p.vjp = _CompiledVJP()
compiled_call_p.batch = _batch_rule
