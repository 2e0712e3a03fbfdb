"""Scaled dot-product attention's forward pass as one primitive: ``attention(q, k, v)``
gives ``o = softmax(q k^T * scale + mask) v`` and the weights ``p`` (the softmax), as
PyTorch's ``_scaled_dot_product_*_attention`` gives its output and what its backward keeps.

Its kernel computes a head's scores row by row, their softmax and the row's output while
the row is in the caches, where the composite wrote the scores, the masked scores, the
weights and the output as four arrays; a causal mask is the end of each row's loop, not an
array. The rules are the composite's, written in array operations from the weights ``p``,
so every derivative order and transform composes through them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from . import lax
from .ad import VJPRule
from .batching import axis_size, to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape

__all__ = ["attention_p"]


def _rule(q: ShapedArray, k: ShapedArray, v: ShapedArray, *, scale: float, causal: bool) -> tuple[ShapedArray, ...]:
    require_kind("attention", q.dtype, "f", "floating-point arrays")
    if not (q.dtype is k.dtype is v.dtype):
        raise ShapeError(f"attention: query, key and value dtypes {q.dtype}, {k.dtype}, {v.dtype} differ")
    if len(q.shape) < 2 or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]) or q.shape[-1] != k.shape[-1] \
            or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"attention: query {fmt_shape(q.shape)}, key {fmt_shape(k.shape)} and value "
                         f"{fmt_shape(v.shape)} do not fit: (..., L, E), (..., S, E) and (..., S, Ev) with the same "
                         f"leading axes")
    lead, length, source = q.shape[:-2], q.shape[-2], k.shape[-2]
    return (ShapedArray((*lead, length, v.shape[-1]), q.dtype, q.device),
            ShapedArray((*lead, length, source), q.dtype, q.device))


def _keep(xp: Any, length: int, source: int) -> Any:
    """The causal mask: query ``i`` sees keys ``0..i`` (PyTorch's top-left alignment)."""
    return xp.arange(source)[None, :] <= xp.arange(length)[:, None]


# One head a step of the outer loop (the heads split over threads): its keys transposed and
# its values copied into scratch rows padded to whole blocks, then per query row its scores
# by blocks of FG_B keys (a block's sums in four vector registers over the head's width: four
# independent chains, where one would wait on each multiply-add's latency; GCC's vector type,
# since it keeps an array of sums in memory), their softmax over whole blocks (the masked
# keys -inf), and its output by blocks of FG_V features (the weighted sum of the value rows,
# even and odd rows in two chains). Multiply-adds are fused where the CPU has them, so values
# are within rounding of the composite's, not its bits. n: heads, L, S, E, Ev, causal; p: q, k,
# v, the scale (one element), then o and the weights.
_ATTENTION_C = """#include <stdlib.h>
#include <string.h>
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=fast")
#endif
#if defined(__AVX512F__)
#define FG_BYTES 64
#elif defined(__AVX__)
#define FG_BYTES 32
#else
#define FG_BYTES 16
#endif
/* one vector register (a wider vector type than the ISA has is lowered lane by lane) */
typedef T fg_vec __attribute__((vector_size(FG_BYTES), aligned(sizeof(T)), may_alias));
#define FG_LANES ((int64_t)(FG_BYTES / sizeof(T)))
#define FG_B (4 * FG_LANES)  /* keys a block of scores: four vectors of sums, four chains of multiply-adds */
#define FG_V (2 * FG_LANES)  /* features a block of the output, even and odd value rows in two chains each */
static inline fg_vec fg_load(const T *x) { return *(const fg_vec *)x; }  /* (unaligned: the type's alignment is T's) */
static inline void fg_store(T *x, fg_vec v) { *(fg_vec *)x = v; }
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const int64_t L = n[1], S = n[2], E = n[3], F = n[4], causal = n[5], rank = n[6];
    const int64_t *dims = n + 7, *sq = dims + rank, *sk = sq + rank, *sv = sk + rank, *rows = sv + rank;
    const int64_t Sp = (S + FG_B - 1) / FG_B * FG_B, Fp = (F + FG_V - 1) / FG_V * FG_V;
    const T *restrict q = (const T *)p[0], *restrict k = (const T *)p[1], *restrict v = (const T *)p[2];
    const T scale = *(const T *)p[3];
    T *restrict o = (T *)p[4], *restrict w = (T *)p[5];
    T *kt = (T *)calloc((size_t)(Sp * E + S * Fp + E + Sp + Fp), sizeof(T));
    if (!kt) abort();
    T *vp = kt + Sp * E, *qs = vp + S * Fp, *row = qs + E, *acc = row + Sp;
    for (int64_t b = lo; b < hi; b++) {
        int64_t rest = b, oq = 0, ok = 0, ov = 0;  /* the head's place in each operand (read where they lie) */
        for (int64_t a = rank - 1; a >= 0; a--) {
            const int64_t at = rest % dims[a];
            rest /= dims[a];
            oq += at * sq[a]; ok += at * sk[a]; ov += at * sv[a];
        }
        const T *qb = q + oq, *kb = k + ok, *vb = v + ov;
        T *ob = o + b * L * F, *wb = w + b * L * S;
        for (int64_t j = 0; j < S; j++) {
            for (int64_t d = 0; d < E; d++) kt[d * Sp + j] = kb[j * rows[1] + d];
            memcpy(vp + j * Fp, vb + j * rows[2], sizeof(T) * (size_t)F);
        }
        for (int64_t i = 0; i < L; i++) {
            const int64_t seen = causal ? (i + 1 < S ? i + 1 : S) : S;
            const int64_t width = (seen + FG_B - 1) / FG_B * FG_B;  /* the blocks computed: the rest is masked */
            for (int64_t d = 0; d < E; d++) qs[d] = qb[i * rows[0] + d] * scale;
            for (int64_t jb = 0; jb < seen; jb += FG_B) {
                fg_vec s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
                for (int64_t d = 0; d < E; d++) {
                    const T a = qs[d];
                    const T *kd = kt + d * Sp + jb;
                    s0 += a * fg_load(kd);
                    s1 += a * fg_load(kd + FG_LANES);
                    s2 += a * fg_load(kd + 2 * FG_LANES);
                    s3 += a * fg_load(kd + 3 * FG_LANES);
                }
                fg_store(row + jb, s0);
                fg_store(row + jb + FG_LANES, s1);
                fg_store(row + jb + 2 * FG_LANES, s2);
                fg_store(row + jb + 3 * FG_LANES, s3);
            }
            for (int64_t j = seen; j < width; j++) row[j] = -INFINITY;
            T top = row[0];
            #pragma omp simd reduction(max:top)
            for (int64_t j = 0; j < width; j++) top = row[j] > top ? row[j] : top;
            T total = 0;
            #pragma omp simd reduction(+:total)
            for (int64_t j = 0; j < width; j++) { T e = fg_exp(row[j] - top); row[j] = e; total += e; }
            T *restrict wr = wb + i * S;
            #pragma omp simd
            for (int64_t j = 0; j < seen; j++) wr[j] = row[j] = row[j] / total;
            for (int64_t j = seen; j < S; j++) wr[j] = 0;
            for (int64_t fb = 0; fb < F; fb += FG_V) {
                fg_vec e0 = {0}, e1 = {0}, o0 = {0}, o1 = {0};
                int64_t j = 0;
                for (; j + 1 < seen; j += 2) {
                    const T a = row[j], c = row[j + 1];
                    const T *vj = vp + j * Fp + fb, *vn = vj + Fp;
                    e0 += a * fg_load(vj);
                    e1 += a * fg_load(vj + FG_LANES);
                    o0 += c * fg_load(vn);
                    o1 += c * fg_load(vn + FG_LANES);
                }
                if (j < seen) {
                    const T a = row[j];
                    const T *vj = vp + j * Fp + fb;
                    e0 += a * fg_load(vj);
                    e1 += a * fg_load(vj + FG_LANES);
                }
                fg_store(acc, e0 + o0);
                fg_store(acc + FG_LANES, e1 + o1);
                const int64_t m = F - fb < FG_V ? F - fb : FG_V;
                memcpy(ob + i * F + fb, acc, sizeof(T) * (size_t)m);
            }
        }
    }
    free(kt);
}
"""


def _native(q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any] | None:
    if q.dtype not in (np.float32, np.float64) or not (q.dtype == k.dtype == v.dtype) or not q.shape[-2] \
            or not k.shape[-2]:
        return None
    try:
        address = cc.loop_kernel(f"#define T {cc.C_TYPE_OF[q.dtype]}\n" + _ATTENTION_C)
    except cc.NativeBuildError:
        return None
    length, source, e, f = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    lead = q.shape[:-2]
    heads = math.prod(lead)
    o = np.empty((*lead, length, f), q.dtype)
    w = np.empty((*lead, length, source), q.dtype)
    if heads:
        (rq, sq), (rk, sk), (rv, sv) = (_rows(a) for a in (q, k, v))
        sizes = [heads, length, source, e, f, int(causal), len(lead), *lead, *sq[:-2], *sk[:-2], *sv[:-2], sq[-2],
                 sk[-2], sv[-2]]
        cc.run(address, [rq, rk, rv, np.asarray(scale, q.dtype)], [o, w], sizes, per_element=2 * e + 8)
    return o, w


def _rows(x: Any) -> tuple[Any, list[int]]:
    """``x`` as the kernel reads it where it lies (the heads of a fused qkv projection, rows
    3 * width apart): the contiguous run of memory from its first element to its last, and
    its strides in elements. Rows whose elements are not consecutive, or negative strides,
    read a C-contiguous copy."""
    size = x.itemsize
    if x.strides[-1] == size and all(st >= 0 and st % size == 0 for st in x.strides):
        strides = [st // size for st in x.strides]
        span = 1 + sum((d - 1) * st for d, st in zip(x.shape, strides))
        return np.lib.stride_tricks.as_strided(x, (span,), (size,)), strides
    x = np.ascontiguousarray(x)
    return x, [st // size for st in x.strides]


def _attention(xp: Any, q: Any, k: Any, v: Any, *, scale: float, causal: bool) -> tuple[Any, Any]:
    """The output and the weights: the native loop where it can be built, else NumPy's (or
    CuPy's) products and softmax."""
    if cc.eager_native(xp):
        native = _native(q, k, v, scale, causal)
        if native is not None:
            return native
    s = xp.matmul(q * xp.asarray(scale, q.dtype), xp.swapaxes(k, -1, -2))
    if causal:
        s = xp.where(_keep(xp, q.shape[-2], k.shape[-2]), s, xp.asarray(-np.inf, s.dtype))
    if s.shape[-1]:
        s = xp.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
    return xp.matmul(s, v), s


def _attention_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Mul, Transpose, MatMul, Add (causal), Softmax, MatMul"""
    q, k, v = ins
    dtype = np.dtype(eqn.outputs[0].aval.dtype.np)
    rank = len(eqn.inputs[1].aval.shape)
    kt = g.node("Transpose", [k], perm=[*range(rank - 2), rank - 1, rank - 2])
    s = g.node("MatMul", [g.node("Mul", [q, g.constant(np.asarray(eqn.params["scale"], dtype), "scale")]), kt])
    if eqn.params["causal"]:
        length, source = eqn.inputs[0].aval.shape[-2], eqn.inputs[1].aval.shape[-2]
        mask = np.where(_keep(np, length, source), 0.0, -np.inf).astype(dtype)
        s = g.node("Add", [s, g.constant(mask, "causal")])
    g.node("MatMul", [g.node("Softmax", [s], axis=-1), v], [out])


attention_p = Primitive("attention", _rule, kernel=_attention, multiple_results=True, autocast="float32",
                        torch_name="ScaledDotProductAttention", onnx=_attention_onnx)


def _mT(x: Any) -> Any:
    return lax.moveaxis(x, (x.ndim - 1,), (x.ndim - 2,))


def _softmax_linear(p: Any, t: Any) -> Any:
    """The softmax's Jacobian at weights ``p`` applied to ``t`` (symmetric: JVP and VJP)."""
    return p * (t - lax.reduce_sum(p * t, (p.ndim - 1,), keepdims=True))


def _jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, scale: float, causal: bool) -> tuple[Any, Any]:
    q, k, v = primals
    tq, tk, tv = tangents
    o, p = bind(attention_p, q, k, v, scale=scale, causal=causal)
    ts = None
    if tq is not None:
        ts = lax.matmul(tq, _mT(k))
    if tk is not None:
        part = lax.matmul(q, _mT(tk))
        ts = part if ts is None else ts + part
    tp = None if ts is None else _softmax_linear(p, ts * lax.const(ts, scale))
    to = None if tp is None else lax.matmul(tp, v)
    if tv is not None:
        part = lax.matmul(p, tv)
        to = part if to is None else to + part
    if to is None:
        return (o, p), None
    return (o, p), (to, tp if tp is not None else lax.zeros(p, tuple(p.shape)))


class _AttentionVJP(VJPRule):
    """Keeps ``q``, ``k``, ``v`` and the weights; the cotangents are the composite's: ``dv =
    p^T g``, the weights' cotangent ``g v^T`` (plus any the weights got themselves) through
    the softmax, then the scores' to ``q`` and ``k``."""

    plannable = True

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        ans = bind(attention_p, *primals, **params)
        return ans, self.residuals(primals, params, ans)

    def residuals(self, primals: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        return (*primals, ans[1])

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        q, k, v, p = residuals
        go, gp = g
        needs = needs or (True, True, True)
        dv = lax.matmul(_mT(p), go) if needs[2] and go is not None else None
        dp = lax.matmul(go, _mT(v)) if go is not None else None
        if gp is not None:
            dp = gp if dp is None else dp + gp
        if dp is None or not (needs[0] or needs[1]):
            return None, None, dv
        ds = _softmax_linear(p, dp) * lax.const(p, params["scale"])
        return (lax.matmul(ds, k) if needs[0] else None, lax.matmul(_mT(ds), q) if needs[1] else None, dv)


def _batch(args: Any, dims: Any, *, scale: float, causal: bool) -> tuple[Any, Any]:
    """The batch axis in front of every operand (the unmapped ones broadcast): one more
    leading axis of heads."""
    n = axis_size(args, dims)
    out = bind(attention_p, *(to_front(a, d, n) for a, d in zip(args, dims)), scale=scale, causal=causal)
    return out, (0, 0)


attention_p.jvp = _jvp
attention_p.vjp = _AttentionVJP()
attention_p.batch = _batch
