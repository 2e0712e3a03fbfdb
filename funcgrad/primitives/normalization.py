"""Normalizations along trailing axes: ``softmax`` and ``layer_norm`` (with
``layer_norm_grad``, its Jacobian applied), PyTorch's ``_softmax`` and ``native_layer_norm``.

Each is one kernel where its composite of means, differences, exponentials and products
took five to fifteen operations each way (docs/performance.md, "Fused primitives"); layer
normalization's kernels are native row loops where a compiler can build them. Both
Jacobians are symmetric, so each rule serves as tangent and as cotangent.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from . import lax
from .ad import InputsVJP, VJPRule, add_optional, defjvp, defvjp
from .batching import axis_size, defvectorized, to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .elementwise import in_float32

__all__ = ["softmax_p", "layer_norm_p", "layer_norm_grad_p", "layer_norm_affine_grad_p"]


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


def _layer_norm_rule(x: ShapedArray, *affine: ShapedArray, axes: tuple[int, ...], eps: float) -> ShapedArray:
    require_kind("layer_norm", x.dtype, "f", "a floating-point array")
    if not axes or tuple(axes) != tuple(range(len(x.shape) - len(axes), len(x.shape))):
        raise ShapeError(f"layer_norm: axes {axes} are not the trailing axes of shape {fmt_shape(x.shape)}")
    normalized = x.shape[len(x.shape) - len(axes):]
    for name, a in zip(("weight", "bias"), affine):
        if a.shape != normalized or a.dtype != x.dtype:
            raise ShapeError(f"layer_norm: a {name} of shape {fmt_shape(a.shape)} ({a.dtype}) for an input of shape "
                             f"{fmt_shape(x.shape)} ({x.dtype}) normalized over {fmt_shape(normalized)}")
    if len(affine) > 2:
        raise ShapeError(f"layer_norm: x, a weight and a bias at most, got {1 + len(affine)} arrays")
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
# r (g - mean(g) - y mean(g y))) sums x in double: its result carries r^2 times the error of
# the mean, and for a row of nearly equal values (r in the hundreds) a float32 mean left
# 5e-4 where the gradient is 0. The rest is in the input's precision: the difference from
# the double mean is x - hi - lo, the mean split into two numbers of x's type (x - hi is
# exact where x is near the mean, and so is the rest for a row of nearly equal values), and
# the sums of c^2, g and g c take one pass (mean(g y) is r mean(g c)), each vector lane
# adding its own share (as PyTorch's kernel; their errors reach the result times r, not r^2).
# nanoGPT's (1024, 128) rows: 92-97 us where four passes in double took 161-163 (paired);
# the affine pass 114 us on one thread where those sums in double took 158, both within
# 1.3e-7 of the float64 result.
#
# A row's work as phases: (None, statements) or (the sums it takes, the body of a loop over
# the row's m elements). ``_rows`` writes the phases of ``_ROWS`` rows at once (a row's names
# end in its number where the text has "@"), each loop taking every row's sums: GCC ends an
# ``omp simd`` sum by adding its vector lanes one at a time, and the sums of several rows are
# independent chains the core overlaps. Each row's arithmetic is the same as alone, so the
# bits are too; nanoGPT's (1024, 128) affine backward pass took 87-110 us on one thread where
# a row at a time took 123-149 (AMD EPYC; on an Intel Xeon the same within the noise).
_ROWS = 4
_FORWARD_ROW = (
    (None, "const {t} *restrict xr@ = x + (row + @) * m; {t} *restrict o@ = out + (row + @) * m; {t} s@ = 0, v@ = 0;"),
    (("s@",), "s@ += xr@[i];"),
    (None, "const {t} mean@ = s@ / m;"),
    (("v@",), "{ {t} d = xr@[i] - mean@; v@ += d * d; }"),
    (None, "const {t} r@ = 1 / sqrt(v@ / m + eps);"),
    ((), "o@[i] = (xr@[i] - mean@) * r@{affine};"),
)


def _statistics(gw: str) -> tuple[tuple[Any, str], ...]:
    """The backward passes' sums (of x in double, the rest in x's precision) and the row's
    scalars, ``gw`` the cotangent's element as the Jacobian applies it."""
    return (
        (None, "double s@ = 0, v@ = 0;"),
        (("s@",), "s@ += xr@[i];"),
        (None, "const double mean@ = s@ / m; const {t} mh@ = ({t})mean@, ml@ = ({t})(mean@ - mh@);"
               " {t} vt@ = 0, sg@ = 0, sgc@ = 0;"),
        (("vt@", "sg@", "sgc@"),
         f"{{ {{t}} c = (xr@[i] - mh@) - ml@, gw = {gw}; vt@ += c * c; sg@ += gw; sgc@ += gw * c; }}"),
        (None, "v@ = vt@; const double r@ = 1 / sqrt(v@ / m + eps);"
               " const {t} rt@ = ({t})r@, mg@ = ({t})(sg@ / m), mgy@ = ({t})(r@ * (sgc@ / m));"),
    )


_ROW_POINTERS = (None, "const {t} *restrict xr@ = x + (row + @) * m, *restrict gr@ = g + (row + @) * m;"
                       " {t} *restrict o@ = out + (row + @) * m;")
_BACKWARD_ROW = (
    _ROW_POINTERS,
    *_statistics("gr@[i]"),
    ((), "o@[i] = rt@ * (gr@[i] - mg@ - ((xr@[i] - mh@) - ml@) * rt@ * mgy@);"),
)
_AFFINE_ROW = (  # (and the column sums of g y and g into the block's rows sw and sb)
    _ROW_POINTERS,
    *_statistics("gr@[i] * w[i]"),
    ((), "{ {t} y = ((xr@[i] - mh@) - ml@) * rt@; o@[i] = rt@ * (gr@[i] * w[i] - mg@ - y * mgy@);"
         " sw[i] += gr@[i] * y; sb[i] += gr@[i]; }"),
)


def _rows(phases: tuple[tuple[Any, str], ...], count: int) -> str:
    """The phases of ``count`` rows at once (``row`` ... ``row + count - 1``), as C."""
    lines = []
    for sums, text in phases:
        each = " ".join(text.replace("@", str(k)) for k in range(count))
        if sums is None:
            lines.append(each)
            continue
        names = ", ".join(name.replace("@", str(k)) for k in range(count) for name in sums)
        lines.append(f"#pragma omp simd reduction(+:{names})" if names else "#pragma omp simd")
        lines.append(f"for (int64_t i = 0; i < m; i++) {{ {each} }}")
    return "\n".join(lines)


def _row_loop(phases: tuple[tuple[Any, str], ...], end: str) -> str:
    """Rows ``row`` to ``end``, ``_ROWS`` at once and then one at a time."""
    return (f"for (; row + {_ROWS} <= {end}; row += {_ROWS}) {{\n{_rows(phases, _ROWS)}\n}}\n"
            f"for (; row < {end}; row++) {{\n{_rows(phases, 1)}\n}}")


# The forward pass or the Jacobian applied, over rows lo to hi.
_LAYER_NORM_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict x = (const {t} *)p[0];
    {inputs}
    {t} *restrict out = ({t} *)p[{out}];
    const int64_t m = n[1];
    const {t} eps = ({t}){eps};
    int64_t row = lo;
    {rows}
}}
"""

# The affine backward pass: the Jacobian applied to g w (w the weight), and the weight's and
# the bias's gradients, sum(g y) and sum(g) over the rows, from the same pass over a row.
# Those column sums are taken a block of rows at a time into rows of their own, in the
# input's precision (at least ``_BLOCKS`` blocks where there are the rows, so they split over
# threads; at most ``_BLOCK_ROWS`` rows a block, so each sum is short), which NumPy then adds
# up in float64: the same blocks and the same order whatever the threads.
_AFFINE_GRAD_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict g = (const {t} *)p[0], *restrict x = (const {t} *)p[1], *restrict w = (const {t} *)p[2];
    {t} *restrict out = ({t} *)p[3];
    {t} *restrict parts = ({t} *)p[4];
    const int64_t blocks = n[0], m = n[1], rows = n[2];
    const {t} eps = ({t}){eps};
    for (int64_t block = lo; block < hi; block++) {{
        {t} *restrict sw = parts + block * 2 * m, *restrict sb = sw + m;
        for (int64_t i = 0; i < m; i++) sw[i] = sb[i] = 0;
        const int64_t end = (block + 1) * rows / blocks;
        int64_t row = block * rows / blocks;
        {rows}
    }}
}}
"""
_BLOCKS = 64  # blocks of rows the affine backward pass sums its columns in, where it has the rows
_BLOCK_ROWS = 64  # the most rows a block sums


def _built(grad: bool | str, t: str, operands: int, eps: float) -> int | None:
    """The address of a loop (``grad``: False the normalization of x and ``operands - 1``
    affine operands, True its Jacobian applied, "affine" the affine backward pass); None
    where it cannot be built (tried again at the next call)."""
    try:
        return _loop(grad, t, operands, eps)
    except cc.NativeBuildError:
        return None


@functools.lru_cache(maxsize=32)
def _loop(grad: bool | str, t: str, operands: int, eps: float) -> int:
    """``_built``'s loop, made once per kind: formatting its source and finding it in the
    cache cost 7 us a call."""
    eps_text = repr(float(eps))
    if grad == "affine":
        rows = _row_loop(_AFFINE_ROW, "end")
        code = _AFFINE_GRAD_C.format(t=t, eps=eps_text, rows="{rows}")
    else:
        if grad:
            inputs, rows = f"const {t} *restrict g = (const {t} *)p[1];", _row_loop(_BACKWARD_ROW, "hi")
        else:
            names = ("w", "b")[:operands - 1]
            inputs = "".join(f"const {t} *restrict {name} = (const {t} *)p[{i + 1}];" for i, name in enumerate(names))
            rows = _row_loop(_FORWARD_ROW, "hi").replace("{affine}", ("", " * w[i]", " * w[i] + b[i]")[len(names)])
        code = _LAYER_NORM_C.format(t=t, eps=eps_text, out=operands, inputs=inputs, rows="{rows}")
    return cc.loop_kernel(code.replace("{rows}", rows.replace("{t}", t)))


def _native_layer_norm(xp: Any, arrays: tuple[Any, ...], axes: tuple[int, ...], eps: float, grad: bool) -> Any:
    """The normalization (``arrays``: x, then its weight and bias where it has them) or its
    Jacobian applied (``grad``: g and x) as one C loop over rows, where a compiler can build
    it; None otherwise (the NumPy kernels run). Either counts 8 work units an element
    (``cc.threads_for``): nanoGPT's (1024, 128) rows split over two threads, its forward in 24
    us where one thread took 46."""
    x = arrays[1] if grad else arrays[0]
    if not cc.eager_native(xp) or x.dtype not in (np.float32, np.float64) or any(a.dtype != x.dtype for a in arrays):
        return None
    operands = [x, arrays[0]] if grad else list(arrays)
    address = _built(grad, cc.C_TYPE_OF[x.dtype], len(operands), eps)
    if address is None:
        return None
    operands = [np.ascontiguousarray(a) for a in operands]
    out = np.empty(x.shape, x.dtype)
    m = math.prod(x.shape[a] for a in axes)
    cc.run(address, operands, [out], [x.size // m, m], per_element=8)
    return out


def _mean_of(xp: Any, v: Any, axes: tuple[int, ...]) -> Any:
    """The mean over ``axes``, summed in float64 and rounded once to v's dtype: the Jacobian
    multiplies g - mean(g) by r, up to 1/sqrt(eps), so a float32 sum's last-bit error in a
    constant row's mean became 3e-4 where the gradient is 0 (a hypothesis draw)."""
    return xp.mean(v, axis=axes, keepdims=True, dtype=xp.float64).astype(v.dtype, copy=False)


def _fit(x: Any, like_x: tuple[Any, ...], like_row: tuple[Any, ...], axes: tuple[int, ...]) -> None:
    """Eager kernels run without the shape rule (it explains their failures): a cotangent
    not of x's shape, or a weight or bias not of a row's, fails here, before a loop reads
    past its end."""
    if any(a.shape != x.shape for a in like_x) or any(a.shape != x.shape[x.ndim - len(axes):] for a in like_row):
        raise ValueError("the arrays do not fit")


@in_float32  # (half precision normalized in float32, as PyTorch's kernels do)
def _layer_norm(xp: Any, x: Any, *affine: Any, axes: tuple[int, ...], eps: float) -> Any:
    """``(x - mean) / sqrt(var + eps)`` over the trailing ``axes``, times the weight and plus
    the bias where it has them, written into one new array."""
    _fit(x, (), affine, axes)
    if x.size == 0:
        return xp.empty_like(x)
    native = _native_layer_norm(xp, (x, *affine), axes, eps, grad=False)
    if native is not None:
        return native
    c, r = _centered_and_scale(xp, x, axes, eps)
    c *= r
    if affine:  # (the composite's roundings: the normalized value, the product, then the sum)
        c *= affine[0]
    if len(affine) > 1:
        c += affine[1]
    return c


@in_float32  # (half precision normalized in float32, as PyTorch's kernels do)
def _layer_norm_grad(xp: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    """The normalization's Jacobian (symmetric) applied to ``g``:
    ``r (g - mean(g) - y mean(g y))``, y the normalized x and r its scale."""
    _fit(x, (g,), (), axes)
    if x.size == 0:
        return xp.empty_like(x)
    native = _native_layer_norm(xp, (g, x), axes, eps, grad=True)
    if native is not None:
        return native
    return _jacobian_applied(xp, g, x, axes, eps)[0]


def _jacobian_applied(xp: Any, g: Any, x: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any]:
    """``r (g - mean(g) - y mean(g y))`` in array operations, and the normalized x, y."""
    y, r = _centered_and_scale(xp, x, axes, eps)
    y *= r
    out = g - _mean_of(xp, g, axes)
    out -= y * _mean_of(xp, g * y, axes)
    out *= r
    return out, y


@in_float32
def _layer_norm_affine_grad(xp: Any, g: Any, x: Any, w: Any, *, axes: tuple[int, ...],
                            eps: float) -> tuple[Any, Any, Any]:
    """The affine normalization's backward pass: the Jacobian applied to ``g w``, and the
    weight's and the bias's gradients (sums over the leading axes of ``g y`` and ``g``)."""
    lead = tuple(range(x.ndim - len(axes)))
    m = math.prod(x.shape[a] for a in axes)
    _fit(x, (g,), (w,), axes)
    if x.size == 0:  # (no rows: the sums are 0; no columns: nothing to sum)
        return xp.empty_like(x), xp.zeros(w.shape, x.dtype), xp.zeros(w.shape, x.dtype)
    if cc.eager_native(xp) and x.dtype in (np.float32, np.float64) and g.dtype == w.dtype == x.dtype:
        t = cc.C_TYPE_OF[x.dtype]
        address = _built("affine", t, 3, eps)
        if address is not None:
            rows = x.size // m
            blocks = min(rows, max(_BLOCKS, -(-rows // _BLOCK_ROWS)))
            out, parts = np.empty(x.shape, x.dtype), np.empty((blocks, 2, m), x.dtype)
            cc.run(address, [np.ascontiguousarray(a) for a in (g, x, w)], [out, parts], [blocks, m, rows],
                   per_element=8)
            sums = parts.sum(axis=0, dtype=np.float64).astype(x.dtype).reshape(2, *w.shape)
            return out, sums[0], sums[1]
    out, y = _jacobian_applied(xp, g * w, x, axes, eps)
    return out, (g * y).sum(axis=lead), g.sum(axis=lead)


def _layer_norm_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """LayerNormalization"""
    shape = eqn.outputs[0].aval.shape
    axes = eqn.params["axes"]
    scale = ins[1] if len(ins) > 1 else g.constant(np.ones([shape[a] for a in axes], eqn.outputs[0].aval.dtype.np),
                                                   "scale")
    g.node("LayerNormalization", [ins[0], scale, *ins[2:]], [out], axis=axes[0], epsilon=float(eqn.params["eps"]))


def _affine_grad_rule(g: ShapedArray, x: ShapedArray, w: ShapedArray, *, axes: tuple[int, ...],
                      eps: float) -> tuple[ShapedArray, ...]:
    _layer_norm_grad_rule(g, x, axes=axes, eps=eps)
    _layer_norm_rule(x, w, axes=axes, eps=eps)
    return x, w, w


# Layer normalization with its affine part or without (PyTorch's native_layer_norm: x, then
# the weight and the bias where there are any): one kernel each way, where the composite of
# means, differences and products took eight operations forward and fifteen backward, and
# the affine part two more passes each way.
layer_norm_p = Primitive("layer_norm", _layer_norm_rule, kernel=_layer_norm, autocast="float32",
                         torch_name="NativeLayerNorm", onnx=_layer_norm_onnx)
layer_norm_grad_p = Primitive("layer_norm_grad", _layer_norm_grad_rule, kernel=_layer_norm_grad,
                              autocast="float32")
layer_norm_affine_grad_p = Primitive("layer_norm_affine_grad", _affine_grad_rule, kernel=_layer_norm_affine_grad,
                                     multiple_results=True, autocast="float32")


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


def _normalized(x: Any, axes: tuple[int, ...], eps: float) -> Any:
    return bind(layer_norm_p, x, axes=axes, eps=eps)


def _applied(t: Any, x: Any, axes: tuple[int, ...], eps: float) -> Any:
    return bind(layer_norm_grad_p, t, x, axes=axes, eps=eps)


def _layer_norm_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, axes: tuple[int, ...],
                    eps: float) -> tuple[Any, Any]:
    """The Jacobian (symmetric) applied to x's tangent, times the weight; the normalized
    value times the weight's tangent; the bias's tangent."""
    (x, *affine), (tx, *ta) = primals, tangents
    ans = bind(layer_norm_p, *primals, axes=axes, eps=eps)
    out = None if tx is None else _applied(tx, x, axes, eps)
    if out is not None and affine:
        out = out * affine[0]
    if ta and ta[0] is not None:
        out = add_optional(out, _normalized(x, axes, eps) * ta[0])
    if len(ta) > 1 and ta[1] is not None:
        out = add_optional(out, lax.broadcast_to(ta[1], tuple(ans.shape)))
    return ans, out


class _LayerNormVJP(VJPRule):
    """Keeps x (and the weight): the backward pass is ``layer_norm_grad``, or with a weight
    ``layer_norm_affine_grad``, one kernel for x's, the weight's and the bias's cotangents."""

    plannable = True

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        return bind(layer_norm_p, *primals, **params), self.residuals(primals, params, None)

    def residuals(self, primals: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        return (primals[0],) if len(primals) == 1 else (primals[0], primals[1], len(primals))

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        if len(residuals) == 1:
            return (_applied(g, residuals[0], params["axes"], params["eps"]),)
        x, w, inputs = residuals
        return bind(layer_norm_affine_grad_p, g, x, w, **params)[:inputs]  # type: ignore[no-any-return]


def _layer_norm_grad_in_g(t: Any, ans: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    return _applied(t, x, axes, eps)


def _layer_norm_grad_in_x(t: Any, ans: Any, g: Any, x: Any, *, axes: tuple[int, ...], eps: float) -> Any:
    return _layer_norm_curvature(g, x, t, axes, eps)


# Every Jacobian here is symmetric, so each rule serves as tangent and as cotangent.
layer_norm_p.jvp = _layer_norm_jvp
layer_norm_p.vjp = _LayerNormVJP()
defjvp(layer_norm_grad_p, _layer_norm_grad_in_g, _layer_norm_grad_in_x)
defvjp(layer_norm_grad_p, _layer_norm_grad_in_g, _layer_norm_grad_in_x, saves="args")
defvectorized(layer_norm_p, lambda x, *, axes, eps: {"axes": tuple(a + 1 for a in axes), "eps": eps})


def _layer_norm_grad_batch(args: Any, dims: Any, *, axes: tuple[int, ...], eps: float) -> tuple[Any, int]:
    n = axis_size(args, dims)
    g, x = (to_front(a, d, n) for a, d in zip(args, dims))
    return bind(layer_norm_grad_p, g, x, axes=tuple(a + 1 for a in axes), eps=eps), 0


layer_norm_grad_p.batch = _layer_norm_grad_batch


def _affine_grad_parts(g: Any, x: Any, w: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, ...]:
    """The composite's pieces: the leading axes, g w and the normalized x."""
    return tuple(range(x.ndim - len(axes))), g * w, _normalized(x, axes, eps)


def _affine_grad_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...], *, axes: tuple[int, ...],
                     eps: float) -> tuple[Any, Any]:
    """dx = J(g w) (J the Jacobian at x), dw = sum(g y), db = sum(g): each product's terms,
    J's derivative in x being ``_layer_norm_curvature``."""
    ans = bind(layer_norm_affine_grad_p, *primals, axes=axes, eps=eps)
    g, x, w = primals
    tg, tx, tw = (lax.zeros(a, tuple(a.shape)) if t is None else t for a, t in zip(primals, tangents))
    lead, gw, y = _affine_grad_parts(g, x, w, axes, eps)
    tdx = _applied(tg * w + g * tw, x, axes, eps) + _layer_norm_curvature(gw, x, tx, axes, eps)
    tdw = lax.reduce_sum(tg * y + g * _applied(tx, x, axes, eps), lead)
    return ans, (tdx, tdw, lax.reduce_sum(tg, lead))


class _AffineGradVJP(InputsVJP):
    """Keeps g, x and w; the cotangents are the composite's, term by term."""

    prim = layer_norm_affine_grad_p

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        (gr, x, w), (a, bw, bb) = residuals, g
        axes, eps = params["axes"], params["eps"]
        lead, gw, _ = _affine_grad_parts(gr, x, w, axes, eps)
        ct_g = ct_x = ct_w = None
        if a is not None:  # dx = J(g w)
            ct_gw = _applied(a, x, axes, eps)
            ct_g, ct_w = ct_gw * w, lax.reduce_sum(ct_gw * gr, lead)
            ct_x = _layer_norm_curvature(gw, x, a, axes, eps)
        if bw is not None:  # dw = sum(g y)
            ct_g = add_optional(ct_g, _normalized(x, axes, eps) * bw)
            ct_x = add_optional(ct_x, _applied(gr * bw, x, axes, eps))
        if bb is not None:  # db = sum(g)
            ct_g = add_optional(ct_g, lax.broadcast_to(bb, tuple(x.shape)))
        return ct_g, ct_x, ct_w


def _affine_grad_batch(args: Any, dims: Any, *, axes: tuple[int, ...], eps: float) -> tuple[Any, Any]:
    """The composite over the batch in front: the weight's and bias's gradients sum each
    member's rows apart."""
    n = axis_size(args, dims)
    g, x = (to_front(a, d, n) for a, d in zip(args[:2], dims[:2]))
    w = args[2]
    if dims[2] is not None:
        w = to_front(w, dims[2], n)
        w = lax.reshape(w, (n, *(1,) * (x.ndim - 1 - len(axes)), *w.shape[1:]))
    shifted = tuple(a + 1 for a in axes)
    within = tuple(range(1, x.ndim - len(axes)))
    dx = _applied(g * w, x, shifted, eps)
    return (dx, lax.reduce_sum(g * _normalized(x, shifted, eps), within), lax.reduce_sum(g, within)), (0, 0, 0)


layer_norm_affine_grad_p.jvp = _affine_grad_jvp
layer_norm_affine_grad_p.vjp = _AffineGradVJP()
layer_norm_affine_grad_p.batch = _affine_grad_batch
