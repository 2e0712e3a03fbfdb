"""A whole small program as one native function.

A lowered program calls one kernel per step from Python: about a microsecond each, which is
all of the time of a program of many small steps (an unrolled RNN over an (8, 32) state, a
scan's body). Where every equation of a CPU program is one of

* a run of elementwise equations (``native.NativeGroup``'s loop, perhaps ending in a sum),
* a product of two matrices, through the BLAS function ``np.dot`` calls for it, with its
  arguments (so the product has NumPy's bits), or
* a view (a slice, a transpose, a reshape...), worked out when the program is lowered,

and every value is small (``SMALL``), the program is one C function that runs them in
order: the lowered Python function makes the outputs and one scratch buffer (the *arena*)
and calls it once. The arena's places are planned here, each value's bytes reused once
nothing reads them (a view keeps its operand's alive). Any other equation, more arrays than
one call takes, or no BLAS to be found (``cc.blas``) leaves the program to ``lower``'s
step-by-step code. A sum, a max or a min of a value no loop made ends a loop of ``x * 1``;
the scatter-add of a block of slices (a slice's gradient) is a copy and an add in place.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ...backends import cc
from ...backends.cc import C_TYPES, NativeBuildError
from ...primitives.core import REGISTRY, Layout, contiguous_strides
from ..ir import Eqn, Literal, Program, Var
from . import native

__all__ = ["LOOP", "NativeProgram", "plan", "scan"]

_ALIGN = 64  # bytes: where each value starts in the arena
SMALL = 1 << 14  # elements: programs whose values are all this small run as one function (larger
# ones spend their time in the loops, not the calls, and their loops may split over threads)
_ROW_MAJOR, _NO_TRANS, _TRANS, _UPPER = 101, 111, 112, 121  # (CBLAS's constants)
_BLAS_TYPES = """typedef void (*fg_sgemm_f)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*fg_dgemm_f)(int, int, int, int64_t, int64_t, int64_t, double, const double *, int64_t,
                           const double *, int64_t, double, double *, int64_t);
typedef void (*fg_ssyrk_f)(int, int, int, int64_t, int64_t, float, const float *, int64_t, float, float *, int64_t);
typedef void (*fg_dsyrk_f)(int, int, int, int64_t, int64_t, double, const double *, int64_t, double, double *,
                           int64_t);
#include <string.h>
"""


class _NotNative(Exception):
    """The program has a part a native program does not run."""


def _contiguous(layout: Layout) -> bool:
    """C order (the strides of axes of one element never matter)."""
    return all(n == 1 or s == c for n, s, c in zip(layout.shape, layout.strides, contiguous_strides(layout.shape)))


def _fortran(layout: Layout) -> bool:
    return len(layout.shape) == 2 and layout.strides == (1, layout.shape[0])


class _Arena:
    """First fit over freed places; the arena grows where none fits."""

    def __init__(self) -> None:
        self.free: list[tuple[int, int]] = []  # (offset, bytes), by offset
        self.size = self.most = 0  # the end of the places taken; the furthest it has been

    def take(self, nbytes: int) -> int:
        nbytes = -(-max(nbytes, 1) // _ALIGN) * _ALIGN
        for k, (at, n) in enumerate(self.free):
            if n >= nbytes:
                self.free[k:k + 1] = [(at + nbytes, n - nbytes)] if n > nbytes else []
                return at
        at, self.size = self.size, self.size + nbytes
        self.most = max(self.most, self.size)
        return at

    def give(self, at: int, nbytes: int) -> None:
        nbytes = -(-max(nbytes, 1) // _ALIGN) * _ALIGN
        self.free.append((at, nbytes))
        self.free.sort()
        merged: list[tuple[int, int]] = []
        for a, n in self.free:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((a, n))
        if merged and merged[-1][0] + merged[-1][1] == self.size:  # (a free end shrinks the arena back)
            self.size = merged.pop()[0]
        self.free = merged


class NativeProgram:
    """A program's native function: its operands (``inputs``: the program's inputs and
    constants; ``outputs``: the new values it returns; then the arena, of ``arena`` bytes),
    its C ``source``, what a call is checked against (``meta``) and, once built, ``kernel``.
    ``peak``: the most bytes its values hold at once (an output counted from the step that
    writes it, as eager evaluation's result would be); ``holds``: the bytes a call allocates
    (the arena and the outputs, all made before it runs); ``sources``: per output of the
    program, the native output it is (k), or a copy of input k (-1 - k), or None (one of
    its constants); ``own``: the constants' arrays."""

    def __init__(self, program: Program, threads: int, read_after: Any) -> None:
        self.inputs = [*program.invars, *program.constvars]
        made = {id(o) for e in program.eqns for o in e.outputs}
        self.outputs = list(dict.fromkeys(v for v in program.outvars if isinstance(v, Var) and id(v) in made))
        if len(self.inputs) + len(self.outputs) + 1 > cc.MAX_OPERANDS:  # (the arrays one call takes)
            raise _NotNative
        # where each value lies: (its operand, or None for the arena; its place there; its layout)
        self.place: dict[int, tuple[int | None, int, Layout]] = {
            id(v): (k, 0, _c_layout(v)) for k, v in enumerate([*self.inputs, *self.outputs])}
        self.base = {id(v): id(v) for v in self.inputs}  # the value whose memory each lies in
        self.last: dict[int, int] = {}  # the last equation reading each such memory
        for i, e in enumerate(program.eqns):
            for o in e.outputs:
                self.base[id(o)] = self.base[id(e.inputs[0])] if e.prim.view is not None else id(o)
            for x in e.inputs:
                if isinstance(x, Var):
                    self.last[self.base[id(x)]] = i
        self.returned = {self.base[id(v)] for v in program.outvars if isinstance(v, Var)}
        self.arena_plan, self.live, self.peak = _Arena(), 0, 0
        self.held: dict[int, tuple[int, int]] = {}  # values in the arena: their place and bytes
        self.functions: dict[str, str] = {}  # a group's loop source -> its function's name
        self.helpers: list[str] = []
        self.body: list[str] = []
        self.loops: list[str] = []  # each native loop's label, in order
        self.steps = self.products = 0
        for start, end, kind in _steps(program.eqns):
            eqns = program.eqns[start:end]
            temporary: list[tuple[int, int]] = []
            if kind == "view":
                self._view(eqns[0])
            elif kind == "group":
                self._group(eqns, read_after(eqns, end - 1), threads)
            elif kind == "fold":
                self._fold(eqns[0], read_after(eqns, end - 1), threads)
            elif kind == "scatter":
                self._scatter_add(eqns[0], start)
            else:
                self._product(eqns[0], temporary)
            for at, nbytes in temporary:
                self.live -= nbytes
                self.arena_plan.give(at, nbytes)
            for e in eqns:  # what this step read last, and results nothing reads
                for x in (*e.inputs, *e.outputs):
                    b = self.base.get(id(x), -1) if isinstance(x, Var) else -1
                    if b in self.held and b not in self.returned and self.last.get(b, -1) < end:
                        self.live -= self.held[b][1]
                        self.arena_plan.give(*self.held.pop(b))
        self.arena = max(self.arena_plan.most, _ALIGN)
        self.holds = self.arena + sum(_nbytes(v) for v in self.outputs)  # (what a call allocates)
        written = {id(v): k for k, v in enumerate(self.outputs)}
        given = {id(v): k for k, v in enumerate(program.invars)}
        self.sources = [written.get(id(v), -1 - given[id(v)] if id(v) in given else None) if isinstance(v, Var)
                        else None for v in program.outvars]
        self.own = [c._data for c in program.consts]
        n_in = len(self.inputs)
        self.source = "\n".join([_BLAS_TYPES, *self.helpers,
                                 "void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {",
                                 f"    char *arena = p[{n_in + len(self.outputs)}];", *self.body, "}", ""])
        sizes = [_nbytes(v) for v in (*self.inputs, *self.outputs)]
        self.meta = cc.sizes_and_bytes(n_in, len(self.outputs) + 1, [1, *_addresses(self.products)],
                                       [*sizes, self.arena])
        self.kernel = 0
        self.label = f"native program: {self.steps} loops and products"

    def _take(self, nbytes: int) -> int:
        """A place in the arena for ``nbytes``, counted as held."""
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        return self.arena_plan.take(nbytes)

    def _result(self, v: Var) -> None:
        """A step's result: written into its output, or into a place of its own in the arena."""
        if id(v) in self.place:  # (an output: counted from now on)
            self.live += _nbytes(v)
            self.peak = max(self.peak, self.live)
            return
        self.held[id(v)] = (self._take(_nbytes(v)), _nbytes(v))
        self.place[id(v)] = (None, self.held[id(v)][0], _c_layout(v))

    def _pointer(self, v: Var) -> str:
        operand, at, layout = self.place[id(v)]
        return _address(operand, at + layout.offset * v.aval.dtype.itemsize)

    def _view(self, e: Any) -> None:
        """A view: its layout worked out now, or (a result of the program) copied out."""
        operand, at, layout = self.place[id(e.inputs[0])]
        viewed = e.prim.view(layout, **e.params)
        if viewed is None:  # (a reshape of elements out of order: eager copies)
            raise _NotNative
        out = e.outputs[0]
        if id(out) not in self.place:
            self.place[id(out)] = (operand, at, viewed)
            return
        self._result(out)
        self.body.append(_copy(_address(operand, at + viewed.offset * out.aval.dtype.itemsize), viewed,
                               self._pointer(out), out))

    def _matrix(self, v: Var, temporary: list[tuple[int, int]]) -> tuple[str, bool]:
        """A pointer to matrix ``v`` as BLAS reads it, and whether it lies in Fortran order:
        where it lies (in C or Fortran order), or a copy in C order in the arena (freed after
        the step), as ``np.dot`` copies."""
        layout = self.place[id(v)][2]
        if _contiguous(layout) or _fortran(layout):
            return self._pointer(v), not _contiguous(layout)
        at = self._take(_nbytes(v))
        temporary.append((at, _nbytes(v)))
        self.body.append(_copy(self._pointer(v), layout, _address(None, at), v))
        return _address(None, at), False

    def _group(self, eqns: list[Any], kept: list[Var], threads: int) -> None:
        """A native loop (its inputs read where they lie, in whatever order), its function
        defined once per source."""
        read = {id(x): x for e in eqns for x in e.inputs if isinstance(x, Var)}
        group = native.NativeGroup(eqns, kept, {k: self.place[k][2].strides for k, x in read.items()
                                                if k in self.place and not _contiguous(self.place[k][2])})
        if native.threads_for(group, threads) != 1:
            raise _NotNative
        inputs = [self._pointer(v) for v in group.inputs]
        for v in group.kept:
            self._result(v)
        name = self.functions.get(group.source)
        if name is None:
            name = self.functions[group.source] = f"fg_group{len(self.functions)}"
            renamed = re.sub(r"\bfg_(pairwise|fold)\b", lambda m: f"{name}_{m.group(1)}", group.source)
            self.helpers.append(renamed.replace("void fg_kernel(", f"static void {name}(", 1))
        sizes = ", ".join(str(int(n)) for n in group.meta[3:3 + int(group.meta[2])])
        pointers = ", ".join([*inputs, *(self._pointer(v) for v in group.kept)])
        self.body.append(f"    {{ static const int64_t n_[] = {{{sizes}}}; char *q[] = {{{pointers}}}; "
                         f"{name}(0, {group.outer}, n_, q); }}  /* {group.label} */")
        self.loops.append(group.label)
        self.steps += 1

    def _fold(self, e: Any, kept: list[Var], threads: int) -> None:
        """A reduction of a value no loop made, as the end of a loop of ``x * 1`` (which is
        ``x``, NaN included), so it adds in NumPy's order as a loop's sum does."""
        x = e.inputs[0]
        same = Eqn(REGISTRY["mul"], [x, Literal(1)], [Var(x.aval)], {})
        fold = Eqn(e.prim, [same.outputs[0]], e.outputs, e.params)
        if not native.fused_reduction(fold, [same]):
            raise _NotNative
        self._group([same, fold], kept, threads)

    def _scatter_add(self, e: Any, i: int) -> None:
        """``x`` with ``b`` added into a block of slices: ``x`` copied (or, where nothing reads
        its memory again, taken over), then ``b`` added in place (the slices never overlap,
        so each element is one addition, as NumPy's)."""
        x, b = e.inputs
        out = e.outputs[0]
        region = _region(tuple(out.aval.shape), e.params["template"])
        if region is None or region.shape != tuple(b.aval.shape):
            raise _NotNative
        if id(x) in self.held and self.last.get(id(x)) == i and id(x) not in self.returned and \
                id(out) not in self.place and self.base.get(id(b)) != id(x):
            self.held[id(out)] = self.held.pop(id(x))
            self.place[id(out)] = self.place[id(x)]
        else:
            self._result(out)
            self.body.append(_copy(self._pointer(x), self.place[id(x)][2], self._pointer(out), out))
        block = f"({self._pointer(out)}) + {region.offset * out.aval.dtype.itemsize}"
        self.body.append(_strided(out, region.shape, block, region.strides, self._pointer(b),
                                  self.place[id(b)][2].strides, "{0} + {1}", "scatter-add"))
        self.steps += 1

    def _product(self, e: Any, temporary: list[tuple[int, int]]) -> None:
        """A product of two matrices as ``np.dot`` computes it (``cblas_matrixproduct``):
        an operand in neither C nor Fortran order copied in C order, then ``gemm`` with each
        operand transposed where it lies in Fortran order, or ``syrk`` (its upper triangle
        copied down) where both are one matrix and its transpose."""
        a, b = e.inputs
        (m, k), p = a.aval.shape, b.aval.shape[1]
        (pa, fa), (pb, fb) = self._matrix(a, temporary), self._matrix(b, temporary)
        self._result(e.outputs[0])
        t, ctype = ("s", "float") if a.aval.dtype.name == "float32" else ("d", "double")
        trans1, lda = (_TRANS, m) if fa else (_NO_TRANS, k)
        trans2, ldb = (_TRANS, k) if fb else (_NO_TRANS, p)
        gemm, syrk = f"((fg_{t}gemm_f)(intptr_t)n[{1 if t == 's' else 2}])", \
            f"((fg_{t}syrk_f)(intptr_t)n[{3 if t == 's' else 4}])"
        lines = [f"    {{ const {ctype} *A = (const {ctype} *)({pa}), *B = (const {ctype} *)({pb}); "
                 f"{ctype} *C = ({ctype} *)({self._pointer(e.outputs[0])});",
                 f"      memset(C, 0, {m * p * a.aval.dtype.itemsize});"]
        gemm_call = f"{gemm}({_ROW_MAJOR}, {trans1}, {trans2}, {m}, {p}, {k}, 1, A, {lda}, B, {ldb}, 0, C, {p});"
        if m == p and fa != fb:  # (a matrix and its transpose lie so: the same memory is a test at run time)
            source, ld = ("A", lda) if trans1 == _NO_TRANS else ("B", ldb)
            lines += ["      if ((const void *)A == (const void *)B) {",
                      f"        {syrk}({_ROW_MAJOR}, {_UPPER}, {trans1}, {p}, {k}, 1, {source}, {ld}, 0, C, {p});",
                      f"        for (int64_t i = 0; i < {p}; i++) for (int64_t j = i + 1; j < {p}; j++) "
                      f"C[j * {p} + i] = C[i * {p} + j];",
                      f"      }} else {gemm_call}"]
        else:
            lines.append(f"      {gemm_call}")
        lines[-1] += " }  /* matmul */"
        self.body.extend(lines)
        self.steps += 1
        self.products += 1


def _addresses(products: int) -> tuple[int, int, int, int]:
    """The BLAS functions a program with ``products`` products calls (``cc.blas``)."""
    blas = cc.blas() if products else None
    return (0, 0, 0, 0) if blas is None else blas.addresses


def _address(operand: int | None, offset: int) -> str:
    """C for the address ``offset`` bytes into operand ``operand`` (None: the arena)."""
    where = "arena" if operand is None else f"p[{operand}]"
    return f"{where} + {offset}" if offset else where


def _nbytes(v: Var) -> int:
    return math.prod(v.aval.shape) * v.aval.dtype.itemsize


def _c_layout(v: Var) -> Layout:
    shape = tuple(v.aval.shape)
    return Layout(shape, contiguous_strides(shape), 0)


def _copy(source: str, layout: Layout, dest: str, v: Var) -> str:
    """C that copies the elements of ``layout`` at ``source`` to ``dest`` in C order."""
    return _strided(v, layout.shape, dest, contiguous_strides(layout.shape), source, layout.strides, "{1}", "copy")


def _strided(v: Var, shape: tuple[int, ...], dest: str, dest_strides: tuple[int, ...], source: str,
             source_strides: tuple[int, ...], expr: str, label: str) -> str:
    """C that sets each element of ``shape`` at ``dest`` to ``expr`` of it (``{0}``) and the
    element at ``source`` (``{1}``), each laid out by its strides (in elements)."""
    ctype = C_TYPES[v.aval.dtype.name]
    loops = "".join(f"for (int64_t i{d} = 0; i{d} < {n}; i{d}++) " for d, n in enumerate(shape))

    def index(strides: tuple[int, ...]) -> str:
        return " + ".join(f"i{d} * {s}" for d, s in enumerate(strides) if s) or "0"

    at = f"d[{index(dest_strides)}]"
    return (f"    {{ const {ctype} *s = (const {ctype} *)({source}); {ctype} *d = ({ctype} *)({dest}); "
            f"{loops}{at} = {expr.format(at, f's[{index(source_strides)}]')}; }}  /* {label} */")


def _region(shape: tuple[int, ...], template: tuple[Any, ...]) -> Layout | None:
    """The elements a scatter's template of slices picks from a C-ordered ``shape``, or None
    where it is not one slice per axis."""
    if len(template) != len(shape) or any(t[0] != "s" for t in template):
        return None
    strides, sizes, offset = contiguous_strides(shape), [], 0
    for (_, start, stop, step), st in zip(template, strides):
        sizes.append(len(range(start, -1 if stop is None else stop, step)))
        offset += start * st
    return Layout(tuple(sizes), tuple(st * t[3] for st, t in zip(strides, template)), offset)


def _is_product(e: Any) -> bool:
    """A product of two float matrices with more than one row, column and term (``np.dot``'s
    ``gemm`` case), whose operands lie in C or Fortran order (checked once placed)."""
    if "dot" not in e.prim.tags or e.params or len(e.inputs) != 2 or cc.blas() is None:
        return False  # (a product of parameters, einsum's, is not this one)
    a, b = e.inputs
    return all(isinstance(x, Var) and len(x.aval.shape) == 2 and min(x.aval.shape) > 1 and
               x.aval.dtype.name in ("float32", "float64") for x in (a, b))


def _steps(eqns: list[Any]) -> list[tuple[int, int, str]]:
    """The program as (start, end, kind) steps: ``group`` (a run of a native loop), ``view``,
    ``product``, ``scatter`` (a block of slices added into) or ``fold`` (a reduction of a
    value no loop made); ``_NotNative`` at any other equation."""
    runs = native.groups(eqns, every=True)
    steps: list[tuple[int, int, str]] = []
    i = 0
    while i < len(eqns):
        e = eqns[i]
        if i in runs:
            steps.append((i, runs[i], "group"))
            i = runs[i]
            continue
        if e.prim.view is not None and len(e.inputs) == 1 and isinstance(e.inputs[0], Var) and not e.prim.effectful:
            steps.append((i, i + 1, "view"))
        elif _is_product(e):
            steps.append((i, i + 1, "product"))
        elif e.prim.updates == 0 and e.params.get("mode") == "add" and "template" in e.params and \
                len(e.inputs) == 2 and all(isinstance(x, Var) and x.aval.dtype == e.outputs[0].aval.dtype
                                           for x in e.inputs):
            steps.append((i, i + 1, "scatter"))
        elif native.FOLDS & e.prim.tags and isinstance(e.inputs[0], Var):
            steps.append((i, i + 1, "fold"))
        else:
            raise _NotNative
        i += 1
    return steps


def plan(program: Program, threads: int, read_after: Any) -> NativeProgram | None:
    """``program`` as one native function, built, or None where it has a part that does not
    run natively or builds no native code. ``read_after(eqns, end)``: the values a run makes
    that are read after equation ``end`` or returned (``NativeGroup``'s ``kept``)."""
    if any(v.aval.device.kind != "cpu" or v.aval.dtype.name not in C_TYPES or math.prod(v.aval.shape) > SMALL
           for v in (*program.invars, *program.constvars, *(o for e in program.eqns for o in e.outputs))):
        return None
    try:
        built = NativeProgram(program, threads, read_after)
    except (_NotNative, ValueError):
        return None
    if built.steps < 2:
        return None  # (one call either way)
    try:
        built.kernel = cc.loop_kernel(built.source)
    except NativeBuildError:
        return None
    return built


# A loop over a native program: a scan's steps in C. Everything it needs is in its sizes
# (``n``), so one build serves every scan: n[1] the body's function, n[2] the body's own
# sizes, n[3] the steps, n[4] reverse, n[5..10] how many consts, carried values, xs,
# outputs, values the body writes (its native outputs) and constants of its own the body
# has, then per carried value its bytes (rounded up to _ALIGN), per x and per output its
# bytes (a step's), then per output where it comes from: k >= 0 the body's native output k,
# -1 - k a copy of its input k. The arrays: the consts, the first carry, the xs, the last
# carry, the stacked ys, the body's own constants, then scratch (two carries, then the
# body's arena).
LOOP = """#include <string.h>
typedef void (*fg_body)(int64_t, int64_t, const int64_t *, char **);
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    fg_body body = (fg_body)(intptr_t)n[1];
    const int64_t *sizes = (const int64_t *)(intptr_t)n[2];
    int64_t length = n[3], reverse = n[4], nc = n[5], nk = n[6], nx = n[7], no = n[8], nw = n[9], ne = n[10];
    const int64_t *carry_bytes = n + 11, *x_bytes = carry_bytes + nk, *out_bytes = x_bytes + nx,
                  *source = out_bytes + no;
    char **consts = p, **first = p + nc, **xs = first + nk, **last = xs + nx, **ys = last + nk,
         **own = ys + (no - nk), *arena = own[ne];
    char *q[FG_MAX], *dest[FG_MAX], *buffer[2][FG_MAX];
    char **in = q, **out = q + nc + nk + nx + ne;
    for (int64_t k = 0; k < nk; k++) {
        buffer[0][k] = arena; arena += carry_bytes[k];
        buffer[1][k] = arena; arena += carry_bytes[k];
    }
    for (int64_t k = 0; k < nc; k++) in[k] = consts[k];
    for (int64_t k = 0; k < nk; k++) in[nc + k] = first[k];
    for (int64_t k = 0; k < ne; k++) in[nc + nk + nx + k] = own[k];
    out[nw] = arena;
    for (int64_t s = 0; s < length; s++) {
        int64_t i = reverse ? length - 1 - s : s;
        char **carry = s == length - 1 ? last : buffer[s % 2];
        for (int64_t k = 0; k < nx; k++) in[nc + nk + k] = xs[k] + i * x_bytes[k];
        for (int64_t j = 0; j < no; j++) dest[j] = j < nk ? carry[j] : ys[j - nk] + i * out_bytes[j];
        for (int64_t j = no - 1; j >= 0; j--) if (source[j] >= 0) out[source[j]] = dest[j];
        body(0, 1, sizes, q);
        for (int64_t j = 0; j < no; j++)
            if (source[j] < 0) memcpy(dest[j], in[-1 - source[j]], out_bytes[j]);
            else if (dest[j] != out[source[j]]) memcpy(dest[j], out[source[j]], out_bytes[j]);
        for (int64_t k = 0; k < nk; k++) in[nc + k] = carry[k];
    }
}
""".replace("FG_MAX", str(2 * cc.MAX_OPERANDS + 1))


def scan(whole: NativeProgram, raw_consts: list[Any], raw_carry: list[Any], raw_xs: list[Any], length: int,
         reverse: bool, out_avals: list[Any], stats: Any) -> tuple[list[Any], list[Any]] | None:
    """A scan whose body is native program ``whole`` run as one C loop (``LOOP``): its last
    carry and its stacked ys, or None where it cannot be (an output the body takes from its
    constants, no steps, an operand that is not a NumPy array, no build). ``stats``: the
    device's memory counters, whose peak rises by what a step holds, as a step's call would
    raise it."""
    n_carry = len(raw_carry)
    arrays = [*raw_consts, *raw_carry, *raw_xs]
    if length < 1 or None in whole.sources or not all(a.__class__ is np.ndarray for a in arrays) or \
            len(arrays) + len(whole.own) != len(whole.inputs) or len(arrays) + len(out_avals) + len(whole.own) + 1 > \
            cc.MAX_OPERANDS:
        return None
    try:
        loop = cc.loop_kernel(LOOP)
    except NativeBuildError:
        return None
    last = [np.empty(a.shape, a.dtype.np) for a in out_avals[:n_carry]]
    ys = [np.empty((length, *a.shape), a.dtype.np) for a in out_avals[n_carry:]]
    step_bytes = [math.prod(a.shape) * a.dtype.itemsize for a in out_avals]
    carry_bytes = [-(-b // _ALIGN) * _ALIGN for b in step_bytes[:n_carry]]
    x_bytes = [x.nbytes // length for x in raw_xs]
    scratch = np.empty(2 * sum(carry_bytes) + whole.arena, np.uint8)
    sizes = [1, whole.kernel, whole.meta.ctypes.data + 3 * 8, length, int(reverse), len(raw_consts), n_carry,
             len(raw_xs), len(out_avals), len(whole.outputs), len(whole.own), *carry_bytes, *x_bytes, *step_bytes,
             *whole.sources]
    operands = [*arrays, *last, *ys, *whole.own, scratch]
    meta = cc.sizes_and_bytes(len(arrays), len(operands) - len(arrays), sizes, [a.nbytes for a in operands])
    if stats.allocated + whole.holds > stats.peak:
        stats.peak = stats.allocated + whole.holds
    cc.caller()(1, loop, meta, 0, 1, *operands)
    return last, ys
