"""Native kernels for lowered programs: runs of elementwise equations as one C loop each.

A *group* is a run of consecutive CPU equations whose primitives carry a C expression
(``Primitive.c_expr``, the same text CuPy's fused kernels use), of one result shape, whose
inputs broadcast to it. It becomes one C function: every intermediate a register, every
input read once per element, only the values read after the run written to memory. Each
kernel is plain C, built and cached by ``backends/cc.py`` and called through one small
extension module (``_CALLER``); if a build fails, the program is lowered with NumPy calls
and one warning says why.

The loop nest is worked out when the program is lowered: dimensions whose elements are
consecutive in every operand merge, so a bias add over ``(128, 512)`` is two loops and a
same-shape chain is one; the innermost loop carries ``omp simd``. The sizes are passed at
each call, so a kernel serves every program with the same expressions and the same
pattern of broadcasting, whatever its shapes. The outermost loop runs over a range
``[lo, hi)`` given at the call, so a large group splits over threads (``cc.threads_for``;
the pieces run on the calling extension's own threads) with the GIL released.

Numerics: ``+ - * /``, comparisons, selects and casts give NumPy's bits (no contraction into
fused multiply-adds, literals rounded to the operand dtype as NumPy's weak scalars are);
transcendental functions are the C library's (in float32 loops glibc's vector ``libmvec``
where there is one), within a few ulp of NumPy's (``docs/compile.md`` has the measured
bounds). Native loops raise no floating-point warnings.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from ...backends import cc
from ...backends.cc import C_TYPES, MAX_OPERANDS, NativeBuildError, loop_kernel, sizes_and_bytes
from ...config import config
from ...primitives.elementwise import BINARY
from ...primitives.linalg import linear_p
from ..ir import Eqn, Var

__all__ = ["NativeGroup", "build_groups", "fused_reduction", "groups", "schedule", "split_biases", "use_native"]

_RESULTS = ("float32", "float64", "bool")  # results a native loop makes (a cast to an integer is NumPy's)

def use_native() -> bool:
    """Whether lowering emits native loops (``fg.config.compile_backend``)."""
    return config.compile_backend == "c"


def c_fusable(eqn: Any) -> bool:
    """An equation a native loop computes: one CPU result of a dtype it makes, from inputs
    it reads, by a C expression whose only parameter is the result's type (a cast's)."""
    expr = eqn.prim.c_expr
    if expr is None or len(eqn.outputs) != 1 or (eqn.params and "{out}" not in expr):
        return False
    out = eqn.outputs[0].aval
    if out.device.kind != "cpu" or out.dtype.name not in _RESULTS:
        return False
    return all(not isinstance(a, Var) or (a.aval.dtype.name in C_TYPES and len(a.aval.shape) <= len(out.shape))
               for a in eqn.inputs)


SINGLE_MIN = 4096  # elements: a lone equation on fewer runs as fast as NumPy's ufunc, without the kernel's call


def _run_end(eqns: list[Any], i: int) -> int:
    """Where the run of native-fusable equations of one result shape starting at ``i`` ends."""
    j = i
    while j < len(eqns) and c_fusable(eqns[j]) and eqns[j].outputs[0].aval.shape == eqns[i].outputs[0].aval.shape:
        j += 1
    return j


def groups(eqns: list[Any], every: bool = False) -> dict[int, int]:
    """Runs of consecutive native-fusable equations of one result shape, each perhaps ended
    by a reduction of one of its values (``fused_reduction``): start -> end. A lone small
    equation is left to NumPy unless ``every`` (a native program runs every run itself)."""
    found, i = {}, 0
    while i < len(eqns):
        j = _run_end(eqns, i)
        if i < j < len(eqns) and fused_reduction(eqns[j], eqns[i:j]):
            found[i] = j = j + 1
        elif j - i >= 2 or (j > i and (every or math.prod(eqns[i].outputs[0].aval.shape) >= SINGLE_MIN)):
            found[i] = j
        i = max(j, i + 1)
    return found


FOLDS = frozenset({"sum", "max", "min"})  # the reductions (by their primitives' tags) a native loop may end in
COLUMN_BLOCK = 16  # columns at least in each piece of a loop ending in a sum over its rows, split over its columns


def fused_reduction(eqn: Any, run: list[Any]) -> bool:
    """Whether ``eqn`` is a sum (or a max, a min) a native loop can end ``run`` with: of a
    float value the run makes, over a leading or a trailing block of its axes, so that it
    adds in NumPy's order (row after row; or each row pairwise, as NumPy's ``pairwise_sum``)
    and gives its bits. (A max or a min gives NumPy's values; a tie of +0 and -0 may go
    either way, as between NumPy's own loops.) A sum over leading axes splits the loop over
    its columns (``NativeGroup.columns``): a large ``gelu_grad`` run takes its bias gradient
    along, where NumPy's sum after it read the whole value again."""
    if not FOLDS & eqn.prim.tags or eqn.outputs[0].aval.device.kind != "cpu":
        return False
    (x,) = eqn.inputs
    if not isinstance(x, Var) or x.aval.dtype.name not in ("float32", "float64") or \
            all(e.outputs[0] is not x for e in run) or x.aval.shape != run[0].outputs[0].aval.shape:
        return False
    axes, rank = tuple(sorted(eqn.params["axes"])), len(x.aval.shape)
    leading, trailing = axes == tuple(range(len(axes))), axes == tuple(range(rank - len(axes), rank))
    if not axes or not (leading or trailing):
        return False
    if trailing and not leading:  # (rows summed apart: the loop still splits over its rows)
        return True
    # A sum into one row on one thread: left to NumPy it reads the value again (about two work
    # units an element), and on two threads a run saves half its work, so more only above four.
    # A sum into a row of many columns splits over them.
    size, per_element = math.prod(x.aval.shape), cc.work(e.prim.c_expr for e in run if e.prim.c_expr)
    columns = math.prod(x.aval.shape[len(axes):])
    return per_element <= 4 or cc.threads_for(size, size, per_element) == 1 or columns >= 2 * COLUMN_BLOCK


def split_biases(eqns: list[Any]) -> list[Any]:
    """The equations, each ``linear`` with a bias whose result the next equation reads in a
    native loop of its shape written as the product, then an ``add`` of the bias: the add
    joins that loop (a GELU's, a residual's), where the linear kernel's own bias add was a
    pass over the result of its own. The bits are the same: the product, then one
    addition an element."""
    out = list(eqns)
    i = 0
    while i < len(out) - 1:
        eqn, after = out[i], out[i + 1]
        if eqn.prim is linear_p and len(eqn.inputs) == 3 and c_fusable(after) and \
                any(a is eqn.outputs[0] for a in after.inputs) and \
                after.outputs[0].aval.shape == eqn.outputs[0].aval.shape:
            (y,), product = eqn.outputs, Var(eqn.outputs[0].aval)
            add = BINARY["add"]
            if c_fusable(Eqn(add, [product, eqn.inputs[2]], [y], {})):
                out[i:i + 1] = [Eqn(linear_p, eqn.inputs[:2], [product], eqn.params), Eqn(add, [product, eqn.inputs[2]],
                                                                                            [y], {})]
                i += 1
        i += 1
    return out


def schedule(eqns: list[Any]) -> list[Any]:
    """The equations, each reduction that can end a native run (``fused_reduction``) moved up
    to just after that run (a program is pure: an equation may run as soon as its input
    exists)."""
    eqns = list(eqns)
    i = 0
    while i < len(eqns):
        j = _run_end(eqns, i)
        if j > i:
            later = next((k for k in range(j, len(eqns)) if fused_reduction(eqns[k], eqns[i:j])), None)
            if later is not None:
                eqns.insert(j, eqns.pop(later))
        i = max(j, i + 1)
    return eqns


def _literal(value: Any, dtype: Any) -> str:
    """A Python scalar as a C literal of ``dtype``, rounded as NumPy rounds a weak scalar."""
    v = dtype.np.type(value)
    if dtype.name == "bool":
        return "true" if v else "false"
    if dtype.kind in "iu":
        return f"(({C_TYPES[dtype.name]}){int(v)}LL)"
    ctype, x = C_TYPES[dtype.name], float(v)
    if math.isnan(x):
        return f"(({ctype})NAN)"
    if math.isinf(x):
        return f"(({ctype}){'-' if x < 0 else ''}INFINITY)"
    return f"(({ctype}){x.hex()})"


class NativeGroup:
    """One group's kernel: what it reads (``inputs``), what it writes (``kept``), its loop
    sizes (``meta``, passed at each call) and its C source. The source depends on the
    expressions, the dtypes and which loops each operand moves in, not on the sizes, so
    programs of other shapes share it (and its build)."""

    def __init__(self, eqns: list[Any], kept: list[Var], strides: dict[int, tuple[int, ...]] | None = None,
                 dying: Sequence[Var] = ()) -> None:
        made = {id(e.outputs[0]) for e in eqns}
        self.eqns, self.kept = eqns, kept
        total = eqns[-1] if FOLDS & eqns[-1].prim.tags else None  # (a reduction ending the run: fused_reduction)
        fold = min(FOLDS & total.prim.tags) if total is not None else "sum"
        if total is not None:
            eqns = eqns[:-1]
            if total.outputs[0] not in kept:
                kept = self.kept = [*kept, total.outputs[0]]
        self.inputs = list(dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made))
        # Result j written into the memory of input k (``aliases[j] = k``): an input in ``dying``
        # (temporaries the program made that die here, held by nothing else, the most recently
        # made first) of the result's type and shape, so that the loop reads each of its
        # elements in the iteration that writes the result's element there, before it writes
        # it. The result then lands in memory the caches hold (a product's result, a cotangent
        # just computed). Memory laid out otherwise than in C order is left alone at the call
        # (``lower._write_native_group``).
        free = [self.inputs.index(a) for a in dying if a in self.inputs]
        self.aliases: dict[int, int] = {}
        for j, v in enumerate(kept):
            k = next((k for k in free if self.inputs[k].aval == v.aval), None)
            if k is not None and (total is None or v is not total.outputs[0]):
                self.aliases[j] = k
                free.remove(k)
        operands = [*self.inputs, *kept]
        if len(operands) > MAX_OPERANDS:
            raise ValueError("too many operands for one native kernel")
        out_shape = tuple(eqns[0].outputs[0].aval.shape)
        self.size = math.prod(out_shape)
        axes = set(total.params["axes"]) if total is not None else set()
        full = [tuple(1 if d in axes else n for d, n in enumerate(out_shape)) if total is not None and
                v is total.outputs[0] else tuple(v.aval.shape) for v in operands]  # (a sum's shape, its axes kept)
        strides = strides or {}  # (inputs laid out otherwise than in C order: their strides, in elements)
        given = [_over(strides[id(v)], tuple(v.aval.shape), out_shape) if id(v) in strides else
                 cc.broadcast_strides(f, out_shape) for v, f in zip(operands, full)]
        sizes, moves = cc.merged_loops(out_shape, given)
        steps = cc.merged_strides(out_shape, given)
        summed = [not moves[-1][d] for d in range(len(sizes))] if total is not None else [False] * len(sizes)
        # A sum over the rows into one row of many columns, in a loop worth splitting: the loop
        # outside runs over blocks of the columns, each all the rows in order (NumPy's bits), one
        # block a thread (four a thread, as other loops split, read each row 256 bytes at a time
        # in nanoGPT's bias gradient and took 1.7x as long).
        self.work = cc.work(e.prim.c_expr for e in eqns if e.prim.c_expr)  # (per element)
        self.columns = total is not None and len(sizes) >= 2 and all(summed[:-1]) and not summed[-1] and \
            sizes[-1] >= 2 * COLUMN_BLOCK and cc.threads_for(self.size, sizes[-1] // COLUMN_BLOCK, self.work) > 1
        if total is not None and (summed[0] or not any(summed)):  # (all summed, or one element: a loop of 1 outside,
            blocks = min(config.compile_threads, sizes[-1] // COLUMN_BLOCK) if self.columns else 1  # or blocks)
            sizes, moves, summed = [blocks, *sizes], [[False, *m] for m in moves], [False, *summed]
            steps = [[0, *st] for st in steps]
        self.trailing = total is not None and summed[-1]  # (else a leading sum: row after row)
        self.outer = sizes[0]
        self.parallel = total is None or self.trailing or self.columns  # (else its loop adds into every result)
        nbytes = [math.prod(v.aval.shape) * v.aval.dtype.itemsize for v in operands]
        self.meta = sizes_and_bytes(len(self.inputs), len(kept), sizes, nbytes)
        self.label = " ".join(e.prim.name for e in self.eqns)
        c_of = {id(a): f"x{k}" for k, a in enumerate(self.inputs)}
        body = []
        for k, e in enumerate(eqns):
            out = e.outputs[0].aval
            vars_ = [a.aval.dtype for a in e.inputs if isinstance(a, Var)]
            lit_dtype = next((d for d in vars_ if d.name != "bool"), out.dtype) if out.dtype.name == "bool" \
                else out.dtype
            args = [c_of[id(a)] if isinstance(a, Var) else _literal(a.value, lit_dtype) for a in e.inputs]
            c_of[id(e.outputs[0])] = f"v{k}"
            ctype = C_TYPES[out.dtype.name]
            body.append(f"{ctype} v{k} = {e.prim.c_expr.format(*args, out=ctype)};  /* {e.prim.name} */")
        rank = len(sizes)

        ctypes_ = [C_TYPES[v.aval.dtype.name] for v in operands]
        n_in = len(self.inputs)
        lines = []
        if self.trailing:
            lines += _pairwise(ctypes_[-1]) if fold == "sum" else _sequential(ctypes_[-1], f"fg_{fold}")
        lines += ["void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {"]
        shared = set(self.aliases.values())  # (an element is read, then written, in one iteration: no restrict)
        lines += [f"    const {t} *{'' if k in shared else 'restrict '}a{k} = (const {t} *)p[{k}];"
                  for k, t in enumerate(ctypes_[:n_in])]
        lines += [f"    {t} *{'' if j in self.aliases else 'restrict '}y{j} = ({t} *)p[{n_in + j}];"
                  for j, t in enumerate(ctypes_[n_in:])]
        first_summed = summed.index(True) if any(summed) else rank
        if self.trailing:  # each row's values into a buffer, then added pairwise (or folded)
            row = " * ".join(f"n[{d}]" for d in range(first_summed, rank))
            lines.append(f"    {ctypes_[-1]} *row = ({ctypes_[-1]} *)malloc(sizeof({ctypes_[-1]}) * ({row}));")
        for d in range(rank):
            pad = "    " * (d + 1)
            if d == rank - 1:
                lines.append(f"{pad}#pragma omp simd")
            if d == rank - 1 and self.columns:  # (block i0's columns)
                i, n = f"i{d}", f"n[{d}]"
                lines.append(f"{pad}for (int64_t {i} = i0 * {n} / n[0]; {i} < (i0 + 1) * {n} / n[0]; {i}++) {{")
                continue
            lines.append(f"{pad}for (int64_t i{d} = {'lo' if d == 0 else '0'}; i{d} < {'hi' if d == 0 else f'n[{d}]'}; "
                         f"i{d}++) {{")
        pad = "    " * (rank + 1)
        at = [_index(steps[k]) if id(v) in strides else cc.element_index(moves[k]) for k, v in enumerate(self.inputs)]
        lines += [f"{pad}{ctypes_[k]} x{k} = a{k}[{at[k]}];" for k in range(n_in)]
        lines += [pad + line for line in body]
        lines += [f"{pad}y{j}[{cc.element_index(moves[n_in + j])}] = {c_of[id(v)]};" for j, v in enumerate(kept)
                  if total is None or v is not total.outputs[0]]
        if total is not None:
            value, out = c_of[id(total.inputs[0])], f"y{len(kept) - 1}[{cc.element_index(moves[len(operands) - 1])}]"
            if self.trailing:  # (the value's place in its row, in C order)
                place = " + ".join(" * ".join([f"i{d}", *(f"n[{e}]" for e in range(d + 1, rank))])
                                   for d in range(first_summed, rank))
                lines.append(f"{pad}row[{place}] = {value};")
            else:  # (NumPy starts a sum from +0, so that -0 values sum to +0; a max or min from the first)
                first = " && ".join(f"i{d} == 0" for d in range(rank) if summed[d]) or "1"
                start, step = (f"({ctypes_[-1]})0 + {value}", f"{out} + {value}") if fold == "sum" else \
                    (value, f"fg_{fold}({out}, {value})")
                lines.append(f"{pad}{out} = ({first}) ? {start} : {step};")
        for d in range(rank - 1, -1, -1):
            lines.append("    " * (d + 1) + "}")
            if self.trailing and d == first_summed:
                folded = f"({ctypes_[-1]})0 + fg_pairwise(row, {row})" if fold == "sum" else f"fg_fold(row, {row})"
                lines.append("    " * d + f"    {out} = {folded};")
        if self.trailing:
            lines.append("    free(row);")
        lines.append("}")
        self.source = "\n".join(lines)
        self.kernel = 0  # its address, once built


def _over(strides: tuple[int, ...], shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """An operand's strides over the result's index space (0 where it broadcasts)."""
    lead = len(out_shape) - len(shape)
    return [0 if d < lead or shape[d - lead] == 1 else strides[d - lead] for d in range(len(out_shape))]


def _index(steps: list[int]) -> str:
    """The C index of an element of an operand of strides ``steps`` in the loops ``i0, i1...``."""
    return " + ".join(f"i{d} * {s}" for d, s in enumerate(steps) if s) or "0"


def _sequential(ctype: str, combine: str) -> list[str]:
    """A row folded from its first value on, one value after another (a max or a min)."""
    return [f"static {ctype} fg_fold(const {ctype} *a, int64_t n) {{",
            f"    {ctype} s = a[0];",
            f"    for (int64_t i = 1; i < n; i++) s = {combine}(s, a[i]);",
            "    return s;",
            "}"]


def _pairwise(ctype: str) -> list[str]:
    """NumPy's ``pairwise_sum`` (``numpy/_core/src/umath/loops_utils.h.src``) in C: below 8
    values one by one, up to 128 in eight interleaved partial sums, beyond that the two halves
    (split at a multiple of 8) summed apart. A row summed this way has NumPy's bits."""
    return [f"static {ctype} fg_pairwise(const {ctype} *a, int64_t n) {{",
            "    if (n < 8) {",
            f"        {ctype} s = ({ctype})0;",
            "        for (int64_t i = 0; i < n; i++) s += a[i];",
            "        return s;",
            "    }",
            "    if (n <= 128) {",
            f"        {ctype} r[8];",
            "        for (int j = 0; j < 8; j++) r[j] = a[j];",
            "        int64_t i;",
            "        for (i = 8; i < n - (n % 8); i += 8)",
            "            for (int j = 0; j < 8; j++) r[j] += a[i + j];",
            f"        {ctype} s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));",
            "        for (; i < n; i++) s += a[i];",
            "        return s;",
            "    }",
            "    int64_t half = n / 2;",
            "    half -= half % 8;",
            "    return fg_pairwise(a, half) + fg_pairwise(a + half, n - half);",
            "}"]


_WARNED: set[str] = set()


def build_groups(found: list[NativeGroup]) -> bool:
    """Build (or find in the cache) every group's kernel and the extension that calls them;
    False (after one warning per reason) when that cannot be done, and the program keeps
    NumPy's calls."""
    try:
        for g in found:
            g.kernel = loop_kernel(g.source)
    except NativeBuildError as exc:
        reason = str(exc).splitlines()[0]
        if reason not in _WARNED:
            _WARNED.add(reason)
            warnings.warn(f"{exc}\nfg.compile runs this program with NumPy calls instead "
                          "(fg.config.compile_backend = 'numpy' silences this)", RuntimeWarning, stacklevel=2)
        return False
    return True


def threads_for(group: NativeGroup, threads: int) -> int:
    """How many threads a group's loop splits over (``cc.threads_for``, ``threads`` at most):
    one where its outermost loop accumulates."""
    return min(threads, cc.threads_for(group.size, group.outer, group.work)) if group.parallel else 1
