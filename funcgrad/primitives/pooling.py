"""Max pooling as a selection: ``select_and_gather`` and ``select_and_scatter_add``, the
pair of kernels JAX's ``reduce_window`` max differentiates through (XLA's select-and-scatter)
and PyTorch's ``max_pool2d_with_indices`` and its backward.

Both work on the last two axes (H, W) of ``x``, cut into windows by a geometry: ``sizes``
(KH, KW), ``steps``, ``padding`` before the input (the windows may start there) and
``dilations``; positions outside the input belong to no window. Each window *selects* one
position of ``x``, as PyTorch's kernels do: the first (row-major) position inside the input,
then any holding a greater value or a NaN (so the first maximum, or the last NaN).

- ``select_and_gather(values, x)`` is ``values`` at each window's selection: max pooling is
  ``select_and_gather(x, x)``, and ``select_and_gather(positions, x)`` the indices
  ``return_indices`` gives.
- ``select_and_scatter_add(g, x)`` adds each window's ``g`` at its selection, into zeros of
  ``x``'s shape: the first one's transpose.

Each is linear in its first operand and constant in ``x`` (a selection moves only where two
values tie), so the four derivative rules are the two primitives again. Where a compiler
can build them, both are one native loop over the windows; elsewhere NumPy (or CuPy)
gathers every window's taps.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import cc
from ..errors import ShapeError
from .ad import defjvp, defvjp
from .batching import defbatched_matrices
from .checks import broadcast_shapes, common_device, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .domains import Domain

__all__ = ["select_and_gather_p", "select_and_scatter_add_p"]

Pair = tuple[int, int]


def _check(op: str, x: ShapedArray, first: ShapedArray, first_hw: tuple[int, ...], out_hw: Pair, sizes: Pair,
           steps: Pair, padding: Pair, dilations: Pair) -> tuple[int, ...]:
    """The leading (batch) shape both operands broadcast to, after the checks they share."""
    require_kind(op, x.dtype, "fiu", "a real array to select from")
    if len(x.shape) < 2 or len(first.shape) < 2:
        raise ShapeError(f"{op}: operands need (..., H, W) axes, got shapes {fmt_shape(first.shape)} and "
                         f"{fmt_shape(x.shape)}")
    if tuple(first.shape[-2:]) != tuple(first_hw):
        raise ShapeError(f"{op}: an operand of shape {fmt_shape(first.shape)} for an input of shape "
                         f"{fmt_shape(x.shape)}: its last two axes must be {first_hw}")
    if not _windows_fit((x.shape[-2], x.shape[-1]), out_hw, sizes, steps, padding, dilations):
        raise ShapeError(f"{op}: windows of sizes {sizes}, steps {steps}, padding {padding} and dilations "
                         f"{dilations} do not cut {out_hw} windows, each holding a position, from an input of "
                         f"shape {fmt_shape(x.shape)}")
    common_device(op, (first, x))
    return broadcast_shapes(op, first.shape[:-2], x.shape[:-2])


@functools.lru_cache(maxsize=256)
def _windows_fit(hw: Pair, out_hw: Pair, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair) -> bool:
    """Whether the geometry is well formed and every window holds a position inside the
    input (so every window selects one)."""
    if min(*sizes, *steps, *dilations) < 1 or min(padding) < 0 or min(out_hw) < 0:
        return False
    for size, out, k, s, p, d in zip(hw, out_hw, sizes, steps, padding, dilations):
        taps = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
        if out and not ((taps >= 0) & (taps < size)).any(axis=1).all():
            return False
    return True


def _gather_rule(values: ShapedArray, x: ShapedArray, *, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
                 shape: Pair) -> ShapedArray:
    lead = _check("select_and_gather", x, values, tuple(x.shape[-2:]), shape, sizes, steps, padding, dilations)
    require_kind("select_and_gather", values.dtype, "fiu", "a real array to gather from")
    return ShapedArray(lead + tuple(shape), values.dtype, x.device)


def _scatter_rule(g: ShapedArray, x: ShapedArray, *, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
                  shape: Pair) -> ShapedArray:
    lead = _check("select_and_scatter_add", x, g, shape, shape, sizes, steps, padding, dilations)
    require_kind("select_and_scatter_add", g.dtype, "f", "floating-point values to add")
    return ShapedArray(lead + tuple(x.shape[-2:]), g.dtype, x.device)


# -- the NumPy (and CuPy) kernels: every window's taps, gathered -----------------------------

def _selections(xp: Any, x: Any, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair, shape: Pair) -> Any:
    """Each window's selected position, as a flat index into (H, W): ``(..., OH, OW)`` int64."""
    h, w = x.shape[-2:]
    rows = np.arange(shape[0])[:, None] * steps[0] - padding[0] + np.arange(sizes[0])[None, :] * dilations[0]
    cols = np.arange(shape[1])[:, None] * steps[1] - padding[1] + np.arange(sizes[1])[None, :] * dilations[1]
    inside = ((rows >= 0) & (rows < h))[:, None, :, None] & ((cols >= 0) & (cols < w))[None, :, None, :]
    flat = np.clip(rows, 0, h - 1)[:, None, :, None] * w + np.clip(cols, 0, w - 1)[None, :, None, :]
    taps_of = (shape[0], shape[1], sizes[0] * sizes[1])
    inside, flat = xp.asarray(inside.reshape(taps_of)), xp.asarray(flat.reshape(taps_of))
    taps = x.reshape(x.shape[:-2] + (h * w,))[..., flat]                      # (..., OH, OW, K)
    integer = x.dtype.kind in "iu"  # (else a float: bfloat16 is kind "V")
    low = np.iinfo(x.dtype).min if integer else -np.inf
    top = xp.max(xp.where(inside, taps, xp.asarray(low, x.dtype)), axis=-1, keepdims=True)
    first_max = xp.argmax(inside & (taps == top), axis=-1)
    k = taps_of[2]
    if not integer:  # a NaN wins, the last one
        last_nan = k - 1 - xp.argmax(xp.flip(inside & xp.isnan(taps), axis=-1), axis=-1)
        first_max = xp.where(xp.isnan(top[..., 0]), last_nan, first_max)
    return xp.take_along_axis(xp.broadcast_to(flat, taps.shape), first_max[..., None], axis=-1)[..., 0]


def _fits(first: Any, x: Any, first_hw: Pair, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
          shape: Pair) -> None:
    """The kernels' own check (eager evaluation runs them without the shape rule, which names
    the problem once they raise): the loops read only inside the operands."""
    if x.ndim < 2 or first.ndim < 2 or tuple(first.shape[-2:]) != tuple(first_hw) or not _windows_fit(
            tuple(x.shape[-2:]), tuple(shape), tuple(sizes), tuple(steps), tuple(padding), tuple(dilations)):
        raise ValueError("the operands and the window geometry do not fit")


def _flat_batches(xp: Any, first: Any, x: Any) -> tuple[Any, Any, tuple[int, ...]]:
    """Both operands broadcast over their leading axes, flattened to one batch axis."""
    lead = np.broadcast_shapes(first.shape[:-2], x.shape[:-2])
    first = xp.broadcast_to(first, lead + first.shape[-2:]).reshape((-1,) + first.shape[-2:])
    x = xp.broadcast_to(x, lead + x.shape[-2:]).reshape((-1,) + x.shape[-2:])
    return first, x, lead


def _gather(xp: Any, values: Any, x: Any, *, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
            shape: Pair) -> Any:
    """``values`` at each window's selection."""
    _fits(values, x, tuple(x.shape[-2:]), sizes, steps, padding, dilations, shape)
    native = _native(xp, "gather", values, x, sizes, steps, padding, dilations, shape)
    if native is not None:
        return native
    values, x, lead = _flat_batches(xp, values, x)
    at = _selections(xp, x, sizes, steps, padding, dilations, shape).reshape(x.shape[0], -1)
    picked = xp.take_along_axis(values.reshape(values.shape[0], -1), at, axis=1)
    return picked.reshape(lead + tuple(shape))


def _scatter_add(xp: Any, g: Any, x: Any, *, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
                 shape: Pair) -> Any:
    """Zeros of ``x``'s shape with each window's ``g`` added at its selection, in the windows'
    row-major order (the native loop's order: the same bits)."""
    _fits(g, x, shape, sizes, steps, padding, dilations, shape)
    if g.dtype.kind in "biu":
        raise TypeError("integer values to add")
    native = _native(xp, "scatter_add", g, x, sizes, steps, padding, dilations, shape)
    if native is not None:
        return native
    g, x, lead = _flat_batches(xp, g, x)
    at = _selections(xp, x, sizes, steps, padding, dilations, shape).reshape(x.shape[0], -1)
    out = xp.zeros((x.shape[0], x.shape[1] * x.shape[2]), g.dtype)
    rows = xp.arange(x.shape[0])[:, None]
    if xp is np:
        np.add.at(out, (rows, at), g.reshape(g.shape[0], -1))
    else:
        import cupyx  # (the GPU's scatter-add; CuPy arrays exist only where it is installed)

        cupyx.scatter_add(out, (xp.broadcast_to(rows, at.shape), at), g.reshape(g.shape[0], -1))
    return out.reshape(lead + x.shape[-2:])


# -- the native loops -------------------------------------------------------------------------

# Each window's selection, PyTorch's CPU rule: the first position inside the input, then any
# greater value or a NaN (a NaN compares unequal to itself; for integer types that test
# drops out). The geometry is written in as constants. Windows wholly inside the input (all
# but a border) take the fast loop: a row of them at once, the taps unrolled, each choice a
# blend, so the row vectorizes (the comparisons of data are unpredictable: branching on them
# per window took ten times as long); the border's windows take ``fg_select``, tap by tap.
# Max pooling itself (``select_and_gather(x, x)``) keeps only the values in the fast loop.
_SELECT_C = """static int64_t fg_select(const {t} *restrict x, int64_t h, int64_t w, int64_t i, int64_t j) {{
    int64_t best = -1;
    {t} top = 0;
    for (int64_t a = 0; a < {kh}; a++) {{
        const int64_t r = i * {sh} - {ph} + a * {dh};
        if (r < 0 || r >= h) continue;
        for (int64_t b = 0; b < {kw}; b++) {{
            const int64_t c = j * {sw} - {pw} + b * {dw};
            if (c < 0 || c >= w) continue;
            const {t} v = x[r * w + c];
            if (best < 0 || v > top || v != v) {{ top = v; best = r * w + c; }}
        }}
    }}
    return best;
}}

/* p: the first operand, x, the result; n: batches, H, W, OH, OW, the first operand's batch step */
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {v} *restrict first = (const {v} *)p[0];
    const {t} *restrict x = (const {t} *)p[1];
    {v} *restrict out = ({v} *)p[2];
    const int64_t h = n[1], w = n[2], oh = n[3], ow = n[4], step = n[5];
    /* the windows wholly inside along a row: j in [inside_lo, inside_hi) */
    const int64_t inside_lo = ({pw} + {sw} - 1) / {sw};
    int64_t inside_hi = w - 1 + {pw} - ({kw} - 1) * {dw} < 0 ? 0 : (w - 1 + {pw} - ({kw} - 1) * {dw}) / {sw} + 1;
    inside_hi = inside_hi > ow ? ow : inside_hi < inside_lo ? inside_lo : inside_hi;
    int64_t at[256];
    for (int64_t batch = lo; batch < hi; batch++) {{
        const {t} *restrict xb = x + batch * h * w;
        const {v} *restrict fb = first + batch * step;
        {start}
        for (int64_t i = 0; i < oh; i++) {{
            const int64_t r0 = i * {sh} - {ph};
            const int rows_inside = r0 >= 0 && r0 + ({kh} - 1) * {dh} < h;
            for (int64_t j0 = 0; j0 < ow; j0 += 256) {{
                const int64_t m = ow - j0 < 256 ? ow - j0 : 256;
                int64_t k0 = rows_inside ? inside_lo - j0 : m, k1 = rows_inside ? inside_hi - j0 : m;
                k0 = k0 < 0 ? 0 : k0 > m ? m : k0;
                k1 = k1 < k0 ? k0 : k1 > m ? m : k1;
                for (int64_t k = 0; k < k0; k++) at[k] = fg_select(xb, h, w, i, j0 + k);
                for (int64_t k = k1; k < m; k++) at[k] = fg_select(xb, h, w, i, j0 + k);
                const {t} *restrict xr = xb + r0 * w - {pw};
                #pragma omp simd
                for (int64_t k = k0; k < k1; k++) {{
                    const int64_t c = (j0 + k) * {sw};
                    {taps}
                    {fast}
                }}
                {rest}
            }}
        }}
    }}
}}
"""
# max pooling: values only; the others: each window's position, then gathered or added
_MODES = {
    "max": ("{v} *restrict ob = out + batch * oh * ow;", "ob[i * ow + j0 + k] = top;",
            "for (int64_t k = 0; k < k0; k++) ob[i * ow + j0 + k] = fb[at[k]];\n"
            "                for (int64_t k = k1; k < m; k++) ob[i * ow + j0 + k] = fb[at[k]];"),
    "gather": ("{v} *restrict ob = out + batch * oh * ow;", "at[k] = best;",
               "for (int64_t k = 0; k < m; k++) ob[i * ow + j0 + k] = fb[at[k]];"),
    "scatter_add": ("{v} *restrict ob = out + batch * h * w;\n        for (int64_t k = 0; k < h * w; k++) ob[k] = 0;",
                    "at[k] = best;", "for (int64_t k = 0; k < m; k++) ob[at[k]] += fb[i * ow + j0 + k];"),
}


def _taps(t: str, sizes: Pair, dilations: Pair, width_name: str, positions: bool) -> str:
    """The unrolled taps of one window wholly inside, the first one's value the start."""
    lines: list[str] = []
    for a in range(sizes[0]):
        for b in range(sizes[1]):
            at = f"{a * dilations[0]} * {width_name} + c + {b * dilations[1]}"
            if not lines:
                lines.append(f"{t} top = xr[{at}];" + (f" int64_t best = r0 * w - {{pw}} + {at};" if positions else ""))
                continue
            lines.append(f"{{ const {t} v = xr[{at}]; const int take = (v > top) | (v != v); top = take ? v : top;"
                         + (f" best = take ? r0 * w - {{pw}} + {at} : best;" if positions else "") + " }")
    return "\n                    ".join(lines)


def _native(xp: Any, which: str, first: Any, x: Any, sizes: Pair, steps: Pair, padding: Pair, dilations: Pair,
            shape: Pair) -> Any:
    """The kernel as one C loop over the batches (split over threads), where a compiler can
    build it and the dtypes are C's; None otherwise."""
    if not (cc.eager_native(xp) and x.dtype in cc.C_TYPE_OF and first.dtype in cc.C_TYPE_OF
            and x.dtype.kind != "b" and x.size and first.size):
        return None
    t, v = cc.C_TYPE_OF[x.dtype], cc.C_TYPE_OF[first.dtype]
    mode = "max" if which == "gather" and first is x else which
    start, fast, rest = _MODES[mode]
    geometry = dict(kh=sizes[0], kw=sizes[1], sh=steps[0], sw=steps[1], ph=padding[0], pw=padding[1],
                    dh=dilations[0], dw=dilations[1])
    taps = _taps(t, sizes, dilations, "w", mode != "max").replace("{pw}", str(padding[1]))
    try:
        address = cc.loop_kernel(_SELECT_C.format(t=t, v=v, start=start.format(v=v), taps=taps, fast=fast, rest=rest,
                                                  **geometry))
    except cc.NativeBuildError:
        return None
    lead = np.broadcast_shapes(first.shape[:-2], x.shape[:-2])
    x = np.ascontiguousarray(np.broadcast_to(x, lead + x.shape[-2:])).reshape((-1,) + x.shape[-2:])
    plane = first.shape[-2] * first.shape[-1]
    if first.ndim == 2:  # one plane for every batch (return_indices' positions)
        first, step = np.ascontiguousarray(first), 0
    else:
        first, step = np.ascontiguousarray(np.broadcast_to(first, lead + first.shape[-2:])), plane
    h, w = x.shape[-2:]
    out = np.empty((x.shape[0],) + ((h, w) if which == "scatter_add" else tuple(shape)), first.dtype)
    cc.run(address, [first, x], [out], [x.shape[0], h, w, shape[0], shape[1], step],
           per_element=sizes[0] * sizes[1])
    return out.reshape(lead + out.shape[-2:])


# -- the primitives and their rules -----------------------------------------------------------

def _max_pool_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """MaxPool"""
    p = eqn.params
    x = eqn.inputs[1].aval
    if ins[0] != ins[1] or len(x.shape) != 4:
        g.refuse("select_and_gather has an ONNX form only as max pooling of (N, C, H, W) (values = x)")
    span = [d * (k - 1) + 1 for k, d in zip(p["sizes"], p["dilations"])]
    after = [(o - 1) * s + sp - (size + pad) for o, s, sp, size, pad in
             zip(p["shape"], p["steps"], span, x.shape[-2:], p["padding"])]
    g.node("MaxPool", [ins[1]], [out], kernel_shape=list(p["sizes"]), strides=list(p["steps"]),
           dilations=list(p["dilations"]), pads=[*p["padding"], *(max(0, a) for a in after)])


select_and_gather_p = Primitive("select_and_gather", _gather_rule, kernel=_gather, domain=Domain(kind="distinct"),
                                torch_name="MaxPool2DWithIndices", onnx=_max_pool_onnx)
select_and_scatter_add_p = Primitive("select_and_scatter_add", _scatter_rule, kernel=_scatter_add,
                                     domain=Domain(kind="distinct"), torch_name="MaxPool2DWithIndicesBackward")


def _gather_of(t: Any, ans: Any, values: Any, x: Any, **params: Any) -> Any:
    return bind(select_and_gather_p, t, x, **params)


def _scatter_of(t: Any, ans: Any, first: Any, x: Any, **params: Any) -> Any:
    return bind(select_and_scatter_add_p, t, x, **params)


# linear in the first operand, constant in x: each one's rules are the two primitives
defjvp(select_and_gather_p, _gather_of, None)
defvjp(select_and_gather_p, _scatter_of, None, saves=(1,))
defjvp(select_and_scatter_add_p, _scatter_of, None)
defvjp(select_and_scatter_add_p, _gather_of, None, saves=(1,))
for _prim in (select_and_gather_p, select_and_scatter_add_p):
    defbatched_matrices(_prim, lambda *ranks: (2, 2))
