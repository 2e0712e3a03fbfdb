"""Normalizations along trailing axes: ``softmax`` and ``layer_norm`` (with
``layer_norm_grad``, its Jacobian applied), PyTorch's ``_softmax`` and ``native_layer_norm``.

Each is one kernel where its composite of means, differences, exponentials and products
took five to fifteen operations each way (docs/performance.md, "Fused primitives"); layer
normalization's kernels are native row loops where a compiler can build them. Both
Jacobians are symmetric, so each rule serves as tangent and as cotangent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import axis_size, defvectorized, to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .elementwise import in_float32

__all__ = ["softmax_p", "layer_norm_p", "layer_norm_grad_p"]


def _softmax_rule(x: ShapedArray, *, axis: int) -> ShapedArray:
    require_kind("softmax", x.dtype, "f", "a floating-point array")
    if not 0 <= axis < max(len(x.shape), 1):
        raise ShapeError(f"softmax: axis {axis} is out of range for shape {fmt_shape(x.shape)}")
    return x


def _softmax(xp: Any, x: Any, *, axis: int) -> Any:
    """``exp(x - max) / sum`` along ``axis``, in place on one new array. A row holding +inf
    (or only -inf) is NaN throughout, as PyTorch's."""
    if x.size == 0:
        return xp.empty_like(x)
    if axis == x.ndim - 1:
        native = _native_softmax(xp, x)
        if native is not None:
            return native
    with np.errstate(invalid="ignore"):  # (inf - inf: the NaN rows)
        e = x - xp.max(x, axis=axis, keepdims=True)
    xp.exp(e, out=e)
    e /= xp.sum(e, axis=axis, keepdims=True)
    return e


# Per row: its max, then exp(x - max) written out and summed (in double), then divided by
# the sum (``fg_exp``: a causal mask's -inf costs no more than a number); a row at a time,
# so the second pass reads from the caches. NaN, +inf and rows of -inf give NumPy's NaN
# rows (the max's NaN, inf - inf).
_SOFTMAX_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict x = (const {t} *)p[0];
    {t} *restrict out = ({t} *)p[1];
    const int64_t m = n[1];
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict xr = x + row * m;
        {t} *restrict o = out + row * m;
        {t} top = xr[0];
        #pragma omp simd reduction(max:top)
        for (int64_t i = 0; i < m; i++) top = xr[i] > top ? xr[i] : top;
        double s = 0;
        #pragma omp simd reduction(+:s)
        for (int64_t i = 0; i < m; i++) {{ {t} e = fg_exp(xr[i] - top); o[i] = e; s += e; }}
        const {t} total = ({t})s;
        #pragma omp simd
        for (int64_t i = 0; i < m; i++) o[i] = o[i] / total;
    }}
}}
"""


def _native_softmax(xp: Any, x: Any) -> Any:
    """Softmax along the last axis as one C loop over rows (float32, float64), where a
    compiler can build it; None otherwise (the NumPy kernel runs). 4.5x faster on
    (16, 4, 64, 64) float32 here; within a few ulp of the NumPy kernel (libmvec's ``exp``, a
    sum in double)."""
    if not cc.eager_native(xp) or x.dtype not in (np.float32, np.float64):
        return None
    try:
        address = cc.loop_kernel(_SOFTMAX_C.format(t=cc.C_TYPE_OF[x.dtype]))
    except cc.NativeBuildError:
        return None
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    m = x.shape[-1]
    cc.run(address, [x], [out], [x.size // m, m], per_element=cc.work(["fg_exp(x)"]))
    return out


def _softmax_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Softmax"""
    g.node("Softmax", ins, [out], axis=eqn.params["axis"])


# A primitive (PyTorch's ``_softmax``), not exp(x - logsumexp(x)): one kernel writing one
# array, and a backward pass of four operations where the composite's took nine.
softmax_p = Primitive("softmax", _softmax_rule, kernel=_softmax, autocast="float32", torch_name="Softmax",
                      onnx=_softmax_onnx)
defvectorized(softmax_p, lambda x, *, axis: {"axis": axis + 1})


def _softmax_linear(t: Any, ans: Any, x: Any, *, axis: int) -> Any:
    """The softmax's derivative applied to t, ``y (t - sum(t y))``: it is symmetric, so one
    function is both the JVP and the VJP."""
    return ans * (t - lax.reduce_sum(t * ans, (axis,), keepdims=True))


defjvp(softmax_p, _softmax_linear)
defvjp(softmax_p, _softmax_linear, saves="ans")


def _layer_norm_rule(x: ShapedArray, *, axes: tuple[int, ...], eps: float) -> ShapedArray:
    require_kind("layer_norm", x.dtype, "f", "a floating-point array")
    if not axes or tuple(axes) != tuple(range(len(x.shape) - len(axes), len(x.shape))):
        raise ShapeError(f"layer_norm: axes {axes} are not the trailing axes of shape {fmt_shape(x.shape)}")
    return x


def _layer_norm_grad_rule(g: ShapedArray, x: ShapedArray, *, axes: tuple[int, ...], eps: float) -> ShapedArray:
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ShapeError(f"layer_norm_grad: a cotangent of shape {fmt_shape(g.shape)} ({g.dtype}) for an input of "
                         f"shape {fmt_shape(x.shape)} ({x.dtype})")
    return _layer_norm_rule(x, axes=axes, eps=eps)


def _centered_and_scale(xp: Any, x: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any]:
    """``x - mean`` (a new array) and ``1 / sqrt(var + eps)`` over ``axes``. The mean is
    summed in float64 and the differences rounded to x's dtype after: the backward pass's
    result carries r^2 times the mean's error (a float32 row of nearly equal values left
    5e-4 where the gradient is 0)."""
    c = (x - xp.mean(x, axis=axes, keepdims=True, dtype=xp.float64)).astype(x.dtype, copy=False)
    r = xp.mean(xp.square(c), axis=axes, keepdims=True)
    r += eps
    return c, 1.0 / xp.sqrt(r)


# Per row of n values: the mean, then the variance of the differences, then the result; a
# row at a time, so x is read from the caches after the first pass. The forward pass sums
# in the input's precision, vectorized (float32 for float32, as PyTorch's kernel:
# accumulated in double it took 108 us for nanoGPT's (1024, 128) where it takes 43, within
# 7e-7). The backward pass (``GRAD``: g too, the sums of g and g * y, then
# r (g - mean(g) - y mean(g y))) sums in double: its result carries r^2 times the error of
# the mean, and for a row of nearly equal values (r in the hundreds) a float32 mean left
# 5e-4 where the gradient is 0. Its elementwise work is in the input's precision: the
# difference from the double mean is x - hi - lo, the mean split into two numbers of x's
# type (x - hi is exact where x is near the mean, and so is the rest for a row of nearly
# equal values), so a float32 row is computed in float32 lanes; the sums of c^2, g and g c
# take one pass (mean(g y) is r mean(g c)). nanoGPT's (1024, 128) rows: 92-97 us where four
# passes in double took 161-163 (paired).
_LAYER_NORM_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict x = (const {t} *)p[0];
    {inputs}
    {t} *restrict out = ({t} *)p[{out}];
    const int64_t m = n[1];
    const {t} eps = ({t}){eps};
    for (int64_t row = lo; row < hi; row++) {{
        const {t} *restrict xr = x + row * m;
        {t} *restrict o = out + row * m;
        {a} s = 0, v = 0;
        #pragma omp simd reduction(+:s)
        for (int64_t i = 0; i < m; i++) s += xr[i];
        {body}
    }}
}}
"""
_FORWARD_BODY = """const {t} mean = s / m;
        #pragma omp simd reduction(+:v)
        for (int64_t i = 0; i < m; i++) {{ {t} d = xr[i] - mean; v += d * d; }}
        const {t} r = 1 / sqrt(v / m + eps);
        #pragma omp simd
        for (int64_t i = 0; i < m; i++) o[i] = (xr[i] - mean) * r;"""
_BACKWARD_BODY = """const double mean = s / m;
        const {t} mh = ({t})mean, ml = ({t})(mean - mh);
        const {t} *restrict gr = g + row * m;
        double sg = 0, sgc = 0;
        #pragma omp simd reduction(+:v, sg, sgc)
        for (int64_t i = 0; i < m; i++) {{ {t} c = (xr[i] - mh) - ml; v += c * c; sg += gr[i]; sgc += gr[i] * c; }}
        const double r = 1 / sqrt(v / m + eps);
        const {t} rt = ({t})r, mg = ({t})(sg / m), mgy = ({t})(r * (sgc / m));
        #pragma omp simd
        for (int64_t i = 0; i < m; i++) o[i] = rt * (gr[i] - mg - ((xr[i] - mh) - ml) * rt * mgy);"""


def _native_layer_norm(xp: Any, arrays: tuple[Any, ...], axes: tuple[int, ...], eps: float) -> Any:
    """The normalization (``arrays = (x,)``) or its Jacobian applied (``(g, x)``) as one C loop
    over rows, where a compiler can build it; None otherwise (the NumPy kernels run)."""
    x = arrays[-1]
    if not cc.eager_native(xp) or x.dtype not in (np.float32, np.float64):
        return None
    t = cc.C_TYPE_OF[x.dtype]
    grad = len(arrays) == 2
    code = _LAYER_NORM_C.format(
        t=t, a="double" if grad else t, eps=repr(float(eps)), out=len(arrays),
        inputs=f"const {t} *restrict g = (const {t} *)p[1];" if grad else "",
        body=(_BACKWARD_BODY if grad else _FORWARD_BODY).format(t=t))
    try:
        address = cc.loop_kernel(code)
    except cc.NativeBuildError:
        return None
    x = np.ascontiguousarray(x)
    operands = [x, np.ascontiguousarray(arrays[0])] if grad else [x]
    out = np.empty_like(x)
    m = math.prod(x.shape[a] for a in axes)
    cc.run(address, operands, [out], [x.size // m, m], per_element=8 if grad else 4)
    return out


@in_float32  # (half precision normalized in float32, as PyTorch's kernels do)
def _layer_norm(xp: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    """``(x - mean) / sqrt(var + eps)`` over the trailing ``axes``, written into one new array."""
    if x.size == 0:
        return xp.empty_like(x)
    native = _native_layer_norm(xp, (x,), axes, eps)
    if native is not None:
        return native
    c, r = _centered_and_scale(xp, x, axes, eps)
    c *= r
    return c


@in_float32  # (half precision normalized in float32, as PyTorch's kernels do)
def _layer_norm_grad(xp: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    """The normalization's Jacobian (symmetric) applied to ``g``:
    ``r (g - mean(g) - y mean(g y))``, y the normalized x and r its scale."""
    if x.size == 0:
        return xp.empty_like(x)
    native = _native_layer_norm(xp, (g, x), axes, eps)
    if native is not None:
        return native
    y, r = _centered_and_scale(xp, x, axes, eps)
    y *= r
    out = g - xp.mean(g, axis=axes, keepdims=True)
    out -= y * xp.mean(g * y, axis=axes, keepdims=True)
    out *= r
    return out


def _layer_norm_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """LayerNormalization"""
    shape = eqn.outputs[0].aval.shape
    axes = eqn.params["axes"]
    scale = g.constant(np.ones([shape[a] for a in axes], eqn.outputs[0].aval.dtype.np), "scale")
    g.node("LayerNormalization", [ins[0], scale], [out], axis=axes[0], epsilon=float(eqn.params["eps"]))


# Layer normalization without its affine part (PyTorch's native_layer_norm; the weight and
# bias are a product and a sum around it): one kernel each way, where the composite of
# means, differences and products took eight operations forward and fifteen backward.
layer_norm_p = Primitive("layer_norm", _layer_norm_rule, kernel=_layer_norm, autocast="float32",
                         torch_name="NativeLayerNorm", onnx=_layer_norm_onnx)
layer_norm_grad_p = Primitive("layer_norm_grad", _layer_norm_grad_rule, kernel=_layer_norm_grad,
                              autocast="float32")


def _mean(v: Any, axes: tuple[int, ...]) -> Any:
    return lax.reduce_sum(v, axes, keepdims=True) * (1.0 / math.prod(v.shape[a] for a in axes))


def _layer_norm_curvature(g: Any, x: Any, d: Any, axes: tuple[int, ...], eps: float) -> Any:
    """The derivative of ``layer_norm_grad(g, x)`` in x along ``d``. With c = x - mean(x),
    r = 1/sqrt(mean(c^2) + eps), the Jacobian applied to g is r (g - mean(g)) - r^3 c mean(g c);
    differentiating it gives the four terms below. The normalization is a gradient (its
    Jacobian is symmetric), so its third derivative is symmetric too: the same function is
    the cotangent for x, with ``d`` the incoming cotangent."""
    c = x - _mean(x, axes)
    r = lax.rsqrt(_mean(c * c, axes) + eps)
    r3 = r * r * r
    dc = d - _mean(d, axes)
    a, b, e = _mean(c * dc, axes), _mean(g * c, axes), _mean(g * dc, axes)
    return r3 * (3.0 * (r * r) * (a * b) * c - a * (g - _mean(g, axes)) - b * dc - e * c)


def _layer_norm_applied(t: Any, ans: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    return bind(layer_norm_grad_p, t, x, axes=axes, eps=eps)


def _layer_norm_grad_in_g(t: Any, ans: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    return bind(layer_norm_grad_p, t, x, axes=axes, eps=eps)


def _layer_norm_grad_in_x(t: Any, ans: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    return _layer_norm_curvature(g, x, t, axes, eps)


# Every Jacobian here is symmetric, so each rule serves as tangent and as cotangent.
defjvp(layer_norm_p, _layer_norm_applied)
defvjp(layer_norm_p, _layer_norm_applied, saves="args")
defjvp(layer_norm_grad_p, _layer_norm_grad_in_g, _layer_norm_grad_in_x)
defvjp(layer_norm_grad_p, _layer_norm_grad_in_g, _layer_norm_grad_in_x, saves="args")
defvectorized(layer_norm_p, lambda x, *, axes, eps: {"axes": tuple(a + 1 for a in axes), "eps": eps})


def _layer_norm_grad_batch(args: Any, dims: Any, *, axes: tuple[int, ...], eps: float) -> tuple[Any, int]:
    n = axis_size(args, dims)
    g, x = (to_front(a, d, n) for a, d in zip(args, dims))
    return bind(layer_norm_grad_p, g, x, axes=tuple(a + 1 for a in axes), eps=eps), 0


layer_norm_grad_p.batch = _layer_norm_grad_batch
