"""Program passes: each a function ``Program -> Program`` that keeps the program's meaning.

They run in ``pipeline.PASSES`` order before a program is lowered, and each can be read in
``fg.compile(f).lower(*args)``:

* ``simplify``: the algebraic identities primitives declare (``Primitive.simplify``:
  ``x * 1``, ``x + 0``, ``x - 0``, ``x / 1`` with the number written or a constant that is
  that number everywhere, ``-(-x)``, a transpose of a transpose, a reshape of a reshape,
  ``x ** 2`` as ``x * x``), applied only where the result keeps the output's shape and
  dtype; it runs again after constant folding;
* ``fold_constants``: an equation whose inputs are all constants is evaluated once, now
  (as is a small one that reads its inputs' types alone: ``full(x, (), 1.0)``);
* ``eliminate_common_subexpressions``: two equations with the same primitive, inputs and
  parameters compute the same value (primitives are pure), so the second reads the first;
* ``eliminate_dead_code``: equations no output depends on are dropped;
* ``join_siblings``: two equations a primitive declares one kernel for
  (``Primitive.joins``: a loss and its gradient) become one equation of that kernel.

Call-like primitives (``checkpoint``, custom rules, compiled calls) hold user code and are
left as they are.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Mapping
from typing import Any

from ...array import wrap_kernel_output
from ...primitives.core import bind, current_interpreter
from ..core import Tracer
from ..ir import Eqn, Literal, Program, Var

__all__ = ["simplify", "fold_constants", "eliminate_common_subexpressions", "eliminate_dead_code", "join_siblings"]


class _Rewrite:
    """A new program built equation by equation, with variables renamed as equations go."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.renamed: dict[int, Any] = {}
        self.eqns: list[Eqn] = []

    def atom(self, a: Any) -> Any:
        return self.renamed.get(id(a), a) if isinstance(a, Var) else a

    def emit(self, eqn: Eqn) -> Eqn:
        eqn = Eqn(eqn.prim, [self.atom(a) for a in eqn.inputs], eqn.outputs, eqn.params)
        self.eqns.append(eqn)
        return eqn

    def result(self, constvars: list[Var] | None = None, consts: list[Any] | None = None) -> Program:
        p = self.program
        constvars, consts = (p.constvars, p.consts) if constvars is None else (constvars, consts)
        return Program(p.invars, constvars, consts, self.eqns, [self.atom(a) for a in p.outvars], p.in_tree,  # type: ignore[arg-type]
                       p.out_tree)


def _same_type(a: Any, out: Var) -> bool:
    """``a`` can stand for ``out``: a variable of the same shape and dtype."""
    return isinstance(a, Var) and a.aval == out.aval


def _uniform(program: Program) -> dict[int, Any]:
    """Constants whose every element is one value (a broadcast scalar: a derivative's seed of
    ones, say), by variable: the identities below treat them as that number."""
    found = {}
    for v, c in zip(program.constvars, program.consts):
        data = getattr(c, "_data", None)
        if data is not None and data.size and (data.size == 1 or not any(getattr(data, "strides", (1,)))):
            found[id(v)] = data.flat[0].item()
    return found


class _Context:
    """What a primitive's ``simplify`` rule may ask of the program around an equation."""

    __slots__ = ("_producer", "_uniform")

    def __init__(self, producer: dict[int, Eqn], uniform: dict[int, Any]) -> None:
        self._producer, self._uniform = producer, uniform

    def producer(self, a: Any) -> Eqn | None:
        """The equation that computed ``a``, if an earlier one did."""
        return self._producer.get(id(a)) if isinstance(a, Var) else None

    def is_number(self, a: Any, value: float) -> bool:
        """``a`` is ``value`` everywhere: that number written, or a constant of it."""
        if isinstance(a, Var):
            return id(a) in self._uniform and self._uniform[id(a)] == value
        return isinstance(a, Literal) and not isinstance(a.value, bool) and a.value == value

    @staticmethod
    def same_type(a: Any, out: Var) -> bool:
        return _same_type(a, out)

    @staticmethod
    def equation(prim: Any, inputs: list[Any], like: Eqn, params: dict[str, Any]) -> Eqn:
        """An equation computing ``like``'s outputs another way."""
        return Eqn(prim, inputs, like.outputs, params)

    @staticmethod
    def literal(value: Any) -> Literal:
        """A number written into an equation."""
        return Literal(value)

    @staticmethod
    def step(prim: Any, inputs: list[Any], like: Eqn, params: dict[str, Any], aval: Any = None) -> Eqn:
        """An equation computing an intermediate value, of ``like``'s type unless ``aval``
        says another, for a rule that returns several (the last computes ``like``'s outputs)."""
        return Eqn(prim, inputs, [Var(like.outputs[0].aval if aval is None else aval)], params)


def simplify(program: Program) -> Program:
    """Each equation whose primitive has a ``simplify`` rule becomes what the rule says: an
    atom its output is renamed to, or a cheaper equation (which may simplify no further)."""
    rw = _Rewrite(program)
    producer: dict[int, Eqn] = {}
    ctx = _Context(producer, _uniform(program))
    for eqn in program.eqns:
        eqn = Eqn(eqn.prim, [rw.atom(a) for a in eqn.inputs], eqn.outputs, eqn.params)
        rule = eqn.prim.simplify
        result = rule(eqn, ctx) if rule is not None and len(eqn.outputs) == 1 else None
        if isinstance(result, list):  # (several equations: the last computes the outputs)
            for step in result[:-1]:
                producer[id(step.outputs[0])] = step
                rw.emit(step)
            result = result[-1]
        if isinstance(result, Eqn):
            eqn = result
        elif result is not None:
            rw.renamed[id(eqn.outputs[0])] = result
            continue
        for v in eqn.outputs:
            producer[id(v)] = eqn
        rw.emit(eqn)
    return rw.result()


FOLD_TYPED = 1  # elements: the largest result of a primitive reading types alone that is folded (a
# constant is memory the compiled program holds; a derivative's 0-d ones are what matter)


def _stand_in(v: Var) -> Any:
    """A 0-d value of ``v``'s dtype and device, for a primitive that reads no values."""
    device = v.aval.device
    return wrap_kernel_output(device.backend.xp.zeros((), v.aval.dtype.np), device)


def fold_constants(program: Program) -> Program:
    """Equations of constants and literals alone run now, eagerly (whatever transform is
    optimising the program); their results become constants. A constant that is an enclosing
    transform's value (a tracer) is not folded: it has no value yet. Nor is a collective
    (over ranks or a named axis: its value is not its inputs' alone) or an effect. A
    primitive that reads only its inputs' types (``Primitive.reads_values``) folds whatever
    its inputs, where its result is small: the 0-d ones and halves a derivative rule makes
    then fold into the constants they multiply, and no longer sit between a native run's
    equations."""
    rw = _Rewrite(program)
    value = {id(v): c for v, c in zip(program.constvars, program.consts) if not isinstance(c, Tracer)}
    constvars, consts = list(program.constvars), list(program.consts)
    for eqn in program.eqns:
        ins = [rw.atom(a) for a in eqn.inputs]
        known: Mapping[int, Any] = value
        if not eqn.prim.reads_values and all(math.prod(o.aval.shape) <= FOLD_TYPED for o in eqn.outputs):
            known = ChainMap({id(a): _stand_in(a) for a in ins if isinstance(a, Var) and id(a) not in value}, value)
        foldable = eqn.prim.impl is None and not eqn.prim.effectful and eqn.prim.axis_batch is None
        if foldable and ins and all(isinstance(a, Literal) or id(a) in known for a in ins) \
                and any(isinstance(a, Var) for a in ins):
            token = current_interpreter.set(None)  # (under vmap's batching rule the current one is a trace)
            try:
                outs = bind(eqn.prim, *[a.value if isinstance(a, Literal) else known[id(a)] for a in ins],
                            **eqn.params)
            finally:
                current_interpreter.reset(token)
            for v, o in zip(eqn.outputs, outs if eqn.prim.multiple_results else (outs,)):
                value[id(v)] = o
                constvars.append(v)
                consts.append(o)
            continue
        rw.emit(eqn)
    folded = rw.result(constvars, consts)
    return eliminate_dead_code(folded)  # constants only folded values read are dropped


def _key(eqn: Eqn) -> Any:
    ins = tuple(("v", id(a)) if isinstance(a, Var) else ("l", type(a.value), a.value) for a in eqn.inputs)
    return eqn.prim, ins, tuple(sorted(eqn.params.items()))


def eliminate_common_subexpressions(program: Program) -> Program:
    rw = _Rewrite(program)
    seen: dict[Any, Eqn] = {}
    for eqn in program.eqns:
        eqn = Eqn(eqn.prim, [rw.atom(a) for a in eqn.inputs], eqn.outputs, eqn.params)
        if eqn.prim.impl is None:
            try:
                key = _key(eqn)
                earlier = seen.get(key)
            except TypeError:  # a parameter that cannot be hashed: never merged
                key = earlier = None
            if earlier is not None:
                for v, w in zip(eqn.outputs, earlier.outputs):
                    rw.renamed[id(v)] = w
                continue
            if key is not None:
                seen[key] = eqn
        rw.emit(eqn)
    return rw.result()


def eliminate_dead_code(program: Program) -> Program:
    """``program`` without the equations (and constants) no output depends on."""
    live = {id(v) for v in program.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if eqn.prim.effectful or any(id(v) in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    used = [(v, c) for v, c in zip(program.constvars, program.consts) if id(v) in live]
    return Program(program.invars, [v for v, _ in used], [c for _, c in used], kept[::-1], program.outvars,
                   program.in_tree, program.out_tree)


def _same_atom(a: Any, b: Any) -> bool:
    if isinstance(a, Var) or isinstance(b, Var):
        return a is b
    return type(a.value) is type(b.value) and a.value == b.value


def join_siblings(program: Program) -> Program:
    """Each pair of equations ``P(*args)`` and ``Q(*extra, *args)`` with the same parameters,
    where ``P.joins`` names a primitive computing both (``Primitive.joins``), as one equation
    of it: at the first one's place, where every input of the pair is computed by then (a
    gradient whose cotangent the loss's value feeds keeps its own equation)."""
    eqns = program.eqns
    if not any(e.prim.joins for e in eqns):
        return program
    defined = {id(v): i for i, e in enumerate(eqns) for v in e.outputs}
    partners = {q for e in eqns for q in e.prim.joins}
    by_prim: dict[Any, list[int]] = {}
    for j, e in enumerate(eqns):
        if e.prim in partners:
            by_prim.setdefault(e.prim, []).append(j)
    placed: dict[int, Eqn] = {}
    dropped: set[int] = set()
    for i, eqn in enumerate(eqns):
        if not eqn.prim.joins or i in dropped or i in placed:
            continue
        k = len(eqn.inputs)
        for j in (j for q in eqn.prim.joins for j in by_prim.get(q, ())):
            other = eqns[j]
            joined = eqn.prim.joins[other.prim]
            if j in dropped or j in placed or other.params != eqn.params or len(other.inputs) < k \
                    or not all(map(_same_atom, other.inputs[-k:], eqn.inputs)):
                continue
            at = min(i, j)
            if any(defined.get(id(a), -1) >= at for a in other.inputs if isinstance(a, Var)):
                continue
            placed[at] = Eqn(joined, list(other.inputs), [*eqn.outputs, *other.outputs], eqn.params)
            dropped.add(max(i, j))
            break
    if not placed:
        return program
    kept = [placed.get(i, e) for i, e in enumerate(eqns) if i not in dropped]
    return Program(program.invars, program.constvars, program.consts, kept, program.outvars, program.in_tree,
                   program.out_tree)
