"""Scaled dot-product attention as two primitives: ``attention(q, k, v)`` gives ``o =
softmax(q k^T * scale + mask) v`` and the weights ``p`` (the softmax), as PyTorch's
``_scaled_dot_product_*_attention`` gives its output and what its backward keeps; and
``attention_grad(q, k, v, p, go)`` gives the cotangents of q, k and v from the weights and
the output's cotangent, the backward pass wherever the weights get no cotangent of their own.

Their kernels work on a head's rows in tiles while they are in the caches, where the
composites wrote the scores, masked scores, weights and output (or the weights' and the
scores' cotangents) as arrays of their own; a causal mask is the end of each row's loops,
not an array. The rules are the composites', written in array operations, so every
derivative order and transform composes through them."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..backends import cc
from ..backends.base import flat_span, laid_out_together
from ..errors import ShapeError
from . import lax
from .ad import InputsVJP, VJPRule, add_optional
from .batching import axis_size, to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape

__all__ = ["attention_p", "attention_grad_p"]


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


_HEADER_C = """#include <stdlib.h>
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
#define FG_R 4  /* rows a tile */
#define FG_B (2 * FG_LANES)  /* columns a tile: two vectors */
#define FG_PAD(x) (((x) + FG_B - 1) / FG_B * FG_B)
static inline fg_vec fg_load(const T *x) { return *(const fg_vec *)x; }  /* (unaligned: the type's alignment is T's) */
static inline void fg_store(T *x, fg_vec v) { *(fg_vec *)x = v; }
/* a tile's eight sums, Y00..Y31 (row, vector), += X's four rows' element (X[r * step]) times P's two vectors */
#define FG_ZERO(Y) fg_vec Y##00 = {0}, Y##01 = {0}, Y##10 = {0}, Y##11 = {0}, Y##20 = {0}, Y##21 = {0}, \\
    Y##30 = {0}, Y##31 = {0}
#define FG_TILE(X, Y, P, step) do { \\
    const fg_vec x0 = fg_load(P), x1 = fg_load((P) + FG_LANES); \\
    const T c0 = (X)[0], c1 = (X)[step], c2 = (X)[2 * (step)], c3 = (X)[3 * (step)]; \\
    Y##00 += c0 * x0; Y##01 += c0 * x1; Y##10 += c1 * x0; Y##11 += c1 * x1; \\
    Y##20 += c2 * x0; Y##21 += c2 * x1; Y##30 += c3 * x0; Y##31 += c3 * x1; } while (0)
#define FG_STORE_ROWS(Y, D, step) do { \\
    fg_store((D), Y##00); fg_store((D) + FG_LANES, Y##01); \\
    fg_store((D) + (step), Y##10); fg_store((D) + (step) + FG_LANES, Y##11); \\
    fg_store((D) + 2 * (step), Y##20); fg_store((D) + 2 * (step) + FG_LANES, Y##21); \\
    fg_store((D) + 3 * (step), Y##30); fg_store((D) + 3 * (step) + FG_LANES, Y##31); } while (0)
/* the head's place in each of `count` operands (offsets[]), for head b of a stack of lead axes dims[rank],
   each operand's strides over them at strides + o * rank */
static inline void fg_head(int64_t b, int64_t rank, const int64_t *dims, const int64_t *strides, int count,
                           int64_t *offsets) {
    for (int o = 0; o < count; o++) offsets[o] = 0;
    for (int64_t a = rank - 1; a >= 0; a--) {
        const int64_t at = b % dims[a];
        b /= dims[a];
        for (int o = 0; o < count; o++) offsets[o] += at * strides[o * rank + a];
    }
}
"""


# Attention's forward pass, one head a step of the outer loop (the heads split over threads).
# The head's keys are transposed and its values copied into scratch rows padded to whole
# tiles; then four query rows at a time: their scores by tiles of 4 rows x 2 vectors of keys
# (eight independent chains of multiply-adds, each key vector loaded once for four rows),
# a causal row's scores only up to the tile's last key, each row's softmax, and the output
# by tiles of 4 rows x 2 vectors of features. Multiply-adds are fused where the CPU has
# them, so values are within rounding of the composite's, not its bits. n: heads, L, S, E,
# Ev, causal, the lead axes' rank, dims, strides of q, k and v over them, then their row
# strides; p: q, k, v, the scale (one element), then o and the weights.
_FORWARD_C = _HEADER_C + """
/* exp(y) of a score less the row's largest, y <= 0 (-inf in a row's padding), inlined so that the softmax's loop
   vectorizes without calls (glibc's vector expf in that loop took a fifth of the kernel's time): 2^n (1 + q), q =
   expm1(r) a polynomial, within 1.04 ulp of exp over [-87.3, 0] (glibc's expf within 0.5); 0 below, where exp's
   float is subnormal or 0; NaN for NaN. A double is glibc's exp. */
static inline float fg_exp_score_f(float y) {
    const float zero = y < -87.33f ? 0.0f : 1.0f;  /* (a NaN stays NaN) */
    y = y < -87.33f ? -87.33f : y;
    const float k = fg_log2_rounded(y), scale = fg_pow2_rounded(k) * zero;
    return fg_fma(scale, fg_expm1_poly(fg_ln2_remainder(y, k)), scale);
}
#define fg_exp_score(y) _Generic((y), float: fg_exp_score_f((float)(y)), default: exp(y))
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const int64_t L = n[1], S = n[2], E = n[3], F = n[4], causal = n[5], rank = n[6];
    const int64_t *dims = n + 7, *rows = dims + 6 * rank;  /* (dims, then q, k, v, o and w's strides over them) */
    const int64_t Sp = FG_PAD(S), Fp = FG_PAD(F);
    const T *restrict q = (const T *)p[0], *restrict k = (const T *)p[1], *restrict v = (const T *)p[2];
    const T scale = *(const T *)p[3];
    T *restrict o = (T *)p[4], *restrict w = (T *)p[5];
    /* scratch, its padding zero: k transposed, v, four scaled query rows, four rows of scores */
    T *kt = (T *)calloc((size_t)(Sp * E + S * Fp + FG_R * E + FG_R * Sp + FG_R * FG_B), sizeof(T));
    if (!kt) abort();
    T *vp = kt + Sp * E, *qs = vp + S * Fp, *sc = qs + FG_R * E, *acc = sc + FG_R * Sp;
    for (int64_t b = lo; b < hi; b++) {
        int64_t at[5];
        fg_head(b, rank, dims, dims + rank, 5, at);
        const T *qb = q + at[0], *kb = k + at[1], *vb = v + at[2];
        T *ob = o + at[3], *wb = w + at[4];
        for (int64_t d = 0; d < E; d++) {  /* (a row of kt at a time: gathered where the CPU gathers) */
            const T *restrict kd = kb + d;
            T *restrict row = kt + d * Sp;
            for (int64_t j = 0; j < S; j++) row[j] = kd[j * rows[1]];
        }
        for (int64_t j = 0; j < S; j++) memcpy(vp + j * Fp, vb + j * rows[2], sizeof(T) * (size_t)F);
        for (int64_t i0 = 0; i0 < L; i0 += FG_R) {
            int64_t ri[FG_R], seen[FG_R];  /* a tile past the last row repeats it (its results written twice) */
            for (int r = 0; r < FG_R; r++) {
                ri[r] = i0 + r < L ? i0 + r : L - 1;
                seen[r] = causal ? (ri[r] + 1 < S ? ri[r] + 1 : S) : S;
                for (int64_t d = 0; d < E; d++) qs[r * E + d] = qb[ri[r] * rows[0] + d] * scale;
            }
            const int64_t most = seen[FG_R - 1], width = FG_PAD(most);
            for (int64_t jb = 0; jb < most; jb += FG_B) {
                FG_ZERO(s);
                for (int64_t d = 0; d < E; d++) FG_TILE(qs + d, s, kt + d * Sp + jb, E);
                FG_STORE_ROWS(s, sc + jb, Sp);
            }
            for (int r = 0; r < FG_R; r++) {
                T *row = sc + r * Sp;
                for (int64_t j = seen[r]; j < width; j++) row[j] = -INFINITY;
                T top = row[0];
                #pragma omp simd reduction(max:top)
                for (int64_t j = 0; j < width; j++) top = row[j] > top ? row[j] : top;
                T total = 0;
                #pragma omp simd reduction(+:total)
                for (int64_t j = 0; j < width; j++) { T e = fg_exp_score(row[j] - top); row[j] = e; total += e; }
                const T inv = 1 / total;
                T *restrict wr = wb + ri[r] * rows[4];
                #pragma omp simd
                for (int64_t j = 0; j < seen[r]; j++) wr[j] = row[j] = row[j] * inv;
                for (int64_t j = seen[r]; j < S; j++) wr[j] = 0;
            }
            for (int64_t fb = 0; fb < F; fb += FG_B) {
                FG_ZERO(s);
                for (int64_t j = 0; j < most; j++) FG_TILE(sc + j, s, vp + j * Fp + fb, Sp);
                FG_STORE_ROWS(s, acc, FG_B);
                const int64_t m = F - fb < FG_B ? F - fb : FG_B;
                for (int r = 0; r < FG_R; r++) memcpy(ob + ri[r] * rows[3] + fb, acc + r * FG_B, sizeof(T) * (size_t)m);
            }
        }
    }
    free(kt);
}
"""


# Attention's backward pass from the forward's weights p, one head a step of the outer loop:
# four query rows at a time, the weights' cotangent dp = go v^T by tiles as the forward's
# scores, the scores' cotangent ds = p (dp - rowsum(p dp)) scale, dq's rows ds k by tiles,
# and dk += ds^T q, dv += p^T go accumulated in scratch rows (four rows' worth a pass over
# them); a causal row's loops end at its last key. n: as the forward's, with go's strides
# after v's; p: q, k, v, go, the weights, the scale, then dq, dk and dv.
_BACKWARD_C = _HEADER_C + """
/* rows j < most of acc += the tile's four rows (two vectors each, rows a_step apart) weighted by column j of
   X's four rows (x_step apart) */
static inline void fg_outer(T *restrict acc, int64_t Ap, const T *restrict X, int64_t x_step, int64_t most,
                            const T *restrict a, int64_t a_step) {
    const fg_vec a00 = fg_load(a), a01 = fg_load(a + FG_LANES), a10 = fg_load(a + a_step),
                 a11 = fg_load(a + a_step + FG_LANES), a20 = fg_load(a + 2 * a_step),
                 a21 = fg_load(a + 2 * a_step + FG_LANES), a30 = fg_load(a + 3 * a_step),
                 a31 = fg_load(a + 3 * a_step + FG_LANES);
    for (int64_t j = 0; j < most; j++) {
        const T c0 = X[j], c1 = X[x_step + j], c2 = X[2 * x_step + j], c3 = X[3 * x_step + j];
        T *row = acc + j * Ap;
        fg_store(row, fg_load(row) + c0 * a00 + c1 * a10 + c2 * a20 + c3 * a30);
        fg_store(row + FG_LANES, fg_load(row + FG_LANES) + c0 * a01 + c1 * a11 + c2 * a21 + c3 * a31);
    }
}
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const int64_t L = n[1], S = n[2], E = n[3], F = n[4], causal = n[5], rank = n[6];
    const int64_t *dims = n + 7, *rows = dims + 9 * rank;  /* (dims, then eight operands' strides over them) */
    const int64_t Sp = FG_PAD(S), Ep = FG_PAD(E), Fp = FG_PAD(F), Lp = (L + FG_R - 1) / FG_R * FG_R;
    const T *restrict q = (const T *)p[0], *restrict k = (const T *)p[1], *restrict v = (const T *)p[2],
            *restrict g = (const T *)p[3], *restrict w = (const T *)p[4];
    const T scale = *(const T *)p[5];
    T *restrict dq = (T *)p[6], *restrict dk = (T *)p[7], *restrict dv = (T *)p[8];
    /* scratch, its padding zero: v transposed, k, the accumulated dk and dv, q and go by rows (rows past L zero),
       four rows of the scores' cotangent and of the weights, four rows of dq */
    T *vt = (T *)calloc((size_t)(F * Sp + 2 * S * Ep + S * Fp + Lp * (Ep + Fp) + 2 * FG_R * Sp + FG_R * FG_B),
                        sizeof(T));
    if (!vt) abort();
    T *kp = vt + F * Sp, *dka = kp + S * Ep, *dva = dka + S * Ep, *qa = dva + S * Fp, *ga = qa + Lp * Ep,
      *ds = ga + Lp * Fp, *pt = ds + FG_R * Sp, *acc = pt + FG_R * Sp;
    for (int64_t b = lo; b < hi; b++) {
        int64_t at[8];
        fg_head(b, rank, dims, dims + rank, 8, at);
        const T *qb = q + at[0], *kb = k + at[1], *vb = v + at[2], *gb = g + at[3], *wb = w + at[4];
        T *dqb = dq + at[5], *dkb = dk + at[6], *dvb = dv + at[7];
        for (int64_t j = 0; j < S; j++) {
            for (int64_t f = 0; f < F; f++) vt[f * Sp + j] = vb[j * rows[2] + f];
            memcpy(kp + j * Ep, kb + j * rows[1], sizeof(T) * (size_t)E);
        }
        for (int64_t i = 0; i < L; i++) {
            memcpy(qa + i * Ep, qb + i * rows[0], sizeof(T) * (size_t)E);
            memcpy(ga + i * Fp, gb + i * rows[3], sizeof(T) * (size_t)F);
        }
        memset(dka, 0, sizeof(T) * (size_t)(S * Ep + S * Fp));
        for (int64_t i0 = 0; i0 < L; i0 += FG_R) {
            int64_t seen[FG_R], most = 0;
            for (int r = 0; r < FG_R; r++) {
                seen[r] = i0 + r >= L ? 0 : causal ? (i0 + r + 1 < S ? i0 + r + 1 : S) : S;
                most = seen[r] > most ? seen[r] : most;
            }
            const int64_t width = FG_PAD(most);
            const T *qi = qa + i0 * Ep, *gi = ga + i0 * Fp;
            /* the weights' cotangent go v^T */
            for (int64_t jb = 0; jb < most; jb += FG_B) {
                FG_ZERO(s);
                for (int64_t f = 0; f < F; f++) FG_TILE(gi + f, s, vt + f * Sp + jb, Fp);
                FG_STORE_ROWS(s, ds + jb, Sp);
            }
            /* the scores' cotangent p (dp - sum(p dp)) * scale; zero past what a row sees */
            for (int r = 0; r < FG_R; r++) {
                T *restrict d = ds + r * Sp, *restrict pr = pt + r * Sp;
                const T *restrict wr = wb + (i0 + r) * rows[4];
                T dot = 0;
                #pragma omp simd reduction(+:dot)
                for (int64_t j = 0; j < seen[r]; j++) dot += wr[j] * d[j];
                #pragma omp simd
                for (int64_t j = 0; j < seen[r]; j++) { pr[j] = wr[j]; d[j] = wr[j] * (d[j] - dot) * scale; }
                for (int64_t j = seen[r]; j < width; j++) pr[j] = d[j] = 0;
            }
            /* dq's rows: ds k */
            for (int64_t eb = 0; eb < E; eb += FG_B) {
                FG_ZERO(s);
                for (int64_t j = 0; j < most; j++) FG_TILE(ds + j, s, kp + j * Ep + eb, Sp);
                FG_STORE_ROWS(s, acc, FG_B);
                const int64_t m = E - eb < FG_B ? E - eb : FG_B;
                for (int r = 0; r < FG_R && i0 + r < L; r++)
                    memcpy(dqb + (i0 + r) * rows[5] + eb, acc + r * FG_B, sizeof(T) * (size_t)m);
            }
            /* dk += ds^T q, dv += p^T go */
            for (int64_t eb = 0; eb < E; eb += FG_B) fg_outer(dka + eb, Ep, ds, Sp, most, qi + eb, Ep);
            for (int64_t fb = 0; fb < F; fb += FG_B) fg_outer(dva + fb, Fp, pt, Sp, most, gi + fb, Fp);
        }
        for (int64_t j = 0; j < S; j++) {
            memcpy(dkb + j * rows[6], dka + j * Ep, sizeof(T) * (size_t)E);
            memcpy(dvb + j * rows[7], dva + j * Fp, sizeof(T) * (size_t)F);
        }
    }
    free(vt);
}
"""


@functools.lru_cache(maxsize=8)
def _built(source: str, c_type: str) -> int:
    """The address of loop ``source`` over ``c_type``, made once (finding it in the cache by
    its text cost 3 us a call); ``cc.NativeBuildError`` where it cannot be built."""
    return cc.loop_kernel(f"#define T {c_type}\n" + source)


def _native(source: str, arrays: tuple[Any, ...], rest: tuple[Any, ...],
            results: tuple[tuple[tuple[int, ...], int | None], ...], scale: float, causal: bool,
            per_element: int) -> tuple[Any, ...] | None:
    """One of the kernels above over heads of ``arrays`` (q, k, v and, for the backward
    pass, go: read where they lie), ``rest`` (read C-ordered), the scale, then new results:
    per result the shape of its last two axes and the array whose layout it takes (None: C
    order). None where it cannot run here."""
    q, k, v = arrays[:3]
    lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
    if not (q.ndim >= 2 and lead == k.shape[:-2] == v.shape[:-2] and q.shape[-1] == k.shape[-1]
            and keys == v.shape[-2] and all(a.shape == (*lead, length, v.shape[-1]) for a in arrays[3:])
            and all(a.shape == (*lead, length, keys) for a in rest)):
        raise ValueError("the arrays do not fit")  # (the caller's error names the shapes: explain_failure)
    c_type = cc.C_TYPE_OF.get(q.dtype)
    if c_type not in ("float", "double") or not all(a.dtype == q.dtype for a in (*arrays, *rest)) \
            or not length or not keys:
        return None
    try:
        address = _built(source, c_type)
    except cc.NativeBuildError:
        return None
    outs = _results_memory(arrays, [((*lead, *shape), like) for shape, like in results], q.dtype)
    if math.prod(lead):
        located = [_rows(a) for a in (*arrays, *(np.ascontiguousarray(a) for a in rest))]
        strides = [*(st for _, st in located), *([st // o.itemsize for st in o.strides] for o in outs)]
        sizes = [math.prod(lead), length, keys, q.shape[-1], v.shape[-1], int(causal), len(lead), *lead,
                 *(st for each in strides for st in each[:-2]), *(each[-2] for each in strides)]
        inputs = [a for a, _ in located] + [np.asarray(scale, q.dtype)]
        cc.run(address, inputs, [flat_span(np, o)[0] for o in outs], sizes, per_element=per_element)
    return tuple(outs)


def _results_memory(arrays: tuple[Any, ...], results: list[tuple[tuple[int, ...], int | None]],
                    dtype: Any) -> tuple[Any, ...]:
    """New results, per result its shape and the array whose layout it takes (None: C order).
    Where every result takes the layout of an input of its shape and those inputs are
    pieces of one memory (q, k and v read from one fused projection), the results are
    pieces of one new memory lying as they do: dq, dk and dv joined back are then one
    array with no copy."""
    likes = [None if like is None else arrays[like] for _, like in results]
    if all(like is not None and like.shape == shape for like, (shape, _) in zip(likes, results)):
        together = laid_out_together(likes, dtype)
        if together is not None:
            return together
    return tuple(_laid_out_as(like, shape, dtype) for like, (shape, _) in zip(likes, results))


def _laid_out_as(like: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """A new array of ``shape`` whose axes lie in memory in the order ``like``'s
    do (the last one last; C order where ``like`` is None): attention's output takes its query's
    layout, as PyTorch's does, so heads read from a fused projection give an output that
    is a view of (batch, length, heads * width) once transposed back, with no copy."""
    last = len(shape) - 1
    order = list(range(last)) if like is None else sorted(range(last), key=lambda a: -like.strides[a])
    memory = np.empty([shape[a] for a in (*order, last)], dtype)
    return memory.transpose(np.argsort([*order, last]))


def _rows(x: Any) -> tuple[Any, list[int]]:
    """``x`` as the kernel reads it where it lies (the heads of a fused qkv projection, rows
    3 * width apart): the contiguous run of memory from its first element to its last, and
    its strides in elements. Rows whose elements are not consecutive, or negative strides,
    read a C-contiguous copy."""
    size = x.itemsize
    if x.strides[-1] == size and all(st >= 0 and st % size == 0 for st in x.strides):
        flat, _, strides = flat_span(np, x)  # (no negative stride: it starts at x's first element)
        return flat, list(strides)
    x = np.ascontiguousarray(x)
    return x, [st // size for st in x.strides]


def _attention(xp: Any, q: Any, k: Any, v: Any, *, scale: float, causal: bool) -> tuple[Any, Any]:
    """The output and the weights: the native loop where it can be built, else NumPy's (or
    CuPy's) products and softmax."""
    if cc.eager_native(xp):
        length, keys = q.shape[-2], k.shape[-2]
        native = _native(_FORWARD_C, (q, k, v), (), (((length, v.shape[-1]), 0), ((length, keys), None)), scale,
                         causal, 2 * q.shape[-1] + 8)
        if native is not None:
            return native  # type: ignore[return-value]
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


def _masked(p: Any, causal: bool) -> Any:
    """``p`` where a causal query sees the key, 0 elsewhere (all of ``p`` without a mask)."""
    if not causal:
        return p
    rows = lax.reshape(lax.iota(p, p.shape[-2]), (p.shape[-2], 1))
    cols = lax.reshape(lax.iota(p, p.shape[-1]), (1, p.shape[-1]))
    return lax.select(lax.ge(rows, cols), p, 0.0)


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
    """Keeps ``q``, ``k``, ``v`` and the weights. The cotangents of an output's alone are
    ``attention_grad``'s; where the weights have a cotangent of their own, the composite's:
    ``dv = p^T g``, the weights' cotangent ``g v^T`` plus theirs through the softmax, then
    the scores' to ``q`` and ``k``."""

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
        if gp is None and go is not None:
            dq, dk, dv = bind(attention_grad_p, q, k, v, p, go, **params)
            return tuple(d if need else None for d, need in zip((dq, dk, dv), needs))
        dv = lax.matmul(_mT(p), go) if needs[2] and go is not None else None
        dp = lax.matmul(go, _mT(v)) if go is not None else None
        if gp is not None:
            dp = gp if dp is None else dp + gp
        if dp is None or not (needs[0] or needs[1]):
            return None, None, dv
        ds = _softmax_linear(p, dp) * lax.const(p, params["scale"])
        return (lax.matmul(ds, k) if needs[0] else None, lax.matmul(_mT(ds), q) if needs[1] else None, dv)


def _heads_batch(prim: Primitive) -> Any:
    """``prim``'s batching rule (attention's and its gradient's): the batch axis in front of
    every operand (the unmapped ones broadcast), one more leading axis of heads."""

    def rule(args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
        n = axis_size(args, dims)
        out = bind(prim, *(to_front(a, d, n) for a, d in zip(args, dims)), **params)
        return out, (0,) * len(out)

    return rule


attention_p.jvp = _jvp
attention_p.vjp = _AttentionVJP()
attention_p.batch = _heads_batch(attention_p)


# ---- attention_grad(q, k, v, p, go) -> (dq, dk, dv): the backward pass as one primitive

def _grad_rule(q: ShapedArray, k: ShapedArray, v: ShapedArray, p: ShapedArray, go: ShapedArray, *, scale: float,
               causal: bool) -> tuple[ShapedArray, ...]:
    o, w = _rule(q, k, v, scale=scale, causal=causal)
    if (p.shape, p.dtype, go.shape, go.dtype) != (w.shape, w.dtype, o.shape, o.dtype):
        raise ShapeError(f"attention_grad: weights {fmt_shape(p.shape)} ({p.dtype}) and output cotangent "
                         f"{fmt_shape(go.shape)} ({go.dtype}) for attention's weights {fmt_shape(w.shape)} and "
                         f"output {fmt_shape(o.shape)} ({o.dtype})")
    return q, k, v


def _grad_composite(xp: Any, q: Any, k: Any, v: Any, p: Any, go: Any, scale: float, causal: bool) -> Any:
    if causal:
        p = xp.where(_keep(xp, q.shape[-2], k.shape[-2]), p, xp.asarray(0, p.dtype))
    dp = xp.matmul(go, xp.swapaxes(v, -1, -2))
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True)) * xp.asarray(scale, p.dtype)
    return xp.matmul(ds, k), xp.matmul(xp.swapaxes(ds, -1, -2), q), xp.matmul(xp.swapaxes(p, -1, -2), go)


def _attention_grad(xp: Any, q: Any, k: Any, v: Any, p: Any, go: Any, *, scale: float,
                    causal: bool) -> tuple[Any, Any, Any]:
    """dq, dk and dv: the native loop where it can be built, else NumPy's (or CuPy's)
    products."""
    if cc.eager_native(xp):
        native = _native(_BACKWARD_C, (q, k, v, go), (p,), ((q.shape[-2:], 0), (k.shape[-2:], 1), (v.shape[-2:], 2)),
                         scale, causal, 4 * q.shape[-1] + 8)
        if native is not None:
            return native  # type: ignore[return-value]
    return _grad_composite(xp, q, k, v, p, go, scale, causal)  # type: ignore[no-any-return]


# Its value is the composite of ``p`` with the causal mask's entries taken as 0 (the weights
# attention gives have 0 there): dp = go v^T, ds = p (dp - rowsum(p dp)) scale, dq = ds k,
# dk = ds^T q, dv = p^T go. Its rules differentiate that composite, in array operations.
attention_grad_p = Primitive("attention_grad", _grad_rule, kernel=_attention_grad, multiple_results=True,
                             autocast="float32")


def _grad_parts(q: Any, k: Any, v: Any, p: Any, go: Any, scale: float, causal: bool) -> tuple[Any, ...]:
    """The masked weights, dp = go v^T, dp - rowsum(p dp) and ds, in array operations."""
    p = _masked(p, causal)
    dp = lax.matmul(go, _mT(v))
    centred = dp - lax.reduce_sum(p * dp, (p.ndim - 1,), keepdims=True)
    return p, dp, centred, p * centred * lax.const(p, scale)


def _grad_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, scale: float,
              causal: bool) -> tuple[Any, Any]:
    """The composite's tangent: each product's two terms, the centring's through rowsum(p dp)."""
    ans = bind(attention_grad_p, *primals, scale=scale, causal=causal)
    q, k, v, p, go = primals
    tq, tk, tv, tp, tg = (lax.zeros(x, tuple(x.shape)) if t is None else t for x, t in zip(primals, tangents))
    p, dp, centred, ds = _grad_parts(q, k, v, p, go, scale, causal)
    tp = _masked(tp, causal)
    tdp = lax.matmul(tg, _mT(v)) + lax.matmul(go, _mT(tv))
    tcentred = tdp - lax.reduce_sum(tp * dp + p * tdp, (p.ndim - 1,), keepdims=True)
    tds = (tp * centred + p * tcentred) * lax.const(p, scale)
    return ans, (lax.matmul(tds, k) + lax.matmul(ds, tk), lax.matmul(_mT(tds), q) + lax.matmul(_mT(ds), tq),
                 lax.matmul(_mT(tp), go) + lax.matmul(_mT(p), tg))


class _AttentionGradVJP(InputsVJP):
    """Keeps the inputs; the cotangents are the composite's, term by term (ds's through
    the centring: u = g_ds p scale, g_dp = u - rowsum(u) p)."""

    prim = attention_grad_p

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        q, k, v, p, go = residuals
        gdq, gdk, gdv = g
        scale, causal = params["scale"], params["causal"]
        p, dp, centred, ds = _grad_parts(q, k, v, p, go, scale, causal)
        g_ds = add_optional(None if gdq is None else lax.matmul(gdq, _mT(k)),
                            None if gdk is None else lax.matmul(q, _mT(gdk)))
        gq = None if gdk is None else lax.matmul(ds, gdk)
        gk = None if gdq is None else lax.matmul(_mT(ds), gdq)
        gp = None if gdv is None else lax.matmul(go, _mT(gdv))
        gg = None if gdv is None else lax.matmul(p, gdv)
        gv = None
        if g_ds is not None:
            u = g_ds * p * lax.const(p, scale)
            rows = lax.reduce_sum(u, (p.ndim - 1,), keepdims=True)
            g_dp = u - rows * p
            gp = add_optional(gp, g_ds * centred * lax.const(p, scale) - rows * dp)
            gg = add_optional(gg, lax.matmul(g_dp, v))
            gv = lax.matmul(_mT(g_dp), go)
        return gq, gk, gv, None if gp is None else _masked(gp, causal), gg


attention_grad_p.jvp = _grad_jvp
attention_grad_p.vjp = _AttentionGradVJP()
attention_grad_p.batch = _heads_batch(attention_grad_p)
