"""``x[index]`` and ``x.at[index]``: basic indexing is views, advanced is a gather.

``getitem`` splits an index the NumPy way. With only ints, slices, ``None``
and ``...`` it becomes one ``slice`` view, then a ``squeeze`` for the ints and an
``expand_dims`` for the ``None``s (all views). An integer array or a boolean
mask makes it a ``gather`` copy. Bounds are checked here so an out-of-range
index names the axis and the array's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..array import Array, ArrayBase, concrete_value
from ..errors import ArgumentValueError, ConcretizationError, DeviceMismatchError, DTypeError, ShapeError
from ..primitives.checks import normalize_axis
from ..primitives.core import bind, current_interpreter, fmt_shape
from ..primitives.index import SCATTER_MODES, gather_p, scatter_p
from ..primitives.shape import expand_dims_p, slice_p, squeeze_p
from .creation import asarray, create
from .elementwise import as_operand, cast_to

__all__ = ["getitem", "scatter", "take", "take_along_axis", "nonzero", "normalize_index"]


def _is_int(i: Any) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _index_array(i: Any) -> Any:
    if isinstance(i, ArrayBase):
        return i

    return asarray(i)


def normalize_index(x: Any, index: Any) -> list[Any]:
    """An index of ``x`` as one entry per axis (plus the ``None``s that add axes): ints,
    slices, ``None`` or integer index arrays, with ``...`` expanded and each boolean mask
    turned into the integer arrays of its true places (NumPy's rule). What ``x[index]``
    and ``x.at[index]`` read.

    Args:
        x: the array indexed.
        index: what follows the ``[``: an entry or a tuple of them.

    Returns:
        The entries, in order.

    Example:
        >>> x = fg.ones((2, 3, 4))
        >>> fg.normalize_index(x, (..., 0))
        [slice(None, None, None), slice(None, None, None), 0]
        >>> fg.normalize_index(x, fg.asarray([True, False]))
        [Array([0], dtype=int64, device=cpu), slice(None, None, None), slice(None, None, None)]
    """
    if not isinstance(index, tuple):
        index = (index,)
    entries: list[Any] = []
    for i in index:
        if i is None or i is Ellipsis or isinstance(i, slice) or _is_int(i):
            entries.append(int(i) if _is_int(i) else i)
        elif isinstance(i, (bool, np.bool_)):
            raise IndexError("indexing with a Python bool is not supported; use a boolean array mask")
        else:
            arr = _index_array(i)
            if arr.dtype is _dt.bool_:
                if arr.ndim == 0:
                    raise IndexError("a 0-d boolean mask is supported as the whole index only (x[mask]); "
                                     "inside a tuple use None and a slice")
                entries.append(_Mask(arr))  # a mask consumes arr.ndim axes
            elif arr.dtype.kind in "iu":
                entries.append(arr)
            else:
                raise DTypeError(f"getitem: index arrays must be integer or bool, got {arr.dtype}")
    n_ellipsis = sum(1 for e in entries if e is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(e.arr.ndim if isinstance(e, _Mask) else 1 for e in entries if e is not None and e is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices: {consumed} for an array of shape {fmt_shape(x.shape)}")
    fill = [slice(None)] * (x.ndim - consumed)
    if n_ellipsis:
        k = next(j for j, e in enumerate(entries) if e is Ellipsis)
        entries = entries[:k] + fill + entries[k + 1:]
    else:
        entries = entries + fill
    if any(isinstance(e, _Mask) for e in entries):
        entries = _expand_masks(x, entries)
    return entries


class _Mask:
    """A boolean mask among an index's entries, until its axes are known."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr


def _expand_masks(x: Any, entries: list[Any]) -> list[Any]:
    """Each mask checked against the axes it covers (NumPy's ``IndexError`` when they differ),
    then turned into one integer array per axis."""
    out: list[Any] = []
    axis = 0
    for e in entries:
        if isinstance(e, _Mask):
            covered = tuple(x.shape[axis:axis + e.arr.ndim])
            if tuple(e.arr.shape) != covered:
                raise IndexError(f"boolean index of shape {fmt_shape(tuple(e.arr.shape))} does not match the indexed "
                                 f"axes {fmt_shape(covered)} of an array of shape {fmt_shape(x.shape)} (from axis "
                                 f"{axis})")
            out.extend(nonzero(e.arr))
            axis += e.arr.ndim
        else:
            out.append(e)
            axis += e is not None
    return out


def _check_int(i: int, axis: int, shape: tuple[int, ...]) -> int:
    n = shape[axis]
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n} "
                         f"(array shape {fmt_shape(shape)})")
    return i % n


_BASIC = (int, slice, type(None), type(Ellipsis), np.integer)


def _basic_view(x: Any, index: Any) -> Any:
    """``x[index]`` by the backend's own basic indexing, when that is what the general path
    below would compute: a plain array (no history, nothing tracing) and an index of ints,
    slices, ``None`` and ``...``. Slicing is everywhere in user code (batches, columns), and
    this is one backend call instead of three view primitives. ``None`` when it does not
    apply, or the backend refuses the index (the general path then explains why)."""
    if x.__class__ is not Array or x._autograd is not None or current_interpreter.get() is not None:
        return None
    entries = index if index.__class__ is tuple else (index,)
    for e in entries:
        if not isinstance(e, _BASIC) or isinstance(e, (bool, np.bool_)):
            return None
    if Ellipsis not in entries:
        entries += (Ellipsis,)  # all-int indices give a 0-d view, not a scalar copy
    try:
        data = x._data[entries]
    except Exception:
        return None
    return Array._backend_view(x, data)


def getitem(x: Any, index: Any) -> Any:
    fast = _basic_view(x, index)
    if fast is not None:
        return fast
    x = as_operand(x)
    if getattr(index, "ndim", None) == 0 and getattr(index, "dtype", None) in (_dt.bool_, np.bool_):
        # a 0-d mask (NumPy's x[True], x[False]): a new leading axis holding x once or never
        once = bind(expand_dims_p, x, dimensions=(0,))
        return once if bool(index) else once[:0]
    entries = normalize_index(x, index)
    if any(isinstance(e, ArrayBase) for e in entries):
        return _gather(x, entries)
    # basic indexing: slice -> squeeze ints -> expand Nones (views only)
    shape = tuple(x.shape)
    spec, squeeze_dims, new_axes = [], [], []
    axis = 0
    out_pos = 0
    for e in entries:
        if e is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        n = shape[axis]
        if isinstance(e, slice):
            spec.append(e.indices(n))
            out_pos += 1
        else:
            i = _check_int(e, axis, shape)
            spec.append((i, i + 1, 1))
            squeeze_dims.append(axis)
        axis += 1
    out = x
    if any(s != (0, n, 1) for s, n in zip(spec, shape)):
        out = bind(slice_p, out, index=tuple(spec))
    if squeeze_dims:
        out = bind(squeeze_p, out, dimensions=tuple(squeeze_dims))
    if new_axes:
        out = bind(expand_dims_p, out, dimensions=tuple(new_axes))
    if out is x:  # x[...] / x[:] is a fresh view object over the same buffer, as in NumPy
        out = _same_view(x)
    return out


def _same_view(x: Any) -> Any:
    """``x[:]``: a new array object over the same buffer. One with history (``requires_grad``)
    gets it through a recorded (whole) slice, so that the gradient still flows back."""
    if x.__class__ is Array and x._autograd is None:
        return Array._view_of(x, x._layout_obj())
    if isinstance(x, Array):
        return bind(slice_p, x, index=tuple((0, n, 1) for n in x.shape))
    return x


def _template(x: Any, entries: list[Any], *, op: str) -> tuple[tuple[tuple[Any, ...], ...], list[Any]]:
    template: list[tuple[Any, ...]] = []
    arrays: list[Any] = []
    axis = 0
    for e in entries:
        if e is None:
            template.append(("n",))
            continue
        if isinstance(e, slice):
            template.append(("s", e.start, e.stop, e.step))
        elif isinstance(e, ArrayBase):
            if e.device is not x.device:
                raise DeviceMismatchError(f"{op}: index array on {e.device}, array on {x.device}")
            template.append(("a",))
            arrays.append(e)
        else:
            template.append(("i", _check_int(e, axis, tuple(x.shape))))
        axis += 1
    return tuple(template), arrays


def _gather(x: Any, entries: list[Any]) -> Any:
    template, arrays = _template(x, entries, op="getitem")
    return bind(gather_p, x, *arrays, template=template)


def scatter(x: Any, index: Any, values: Any, mode: str) -> Any:
    """``x.at[index].<mode>(values)``: a new array; ``x`` is unchanged.
    ``add``/``multiply``/``min``/``max`` apply every duplicate index; ``set`` with
    duplicates keeps one of the values (which one is unspecified, as in JAX)."""
    if mode not in SCATTER_MODES:
        raise ArgumentValueError(f"scatter: unknown mode {mode!r}; expected one of {', '.join(SCATTER_MODES)}")
    x = as_operand(x)
    entries = normalize_index(x, index)
    if any(e is None for e in entries):
        raise IndexError(f"at[...].{mode}: None (newaxis) is not allowed in an update index")
    template, arrays = _template(x, entries, op=f"at[...].{mode}")
    if isinstance(values, (bool, int, float)):
        v: Any = values
        if x.dtype.kind in "iu" and isinstance(values, float):
            raise DTypeError(f"at[...].{mode}: float value {values} into an integer array of dtype {x.dtype}")
    else:
        v = cast_to(as_operand(values), x.dtype)
    return bind(scatter_p, x, v, *arrays, template=template, mode=mode)


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """Indices of the true (non-zero) elements, one int64 array per axis. Needs concrete values."""
    x = as_operand(x)
    if not isinstance(x, Array):

        try:
            x = concrete_value(x)  # derivative tracers carry concrete values
        except ConcretizationError:
            raise ConcretizationError(
                f"nonzero (and boolean-mask indexing x[mask]): the output shape depends on the values of the "
                f"abstract array {x.aval.str_short()}; use fg.where(mask, x, 0) instead") from None

    idx = np.nonzero(x._host())
    return tuple(create(x.device, lambda xp, i=i: xp.asarray(i, dtype=np.int64)) for i in idx)


def take(x: Any, /, indices: Any, axis: int | None = None, mode: str | None = None) -> Any:
    """``np.take``: gather along one axis (the flattened array when ``axis`` is ``None``).
    Indices out of bounds raise (NumPy's ``mode="raise"``, the only ``mode`` funcgrad has)."""
    if mode not in (None, "raise"):
        raise ArgumentValueError(f"take: mode={mode!r}: funcgrad raises on indices out of bounds (mode='raise'); "
                                 "clip or wrap them first (fg.clip, %)")
    x = as_operand(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    ax = normalize_axis("take", axis, x.ndim)
    idx = _index_array(indices)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"take: indices must be integers, got {idx.dtype}")
    entries = [slice(None)] * ax + [idx] + [slice(None)] * (x.ndim - ax - 1)
    return _gather(x, entries)


def take_along_axis(x: Any, /, indices: Any, axis: int = -1) -> Any:
    x = as_operand(x)
    idx = _index_array(indices)
    if idx.ndim != x.ndim:
        raise ShapeError(f"take_along_axis: indices of shape {fmt_shape(idx.shape)} need {x.ndim} dimensions")
    ax = normalize_axis("take_along_axis", axis, x.ndim)
    for d in range(x.ndim):
        if d != ax and idx.shape[d] != x.shape[d] and 1 not in (idx.shape[d], x.shape[d]):
            raise ShapeError(f"take_along_axis: indices of shape {fmt_shape(tuple(idx.shape))} do not broadcast "
                             f"against an array of shape {fmt_shape(tuple(x.shape))} (off axis {ax})")
    # a gather: idx on the axis, and on every other axis the positions themselves (an
    # index grid, as NumPy builds it), all broadcast together
    grids = [idx if d == ax else create(x.device, lambda xp, d=d: xp.arange(x.shape[d]).reshape(
        (1,) * d + (x.shape[d],) + (1,) * (x.ndim - d - 1))) for d in range(x.ndim)]
    return _gather(x, grids)
