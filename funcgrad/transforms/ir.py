"""The IR: ``fg.trace(f)(*args)`` records a ``Program``.

A ``Program`` is a plain data structure that passes can rewrite: typed input
variables, hoisted constants, one ``Eqn`` per primitive (its inputs are ``Var``s
or inline ``Literal``s, with parameters; call-like primitives such as
``checkpoint`` hold a nested program), and output atoms. It prints as

    { lambda a:f32[3]; let
        b:f32[3] = mul a 2.0
        c:f32[] = reduce_sum[axes=(0,) keepdims=False] b
      in (c,) }

and it is callable: evaluating it binds each equation's primitive again, so a
program runs eagerly, under ``grad``, or inside another trace.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .. import tree as _tree
from ..array import ArrayBase
from ..errors import DTypeError, ShapeError
from ..ops import asarray
from ..primitives.core import ShapedArray, bind, fmt_shape
from ..primitives.shape import stop_gradient_p
from .core import Interpreter, Tracer, check_tracer, new_interpreter, user_transform
from .grad_mode import no_grad_active

__all__ = ["ProgramCache", "Var", "Literal", "Eqn", "Program", "TraceInterpreter", "TraceTracer", "trace",
           "make_jaxpr", "make_program"]


class Var:
    """A typed variable of a program (named only when printed). ``layout`` optionally
    records how an input's elements lie in memory (see ``primitives.core.layout_kind``)."""

    __slots__ = ("aval", "layout")

    def __init__(self, aval: ShapedArray, layout: str | None = None) -> None:
        self.aval = aval
        self.layout = layout

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A Python scalar written inline in an equation (weakly typed)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class Eqn:
    __slots__ = ("prim", "inputs", "outputs", "params")

    def __init__(self, prim: Any, inputs: list[Any], outputs: list[Var], params: dict[str, Any]) -> None:
        self.prim, self.inputs, self.outputs, self.params = prim, inputs, outputs, params


class ProgramCache:
    """The one cache of traced and lowered programs: a bounded map from a key to what was
    built for it (``None``: nothing could be), least recently used out first. A client's
    own (a compiled function's signatures, the backward plans) lives as long as the client;
    a program's derived forms (``Program.derived``) live on the program, as long as it."""

    MISSING = object()

    def __init__(self, name: str, max_entries: int) -> None:
        self.name = name
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        """The entry for ``key`` (now the most recently used), or ``MISSING``. A key that
        cannot be hashed raises ``TypeError``."""
        entry = self._entries.get(key, self.MISSING)
        if entry is not self.MISSING:
            self._entries.move_to_end(key)
        return entry

    def get_or_make(self, key: Hashable, make: Callable[[], Any], keep: Callable[[Any], bool] | None = None) -> Any:
        """The entry for ``key``, made if there is none (and kept, unless ``keep`` says no)."""
        entry = self.get(key)
        if entry is not self.MISSING:
            return entry
        entry = make()
        return self.put(key, entry) if keep is None or keep(entry) else entry

    def put(self, key: Hashable, entry: Any) -> Any:
        self._entries[key] = entry
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def values(self) -> list[Any]:
        return list(self._entries.values())

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<ProgramCache {self.name!r}: {len(self)} of {self.max_entries}>"


MAX_DERIVED = 16  # forms of one kind kept per program (lowerings by donation, batched forms by layout...)


class Program:
    """A traced function: ``invars``, hoisted ``constvars`` with their ``consts``, ``eqns``, ``outvars``
    (JAX's jaxpr): what ``fg.make_jaxpr`` returns and every transform's passes read.

    Example:
        >>> p = fg.make_jaxpr(lambda x: fg.sin(x) * 2.0)(fg.ones(3))
        >>> [e.prim.name for e in p.eqns], p.in_avals
        (['sin', 'mul'], [ShapedArray(f32[3], cpu)])
        >>> p.eval_flat([fg.zeros(3)])[0].tolist()
        [0.0, 0.0, 0.0]
    """

    def __init__(self, invars: list[Var], constvars: list[Var], consts: list[Any], eqns: list[Eqn],
                 outvars: list[Any], in_tree: Any = None, out_tree: Any = None) -> None:
        self.invars, self.constvars, self.consts = invars, constvars, consts
        self.eqns, self.outvars = eqns, outvars
        self.in_tree, self.out_tree = in_tree, out_tree
        self._derived: dict[str, ProgramCache] = {}

    def derived(self, kind: str, key: Hashable, make: Callable[[], Any],
                keep: Callable[[Any], bool] | None = None) -> Any:
        """What ``make()`` builds from this program for ``key`` (its lowering for a donation
        pattern, its batched form for a batch layout, its split VJP...): built once, kept on
        the program in a ``ProgramCache`` per kind, and gone with it."""
        cache = self._derived.get(kind)
        if cache is None:
            cache = self._derived[kind] = ProgramCache(kind, MAX_DERIVED)
        return cache.get_or_make(key, make, keep)

    @property
    def in_avals(self) -> list[ShapedArray]:
        """The abstract values of the inputs."""
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[Any]:
        """The abstract values of the outputs."""
        return [v.aval if isinstance(v, Var) else v.value for v in self.outvars]

    # -- evaluation ----------------------------------------------------------
    def eval_flat(self, args: Sequence[Any], consts: Sequence[Any] | None = None,
                  hook: Callable[[int, Eqn, list[Any]], Any] | None = None) -> list[Any]:
        """Evaluate on flat arguments. ``hook(i, eqn, values)`` may return the outputs of
        equation ``i`` itself (checkpoint policies reuse saved values this way)."""
        if len(args) != len(self.invars):
            raise TypeError(f"program expects {len(self.invars)} arguments, got {len(args)}")
        env: dict[int, Any] = {}
        for v, x in zip(self.constvars, self.consts if consts is None else consts):
            env[id(v)] = x
        for v, x in zip(self.invars, args):
            env[id(v)] = x
        dead = self._dead_after()
        for i, eqn in enumerate(self.eqns):
            vals = [env[id(a)] if isinstance(a, Var) else a.value for a in eqn.inputs]
            out = hook(i, eqn, vals) if hook is not None else None
            if out is None:
                out = bind(eqn.prim, *vals, **eqn.params)
            del vals
            outs = out if eqn.prim.multiple_results else (out,)
            for v, o in zip(eqn.outputs, outs):
                env[id(v)] = o
            del out, outs
            for key in dead[i]:  # values no later equation reads: freed now, not when the program returns
                del env[key]
        return [env[id(a)] if isinstance(a, Var) else a.value for a in self.outvars]

    def _dead_after(self) -> list[tuple[int, ...]]:
        """Per equation, the values (by id) that nothing after it reads: computed once."""
        dead = getattr(self, "_dead", None)
        if dead is None:
            last: dict[int, int] = {}
            for i, eqn in enumerate(self.eqns):
                for a in (*eqn.inputs, *eqn.outputs):
                    if isinstance(a, Var):
                        last[id(a)] = i
            keep = {id(a) for a in self.outvars if isinstance(a, Var)}
            keep.update(id(v) for v in (*self.invars, *self.constvars))
            per: list[list[int]] = [[] for _ in self.eqns]
            for key, i in last.items():
                if key not in keep:
                    per[i].append(key)
            dead = self._dead = [tuple(d) for d in per]
        return dead  # type: ignore[no-any-return]

    def __call__(self, *args: Any) -> Any:
        flat, tree = _tree.flatten(args)
        if self.in_tree is not None and tree != self.in_tree:
            raise TypeError(f"program was traced for arguments {self.in_tree!r}, called with {tree!r}")
        for i, (var, x) in enumerate(zip(self.invars, flat)):  # a program holds for the types it was traced at
            got = getattr(x, "aval", None) if isinstance(x, ArrayBase) else None
            if got is None:
                continue
            if tuple(got.shape) != tuple(var.aval.shape):
                raise ShapeError(f"Program: input {i} has shape {fmt_shape(tuple(got.shape))}, but the program was "
                                 f"traced for {fmt_shape(tuple(var.aval.shape))} ({var.aval.str_short()}); trace it "
                                 "again for these inputs")
            if got.dtype is not var.aval.dtype:
                raise DTypeError(f"Program: input {i} has dtype {got.dtype}, but the program was traced for "
                                 f"{var.aval.dtype} ({var.aval.str_short()}); trace it again for these inputs")
        outs = self.eval_flat(flat)
        return _tree.unflatten(self.out_tree, outs) if self.out_tree is not None else outs

    # -- printing ------------------------------------------------------------
    def __str__(self) -> str:
        return self.pretty()

    def __repr__(self) -> str:
        return self.pretty()

    def pretty(self, indent: int = 0) -> str:
        """The program as indented text."""
        names = _Namer()
        pad = " " * indent
        head = "; ".join(f"{names(v)}:{v.aval.str_short()}" for v in self.invars)
        lines = [f"{pad}{{ lambda {head};" + (
            " consts " + ", ".join(f"{names(v)}:{v.aval.str_short()}" for v in self.constvars) + ";"
            if self.constvars else "") + " let"]
        for eqn in self.eqns:
            outs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in eqn.outputs)
            ins = " ".join(names(a) if isinstance(a, Var) else _literal(a.value) for a in eqn.inputs)
            params, nested = _format_params(eqn.params, indent + 6)
            lines.append(f"{pad}    {outs + ' = ' if outs else ''}{eqn.prim.name}{params} {ins}".rstrip())
            lines.extend(nested)
        outs = ", ".join(names(a) if isinstance(a, Var) else _literal(a.value) for a in self.outvars)
        lines.append(f"{pad}  in ({outs}{',' if len(self.outvars) == 1 else ''}) }}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz DOT text: variables as ellipses, equations as boxes."""
        names = _Namer()
        lines = ["digraph program {", "  rankdir=TB;", '  node [fontname="monospace"];']
        for v in self.invars + self.constvars:
            lines.append(f'  {names(v)} [label="{names(v)}: {v.aval.str_short()}", shape=ellipse, style=filled, '
                         f'fillcolor={"lightblue" if v in self.invars else "lightgrey"}];')
        for i, eqn in enumerate(self.eqns):
            lines.append(f'  eqn{i} [label="{eqn.prim.name}", shape=box];')
            for a in eqn.inputs:
                if isinstance(a, Var):
                    lines.append(f"  {names(a)} -> eqn{i};")
            for v in eqn.outputs:
                lines.append(f'  {names(v)} [label="{names(v)}: {v.aval.str_short()}", shape=ellipse];')
                lines.append(f"  eqn{i} -> {names(v)};")
        for a in self.outvars:
            if isinstance(a, Var):
                lines.append(f"  {names(a)} [peripheries=2];")
        lines.append("}")
        return "\n".join(lines)


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.letters = _names()

    def __call__(self, v: Var) -> str:
        if id(v) not in self.names:
            self.names[id(v)] = next(self.letters)
        return self.names[id(v)]


def _names() -> Any:
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in itertools.count(1):
        for combo in itertools.product(letters, repeat=n):
            yield "".join(combo)


def _literal(v: Any) -> str:
    return repr(v)


def _format_params(params: dict[str, Any], indent: int) -> tuple[str, list[str]]:
    if not params:
        return "", []
    parts, nested = [], []
    for k, v in params.items():
        if isinstance(v, Program):
            parts.append(f"{k}=<program below>")
            nested.append(v.pretty(indent))
        elif isinstance(v, tuple) and v and all(isinstance(p, Program) for p in v):
            parts.append(f"{k}=<{len(v)} programs below>")
            nested.extend(p.pretty(indent) for p in v)
        elif callable(v) and not isinstance(v, type) and not hasattr(v, "np"):
            parts.append(f"{k}={getattr(v, '__name__', type(v).__name__)}")
        else:
            parts.append(f"{k}={v!r}")
    return "[" + " ".join(parts) + "]", nested


# ---- tracing -----------------------------------------------------------------------

class TraceTracer(Tracer):
    __slots__ = ("ir_var",)  # (not "var": that is the variance method of every array)

    def __init__(self, interp: TraceInterpreter, var: Var) -> None:
        self._interp = interp
        self.ir_var = var

    @property
    def aval(self) -> ShapedArray:
        return self.ir_var.aval

    @property
    def layout_hint(self) -> str | None:
        return self.ir_var.layout


class TraceInterpreter(Interpreter):
    """Records every primitive into equations instead of evaluating it."""

    name = "trace"

    def __init__(self) -> None:
        super().__init__()
        self.eqns: list[Eqn] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}

    def atom(self, x: Any) -> Any:
        if isinstance(x, TraceTracer) and x._interp is self:
            return x.ir_var
        if isinstance(x, (bool, int, float)):
            return Literal(x)
        if isinstance(x, Tracer):
            check_tracer(self, x)  # an enclosing transform's value: a constant here
        if isinstance(x, ArrayBase):
            var = self._const_ids.get(id(x))
            if var is None:
                var = self._const_ids[id(x)] = Var(x.aval)
                self.constvars.append(var)
                self.consts.append(x)
            return var
        raise TypeError(f"cannot trace a value of type {type(x).__name__}")

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        inputs = [self.atom(a) for a in args]
        avals = [a.aval if isinstance(a, Var) else a.value for a in inputs]
        out_aval = prim.abstract_eval(*avals, **params)
        out_avals = out_aval if prim.multiple_results else (out_aval,)
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(Eqn(prim, inputs, outvars, params))
        outs = [TraceTracer(self, v) for v in outvars]
        if prim.differentiable and no_grad_active(self):  # keep no_grad's meaning in the program
            # (integer and boolean values carry no gradient: nothing to stop)
            outs = [self.process(stop_gradient_p, (o,), {}) if v.aval.dtype.kind in "fc" else o
                    for o, v in zip(outs, outvars)]
        return tuple(outs) if prim.multiple_results else outs[0]


def _as_input(x: Any) -> Any:
    if isinstance(x, ArrayBase):
        return x
    return asarray(x)


def lift_consts(program: Program, which: list[bool]) -> tuple[Program, list[Any]]:
    """``program`` with the constants ``which`` marks as its leading inputs instead (values an
    enclosing transform computed, or that may change between calls), and those values."""
    lifted = [c for c, k in zip(program.consts, which) if k]
    opened = Program([v for v, k in zip(program.constvars, which) if k] + program.invars,
                     [v for v, k in zip(program.constvars, which) if not k],
                     [c for c, k in zip(program.consts, which) if not k], program.eqns, program.outvars)
    return opened, lifted


def make_program(f: Callable[..., Any], flat_avals: list[ShapedArray], in_tree: Any,
                 layouts: list[str | None] | None = None) -> tuple[Program, list[Any]]:
    """Trace ``f`` on abstract inputs (with optional layout hints); returns the program and
    its flat outputs' atoms."""
    interp = TraceInterpreter()
    invars = [Var(a, lay) for a, lay in zip(flat_avals, layouts or [None] * len(flat_avals))]
    with new_interpreter(interp):
        tracers = [TraceTracer(interp, v) for v in invars]
        out = f(*_tree.unflatten(in_tree, tracers))
        out_flat, out_tree = _tree.flatten(out)
        outvars = [interp.atom(o) for o in out_flat]
    program = Program(invars, interp.constvars, interp.consts, interp.eqns, outvars, in_tree, out_tree)
    return program, out_flat


def make_jaxpr(f: Callable[..., Any], static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., Any]:
    """JAX's ``make_jaxpr``: ``f``'s program at the shapes and dtypes of the arguments it is
    called with (``fg.trace``).

    Args:
        f: the function.
        static_argnums: arguments taken as constants.
        return_shape: also give the outputs' abstract values, as a pytree.

    Returns:
        A function of ``f``'s arguments returning the ``Program`` (and the shapes).

    Example:
        >>> print(fg.make_jaxpr(lambda x: fg.sin(x) * 2)(fg.ones(3)))
        { lambda a:f32[3]; let
            b:f32[3] = sin a
            c:f32[3] = mul b 2
          in (c,) }
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    def traced(*args: Any) -> Any:
        fixed = {i % len(args): args[i] for i in static}
        dynamic = [a for i, a in enumerate(args) if i not in fixed]

        def call(*values: Any) -> Any:
            it = iter(values)
            return f(*(fixed[i] if i in fixed else next(it) for i in range(len(args))))

        program = trace(call)(*dynamic)
        if not return_shape:
            return program
        shapes = _tree.unflatten(program.out_tree, [v.aval for v in program.outvars])
        return program, shapes

    return user_transform("make_jaxpr", traced)


def trace(f: Callable[..., Any]) -> Callable[..., Program]:
    """``f``'s program (the IR) at the shapes and dtypes of the arguments it is called with.

    Args:
        f: the function.

    Returns:
        A function of ``f``'s arguments returning the ``Program`` (print it to read it).

    Example:
        >>> print(fg.trace(lambda x: fg.sin(x) * 2.0)(fg.ones(3)))  # doctest: +SKIP
    """

    def traced(*args: Any) -> Program:
        flat, in_tree = _tree.flatten(args)
        flat = [_as_input(x) for x in flat]
        program, _ = make_program(f, [x.aval for x in flat], in_tree)
        return program

    return user_transform("trace", traced)


