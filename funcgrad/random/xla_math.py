"""Logarithms and the inverse error function as XLA's CPU backend computes them.

``jax.random`` turns uniform bits into other distributions with ``log``, ``log1p`` and
``erf_inv``, and XLA computes those its own way: Cephes' polynomials, with every multiply
and add that can be fused computed as one fused multiply-add. For the draws to be
``jax.random``'s bit for bit, ``fg.random`` computes them the same way here, from
funcgrad's operations (so they batch, compile and run on any device):

* a fused multiply-add ``a * b + c`` rounds once. For float32 operands the product is exact
  in float64, so one float64 multiply-add and a rounding give it. For float64, Dekker's
  exact product and Knuth's exact sum carry the lost bits. In half precision XLA rounds
  each operation where the CPU has no float16 arithmetic, and fuses the two where it has
  (x86's AVX512-FP16: on a Xeon of that kind, jax.jit's float16 ``a * b + c`` was the one
  rounding of the exact value for 200,000 of 200,000 draws, each operation rounded for 82%).
* float32 ``log`` is Cephes' ``logf`` with its polynomial split three ways, and ``exp``
  Cephes' ``expf``; float64 ``log`` is the C library's.
* ``log1p`` is Cephes' rational function below ``sqrt(2) - 1`` and ``log(1 + x)`` above.
* ``erfinv`` is Giles' polynomial in ``w = -log1p(-x*x)``: one pair of polynomials in
  float32 (half-precision input computed in float32), three in float64.
* ``tan`` and float64 ``log`` are the C library's, which XLA calls, for a concrete array
  (NumPy's SIMD versions differ from them in the last bit on some CPUs); a traced value
  takes funcgrad's.

Measured against jax 0.10.2 on this machine, over 400,000 inputs each: ``log``, ``log1p``
and the normal draws built on them agree bit for bit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops
from ..array import Array
from ..backends import cc
from ..dtypes import float16, float32, float64
from ..primitives import lax

__all__ = ["fma", "exp", "log", "log1p", "erfinv", "lgamma", "tan"]


def fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` with one rounding, in the operands' dtype (float32 or float64); in half
    precision each operation rounds, as XLA computes it there, unless the CPU computes
    float16 itself (then one rounding for float16, as XLA's fused code gives)."""
    d = a.dtype
    if d.itemsize < 4 and not (d is float16 and "avx512_fp16" in cc.cpu_flags()):  # (x86's native float16)
        return a * b + c
    if d is not float64:
        wide = lax.convert(a, float64) * lax.convert(b, float64) + lax.convert(c, float64)
        return lax.convert(wide, d)
    product, product_error = _two_product(a, b)
    total, total_error = _two_sum(product, c)
    return total + (product_error + total_error)


def _split(a: Any) -> tuple[Any, Any]:
    """Veltkamp's split: ``a`` as two halves of 26 bits (their products are exact)."""
    c = a * 134217729.0  # 2**27 + 1
    high = c - (c - a)
    return high, a - high


def _two_product(a: Any, b: Any) -> tuple[Any, Any]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _in_float32_below(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f`` of half-precision values computed in float32 and rounded back, as XLA computes
    them; ``f`` itself sees float32 and float64 only."""

    @functools.wraps(f)
    def wrapped(x: Any) -> Any:
        if x.dtype.itemsize < 4:
            return lax.convert(f(lax.convert(x, float32)), x.dtype)
        return f(x)

    return wrapped


def _like(x: Any, value: float) -> Any:
    return ops.full_like(x, value)


def _horner(x: Any, coefficients: tuple[float, ...]) -> Any:
    """``sum(c * x**k)``, the highest power's coefficient first, by fused multiply-adds."""
    p = _like(x, coefficients[0])
    for c in coefficients[1:]:
        p = fma(p, x, _like(x, c))
    return p


# Cephes' logf: log(1 + m) = m - m**2/2 + m**3 P(m) on [sqrt(1/2) - 1, sqrt(2) - 1]
_LOGF = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
         2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
_LN2_LOW, _LN2_HIGH = -2.12194440e-4, 0.693359375  # log(2) in two parts, the high one short
_TINY = float(np.finfo(np.float32).tiny)


@_in_float32_below
def log(x: Any) -> Any:
    """The natural logarithm (float32: Cephes' ``logf``; float64: the C library's)."""
    if x.dtype is not float32:
        return _libm("log", x, ops.log)
    y = ops.maximum(x, _TINY)  # (zeros and negatives are patched after)
    m, e = _frexp(y)
    below = m < math.sqrt(0.5)  # m in [sqrt(1/2), sqrt(2)) after this, centred on 1
    m = (m - 1.0) + ops.where(below, m, _like(m, 0.0))
    e = e - ops.where(below, _like(e, 1.0), _like(e, 0.0))
    m2 = m * m
    m3 = m2 * m
    p0 = fma(fma(_like(m, _LOGF[0]), m, _like(m, _LOGF[1])), m, _like(m, _LOGF[2]))
    p1 = fma(fma(_like(m, _LOGF[3]), m, _like(m, _LOGF[4])), m, _like(m, _LOGF[5]))
    p2 = fma(fma(_like(m, _LOGF[6]), m, _like(m, _LOGF[7])), m, _like(m, _LOGF[8]))
    p = fma(fma(fma(p0, m3, p1), m3, p2), m3, e * _LN2_LOW)
    out = fma(e, _like(e, _LN2_HIGH), (m - m2 * 0.5) + p)
    out = ops.where(x < _TINY, _like(x, -np.inf), out)  # (zeros, and denormals read as zeros)
    out = ops.where(x < 0.0, _like(x, np.nan), out)
    return ops.where(x == np.inf, x, ops.where(ops.isnan(x), x, out))


def _frexp(x: Any) -> tuple[Any, Any]:
    """Mantissas in [0.5, 1) and exponents (as floats) of positive normal float32 values,
    worked out exactly in float64."""
    wide = lax.convert(x, float64)
    e = ops.floor(ops.log2(wide)) + 1.0
    m = wide * ops.exp2(-e)
    high, low = m >= 1.0, m < 0.5  # (log2 rounded across a power of two)
    e = e + ops.where(high, _like(e, 1.0), ops.where(low, _like(e, -1.0), _like(e, 0.0)))
    m = ops.where(high, m * 0.5, ops.where(low, m * 2.0, m))
    return lax.convert(m, float32), lax.convert(e, float32)


# Cephes' expf: exp(n log 2 + r) = 2**n (1 + r + r**2 P(r)), log 2 in two parts
_EXPF = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
@_in_float32_below
def exp(x: Any) -> Any:
    """``e**x`` (float32: Cephes' ``expf``, results below 2**-126 flushed to 0 as XLA's CPU
    code runs with denormals off; float64: NumPy's)."""
    if x.dtype is not float32:
        return ops.exp(x)
    y = ops.clip(x, -200.0, 200.0)  # (beyond, the result is 0 or inf anyway)
    n = ops.floor(fma(y, _like(y, 1.44269504088896341), _like(y, 0.5)))
    r = fma(-n, _like(n, _LN2_HIGH), y)
    r = fma(-n, _like(n, _LN2_LOW), r)
    p = fma(_horner(r, _EXPF), r * r, r) + 1.0
    out = lax.convert(lax.convert(p, float64) * ops.exp2(lax.convert(n, float64)), float32)  # (2**n exact)
    return ops.where(ops.isnan(x), x, ops.where(out < _TINY, _like(out, 0.0), out))


# Cephes' log1p: log(1 + x) = x - x**2/2 + x**3 P(x)/Q(x) for |x| < sqrt(2) - 1
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
            3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)


@_in_float32_below
def log1p(x: Any) -> Any:
    """``log(1 + x)``, accurate for small ``x`` (float32 or float64)."""
    if x.dtype is float32:
        x = ops.where(ops.abs(x) < _TINY, x * 0.0, x)  # (denormals read as zeros)
    x2 = x * x
    small = x + fma(_like(x, -0.5), x2, (x * x2) * (_horner(x, _LOG1P_P) / _horner(x, _LOG1P_Q)))
    return ops.where(ops.abs(x) < math.sqrt(2.0) - 1.0, small, log(x + 1.0))


# Giles' erfinv: x * P(w) with w = -log1p(-x*x); float32 in two pieces, float64 in three
_ERFINV32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941),
             (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682))
_ERFINV64_BELOW_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
    -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_BELOW_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
    0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
_ERFINV64_ABOVE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
    7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
    2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221)


@_in_float32_below
def erfinv(y: Any) -> Any:
    """The inverse error function (a concrete float32 array: one native loop of the same
    steps, where a compiler can build it)."""
    if y.__class__ is Array and y.dtype is float32 and y.device.platform == "cpu":
        native = _native_erfinv32()
        if native is not None:
            data = np.ascontiguousarray(y.numpy())
            out = np.empty_like(data)
            cc.run(native, [data.reshape(-1)], [out.reshape(-1)], [data.size])
            return ops.asarray(out, device=y.device)
    x = y
    w = -log1p(-(x * x))
    if x.dtype is float64:
        p = _erfinv64(w)
    else:
        small = w < 5.0
        w = ops.where(small, w - 2.5, ops.sqrt(w) - 3.0)
        below, above = _ERFINV32
        p = ops.where(small, _like(w, below[0]), _like(w, above[0]))
        for c_below, c_above in zip(below[1:], above[1:]):
            p = fma(p, w, ops.where(small, _like(w, c_below), _like(w, c_above)))
    return ops.where(ops.abs(x) == 1.0, x * float(np.finfo(x.dtype.np).max), p * x)


def _erfinv64(w: Any) -> Any:
    below_6_25, below_16 = w < 6.25, w < 16.0
    root = ops.sqrt(w)
    w = ops.where(below_6_25, w - 3.125, root - ops.where(below_16, _like(w, 3.25), _like(w, 5.0)))

    def c(i: int) -> Any:
        value = _like(w, _ERFINV64_BELOW_6_25[i])
        if i < len(_ERFINV64_BELOW_16):
            value = ops.where(below_6_25, value, _like(w, _ERFINV64_BELOW_16[i]))
        if i < len(_ERFINV64_ABOVE_16):
            value = ops.where(below_16, value, _like(w, _ERFINV64_ABOVE_16[i]))
        return value

    p = c(0)
    for i in range(1, len(_ERFINV64_ABOVE_16)):
        p = fma(p, w, c(i))
    for i in range(len(_ERFINV64_ABOVE_16), len(_ERFINV64_BELOW_16)):
        p = ops.where(below_16, fma(p, w, c(i)), p)
    for i in range(len(_ERFINV64_BELOW_16), len(_ERFINV64_BELOW_6_25)):
        p = ops.where(below_6_25, fma(p, w, c(i)), p)
    return p


# Lanczos' approximation with g = 7 and 9 terms: lgamma(z + 1) = log(sqrt(2 pi))
# + (z + 1/2) log(t) - t + log(A(z)), t = z + g + 1/2, A(z) = c0 + sum(c_k / (z + k))
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283, 771.3234287776530788486528258894,
            -176.61502916214059906584551354, 12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)


def lgamma(x: Any) -> Any:
    """``log|Gamma(x)|``, Lanczos' approximation as XLA computes it (Euler's reflection below 1/2)."""
    reflect = x < 0.5
    z = ops.where(reflect, -x, x - 1.0)
    a = _like(z, _LANCZOS_BASE)
    for i, c in enumerate(_LANCZOS):
        a = a + c / ((z + float(i)) + 1.0)
    t = z + 7.5
    log_t = math.log(7.5) + log1p(z / 7.5)
    log_y = fma((z + 0.5) - t / log_t, log_t, _like(z, (math.log(2) + math.log(math.pi)) / 2)) + log(a)
    frac = ops.abs(x) - ops.floor(ops.abs(x))
    frac = ops.where(frac > 0.5, 1.0 - frac, frac)
    denominator = log(ops.sin(math.pi * frac))
    reflection = ops.where(ops.isfinite(denominator), (math.log(math.pi) - denominator) - log_y, -denominator)
    return ops.where(ops.isinf(x), ops.abs(x), ops.where(reflect, reflection, log_y))


def _libm(name: str, x: Any, otherwise: Callable[[Any], Any]) -> Any:
    """``x`` through the C library's ``name`` where it is a concrete float32 or float64
    array (``cc.libm``), else ``otherwise(x)``."""
    if x.__class__ is Array and x.dtype in (float32, float64) and x.device.platform == "cpu":
        out = cc.libm(name, x.numpy())
        if out is not None:
            return ops.asarray(out, device=x.device)
    return otherwise(x)


def tan(x: Any) -> Any:
    """``tan`` as XLA's CPU backend computes it: the C library's (``_libm``)."""
    return _libm("tan", x, ops.tan)


def _c_float(v: float) -> str:
    return repr(float(np.float32(v))) + "f"


def _erfinv32_source() -> str:
    """``erfinv``'s float32 steps in C: ``log1p`` and Cephes' ``log`` as above, Giles'
    polynomial, each fused multiply-add one ``fmaf`` (XLA's), the rest rounded alone."""
    def horner(name: str, coefficients: tuple[float, ...], var: str) -> str:
        body = _c_float(coefficients[0])
        for c in coefficients[1:]:
            body = f"fmaf({body}, {var}, {_c_float(c)})"
        return f"const float {name} = {body};"

    logf = _LOGF
    below, above = _ERFINV32
    select = "".join(f"    p = fmaf(p, w, small ? {_c_float(b)} : {_c_float(a)});\n"
                     for b, a in zip(below[1:], above[1:]))
    return (
        "#include <stdint.h>\n#include <math.h>\n#include <float.h>\n"
        "static inline float fg_log(float x) {\n"
        f"    const float tiny = {_c_float(_TINY)};\n"
        "    if (isnan(x) || x == INFINITY) return x;\n"
        "    if (x < 0.0f) return NAN;\n"
        "    if (x < tiny) return -INFINITY;\n"
        "    int n; float m = frexpf(x, &n); float e = (float)n;\n"
        f"    const int below = m < {_c_float(math.sqrt(0.5))};\n"
        "    m = (m - 1.0f) + (below ? m : 0.0f);\n"
        "    e = e - (below ? 1.0f : 0.0f);\n"
        "    const float m2 = m * m, m3 = m2 * m;\n"
        f"    const float p0 = fmaf(fmaf({_c_float(logf[0])}, m, {_c_float(logf[1])}), m, {_c_float(logf[2])});\n"
        f"    const float p1 = fmaf(fmaf({_c_float(logf[3])}, m, {_c_float(logf[4])}), m, {_c_float(logf[5])});\n"
        f"    const float p2 = fmaf(fmaf({_c_float(logf[6])}, m, {_c_float(logf[7])}), m, {_c_float(logf[8])});\n"
        f"    const float p = fmaf(fmaf(fmaf(p0, m3, p1), m3, p2), m3, e * {_c_float(_LN2_LOW)});\n"
        f"    return fmaf(e, {_c_float(_LN2_HIGH)}, (m - m2 * 0.5f) + p);\n"
        "}\n"
        "static inline float fg_log1p(float x) {\n"
        f"    if (fabsf(x) < {_c_float(_TINY)}) x = x * 0.0f;\n"
        f"    if (!(fabsf(x) < {_c_float(math.sqrt(2.0) - 1.0)})) return fg_log(x + 1.0f);\n"
        "    const float x2 = x * x;\n"
        f"    {horner('num', _LOG1P_P, 'x')}\n"
        f"    {horner('den', _LOG1P_Q, 'x')}\n"
        "    return x + fmaf(-0.5f, x2, (x * x2) * (num / den));\n"
        "}\n"
        "void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **ptrs) {\n"
        "  const float *in = (const float *)ptrs[0];\n"
        "  float *out = (float *)ptrs[1];\n"
        "  for (int64_t i = lo; i < hi; i++) {\n"
        "    const float x = in[i];\n"
        "    float w = -fg_log1p(-(x * x));\n"
        "    const int small = w < 5.0f;\n"
        "    w = small ? w - 2.5f : sqrtf(w) - 3.0f;\n"
        f"    float p = small ? {_c_float(below[0])} : {_c_float(above[0])};\n"
        + select +
        "    out[i] = fabsf(x) == 1.0f ? x * FLT_MAX : p * x;\n"
        "  }\n}\n")


@functools.lru_cache(maxsize=1)
def _native_erfinv32() -> int | None:
    return cc.plain_kernel(_erfinv32_source())
