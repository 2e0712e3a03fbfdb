"""The system C compiler, for ``fg.compile``'s native kernels.

Kernels are plain C (no Python headers, so a build takes a fraction of a second), built
into shared libraries, cached on disk and loaded with ``ctypes`` for their addresses only.
They are called through one small extension module (``compiler/native.py`` has its source,
built once per machine) that reads NumPy arrays through the buffer protocol: reaching an
array's address through ``ndarray.ctypes`` costs about 2.7 µs per array, the buffer
protocol a few tens of nanoseconds, and a fused loop over a (128, 512) array runs in
about 20 µs. It needs only the standard library and the Python headers the interpreter
ships with.

* The compiler is ``$CC`` or the first of ``cc``, ``gcc``, ``clang`` on the ``PATH``, with
  ``-O3 -march=native`` (without ``-march`` where the compiler refuses it),
  ``-ffp-contract=off`` (no fused multiply-add: ``a * b + c`` rounds twice, as NumPy does),
  ``-fno-trapping-math`` (a select of two computed values vectorizes: no loop relies on
  floating-point traps)
  and ``-fopenmp-simd`` (the loops' ``omp simd`` pragmas, and glibc's vector math library
  ``libmvec`` for ``expf``, ``tanhf``... where it exists).
* Built modules are cached under ``$FUNCGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/funcgrad``,
  else ``~/.cache/funcgrad``, keyed by a hash of the source, the flags, the compiler's
  version and the Python ABI. A build writes a file of its own name and renames it into
  place, so processes building the same kernel at once never see half a file.
* Anything that goes wrong raises ``NativeBuildError``; the compiler falls back to its
  NumPy lowering (``transforms/compiler/native.py``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import importlib.machinery
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from ..config import config
from ..errors import FuncgradError

__all__ = ["C_TYPES", "MAX_OPERANDS", "PRELUDE", "NativeBuildError", "cache_dir", "caller", "extension", "kernel",
           "loop_kernel", "run", "settle_blas_threads", "share_blas_threads", "cpu_flags", "sizes_and_bytes",
           "threads_for", "toolchain", "unary", "work",
           "EAGER_MIN",
           "broadcast_strides", "element_index", "elementwise", "merged_loops", "merged_strides", "blas", "libm",
           "plain_kernel"]


class NativeBuildError(FuncgradError, RuntimeError):
    """A native kernel could not be built or loaded (no compiler, no Python headers, a
    failed compilation); the caller falls back to NumPy."""


def cache_dir() -> Path:
    """Where built kernels are kept (created on first use)."""
    root = os.environ.get("FUNCGRAD_CACHE_DIR")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "funcgrad")
    return Path(root) / "native"


class Toolchain:
    """The compiler and how it is called on this machine, found once per process."""

    def __init__(self, command: list[str], version: str, flags: list[str], libraries: list[str]) -> None:
        self.command, self.version, self.flags, self.libraries = command, version, flags, libraries
        self.include = sysconfig.get_paths()["include"]
        self.suffix = importlib.machinery.EXTENSION_SUFFIXES[0]

    def compile(self, source: Path, target: Path) -> None:
        cmd = [*self.command, *self.flags, f"-I{self.include}", str(source), "-o", str(target), *self.libraries]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603
        if done.returncode != 0:
            raise NativeBuildError(f"fg.compile: the C compiler failed ({' '.join(cmd)}):\n{done.stderr[-2000:]}")


_BASE_FLAGS = ["-O3", "-shared", "-fPIC", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fopenmp-simd",
               "-w"]


@functools.lru_cache(maxsize=1)
def _cpu_field(name: str) -> str:
    """The value Linux reports for field ``name`` of this CPU (``/proc/cpuinfo``); "" where it
    reports none."""
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.split(":", 1)[0].strip() == name), "")
    except OSError:
        return ""


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags Linux reports for this CPU (``avx2``, ``avx512_fp16``...);
    none where it reports none: what the code other libraries run here was built for."""
    return frozenset(_cpu_field("flags").split())


@functools.lru_cache(maxsize=1)
def toolchain() -> Toolchain:
    """The system compiler, its version and the flags it accepts (``NativeBuildError`` if there
    is none)."""
    wanted = os.environ.get("CC")
    command = wanted.split() if wanted else next(([c] for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if not command or not shutil.which(command[0]):
        raise NativeBuildError("fg.compile: no C compiler found (set CC, or install gcc or clang)")
    try:
        version = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=30,  # noqa: S603
                                 check=False).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError) as exc:
        raise NativeBuildError(f"fg.compile: cannot run the C compiler {command[0]!r}: {exc}") from exc
    flags = list(_BASE_FLAGS)
    libraries = ["-lm"]
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("double probe(double x) { return x * 2; }\n")
        for extra, where in ((["-march=native"], flags), (["-lmvec"], libraries)):
            cmd = [*command, *flags, str(probe), "-o", str(Path(tmp) / "probe.so"), *libraries, *extra]
            if subprocess.run(cmd, capture_output=True, timeout=60, check=False).returncode == 0:  # noqa: S603
                where.extend(extra)
    return Toolchain(command, version, flags, libraries)


_LOADED: dict[str, Any] = {}
_FAILED: dict[str, NativeBuildError] = {}


def _built(source: str, stem: str, suffix: str, python: bool) -> Path:
    """The path of ``source`` built into a shared library (from the cache when it is there).
    ``python``: built against Python's headers (an extension module). A build that failed
    fails again at once: it is not retried on every call."""
    if source in _FAILED:
        raise _FAILED[source]
    try:
        return _build(source, stem, suffix, python)
    except NativeBuildError as exc:
        _FAILED[source] = exc
        raise


def _build(source: str, stem: str, suffix: str, python: bool) -> Path:
    tools = toolchain()
    if python and not os.path.exists(os.path.join(tools.include, "Python.h")):
        raise NativeBuildError("fg.compile: this Python has no development headers (Python.h), "
                               "which native kernels are called through")
    key = hashlib.sha256("\0".join((source, tools.version, " ".join(tools.flags + tools.libraries),
                                    sys.version if python else "", suffix)).encode()).hexdigest()[:24]
    folder = cache_dir()
    target = folder / f"{stem}{key}{suffix}"
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(suffix=".c", prefix=f"{stem}{key}.", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(source.replace("{name}", f"{stem}{key}"))
        partial = Path(name).with_suffix(".part")
        try:
            tools.compile(Path(name), partial)
            os.replace(partial, target)  # atomic: another process sees no file or the whole one
        finally:
            for leftover in (Path(name), partial):
                leftover.unlink(missing_ok=True)
    except OSError as exc:
        raise NativeBuildError(f"fg.compile: cannot write native kernels to {folder}: {exc}") from exc
    return target


def kernel(source: str, symbol: str) -> int:
    """The address of function ``symbol`` of plain C ``source`` (no Python headers: a build
    takes a fraction of a second), built or found in the cache, loaded with ``ctypes``."""
    if source in _LOADED:
        return _LOADED[source]  # type: ignore[no-any-return]
    path = _built(source, "funcgrad_kernel_", ".so", python=False)
    try:
        library = ctypes.CDLL(str(path))
        address = ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
    except (OSError, AttributeError) as exc:
        raise NativeBuildError(f"fg.compile: cannot load the native kernel {path}: {exc}") from exc
    if not address:
        raise NativeBuildError(f"fg.compile: the native kernel {path} has no {symbol}")
    _LOADED[source] = address
    return address


def extension(source: str) -> ModuleType:
    """The extension module of C ``source`` (with ``{name}`` where its name goes: derived
    from the hash of everything that makes the binary), built or found in the cache."""
    if source in _LOADED:
        return _LOADED[source]  # type: ignore[no-any-return]
    path = _built(source, "funcgrad_ext_", importlib.machinery.EXTENSION_SUFFIXES[0], python=True)
    name = path.name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise NativeBuildError(f"fg.compile: cannot load the native module {path}")
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise NativeBuildError(f"fg.compile: cannot load the native module {path}: {exc}") from exc
    _LOADED[source] = module
    return module


# ---- the kernels' C: what every kernel includes, and the extension that calls them

# The float functions glibc's libmvec has vector forms of, declared so the compiler calls
# them from vectorized loops (within 4 ulp). Double loops call the C library's scalar
# functions, which NumPy's float64 kernels also call on most CPUs.
_MVEC = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "erf", "erfc", "exp", "exp2",
         "expm1", "log", "log10", "log1p", "log2", "sin", "sinh", "tan", "tanh")

PRELUDE = """#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <math.h>
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
""" + "".join(f"#pragma omp declare simd notinbranch\nfloat {f}f(float);\n" for f in _MVEC) + """#endif
#include <tgmath.h>
#define fg_max(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define fg_min(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define fg_relu(x) (((x) > 0 || (x) != (x)) ? (x) : 0)
#define fg_sigmoid(x) (1 / (1 + fg_exp(-(x))))
#define fg_reciprocal(x) (1 / (x))
#define fg_gelu(x) _Generic((x), float: fg_gelu_f((float)(x)), \
    default: 0.5 * (x) * erfc(-(x) * 0.70710678118654752440))
#define fg_gelu_grad(x) _Generic((x), float: fg_gelu_grad_f((float)(x)), \
    default: 0.5 * erfc(-(x) * 0.70710678118654752440) + (x) * (exp(-0.5 * ((x) * (x))) * 0.39894228040143267794))
#define rsqrt(x) (1 / sqrt(x))
/* a select by a bool as a blend of the values' bits: gcc vectorizes no ternary whose
   condition is a byte and whose values are wider (it ran a lane at a time, 6x slower) */
#define FG_SEL(name, T, U) static inline T name(bool c, T a, T b) { \
    U x, y, m = -(U)c; \
    __builtin_memcpy(&x, &a, sizeof(T)); __builtin_memcpy(&y, &b, sizeof(T)); \
    x = (x & m) | (y & ~m); \
    __builtin_memcpy(&a, &x, sizeof(T)); \
    return a; \
}
FG_SEL(fg_sel_f, float, uint32_t)
FG_SEL(fg_sel_d, double, uint64_t)
static inline int32_t fg_sel_i(bool c, int32_t a, int32_t b) { int32_t m = -(int32_t)c; return (a & m) | (b & ~m); }
static inline int64_t fg_sel_l(bool c, int64_t a, int64_t b) { int64_t m = -(int64_t)c; return (a & m) | (b & ~m); }
#define fg_where(c, a, b) \
    _Generic((a) + (b), float: fg_sel_f, double: fg_sel_d, int64_t: fg_sel_l, default: fg_sel_i)((c) != 0, a, b)
#define fg_tanh(x) _Generic((x), float: fg_tanhf((float)(x)), default: tanh(x))
#define fg_exp(x) _Generic((x), float: fg_expf((float)(x)), default: exp(x))
#ifdef __FMA__
#define fg_fma(a, b, c) __builtin_fmaf(a, b, c)
#else
#define fg_fma(a, b, c) ((a) * (b) + (c))
#endif
/* exp of a float by glibc's vector expf, kept off its slow path: a vector holding an
   argument below -87 (a subnormal result, 0, or a masked score's -inf) is computed one lane
   at a time there, 3-4x slower. Those arguments are shifted by 87 and the result scaled
   back by exp(-87) (0x00B33687), within 1 ulp of the subnormal result; below -104 the scale
   is 0 (a product of two tiny numbers would be a slow subnormal one).
   The shift, the scale and the stand-in argument are picked with bit masks: written as
   selects, gcc calls expf once for each, or moves the select after the call. */
static inline float fg_expf(float x) {
    uint32_t low = -(uint32_t)(x < -87.0f), none = -(uint32_t)(x < -104.0f), bits = low & 0x42AE0000u;
    float shift, scale, a;
    __builtin_memcpy(&shift, &bits, 4);
    bits = (low & ~none & 0x00B33687u) | (~low & 0x3F800000u);
    __builtin_memcpy(&scale, &bits, 4);
    a = x + shift;
    __builtin_memcpy(&bits, &a, 4);
    bits = (none & 0xC2AC0000u) | (~none & bits);  /* -86 where the result is 0 (-87 itself is slow) */
    __builtin_memcpy(&a, &bits, 4);
    return expf(a) * scale;
}
/* expm1(r) for |r| within ln(2)/2, a polynomial (its error under 1e-8 of the result) */
static inline float fg_expm1_poly(float r) {
    float q = 1.0f / 5040.0f;
    q = fg_fma(q, r, 1.0f / 720.0f);
    q = fg_fma(q, r, 1.0f / 120.0f);
    q = fg_fma(q, r, 1.0f / 24.0f);
    q = fg_fma(q, r, 1.0f / 6.0f);
    q = fg_fma(q, r, 0.5f);
    return fg_fma(q, r * r, r);
}
/* k = y / ln 2 + 1.5 * 2^23, whose low bits are n = round(y / ln 2) */
static inline float fg_log2_rounded(float y) { return y * 1.44269504f + 12582912.0f; }
/* r = y - n ln 2 (ln 2 in two parts), within ln(2)/2, for k = fg_log2_rounded(y) */
static inline float fg_ln2_remainder(float y, float k) {
    const float n = k - 12582912.0f;
    return fg_fma(n, -1.42860677e-06f, fg_fma(n, -0.693145752f, y));
}
/* 2^n for k = fg_log2_rounded(y) */
static inline float fg_pow2_rounded(float k) {
    uint32_t bits;
    __builtin_memcpy(&bits, &k, 4);
    bits = (bits - 0x4B400000u + 127u) << 23;
    float scale;
    __builtin_memcpy(&scale, &bits, 4);
    return scale;
}
/* exp(y - c) = 2^n (1 + q), c a small correction: returns q = expm1(r), r = y - c - n ln 2
   within ln(2)/2, and sets *scale = 2^n (n = round(y / ln 2) within the float exponent's
   range). Inlined and vectorized where glibc's vector functions are calls (a c of 0 costs
   nothing: x - 0 is x, where x + 0 is not for -0). */
static inline float fg_expm1_reduced(float y, float c, float *scale) {
    const float k = fg_log2_rounded(y);
    *scale = fg_pow2_rounded(k);
    return fg_expm1_poly(fg_ln2_remainder(y, k) - c);
}
/* GELU's normal distribution function as JAX writes it, Phi(x) = erfc(-x / sqrt 2) / 2, from
   one exponential: with a = |x|, erfc(a / sqrt 2) = e R(t), e = exp(-a^2 / 2) and R =
   erfc(z) exp(z^2) a polynomial in t = 1 / (1 + 0.4 z) (within 2.2e-7 in float). So
   Phi(x) = h e for x <= 0 (its relative precision kept: 1 + erf(x) in float32 loses it) and
   1 - h e above, h = R / 2; the density is e / sqrt(2 pi), the same e. a^2 is split in two
   (a fused multiply-add), its low part the exponent's correction (fg_expm1_reduced); |x|
   above 14 gives e = 0. Returns e and sets *h. */
static inline float fg_normal_tail(float x, float *h) {
    float a = fabsf(x);
    a = a < 14.0f ? a : 14.0f;
    float sq = a * a, low = fg_fma(a, a, -sq);
    float y = -0.5f * sq, s;
    float q = fg_expm1_reduced(y, 0.5f * low, &s);
    float e = y < -87.0f ? 0.0f : fg_fma(s, q, s);
    float t = 1.0f / fg_fma(0.28284271f, a, 1.0f);
    float p = -0.0396222994f;
    p = fg_fma(p, t, 0.255666137f);
    p = fg_fma(p, t, -0.643992424f);
    p = fg_fma(p, t, 0.757924616f);
    p = fg_fma(p, t, -0.478592396f);
    p = fg_fma(p, t, 0.391042084f);
    p = fg_fma(p, t, 0.0807585642f);
    p = fg_fma(p, t, 0.228234529f);
    p = fg_fma(p, t, 0.222658202f);
    p = fg_fma(p, t, 0.225932643f);
    p = fg_fma(p, t, -9.63723687e-06f);
    *h = 0.5f * p;
    return e;
}
/* x Phi(x), the small factors multiplied first so that no product is subnormal before the
   result is; within 8 ulp of the correctly rounded value over every float32 (95% exact) */
static inline float fg_gelu_f(float x) {
    float h, e = fg_normal_tail(x, &h);
    return x > 0 ? x * (1.0f - h * e) : (x * h) * e;
}
/* Phi(x) + x phi(x): within 5.2e-7 of the larger of the two terms over every float32 */
static inline float fg_gelu_grad_f(float x) {
    float h, e = fg_normal_tail(x, &h);
    return (x > 0 ? 1.0f - h * e : h * e) + x * (e * 0.39894228040143267794f);
}
/* tanh of a float as e / (e + 2), e = expm1(2|x|) = 2^n (expm1(r) + 1) - 1 with r within
   ln(2)/2 and expm1(r) a polynomial. Within 2 ulp of the correctly rounded value over every
   float, it vectorizes inline, at half the time of glibc's vector tanhf (XLA inlines a
   rational approximation for the same reason). */
static inline float fg_tanhf(float x) {
    float a = fabsf(x);
    a = a > 9.1f ? 9.1f : a;                   /* tanh rounds to 1 from 9.01; NaN passes */
    float s, q = fg_expm1_reduced(a + a, 0.0f, &s);
    float e = fg_fma(s, q, s - 1.0f);
    return copysignf(e / (e + 2.0f), x);
}
"""

MAX_OPERANDS = 64  # arrays one kernel call takes
MAX_THREADS = 64  # threads one kernel call splits over, at most

# The one extension module every kernel is called through: ``call(threads, kernel, meta, lo,
# hi, *arrays)`` takes each array's memory (C-contiguous, copied through NumPy when it is
# not; writable for the results), checks its size against ``meta`` (int64: inputs, results,
# rank, the loop sizes, each operand's bytes), and runs the kernel over ``[lo, hi)`` of its
# outermost loop with the GIL released, shared out over ``threads`` threads.
#
# The threads are its own: made on first use, asleep on a condition variable between calls
# after yielding for ``SPIN_NS`` (a step's next job usually comes sooner: on a VM, a vCPU left
# idle wakes slowly, and the first MNIST step after a 0.25 s pause took 58-67 ms where it took
# 72-76 without the wait, 42-50 in a run), the calling thread one of them. The loop is cut
# into chunks (a few per thread, on multiples of 64 steps) and the chunks into one run of
# consecutive chunks per thread, the caller's first. Each thread takes its own run's chunks
# first, then what is left of the others' runs: a thread that wakes late finds its share done
# by the others, and while all are awake each thread works on the same part of the memory from
# one loop to the next, and in the products on these threads (OpenBLAS's job k runs on thread
# k), so that part stays in its core's cache (the MNIST step 0.97x and nanoGPT's 0.99x the
# time they took when each thread took the next unclaimed chunk of the whole loop, alternating
# processes, Intel Xeon). The caller waits only for chunks a thread has begun, yielding for
# ``SPIN_NS`` before it sleeps too (asleep, its own vCPU went idle: with the wait, a round of
# three steps after a 0.25 s pause took 0.79-0.83x PyTorch's for MNIST and 0.94-1.01x for
# nanoGPT where it took 0.88-0.95x and 0.96-1.05x, the process's threads sleeping 11-12 times
# a step instead of 18-20). (On a 2-core EPYC VM a wake took about 200 us, and right after a
# matrix product OpenBLAS's own threads spin on the cores: with a fixed half for the other
# thread, back-to-back GELU gradients of 2^19 elements took what one thread takes; in chunks,
# 0.6x.) A Python thread pool costs 50-70 us a call here in submitting, waking and joining;
# this costs a futex wake. One call uses the threads at a time: a call that finds them busy
# (another Python thread's) runs the whole loop itself. A forked child starts with none and
# makes its own.
# With OpenBLAS's products on the same threads (``share_blas_threads``), 1 ms rather than 200
# us: NumPy's own loops between products, longer than 200 us, put the threads to sleep before
# each product (a NumPy MLP step took 5.0-5.3 ms where it took 3.2-3.3).
SPIN_NS = 1_000_000  # how long an idle thread of the extension yields before it sleeps
CALLER = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

typedef void (*fg_kernel)(int64_t, int64_t, const int64_t *, char **);
static PyObject *fg_ascontiguousarray;

/* The loop being shared out, cut into chunks, and the chunks into one run of consecutive chunks a thread (the
   caller's first): each thread takes its own run's chunks first, in order, so that a thread works on the same part of
   the memory from one loop to the next (a loop's rows, the next loop's rows, a product's rows: each thread's part
   stays in its core's cache), and then what is left of the others' runs (a thread that wakes late finds its share
   done). ``fg_claims[t]`` packs the job's number (high 32 bits), the end of run t (16 bits) and its next unclaimed
   chunk (low 16 bits): a thread claims a chunk by one compare-and-swap, and only then reads the job, which stays as it
   is until every claimed chunk is done. */
static struct { fg_kernel kernel; const int64_t *sizes; char **pointers; int64_t lo, hi, chunks; int one_each; } fg_job;
static uint64_t fg_claims[FG_THREADS + 1];
static uint64_t fg_jobs = 0;
static int fg_runs = 0;
static __thread int fg_me = 0;  /* this thread's run: 0 for a caller, k for the k-th thread made */
static int64_t fg_finished = 0;
static long fg_round = 0;
static int fg_started = 0;
static pthread_mutex_t fg_busy = PTHREAD_MUTEX_INITIALIZER, fg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fg_work = PTHREAD_COND_INITIALIZER, fg_done = PTHREAD_COND_INITIALIZER;

/* chunk k of n: nearly equal, on multiples of 64 steps where the loop is long */
static int64_t fg_start(int64_t lo, int64_t hi, int64_t k, int64_t n) {
    int64_t at = lo + (hi - lo) * k / n;
    return (hi - lo >= 64 * n && k > 0 && k < n) ? lo + ((at - lo) & ~(int64_t)63) : at;
}

/* the next unclaimed chunk of run r, claimed; -1 where it has none left */
static int64_t fg_claim(int r) {
    for (;;) {
        uint64_t c = __atomic_load_n(&fg_claims[r], __ATOMIC_ACQUIRE);
        if ((c & 0xffff) >= ((c >> 16) & 0xffff)) return -1;
        if (__atomic_compare_exchange_n(&fg_claims[r], &c, c + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return (int64_t)(c & 0xffff);
    }
}

/* take chunks of the current job, this thread's run first, until none is left */
static void fg_help(void) {
    const int runs = __atomic_load_n(&fg_runs, __ATOMIC_ACQUIRE);
    for (int k = 0; k < runs; k++) {
        const int r = (fg_me + k) % runs;
        for (int64_t next; (next = fg_claim(r)) >= 0;) {
            const int one_each = fg_job.one_each;
            const int64_t n = fg_job.chunks;
            fg_job.kernel(fg_start(fg_job.lo, fg_job.hi, next, n), fg_start(fg_job.lo, fg_job.hi, next + 1, n),
                          fg_job.sizes, fg_job.pointers);
            if (__atomic_add_fetch(&fg_finished, 1, __ATOMIC_ACQ_REL) == n) {
                pthread_mutex_lock(&fg_lock);
                pthread_cond_signal(&fg_done);
                pthread_mutex_unlock(&fg_lock);
            }
            if (one_each) return;
        }
    }
}

static int64_t fg_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *fg_worker(void *arg) {
    long seen = 0;
    fg_me = (int)(intptr_t)arg;
    pthread_mutex_lock(&fg_lock);
    for (;;) {
        if (fg_round == seen) {  /* a while yielding before sleeping: the next job of a step comes soon */
            pthread_mutex_unlock(&fg_lock);
            const int64_t until = fg_now() + FG_SPIN_NS;
            while (__atomic_load_n(&fg_round, __ATOMIC_ACQUIRE) == seen && fg_now() < until) sched_yield();
            pthread_mutex_lock(&fg_lock);
        }
        while (fg_round == seen) pthread_cond_wait(&fg_work, &fg_lock);
        seen = fg_round;
        pthread_mutex_unlock(&fg_lock);
        fg_help();
        pthread_mutex_lock(&fg_lock);
    }
    return NULL;
}

static void fg_forked(void) {
    pthread_mutex_t unlocked = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t unsignalled = PTHREAD_COND_INITIALIZER;
    fg_busy = unlocked; fg_lock = unlocked; fg_work = unsignalled; fg_done = unsignalled;
    fg_started = 0;
    fg_round = 0;
    fg_runs = 0;
    for (int t = 0; t <= FG_THREADS; t++) fg_claims[t] = 0;
}

/* make the threads a job of ``threads`` needs (fg_lock held); whether there are enough */
static int fg_threads(int threads) {
    while (fg_started < threads - 1) {
        pthread_t id;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&id, &attr, fg_worker, (void *)(intptr_t)(fg_started + 1));
        pthread_attr_destroy(&attr);
        if (failed) break;
        fg_started++;
    }
    return fg_started >= threads - 1;
}

/* share out ``chunks`` chunks of [lo, hi) in runs for ``threads`` threads (fg_busy and fg_lock held; both released
   here); one_each: each thread runs one chunk at most, so that every chunk runs at once with the others */
static void fg_share(fg_kernel kernel, const int64_t *sizes, char **pointers, int64_t lo, int64_t hi, int64_t chunks,
                     int threads, int one_each) {
    fg_job.kernel = kernel; fg_job.sizes = sizes; fg_job.pointers = pointers; fg_job.lo = lo; fg_job.hi = hi;
    fg_job.chunks = chunks; fg_job.one_each = one_each;
    __atomic_store_n(&fg_finished, 0, __ATOMIC_RELAXED);
    const uint64_t job = ++fg_jobs;
    for (int t = 0; t < threads; t++)
        __atomic_store_n(&fg_claims[t], (job << 32) | ((uint64_t)(chunks * (t + 1) / threads) << 16) |
                                        (uint64_t)(chunks * t / threads), __ATOMIC_RELEASE);
    __atomic_store_n(&fg_runs, threads, __ATOMIC_RELEASE);
    if (fg_started) {
        __atomic_store_n(&fg_round, fg_round + 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&fg_work);
    }
    pthread_mutex_unlock(&fg_lock);
    fg_help();
    if (__atomic_load_n(&fg_finished, __ATOMIC_ACQUIRE) < chunks) {  /* a while yielding: the last chunk ends soon */
        const int64_t until = fg_now() + FG_SPIN_NS;
        while (__atomic_load_n(&fg_finished, __ATOMIC_ACQUIRE) < chunks && fg_now() < until) sched_yield();
    }
    if (__atomic_load_n(&fg_finished, __ATOMIC_ACQUIRE) < chunks) {
        pthread_mutex_lock(&fg_lock);
        while (__atomic_load_n(&fg_finished, __ATOMIC_ACQUIRE) < chunks) pthread_cond_wait(&fg_done, &fg_lock);
        pthread_mutex_unlock(&fg_lock);
    }
    pthread_mutex_unlock(&fg_busy);
}

static void fg_split(fg_kernel kernel, const int64_t *sizes, char **pointers, int64_t lo, int64_t hi, int threads) {
    if (threads > FG_THREADS + 1) threads = FG_THREADS + 1;
    if (threads < 2 || hi - lo < threads || pthread_mutex_trylock(&fg_busy) != 0) {
        kernel(lo, hi, sizes, pointers);
        return;
    }
    pthread_mutex_lock(&fg_lock);
    fg_threads(threads);
    /* four chunks a thread where the loop has the steps (on multiples of 64 steps where it has 64 for each), else
       one a thread: a thread that wakes late (up to a clock tick, 10 ms, on a VM whose other vCPU was idle) finds
       the others have taken most of its share */
    fg_share(kernel, sizes, pointers, lo, hi, (hi - lo >= 4 * (int64_t)threads) ? 4 * (int64_t)threads : threads,
             threads, 0);
}

/* OpenBLAS's parallel work on these threads (``openblas_set_threads_callback_function``): its jobs wait for each
   other's packed panels, so each runs on a thread of its own, all at once; where these threads are busy (another
   call's) or too few, on threads made for the call. One pool for the products and the loops between them: each
   finds the other's threads awake, where two pools took turns spinning on the same cores. */
typedef void (*fg_dojob)(int, void *, int);
static struct { fg_dojob dojob; char *data; size_t size; int extra; } fg_blas_job;
static void fg_blas_chunk(int64_t lo, int64_t hi, const int64_t *sizes, char **pointers) {
    (void)sizes; (void)pointers;
    for (int64_t i = lo; i < hi; i++) fg_blas_job.dojob((int)i, fg_blas_job.data + (size_t)i * fg_blas_job.size,
                                                        fg_blas_job.extra);
}
struct fg_blas_one { fg_dojob dojob; int i; void *data; int extra; };
static void *fg_blas_thread(void *arg) {
    struct fg_blas_one *one = (struct fg_blas_one *)arg;
    one->dojob(one->i, one->data, one->extra);
    return NULL;
}
static int64_t fg_blas_calls = 0;
static void fg_blas_callback(int sync, fg_dojob dojob, int numjobs, size_t size, void *data, int extra) {
    (void)sync;
    __atomic_add_fetch(&fg_blas_calls, 1, __ATOMIC_RELAXED);
    if (numjobs <= 1) {
        if (numjobs == 1) dojob(0, data, extra);
        return;
    }
    if (numjobs <= FG_THREADS + 1 && pthread_mutex_trylock(&fg_busy) == 0) {
        pthread_mutex_lock(&fg_lock);
        if (fg_threads(numjobs)) {
            fg_blas_job.dojob = dojob; fg_blas_job.data = (char *)data; fg_blas_job.size = size;
            fg_blas_job.extra = extra;
            fg_share(fg_blas_chunk, NULL, NULL, 0, numjobs, numjobs, numjobs, 1);
            return;
        }
        pthread_mutex_unlock(&fg_lock);
        pthread_mutex_unlock(&fg_busy);
    }
    struct fg_blas_one *ones = (struct fg_blas_one *)malloc(sizeof(struct fg_blas_one) * (size_t)numjobs);
    pthread_t *ids = (pthread_t *)malloc(sizeof(pthread_t) * (size_t)numjobs);
    if (!ones || !ids) abort();  /* (run one after another, a job would wait for the others forever) */
    for (int i = 1; i < numjobs; i++) {
        ones[i] = (struct fg_blas_one){dojob, i, (char *)data + (size_t)i * size, extra};
        if (pthread_create(&ids[i], NULL, fg_blas_thread, &ones[i]) != 0) abort();
    }
    dojob(0, data, extra);
    for (int i = 1; i < numjobs; i++) pthread_join(ids[i], NULL);
    free(ones);
    free(ids);
}

static PyObject *fg_blas_callback_address(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromVoidPtr((void *)fg_blas_callback);
}

static PyObject *fg_blas_calls_made(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLongLong(__atomic_load_n(&fg_blas_calls, __ATOMIC_RELAXED));
}

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

static PyObject *fg_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer meta_view, views[FG_MAX];
    PyObject *held[FG_MAX];
    char *pointers[FG_MAX];
    Py_ssize_t taken = 0, n = nargs - 5;
    if (nargs < 5 || n > FG_MAX) { PyErr_SetString(PyExc_TypeError, "fg_call: wrong arguments"); return NULL; }
    long threads = PyLong_AsLong(args[0]);
    void *kernel = PyLong_AsVoidPtr(args[1]);
    int64_t lo = PyLong_AsLongLong(args[3]), hi = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred() || PyObject_GetBuffer(args[2], &meta_view, PyBUF_C_CONTIGUOUS) != 0) return NULL;
    const int64_t *meta = (const int64_t *)meta_view.buf;
    const int64_t *sizes = meta + 3, *nbytes = meta + 3 + meta[2];
    if (meta[0] + meta[1] != n || lo < 0 || lo > hi || hi > sizes[0]) {
        PyErr_SetString(PyExc_ValueError, "fg_call: the arguments do not match the kernel");
        goto done;
    }
    for (; taken < n; taken++) {
        if (fg_take(args[5 + taken], &views[taken], &held[taken], taken >= meta[0], nbytes[taken]) < 0) goto done;
        pointers[taken] = (char *)views[taken].buf;
    }
    Py_BEGIN_ALLOW_THREADS
    fg_split((fg_kernel)kernel, sizes, pointers, lo, hi, (int)threads);
    Py_END_ALLOW_THREADS
done:
    for (Py_ssize_t k = 0; k < taken; k++) { PyBuffer_Release(&views[k]); Py_XDECREF(held[k]); }
    PyBuffer_Release(&meta_view);
    if (taken < n || PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef fg_methods[] = {{"call", (PyCFunction)(void (*)(void))fg_call, METH_FASTCALL, NULL},
                                   {"blas_callback", fg_blas_callback_address, METH_NOARGS, NULL},
                                   {"blas_calls", fg_blas_calls_made, METH_NOARGS, NULL},
                                   {NULL, NULL, 0, NULL}};
static struct PyModuleDef fg_module = {PyModuleDef_HEAD_INIT, "{name}", NULL, -1, fg_methods};
PyMODINIT_FUNC PyInit_{name}(void) {
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return NULL;
    fg_ascontiguousarray = PyObject_GetAttrString(numpy, "ascontiguousarray");
    Py_DECREF(numpy);
    if (fg_ascontiguousarray == NULL) return NULL;
    pthread_atfork(NULL, NULL, fg_forked);
    return PyModule_Create(&fg_module);
}
""".replace("FG_MAX", str(MAX_OPERANDS)).replace("FG_THREADS", str(MAX_THREADS - 1)).replace(
    "FG_SPIN_NS", str(SPIN_NS))


def caller() -> Callable[..., None]:
    """``call(threads, kernel, meta, lo, hi, *arrays)``, the function every kernel is called
    through. Loading it gives NumPy's OpenBLAS its threads (``share_blas_threads``)."""
    module = _LOADED.get(CALLER)
    if module is None:
        module = extension(CALLER)
        share_blas_threads(module)
    return module.call  # type: ignore[no-any-return]


_BLAS_CALLBACK_SETTERS = ("openblas_set_threads_callback_function", "scipy_openblas_set_threads_callback_function64_",
                          "scipy_openblas_set_threads_callback_function")


def share_blas_threads(module: ModuleType) -> bool:
    """Have NumPy's OpenBLAS (0.3.28 on: ``openblas_set_threads_callback_function``) run its
    parallel work on the extension's threads, unless ``FUNCGRAD_SHARE_BLAS_THREADS=0``: one
    pool for the products and the loops between them, where OpenBLAS's threads and these
    took turns on the same cores. True where a loaded OpenBLAS took it."""
    if os.environ.get("FUNCGRAD_SHARE_BLAS_THREADS", "1") == "0":
        return False
    address = module.blas_callback()
    shared = False
    for library in _blas_libraries():
        setter = next((getattr(library, name) for name in _BLAS_CALLBACK_SETTERS if hasattr(library, name)), None)
        if setter is not None:
            setter.argtypes, setter.restype = [ctypes.c_void_p], None
            setter(address)
            shared = True
    return shared


# the C type of each dtype a kernel reads or writes
C_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int32": "int32_t", "int64": "int64_t"}
# the same, keyed by NumPy's dtype (a kernel's check: ``dtype.name`` costs 2 us, a lookup 0.06)
C_TYPE_OF = {np.dtype(name): c for name, c in C_TYPES.items()}


def sizes_and_bytes(n_in: int, n_out: int, sizes: Any, nbytes: Any) -> np.ndarray:
    """What ``call`` checks a kernel's arrays against: inputs, results, the loop sizes (the
    outermost first) and each array's bytes."""
    return np.array([n_in, n_out, len(sizes), *sizes, *nbytes], np.int64)


def loop_kernel(code: str) -> int:
    """The address of ``code``'s ``fg_kernel`` (with ``PRELUDE`` before it), built or found in
    the cache, with the extension ``run`` calls it through; ``NativeBuildError`` where either
    cannot be built."""
    address = kernel(PRELUDE + code, "fg_kernel")
    caller()
    return address


SPLIT_WORK = 1 << 19  # a thread's least share of a loop, in work units: less costs more to hand over than it saves
_CALLS = re.compile(r"\b(?:fg_tanh|fg_exp|fg_sigmoid|fg_gelu\w*|pow|" + "|".join(_MVEC) + r")\(")


def work(exprs: Any) -> int:
    """Work units per element of a loop of C expressions ``exprs``: each counts 1, or 8 where
    it calls a transcendental function. (Measured here: a two-operation loop gains from a
    second thread from 2^19 elements on, a ``tanh`` loop from 2^16.)"""
    return sum(8 if _CALLS.search(e) else 1 for e in exprs)


def threads_for(elements: int, outer: int, per_element: int = 1) -> int:
    """How many threads a loop over ``elements`` of ``per_element`` work units each splits
    over: ``fg.config.compile_threads`` at most, ``SPLIT_WORK`` units each at least, and no
    more pieces than its outermost loop (``outer``) has steps."""
    return max(1, min(config.compile_threads, elements * per_element // SPLIT_WORK, outer))


def run(address: int, inputs: list[Any], outputs: list[Any], sizes: Any, per_element: int = 0) -> None:
    """Kernel ``address`` over all of its outermost loop: on one thread, or where each step
    of that loop writes its own part of the results, given the work per result element
    (``per_element``, in ``work``'s units), over ``threads_for`` threads."""
    meta = sizes_and_bytes(len(inputs), len(outputs), sizes, [a.nbytes for a in (*inputs, *outputs)])
    threads = threads_for(max(a.size for a in outputs), sizes[0], per_element) if per_element else 1
    caller()(threads, address, meta, 0, sizes[0], *inputs, *outputs)


def merged_loops(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[bool]]]:
    """The loop nest over ``shape``: dimensions of one element dropped, and neighbours whose
    elements are consecutive in every operand merged. ``strides``: per operand, in elements
    (0 where it broadcasts). Returns the loop sizes and, per operand, which loops it moves in
    (``merged_strides`` gives its strides in them)."""
    sizes, merged = _merged(shape, strides)
    return sizes, [[st[k] != 0 for st in merged] for k in range(len(strides))]


def merged_strides(shape: tuple[int, ...], strides: list[list[int]]) -> list[list[int]]:
    """Per operand, its strides (in elements) in each loop of ``merged_loops``'s nest."""
    _, merged = _merged(shape, strides)
    return [[st[k] for st in merged] for k in range(len(strides))]


def _merged(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    dims = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, st in dims:
        if merged and all(prev == cur * n for prev, cur in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * n, st)
        else:
            merged.append((n, st))
    if not merged:
        merged = [(1, [0] * len(strides))]
    return [n for n, _ in merged], [st for _, st in merged]


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """A C-ordered operand's strides, in elements, over the result's index space (0 where it
    broadcasts)."""
    full = [1] * (len(out_shape) - len(shape)) + list(shape)
    strides, step = [0] * len(out_shape), 1
    for d in range(len(out_shape) - 1, -1, -1):
        strides[d] = step if full[d] != 1 else 0
        step *= full[d]
    return strides


def element_index(moves: list[bool]) -> str:
    """The C index of an operand's element in a loop nest ``i0, i1, ...`` over sizes ``n[]``:
    its strides follow from the sizes of the loops it moves in."""
    rank, terms = len(moves), []
    for d in range(rank):
        if moves[d]:
            terms.append(" * ".join([f"i{d}", *(f"n[{e}]" for e in range(d + 1, rank) if moves[e])]))
    return " + ".join(terms) or "0"


EAGER_MIN = 1 << 16  # elements: an eager elementwise result this large may run as a native loop
EAGER_PLAIN_MIN = 1 << 19  # ... and this large where no operand broadcasts along a row (NumPy's fast case)
_EAGER: dict[Any, Any] = {}  # (expression, dtypes, shapes) -> what a call needs (None: not here)
_EAGER_KEPT = 512


def elementwise(expr: str, arrays: tuple[Any, ...], out_dtype: Any) -> Any:
    """C expression ``expr`` of ``{0}``, ``{1}``... over NumPy arrays that broadcast
    together, as one loop (split over threads where it is large), into a new array of
    ``out_dtype``; None where it cannot run here (an operand that is not a NumPy array of a
    dtype C reads, no compiler). The kernel is built once per expression, dtypes and pattern
    of broadcasting (``merged_loops``); what a call needs is kept by shapes, so a call costs
    a few microseconds over the loop."""
    key = (expr, out_dtype, *((a.dtype, a.shape) for a in arrays))
    found = _EAGER.get(key, False)
    if found is False:
        found = _EAGER[key] = _eager_kernel(expr, arrays, np.dtype(out_dtype))
        if len(_EAGER) > _EAGER_KEPT:
            _EAGER.clear()
    if found is None:
        return None
    address, shape, meta, outer, per_element = found
    out = np.empty(shape, out_dtype)
    caller()(threads_for(out.size, outer, per_element), address, meta, 0, outer, *arrays, out)
    return out


def _eager_kernel(expr: str, arrays: tuple[Any, ...], out_dtype: np.dtype) -> Any:
    if not all(a.__class__ is np.ndarray and a.dtype.name in C_TYPES for a in arrays) or out_dtype.name not in C_TYPES:
        return None
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    sizes, moves = merged_loops(shape, [broadcast_strides(a.shape, shape) for a in arrays] +
                                [broadcast_strides(shape, shape)])
    types, out_type = [C_TYPES[a.dtype.name] for a in arrays], C_TYPES[out_dtype.name]
    loops = []
    for d in range(len(sizes)):
        pad = "    " * (d + 1)
        if d == len(sizes) - 1:
            loops.append(f"{pad}#pragma omp simd")
        loops.append(f"{pad}for (int64_t i{d} = {'lo' if d == 0 else '0'}; i{d} < {'hi' if d == 0 else f'n[{d}]'}; "
                     f"i{d}++)")
    operands = [f"a{k}[{element_index(moves[k])}]" for k in range(len(arrays))]
    source = "\n".join([
        "void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {",
        *(f"    const {t} *restrict a{k} = (const {t} *)p[{k}];" for k, t in enumerate(types)),
        f"    {out_type} *restrict y = ({out_type} *)p[{len(arrays)}];",
        *loops,
        f"{'    ' * (len(sizes) + 1)}y[{element_index(moves[-1])}] = {expr.format(*operands, out=out_type)};",
        "}", ""])
    try:
        address = loop_kernel(source)
    except NativeBuildError:
        return None
    nbytes = [a.nbytes for a in arrays] + [math.prod(shape) * out_dtype.itemsize]
    return address, shape, sizes_and_bytes(len(arrays), 1, sizes, nbytes), sizes[0], work([expr])


def eager_native(xp: Any) -> bool:
    """Whether an eager kernel may run a native loop: NumPy arrays under the C backend
    (``fg.config.compile_backend``); each such kernel keeps a NumPy path for the rest."""
    return xp is np and config.compile_backend == "c"


def unary(expr: str, dtype: Any) -> Callable[[Any], Any] | None:
    """``elementwise`` of C expression ``expr`` of ``{0}`` as a function of one NumPy array of
    ``dtype``, its kernel built (or found in the cache) now; None, silently, where no
    compiler can be used."""
    dtype = np.dtype(dtype)
    if elementwise(expr, (np.zeros(1, dtype),), dtype) is None:
        return None
    return functools.partial(_unary_of, expr, dtype)


def _unary_of(expr: str, dtype: Any, x: Any) -> Any:
    return elementwise(expr, (x,), dtype)


# The BLAS functions products call, by address: a native program calls them itself, and so do
# the loops over stacks of products and over a product's blocks, so eager and compiled
# products call the same library. Their names, in the order ``Blas.addresses`` gives them.
_BLAS_NAMES = ("sgemm", "dgemm", "ssyrk", "dsyrk")
_BLAS_FORMS = ("scipy_cblas_{}64_", "cblas_{}64_")  # (ILP64 builds mark their symbols 64_)


class Blas(NamedTuple):
    """The BLAS library products call: ``name`` (``"mkl"`` or ``"numpy"``), the addresses of
    its 64-bit-integer CBLAS ``sgemm``, ``dgemm``, ``ssyrk`` and ``dsyrk``, and whether it runs
    one thread a call (``sequential``: funcgrad shares a product's blocks out over its own
    threads) or threads itself (NumPy's OpenBLAS, on funcgrad's threads through its
    callback)."""

    name: str
    addresses: tuple[int, int, int, int]
    sequential: bool


@functools.lru_cache(maxsize=1)
def _blas_libraries() -> tuple[Any, ...]:
    """The BLAS libraries NumPy has loaded (on Linux; none found elsewhere), through ctypes."""
    np.dot(np.ones((2, 2)), np.ones((2, 2)))  # (NumPy loads its BLAS lazily on some builds)
    try:
        with open("/proc/self/maps") as maps:
            paths = dict.fromkeys(line.split()[-1] for line in maps if "blas" in line.lower() and "/" in line)
    except OSError:
        return ()
    libraries = []
    for path in paths:
        try:
            libraries.append(ctypes.CDLL(path))
        except OSError:
            continue
    return tuple(libraries)


@functools.lru_cache(maxsize=1)
def _numpy_blas() -> Blas | None:
    """NumPy's own BLAS (its wheels' OpenBLAS), where its ILP64 symbols are found."""
    for library in _blas_libraries():
        for form in _BLAS_FORMS:
            try:
                found = [ctypes.cast(getattr(library, form.format(n)), ctypes.c_void_p).value for n in _BLAS_NAMES]
            except AttributeError:
                continue
            if all(found):
                return Blas("numpy", tuple(found), False)  # type: ignore[arg-type]
    return None


def _mkl_paths() -> list[str]:
    """Where the ``mkl`` package's ``libmkl_rt`` lies: its wheel puts it in the environment's
    ``lib`` (or the user's, for ``pip install --user``)."""
    import site

    roots = dict.fromkeys([sys.prefix, sys.base_prefix, site.getuserbase()])
    return sorted((str(path) for root in roots for path in Path(root, "lib").glob("libmkl_rt.so*")), reverse=True)


# MKL's products run one thread a call through these: each sets MKL's thread count for its
# thread to 1 (``MKL_Set_Num_Threads_Local``) around the call and puts it back after. MKL's
# threading layer stays as it is: ``libmkl_rt`` loads MKL's parts into the process's global
# scope, and a library with MKL inside it (PyTorch's) binds its own MKL calls to them, so a
# sequential layer made PyTorch's products run on one thread (its nanoGPT step 70 ms where it
# took 42).
_MKL_SHIM = """#include <stdint.h>
typedef int (*fg_threads_f)(int);
typedef void (*fg_sgemm_f)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                           int64_t, float, float *, int64_t);
typedef void (*fg_dgemm_f)(int, int, int, int64_t, int64_t, int64_t, double, const double *, int64_t,
                           const double *, int64_t, double, double *, int64_t);
typedef void (*fg_ssyrk_f)(int, int, int, int64_t, int64_t, float, const float *, int64_t, float, float *, int64_t);
typedef void (*fg_dsyrk_f)(int, int, int, int64_t, int64_t, double, const double *, int64_t, double, double *,
                           int64_t);
static void *fg_mkl[5];  /* sgemm, dgemm, ssyrk, dsyrk, MKL_Set_Num_Threads_Local */
void fg_mkl_init(void *const *functions) { for (int i = 0; i < 5; i++) fg_mkl[i] = functions[i]; }
#define FG_ONE_THREAD(call) { \\
    const int before = ((fg_threads_f)fg_mkl[4])(1); call; ((fg_threads_f)fg_mkl[4])(before); }
void fg_sgemm(int o, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
              const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
    FG_ONE_THREAD(((fg_sgemm_f)fg_mkl[0])(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
void fg_dgemm(int o, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
              const double *b, int64_t ldb, double beta, double *c, int64_t ldc)
    FG_ONE_THREAD(((fg_dgemm_f)fg_mkl[1])(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
void fg_ssyrk(int o, int u, int t, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, float beta,
              float *c, int64_t ldc)
    FG_ONE_THREAD(((fg_ssyrk_f)fg_mkl[2])(o, u, t, n, k, alpha, a, lda, beta, c, ldc))
void fg_dsyrk(int o, int u, int t, int64_t n, int64_t k, double alpha, const double *a, int64_t lda, double beta,
              double *c, int64_t ldc)
    FG_ONE_THREAD(((fg_dsyrk_f)fg_mkl[3])(o, u, t, n, k, alpha, a, lda, beta, c, ldc))
"""


@functools.lru_cache(maxsize=1)
def _mkl_blas() -> Blas | None:
    """MKL's ILP64 CBLAS through ``_MKL_SHIM`` (one thread a call), or None where the ``mkl``
    package is not installed, no compiler builds the shim, or NumPy's own BLAS is MKL (its
    threads are NumPy's to set, not ours)."""
    try:
        with open("/proc/self/maps") as maps:
            if any("libmkl" in line for line in maps):
                return None
    except OSError:
        return None
    for path in _mkl_paths():
        try:
            library = ctypes.CDLL(path)
            functions = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                         for name in (*(f"cblas_{n}_64" for n in _BLAS_NAMES), "MKL_Set_Num_Threads_Local")]
        except (OSError, AttributeError):
            continue
        try:
            shim = ctypes.CDLL(str(_built(_MKL_SHIM, "funcgrad_kernel_", ".so", python=False)))
        except (NativeBuildError, OSError):
            return None
        shim.fg_mkl_init((ctypes.c_void_p * 5)(*functions))
        return Blas("mkl", tuple(ctypes.cast(getattr(shim, f"fg_{n}"), ctypes.c_void_p).value  # type: ignore[arg-type]
                                 for n in _BLAS_NAMES), True)
    return None


def blas() -> Blas | None:
    """The BLAS library ``fg.config.blas`` chooses: MKL where it is installed (``"auto"`` on an
    Intel CPU, or ``"mkl"``), else NumPy's own; None where neither can be called from native code (not
    Linux, another BLAS): products are then NumPy's. (MKL's sgemm took 0.79-0.89x the time of
    NumPy's OpenBLAS 0.3.31 on nanoGPT's products here, Intel Xeon, and nanoGPT's compiled
    step 39.3 ms where it took 43.6: OpenBLAS zeroes each result before it adds the product in.)"""
    if _mkl_chosen():
        found = _mkl_blas()
        if found is not None:
            return found
        if config.blas == "mkl":
            _warn_no_mkl()
    return _numpy_blas()


def blas_sequential() -> bool:
    """Whether ``blas``'s library runs one thread a call (funcgrad shares its products out):
    the test before each product, so it reads the choice and cached answers only
    (``_mkl_chosen`` written out: a call more took 2% of a 64x64 product's time)."""
    choice = config.blas
    return (choice == "mkl" or choice == "auto" and _intel_cpu()) and _mkl_blas() is not None


def _mkl_chosen() -> bool:
    """Whether ``fg.config.blas`` asks for MKL: ``"mkl"``, or ``"auto"`` on an Intel CPU."""
    choice = config.blas
    return choice == "mkl" or choice == "auto" and _intel_cpu()


@functools.lru_cache(maxsize=1)
def _intel_cpu() -> bool:
    """Whether this is an Intel CPU, whose MKL ``"auto"`` picks: on an AMD EPYC with AVX-512,
    nanoGPT's compiled step ran 8% slower with MKL's products than with NumPy's OpenBLAS."""
    return _cpu_field("vendor_id") == "GenuineIntel"


@functools.lru_cache(maxsize=1)
def _warn_no_mkl() -> None:
    warnings.warn("fg.config.blas is 'mkl' but no MKL library was found to load (pip install funcgrad[mkl]), or "
                  "NumPy uses MKL itself: products use NumPy's BLAS", RuntimeWarning, stacklevel=3)


# OpenBLAS's threads spin for 2^28 clock ticks (about 0.1 s) after each product before they
# sleep. funcgrad's own loops (the elementwise work of a step, a convolution's loops between
# products) run in that time, and where the machine's two cores share one physical core
# (a VM's vCPUs on SMT siblings) the spinning thread takes half of it: on a 2-core EPYC VM,
# MNIST's training step went from 55 to 110 ms for stretches of 10-20 s. 2^20 ticks (about
# 0.3 ms) keeps the threads awake between back-to-back products (nanoGPT's step measured the
# same) and lets them sleep through the rest. A user's own OPENBLAS_THREAD_TIMEOUT is kept.
# (Rounds after pauses, against PyTorch: MNIST 0.81-0.88x at 20 where 1.12-1.17x at 28,
# nanoGPT 0.95-1.005x where 1.04-1.08x; 16 took nanoGPT to 0.91-0.94x but the W2 step in
# blocks after pauses from 2.4-2.6 ms to 3.3-3.9: docs/performance.md.)
BLAS_THREAD_TIMEOUT = "20"


def settle_blas_threads() -> bool:
    """Give NumPy's OpenBLAS ``BLAS_THREAD_TIMEOUT`` (log2 of the clock ticks its idle threads
    spin before sleeping) unless ``OPENBLAS_THREAD_TIMEOUT`` is set: set the variable (so a
    BLAS loaded later reads it too), have the loaded library read it again and restart its
    threads with it. True where a loaded OpenBLAS took it."""
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return False
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_THREAD_TIMEOUT
    settled = False
    for library in _blas_libraries():
        try:
            read_env, shutdown = library.openblas_read_env, library.blas_thread_shutdown_
        except AttributeError:
            continue
        read_env()
        shutdown()  # (its threads start again at the next threaded call, with the new timeout)
        settled = True
    return settled


_LIBM_SOURCE = """#include <stdint.h>
#include <math.h>
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const T *x = (const T *)p[0];
    T *y = (T *)p[1];
    for (int64_t i = lo; i < hi; i++) y[i] = F(x[i]);
}
"""


@functools.lru_cache(maxsize=16)
def _libm_function(name: str) -> Any:
    """The C library's function ``name`` through ctypes (float if it ends in ``f``), or None."""
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    except (OSError, AttributeError):
        return None
    c_type = ctypes.c_float if name.endswith("f") else ctypes.c_double
    function.restype, function.argtypes = c_type, [c_type]
    return function


def plain_kernel(source: str) -> int | None:
    """The address of ``fg_kernel`` of C ``source`` as it is (no ``PRELUDE``: nothing declares
    vector variants of the C library's functions, so none is substituted for the scalar
    ones), with the extension ``run`` calls it through; None where no compiler can build it."""
    try:
        address = kernel(source, "fg_kernel")
        caller()
    except NativeBuildError:
        return None
    return address


def libm(name: str, x: np.ndarray) -> np.ndarray | None:
    """``x`` (float32 or float64) through the C library's scalar function ``name`` (``tan``,
    ``log``; its ``f`` form for float32), as code that calls it (XLA, PyTorch's scalar
    kernels) computes it, NumPy's own SIMD versions differing in the last bit: a native loop
    wherever a compiler can build one, whatever the backend (this source declares no vector
    variants, so none is substituted), else one ctypes call per element. None where the
    library cannot be found."""
    c_name = name + "f" if x.dtype == np.float32 else name
    x = np.ascontiguousarray(x)
    address = plain_kernel(f"#define T {C_TYPES[x.dtype.name]}\n#define F {c_name}\n" + _LIBM_SOURCE)
    if address is not None:
        out = np.empty_like(x)
        run(address, [x.reshape(-1)], [out.reshape(-1)], [x.size])
        return out
    function = _libm_function(c_name)
    if function is None:
        return None
    return np.array([function(v) for v in x.ravel().tolist()], x.dtype).reshape(x.shape)
