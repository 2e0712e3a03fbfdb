"""Shape primitives. The view primitives only rewrite (shape, strides, offset)
over the same buffer and never run a kernel; the rest (concatenate, pad,
sort ...) compute new buffers.

A view rule receives the input's ``Layout`` (in elements) and returns the new
one; ``reshape`` alone may return ``None``, meaning no view exists and the
eager interpreter copies to a contiguous buffer first.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from ..backends import cc
from ..backends.base import flat_span, joined_view
from ..dtypes import DType, int64
from ..errors import ShapeError, ViewError
from . import lax
from .ad import defjvp, deflinear, defvjp
from .batching import axis_size, defbroadcasting, defunbatched, defvectorized, shift_axes, to_front, with_batch
from .checks import common_device, normalize_axis
from .core import ANY, Layout, Primitive, ShapedArray, bind, contiguous_strides, fmt_shape
from .domains import DISTINCT
from .index import scatter_p

__all__ = ["reshape_p", "transpose_p", "broadcast_to_p", "slice_p", "squeeze_p", "expand_dims_p",
           "flip_p", "diagonal_p", "stop_gradient_p",
           "windows_p", "windows_add_p", "concatenate_p", "pad_p", "full_p", "iota_p", "sort_p", "argsort_p",
           "view_strides", "python_slice"]


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def view_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                 new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that show ``new_shape`` over the same elements without copying, or
    ``None`` when the memory order makes that impossible (PyTorch's rule: each
    run of merged dimensions must be contiguous with itself)."""
    if _size(shape) == 0 or not shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


# ---- views: each maps a Layout to a Layout over the same buffer; ``native`` is the array
# module's own call for the same view of a raw array (lowered programs use it). Views are
# linear: the JVP applies the same view to the tangent, the VJP undoes it.

def _reshape(x: Layout, *, new_sizes: tuple[int, ...]) -> Layout | None:
    if _size(new_sizes) != _size(x.shape) or any(d < 0 for d in new_sizes):
        raise ShapeError(f"reshape: cannot reshape an array of shape {fmt_shape(x.shape)} ({_size(x.shape)} "
                         f"elements) into shape {fmt_shape(new_sizes)} ({_size(new_sizes)} elements)")
    strides = view_strides(x.shape, x.strides, new_sizes)
    return None if strides is None else Layout(new_sizes, strides, x.offset)


def _reshape_of_reshape(eqn: Any, ctx: Any) -> Any:
    """reshape(reshape(x)) is one reshape of x."""
    inner = ctx.producer(eqn.inputs[0])
    return ctx.equation(eqn.prim, [inner.inputs[0]], eqn, eqn.params) if inner is not None and \
        inner.prim is eqn.prim else None


def _reshape_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Reshape"""
    g.node("Reshape", [ins[0], g.ints(eqn.params["new_sizes"], "shape")], [out])


reshape_p = Primitive("reshape", None, view=_reshape, native=lambda xp, x, *, new_sizes: x.reshape(new_sizes),  # type: ignore[arg-type]
                      torch_name="View", simplify=_reshape_of_reshape, onnx=_reshape_onnx)
deflinear(reshape_p, lambda g, ans, x, *, new_sizes: lax.reshape(g, x.shape))
defvectorized(reshape_p, lambda x, *, new_sizes: {"new_sizes": (x.shape[0], *new_sizes)})


def strict_view(x: Layout, new_sizes: tuple[int, ...]) -> Layout:
    """``x.view(shape)``: the reshape view or a ``ViewError`` that says why and what to do."""
    layout = _reshape(x, new_sizes=new_sizes)
    if layout is None:
        raise ViewError(
            f"view: cannot view an array of shape {fmt_shape(x.shape)} with strides {x.strides} as shape "
            f"{fmt_shape(new_sizes)}: its elements are not laid out in memory in that order (a transposed or "
            "sliced array). Use .reshape(...), which copies when it must, or .contiguous().view(...)."
        )
    return layout


def _transpose(x: Layout, *, permutation: tuple[int, ...]) -> Layout:
    if sorted(permutation) != list(range(len(x.shape))):
        raise ShapeError(f"transpose: axes {permutation} are not a permutation of the "
                         f"{len(x.shape)} axes of an array of shape {fmt_shape(x.shape)}")
    return Layout(tuple(x.shape[p] for p in permutation), tuple(x.strides[p] for p in permutation), x.offset)


def _transpose_simplified(eqn: Any, ctx: Any) -> Any:
    """Two transposes are one permutation; the identity permutation is its input."""
    inner = ctx.producer(eqn.inputs[0])
    if inner is not None and inner.prim is eqn.prim:
        first, second = inner.params["permutation"], eqn.params["permutation"]
        eqn = ctx.equation(eqn.prim, [inner.inputs[0]], eqn, {"permutation": tuple(first[p] for p in second)})
    permutation = eqn.params["permutation"]
    if permutation == tuple(range(len(permutation))) and ctx.same_type(eqn.inputs[0], eqn.outputs[0]):
        return eqn.inputs[0]
    return eqn if inner is not None and inner.prim is eqn.prim else None


def _transpose_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Transpose"""
    g.node("Transpose", ins, [out], perm=list(eqn.params["permutation"]))


def _static_transpose(params: dict[str, Any], x: Any, out: Any) -> Any:
    """``x.T`` where every axis turns round (a product's transposed operand), else NumPy's
    ``transpose``: one C call either way."""
    permutation = params["permutation"]
    if permutation == tuple(reversed(range(len(permutation)))):
        return operator.attrgetter("T")
    return operator.methodcaller("transpose", permutation)


transpose_p = Primitive("transpose", None, view=_transpose,
                        native=lambda xp, x, *, permutation: x.transpose(permutation), static_view=_static_transpose,
                        torch_name="Permute", simplify=_transpose_simplified, onnx=_transpose_onnx)
deflinear(transpose_p, lambda g, ans, x, *, permutation: bind(
    transpose_p, g, permutation=tuple(int(i) for i in np.argsort(permutation))))
defvectorized(transpose_p, lambda x, *, permutation: {"permutation": (0, *shift_axes(permutation))})


def _broadcast_to(x: Layout, *, shape: tuple[int, ...]) -> Layout:
    lead = len(shape) - len(x.shape)
    if lead < 0:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {fmt_shape(x.shape)} to fewer "
                         f"dimensions {fmt_shape(shape)}")
    strides = [0] * lead
    for d, s, target in zip(x.shape, x.strides, shape[lead:]):
        if d == target:
            strides.append(s)
        elif d == 1:
            strides.append(0)
        else:
            raise ShapeError(f"broadcast_to: cannot broadcast shape {fmt_shape(x.shape)} to {fmt_shape(shape)}")
    return Layout(tuple(shape), tuple(strides), x.offset)


def _native_broadcast_to(xp: Any, x: Any, *, shape: tuple[int, ...]) -> Any:
    """NumPy's broadcast_to builds an iterator to find the strides; for a contiguous array
    they are the array's own, with 0 on every new or stretched axis (5x faster)."""
    if xp is not np or not x.flags.c_contiguous or x.size == 0:
        return xp.broadcast_to(x, shape)
    lead = len(shape) - x.ndim
    if lead < 0 or any(d != n and d != 1 for d, n in zip(x.shape, shape[lead:])):
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")  # (the view's strides would fit)
    strides = (0,) * lead + tuple(0 if d == 1 and n != 1 else s for d, s, n in zip(x.shape, x.strides, shape[lead:]))
    return np.ndarray(shape, x.dtype, buffer=x, strides=strides)


def _broadcast_to_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Expand"""
    g.node("Expand", [ins[0], g.ints(eqn.outputs[0].aval.shape, "shape")], [out])


broadcast_to_p = Primitive("broadcast_to", None, view=_broadcast_to, native=_native_broadcast_to,
                           torch_name="Expand", onnx=_broadcast_to_onnx)
deflinear(broadcast_to_p, lambda g, ans, x, *, shape: g)  # the interpreter sums g back to x's shape


def _broadcast_to_batch(args: Any, dims: Any, *, shape: tuple[int, ...]) -> tuple[Any, int]:
    x = with_batch(args[0], dims[0], len(shape))
    return bind(broadcast_to_p, x, shape=(x.shape[0], *shape)), 0


broadcast_to_p.batch = _broadcast_to_batch


def _slice_lengths(index: tuple[tuple[int, int, int], ...], shape: tuple[int, ...]) -> list[int]:
    """Each axis's length after slicing; an error for a triple that reaches outside its axis."""
    if len(index) != len(shape):
        raise ShapeError(f"slice: {len(index)} slices for an array of shape {fmt_shape(shape)}")
    lengths = []
    for (start, stop, step), n in zip(index, shape):
        length = len(range(start, stop, step))
        if length and not (0 <= start < n and 0 <= start + (length - 1) * step < n):
            raise IndexError(f"slice: ({start}, {stop}, {step}) is out of bounds for an axis of size {n}")
        lengths.append(length)
    return lengths


def _slice(x: Layout, *, index: tuple[tuple[int, int, int], ...]) -> Layout:
    """``index`` holds one normalised (start, stop, step) per axis, as slice.indices gives."""
    lengths = _slice_lengths(index, x.shape)
    offset = x.offset + sum(start * s for (start, _, _), s, n in zip(index, x.strides, lengths) if n)
    return Layout(tuple(lengths), tuple(s * step for (_, _, step), s in zip(index, x.strides)), offset)


def python_slice(start: int, stop: int, step: int) -> slice:
    """The Python slice selecting ``range(start, stop, step)`` (slice.indices' normal form
    uses -1 for "down to element 0", which a Python slice reads as "from the end")."""
    n = len(range(start, stop, step))
    if n == 0:
        return slice(0, 0)
    end = start + n * step
    return slice(start, end if end >= 0 else None, step)


def _native_slice(xp: Any, x: Any, *, index: tuple[tuple[int, int, int], ...]) -> Any:
    _slice_lengths(index, x.shape)  # as strict as the rule: Python slicing would clamp
    return x[tuple(python_slice(*t) for t in index)]


def _slice_template(index: tuple[tuple[int, int, int], ...]) -> tuple[tuple[Any, ...], ...]:
    """Normalised (start, stop, step) triples as slices NumPy reads the same way.
    (``slice.indices`` may give -1 to mean "before the start", which NumPy would
    read as the last element, so the slice is rebuilt from its first and last element.)"""
    out = []
    for start, stop, step in index:
        length = len(range(start, stop, step))
        if length == 0:
            out.append(("s", 0, 0, 1))
            continue
        last = start + (length - 1) * step
        end = last + 1 if step > 0 else (last - 1 if last > 0 else None)
        out.append(("s", start, end, step))  # type: ignore[arg-type]  # (None: to the end)
    return tuple(out)


def _scatter_into_zeros(x: Any, g: Any, template: Any, *indices: Any) -> Any:
    return bind(scatter_p, lax.zeros(g, x.shape, x.dtype), g, *indices, template=template, mode="add")


def _static_slice(params: dict[str, Any], x: Any, out: Any) -> Any:
    return operator.itemgetter(tuple(python_slice(*t) for t in params["index"]))


slice_p = Primitive("slice", None, view=_slice, native=_native_slice, static_view=_static_slice)
def _slice_transpose(g: Any, ans: Any, x: Any, *, index: tuple[tuple[int, int, int], ...]) -> Any:
    """``g`` put back where the slice took it, zeros elsewhere: a constant pad where every
    step is 1 (each element written once, JAX's transpose of a slice), else a scatter."""
    if all(step == 1 for _, _, step in index):
        widths = tuple((start, n - start - m) for (start, _, _), n, m in zip(index, x.shape, g.shape))
        return bind(pad_p, g, pad_width=widths, mode="constant", value=0)
    return _scatter_into_zeros(x, g, _slice_template(index))


deflinear(slice_p, _slice_transpose)
defvectorized(slice_p, lambda x, *, index: {"index": ((0, x.shape[0], 1), *index)})


def _squeeze(x: Layout, *, dimensions: tuple[int, ...]) -> Layout:
    for d in dimensions:
        if x.shape[d] != 1:
            raise ShapeError(f"squeeze: axis {d} of shape {fmt_shape(x.shape)} has size {x.shape[d]}, not 1")
    keep = [i for i in range(len(x.shape)) if i not in dimensions]
    return Layout(tuple(x.shape[i] for i in keep), tuple(x.strides[i] for i in keep), x.offset)


def _static_reshape(params: dict[str, Any], x: Any, out: Any) -> Any:
    """Size-1 axes in or out: a reshape, always a view."""
    return operator.methodcaller("reshape", tuple(out.shape))


def _squeeze_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Squeeze"""
    g.node("Squeeze", [ins[0], g.ints(eqn.params["dimensions"], "axes")], [out])


squeeze_p = Primitive("squeeze", None, view=_squeeze, native=lambda xp, x, *, dimensions: x.squeeze(dimensions),
                      static_view=_static_reshape, onnx=_squeeze_onnx)
deflinear(squeeze_p, lambda g, ans, x, *, dimensions: bind(expand_dims_p, g, dimensions=dimensions))  # type: ignore[has-type]
defvectorized(squeeze_p, lambda x, *, dimensions: {"dimensions": shift_axes(dimensions)})


def _expand_dims(x: Layout, *, dimensions: tuple[int, ...]) -> Layout:
    """``dimensions`` are positions in the output, sorted and non-negative."""
    shape, strides = list(x.shape), list(x.strides)
    for d in dimensions:
        if d > len(shape):
            raise ShapeError(f"expand_dims: axis {d} is out of range for the result")
        shape.insert(d, 1)
        strides.insert(d, 0)
    return Layout(tuple(shape), tuple(strides), x.offset)


def _native_expand_dims(xp: Any, x: Any, *, dimensions: tuple[int, ...]) -> Any:
    shape = list(x.shape)
    for d in dimensions:
        if not 0 <= d <= len(shape):  # (list.insert would put it at an end)
            raise ValueError(f"expand_dims: axis {d} is out of range for the result")
        shape.insert(d, 1)
    return x.reshape(shape)  # a view (inserting size-1 axes always is); xp.expand_dims is slower


def _expand_dims_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Unsqueeze"""
    g.node("Unsqueeze", [ins[0], g.ints(eqn.params["dimensions"], "axes")], [out])


expand_dims_p = Primitive("expand_dims", None, view=_expand_dims, native=_native_expand_dims,
                          static_view=_static_reshape, torch_name="Unsqueeze", onnx=_expand_dims_onnx)
deflinear(expand_dims_p, lambda g, ans, x, *, dimensions: bind(squeeze_p, g, dimensions=dimensions))
defvectorized(expand_dims_p, lambda x, *, dimensions: {"dimensions": shift_axes(dimensions)})


def _flip(x: Layout, *, axes: tuple[int, ...]) -> Layout:
    strides, offset = list(x.strides), x.offset
    for a in axes:
        if x.shape[a] > 0:
            offset += (x.shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return Layout(x.shape, tuple(strides), offset)


def _static_flip(params: dict[str, Any], x: Any, out: Any) -> Any:
    return operator.itemgetter(tuple(slice(None, None, -1) if a in params["axes"] else slice(None)
                                     for a in range(len(x.shape))))


flip_p = Primitive("flip", None, view=_flip, native=lambda xp, x, *, axes: xp.flip(x, axes), static_view=_static_flip)
deflinear(flip_p, lambda g, ans, x, *, axes: bind(flip_p, g, axes=axes))
defvectorized(flip_p, lambda x, *, axes: {"axes": shift_axes(axes)})


def _diagonal(x: Layout, *, offset: int, axis1: int, axis2: int) -> Layout:
    if axis1 == axis2:
        raise ShapeError("diagonal: axis1 and axis2 must differ")
    n1, n2 = x.shape[axis1], x.shape[axis2]
    start = x.offset
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        if length:
            start += offset * x.strides[axis2]
    else:
        length = max(0, min(n1 + offset, n2))
        if length:
            start -= offset * x.strides[axis1]
    keep = [i for i in range(len(x.shape)) if i not in (axis1, axis2)]
    return Layout(tuple(x.shape[i] for i in keep) + (length,),
                  tuple(x.strides[i] for i in keep) + (x.strides[axis1] + x.strides[axis2],), start)


def _diagonal_vjp(g: Any, ans: Any, x: Any, *, offset: int, axis1: int, axis2: int) -> Any:
    moved_shape = tuple(d for i, d in enumerate(x.shape) if i not in (axis1, axis2)) + (x.shape[axis1], x.shape[axis2])
    n = g.shape[-1]
    rows = lax.iota(g, n) + max(-offset, 0)
    cols = lax.iota(g, n) + max(offset, 0)
    template = (("s", None, None, None),) * (len(moved_shape) - 2) + (("a",), ("a",))
    filled = bind(scatter_p, lax.zeros(g, moved_shape, x.dtype), g, rows, cols, template=template, mode="add")
    return lax.moveaxis(filled, (-2, -1), (axis1, axis2))


diagonal_p = Primitive("diagonal", None, view=_diagonal, native="diagonal")
deflinear(diagonal_p, _diagonal_vjp)
defvectorized(diagonal_p, lambda x, *, axis1, axis2, **p: {"axis1": axis1 + 1, "axis2": axis2 + 1, **p})


# The identity as a view: a constant to every derivative (fg.stop_gradient, x.detach()).
stop_gradient_p = Primitive("stop_gradient", None, view=lambda x: x, differentiable=False,
                            native=lambda xp, x: x, onnx="Identity")
defbroadcasting(stop_gradient_p)


def _windows(x: Layout, *, axes: tuple[int, ...], sizes: tuple[int, ...], steps: tuple[int, ...],
             dilations: tuple[int, ...]) -> Layout:
    """Each axis in ``axes`` becomes (number of windows); window axes are appended.
    No copy: window ``w`` of axis ``a`` starts at ``w * step`` and reads every ``dilation``-th element."""
    shape, strides = list(x.shape), list(x.strides)
    extra_shape, extra_strides = [], []
    for a, k, s, d in zip(axes, sizes, steps, dilations):
        span = (k - 1) * d + 1
        if k < 1 or s < 1 or d < 1 or span > x.shape[a]:
            raise ShapeError(f"windows: a window of {k} (dilation {d}) does not fit axis {a} of size {x.shape[a]} "
                             f"(shape {fmt_shape(x.shape)})")
        shape[a] = (x.shape[a] - span) // s + 1
        strides[a] = x.strides[a] * s
        extra_shape.append(k)
        extra_strides.append(x.strides[a] * d)
    return Layout(tuple(shape) + tuple(extra_shape), tuple(strides) + tuple(extra_strides), x.offset)


def _native_windows(xp: Any, x: Any, *, axes: tuple[int, ...], sizes: tuple[int, ...], steps: tuple[int, ...],
                    dilations: tuple[int, ...]) -> Any:
    spans = tuple((k - 1) * d + 1 for k, d in zip(sizes, dilations))
    every = xp.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)  # window axes appended, in order
    index = [slice(None)] * x.ndim + [slice(None, None, d) for d in dilations]
    for a, s in zip(axes, steps):
        index[a] = slice(None, None, s)
    return every[tuple(index)]


def _windows_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Slice + Concat + Reshape"""
    # every window offset as a strided Slice of the input, stacked on a new last axis and
    # reshaped to the window axes (ONNX has no strided-view operation)
    p = eqn.params
    out_shape = eqn.outputs[0].aval.shape
    counts = [out_shape[a] for a in p["axes"]]
    taps = []
    for offsets in itertools.product(*(range(k) for k in p["sizes"])):
        starts = [o * d for o, d in zip(offsets, p["dilations"])]
        ends = [st + (c - 1) * s + 1 for st, c, s in zip(starts, counts, p["steps"])]
        piece = g.node("Slice", [ins[0], *(g.ints(v) for v in (starts, ends, p["axes"], p["steps"]))])
        taps.append(g.node("Unsqueeze", [piece, g.ints([-1], "axes")]))
    g.node("Reshape", [g.node("Concat", taps, axis=-1), g.ints(out_shape, "shape")], [out])


windows_p = Primitive("windows", None, view=_windows, native=_native_windows, onnx=_windows_onnx)
defvectorized(windows_p, lambda x, *, axes, **p: {"axes": shift_axes(axes), **p})


def _windows_add_rule(g: ShapedArray, *, shape: tuple[int, ...], axes: tuple[int, ...], sizes: tuple[int, ...],
                      steps: tuple[int, ...], dilations: tuple[int, ...]) -> ShapedArray:
    return ShapedArray(tuple(shape), g.dtype, g.device)


def _windows_add(xp: Any, g: Any, *, shape: tuple[int, ...], axes: tuple[int, ...], sizes: tuple[int, ...],
                 steps: tuple[int, ...], dilations: tuple[int, ...]) -> Any:
    """The transpose of ``windows``: add every window back where it came from (overlaps sum).
    One strided slice-add per window offset, so the Python loop is over kernel taps only;
    where a compiler can build it, one native loop adding the taps in the same order."""
    native = _native_windows_add(xp, g, shape, axes, sizes, steps, dilations)
    if native is not None:
        return native
    out = xp.zeros(shape, dtype=g.dtype)
    n = len(shape)
    counts = [g.shape[a] for a in axes]
    for offsets in itertools.product(*(range(k) for k in sizes)):
        target = [slice(None)] * n
        for a, o, s, d, c in zip(axes, offsets, steps, dilations, counts):
            start = o * d
            target[a] = slice(start, start + (c - 1) * s + 1, s)
        source = (Ellipsis,) + tuple(offsets)
        out[tuple(target)] += g[source]
    return out


def _native_windows_add(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], sizes: tuple[int, ...],
                        steps: tuple[int, ...], dilations: tuple[int, ...]) -> Any:
    """``windows_add`` as one C loop (a convolution's input gradient), for window axes that
    are the trailing ones, float32 or float64: per leading plane, per tap, every window
    position, so each output element sums its contributions in the NumPy path's order.
    None where that does not apply or no compiler can be used."""
    k, n = len(axes), len(shape)
    if not cc.eager_native(xp) or g.dtype not in (np.float32, np.float64) \
            or tuple(axes) != tuple(range(n - k, n)) or g.ndim != n + k:
        return None
    item = g.itemsize
    if any(st < 0 or st % item for st in g.strides):  # (read through its strides below: non-negative ones)
        g = np.ascontiguousarray(g)
    strides = [st // item for st in g.strides]  # g read where it lies: a transposed gradient is not copied
    counts, spatial, lead = g.shape[n - k:n], shape[n - k:], g.shape[:n - k]
    ctype = cc.C_TYPE_OF[g.dtype]
    taps = [f"t{d}" for d in range(k)]
    at = [f"p{d}" for d in range(k)]
    position = " + ".join(f"({p} * {steps[d]} + {t} * {dilations[d]}) * {int(np.prod(spatial[d + 1:]))}"
                          for d, (p, t) in enumerate(zip(at, taps)))
    source = " + ".join([*(f"{p} * {strides[n - k + d]}" for d, p in enumerate(at)),
                         *(f"{t} * {strides[n + d]}" for d, t in enumerate(taps))])
    plane = ["int64_t rest = b, offset = 0;"]  # the leading index b's element offset in g
    for d in range(n - k - 1, -1, -1):
        plane.append(f"offset += (rest % {lead[d]}) * {strides[d]}; rest /= {lead[d]};")
    loops = [f"for (int64_t {t} = 0; {t} < {sizes[d]}; {t}++)" for d, t in enumerate(taps)]
    loops += [f"for (int64_t {p} = 0; {p} < {counts[d]}; {p}++)" for d, p in enumerate(at)]
    code = (f"void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{\n"
            f"    const {ctype} *restrict g = (const {ctype} *)p[0];\n    {ctype} *restrict out = ({ctype} *)p[1];\n"
            f"    for (int64_t b = lo; b < hi; b++) {{\n        {' '.join(plane)}\n"
            f"        const {ctype} *gb = g + offset;\n        {ctype} *ob = out + b * {int(np.prod(spatial))};\n"
            f"        {' '.join(loops)}\n"
            f"            ob[{position}] += gb[{source}];\n    }}\n}}\n")
    try:
        address = cc.loop_kernel(code)
    except cc.NativeBuildError:
        return None
    memory = flat_span(np, g)[0]  # g's elements and those between them, from its first
    out = np.zeros(shape, g.dtype)
    cc.run(address, [memory], [out], [int(np.prod(shape[:n - k]))], per_element=2)
    return out


windows_add_p = Primitive("windows_add", _windows_add_rule, kernel=_windows_add)
defvectorized(windows_add_p, lambda g, *, shape, axes, **p: {"shape": (g.shape[0], *shape), "axes": shift_axes(axes),
                                                             **p})
deflinear(windows_p, lambda g, ans, x, **p: bind(windows_add_p, g, shape=tuple(x.shape), **p))
deflinear(windows_add_p, lambda g, ans, x, *, shape, **p: bind(windows_p, g, **p))


def _concatenate_rule(*xs: ShapedArray, axis: int) -> ShapedArray:
    first = xs[0]
    for x in xs[1:]:
        if x.dtype is not first.dtype:
            raise ShapeError(f"concatenate: dtypes {first.dtype} and {x.dtype} differ")
        if len(x.shape) != len(first.shape) or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis
        ):
            shapes = ", ".join(fmt_shape(x.shape) for x in xs)
            raise ShapeError(f"concatenate: shapes {shapes} differ outside axis {axis}")
    size = sum(x.shape[axis] for x in xs)
    shape = first.shape[:axis] + (size,) + first.shape[axis + 1:]
    return ShapedArray(shape, first.dtype, common_device("concatenate", xs))


def _concatenate_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Concat"""
    g.node("Concat", ins, [out], axis=int(eqn.params["axis"]))


def _concatenate(xp: Any, *xs: Any, axis: int) -> Any:
    joined = joined_view(xs, axis) if xp is np else None
    return joined if joined is not None else xp.concatenate(xs, axis=axis)


# Pieces lying next to each other in one memory join as a view of it (so its result may
# share its operands' memory: ``aliases=ANY``): q, k and v's gradients, written where a
# fused projection's heads lie (attention_grad), are the projection's gradient with no copy.
concatenate_p = Primitive("concatenate", _concatenate_rule, kernel=_concatenate, aliases=ANY,
                          onnx=_concatenate_onnx)


def _concatenate_batch(args: Any, dims: Any, *, axis: int) -> tuple[Any, int]:
    n = axis_size(args, dims)
    return bind(concatenate_p, *(to_front(a, d, n) for a, d in zip(args, dims)), axis=axis + 1), 0


concatenate_p.batch = _concatenate_batch


def _concatenate_jvp(i: int, t: Any, ans: Any, *xs: Any, axis: int) -> Any:
    parts = [t if j == i else lax.zeros(t, x.shape) for j, x in enumerate(xs)]
    return bind(concatenate_p, *parts, axis=axis)


def _concatenate_vjp(i: int, g: Any, ans: Any, *xs: Any, axis: int) -> Any:
    start = sum(x.shape[axis] for x in xs[:i])
    index = tuple((start, start + xs[i].shape[axis], 1) if a == axis else (0, d, 1) for a, d in enumerate(g.shape))
    return bind(slice_p, g, index=index)


defjvp(concatenate_p, each=_concatenate_jvp)
defvjp(concatenate_p, each=_concatenate_vjp, saves="none")


def _pad_rule(x: ShapedArray, *, pad_width: tuple[tuple[int, int], ...], mode: str, value: Any) -> ShapedArray:
    if len(pad_width) != len(x.shape) or any(lo < 0 or hi < 0 for lo, hi in pad_width):
        raise ShapeError(f"pad: pad_width {pad_width} does not fit an array of shape {fmt_shape(x.shape)}")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ValueError(f"pad: unsupported mode {mode!r}; use 'constant', 'edge', 'reflect' or 'wrap'")
    return ShapedArray(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pad_width)), x.dtype, x.device)


def _pad(xp: Any, x: Any, *, pad_width: Any, mode: str, value: Any) -> Any:
    if mode == "constant":  # (the borders filled and the centre copied: each element written once)
        out = xp.empty(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pad_width)), x.dtype)
        for axis, (lo, hi) in enumerate(pad_width):
            before = (slice(None),) * axis
            out[(*before, slice(0, lo))] = value
            out[(*before, slice(out.shape[axis] - hi, out.shape[axis]))] = value
        out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, pad_width))] = x
        return out
    return xp.pad(x, pad_width, mode=mode)


def _pad_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Pad (constant)"""
    if eqn.params["mode"] != "constant":
        g.refuse(f"pad in mode {eqn.params['mode']!r} (only 'constant' has an ONNX form here)")
    widths = eqn.params["pad_width"]
    pads = g.ints([w[0] for w in widths] + [w[1] for w in widths], "pads")
    value = g.constant(np.asarray(eqn.params["value"], np.dtype(eqn.outputs[0].aval.dtype.np)), "value")
    g.node("Pad", [ins[0], pads, value], [out], mode="constant")


pad_p = Primitive("pad", _pad_rule, kernel=_pad, onnx=_pad_onnx)
defvectorized(pad_p, lambda x, *, pad_width, **p: {"pad_width": ((0, 0), *pad_width), **p})


def _pad_sources(like: Any, shape: tuple[int, ...], pad_width: Any, mode: str) -> Any:
    """For every output element, the flat index of the input element it copies: the same
    pad applied to the input's positions."""
    size = 1
    for d in shape:
        size *= d
    return bind(pad_p, lax.reshape(lax.iota(like, size), shape), pad_width=pad_width, mode=mode, value=0)


def _pad_jvp(t: Any, ans: Any, x: Any, *, pad_width: Any, mode: str, value: Any) -> Any:
    if mode == "constant":
        return bind(pad_p, t, pad_width=pad_width, mode=mode, value=0)
    return lax.gather(lax.reshape(t, (t.size,)), _pad_sources(t, tuple(x.shape), pad_width, mode))


def _pad_vjp(g: Any, ans: Any, x: Any, *, pad_width: Any, mode: str, value: Any) -> Any:
    if mode == "constant":
        index = tuple((lo, lo + n, 1) for (lo, _), n in zip(pad_width, x.shape))
        return bind(slice_p, g, index=index)
    sources = _pad_sources(g, tuple(x.shape), pad_width, mode)
    flat = bind(scatter_p, lax.zeros(g, (x.size,), x.dtype), g, sources, template=(("a",),), mode="add")
    return lax.reshape(flat, x.shape)


defjvp(pad_p, _pad_jvp)
defvjp(pad_p, _pad_vjp, saves="none")


def _sort_rule(x: ShapedArray, *, axis: int, descending: bool) -> ShapedArray:
    normalize_axis("sort", axis, len(x.shape))
    return x


def _sortable(x: Any) -> Any:
    """NumPy's sort compares ml-dtypes' bfloat16 wrongly around NaN (it can leave the array
    unsorted); bfloat16 values sort exactly as float32, where NaN goes last."""
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


def _sort(xp: Any, x: Any, *, axis: int, descending: bool) -> Any:
    if x.dtype.name == "bfloat16":
        return _sort(xp, _sortable(x), axis=axis, descending=descending).astype(x.dtype)
    if descending:
        return xp.flip(xp.sort(xp.flip(x, axis), axis=axis, kind="stable"), axis).copy()
    return xp.sort(x, axis=axis, kind="stable")


def _argsort_rule(x: ShapedArray, *, axis: int, descending: bool) -> ShapedArray:
    normalize_axis("argsort", axis, len(x.shape))
    return ShapedArray(x.shape, int64, x.device)


def _argsort(xp: Any, x: Any, *, axis: int, descending: bool) -> Any:
    x = _sortable(x)
    if descending:  # stable among equal keys: sort the reversed array, map indices back
        n = x.shape[axis]
        return xp.flip(n - 1 - xp.argsort(xp.flip(x, axis), axis=axis, kind="stable"), axis).astype(xp.int64)
    return xp.argsort(x, axis=axis, kind="stable").astype(xp.int64, copy=False)


sort_p = Primitive("sort", _sort_rule, kernel=_sort, domain=DISTINCT)
argsort_p = Primitive("argsort", _argsort_rule, kernel=_argsort, differentiable=False)
for _prim in (sort_p, argsort_p):
    defvectorized(_prim, lambda x, *, axis, descending: {"axis": axis % (x.ndim - 1) + 1, "descending": descending})


def _inverse_permutation(idx: Any, axis: int) -> Any:
    return bind(argsort_p, idx, axis=axis, descending=False)


defjvp(sort_p, lambda t, ans, x, *, axis, descending: lax.take_along_axis(
    t, bind(argsort_p, x, axis=axis, descending=descending), axis))
defvjp(sort_p, lambda g, ans, x, *, axis, descending: lax.take_along_axis(
    g, _inverse_permutation(bind(argsort_p, x, axis=axis, descending=descending), axis), axis), saves="args")


def _full(xp: Any, like: Any, *, shape: tuple[int, ...], value: Any, dtype: DType) -> Any:
    return xp.full(shape, value, dtype=dtype.np)


def _iota(xp: Any, like: Any, *, n: int, dtype: DType) -> Any:
    return xp.arange(n, dtype=dtype.np)


full_p = Primitive("full", lambda like, *, shape, value, dtype: ShapedArray(shape, dtype, like.device), kernel=_full,
                   differentiable=False, reads_values=False)
defunbatched(full_p)
iota_p = Primitive("iota", lambda like, *, n, dtype: ShapedArray((n,), dtype, like.device), kernel=_iota,
                   differentiable=False, reads_values=False)
defunbatched(iota_p)
