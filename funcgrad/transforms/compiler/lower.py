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
Views whose indexing the shapes decide are worked out once (``Primitive.static_view``).

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
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from ...array import run_eager, wrap_kernel_output
from ...backends.cc import caller
from ...config import config
from ...errors import WriteGuardError
from ...primitives.core import FRESH, OPERAND, Layout
from ..ir import Program, Var
from ..observe import observer
from . import native, native_program

__all__ = ["lower", "LoweredFunction"]


class _Call(NamedTuple):
    """One kernel call (or fused loop) of a lowered program's body: ``target = fn(args)``.
    The body is written from these, plain (``# label`` after each call) or with every call
    made through ``OBSERVED(label, fn, *args)`` (the profiler's and the write guard's
    variants), so each variant is the same text but for the calls."""

    target: str  # "t5 = " (or "" for a call whose results it writes in place)
    fn: str
    args: str
    label: str  # the primitive's name, or the fused loop's

    def render(self, observed: bool, full_labels: bool) -> str:
        plain = f"    {self.target}{self.fn}({self.args})"
        if not observed:
            return f"{plain}  # {self.label}"
        label = f"{plain.strip()}  # {self.label}" if full_labels else self.label
        return f"    {self.target}OBSERVED({label!r}, {self.fn}{', ' if self.args else ''}{self.args})"


_HEADER = "def lowered(inputs, stats):"
_OBSERVED_HEADER = "def lowered(inputs, stats, OBSERVED):"  # (each call made through OBSERVED)


def _render(lines: list[Any], observed: bool = False, full_labels: bool = False) -> str:
    return "\n".join(line.render(observed, full_labels) if isinstance(line, _Call) else line for line in lines)


class LoweredFunction:
    """A lowered program. ``run(raw_inputs, stats)`` returns the raw outputs; ``source`` is its
    text; ``name`` says what it is in errors (``fg.compile``'s function, a scan's body...)."""

    def __init__(self, fn: Callable[..., Any], lines: list[Any], out_kinds: list[tuple[str, Any]],
                 namespace: dict[str, Any] | None = None, donated: frozenset[int] = frozenset(),
                 name: str = "a lowered program") -> None:
        self.fn = fn
        self._lines = lines
        self.source = _render(lines)
        # per output: ("input", i) / ("const", array) / ("literal", value) / ("new", None)
        self.out_kinds = out_kinds
        self.all_new = all(kind == "new" for kind, _ in out_kinds)
        self.donated = donated
        self.name = name
        self._namespace = namespace
        self._observed: Callable[..., Any] | None = None
        self.native: native_program.NativeProgram | None = None  # (the one native function it calls, if so)

    def run(self, raw_inputs: list[Any], stats: Any) -> list[Any]:
        if config.write_guard:
            return self._guarded(raw_inputs, stats)
        watching = observer.get()
        if watching is None:
            return self.fn(raw_inputs, stats)  # type: ignore[no-any-return]
        return self.observed()(raw_inputs, stats, watching.kernel)  # type: ignore[no-any-return]

    def runner(self) -> Callable[[list[Any], Any], list[Any]]:
        """``run`` as it stands now (the write guard and the observer looked up once): for a
        caller that runs the program many times in a row, a scan's steps."""
        if config.write_guard or observer.get() is not None:
            return self.run
        return self.fn

    def observed(self) -> Callable[..., Any]:
        """The same function with every kernel call made through its third argument,
        ``call(label, kernel, *args, **kwargs)`` (written once, the first time an observer
        runs this program)."""
        if self._observed is None:
            self._observed = self._written(full_labels=False)
        return self._observed

    def _written(self, full_labels: bool) -> Callable[..., Any]:
        """The function written with every call through ``OBSERVED``; each call's label is the
        primitive's name (or the fused loop's), or with ``full_labels`` its whole line."""
        lines = [_OBSERVED_HEADER if line == _HEADER else line for line in self._lines]
        namespace = dict(self._namespace or {})
        source = _render(lines, observed=True, full_labels=full_labels)
        exec(compile(source, "<funcgrad lowered program, observed>", "exec"), namespace)  # noqa: S102
        return namespace["lowered"]  # type: ignore[no-any-return]

    def _guarded(self, raw_inputs: list[Any], stats: Any) -> list[Any]:
        """``run`` under ``fg.config.write_guard``: the non-donated inputs and the constants
        compared before and after; on a change they are restored, the program runs again
        checking after every kernel call, and ``WriteGuardError`` names the first that wrote."""
        watched = [(f"input {i}", x) for i, x in enumerate(raw_inputs) if i not in self.donated and _is_raw(x)]
        watched += [(f"constant {k}", c) for k, c in (self._namespace or {}).items() if _is_raw(c)]
        before = [_snapshot(x) for _, x in watched]
        watching = observer.get()
        outs = self.fn(raw_inputs, stats) if watching is None else self.observed()(raw_inputs, stats, watching.kernel)
        changed = [what for (what, x), b in zip(watched, before) if _snapshot(x).tobytes() != b.tobytes()]
        if not changed:
            return outs  # type: ignore[no-any-return]
        del outs
        def restore() -> None:
            for (_, x), b in zip(watched, before):
                _restore(x, b)

        restore()
        culprit: list[str] = []

        def checked(label: str, kernel: Any, *args: Any, **kwargs: Any) -> Any:
            result = kernel(*args, **kwargs)
            if not culprit and any(_snapshot(x).tobytes() != b.tobytes() for (_, x), b in zip(watched, before)):
                culprit.append(label)
            return result

        self._written(full_labels=True)(raw_inputs, stats, checked)
        restore()
        where = f" at `{culprit[0]}`" if culprit else ""
        raise WriteGuardError(f"{self.name} wrote into {', '.join(changed)}{where}, memory it does not own "
                              f"(fg.config.write_guard; the arrays are restored). The program:\n{self.source}")

    def __repr__(self) -> str:
        return self.source


def _is_raw(x: Any) -> bool:
    """A backend array (NumPy's or CuPy's), as the lowered code holds them."""
    return isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__")


def _snapshot(x: Any) -> np.ndarray:
    """A host copy of a backend array's values."""
    return np.array(x.get() if hasattr(x, "__cuda_array_interface__") else x, copy=True)


def _restore(x: Any, saved: np.ndarray) -> None:
    if _snapshot(x).tobytes() != saved.tobytes():
        x[...] = saved if isinstance(x, np.ndarray) else type(x)(saved)  # (a CuPy array from the host copy)


class _Writer:
    """A lowered function's text as it is written, and what the writing knows: each value's
    name, the objects passed in as globals, and the bytes the kernel results hold (``live``,
    at most ``peak``), with the dead temporaries kept for reuse (``pool``)."""

    def __init__(self, program: Program, donated: frozenset[int], threads: int) -> None:
        self.threads = threads
        self.names: dict[int, str] = {}
        self.glob: dict[str, Any] = {"EMPTY": np.empty}
        self.lines: list[Any] = []  # the body of ``lowered``: lines of text and calls (``_Call``)
        self.functions: list[str] = []  # the fused loops it calls, defined before it
        self.count = 0
        self.last_use: dict[int, int] = {}  # the last equation that reads each value
        for i, eqn in enumerate(program.eqns):
            for a in eqn.inputs:
                if isinstance(a, Var):
                    self.last_use[id(a)] = i
        self.outputs = {id(v) for v in program.outvars if isinstance(v, Var)}
        self.given = {id(v) for i, v in enumerate(program.invars) if i in donated}
        self.buffers = _buffers(program, self.outputs, self.given)
        self.results: set[int] = set(self.given)  # values the function may let go (inputs but donated ones stay)
        self.counted: set[int] = set()  # the results of kernels (fg.memory counts them)
        self.live = self.peak = 0
        self.pool: dict[Any, list[Var]] = {}  # dead temporaries by type, until reused or new memory is made

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def name(self, v: Var, prefix: str = "t") -> str:
        self.names[id(v)] = name = self.fresh(prefix)
        return name

    def global_(self, value: Any, prefix: str) -> str:
        name = self.fresh(prefix)
        self.glob[name] = value
        return name

    def args(self, eqn: Any, ref: Callable[[Var], str]) -> list[str]:
        return [ref(a) if isinstance(a, Var) else self.global_(_literal(a.value, eqn), "c") for a in eqn.inputs]

    def allocate(self, vs: Any) -> None:
        for v in vs:
            self.counted.add(id(v))
            self.live += _nbytes(v)
        self.peak = max(self.peak, self.live)

    def free_pool(self) -> None:
        """Before new memory is made: what the pool holds goes (so the peak is eager's at most)."""
        for v in (v for kept in self.pool.values() for v in kept):
            self.release(v)
        self.pool.clear()

    def release(self, v: Var) -> None:
        if id(v) in self.counted:
            self.live -= _nbytes(v)
        self.lines.append(f"    del {self.names[id(v)]}")

    def hand_over(self, old: Var, new: Var) -> None:
        """``new`` takes ``old``'s buffer: its bytes are counted under the new value (a
        donated input's stay the caller's)."""
        if id(old) in self.counted:
            self.counted.discard(id(old))
            self.counted.add(id(new))

    def let_go(self, v: Var, i: int) -> None:
        """``v`` is read no more after equation ``i``: kept for a later result of its type, or deleted."""
        if id(v) not in self.results or id(v) in self.outputs:
            return
        if (id(v) in self.counted or id(v) in self.given) and self.buffers.poolable(v, i):
            self.pool.setdefault(v.aval, []).append(v)
        else:
            self.release(v)


def lower(program: Program, donated: frozenset[int] = frozenset(), threads: int | None = None,
          name: str = "a lowered program") -> LoweredFunction:
    """``program`` as one Python function over raw arrays (see the module docstring).
    ``donated``: the positions of inputs whose memory the function may write into once
    nothing reads them (the caller hands over arrays it owns alone). ``threads``: how many
    threads a fused loop may use (``config.compile_threads`` unless given; 0 fuses nothing).
    Where fused loops' scratch buffers would pass eager evaluation's peak, it lowers again
    with fewer threads, then with none. ``name``: what it is, in errors."""
    threads = config.compile_threads if threads is None else threads
    if threads and native.use_native():  # (sums that can end a native loop, moved up to it)
        eqns = native.schedule(native.split_biases(program.eqns))
        if eqns != program.eqns:
            program = Program(program.invars, program.constvars, program.consts, eqns, program.outvars,
                              program.in_tree, program.out_tree)
    w = _Writer(program, donated, threads)
    if threads and native.use_native():
        whole = native_program.plan(program, threads, lambda eqns, end: _kept(w, eqns, end))
        if whole is not None and whole.peak <= _eager_peak(program, w.last_use, w.outputs):  # (see the docstring)
            return _lower_native_program(w, program, whole, donated, name)
    for v in program.invars:
        w.name(v, "x")
    for v, c in zip(program.constvars, program.consts):
        w.names[id(v)] = w.global_(c._data, "c")
    w.lines.append(_HEADER)
    w.lines.append("    if stats.allocated + PEAK > stats.peak:")
    w.lines.append("        stats.peak = stats.allocated + PEAK")
    if program.invars:
        w.lines.append(f"    {', '.join(w.names[id(v)] for v in program.invars)}, = inputs")
    steps = [_step_fn(eqn) for eqn in program.eqns]
    native_groups = _native_groups(w, program) if threads and native.use_native() else {}
    native_eqns = {k for i, g in native_groups.items() for k in range(i, i + len(g.eqns))}
    groups = {i: j for i, j in (_elementwise_groups(program.eqns, steps, w) if threads else {}).items()
              if native_eqns.isdisjoint(range(i, j))}  # (NumPy's chunked loops where no native one is)
    groups.update((i, i + len(g.eqns)) for i, g in native_groups.items())
    skip_to = 0
    for i, eqn in enumerate(program.eqns):
        if i < skip_to:
            continue
        if i in groups:  # a run of elementwise equations: computed chunk by chunk, in one loop
            if i in native_groups:
                skip_to = i + len(native_groups[i].eqns)
                _write_native_group(w, native_groups[i])
            else:
                skip_to = groups[i]
                w.free_pool()
                if eqn.outputs[0].aval.device.kind == "gpu":
                    _write_gpu_group(w, program, list(range(i, skip_to)))
                else:
                    _write_group(w, program, list(range(i, skip_to)), steps)
            read = dict.fromkeys(a for k in range(i, skip_to) for a in program.eqns[k].inputs if isinstance(a, Var))
            for v in read:
                if w.last_use.get(id(v), i) < skip_to and id(v) in w.names:
                    w.let_go(v, skip_to - 1)
            continue
        step = steps[i]
        fn_name = w.global_(step, "k")
        args = w.args(eqn, lambda a: w.names[id(a)])
        outs = [w.name(v) for v in eqn.outputs]
        w.results.update(id(v) for v in eqn.outputs)
        reused = w.buffers.reusable(i, eqn, step)
        pooled = None
        if reused is None and w.buffers.takes_out(eqn, step) and w.pool.get(eqn.outputs[0].aval):
            reused = pooled = w.pool[eqn.outputs[0].aval].pop()  # a temporary that died earlier, of this type
        elif reused is None and eqn.prim.view is None:
            w.free_pool()
        if reused is not None:  # the kernel writes into a temporary nothing reads again
            args.append(f"out={w.names[id(reused)]}")
            w.hand_over(reused, eqn.outputs[0])
        target = ", ".join(outs) + ("," if eqn.prim.multiple_results else "") + " = " if outs else ""
        w.lines.append(_Call(target, fn_name, ", ".join(args), eqn.prim.name))
        if pooled is not None:  # its old name lets go: the result's name holds the buffer now
            w.lines.append(f"    del {w.names[id(pooled)]}")
        if eqn.prim.view is None and reused is None:  # a kernel made new memory
            w.allocate(eqn.outputs)
        read = dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var))
        for v in (*eqn.outputs, *read):  # never read again (or never read at all)
            if w.last_use.get(id(v), i) == i:
                w.let_go(v, i)
    out_kinds, returned = _returned(w, program)
    w.lines.append(f"    return [{', '.join(returned)}]")
    if groups and w.peak > _eager_peak(program, w.last_use, w.outputs):  # fused scratch must not pass eager's peak
        return lower(program, donated, 1 if threads > 1 else 0, name)
    lines = w.functions + w.lines
    namespace = dict(w.glob, PEAK=w.peak)
    exec(compile(_render(lines), "<funcgrad lowered program>", "exec"), namespace)  # noqa: S102 - generated above
    return LoweredFunction(namespace["lowered"], lines, out_kinds, dict(w.glob, PEAK=w.peak), donated, name)


def _returned(w: _Writer, program: Program) -> tuple[list[tuple[str, Any]], list[str]]:
    """What each output is (``LoweredFunction.out_kinds``) and the names the function returns."""
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
            returned.append(w.names[id(v)])
    return out_kinds, returned


def _lower_native_program(w: _Writer, program: Program, whole: native_program.NativeProgram,
                          donated: frozenset[int], name: str) -> LoweredFunction:
    """The program as one call of its native function (``native_program``): the outputs and
    the arena made, the function called, the outputs returned. Its values never hold more
    bytes at once than eager evaluation's would (``plan`` is taken only then); the outputs
    are made before the call, so the peak it reports (``holds``: the arena and the outputs)
    may pass eager's by the outputs' bytes at most."""
    for v in whole.inputs:
        w.name(v, "x")
    for v, c in zip(program.constvars, program.consts):
        w.names[id(v)] = w.global_(c._data, "c")
    w.lines += [_HEADER, "    if stats.allocated + PEAK > stats.peak:", "        stats.peak = stats.allocated + PEAK"]
    if program.invars:
        w.lines.append(f"    {', '.join(w.names[id(v)] for v in program.invars)}, = inputs")
    for v in whole.outputs:
        w.lines.append(f"    {w.name(v)} = EMPTY({tuple(v.aval.shape)}, {v.aval.dtype.np.name!r})")
    w.lines.append(f"    # {whole.label}")
    w.lines.extend(f"    # native loop: {label}" for label in whole.loops)
    w.lines.extend(f"    #   {line}" for line in whole.source.splitlines())
    call, kernel, meta = w.global_(caller(), "CALL"), w.global_(whole.kernel, "K"), w.global_(whole.meta, "M")
    operands = [w.names[id(v)] for v in (*whole.inputs, *whole.outputs)]
    w.lines.append(_Call("", call, f"1, {kernel}, {meta}, 0, 1, {', '.join(operands)}, EMPTY({whole.arena}, 'uint8')",
                         whole.label))
    out_kinds, returned = _returned(w, program)
    w.lines.append(f"    return [{', '.join(returned)}]")
    namespace = dict(w.glob, PEAK=whole.holds)
    exec(compile(_render(w.lines), "<funcgrad lowered program>", "exec"), namespace)  # noqa: S102 - generated above
    lowered = LoweredFunction(namespace["lowered"], w.lines, out_kinds, dict(w.glob, PEAK=whole.holds), donated, name)
    lowered.native = whole
    return lowered


def wrap_outputs(lowered: LoweredFunction, raw: list[Any], inputs: list[Any], device: Any) -> list[Any]:
    """The lowered program's outputs as arrays (inputs and constants come back as themselves)."""
    if lowered.all_new:  # (the common case: every output new memory)
        return [wrap_kernel_output(r, device) for r in raw]
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
    """Which memory each value may live in, to let an elementwise kernel write its result
    into a temporary nothing reads again (NumPy's ``out=``): one this equation reads for the
    last time, or one that died earlier, kept in a pool by type until a result reuses it or
    new memory is made (which frees the pool first, so the peak never exceeds eager
    evaluation's). A fresh result each time would page-fault new memory in, which for large
    arrays costs more than the arithmetic.

    A value's buffers follow its primitive's ``aliases``: a kernel's result owns new memory,
    a view shares its operand's, and a call-like primitive's result may be any of its
    inputs (or a constant of its sub-programs, or memory it keeps: ``None``). Only memory a
    value owns alone is ever written, and only once no value that may share it is read
    again or returned; inputs (unless donated) and constants are never written."""

    def __init__(self, owners: dict[int, frozenset[int | None]], last_read: dict[int | None, int],
                 returned: set[int | None]):
        self.owners, self.last_read, self.returned = owners, last_read, returned

    def owns(self, v: Var) -> bool:
        """``v`` alone holds memory the program made (or a donated input's)."""
        return self.owners.get(id(v)) == frozenset((id(v),))

    def takes_out(self, eqn: Any, step: Any) -> bool:
        """A ufunc called directly, of one result that ``out=`` can hold (a 0-d ufunc result
        is a NumPy scalar, which takes none), or a CPU kernel that updates an operand
        (``Primitive.updates``)."""
        if len(eqn.outputs) != 1:
            return False
        if eqn.prim.updates is not None:
            return eqn.outputs[0].aval.device.kind == "cpu" and _plannable(eqn.outputs[0].aval)
        if eqn.params or not isinstance(step, np.ufunc) or step.nout != 1:
            return False  # (NumPy's only: its ufuncs guard against an output overlapping an input)
        return _plannable(eqn.outputs[0].aval)

    def reusable(self, i: int, eqn: Any, step: Any) -> Var | None:
        """The input whose buffer equation ``i`` may write its result into, or ``None``: only
        an elementwise kernel (a generalized one, like matmul, copies an input it overlaps),
        or the operand an updating kernel changes (never the values it reads)."""
        if not self.takes_out(eqn, step) or getattr(step, "signature", None) is not None:
            return None
        out = eqn.outputs[0]
        shared = [b for a in eqn.inputs if isinstance(a, Var) for b in self.owners.get(id(a), (None,))]
        for a in eqn.inputs if eqn.prim.updates is None else [eqn.inputs[eqn.prim.updates]]:
            if (isinstance(a, Var) and self.owns(a) and a.aval == out.aval and id(a) not in self.returned
                    and self.last_read.get(id(a)) == i and shared.count(id(a)) == 1):
                return a
        return None

    def poolable(self, v: Var, i: int) -> bool:
        """``v`` owns its buffer, which nothing reads after equation ``i`` or returns."""
        return self.owns(v) and id(v) not in self.returned and self.last_read.get(id(v), i) <= i \
            and _plannable(v.aval)


def _plannable(aval: Any) -> bool:
    """A value whose memory the planning may reuse: an array (not 0-d) of a dtype whose
    ufuncs take ``out=`` plainly."""
    return aval.dtype.name in ("float32", "float64", "int32", "int64") and bool(aval.shape)


_NOT_OURS: frozenset[int | None] = frozenset((None,))  # memory the program did not make: never written


def _buffers(program: Program, outputs: set[int], given: set[int]) -> _Buffers:
    owners: dict[int, frozenset[int | None]] = {
        id(v): (frozenset((id(v),)) if id(v) in given else _NOT_OURS) for v in (*program.invars, *program.constvars)}
    last_read: dict[int | None, int] = {}
    for i, eqn in enumerate(program.eqns):
        read = [owners.get(id(a), _NOT_OURS) for a in eqn.inputs if isinstance(a, Var)]
        for buffers in read:
            for b in buffers:
                last_read[b] = i
        aliases = eqn.prim.aliases
        for v in eqn.outputs:
            if aliases == FRESH:
                owners[id(v)] = frozenset((id(v),))
            elif aliases == OPERAND:
                first = eqn.inputs[0]
                owners[id(v)] = owners.get(id(first), _NOT_OURS) if isinstance(first, Var) else _NOT_OURS
            else:  # any input, or memory neither the program nor the caller made
                owners[id(v)] = frozenset((id(v), None)).union(*read)
    returned = {b for k in outputs for b in owners.get(k, _NOT_OURS)}
    return _Buffers(owners, last_read, returned)


FUSE_MIN = 1 << 15  # elements: smaller arrays stay in the caches anyway
CHUNK = 1 << 16  # elements per step of a fused loop (smaller chunks cost more calls)
# On several threads a loop takes bigger steps: every ufunc call hands the GIL over, and a
# handover can cost more than the call (docs/performance.md, "Compiled", has the measurements).
PARALLEL_CHUNK = 1 << 18
PARALLEL_MIN = 1 << 18  # elements per thread, at least


_POOL: list[ThreadPoolExecutor] = []  # made on first use; a forked child makes its own


def in_parallel(threads: int, loop: Callable[..., None], n: int, *arrays: Any, align: int = 4096) -> None:
    """``loop(lo, hi, *arrays)`` over ``threads`` pieces of ``range(n)`` at once, of nearly
    equal lengths that start on multiples of ``align``, the first piece on this thread.
    The loops release the GIL (NumPy's ufuncs and native loops alike), so the pieces run on
    separate cores; each worker runs under this thread's floating-point error settings
    (``np.errstate`` is per thread)."""
    if not _POOL or _POOL[0]._max_workers < threads - 1:
        _POOL[:] = [ThreadPoolExecutor(threads - 1, thread_name_prefix="funcgrad-compiled")]
    starts = [round(n * i / threads / align) * align for i in range(threads)]
    bounds = [(lo, hi) for lo, hi in zip(starts, [*starts[1:], n]) if hi > lo]
    errors = np.geterr()
    pending = [_POOL[0].submit(_under_errstate, errors, loop, lo, hi, arrays) for lo, hi in bounds[1:]]  # type: ignore[arg-type]
    try:
        loop(*bounds[0], *arrays)
    finally:
        for job in pending:
            job.result()


def _under_errstate(errors: dict[str, str], loop: Callable[..., None], lo: int, hi: int, arrays: Any) -> None:
    with np.errstate(**errors):  # type: ignore[arg-type]
        loop(lo, hi, *arrays)


os.register_at_fork(after_in_child=_POOL.clear)


def _fusable(eqn: Any, step: Any) -> bool:
    """An elementwise equation of one float result whose array inputs have its shape (or
    none: 0-d arrays and literals broadcast): on the CPU a large NumPy ufunc, on a GPU any
    primitive with a C expression (a kernel launch costs more than small arithmetic)."""
    if len(eqn.outputs) != 1 or eqn.params:
        return False
    out = eqn.outputs[0].aval
    if out.dtype.name not in ("float32", "float64") or \
            not all(not isinstance(a, Var) or a.aval.shape in (out.shape, ()) for a in eqn.inputs):
        return False
    if out.device.kind == "gpu":  # (operands of the result's dtype: CUDA's kernels are written for one type)
        return eqn.prim.c_expr is not None and all(not isinstance(a, Var) or a.aval.dtype == out.dtype
                                                   for a in eqn.inputs)
    return out.device.kind == "cpu" and math.prod(out.shape) >= FUSE_MIN and isinstance(step, np.ufunc) \
        and step.nout == 1 and step.signature is None


def _elementwise_groups(eqns: list[Any], steps: list[Any], w: _Writer) -> dict[int, int]:
    """Runs of two or more consecutive fusable equations of one shape and device: start -> end.
    On a GPU a run may end in the sum of its last value (``_sums_on_gpu``)."""
    groups, i = {}, 0
    while i < len(eqns):
        j = i
        while j < len(eqns) and _fusable(eqns[j], steps[j]) and eqns[j].outputs[0].aval.shape == \
                eqns[i].outputs[0].aval.shape and eqns[j].outputs[0].aval.device is eqns[i].outputs[0].aval.device:
            j += 1
        if i < j < len(eqns) and _sums_on_gpu(eqns[i:j + 1], w, j):
            groups[i] = j + 1
        elif j - i >= 2:
            groups[i] = j
        i = max(groups.get(i, j), i + 1)
    return groups


def _sums_on_gpu(run: list[Any], w: _Writer, end: int) -> bool:
    """A GPU run followed by the sum of its last value, which nothing else reads, and of
    which nothing else is read later: one CuPy ``ReductionKernel`` computes the sum without
    writing the run's values anywhere."""
    total, last = run[-1], run[-2].outputs[0]
    return "sum" in total.prim.tags and last.aval.device.kind == "gpu" and total.inputs[0] is last and \
        not _kept(w, run[:-1], end)


def _kept(w: _Writer, eqns: list[Any], end: int) -> list[Var]:
    """The results of a fused run that are returned or read after it: the rest never leave it."""
    return [e.outputs[0] for e in eqns if id(e.outputs[0]) in w.outputs or w.last_use.get(id(e.outputs[0]), -1) > end]


# C that CUDA lacks, for the fused kernels' ``fg_`` calls (``elementwise.C_EXPR``): max and
# min return a NaN operand, as NumPy's do; relu keeps NaN.
CUDA_HELPERS = """
template <typename A, typename B> __device__ auto fg_where(bool c, A a, B b) -> decltype(a + b) { return c ? a : b; }
template <typename T> __device__ T fg_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ T fg_min(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> __device__ T fg_relu(T x) { return (x > T(0) || x != x) ? x : T(0); }
template <typename T> __device__ T fg_sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <typename T> __device__ T fg_reciprocal(T x) { return T(1) / x; }
template <typename T> __device__ T fg_tanh(T x) { return tanh(x); }
template <typename T> __device__ T fg_exp(T x) { return exp(x); }
template <typename T> __device__ T fg_gelu(T x) { return T(0.5) * x * erfc(-x * T(0.70710678118654752440)); }
template <typename T> __device__ T fg_gelu_grad(T x) {
    return T(0.5) * erfc(-x * T(0.70710678118654752440))
        + x * (exp(T(-0.5) * (x * x)) * T(0.39894228040143267794));
}
"""
_C_TYPES = {"float32": "float", "float64": "double"}


def _write_gpu_group(w: _Writer, program: Program, run: list[int]) -> None:
    """Equations ``run`` as one CuPy ``ElementwiseKernel``: a C statement each, every
    intermediate a register, and only the values read after the run written to memory.
    The kernel's source is written into the lowered text as comments."""
    eqns = [program.eqns[k] for k in run]
    total = eqns.pop() if "sum" in eqns[-1].prim.tags else None  # (a sum ending the run: _sums_on_gpu)
    kept = _kept(w, eqns, run[-1])
    made = {id(e.outputs[0]) for e in eqns}
    params: list[str] = []  # the kernel's inputs, C names and types
    passed: list[str] = []  # what the lowered function passes them
    c_of: dict[int, str] = {}
    for a in dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made):
        c_of[id(a)] = f"x{len(params)}"
        params.append(f"{a.aval.dtype.name} {c_of[id(a)]}")
        passed.append(w.names[id(a)])
    body: list[Any] = []
    for e in eqns:
        out = e.outputs[0]
        args = []
        for a in e.inputs:
            if not isinstance(a, Var):  # a literal: a scalar argument of the kernel, in the result's type
                args.append(f"c{len(params)}")
                params.append(f"{out.aval.dtype.name} {args[-1]}")
                passed.append(w.global_(out.aval.dtype.np.type(a.value), "c"))
            else:
                args.append(c_of[id(a)])
        c_of[id(out)] = f"v{len(body)}"
        body.append(f"{_C_TYPES[out.aval.dtype.name]} {c_of[id(out)]} = {e.prim.c_expr.format(*args)};")
    if total is not None:
        _write_gpu_sum(w, eqns, total, params, passed, body, c_of)
        return
    results = [f"y{j}" for j in range(len(kept))]
    body += [f"{y} = {c_of[id(v)]};" for y, v in zip(results, kept)]
    backend = eqns[0].outputs[0].aval.device.backend
    kernel = backend.xp.ElementwiseKernel(", ".join(params), ", ".join(f"{v.aval.dtype.name} {y}" for v, y in
                                                                         zip(kept, results)),
                                          "\n".join(body), f"funcgrad_fused_{w.count}", preamble=CUDA_HELPERS)
    names = [w.name(v) for v in kept]
    w.results.update(id(v) for v in kept)
    w.allocate(kept)
    fused = " ".join(e.prim.name for e in eqns)
    w.lines.append(f"    # fused into one GPU kernel: {fused}")
    w.lines.extend(f"    #   {line}" for line in body)
    w.lines.append(_Call(f"{', '.join(names)}{',' if len(names) > 1 else ''} = ", w.global_(kernel, "K"),
                         ", ".join(passed), f"fused: {fused}"))


def _write_gpu_sum(w: _Writer, eqns: list[Any], total: Any, params: list[str], passed: list[str],
                   body: list[str], c_of: dict[int, str]) -> None:
    """A GPU run and the sum of its last value as one CuPy ``ReductionKernel``: the run's
    statements are a device function of one element (``map_expr``), summed over the sum's
    axes; the run's values are never written out."""
    out = total.outputs[0]
    ctype = _C_TYPES[out.aval.dtype.name]
    name = f"funcgrad_fused_sum_{w.count}"
    arguments = [p.split()[1] for p in params]
    declared = ", ".join(f"{_C_TYPES[kind]} {arg}" for kind, arg in (p.split() for p in params))
    function = [f"__device__ {ctype} {name}_map({declared}) {{", *(f"    {line}" for line in body),
                f"    return {c_of[id(eqns[-1].outputs[0])]};", "}"]
    backend = out.aval.device.backend
    kernel = backend.xp.ReductionKernel(", ".join(params), f"{out.aval.dtype.name} y0",
                                        f"{name}_map({', '.join(arguments)})", "a + b", "y0 = a", "0", name,
                                        preamble=CUDA_HELPERS + "\n".join(function))
    result = w.name(out)
    w.results.add(id(out))
    w.allocate([out])
    fused = " ".join(e.prim.name for e in [*eqns, total])
    w.lines.append(f"    # fused into one GPU reduction kernel: {fused}")
    w.lines.extend(f"    #   {line}" for line in function)
    axes, keepdims = tuple(total.params["axes"]), bool(total.params["keepdims"])
    w.lines.append(_Call(f"{result} = ", w.global_(kernel, "K"),
                         f"{', '.join(passed)}, axis={axes!r}, keepdims={keepdims}", f"fused: {fused}"))


def _native_groups(w: _Writer, program: Program) -> dict[int, native.NativeGroup]:
    """The program's native loops, built (an empty dict when they cannot be: NumPy then)."""
    found: dict[int, native.NativeGroup] = {}
    made = {id(v): i for i, e in enumerate(program.eqns) for v in e.outputs}
    for start, end in native.groups(program.eqns).items():
        eqns = program.eqns[start:end]
        inputs = list(dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var)))
        dying = sorted((a for a in inputs if id(a) not in w.given and w.buffers.poolable(a, end - 1)
                        and not any(b is not a and id(a) in w.buffers.owners.get(id(b), ()) for b in inputs)),
                       key=lambda a: -made.get(id(a), -1))  # (with no view of it among the group's inputs)
        try:
            found[start] = native.NativeGroup(eqns, _kept(w, eqns, end - 1), dying=dying)
        except ValueError:  # (more operands than one kernel takes: NumPy's calls)
            continue
    return found if native.build_groups(list(found.values())) else {}


def _write_native_group(w: _Writer, group: native.NativeGroup) -> None:
    """A native loop's call: its results go into the memory of inputs that die in it
    (``NativeGroup.aliases``), or dead temporaries of their type where the pool has them, else
    into new memory; the C loop is written into the text as comments. The loop writes C
    order: memory laid out otherwise (an attention result laid out as its query, a ufunc's
    of a transposed operand) is not taken, and a result goes into new memory then."""
    passed = [w.names[id(a)] for a in group.inputs]
    for j, v in enumerate(group.kept):
        dying = group.inputs[group.aliases[j]] if j in group.aliases else None
        reused = dying or (w.pool.get(v.aval) and w.pool[v.aval].pop())
        name, new = w.name(v), f"EMPTY({tuple(v.aval.shape)}, {v.aval.dtype.np.name!r})"
        w.results.add(id(v))
        if reused:
            old = w.names[id(reused)]
            w.lines.append(f"    {name} = {old} if {old}.flags.c_contiguous else {new}")
            if dying is None:  # (a dying input's name goes with the group's other dead inputs)
                w.lines.append(f"    del {old}")
            w.hand_over(reused, v)
        else:
            w.free_pool()
            w.lines.append(f"    {name} = {new}")
            w.allocate([v])
        passed.append(name)
    threads = native.threads_for(group, w.threads)
    w.lines.append(f"    # native loop: {group.label}" + (f", on {threads} threads" if threads > 1 else ""))
    w.lines.extend(f"    #   {line}" for line in group.source.splitlines())
    call, kernel, meta = w.global_(caller(), "CALL"), w.global_(group.kernel, "K"), w.global_(group.meta, "M")
    w.lines.append(_Call("", call, f"{threads}, {kernel}, {meta}, 0, {group.outer}, {', '.join(passed)}",
                         f"native: {group.label}"))


def _write_group(w: _Writer, program: Program, run: list[int], steps: list[Any]) -> None:
    """Equations ``run`` as one loop over chunks of the flattened arrays: each chunk's
    intermediates live in small scratch buffers (in the CPU's caches), and only the values
    read after the run are written out whole. The same ufuncs in the same order, so the
    results are those of the equations one by one.

    The loop is a function of its range of elements, written beside ``lowered``; a large
    group runs it on ``w.threads`` pieces at once (``in_parallel``), each piece
    with its own scratch buffers."""
    eqns = [program.eqns[k] for k in run]
    n, end = math.prod(eqns[0].outputs[0].aval.shape), run[-1]
    made = {id(e.outputs[0]) for e in eqns}
    kept = _kept(w, eqns, end)
    threads = max(1, min(w.threads, n // PARALLEL_MIN))
    chunk = CHUNK if threads == 1 else PARALLEL_CHUNK
    step = min(chunk, n if threads == 1 else n // threads + 4096)  # the longest step a piece takes
    loop, params, passed = w.fresh("g"), [], []  # the loop's function; its parameters; what the call passes them
    chunk_of: dict[int, str] = {}
    w.lines.append(f"    # fused: {' '.join(e.prim.name for e in eqns)}, in chunks of {chunk}"
                   + (f" on {threads} threads" if threads > 1 else ""))
    for v in kept:
        name, flat = w.name(v), w.fresh("f")
        params.append(flat)
        w.results.add(id(v))
        w.lines.append(f"    {name} = EMPTY({tuple(v.aval.shape)}, {v.aval.dtype.np.name!r})")
        passed.append(f"{name}.reshape(-1)")
        chunk_of[id(v)] = f"{flat}[s:e]"
    w.allocate(kept)
    for a in dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made):
        param = w.fresh("f" if a.aval.shape else "a")
        params.append(param)
        passed.append(f"{w.names[id(a)]}.reshape(-1)" if a.aval.shape else w.names[id(a)])
        chunk_of[id(a)] = f"{param}[s:e]" if a.aval.shape else param
    head = [f"def {loop}(lo, hi, {', '.join(params)}):"]
    scratch = 0
    free: dict[Any, list[str]] = {}  # scratch buffers whose value no later equation of the run reads, by dtype
    for k, e in zip(run, eqns):
        for a in dict.fromkeys(a for a in e.inputs if isinstance(a, Var) and id(a) in made):
            if w.last_use.get(id(a), -1) == k and not any(a is v for v in kept):  # read here for the last time
                free.setdefault(a.aval.dtype, []).append(chunk_of[id(a)].split("[")[0])
        v = e.outputs[0]
        if id(v) not in chunk_of:
            if free.get(v.aval.dtype):
                name = free[v.aval.dtype].pop()
            else:
                name = w.fresh("s")
                head.append(f"    {name} = EMPTY({step}, {v.aval.dtype.np.name!r})")
                scratch += step * v.aval.dtype.itemsize
            chunk_of[id(v)] = f"{name}[:e - s]"
    w.peak = max(w.peak, w.live + scratch * threads)
    body = [f"{w.global_(steps[k], 'k')}({', '.join(w.args(e, lambda a: chunk_of[id(a)]))}, "
            f"out={chunk_of[id(e.outputs[0])]})  # {e.prim.name}" for k, e in zip(run, eqns)]
    # whole chunks use the scratch buffers whole (no slicing); a piece's last chunk may be shorter
    w.functions += [*head, f"    whole = hi - (hi - lo) % {chunk}", f"    for s in range(lo, whole, {chunk}):",
                    f"        e = s + {chunk}", *("        " + line.replace("[:e - s]", "") for line in body),
                    "    if whole < hi:", "        s, e = whole, hi", *("        " + line for line in body), ""]
    fused = f"fused: {' '.join(e.prim.name for e in eqns)}"
    if threads == 1:
        w.lines.append(_Call("", loop, f"0, {n}, {', '.join(passed)}", fused))
    else:
        parallel = w.global_(in_parallel, "PARALLEL")
        w.lines.append(_Call("", parallel, f"{threads}, {loop}, {n}, {', '.join(passed)}", fused))


def _eager_peak(program: Program, last: dict[int, int], keep: set[int]) -> int:
    """The most bytes kernel results hold at once when the equations run one by one, each
    result new and freed after its last use (``last``) unless returned (``keep``): what eager
    evaluation holds."""
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
        if prim.static_view is not None:
            return prim.static_view(params, eqn.inputs[0].aval, eqn.outputs[0].aval)  # type: ignore[no-any-return]
    if prim.view is not None:
        native = prim.native_for(device)
        if native is not None:
            return functools.partial(native, **params) if params else native
        return functools.partial(_raw_view, prim, params, device.backend)  # type: ignore[union-attr]
    if prim.impl is None:
        kernel = prim.kernel_for(device)
        return functools.partial(kernel, **params) if params else kernel
    is_array = [isinstance(a, Var) for a in eqn.inputs]

    def through_arrays(*raw: Any) -> Any:  # call-like primitives: the eager path itself
        args = [wrap_kernel_output(r, device) if arr else r for r, arr in zip(raw, is_array)]  # type: ignore[arg-type]
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
