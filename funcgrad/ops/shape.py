"""Shape and joining functions. Views where NumPy gives views (and more: flip,
split and broadcast never copy); copies only where data must move."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes as _dt
from ..array import ArrayBase
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..primitives.checks import as_int, as_shape, normalize_axes, normalize_axis
from ..primitives.checks import broadcast_shapes as _broadcast
from ..primitives.core import bind, fmt_shape
from ..primitives.shape import (
    argsort_p,
    broadcast_to_p,
    concatenate_p,
    diagonal_p,
    expand_dims_p,
    flip_p,
    pad_p,
    reshape_p,
    slice_p,
    sort_p,
    squeeze_p,
    transpose_p,
)
from .creation import asarray, tri
from .elementwise import as_operand, astype, promote, returned_as_is, where
from .index import take, take_along_axis

__all__ = ["broadcast_shapes", "topk", "cat",
           "reshape", "resolve_shape", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
           "moveaxis",
           "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays", "flatten", "ravel",
           "flip", "diagonal", "concatenate", "concat", "stack", "hstack", "vstack", "split", "array_split", "chunk",
           "unstack", "pad", "tile", "repeat", "sort", "argsort", "triu", "tril", "roll", "atleast_1d",
           "atleast_2d", "meshgrid"]


def resolve_shape(op: str, shape: Any, size: int) -> tuple[int, ...]:
    """A shape argument as a tuple of ints, its one ``-1`` (if any) filled in so that the
    shape holds ``size`` elements (``reshape``'s and ``view``'s rule).

    Args:
        op: the operation's name, which errors give.
        shape: an int or a sequence of ints, at most one of them ``-1``.
        size: the number of elements the shape must hold.

    Returns:
        The shape. A second ``-1``, a negative size, or a shape that cannot hold ``size``
        elements raises ``ShapeError`` naming ``op``.

    Example:
        >>> fg.resolve_shape("reshape", (2, -1), 6)
        (2, 3)
    """
    shape = as_shape(op, shape, allow_unknown=True)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ShapeError(f"{op}: bad shape {shape}: at most one -1 and no other negative sizes")
    if unknown:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise ShapeError(f"{op}: cannot reshape {size} elements into shape {shape}")
        shape = shape[:unknown[0]] + (size // known,) + shape[unknown[0] + 1:]
    return shape


def reshape(x: Any, /, shape: Any, *, copy: bool | None = None) -> Any:
    """A view when the strides allow it, otherwise a copy (``x.view`` never copies)."""
    x = as_operand(x)
    new = resolve_shape("reshape", shape, x.size)
    if new == tuple(x.shape) and not copy:
        return returned_as_is(x)
    return bind(reshape_p, x, new_sizes=new)


def transpose(x: Any, /, axes: Any = None) -> Any:
    x = as_operand(x)
    perm = tuple(builtins.range(x.ndim - 1, -1, -1)) if axes is None else tuple(
        normalize_axis("transpose", a, x.ndim) for a in axes)
    return bind(transpose_p, x, permutation=perm)


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    return transpose(x, axes)


def matrix_transpose(x: Any, /) -> Any:
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 dimensions, got shape {fmt_shape(x.shape)}")
    return swapaxes(x, -1, -2)


def swapaxes(x: Any, /, axis1: int, axis2: int) -> Any:
    x = as_operand(x)
    a, b = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    perm = list(builtins.range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return bind(transpose_p, x, permutation=tuple(perm))


def moveaxis(x: Any, /, source: Any, destination: Any) -> Any:
    x = as_operand(x)
    src = [normalize_axis("moveaxis", a, x.ndim) for a in ((source,) if isinstance(source, int) else source)]
    dst = [normalize_axis("moveaxis", a, x.ndim) for a in
           ((destination,) if isinstance(destination, int) else destination)]
    order = [a for a in builtins.range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return bind(transpose_p, x, permutation=tuple(order))


def squeeze(x: Any, /, axis: Any = None) -> Any:
    x = as_operand(x)
    if axis is None:
        dims = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        if x.ndim == 0:
            raise ShapeError(f"squeeze: axis {axis!r} is out of range for a 0-d array (it has no axes)")
        dims = normalize_axes("squeeze", axis, x.ndim)
    return bind(squeeze_p, x, dimensions=dims) if dims else returned_as_is(x)


def expand_dims(x: Any, /, axis: Any = 0) -> Any:
    x = as_operand(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = x.ndim + len(axes)
    dims = normalize_axes("expand_dims", axes, out_ndim)
    return bind(expand_dims_p, x, dimensions=dims)


def broadcast_to(x: Any, /, shape: Any) -> Any:
    """A stride-0 view: broadcasting never copies."""
    x = as_operand(x)
    shape = tuple(int(d) for d in ((shape,) if isinstance(shape, int) else shape))
    if shape == tuple(x.shape):
        return returned_as_is(x)
    return bind(broadcast_to_p, x, shape=shape)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    arrays = tuple(as_operand(a) for a in arrays)
    shape = _broadcast("broadcast_arrays", *(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    return _broadcast("broadcast_shapes", *(tuple(s) for s in shapes))


def flatten(x: Any, /, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge axes ``start_dim..end_dim`` (all by default), as ``torch.flatten``; a view when possible."""
    x = as_operand(x)
    if x.ndim == 0:
        return reshape(x, (1,))
    s, e = normalize_axis("flatten", start_dim, x.ndim), normalize_axis("flatten", end_dim, x.ndim)
    return reshape(x, tuple(x.shape[:s]) + (-1,) + tuple(x.shape[e + 1:]))


def ravel(x: Any, /) -> Any:
    return reshape(x, (-1,))


def flip(x: Any, /, axis: Any = None) -> Any:
    """Reverse along ``axis`` (all axes by default) as a view with negative strides."""
    x = as_operand(x)
    return bind(flip_p, x, axes=normalize_axes("flip", axis, x.ndim))


def diagonal(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The diagonal as a view (NumPy argument order; the array API's is ``offset`` on the last two axes)."""
    x = as_operand(x)
    a1, a2 = normalize_axis("diagonal", axis1, x.ndim), normalize_axis("diagonal", axis2, x.ndim)
    return bind(diagonal_p, x, offset=int(offset), axis1=a1, axis2=a2)


def slice_axis(x: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    index = tuple((start, stop, step) if i == axis else (0, d, 1) for i, d in enumerate(x.shape))
    return bind(slice_p, x, index=index)


def concatenate(arrays: Sequence[Any], /, axis: int | None = 0, *, dtype: Any = None) -> Any:
    """Join arrays along an existing axis, as ``np.concatenate`` (``torch.cat``).

    Args:
        arrays: a list or tuple of arrays, the same shape but along ``axis``.
        axis: the axis to join along (``None``: each flattened first).
        dtype: a dtype to cast them to first (NumPy's).

    Returns:
        The joined array.

    Example:
        >>> fg.concatenate([fg.zeros(2), fg.ones(1)]).tolist()
        [0.0, 0.0, 1.0]
    """
    if isinstance(arrays, ArrayBase) or not isinstance(arrays, (list, tuple)):
        raise ArgumentTypeError(f"concatenate: expected a list or tuple of arrays, got {type(arrays).__name__}")
    if not arrays:
        raise ArgumentValueError("concatenate: needs at least one array, got an empty sequence")
    if dtype is not None:
        arrays = [astype(as_operand(a), dtype) for a in arrays]
    arrays = promote("concatenate", tuple(arrays))
    if axis is None:
        arrays = tuple(ravel(a) for a in arrays)
        axis = 0
    arrays = tuple(as_operand(a) for a in arrays)
    if builtins.any(a.ndim == 0 for a in arrays):
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis("concatenate", axis, arrays[0].ndim)
    return bind(concatenate_p, *arrays, axis=axis)


concat = concatenate


def stack(arrays: Sequence[Any], /, axis: int = 0, *, dim: int | None = None, dtype: Any = None) -> Any:
    """Join same-shape arrays along a new axis, as ``np.stack`` and ``torch.stack``.

    Args:
        arrays: a list or tuple of arrays of one shape.
        axis: where the new axis goes.
        dim: PyTorch's name for ``axis``.
        dtype: a dtype to cast them to first (NumPy's).

    Returns:
        The stacked array.

    Example:
        >>> fg.stack([fg.zeros(2), fg.ones(2)], axis=1).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    if dim is not None:
        axis = dim
    arrays = [as_operand(a) if dtype is None else astype(as_operand(a), dtype) for a in arrays]
    if not arrays:
        raise ValueError("stack: need at least one array")
    shapes = {tuple(a.shape) for a in arrays}
    if len(shapes) != 1:
        raise ShapeError(f"stack: all arrays need one shape, got {sorted(shapes)}")
    ax = normalize_axis("stack", axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrays], axis=ax)


def hstack(tup: Sequence[Any], *, dtype: Any = None) -> Any:
    """Join along the second axis (the first for 1-D arrays)."""
    arrays = [atleast_1d(a) for a in tup]
    return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup: Sequence[Any], *, dtype: Any = None) -> Any:
    """Join along the first axis, 1-D arrays as rows."""
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def atleast_1d(x: Any) -> Any:
    x = as_operand(x)
    return reshape(x, (1,)) if x.ndim == 0 else returned_as_is(x)


def atleast_2d(x: Any) -> Any:
    x = as_operand(x)
    return reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape)) if x.ndim < 2 else returned_as_is(x)


def split(x: Any, /, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """NumPy ``split``: ``n`` equal sections, or split points. Every piece is a view."""
    x = as_operand(x)
    if x.ndim == 0:
        raise ShapeError("split: a 0-d array has no axis to split (it needs at least one dimension)")
    ax = normalize_axis("split", axis, x.ndim)
    n = x.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(f"split: axis {ax} of size {n} does not divide into {k} equal sections "
                             "(use array_split or chunk for unequal pieces)")
        if k > n + _MAX_EMPTY_PIECES:  # (an empty axis divides into any count: one object per piece)
            raise ArgumentValueError(f"split: {k} sections of an axis of {n} elements: at most "
                                     f"{n + _MAX_EMPTY_PIECES} (the pieces past the elements are empty)")
        bounds = [i * (n // k) for i in builtins.range(k + 1)]
    else:
        points = [builtins.min(builtins.max(int(p) + (n if int(p) < 0 else 0), 0), n) for p in indices_or_sections]
        bounds = [0] + points + [n]
    return [slice_axis(x, ax, lo, builtins.max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


_MAX_EMPTY_PIECES = 2 ** 16


def array_split(x: Any, /, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """NumPy ``array_split``: ``sections`` nearly equal views (or, given split points, the
    pieces between them, as ``split``); sections past the axis's length are empty. A count
    that could not be made at all (``10**20``: one Python object per piece) is refused up
    front rather than exhausting memory."""
    x = as_operand(x)
    n = x.shape[normalize_axis("array_split", axis, x.ndim)]
    sections = indices_or_sections
    if isinstance(sections, (list, tuple)) or (hasattr(sections, "ndim") and sections.ndim == 1):
        return split(x, [as_int("array_split", p, "a split point", minimum=None) for p in sections], axis)
    sections = as_int("array_split", sections, "the number of sections", minimum=1)
    if sections > n + _MAX_EMPTY_PIECES:
        raise ArgumentValueError(f"array_split: {sections} sections of an axis of {n} elements: at most "
                                 f"{n + _MAX_EMPTY_PIECES} (the pieces past the elements are empty)")
    base, extra = divmod(n, sections)
    sizes = [base + (i < extra) for i in builtins.range(sections)]
    return split(x, list(np.cumsum(sizes)[:-1]), axis)


def chunk(x: Any, chunks: int, /, dim: int = 0) -> list[Any]:
    """``torch.chunk``: pieces of ``ceil(n / chunks)`` along ``dim`` (the last may be smaller); views."""
    x = as_operand(x)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    ax = normalize_axis("chunk", dim, x.ndim)
    n = x.shape[ax]
    size = -(-n // chunks) if n else 1
    return [slice_axis(x, ax, lo, builtins.min(lo + size, n)) for lo in builtins.range(0, n, size)] or [x]


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    x = as_operand(x)
    if x.ndim == 0:
        raise ShapeError("unstack: a 0-d array has no axis to unstack (it needs at least one dimension)")
    ax = normalize_axis("unstack", axis, x.ndim)
    return tuple(squeeze(slice_axis(x, ax, i, i + 1), ax) for i in builtins.range(x.shape[ax]))


def _pad_width(pad_width: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    try:
        pw = np.asarray(pad_width)
    except ValueError:  # ragged nesting
        pw = None
    if pw is None or pw.dtype.kind not in "iu":
        raise ArgumentTypeError(f"pad: pad_width must be integers (an int, a pair, or one pair per axis), "
                                f"got {pad_width!r}")
    pw = pw.astype(np.int64)
    if pw.ndim == 0:
        pw = np.full((ndim, 2), int(pw))
    elif pw.shape == (2,) or pw.shape == (1, 2):
        pw = np.broadcast_to(pw.reshape(1, 2), (ndim, 2))
    elif pw.shape == (1,):
        pw = np.full((ndim, 2), int(pw[0]))
    if pw.shape != (ndim, 2):
        raise ShapeError(f"pad: pad_width {pad_width!r} does not fit an array with {ndim} dimensions")
    return tuple((int(lo), int(hi)) for lo, hi in pw)


def pad(x: Any, /, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    x = as_operand(x)
    return bind(pad_p, x, pad_width=_pad_width(pad_width, x.ndim), mode=mode, value=constant_values)


def tile(x: Any, /, reps: Any) -> Any:
    """Repeat the whole array: a broadcast view, then one reshape copy."""
    x = as_operand(x)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(as_int("tile", r, "every repetition count") for r in reps)
    nd = builtins.max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + tuple(x.shape))
    inter = tuple(d for pair in zip(x.shape, builtins.range(nd)) for d in (1, pair[0]))
    target = tuple(d for r, s in zip(reps, x.shape) for d in (r, s))
    return reshape(broadcast_to(reshape(x, inter), target), tuple(r * s for r, s in zip(reps, x.shape)))


def repeat(x: Any, /, repeats: Any, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when ``None``)."""
    x = as_operand(x)
    if axis is None:
        x, axis = ravel(x), 0
    ax = normalize_axis("repeat", axis, x.ndim)
    if isinstance(repeats, (int, np.integer)):
        r = as_int("repeat", repeats, "the repetition count")
        expanded = expand_dims(x, ax + 1)
        target = tuple(x.shape[:ax + 1]) + (r,) + tuple(x.shape[ax + 1:])
        return reshape(broadcast_to(expanded, target),
                       tuple(x.shape[:ax]) + (x.shape[ax] * r,) + tuple(x.shape[ax + 1:]))
    counts = np.asarray(repeats.numpy() if hasattr(repeats, "numpy") else repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise ArgumentTypeError(f"repeat: repeats must be an int or a 1-d sequence of ints, got {repeats!r}")
    if counts.size == 1:  # one count for every element (NumPy broadcasts it)
        counts = np.broadcast_to(counts.reshape(-1), (x.shape[ax],))
    if counts.shape[0] != x.shape[ax]:
        raise ShapeError(f"repeat: {counts.shape[0]} repetition counts for axis {ax} of size {x.shape[ax]} "
                         f"(shape {fmt_shape(tuple(x.shape))})")
    if (counts < 0).any():
        raise ArgumentValueError(f"repeat: repetition counts must be non-negative, got {counts.tolist()}")
    return take(x, np.repeat(np.arange(x.shape[ax]), counts), axis=ax)


def sort(x: Any, /, axis: int = -1, kind: str | None = None, order: Any = None, *, descending: bool = False,
         stable: bool = True) -> Any:
    """Sorted along ``axis``, stably (every NumPy ``kind`` sorts so; ``order`` is for
    structured arrays, which funcgrad has not)."""
    _no_fields("sort", order)
    x = as_operand(x)
    return bind(sort_p, x, axis=normalize_axis("sort", axis, x.ndim), descending=bool(descending))


def argsort(x: Any, /, axis: int = -1, kind: str | None = None, order: Any = None, *, descending: bool = False,
            stable: bool = True) -> Any:
    """The indices that sort ``x`` along ``axis``, stably (any NumPy ``kind``)."""
    _no_fields("argsort", order)
    x = as_operand(x)
    return bind(argsort_p, x, axis=normalize_axis("argsort", axis, x.ndim), descending=bool(descending))


def _no_fields(op: str, order: Any) -> None:
    if order is not None:
        raise ArgumentValueError(f"{op}: order= names fields of a structured array; funcgrad arrays have none")


def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """``torch.cat``: ``concatenate`` with PyTorch's names."""
    return concatenate(tensors, axis=dim)


class TopK(NamedTuple):
    values: Any
    indices: Any


def topk(x: Any, k: int, /, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
    """The ``k`` largest (or smallest) entries along ``dim`` and their indices (``torch.topk``),
    in order; ties keep their order."""
    x = as_operand(x)
    axis = normalize_axis("topk", dim, x.ndim)
    if not 0 <= k <= (x.shape[axis] if x.ndim else 1):
        raise ShapeError(f"topk: k={k} is out of range for dim {dim} of shape {fmt_shape(tuple(x.shape))}")
    order = argsort(x, axis=axis, descending=largest)
    index = tuple(slice(0, k) if a == axis else slice(None) for a in range(x.ndim))
    indices = order[index]
    return TopK(take_along_axis(x, indices, axis=axis), indices)


def _triangle(x: Any, k: int, lower: bool) -> Any:
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"{'tril' if lower else 'triu'}: needs at least 2 dimensions, got {fmt_shape(x.shape)}")
    n, m = x.shape[-2], x.shape[-1]
    mask = tri(n, m, k if lower else k - 1, dtype=_dt.bool_, device=x.device)
    keep = mask if lower else ~mask
    return where(keep, x, asarray(0, dtype=x.dtype, device=x.device))  # (in x's dtype: a bool stays bool)


def triu(x: Any, /, k: int = 0) -> Any:
    """Upper triangle (elements on and above diagonal ``k``), zeros elsewhere."""
    return _triangle(x, k, lower=False)


def tril(x: Any, /, k: int = 0) -> Any:
    """Lower triangle (elements on and below diagonal ``k``), zeros elsewhere."""
    return _triangle(x, k, lower=True)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Rotate elements along ``axis`` (flattened when ``None``): two slices and a concatenate."""
    x = as_operand(x)
    if axis is None:
        return reshape(roll(ravel(x), shift, axis=0), x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for s, a in zip(shifts, axes):
        a = normalize_axis("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            x = concatenate([slice_axis(x, a, n - s, n), slice_axis(x, a, 0, n - s)], axis=a)
    return returned_as_is(x)


def meshgrid(*arrays: Any, indexing: str = "xy", sparse: bool = False, copy: bool = True) -> list[Any]:
    """Array API ``meshgrid`` from views: each output is a broadcast (stride-0) view;
    NumPy's ``sparse`` leaves each unbroadcast (its own axis only), and ``copy`` changes
    nothing (funcgrad arrays are never written)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = tuple(a if isinstance(a, ArrayBase) else asarray(a) for a in arrays)
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * n
        shape[axis] = a.shape[0]
        out.append(reshape(a, tuple(shape)) if sparse else broadcast_to(reshape(a, tuple(shape)), tuple(sizes)))
    return out


