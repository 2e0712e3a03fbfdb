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
                    for (int64_t j = 0; j < ow; j++) row[j * sw] += src[j];
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


@functools.lru_cache(maxsize=4)
def _kernel(c_type: str) -> int | None:
    try:
        return cc.loop_kernel(f"#define T {c_type}\n" + _CONV_C)
    except cc.NativeBuildError:
        return None


def _native(xp: Any, mode: int, operands: tuple[Any, Any], out_shape: tuple[int, ...], groups: int, c: int,
            hw: Pair, sizes: Pair, strides: Pair, dilations: Pair) -> Any:
    """The kernel as the native loop over the images (one thread: the BLAS product splits
    itself), where a compiler and NumPy's BLAS are found, for float32 and float64 without
    groups; None otherwise."""
    a, b = operands
    if not (cc.eager_native(xp) and groups == 1 and a.dtype == b.dtype and a.dtype.name in ("float32", "float64")):
        return None
    gemms = cc.blas()
    if gemms is None:
        return None
    address = _kernel(cc.C_TYPES[a.dtype.name])
    if address is None:
        return None
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    out = np.empty(out_shape, a.dtype)
    images = a.shape[0]
    o = out_shape[1] if mode == 0 else b.shape[1] if mode == 2 else a.shape[1]  # (the output channels)
    oh, ow = out_size(hw, sizes, strides, dilations)
    gemm = gemms[0] if a.dtype == np.float32 else gemms[1]
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
