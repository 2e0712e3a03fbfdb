"""PyTorch's CPU arithmetic, where funcgrad gives PyTorch's numbers bit for bit: the
Box-Muller transform of its ``normal_`` (its AVX2 kernel's polynomial ``log``, ``sin`` and
``cos`` step for step, or the C library's functions as its scalar kernel calls them).
PyTorch's compiler fuses a product with the sum it feeds into one fused multiply-add
where its build has one (its AVX2 build, not its default x86 one: ``scale_shift``); so do
these, emulated exactly in NumPy where no compiler builds C's: a float32 product is exact
in float64, and a float64 one is carried by Veltkamp's split."""

from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np

from . import cc

__all__ = ["fused_multiply_add", "scale_shift", "normal_fill", "permutation_swaps"]


_FMA_SOURCE = """#include <stdint.h>
#include <math.h>
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const double *x = (const double *)p[0], *y = (const double *)p[1], *z = (const double *)p[2];
    double *out = (double *)p[3];
    for (int64_t i = lo; i < hi; i++) out[i] = fma(x[i], y[i], z[i]);
}
"""


def fused_multiply_add(x: np.ndarray, y: Any, z: Any) -> np.ndarray:
    """``x * y + z`` rounded once, as a fused multiply-add (float64; NumPy has none): the C
    library's ``fma`` in a native loop where a compiler can build one; else the exact
    product as a sum of two doubles (Veltkamp's split), then the sum of the three (which
    can miss by an ulp where the product falls exactly halfway and ``z`` is far smaller)."""
    address = cc.plain_kernel(_FMA_SOURCE)
    if address is not None:
        a = np.ascontiguousarray(x, np.float64)
        operands = [a.reshape(-1)] + [np.ascontiguousarray(np.broadcast_to(np.asarray(v, np.float64), a.shape))
                                      .reshape(-1) for v in (y, z)]
        out = np.empty_like(a)
        cc.run(address, operands, [out.reshape(-1)], [a.size])
        return out
    p = x * y
    c = 134217729.0 * x
    xh = c - (c - x)
    cy = 134217729.0 * np.float64(y)
    yh = cy - (cy - y)
    xl, yl = x - xh, y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    b = s - p
    return s + (((p - (s - b)) + (z - b)) + e)  # type: ignore[no-any-return]


def scale_shift(x: np.ndarray, scale: float, shift: float, dtype: Any) -> np.ndarray:
    """``x * scale + shift`` in ``dtype`` (float32 or float64; ``x`` float64, exact in
    ``dtype``) as PyTorch's serial kernels (``uniform_``, a short ``normal_``) compute it:
    rounded once, as a fused multiply-add, where its compiler contracts the two (its AVX2
    build, and off x86); rounded after each step in its default x86 build, which has no
    fused multiply-add (``ATEN_CPU_CAPABILITY=default``, or a CPU without AVX2)."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        if _SERIAL_FUSED:
            return fused_multiply_add(x, scale, shift)
        return x * float(scale) + float(shift)  # type: ignore[no-any-return]
    s, b = np.float32(scale), np.float32(shift)
    if _SERIAL_FUSED:
        return _fma32(x, s, b)
    return x.astype(np.float32) * s + b  # type: ignore[no-any-return]


# normal_fill_16 over blocks of 16 uniforms in place, one loop for both of PyTorch's
# kernels: the definitions before it say how each computes ``log``, the angle, ``sin`` and
# ``cos`` and the last fused multiply-add (``_normal_kernel``).
_NORMAL_LOOP = """
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const T mean = ((const T *)p[0])[0], sd = ((const T *)p[0])[1];
    T *d = (T *)p[1];
    for (int64_t b = lo; b < hi; b++) {
        T *x = d + 16 * b;
        LOOP_HINT
        for (int k = 0; k < 8; k++) {
            const T radius = SQRT(-2 * LOG(1 - x[k]));
            T sn, cs;
            SINCOS(THETA(x[k + 8]), &sn, &cs);
            x[k] = FMA(radius * cs, sd, mean);
            x[k + 8] = FMA(radius * sn, sd, mean);
        }
    }
}
"""

# PyTorch's scalar kernel: the C library's functions (no vector variants: this source leaves
# out the prelude that declares them), the angle rounded once from double, the last
# multiply-add fused as its compiler fuses it.
_LIBM_DEFINITIONS = """#include <stdint.h>
#include <math.h>
#define LOOP_HINT
#define THETA(u) ((T)(2.0 * 3.14159265358979323846 * (u)))
#define SINCOS(t, s, c) (*(s) = SIN(t), *(c) = COS(t))
"""


def normal_fill(data: np.ndarray, mean: float, std: float) -> None:
    """PyTorch's ``normal_fill_16`` over ``data`` (blocks of 16 uniforms, float32 or float64),
    in place. Where PyTorch runs its AVX2 kernel (float32 on an x86 CPU with AVX2), its
    approximations of ``log``, ``sin`` and ``cos`` step for step in float32 (``_log_avx``,
    ``_sincos_avx``); elsewhere the C library's functions, as its scalar kernel calls them:
    one native loop where a compiler can build it, else each function through ``cc.libm``."""
    work = data.dtype.type
    avx = work is np.float32 and _PYTORCH_AVX2
    native = _normal_kernel("avx" if avx else "double" if work is np.float64 else "float")
    if native is not None:
        cc.run(native, [np.array([mean, std], work)], [data], [data.size // 16])
        return
    blocks = data.reshape(-1, 2, 8)
    with np.errstate(all="ignore"):
        if avx:
            radius = np.sqrt(work(-2) * _log_avx(work(1) - blocks[:, 0]))
            sin, cos = _sincos_avx(work(2.0 * np.pi) * blocks[:, 1])
        else:
            theta = (2.0 * np.pi * blocks[:, 1].astype(np.float64)).astype(work)
            radius = np.sqrt(work(-2) * _c_library("log", work(1) - blocks[:, 0]))
            cos, sin = _c_library("cos", theta), _c_library("sin", theta)
    fused = fused_multiply_add if work is np.float64 else _fma32
    blocks[:, 0] = fused(radius * cos, work(std), work(mean))
    blocks[:, 1] = fused(radius * sin, work(std), work(mean))


def _c_library(name: str, x: np.ndarray) -> np.ndarray:
    """The C library's ``name`` of ``x`` (``cc.libm``; NumPy's where there is none)."""
    out = cc.libm(name, x)
    return out if out is not None else getattr(np, name)(x)  # type: ignore[no-any-return]


def _pytorch_avx2() -> bool:
    """Whether PyTorch's CPU kernels on this machine are its AVX2 or AVX-512 builds (an x86
    CPU with AVX2, unless ``ATEN_CPU_CAPABILITY=default`` holds them back)."""
    if platform.machine().lower() not in ("x86_64", "amd64") or \
            os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default":
        return False
    return "avx2" in cc.cpu_flags()


_PYTORCH_AVX2 = _pytorch_avx2()
_SERIAL_FUSED = _PYTORCH_AVX2 or platform.machine().lower() not in ("x86_64", "amd64")
_F = np.float32
_LOG_POLY = tuple(_F(c) for c in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                  1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                                  3.3333331174E-1))


def _fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """``a * b + c`` of float32 values rounded once: the product is exact in float64, and the
    sum is rounded to odd there (an inexact sum's last bit set, toward what it lost), so that
    rounding it to float32 rounds the exact value (53 bits are 24 + 2 more). A sum rounded to
    nearest in float64 lost a far smaller ``c`` where the product lay halfway between two
    floats, and the tie then went to even (PyTorch's ``uniform_(6e-37, 3)``, a hypothesis draw)."""
    p = np.asarray(np.float64(a) * np.asarray(b, np.float64))
    z = np.asarray(c, np.float64)
    s = np.asarray(p + z)
    back = s - p
    lost = (p - (s - back)) + (z - back)  # (Knuth's two-sum: s + lost is p + z exactly)
    with np.errstate(invalid="ignore"):
        step = np.isfinite(s) & (lost != 0) & ((s.view(np.int64) & 1) == 0)
    return np.where(step, np.nextafter(s, np.where(lost > 0, np.inf, -np.inf)), s).astype(np.float32)


def _log_avx(x: np.ndarray) -> np.ndarray:
    """Cephes' float ``log`` as PyTorch's ``avx_mathfun`` evaluates it, for ``x`` in (0, 1]:
    the exponent apart, the mantissa in [sqrt(1/2), sqrt(2)) - 1, a degree-9 polynomial; each
    product that feeds a sum fused with it, as its compiler fuses them."""
    bits = np.maximum(x, _F(1.17549435e-38)).view(np.int32)
    e = ((bits >> 23) - 127).astype(np.float32) + _F(1)
    m = ((bits & ~0x7F800000) | 0x3F000000).view(np.float32)
    low = m < _F(0.707106781186547524)
    e = e - np.where(low, _F(1), _F(0))
    m = (m - _F(1)) + np.where(low, m, _F(0))
    z = m * m
    y: Any = _LOG_POLY[0]
    for c in _LOG_POLY[1:]:
        y = _fma32(y, m, c)
    y = _fma32(y * m, z, e * _F(-2.12194440e-4))
    y = _fma32(-z, _F(0.5), y)
    return _fma32(e, _F(0.693359375), m + y)


def _sincos_avx(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cephes' float ``sin`` and ``cos`` as ``avx_mathfun``'s ``sincos256_ps``, for ``x >= 0``:
    the octant from ``x * 4/pi``, the reduction in three parts, one polynomial for each
    (products fused with the sums they feed, as in ``_log_avx``)."""
    j = (x * _F(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(np.float32)
    for part in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, _F(part), x)
    z = x * x
    c = _fma32(_fma32(_F(2.443315711809948E-005), z, _F(-1.388731625493765E-003)), z, _F(4.166664568298827E-002))
    c = _fma32(c * z, z, -(z * _F(0.5))) + _F(1)
    s = _fma32(_fma32(_F(-1.9515295891E-4), z, _F(8.3321608736E-3)), z, _F(-1.6666654611E-1))
    s = _fma32(s * z, x, x)
    first = (j & 2) == 0  # (the sine's polynomial is s in these octants, c in the others)
    sin_part, cos_part = np.where(first, s, _F(0)), np.where(first, _F(0), c)
    sin = (cos_part + sin_part).view(np.int32) ^ ((j & 4) << 29)
    cos = ((c - cos_part) + (s - sin_part)).view(np.int32) ^ ((~(j - 2) & 4) << 29)
    return sin.view(np.float32), cos.view(np.float32)


def _normal_kernel(kind: str) -> int | None:
    """The native ``normal_fill`` loop's address (``kind``: "float" or "double" with the C
    library's functions, "avx" with the AVX2 kernel's) where a compiler can build it, else None."""
    if kind == "avx":
        return cc.plain_kernel(_AVX_DEFINITIONS + _NORMAL_LOOP)
    names = ("double", "log", "cos", "sin", "fma", "sqrt") if kind == "double" else \
        ("float", "logf", "cosf", "sinf", "fmaf", "sqrtf")
    source = "".join(f"#define {m} {f}\n" for m, f in zip(("T", "LOG", "COS", "SIN", "FMA", "SQRT"), names))
    return cc.plain_kernel(_LIBM_DEFINITIONS + source + _NORMAL_LOOP)


# The AVX2 kernel's functions for ``_NORMAL_LOOP``, each operation as ``_log_avx`` and
# ``_sincos_avx`` do it (the fused ones with fmaf, the others rounded alone: the build
# never contracts), on one float at a time, so the loop gives their bits.
_AVX_DEFINITIONS = """#include <stdint.h>
#include <string.h>
#include <math.h>
static inline int32_t bits(float x) { int32_t i; memcpy(&i, &x, 4); return i; }
static inline float from_bits(int32_t i) { float x; memcpy(&x, &i, 4); return x; }
static inline float log_avx(float x) {
    int32_t b = bits(x > 1.17549435e-38f ? x : 1.17549435e-38f);  /* (x in (0, 1]: never NaN) */
    float e = (float)((b >> 23) - 127) + 1.0f;
    float m = from_bits((b & ~0x7F800000) | 0x3F000000);
    int low = m < 0.707106781186547524f;
    e = e - (low ? 1.0f : 0.0f);
    m = (m - 1.0f) + (low ? m : 0.0f);
    float z = m * m;
    float y = 7.0376836292E-2f;
    y = fmaf(y, m, -1.1514610310E-1f); y = fmaf(y, m, 1.1676998740E-1f); y = fmaf(y, m, -1.2420140846E-1f);
    y = fmaf(y, m, 1.4249322787E-1f); y = fmaf(y, m, -1.6668057665E-1f); y = fmaf(y, m, 2.0000714765E-1f);
    y = fmaf(y, m, -2.4999993993E-1f); y = fmaf(y, m, 3.3333331174E-1f);
    y = fmaf(y * m, z, e * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    return fmaf(e, 0.693359375f, m + y);
}
static inline void sincos_avx(float x, float *sin_out, float *cos_out) {
    int32_t j = (int32_t)(x * 1.27323954473516f);
    j = (j + 1) & ~1;
    float y = (float)j;
    x = fmaf(y, -0.78515625f, x); x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float c = fmaf(fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f), z, 4.166664568298827E-002f);
    c = fmaf(c * z, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
    s = fmaf(s * z, x, x);
    int first = (j & 2) == 0;
    float sin_part = first ? s : 0.0f, cos_part = first ? 0.0f : c;
    *sin_out = from_bits(bits(cos_part + sin_part) ^ ((j & 4) << 29));
    *cos_out = from_bits(bits((c - cos_part) + (s - sin_part)) ^ ((~(j - 2) & 4) << 29));
}
#define T float
#define LOOP_HINT _Pragma("omp simd")
#define SQRT sqrtf
#define LOG log_avx
#define THETA(u) ((float)(2.0 * 3.14159265358979323846) * (u))
#define SINCOS sincos_avx
#define FMA fmaf
"""


_PERMUTATION_SOURCE = """#include <stdint.h>
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const uint64_t *words = (const uint64_t *)p[0];
    int64_t *order = (int64_t *)p[1];
    const int64_t count = n[0] + 1;
    for (int64_t i = 0; i < count - 1; i++) {
        const int64_t j = i + (int64_t)(words[i] % (uint64_t)(count - i));
        const int64_t t = order[i]; order[i] = order[j]; order[j] = t;
    }
}
"""


def permutation_swaps(order: np.ndarray, words: np.ndarray) -> None:
    """``randperm``'s swaps in place: position ``i`` trades with ``i + words[i] % (n - i)``
    (one native loop where a compiler can build it)."""
    n = order.size
    if n > 1:
        address = cc.plain_kernel(_PERMUTATION_SOURCE)
        if address is not None:
            cc.run(address, [np.ascontiguousarray(words, np.uint64)], [order], [n - 1])
            return
    for i in range(n - 1):
        j = i + int(words[i]) % (n - i)
        order[i], order[j] = order[j], order[i]
