"""Native kernels for lowered programs: runs of elementwise equations as one C loop each.

A *group* is a run of consecutive CPU equations whose primitives carry a C expression
(``Primitive.c_expr``, the same text CuPy's fused kernels use), of one result shape, whose
inputs broadcast to it. It becomes one C function: every intermediate a register, every
input read once per element, only the values read after the run written to memory. All
groups of a program are built into one extension module with one compiler call
(``backends/cc.py`` builds and caches it); if that fails, the program is lowered with NumPy
calls and one warning says why.

The loop nest is fixed when the program is lowered, since shapes are: dimensions whose
elements are consecutive in every operand merge, so a bias add over ``(128, 512)`` is two
loops and a same-shape chain is one; the innermost loop carries ``omp simd``. The outermost
loop runs over a range ``[lo, hi)`` given at the call, so a large group splits over
threads (``in_parallel``) with the GIL released.

Numerics: ``+ - * /``, comparisons, selects and casts give NumPy's bits (no contraction into
fused multiply-adds, literals rounded to the operand dtype as NumPy's weak scalars are);
transcendental functions are the C library's (in float32 loops glibc's vector ``libmvec``
where there is one), within a few ulp of NumPy's (``docs/compile.md`` has the measured bounds). Native
loops raise no floating-point warnings.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ...backends.cc import NativeBuildError, build
from ...config import config
from ..ir import Var

__all__ = ["NativeGroup", "build_groups", "groups", "in_parallel", "use_native"]

# the C type of each dtype a native loop reads or writes
C_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int32": "int32_t", "int64": "int64_t"}
_RESULTS = ("float32", "float64", "bool")  # results a native loop makes (a cast to an integer is NumPy's)
PARALLEL_MIN = 1 << 18  # elements per thread, at least

# The float functions glibc's libmvec has vector forms of, declared so the compiler calls
# them from vectorized loops (within 4 ulp). Double loops call the C library's scalar
# functions, which NumPy's float64 kernels also call on most CPUs.
_MVEC = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "erf", "erfc", "exp", "exp2",
         "expm1", "log", "log10", "log1p", "log2", "sin", "sinh", "tan", "tanh")

_PRELUDE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdbool.h>
#include <math.h>
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
""" + "".join(f"#pragma omp declare simd notinbranch\nfloat {f}f(float);\n" for f in _MVEC) + """#endif
#include <tgmath.h>
#define fg_max(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define fg_min(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define fg_relu(x) (((x) > 0 || (x) != (x)) ? (x) : 0)
#define fg_sigmoid(x) (1 / (1 + exp(-(x))))
#define fg_reciprocal(x) (1 / (x))
#define rsqrt(x) (1 / sqrt(x))

static PyObject *fg_ascontiguousarray;

/* An argument's memory, C-contiguous (a copy through NumPy when it is not), of nbytes bytes. */
static int fg_take(PyObject *obj, Py_buffer *view, PyObject **held, int writable, Py_ssize_t nbytes) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    *held = NULL;
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        if (writable) return -1;
        PyErr_Clear();
        *held = PyObject_CallFunctionObjArgs(fg_ascontiguousarray, obj, NULL);
        if (*held == NULL) return -1;
        if (PyObject_GetBuffer(*held, view, flags) != 0) { Py_CLEAR(*held); return -1; }
    }
    if (view->len != nbytes) {
        PyBuffer_Release(view);
        Py_CLEAR(*held);
        PyErr_Format(PyExc_ValueError, "a native kernel was given %zd bytes where it reads %zd", view->len, nbytes);
        return -1;
    }
    return 0;
}
"""


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


def groups(eqns: list[Any]) -> dict[int, int]:
    """Runs of consecutive native-fusable equations of one result shape: start -> end."""
    found, i = {}, 0
    while i < len(eqns):
        j = i
        while j < len(eqns) and c_fusable(eqns[j]) and eqns[j].outputs[0].aval.shape == eqns[i].outputs[0].aval.shape:
            j += 1
        if j > i:
            found[i] = j
        i = max(j, i + 1)
    return found


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


def _loops(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """The loop nest over ``shape``: dimensions of one element dropped, and neighbours whose
    elements are consecutive in every operand merged. ``strides``: per operand, in elements."""
    dims = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, st in dims:
        if merged and all(prev == cur * n for prev, cur in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * n, st)
        else:
            merged.append((n, st))
    if not merged:
        merged = [(1, [0] * len(strides))]
    return [n for n, _ in merged], [[st[k] for _, st in merged] for k in range(len(strides))]


def _strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """An operand's strides, in elements, over the result's index space (0 where it broadcasts)."""
    full = [1] * (len(out_shape) - len(shape)) + list(shape)
    strides, step = [0] * len(out_shape), 1
    for d in range(len(out_shape) - 1, -1, -1):
        strides[d] = step if full[d] != 1 else 0
        step *= full[d]
    return strides


class NativeGroup:
    """One group's C function (``run{index}`` of the program's module): what it reads
    (``inputs``), what it writes (``kept``), its loop bounds and its source text."""

    def __init__(self, index: int, eqns: list[Any], kept: list[Var]) -> None:
        made = {id(e.outputs[0]) for e in eqns}
        self.index, self.eqns, self.kept = index, eqns, kept
        self.inputs = list(dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made))
        out_shape = tuple(eqns[0].outputs[0].aval.shape)
        self.size = math.prod(out_shape)
        operands = [*self.inputs, *kept]
        sizes, strides = _loops(out_shape, [_strides(tuple(v.aval.shape), out_shape) for v in operands])
        self.outer = sizes[0]
        self.label = " ".join(e.prim.name for e in eqns)
        c_of = {id(a): f"x{k}" for k, a in enumerate(self.inputs)}
        lines = []
        for k, e in enumerate(eqns):
            out = e.outputs[0].aval
            vars_ = [a.aval.dtype for a in e.inputs if isinstance(a, Var)]
            lit_dtype = next((d for d in vars_ if d.name != "bool"), out.dtype) if out.dtype.name == "bool" \
                else out.dtype
            args = [c_of[id(a)] if isinstance(a, Var) else _literal(a.value, lit_dtype) for a in e.inputs]
            c_of[id(e.outputs[0])] = f"v{k}"
            lines.append(f"{C_TYPES[out.dtype.name]} v{k} = {e.prim.c_expr.format(*args, out=C_TYPES[out.dtype.name])};"
                         f"  /* {e.prim.name} */")
        self.body = lines
        idx = [f"i{d}" for d in range(len(sizes))]

        def at(st: list[int]) -> str:
            return " + ".join(f"{i} * {s}" for i, s in zip(idx, st) if s) or "0"

        inner = [f"{C_TYPES[a.aval.dtype.name]} x{k} = a{k}[{at(strides[k])}];" for k, a in enumerate(self.inputs)]
        inner += lines
        inner += [f"y{j}[{at(strides[len(self.inputs) + j])}] = {c_of[id(v)]};" for j, v in enumerate(kept)]
        params = [f"const {C_TYPES[a.aval.dtype.name]} *restrict a{k}" for k, a in enumerate(self.inputs)]
        params += [f"{C_TYPES[v.aval.dtype.name]} *restrict y{j}" for j, v in enumerate(kept)]
        loop = [f"static void loop{index}(int64_t lo, int64_t hi, {', '.join(params)}) {{"]
        for d, n in enumerate(sizes):
            pad = "    " * (d + 1)
            if d == len(sizes) - 1:
                loop.append(f"{pad}#pragma omp simd")
            bounds = "lo; i0 < hi" if d == 0 else f"0; i{d} < {n}"
            loop.append(f"{pad}for (int64_t i{d} = {bounds}; i{d}++) {{")
        pad = "    " * (len(sizes) + 1)
        loop += [pad + line for line in inner]
        loop += ["    " * d + "}" for d in range(len(sizes), -1, -1)]
        nbytes = [math.prod(v.aval.shape) * v.aval.dtype.itemsize for v in operands]
        n_in = len(self.inputs)
        entry = [f"static PyObject *run{index}(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{",
                 f"    Py_buffer views[{len(operands)}]; PyObject *held[{len(operands)}]; int taken = 0;",
                 f"    if (nargs != {2 + len(operands)}) {{ PyErr_SetString(PyExc_TypeError, "
                 f"\"run{index}: wrong number of arguments\"); return NULL; }}",
                 "    int64_t lo = PyLong_AsLongLong(args[0]), hi = PyLong_AsLongLong(args[1]);",
                 "    if (PyErr_Occurred()) return NULL;",
                 f"    if (lo < 0 || hi > {self.outer} || lo > hi) {{ PyErr_SetString(PyExc_ValueError, "
                 f"\"run{index}: range out of bounds\"); return NULL; }}",
                 f"    static const Py_ssize_t nbytes[{len(operands)}] = {{{', '.join(map(str, nbytes))}}};",
                 f"    for (; taken < {len(operands)}; taken++)",
                 f"        if (fg_take(args[2 + taken], &views[taken], &held[taken], taken >= {n_in}, "
                 "nbytes[taken]) < 0) goto done;",
                 "    Py_BEGIN_ALLOW_THREADS",
                 f"    loop{index}(lo, hi, "
                 + ", ".join([*(f"({C_TYPES[a.aval.dtype.name]} *)views[{k}].buf" for k, a in enumerate(self.inputs)),
                              *(f"({C_TYPES[v.aval.dtype.name]} *)views[{n_in + j}].buf" for j, v in enumerate(kept))])
                 + ");",
                 "    Py_END_ALLOW_THREADS",
                 "done:",
                 "    for (int k = 0; k < taken; k++) { PyBuffer_Release(&views[k]); Py_XDECREF(held[k]); }",
                 f"    if (taken < {len(operands)}) return NULL;",
                 "    Py_RETURN_NONE;",
                 "}"]
        self.source = "\n".join(loop + entry)
        self.loop_source = "\n".join(loop)
        self.fn: Callable[..., None] | None = None


_INIT = """
static PyMethodDef fg_methods[] = {
%s
    {NULL, NULL, 0, NULL}
};
static struct PyModuleDef fg_module = {PyModuleDef_HEAD_INIT, "{name}", NULL, -1, fg_methods};
PyMODINIT_FUNC PyInit_{name}(void) {
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return NULL;
    fg_ascontiguousarray = PyObject_GetAttrString(numpy, "ascontiguousarray");
    Py_DECREF(numpy);
    if (fg_ascontiguousarray == NULL) return NULL;
    return PyModule_Create(&fg_module);
}
"""

_WARNED: set[str] = set()


def build_groups(found: list[NativeGroup]) -> bool:
    """Build every group of a program into one module and give each its ``fn``; False (after
    one warning per reason) when that cannot be done, and the program keeps NumPy's calls."""
    if not found:
        return True
    body = _PRELUDE + "\n\n".join(g.source for g in found)
    table = "\n".join(f'    {{"run{g.index}", (PyCFunction)(void (*)(void))run{g.index}, METH_FASTCALL, NULL}},'
                      for g in found)
    try:
        module = build(body, _INIT % table)
    except NativeBuildError as exc:
        reason = str(exc).splitlines()[0]
        if reason not in _WARNED:
            _WARNED.add(reason)
            warnings.warn(f"{exc}\nfg.compile runs this program with NumPy calls instead "
                          "(fg.config.compile_backend = 'numpy' silences this)", RuntimeWarning, stacklevel=2)
        return False
    for g in found:
        g.fn = getattr(module, f"run{g.index}")
    return True


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


def threads_for(group: NativeGroup, threads: int) -> int:
    """How many threads a group's loop splits over: at least ``PARALLEL_MIN`` elements each,
    and no more pieces than its outermost loop has steps."""
    return max(1, min(threads, group.size // PARALLEL_MIN, group.outer))
