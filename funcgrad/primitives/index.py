"""Advanced indexing: gather (``x[int_array]``), scatter (``x.at[...]``), take_along_axis.

An index is kept as a *template*: one entry per index position, each
``("s", start, stop, step)`` for a slice, ``("i", n)`` for an int, ``("n",)``
for ``None`` or ``("a",)`` where an index array (an operand) goes. Templates
are hashable, print well, and rebuild into the tuple the kernel indexes with.
Shapes follow NumPy's rules for mixing slices and arrays.
"""

from __future__ import annotations

from typing import Any

from ..errors import DTypeError, ShapeError
from .core import Primitive, ShapedArray, fmt_shape
from .rules import broadcast_shapes, common_device, normalize_axis, require_kind

__all__ = ["gather_p", "scatter_p", "take_along_axis_p", "build_index", "indexed_shape", "SCATTER_MODES"]

Template = tuple[tuple[Any, ...], ...]


def build_index(template: Template, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tuple a NumPy/CuPy kernel indexes with."""
    out: list[Any] = []
    it = iter(arrays)
    for entry in template:
        tag = entry[0]
        if tag == "s":
            out.append(slice(entry[1], entry[2], entry[3]))
        elif tag == "i":
            out.append(entry[1])
        elif tag == "n":
            out.append(None)
        else:
            out.append(next(it))
    return tuple(out)


def indexed_shape(op: str, shape: tuple[int, ...], template: Template,
                  index_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's result shape for ``x[index]`` (template already has one entry per axis, plus Nones)."""
    consumed = sum(1 for e in template if e[0] != "n")
    if consumed != len(shape):
        raise ShapeError(f"{op}: index with {consumed} entries for an array of shape {fmt_shape(shape)}")
    advanced = [i for i, e in enumerate(template) if e[0] in "ai"]
    has_arrays = any(e[0] == "a" for e in template)
    if not has_arrays:
        advanced = []
    shapes = iter(index_shapes)
    adv_shapes = [next(shapes) if template[i][0] == "a" else () for i in advanced]
    b = broadcast_shapes(op, *adv_shapes) if advanced else ()
    dims: list[Any] = []
    axis = 0
    for e in template:
        tag = e[0]
        if tag == "n":
            dims.append(1)
            continue
        n = shape[axis]
        axis += 1
        if tag == "s":
            dims.append(len(range(*slice(e[1], e[2], e[3]).indices(n))))
        elif tag == "i" and not has_arrays:
            if not -n <= e[1] < n:
                raise IndexError(f"{op}: index {e[1]} is out of bounds for axis {axis - 1} with size {n} "
                                 f"(array shape {fmt_shape(shape)})")
        else:
            dims.append("adv")
    if advanced:
        contiguous = advanced == list(range(advanced[0], advanced[-1] + 1))
        basic = [d for d in dims if d != "adv"]
        if contiguous:
            first = dims.index("adv")
            before = [d for d in dims[:first] if d != "adv"]
            return tuple(before) + b + tuple(basic[len(before):])
        return b + tuple(basic)
    return tuple(dims)


def _check_indices(op: str, indices: tuple[ShapedArray, ...]) -> None:
    for ix in indices:
        if not isinstance(ix, ShapedArray):
            raise DTypeError(f"{op}: index operands must be arrays")
        require_kind(op, ix.dtype, "iu", "an integer index array")


def _gather_rule(x: ShapedArray, *indices: ShapedArray, template: Template) -> ShapedArray:
    _check_indices("gather", indices)
    shape = indexed_shape("gather", x.shape, template, [ix.shape for ix in indices])
    return ShapedArray(shape, x.dtype, common_device("gather", (x,) + indices))


def _gather(xp: Any, x: Any, *indices: Any, template: Template) -> Any:
    out = x[build_index(template, indices)]
    return out.copy() if out.base is not None else out  # never alias the input's buffer


gather_p = Primitive("gather", _gather_rule, kernel=_gather)

SCATTER_MODES = ("set", "add", "multiply", "min", "max")
_UFUNC = {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}


def _scatter_rule(x: ShapedArray, values: Any, *indices: ShapedArray, template: Template, mode: str) -> ShapedArray:
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter: unknown mode {mode!r}; expected one of {SCATTER_MODES}")
    _check_indices("scatter", indices)
    target = indexed_shape("at[...]." + mode, x.shape, template, [ix.shape for ix in indices])
    if isinstance(values, ShapedArray):
        if values.dtype is not x.dtype:
            raise DTypeError(f"at[...].{mode}: values of dtype {values.dtype} into an array of dtype {x.dtype}")
        if broadcast_shapes(f"at[...].{mode}", values.shape, target) != target:
            raise ShapeError(f"at[...].{mode}: values of shape {fmt_shape(values.shape)} do not broadcast to the "
                             f"indexed shape {fmt_shape(target)}")
    common_device("scatter", (x, values) + indices)
    return x


def _scatter(xp: Any, x: Any, values: Any, *indices: Any, template: Template, mode: str) -> Any:
    out = x.copy()
    index = build_index(template, indices)
    if mode == "set":
        out[index] = values
    else:  # ufunc.at applies every duplicate index, unlike out[index] += values
        getattr(xp, _UFUNC[mode]).at(out, index, values)
    return out


def _scatter_gpu(xp: Any, x: Any, values: Any, *indices: Any, template: Template, mode: str) -> Any:
    if mode in ("set",):
        return _scatter(xp, x, values, *indices, template=template, mode=mode)
    import cupyx

    out = x.copy()
    index = build_index(template, indices)
    if mode == "multiply":  # CuPy has no scatter-multiply: do it exactly on the host
        host = xp.asnumpy(out)
        import numpy as np

        np.multiply.at(host, tuple(xp.asnumpy(i) if hasattr(i, "get") else i for i in index),
                       xp.asnumpy(values) if hasattr(values, "get") else values)
        return xp.asarray(host)
    getattr(cupyx, f"scatter_{mode}")(out, index, values)
    return out


scatter_p = Primitive("scatter", _scatter_rule, kernel=_scatter, gpu_kernel=_scatter_gpu)


def _take_along_axis_rule(x: ShapedArray, indices: ShapedArray, *, axis: int) -> ShapedArray:
    _check_indices("take_along_axis", (indices,))
    axis = normalize_axis("take_along_axis", axis, len(x.shape))
    if len(indices.shape) != len(x.shape):
        raise ShapeError(f"take_along_axis: indices of shape {fmt_shape(indices.shape)} need as many "
                         f"dimensions as the array of shape {fmt_shape(x.shape)}")
    others = broadcast_shapes("take_along_axis",
                              x.shape[:axis] + (1,) + x.shape[axis + 1:],
                              indices.shape[:axis] + (1,) + indices.shape[axis + 1:])
    shape = others[:axis] + (indices.shape[axis],) + others[axis + 1:]
    return ShapedArray(shape, x.dtype, common_device("take_along_axis", (x, indices)))


take_along_axis_p = Primitive("take_along_axis", _take_along_axis_rule,
                              kernel=lambda xp, x, i, *, axis: xp.take_along_axis(x, i, axis=axis))
