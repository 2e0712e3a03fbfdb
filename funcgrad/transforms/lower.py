"""Lowering a ``Program`` to one Python function over raw backend arrays.

Evaluating a program equation by equation through ``bind`` costs a few
microseconds of Python per equation: interpreter lookup, argument checks, an
``Array`` built around every result. A lowered program skips all of it. The
program becomes the source of one function whose body is the equations in order,
each a direct call of its primitive's kernel (or, for a view primitive, its
``native`` view), with every intermediate a local variable deleted right after its
last use:

    def lowered(inputs, stats):
        a, b = inputs
        c = k0(a, b)                    # mul
        ...

It computes exactly what evaluating the program would (the same kernels on the
same arrays in the same order). ``fg.memory``'s counters come out as eager
evaluation would leave them, with no bookkeeping per step: every size is known
from the program, so the most bytes the kernel results ever hold at once is worked
out here, once, and the function raises the peak by it on entry. Nothing is added
to ``allocated``: each temporary is gone before the function returns, and the
caller's arrays count the outputs. (The counters are only ever updated where they
live, never copied into a local: the garbage collector may free other arrays, and
uncount them, while the program runs.)

The function is built with ``exec`` from generated text, which is what makes it
fast: locals and direct calls are the cheapest Python there is. Only names the
lowering made up appear in the text; kernels and constants are passed in as
globals, never formatted into it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import run_eager, wrap_kernel_output
from ..primitives.core import Layout
from .ir import Program, Var

__all__ = ["lower", "Lowered"]


class Lowered:
    """A lowered program. ``run(raw_inputs, stats)`` returns the raw outputs; ``source`` is its text."""

    def __init__(self, fn: Callable[..., Any], source: str, out_kinds: list[tuple[str, Any]]) -> None:
        self.fn = fn
        self.source = source
        # per output: ("input", i) / ("const", array) / ("literal", value) / ("new", None)
        self.out_kinds = out_kinds

    def run(self, raw_inputs: list[Any], stats: Any) -> list[Any]:
        return self.fn(raw_inputs, stats)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return self.source


def lower(program: Program) -> Lowered:
    """``program`` as one Python function over raw arrays (see the module docstring)."""
    names: dict[int, str] = {}
    glob: dict[str, Any] = {}
    lines: list[str] = []

    def fresh(prefix: str) -> str:
        return f"{prefix}{len(names) + len(glob)}"

    for v in program.invars:
        names[id(v)] = fresh("x")
    for v, c in zip(program.constvars, program.consts):
        name = fresh("c")
        names[id(v)] = name
        glob[name] = c._data

    # the last equation that reads each value: it is deleted (and uncounted) right after
    last_use: dict[int, int] = {}
    for i, eqn in enumerate(program.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last_use[id(a)] = i
    outputs = {id(v) for v in program.outvars if isinstance(v, Var)}
    results: set[int] = set()  # values equations made (inputs and constants are never deleted)
    counted: set[int] = set()  # the results of kernels (fg.memory counts them)
    live = peak = 0  # bytes the kernel results hold at this point of the function, and the most they hold

    lines.append("def lowered(inputs, stats):")
    lines.append("    stats.peak = max(stats.peak, stats.allocated + PEAK)")
    if program.invars:
        lines.append(f"    {', '.join(names[id(v)] for v in program.invars)}, = inputs")
    for i, eqn in enumerate(program.eqns):
        fn_name = fresh("k")
        glob[fn_name] = _step_fn(eqn)
        args = []
        for a in eqn.inputs:
            if isinstance(a, Var):
                args.append(names[id(a)])
            else:
                lit = fresh("c")
                glob[lit] = _literal(a.value, eqn)
                args.append(lit)
        outs = []
        for v in eqn.outputs:
            names[id(v)] = fresh("t")
            outs.append(names[id(v)])
            results.add(id(v))
        target = ", ".join(outs) + ("," if eqn.prim.multiple_results else "")
        lines.append(f"    {target} = {fn_name}({', '.join(args)})  # {eqn.prim.name}")
        if eqn.prim.view is None:  # a kernel made new memory
            for v in eqn.outputs:
                counted.add(id(v))
                live += _nbytes(v)
            peak = max(peak, live)
        read = dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var))
        dead = [v for v in (*eqn.outputs, *read)  # never read again (or never read at all)
                if id(v) in results and id(v) not in outputs and last_use.get(id(v), i) == i]
        for v in dead:
            if id(v) in counted:
                live -= _nbytes(v)
            lines.append(f"    del {names[id(v)]}")
    out_kinds: list[tuple[str, Any]] = []
    returned = []
    invar_index = {id(v): i for i, v in enumerate(program.invars)}
    const_of = {id(v): c for v, c in zip(program.constvars, program.consts)}
    for v in program.outvars:
        if not isinstance(v, Var):
            out_kinds.append(("literal", v.value))
            returned.append("None")
        elif id(v) in invar_index:
            out_kinds.append(("input", invar_index[id(v)]))
            returned.append("None")
        elif id(v) in const_of:
            out_kinds.append(("const", const_of[id(v)]))
            returned.append("None")
        else:
            out_kinds.append(("new", None))
            returned.append(names[id(v)])
    lines.append(f"    return [{', '.join(returned)}]")
    source = "\n".join(lines)
    namespace = dict(glob, PEAK=peak)
    exec(compile(source, "<funcgrad lowered program>", "exec"), namespace)  # noqa: S102 - generated above
    return Lowered(namespace["lowered"], source, out_kinds)


def wrap_outputs(lowered: Lowered, raw: list[Any], inputs: list[Any], device: Any) -> list[Any]:
    """The lowered program's outputs as arrays (inputs and constants come back as themselves)."""
    result = []
    for (kind, what), r in zip(lowered.out_kinds, raw):
        if kind == "new":
            result.append(wrap_kernel_output(r, device))
        elif kind == "input":
            result.append(inputs[what])
        else:
            result.append(what)
    return result


def _nbytes(v: Var) -> int:
    return math.prod(v.aval.shape) * v.aval.dtype.itemsize


def _literal(value: Any, eqn: Any) -> Any:
    """An inline scalar, as the eager path passes it (bfloat16 needs it typed: see core._exact_scalars)."""
    if isinstance(value, float):
        for a in eqn.inputs:
            if isinstance(a, Var) and a.aval.dtype.name == "bfloat16":
                return np.asarray(value, a.aval.dtype.np)
    return value


def _step_fn(eqn: Any) -> Callable[..., Any]:
    """The raw-array function of one equation."""
    prim, params = eqn.prim, eqn.params
    device = eqn.outputs[0].aval.device
    if prim.view is not None:
        native = prim.native_for(device)
        if native is not None:
            return functools.partial(native, **params) if params else native
        return functools.partial(_raw_view, prim, params, device.backend)
    if prim.impl is None and not prim.multiple_results:
        kernel = prim.kernel_for(device)
        return functools.partial(kernel, **params) if params else kernel
    is_array = [isinstance(a, Var) for a in eqn.inputs]

    def through_arrays(*raw: Any) -> Any:  # call-like or multiple-result primitives: the eager path itself
        args = [wrap_kernel_output(r, device) if arr else r for r, arr in zip(raw, is_array)]
        out = run_eager(prim, tuple(args), params)
        return tuple(o._data for o in out) if prim.multiple_results else out._data

    return through_arrays


def _raw_view(prim: Any, params: dict[str, Any], backend: Any, x: Any) -> Any:
    """A view primitive without a ``native`` call: its layout rule over the array's flat memory."""
    flat, offset, strides = backend.flat_span(x)
    layout = prim.view(Layout(tuple(x.shape), strides, offset), **params)
    if layout is None:  # reshape of elements not in a viewable order: copy first, as eager does
        x = backend.xp.ascontiguousarray(x)
        flat, offset, strides = backend.flat_span(x)
        layout = prim.view(Layout(tuple(x.shape), strides, offset), **params)
    return backend.view(flat, layout.shape, layout.strides, layout.offset)
