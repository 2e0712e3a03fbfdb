"""Two-dimensional convolution as three primitives: ``conv`` and its two transposes, the
family PyTorch's ``convolution`` and its backward form, and JAX's ``conv_general_dilated``.

``x`` is (N, C, H, W), already padded; ``w`` is (O, C/groups, KH, KW); the windows start
every ``strides`` and their taps lie ``dilations`` apart.

- ``conv(x, w)``: the (N, O, OH, OW) correlation.
- ``conv_input_grad(g, w)``: ``conv``'s transpose in ``x``, back to (N, C, H, W)
  (``shape`` gives H, W).
- ``conv_weight_grad(x, g)``: its transpose in ``w``, a sum over the batch (``sizes`` gives
  KH, KW).

Each is the gradient of the one trilinear form ``<g, conv(x, w)>`` in one of its three
arguments, so each is linear in each operand and every derivative rule is a member of the
family again (any order of derivatives stays three primitives).

Kernels: where a compiler can build it and NumPy's BLAS is found, each is one native loop
over the images that lays out one image's windows (im2col) in a buffer the size of the
caches and calls the BLAS product on it, so the windows of the whole batch are never
written to memory (for the MNIST example's second layer that copy is 42 MB, read back by
the product: most of the layer's time). Elsewhere (no compiler, groups, a GPU, other
dtypes) NumPy or CuPy copy the windows of the whole batch and multiply them by batched
matrix products.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import batch_by_loop, to_front
from .checks import common_device, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape

__all__ = ["conv_p", "conv_input_grad_p", "conv_weight_grad_p", "out_size"]

Pair = tuple[int, int]


def out_size(hw: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...],
             dilations: tuple[int, ...]) -> tuple[int, ...]:
    """The number of windows along each axis (less than 1 where the kernel does not fit)."""
    return tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(hw, sizes, strides, dilations))


def _geometry(op: str, x_hw: Pair, sizes: Pair, strides: Pair, dilations: Pair) -> Pair:
    if min(*strides, *dilations, *sizes) < 1:
        raise ShapeError(f"{op}: strides {strides}, dilations {dilations} and kernel {sizes} must be at least 1")
    out = out_size(x_hw, sizes, strides, dilations)
    if min(out) < 1:
        raise ShapeError(f"{op}: a kernel of {sizes} with dilations {dilations} does not fit an input of "
                         f"{x_hw[0]}x{x_hw[1]}")
    return out  # type: ignore[return-value]


def _four_d(op: str, **arrays: ShapedArray) -> None:
    for name, a in arrays.items():
        if len(a.shape) != 4:
            raise ShapeError(f"{op}: {name} must be 4-D, got shape {fmt_shape(a.shape)}")


def _same_float(op: str, a: ShapedArray, b: ShapedArray) -> None:
    require_kind(op, a.dtype, "fc", "floating-point or complex operands")
    if a.dtype is not b.dtype:
        raise ShapeError(f"{op}: operands of dtypes {a.dtype} and {b.dtype}; cast one to the other's")
    common_device(op, (a, b))


def _channels(op: str, c: int, o: int, cg: int, groups: int) -> None:
    if groups < 1 or c != cg * groups or o % groups:
        raise ShapeError(f"{op}: {c} input channels, {o} output channels and weights for {cg} input channels "
                         f"a group do not fit groups={groups}")


def _conv_rule(x: ShapedArray, w: ShapedArray, *, strides: Pair, dilations: Pair, groups: int) -> ShapedArray:
    _four_d("conv", x=x, w=w)
    _same_float("conv", x, w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    _channels("conv", c, o, cg, groups)
    oh, ow = _geometry("conv", (h, wd), (kh, kw), strides, dilations)
    return ShapedArray((n, o, oh, ow), x.dtype, x.device)


def _input_grad_rule(g: ShapedArray, w: ShapedArray, *, strides: Pair, dilations: Pair, groups: int,
                     shape: Pair) -> ShapedArray:
    _four_d("conv_input_grad", g=g, w=w)
    _same_float("conv_input_grad", g, w)
    n, o, oh, ow = g.shape
    o_w, cg, kh, kw = w.shape
    _channels("conv_input_grad", cg * groups, o, cg, groups)
    if o_w != o or _geometry("conv_input_grad", shape, (kh, kw), strides, dilations) != (oh, ow):
        raise ShapeError(f"conv_input_grad: a cotangent of shape {fmt_shape(g.shape)} does not fit weights "
                         f"{fmt_shape(w.shape)} over an input of {shape[0]}x{shape[1]}")
    return ShapedArray((n, cg * groups, *shape), g.dtype, g.device)


def _weight_grad_rule(x: ShapedArray, g: ShapedArray, *, strides: Pair, dilations: Pair, groups: int,
                      sizes: Pair) -> ShapedArray:
    _four_d("conv_weight_grad", x=x, g=g)
    _same_float("conv_weight_grad", x, g)
    n, c, h, wd = x.shape
    if groups < 1 or c % groups:
        raise ShapeError(f"conv_weight_grad: {c} input channels do not split into groups={groups}")
    _channels("conv_weight_grad", c, g.shape[1], c // groups, groups)
    if g.shape[0] != n or _geometry("conv_weight_grad", (h, wd), sizes, strides, dilations) != tuple(g.shape[2:]):
        raise ShapeError(f"conv_weight_grad: a cotangent of shape {fmt_shape(g.shape)} does not fit an input of "
                         f"shape {fmt_shape(x.shape)} with a kernel of {sizes}")
    return ShapedArray((g.shape[1], c // groups, *sizes), x.dtype, x.device)


# -- the NumPy (and CuPy) kernels: the whole batch's windows, then batched products -------------

def _windows(xp: Any, x: Any, sizes: Pair, strides: Pair, dilations: Pair, out: Pair) -> Any:
    """(N, C, KH, KW, OH, OW): every window's taps of contiguous ``x``, a strided view."""
    sn, sc, sh, sw = x.strides
    return xp.lib.stride_tricks.as_strided(
        x, (*x.shape[:2], *sizes, *out),
        (sn, sc, sh * dilations[0], sw * dilations[1], sh * strides[0], sw * strides[1]))


def _fits(x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...], groups: int, strides: Pair,
          dilations: Pair) -> None:
    """The kernels' own check (eager evaluation runs them without the shape rule, which names
    the problem once they raise): ``x`` (N, C, H, W), ``w`` (O, C/groups, KH, KW) and ``y``
    (N, O, OH, OW) are the shapes of one convolution, so the windows and the native loop
    read and write only inside the operands."""
    if not (len(x) == len(w) == len(y) == 4 and x[0] == y[0] and w[0] == y[1] and x[1] == w[1] * groups
            and y[1] % groups == 0 and min(y[2:]) >= 1 and tuple(y[2:]) == out_size(x[2:], w[2:], strides, dilations)):
        raise ValueError("the operands do not fit one convolution")


def _conv(xp: Any, x: Any, w: Any, *, strides: Pair, dilations: Pair, groups: int) -> Any:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = out_size((h, wd), (kh, kw), strides, dilations)
    _fits(x.shape, w.shape, (n, o, oh, ow), groups, strides, dilations)
    native = _native(xp, 0, (x, w), (n, o, oh, ow), groups, c, (h, wd), (kh, kw), strides, dilations)
    if native is not None:
        return native
    cols = _windows(xp, xp.ascontiguousarray(x), (kh, kw), strides, dilations, (oh, ow))
    cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)  # (the copy)
    out = xp.matmul(xp.ascontiguousarray(w).reshape(groups, o // groups, cg * kh * kw), cols)
    return out.reshape(n, o, oh, ow)


def _input_grad(xp: Any, g: Any, w: Any, *, strides: Pair, dilations: Pair, groups: int, shape: Pair) -> Any:
    n, o, oh, ow = g.shape
    _, cg, kh, kw = w.shape
    c = cg * groups
    _fits((n, c, *shape), w.shape, g.shape, groups, strides, dilations)
    native = _native(xp, 1, (g, w), (n, c, *shape), groups, c, shape, (kh, kw), strides, dilations)
    if native is not None:
        return native
    wt = xp.ascontiguousarray(w).reshape(groups, o // groups, cg * kh * kw).transpose(0, 2, 1)
    cols = xp.matmul(wt, xp.ascontiguousarray(g).reshape(n, groups, o // groups, oh * ow))
    cols = cols.reshape(n, c, kh, kw, oh, ow)
    out = xp.zeros((n, c, *shape), g.dtype)
    span = ((oh - 1) * strides[0] + 1, (ow - 1) * strides[1] + 1)
    for a in range(kh):  # (tap by tap, each window's taps added in row-major order, as the native loop)
        for b in range(kw):
            r, q = a * dilations[0], b * dilations[1]
            out[:, :, r:r + span[0]:strides[0], q:q + span[1]:strides[1]] += cols[:, :, a, b]
    return out


def _weight_grad(xp: Any, x: Any, g: Any, *, strides: Pair, dilations: Pair, groups: int, sizes: Pair) -> Any:
    n, c, h, wd = x.shape
    _, o, oh, ow = g.shape
    cg = c // groups
    _fits(x.shape, (o, cg, *sizes), g.shape, groups, strides, dilations)
    native = _native(xp, 2, (x, g), (o, cg, *sizes), groups, c, (h, wd), sizes, strides, dilations)
    if native is not None:
        return native
    cols = _windows(xp, xp.ascontiguousarray(x), sizes, strides, dilations, (oh, ow))
    cols = cols.reshape(n, groups, cg * sizes[0] * sizes[1], oh * ow)
    per = xp.matmul(xp.ascontiguousarray(g).reshape(n, groups, o // groups, oh * ow), cols.transpose(0, 1, 3, 2))
    total = per[0].copy() if n else xp.zeros(per.shape[1:], g.dtype)
    for k in range(1, n):  # (image by image, as the native loop accumulates)
        total += per[k]
    return total.reshape(o, cg, *sizes)


# -- the native loop --------------------------------------------------------------------------

# A few images at a time (``_CHUNK``): their windows laid out side by side (im2col) in a
# buffer of (C*KH*KW, images*OH*OW), which stays in the caches, and one BLAS product with it
# (a wider product than one image's runs faster). n: the images, the BLAS product's address,
# which kernel, then C, H, W, O, KH, KW, OH, OW, the strides and dilations, and the chunk.
_CONV_C = """#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef void (*fg_gemm_f)(int, int, int, int64_t, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T,
                          T *, int64_t);

/* one image's windows: row (ch, a, b) of cols, ld apart, holds that tap of every window */
static void fg_im2col(const T *restrict x, T *restrict cols, int64_t ld, int64_t c, int64_t h, int64_t w,
                      int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t a = 0; a < kh; a++)
            for (int64_t b = 0; b < kw; b++, cols += ld) {
                const T *restrict plane = x + ch * h * w + a * dh * w + b * dw;
                T *restrict dst = cols;
                for (int64_t i = 0; i < oh; i++, dst += ow) {
                    const T *restrict row = plane + i * sh * w;
                    if (sw == 1) memcpy(dst, row, ow * sizeof(T));
                    else for (int64_t j = 0; j < ow; j++) dst[j] = row[j * sw];
                }
            }
}

/* the transpose: each tap added back where it was read, into zeros */
static void fg_col2im(const T *restrict cols, int64_t ld, T *restrict x, int64_t c, int64_t h, int64_t w,
                      int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
    memset(x, 0, c * h * w * sizeof(T));
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t a = 0; a < kh; a++)
            for (int64_t b = 0; b < kw; b++, cols += ld) {
                T *restrict plane = x + ch * h * w + a * dh * w + b * dw;
                const T *restrict src = cols;
                for (int64_t i = 0; i < oh; i++, src += ow) {
                    T *restrict row = plane + i * sh * w;
                    if (sw == 1) for (int64_t j = 0; j < ow; j++) row[j] += src[j];
                    else for (int64_t j = 0; j < ow; j++) row[j * sw] += src[j];
                }
            }
}

void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const fg_gemm_f gemm = (fg_gemm_f)(intptr_t)n[1];
    const int64_t mode = n[2], c = n[3], h = n[4], w = n[5], o = n[6], kh = n[7], kw = n[8], oh = n[9], ow = n[10];
    const int64_t sh = n[11], sw = n[12], dh = n[13], dw = n[14], chunk = n[15];
    const int64_t ck = c * kh * kw, pix = oh * ow, image = c * h * w;
    T *cols = (T *)malloc(ck * chunk * pix * sizeof(T)), *wide = (T *)malloc(o * chunk * pix * sizeof(T));
    if (mode == 2 && hi <= lo) memset(p[2], 0, o * ck * sizeof(T));
    for (int64_t i0 = lo; i0 < hi; i0 += chunk) {
        const int64_t m = hi - i0 < chunk ? hi - i0 : chunk, ld = m * pix;
        if (mode == 0) {  /* conv: x, w -> y (N, O, OH*OW) */
            const T *x = (const T *)p[0];
            T *y = (T *)p[2];
            for (int64_t k = 0; k < m; k++)
                fg_im2col(x + (i0 + k) * image, cols + k * pix, ld, c, h, w, kh, kw, oh, ow, sh, sw, dh, dw);
            gemm(101, 111, 111, o, ld, ck, 1, (const T *)p[1], ck, cols, ld, 0, wide, ld);
            for (int64_t k = 0; k < m; k++)
                for (int64_t r = 0; r < o; r++)
                    memcpy(y + ((i0 + k) * o + r) * pix, wide + r * ld + k * pix, pix * sizeof(T));
        } else {  /* the images' cotangents side by side: (O, m*OH*OW) */
            const T *g = (const T *)p[mode == 1 ? 0 : 1];
            for (int64_t k = 0; k < m; k++)
                for (int64_t r = 0; r < o; r++)
                    memcpy(wide + r * ld + k * pix, g + ((i0 + k) * o + r) * pix, pix * sizeof(T));
            if (mode == 1) {  /* input gradient: g, w -> x (N, C, H, W) */
                gemm(101, 112, 111, ck, ld, o, 1, (const T *)p[1], ck, wide, ld, 0, cols, ld);
                for (int64_t k = 0; k < m; k++)
                    fg_col2im(cols + k * pix, ld, (T *)p[2] + (i0 + k) * image, c, h, w, kh, kw, oh, ow, sh, sw,
                              dh, dw);
            } else {  /* weight gradient: x, g -> w (O, C*KH*KW), the chunks' products added in order */
                const T *x = (const T *)p[0];
                for (int64_t k = 0; k < m; k++)
                    fg_im2col(x + (i0 + k) * image, cols + k * pix, ld, c, h, w, kh, kw, oh, ow, sh, sw, dh, dw);
                gemm(101, 111, 112, o, ck, ld, 1, wide, ld, cols, ld, i0 == lo ? 0 : 1, (T *)p[2], ck);
            }
        }
    }
    free(cols);
    free(wide);
}
"""
_CHUNK_BYTES = 1 << 22  # the windows of a chunk of images: about this many bytes (in the caches)

# Stride 1, direct: no windows are copied. With an image's pixels numbered p = i*W + j (the
# output's rows W apart, as the input's), output pixel p of channel oc is the sum over input
# channels ic and taps t = (a, b) of w[oc, ic, t] * x[ic, p + a*DH*W + b*DW]: for each tap a
# shifted view of the same row of memory. A block of output channels (vectors of them) by a
# few pixels stays in registers, each step loading one tap's weights for the block (packed
# (C, KH, KW, O): the output channels contiguous, padded to a multiple of 16) and
# broadcasting the block's pixels, as a GEMM's micro-kernel does without the packing. The
# columns j >= OW of each row (the window wraps to the next row) are computed and dropped.
# The input gradient is the same loop over the cotangent laid out with rows W apart, zeros
# around it, and the kernel flipped. The images are shared out over threads.
# n: the images, which kernel, then C, H, W, O, KH, KW, OH, OW, DH, DW and the padded width.
_DIRECT_C = """#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#define FG_VBYTES 64
#else
#define FG_VBYTES 32
#endif
typedef T fg_v __attribute__((vector_size(FG_VBYTES)));
typedef T fg_vu __attribute__((vector_size(FG_VBYTES), aligned(sizeof(T))));
#define FG_L ((int64_t)(FG_VBYTES / sizeof(T)))
#ifdef __clang__
#pragma clang fp contract(fast)
#else
#pragma GCC optimize("fp-contract=fast")
#endif

/* pixels [p0, p0 + PP) by output channels [oc0, oc0 + OV*FG_L): out[p*cp + oc] */
#define FG_BLOCK(OV, PP) \\
static void fg_block_##OV(const T *restrict in, int64_t pitch, int64_t ci, const T *restrict wp, int64_t cp, \\
                          const int64_t *restrict off, int64_t taps, T *restrict out, int64_t p0, int64_t oc0) { \\
    fg_v acc[PP][OV]; \\
    for (int j = 0; j < PP; j++) for (int k = 0; k < OV; k++) acc[j][k] = (fg_v){0}; \\
    for (int64_t ic = 0; ic < ci; ic++) \\
        for (int64_t t = 0; t < taps; t++) { \\
            const T *restrict wr = wp + (ic * taps + t) * cp + oc0, *restrict s = in + ic * pitch + p0 + off[t]; \\
            fg_v wv[OV]; \\
            for (int k = 0; k < OV; k++) wv[k] = *(const fg_vu *)(wr + k * FG_L); \\
            for (int j = 0; j < PP; j++) { \\
                const T xs = s[j];  /* (a scalar times a vector: broadcast, no other operation) */ \\
                for (int k = 0; k < OV; k++) acc[j][k] += xs * wv[k]; \\
            } \\
        } \\
    for (int j = 0; j < PP; j++) \\
        for (int k = 0; k < OV; k++) *(fg_vu *)(out + (p0 + j) * cp + oc0 + k * FG_L) = acc[j][k]; \\
}
/* the pixels (or pairs) a block of 4, 2 and 1 vectors of output channels takes: 24 accumulators
   of the 32 vector registers with AVX-512, else 12 of 16 (a broadcast beside them, the
   weights read by the multiply-adds; 8 accumulators ran at 0.7x on a Zen 4). Each divides
   FG_GROUP. */
#if FG_VBYTES == 64
#define FG_PP4 6
#define FG_PP2 12
#else
#define FG_PP4 3
#define FG_PP2 6
#endif
#define FG_PP1 12
FG_BLOCK(4, FG_PP4)
FG_BLOCK(2, FG_PP2)
FG_BLOCK(1, FG_PP1)

/* the weight gradient's pairs (ic, t) [q0, q0 + PP) by output channels [oc0, oc0 + OV*FG_L),
   one image: acc[q*cp + oc] += the sum over its windows of x[ic, window + off[t]] * gt[window*cp + oc] */
#define FG_WBLOCK(OV, PP) \\
static void fg_wblock_##OV##_##PP(const T *restrict x, const int64_t *restrict at, int64_t w, int64_t oh, int64_t ow, \\
                                  const T *restrict gt, int64_t cp, T *restrict out, int64_t q0, int64_t oc0) { \\
    fg_v acc[PP][OV]; \\
    const T *restrict xs[PP]; \\
    for (int j = 0; j < PP; j++) { \\
        xs[j] = x + at[q0 + j]; \\
        for (int k = 0; k < OV; k++) acc[j][k] = *(const fg_vu *)(out + (q0 + j) * cp + oc0 + k * FG_L); \\
    } \\
    for (int64_t i = 0; i < oh; i++) \\
        for (int64_t jj = 0; jj < ow; jj++) { \\
            const T *restrict gr = gt + (i * ow + jj) * cp + oc0; \\
            const int64_t px = i * w + jj; \\
            fg_v gv[OV]; \\
            for (int k = 0; k < OV; k++) gv[k] = *(const fg_vu *)(gr + k * FG_L); \\
            for (int j = 0; j < PP; j++) { \\
                const T xv = xs[j][px]; \\
                for (int k = 0; k < OV; k++) acc[j][k] += xv * gv[k]; \\
            } \\
        } \\
    for (int j = 0; j < PP; j++) \\
        for (int k = 0; k < OV; k++) *(fg_vu *)(out + (q0 + j) * cp + oc0 + k * FG_L) = acc[j][k]; \\
}
FG_WBLOCK(4, FG_PP4)
FG_WBLOCK(2, FG_PP2)
FG_WBLOCK(1, FG_PP1)
FG_WBLOCK(4, 1)
FG_WBLOCK(2, 1)
FG_WBLOCK(1, 1)
#define FG_GROUP FG_PAIR_GROUP  /* pairs a step of the weight gradient's outer loop covers */

#define FG_WTIER(OV, PP) \\
    for (; oc0 + OV * FG_L <= cp; oc0 += OV * FG_L) { \\
        int64_t q = q0; \\
        for (; q + PP <= q1; q += PP) fg_wblock_##OV##_##PP(x, at, w, oh, ow, gt, cp, out, q, oc0); \\
        for (; q < q1; q++) fg_wblock_##OV##_1(x, at, w, oh, ow, gt, cp, out, q, oc0); \\
    }

/* pairs [q0, q1) of one image's weight gradient, every output channel */
static void fg_wgrad(const T *x, const int64_t *at, int64_t w, int64_t oh, int64_t ow, const T *gt, int64_t cp,
                     T *out, int64_t q0, int64_t q1) {
    int64_t oc0 = 0;
    FG_WTIER(4, FG_PP4)
    FG_WTIER(2, FG_PP2)
    FG_WTIER(1, FG_PP1)
}

/* out[p*cp + oc] for p in [0, P): blocks of pixels, the last one ending at P (overlapping
   the one before it, whose values it writes again); fewer pixels than a block, one by one */
static void fg_direct(const T *in, int64_t pitch, int64_t ci, const T *wp, int64_t cp, const int64_t *off,
                      int64_t taps, T *out, int64_t P) {
    if (P < FG_PP1) {
        for (int64_t p = 0; p < P; p++)
            for (int64_t oc = 0; oc < cp; oc++) {
                T acc = 0;
                for (int64_t ic = 0; ic < ci; ic++)
                    for (int64_t t = 0; t < taps; t++)
                        acc += wp[(ic * taps + t) * cp + oc] * in[ic * pitch + p + off[t]];
                out[p * cp + oc] = acc;
            }
        return;
    }
    for (int64_t oc0 = 0; oc0 < cp;) {
        const int64_t vectors = (cp - oc0) / FG_L;
        if (vectors >= 4) {
            for (int64_t p0 = 0; p0 < P; p0 += FG_PP4)
                fg_block_4(in, pitch, ci, wp, cp, off, taps, out, p0 + FG_PP4 <= P ? p0 : P - FG_PP4, oc0);
            oc0 += 4 * FG_L;
        } else if (vectors >= 2) {
            for (int64_t p0 = 0; p0 < P; p0 += FG_PP2)
                fg_block_2(in, pitch, ci, wp, cp, off, taps, out, p0 + FG_PP2 <= P ? p0 : P - FG_PP2, oc0);
            oc0 += 2 * FG_L;
        } else {
            for (int64_t p0 = 0; p0 < P; p0 += FG_PP1)
                fg_block_1(in, pitch, ci, wp, cp, off, taps, out, p0 + FG_PP1 <= P ? p0 : P - FG_PP1, oc0);
            oc0 += FG_L;
        }
    }
}

void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const int64_t mode = n[1], c = n[2], h = n[3], w = n[4], o = n[5], kh = n[6], kw = n[7], oh = n[8], ow = n[9];
    const int64_t dh = n[10], dw = n[11], cp = n[12], taps = kh * kw, hw = h * w;
    const int64_t shift = (kh - 1) * dh * w + (kw - 1) * dw;
    int64_t *off = (int64_t *)malloc(taps * sizeof(int64_t));
    for (int64_t a = 0; a < kh; a++)
        for (int64_t b = 0; b < kw; b++) off[a * kw + b] = a * dh * w + b * dw;
    const T *wp = (const T *)p[1];
    if (mode == 0) {  /* conv: x (N, C, H, W), w packed (C, KH, KW, cp) -> y (N, O, OH, OW) */
        const int64_t P = (oh - 1) * w + ow;
        T *wide = (T *)malloc(P * cp * sizeof(T));
        for (int64_t i = lo; i < hi; i++) {
            fg_direct((const T *)p[0] + i * c * hw, hw, c, wp, cp, off, taps, wide, P);
            T *y = (T *)p[2] + i * o * oh * ow;
            for (int64_t row = 0; row < oh; row++)  /* (16 pixels at a time: their channels stay in the cache) */
                for (int64_t c0 = 0; c0 < ow; c0 += 16) {
                    const int64_t c1 = c0 + 16 < ow ? c0 + 16 : ow;
                    for (int64_t r = 0; r < o; r++)
                        for (int64_t col = c0; col < c1; col++)
                            y[(r * oh + row) * ow + col] = wide[(row * w + col) * cp + r];
                }
        }
        free(wide);
    } else if (mode == 2) {  /* weight gradient, pairs [lo, hi) * FG_GROUP: x, gt (N, OH*OW, cp) -> (C*KH*KW, cp) */
        const int64_t images = n[13], pairs = c * taps;
        int64_t *at = (int64_t *)malloc(pairs * sizeof(int64_t));
        for (int64_t q = 0; q < pairs; q++) at[q] = (q / taps) * hw + off[q % taps];
        const int64_t q0 = lo * FG_GROUP, q1 = hi * FG_GROUP < pairs ? hi * FG_GROUP : pairs;
        for (int64_t i = 0; i < images; i++)  /* (image by image: each sum in the images' order) */
            fg_wgrad((const T *)p[0] + i * c * hw, at, w, oh, ow, (const T *)p[1] + i * oh * ow * cp, cp, (T *)p[2],
                     q0, q1);
        free(at);
    } else if (mode == 3) {  /* the cotangent by windows: g (N, O, OH, OW) -> gt (N, OH*OW, cp), its padding zero */
        for (int64_t i = lo; i < hi; i++) {
            const T *g = (const T *)p[0] + i * o * oh * ow;
            T *gt = (T *)p[2] + i * oh * ow * cp;
            for (int64_t q0 = 0; q0 < oh * ow; q0 += 16) {
                const int64_t q1 = q0 + 16 < oh * ow ? q0 + 16 : oh * ow;
                for (int64_t q = q0; q < q1; q++)
                    for (int64_t r = 0; r < o; r++) gt[q * cp + r] = g[r * oh * ow + q];
            }
        }
    } else {  /* input gradient: g (N, O, OH, OW), w flipped and packed (O, KH, KW, cp) -> x (N, C, H, W) */
        const int64_t pitch = shift + hw;
        T *pad = (T *)calloc(o * pitch, sizeof(T)), *wide = (T *)malloc(hw * cp * sizeof(T));
        for (int64_t i = lo; i < hi; i++) {
            const T *g = (const T *)p[0] + i * o * oh * ow;
            for (int64_t r = 0; r < o; r++)
                for (int64_t row = 0; row < oh; row++)
                    memcpy(pad + r * pitch + shift + row * w, g + (r * oh + row) * ow, ow * sizeof(T));
            fg_direct(pad, pitch, o, wp, cp, off, taps, wide, hw);
            T *x = (T *)p[2] + i * c * hw;
            for (int64_t q0 = 0; q0 < hw; q0 += 16) {
                const int64_t q1 = q0 + 16 < hw ? q0 + 16 : hw;
                for (int64_t r = 0; r < c; r++)
                    for (int64_t q = q0; q < q1; q++) x[r * hw + q] = wide[q * cp + r];
            }
        }
        free(pad);
        free(wide);
    }
    free(off);
}
"""
_LANES = 16  # the packed weights' output channels are padded to a multiple of this (a vector of floats)
_PAIR_GROUP = 12  # the weight gradient's (channel, tap) pairs a step of its loop takes (FG_GROUP)


@functools.lru_cache(maxsize=8)
def _kernel(c_type: str, direct: bool) -> int | None:
    try:
        source = _DIRECT_C.replace("FG_PAIR_GROUP", str(_PAIR_GROUP)) if direct else _CONV_C
        return cc.loop_kernel(f"#define T {c_type}\n" + source)
    except cc.NativeBuildError:
        return None


def _direct(mode: int, a: Any, b: Any, out_shape: tuple[int, ...], c: int, hw: Pair, sizes: Pair,
            dilations: Pair) -> Any:
    """The stride-1 convolution or one of its gradients by ``_DIRECT_C``, or None where it
    cannot be built. The input gradient's loop also multiplies the zeros around the cotangent
    by the weights, so weights that are not all finite take the im2col loop (whose windows
    hold only the cotangent)."""
    if mode == 1 and not np.isfinite(b).all():
        return None
    address = _kernel(cc.C_TYPE_OF[a.dtype], True)
    if address is None:
        return None
    if mode == 2:
        return _direct_weight_grad(address, a, b, out_shape, c, hw, sizes, dilations)
    o = b.shape[0]
    kernel = b if mode == 0 else b[:, :, ::-1, ::-1]  # (the input gradient's is flipped)
    packed = kernel.transpose(1, 2, 3, 0) if mode == 0 else kernel.transpose(0, 2, 3, 1)  # (input, KH, KW, output)
    width = packed.shape[-1]
    padded = -(-width // _LANES) * _LANES
    wp = np.zeros((*packed.shape[:-1], padded), a.dtype)
    wp[..., :width] = packed
    out = np.empty(out_shape, a.dtype)
    oh, ow = out_size(hw, sizes, (1, 1), dilations)
    images = a.shape[0]
    cc.run(address, [a, wp], [out], [images, mode, c, *hw, o, *sizes, oh, ow, *dilations, padded],
           per_element=2 * b.shape[1 if mode == 0 else 0] * sizes[0] * sizes[1])  # (products per result)
    return out


def _direct_weight_grad(address: int, x: Any, g: Any, out_shape: tuple[int, ...], c: int, hw: Pair, sizes: Pair,
                        dilations: Pair) -> Any:
    """The weight gradient: the cotangent laid out window by window (its channels contiguous,
    padded), then each pair (input channel, tap) by each block of output channels summed over
    every image's windows, the pairs shared out over threads."""
    images, o, oh, ow = g.shape
    padded = -(-o // _LANES) * _LANES
    meta = [c, *hw, o, *sizes, oh, ow, *dilations, padded, images]
    gt = np.zeros((images, oh * ow, padded), x.dtype)
    cc.run(address, [g, g], [gt], [images, 3, *meta], per_element=1)  # (the layout reads one operand, given twice)
    pairs = c * sizes[0] * sizes[1]
    total = np.zeros((pairs, padded), x.dtype)
    cc.run(address, [x, gt], [total], [-(-pairs // _PAIR_GROUP), 2, *meta], per_element=2 * images * oh * ow)
    return np.ascontiguousarray(total[:, :o].T).reshape(out_shape)


def _native(xp: Any, mode: int, operands: tuple[Any, Any], out_shape: tuple[int, ...], groups: int, c: int,
            hw: Pair, sizes: Pair, strides: Pair, dilations: Pair) -> Any:
    """The kernel as a native loop over the images, for float32 and float64 without groups
    where a compiler is found: at stride 1 direct (``_DIRECT_C``, over threads), else im2col
    by chunks of images and ``cc.blas``'s products (one thread: NumPy's OpenBLAS splits a
    product itself, MKL's runs on that one); None otherwise."""
    a, b = operands
    if not (cc.eager_native(xp) and groups == 1 and a.dtype == b.dtype and a.dtype in (np.float32, np.float64)):
        return None
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if strides == (1, 1) and a.shape[0]:
        out = _direct(mode, a, b, out_shape, c, hw, sizes, dilations)
        if out is not None:
            return out
    blas = cc.blas()
    if blas is None:
        return None
    address = _kernel(cc.C_TYPE_OF[a.dtype], False)
    if address is None:
        return None
    out = np.empty(out_shape, a.dtype)
    images = a.shape[0]
    o = out_shape[1] if mode == 0 else b.shape[1] if mode == 2 else a.shape[1]  # (the output channels)
    oh, ow = out_size(hw, sizes, strides, dilations)
    gemm = blas.addresses[0 if a.dtype == np.float32 else 1]
    chunk = max(1, min(images, _CHUNK_BYTES // max(1, c * sizes[0] * sizes[1] * oh * ow * a.itemsize)))
    cc.run(address, [a, b], [out], [images, gemm, mode, c, *hw, o, *sizes, oh, ow, *strides, *dilations, chunk])
    return out


# -- the primitives and their rules -----------------------------------------------------------

def _flops(y_of: int, w_of: int) -> Any:
    """Two per multiply-add, the same for the three: ``y`` (N, O, OH, OW) times ``w``'s
    (C/groups, KH, KW), where ``y_of``/``w_of`` index the operands (-1: the result)."""
    def count(args: Any, out: Any) -> int:
        shapes = [tuple(a.shape) for a in args] + [tuple(out.shape)]
        y, w = shapes[y_of], shapes[w_of]
        return 2 * int(np.prod(y)) * int(np.prod(w[1:]))

    return count


def _conv_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Conv"""
    p = eqn.params
    g.node("Conv", ins, [out], strides=list(p["strides"]), dilations=list(p["dilations"]), group=p["groups"],
           pads=[0, 0, 0, 0])


conv_p = Primitive("conv", _conv_rule, kernel=_conv, autocast="lower", flops=_flops(-1, 1),
                   torch_name="Convolution", onnx=_conv_onnx)
conv_input_grad_p = Primitive("conv_input_grad", _input_grad_rule, kernel=_input_grad, autocast="lower",
                              flops=_flops(0, 1), torch_name="ConvolutionBackwardInput")
conv_weight_grad_p = Primitive("conv_weight_grad", _weight_grad_rule, kernel=_weight_grad, autocast="lower",
                               flops=_flops(1, -1), torch_name="ConvolutionBackwardWeight")


def _geom(params: dict[str, Any]) -> dict[str, Any]:
    return {"strides": params["strides"], "dilations": params["dilations"], "groups": params["groups"]}


def conv(x: Any, w: Any, **params: Any) -> Any:
    return bind(conv_p, x, w, **_geom(params))


def input_grad(g: Any, w: Any, x_shape: tuple[int, ...], **params: Any) -> Any:
    return bind(conv_input_grad_p, g, w, shape=tuple(x_shape[2:]), **_geom(params))


def weight_grad(x: Any, g: Any, w_shape: tuple[int, ...], **params: Any) -> Any:
    return bind(conv_weight_grad_p, x, g, sizes=tuple(w_shape[2:]), **_geom(params))


# Each primitive is linear in each operand, and the three are the gradients of <g, conv(x, w)>
# in x, w and g: every tangent is the primitive of one tangent, every cotangent another member.
defjvp(conv_p, lambda t, ans, x, w, **p: conv(t, w, **p), lambda t, ans, x, w, **p: conv(x, t, **p))
defvjp(conv_p, lambda c, ans, x, w, **p: input_grad(c, w, x.shape, **p),
       lambda c, ans, x, w, **p: weight_grad(x, c, w.shape, **p), saves="args")
defjvp(conv_input_grad_p, lambda t, ans, g, w, **p: bind(conv_input_grad_p, t, w, **p),
       lambda t, ans, g, w, **p: bind(conv_input_grad_p, g, t, **p))
defvjp(conv_input_grad_p, lambda c, ans, g, w, **p: conv(c, w, **p),
       lambda c, ans, g, w, **p: weight_grad(c, g, w.shape, **p), saves="args")
defjvp(conv_weight_grad_p, lambda t, ans, x, g, **p: bind(conv_weight_grad_p, t, g, **p),
       lambda t, ans, x, g, **p: bind(conv_weight_grad_p, x, t, **p))
defvjp(conv_weight_grad_p, lambda c, ans, x, g, **p: input_grad(g, c, x.shape, **p),
       lambda c, ans, x, g, **p: conv(x, c, **p), saves="args")


def _folded(prim: Primitive) -> Any:
    """A batch of the per-image operand (``x``, or ``g``) with the weights shared: the batch
    joins the images. Batched weights (and ``conv_weight_grad``, which sums the images) run
    member by member."""
    loop = batch_by_loop(prim)

    def rule(args: Any, dims: Any, **params: Any) -> Any:
        (a, w), (da, dw) = args, dims
        if dw is not None:
            return loop(args, dims, **params)
        a = to_front(a, da)
        b, n = a.shape[0], a.shape[1]
        out = bind(prim, lax.reshape(a, (b * n, *a.shape[2:])), w, **params)
        return lax.reshape(out, (b, n, *out.shape[1:])), 0

    return rule


conv_p.batch = _folded(conv_p)
conv_input_grad_p.batch = _folded(conv_input_grad_p)
conv_weight_grad_p.batch = batch_by_loop(conv_weight_grad_p)
