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

Memory is planned here (``_Buffers``): a result goes into a temporary nothing reads
again where the kernel takes ``out=``, and a run of large elementwise equations becomes
one loop over chunks whose intermediates live in a few scratch buffers (``_emit_group``).
Views whose indexing the shapes decide are worked out once (``_static_view``).

It computes exactly what evaluating the program would (the same kernels on the
same values in the same order). ``fg.memory``'s counters come out as eager
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
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import run_eager, wrap_kernel_output
from ..primitives.core import Layout
from ..primitives.shape import python_slice
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


def lower(program: Program, donated: frozenset[int] = frozenset(), fuse: bool = True) -> Lowered:
    """``program`` as one Python function over raw arrays (see the module docstring).
    ``donated``: the positions of inputs whose memory the function may write into once
    nothing reads them (the caller hands over arrays it owns alone)."""
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
    given = {id(v) for i, v in enumerate(program.invars) if i in donated}
    buffers = _buffers(program, outputs, given)
    results: set[int] = set(given)  # values this function may let go (inputs, but donated ones, and constants stay)
    counted: set[int] = set()  # the results of kernels (fg.memory counts them)
    live = peak = 0  # bytes the kernel results hold at this point of the function, and the most they hold
    pool: dict[Any, list[Var]] = {}  # dead temporaries by type, until a result reuses one or new memory is made

    lines.append("def lowered(inputs, stats):")
    lines.append("    stats.peak = max(stats.peak, stats.allocated + PEAK)")
    if program.invars:
        lines.append(f"    {', '.join(names[id(v)] for v in program.invars)}, = inputs")
    steps = [_step_fn(eqn) for eqn in program.eqns]
    groups = _elementwise_groups(program.eqns, steps) if fuse else {}
    skip_to = 0
    for i, eqn in enumerate(program.eqns):
        if i < skip_to:
            continue
        if i in groups:  # a run of elementwise equations: computed chunk by chunk, in one loop
            skip_to = groups[i]
            run = list(range(i, skip_to))
            for v in (v for kept in pool.values() for v in kept):  # new memory follows: the pool is freed first
                if id(v) in counted:
                    live -= _nbytes(v)
                lines.append(f"    del {names[id(v)]}")
            pool.clear()
            live, peak = _emit_group(program, run, steps, names, glob, lines, fresh, outputs, last_use, results,
                                     counted, live, peak)
            read = dict.fromkeys(a for k in run for a in program.eqns[k].inputs if isinstance(a, Var))
            for v in read:
                if id(v) in results and id(v) not in outputs and last_use.get(id(v), i) < skip_to and id(v) in names:
                    if (id(v) in counted or id(v) in given) and buffers.poolable(v, skip_to - 1):
                        pool.setdefault(v.aval, []).append(v)
                        continue
                    if id(v) in counted:
                        live -= _nbytes(v)
                    lines.append(f"    del {names[id(v)]}")
            continue
        fn_name = fresh("k")
        glob[fn_name] = step = steps[i]
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
        reused = buffers.reusable(i, eqn, step)
        pooled = None
        if reused is None and buffers.takes_out(eqn, step) and pool.get(eqn.outputs[0].aval):
            reused = pooled = pool[eqn.outputs[0].aval].pop()  # a temporary that died earlier, of this type
        elif reused is None and eqn.prim.view is None:  # new memory: what the pool holds is freed first
            for v in (v for kept in pool.values() for v in kept):
                if id(v) in counted:
                    live -= _nbytes(v)
                lines.append(f"    del {names[id(v)]}")
            pool.clear()
        if reused is not None:  # the kernel writes into a temporary nothing reads again
            args.append(f"out={names[id(reused)]}")
            if id(reused) in counted:  # (a donated input's bytes are the caller's)
                counted.discard(id(reused))
                counted.add(id(eqn.outputs[0]))
        target = ", ".join(outs) + ("," if eqn.prim.multiple_results else "") + " = " if outs else ""
        lines.append(f"    {target}{fn_name}({', '.join(args)})  # {eqn.prim.name}")
        if pooled is not None:  # its old name lets go: the result's name holds the buffer now
            lines.append(f"    del {names[id(pooled)]}")
        if eqn.prim.view is None and reused is None:  # a kernel made new memory
            for v in eqn.outputs:
                counted.add(id(v))
                live += _nbytes(v)
            peak = max(peak, live)
        read = dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var))
        dead = [v for v in (*eqn.outputs, *read)  # never read again (or never read at all)
                if id(v) in results and id(v) not in outputs and last_use.get(id(v), i) == i]
        for v in dead:
            if (id(v) in counted or id(v) in given) and buffers.poolable(v, i):  # kept for a later result
                pool.setdefault(v.aval, []).append(v)
                continue
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
    if groups and peak > _eager_peak(program):  # a fused loop's scratch must not raise the peak above eager's
        return lower(program, donated, fuse=False)
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


class _Buffers:
    """Which memory each value lives in, to let an elementwise kernel write its result into
    a temporary nothing reads again (NumPy's ``out=``): one this equation reads for the last
    time, or one that died earlier, kept in a pool by type until a result reuses it or new
    memory is made (which frees the pool first, so the peak never exceeds eager
    evaluation's). A fresh result each time would page-fault new memory in, which for large
    arrays costs more than the arithmetic. A kernel's result owns its buffer; a view shares
    its input's; inputs, constants and what is returned are never written."""

    def __init__(self, owner: dict[int, int | None], last_read: dict[int | None, int], returned: set[int | None]):
        self.owner, self.last_read, self.returned = owner, last_read, returned

    def takes_out(self, eqn: Any, step: Any) -> bool:
        """A ufunc called directly, of one result that ``out=`` can hold (a 0-d ufunc result
        is a NumPy scalar, which takes none)."""
        if len(eqn.outputs) != 1 or eqn.params or not isinstance(step, np.ufunc) or step.nout != 1:
            return False  # (NumPy's only: its ufuncs guard against an output overlapping an input)
        aval = eqn.outputs[0].aval
        return aval.dtype.name in ("float32", "float64", "int32", "int64") and bool(aval.shape)

    def reusable(self, i: int, eqn: Any, step: Any) -> Var | None:
        """The input whose buffer equation ``i`` may write its result into, or ``None``: only
        an elementwise kernel (a generalized one, like matmul, copies an input it overlaps)."""
        if not self.takes_out(eqn, step) or getattr(step, "signature", None) is not None:
            return None
        out = eqn.outputs[0]
        owners = [self.owner.get(id(a)) if isinstance(a, Var) else None for a in eqn.inputs]
        for a, buf in zip(eqn.inputs, owners):
            if (isinstance(a, Var) and buf == id(a) and a.aval == out.aval and buf not in self.returned
                    and self.last_read.get(buf) == i and owners.count(buf) == 1):
                return a
        return None

    def poolable(self, v: Var, i: int) -> bool:
        """``v`` owns its buffer, which nothing reads after equation ``i`` or returns."""
        buf = self.owner.get(id(v))
        return (buf == id(v) and buf not in self.returned and self.last_read.get(buf, i) <= i
                and v.aval.dtype.name in ("float32", "float64", "int32", "int64") and bool(v.aval.shape))


def _buffers(program: Program, outputs: set[int], given: set[int]) -> _Buffers:
    owner: dict[int, int | None] = {id(v): (id(v) if id(v) in given else None)
                                    for v in (*program.invars, *program.constvars)}
    last_read: dict[int | None, int] = {}
    for i, eqn in enumerate(program.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last_read[owner.get(id(a))] = i
        for v in eqn.outputs:
            if eqn.prim.view is not None:
                first = eqn.inputs[0]
                owner[id(v)] = owner.get(id(first)) if isinstance(first, Var) else None
            else:
                owner[id(v)] = id(v)
    returned = {owner.get(k) for k in outputs}
    return _Buffers(owner, last_read, returned)


FUSE_MIN = 1 << 15  # elements: smaller arrays stay in the caches anyway
CHUNK = 1 << 16  # elements per step of a fused loop (measured on GELU: smaller chunks cost more calls)


def _fusable(eqn: Any, step: Any) -> bool:
    """An elementwise NumPy ufunc of one large float result whose array inputs have its
    shape (or none: 0-d arrays and literals broadcast within a chunk)."""
    if len(eqn.outputs) != 1 or eqn.params or not isinstance(step, np.ufunc) or step.nout != 1 \
            or step.signature is not None:
        return False
    out = eqn.outputs[0].aval
    if out.dtype.name not in ("float32", "float64") or out.device.kind != "cpu" or math.prod(out.shape) < FUSE_MIN:
        return False
    return all(not isinstance(a, Var) or a.aval.shape in (out.shape, ()) for a in eqn.inputs)


def _elementwise_groups(eqns: list[Any], steps: list[Any]) -> dict[int, int]:
    """Runs of two or more consecutive fusable equations of one shape: start -> end."""
    groups, i = {}, 0
    while i < len(eqns):
        j = i
        while j < len(eqns) and _fusable(eqns[j], steps[j]) and eqns[j].outputs[0].aval.shape == \
                eqns[i].outputs[0].aval.shape:
            j += 1
        if j - i >= 2:
            groups[i] = j
        i = max(j, i + 1)
    return groups


def _emit_group(program: Program, run: list[int], steps: list[Any], names: dict[int, str], glob: dict[str, Any],
                lines: list[str], fresh: Any, outputs: set[int], last_use: dict[int, int], results: set[int],
                counted: set[int], live: int, peak: int) -> tuple[int, int]:
    """Equations ``run`` as one loop over chunks of the flattened arrays: each chunk's
    intermediates live in small scratch buffers (in the CPU's caches), and only the values
    read after the run are written out whole. The same ufuncs in the same order, so the
    results are those of the equations one by one."""
    eqns = [program.eqns[k] for k in run]
    first = eqns[0].outputs[0].aval
    n, end = math.prod(first.shape), run[-1]
    made = {id(e.outputs[0]) for e in eqns}
    kept = [e.outputs[0] for e in eqns if id(e.outputs[0]) in outputs or last_use.get(id(e.outputs[0]), -1) > end]
    glob.setdefault("EMPTY", np.empty)
    chunk_of: dict[int, str] = {}
    lines.append(f"    # fused: {' '.join(e.prim.name for e in eqns)}, in chunks of {CHUNK}")
    local: list[str] = []  # names that live only while the loop runs

    def name_for(prefix: str) -> str:
        name = fresh(prefix)
        names[-1 - len(names)] = name  # (taken, so ``fresh`` moves on)
        local.append(name)
        return name

    for v in kept:
        names[id(v)] = name = fresh("t")
        results.add(id(v))
        counted.add(id(v))
        live += _nbytes(v)
        flat = name_for("f")
        dtype = v.aval.dtype.np.name
        lines.append(f"    {name} = EMPTY({tuple(v.aval.shape)}, {dtype!r}); {flat} = {name}.reshape(-1)")
        chunk_of[id(v)] = f"{flat}[s:e]"
    scratch = 0
    free: dict[Any, list[str]] = {}  # scratch buffers whose value no later equation of the run reads, by dtype
    for k, e in zip(run, eqns):
        for a in dict.fromkeys(a for a in e.inputs if isinstance(a, Var) and id(a) in made):
            if id(a) not in outputs and last_use.get(id(a), -1) == k and not any(a is v for v in kept):
                free.setdefault(a.aval.dtype, []).append(chunk_of[id(a)].split("[")[0])  # (read here for the last time)
        v = e.outputs[0]
        if id(v) not in chunk_of:
            if free.get(v.aval.dtype):
                name = free[v.aval.dtype].pop()
            else:
                name = name_for("s")
                lines.append(f"    {name} = EMPTY({min(CHUNK, n)}, {v.aval.dtype.np.name!r})")
                scratch += min(CHUNK, n) * v.aval.dtype.itemsize
            chunk_of[id(v)] = f"{name}[:e - s]"
    peak = max(peak, live + scratch)
    outside = dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made)
    for a in outside:
        if a.aval.shape:
            flat = name_for("f")
            lines.append(f"    {flat} = {names[id(a)]}.reshape(-1)")
            chunk_of[id(a)] = f"{flat}[s:e]"
        else:
            chunk_of[id(a)] = names[id(a)]
    body = []
    for k, e in zip(run, eqns):
        fn = fresh("k")
        glob[fn] = steps[k]
        args = []
        for a in e.inputs:
            if isinstance(a, Var):
                args.append(chunk_of[id(a)])
            else:
                lit = fresh("c")
                glob[lit] = _literal(a.value, e)
                args.append(lit)
        body.append(f"{fn}({', '.join(args)}, out={chunk_of[id(e.outputs[0])]})  # {e.prim.name}")
    whole = n - n % CHUNK if n > CHUNK else 0  # full chunks use the scratch buffers whole: no slicing
    if whole:
        lines.append(f"    for s in range(0, {whole}, {CHUNK}):")
        lines.append(f"        e = s + {CHUNK}")
        lines.extend("        " + line.replace("[:e - s]", "") for line in body)
    if whole < n:
        lines.append(f"    s, e = {whole}, {n}")
        lines.extend("    " + line for line in body)
    lines.append(f"    del {', '.join(local)}")
    return live, peak


def _eager_peak(program: Program) -> int:
    """The most bytes kernel results hold at once when the equations run one by one, each
    result new and freed after its last use (what eager evaluation holds)."""
    last: dict[int, int] = {}
    for i, eqn in enumerate(program.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last[id(a)] = i
    keep = {id(v) for v in program.outvars if isinstance(v, Var)}
    live = peak = 0
    sizes: dict[int, int] = {}
    for i, eqn in enumerate(program.eqns):
        if eqn.prim.view is None:
            for v in eqn.outputs:
                sizes[id(v)] = _nbytes(v)
                live += sizes[id(v)]
        peak = max(peak, live)
        for a in dict.fromkeys(a for a in (*eqn.inputs, *eqn.outputs) if isinstance(a, Var)):
            if id(a) in sizes and id(a) not in keep and last.get(id(a), i) == i:
                live -= sizes.pop(id(a))
    return peak


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
    device = next((v.aval.device for v in (*eqn.outputs, *eqn.inputs) if isinstance(v, Var)), None)
    if prim.view is not None and device is not None and device.kind == "cpu" and isinstance(eqn.inputs[0], Var):
        fast = _static_view(prim.name, params, eqn.inputs[0].aval, eqn.outputs[0].aval)
        if fast is not None:
            return fast
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


def _static_view(name: str, params: dict[str, Any], x: Any, out: Any) -> Callable[..., Any] | None:
    """A view whose indexing the shapes decide, worked out once (the native calls check and
    build it on every call)."""
    if name == "slice":
        return operator.itemgetter(tuple(python_slice(*t) for t in params["index"]))
    if name == "flip":
        return operator.itemgetter(tuple(slice(None, None, -1) if a in params["axes"] else slice(None)
                                         for a in range(len(x.shape))))
    if name in ("expand_dims", "squeeze"):  # size-1 axes in or out: a reshape, always a view
        return operator.methodcaller("reshape", tuple(out.shape))
    return None


def _raw_view(prim: Any, params: dict[str, Any], backend: Any, x: Any) -> Any:
    """A view primitive without a ``native`` call: its layout rule over the array's flat memory."""
    flat, offset, strides = backend.flat_span(x)
    layout = prim.view(Layout(tuple(x.shape), strides, offset), **params)
    if layout is None:  # reshape of elements not in a viewable order: copy first, as eager does
        x = backend.xp.ascontiguousarray(x)
        flat, offset, strides = backend.flat_span(x)
        layout = prim.view(Layout(tuple(x.shape), strides, offset), **params)
    return backend.view(flat, layout.shape, layout.strides, layout.offset)
