"""Advanced indexing: gather (``x[int_array]``) and scatter (``x.at[...]``).

An index is kept as a *template*: one entry per index position, each
``("s", start, stop, step)`` for a slice, ``("i", n)`` for an int, ``("n",)``
for ``None`` or ``("a",)`` where an index array (an operand) goes. Templates
are hashable, print well, and rebuild into the tuple the kernel indexes with.
Shapes follow NumPy's rules for mixing slices and arrays.
"""


from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import cc
from ..dtypes import int64
from ..errors import DTypeError, ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import axis_size, batch_by_loop, to_front, with_batch
from .checks import broadcast_shapes, common_device, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .domains import Domain

__all__ = ["gather_p", "scatter_p", "searchsorted_p", "build_index", "indexed_shape", "SCATTER_MODES"]


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


def _zeros_like(x: Any, like: Any) -> Any:
    return lax.zeros(like, x.shape, x.dtype)


def _gather_rule(x: ShapedArray, *indices: ShapedArray, template: Template) -> ShapedArray:
    _check_indices("gather", indices)
    shape = indexed_shape("gather", x.shape, template, [ix.shape for ix in indices])
    return ShapedArray(shape, x.dtype, common_device("gather", (x,) + indices))


def _gather(xp: Any, x: Any, *indices: Any, template: Template) -> Any:
    out = x[build_index(template, indices)]
    return out.copy() if out.base is not None else out  # never alias the input's buffer


gather_p = Primitive("gather", _gather_rule, kernel=_gather, torch_name="Index")
defjvp(gather_p, lambda t, ans, x, *idx, template: bind(gather_p, t, *idx, template=template))
defvjp(gather_p, lambda g, ans, x, *idx, template: bind(
    scatter_p, _zeros_like(x, g), g, *idx, template=template, mode="add"), saves="args")  # type: ignore[has-type]


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


def _scatter(xp: Any, x: Any, values: Any, *indices: Any, template: Template, mode: str, out: Any = None) -> Any:
    """``x`` with ``values`` put or combined at the index, in new memory or in ``out``
    (``Primitive.updates``: ``x``'s own buffer, which then is not copied)."""
    if out is None:
        out = x.copy()
    elif out is not x:
        out[...] = x
    index = build_index(template, indices)
    if mode == "set":
        out[index] = values
    elif _basic(index):  # slices and integers pick each element once
        out[index] = getattr(xp, _UFUNC[mode])(out[index], values)
    elif mode == "add" and _native_add_rows(xp, out, index, values):
        pass
    elif mode == "add" and _rows_into_zeros(xp, out, index):
        _add_rows(out, _rows_of(xp, index), values)
    else:  # ufunc.at applies every duplicate index, unlike out[index] += values
        getattr(xp, _UFUNC[mode]).at(out, index, values)
    return out


def _basic(index: Any) -> bool:
    """An index of slices, integers, ``None`` and ``...`` only: no element twice (a slice's
    gradient scatters this way), so an update of the picked elements is ``ufunc.at``'s."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts)


_ADD_ROWS_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const int64_t *restrict rows = (const int64_t *)p[0];
    const {t} *restrict values = (const {t} *)p[1];
    {t} *restrict out = ({t} *)p[2];
    const int64_t m = n[1];
    for (int64_t i = lo; i < hi; i++) {{
        {t} *restrict row = out + rows[i] * m;
        const {t} *restrict add = values + i * m;
        #pragma omp simd
        for (int64_t j = 0; j < m; j++) row[j] += add[j];
    }}
}}
"""


def _native_add_rows(xp: Any, out: Any, index: Any, values: Any) -> bool:
    """Whole rows picked by one integer array, added in the index's order (what
    ``np.add.at`` does, so the same bits) by one C loop: an embedding's gradient took 0.5 ms
    through ``_add_rows`` and 2.8 ms through ``np.add.at``. False (nothing done) where no
    compiler can be used, or the index has an entry out of range (``np.add.at`` raises)."""
    picked = _rows_of(xp, index)
    if not (cc.eager_native(xp) and picked is not None and picked.size and out.dtype in (np.float32, np.float64)
            and out.flags.c_contiguous):
        return False
    n = out.shape[0]
    rows = picked.reshape(-1).astype(np.int64)
    if rows.min() < -n or rows.max() >= n:
        return False
    rows = np.where(rows < 0, rows + n, rows)
    try:
        address = cc.loop_kernel(_ADD_ROWS_C.format(t=cc.C_TYPE_OF[out.dtype]))
    except cc.NativeBuildError:
        return False
    m = out.size // n if n else 0
    added = np.ascontiguousarray(np.broadcast_to(values, picked.shape + out.shape[1:]), out.dtype)
    cc.run(address, [rows, added.reshape(rows.size, m)], [out], [rows.size, m])
    return True


def _rows_of(xp: Any, index: Any) -> Any:
    """The integer array of an index that picks whole rows (``x[rows]``, ``x[rows, :]``), or
    None."""
    if xp is not np or not isinstance(index, tuple) or not index or not isinstance(index[0], np.ndarray):
        return None
    whole = slice(None)
    if index[0].dtype.kind not in "iu" or any(not (isinstance(p, slice) and p == whole) for p in index[1:]):
        return None
    return index[0]


def _rows_into_zeros(xp: Any, out: Any, index: Any) -> bool:
    """Whole rows picked by one integer array (an embedding's gradient), added into zeros:
    ``_add_rows`` sums them in the order ``np.add.at`` would, many times faster."""
    rows = _rows_of(xp, index)
    return rows is not None and out.ndim >= 2 and rows.size >= 64 and not out.any()


def _add_rows(out: np.ndarray, rows: np.ndarray, values: Any) -> None:
    """``np.add.at(out, rows, values)`` for ``out`` all zeros: the rows sorted stably (each
    row's values keep their order), each run summed in sequence, then added once."""
    flat = rows.reshape(-1)
    flat = np.where(flat < 0, flat + out.shape[0], flat)
    values = np.broadcast_to(values, rows.shape + out.shape[1:]).reshape(flat.size, *out.shape[1:])
    order = np.argsort(flat, kind="stable")
    picked = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], picked[1:] != picked[:-1])))
    out[picked[starts]] += np.add.reduceat(values[order], starts, axis=0)


def _scatter_gpu(xp: Any, x: Any, values: Any, *indices: Any, template: Template, mode: str) -> Any:
    if mode in ("set",):
        return _scatter(xp, x, values, *indices, template=template, mode=mode)
    import cupyx

    out = x.copy()
    index = build_index(template, indices)
    if mode == "multiply":  # CuPy has no scatter-multiply: do it exactly on the host
        host = xp.asnumpy(out)
        np.multiply.at(host, tuple(xp.asnumpy(i) if hasattr(i, "get") else i for i in index),
                       xp.asnumpy(values) if hasattr(values, "get") else values)
        return xp.asarray(host)
    getattr(cupyx, f"scatter_{mode}")(out, index, values)
    return out


# (min/max updates are checked on values distinct from those they meet)
scatter_p = Primitive("scatter", _scatter_rule, kernel=_scatter, gpu_kernel=_scatter_gpu,
                      domain=Domain(kind="distinct"), torch_name="IndexPut", updates=0)


def _scatter_jvp(i: int, t: Any, ans: Any, x: Any, values: Any, *idx: Any, template: Any, mode: str) -> Any:
    if i >= 2:
        return None
    if mode in ("set", "add"):
        if i == 0:  # x's tangent survives where it is not overwritten
            return bind(scatter_p, t, 0.0, *idx, template=template, mode="set") if mode == "set" else t
        return bind(scatter_p, _zeros_like(ans, t), t, *idx, template=template, mode=mode)
    if mode == "multiply":
        if i == 0:
            return bind(scatter_p, t, values, *idx, template=template, mode="multiply")
        return bind(scatter_p, _zeros_like(ans, t), _multiply_partials(x, values, idx, template) * t,
                    *idx, template=template, mode="add")
    share_x, share_v = _extremum_shares(ans, x, values, idx, template)
    if i == 0:
        return t * share_x
    return bind(scatter_p, _zeros_like(ans, t), t * share_v, *idx, template=template, mode="add")


def _extremum_shares(ans: Any, x: Any, values: Any, idx: Any, template: Any) -> tuple[Any, Any]:
    """min/max updates: each winner (x or an update) gets an equal share at ties."""
    won_x = lax.convert(lax.eq(x, ans), ans.dtype)
    at_pos = bind(gather_p, ans, *idx, template=template)
    won_v = lax.broadcast_to(lax.convert(lax.eq(values, at_pos), ans.dtype), at_pos.shape)
    count = bind(scatter_p, won_x, won_v, *idx, template=template, mode="add")
    return won_x / count, won_v / bind(gather_p, count, *idx, template=template)


def _multiply_partials(x: Any, values: Any, idx: Any, template: Any) -> Any:
    """For a multiply scatter, d out[p] / d v_k: x[p] times the product of the *other*
    updates at p, with no division by a zero update. Nonzero updates are multiplied in
    (``nonzero``); the other zero updates at p contribute their product, which is 1 when
    there are none, the one other zero itself (0, with its derivative) when there is
    one, and 0 otherwise. Exact to second order with any zeros and repeated indices."""
    at = bind(gather_p, x, *idx, template=template)
    v = lax.broadcast_to(values, at.shape)
    is_zero = lax.eq(v, 0.0)
    zero_v = lax.select(is_zero, v, 0.0)  # 0, but carries each zero update's derivative
    safe = lax.select(is_zero, 1.0, v)

    def at_position(updates: Any, mode: str, start: Any) -> Any:  # per update: the combined value at its position
        combined = bind(scatter_p, start, updates, *idx, template=template, mode=mode)
        return bind(gather_p, combined, *idx, template=template)

    nonzero = at_position(safe, "multiply", x)
    zero_count = lax.convert(is_zero, v.dtype)
    other_zeros = at_position(zero_count, "add", _zeros_like(x, v)) - zero_count
    other_zero_sum = at_position(zero_v, "add", _zeros_like(x, v)) - zero_v
    one_other = lax.select(lax.eq(other_zeros, 1.0), other_zero_sum, 0.0)
    zero_product = lax.select(lax.eq(other_zeros, 0.0), 1.0, one_other)
    return nonzero / safe * zero_product


def _written(picked: Any, ans: Any, idx: Any, template: Any) -> Any:
    """For a ``set`` with repeated indices, which updates were written: each position keeps
    one of them, and the others do not reach the output, so their derivative is 0. Found
    as JAX does, by setting each update's own number through the same scatter and reading
    back which number each position kept."""
    ids = lax.reshape(lax.iota(picked, picked.size), picked.shape)
    kept = bind(scatter_p, lax.zeros(ids, ans.shape), ids, *idx, template=template, mode="set")
    return lax.eq(bind(gather_p, kept, *idx, template=template), ids)


def _scatter_vjp(i: int, g: Any, ans: Any, x: Any, values: Any, *idx: Any, template: Any, mode: str) -> Any:
    if i >= 2 or (i == 1 and not hasattr(values, "shape")):
        return None
    if mode in ("set", "add"):
        if i == 0:
            return bind(scatter_p, g, 0.0, *idx, template=template, mode="set") if mode == "set" else g
        picked = bind(gather_p, g, *idx, template=template)  # summed to values' shape by the interpreter
        return picked if mode == "add" else lax.select(_written(picked, ans, idx, template), picked, 0.0)
    if mode == "multiply":
        if i == 0:
            return bind(scatter_p, g, values, *idx, template=template, mode="multiply")
        return bind(gather_p, g, *idx, template=template) * _multiply_partials(x, values, idx, template)
    share_x, share_v = _extremum_shares(ans, x, values, idx, template)
    if i == 0:
        return g * share_x
    return bind(gather_p, g, *idx, template=template) * share_v


defjvp(scatter_p, each=_scatter_jvp)
defvjp(scatter_p, each=_scatter_vjp, saves="both")


# ---- batching. With unbatched indices, a slice in front of the index takes the batch axis
# along; batched indices index each member on its own (by loop).

def _batch_position(template: Template, indices: tuple[Any, ...]) -> int:
    """Where a leading full slice's axis lands in the result: first, unless the index
    arrays are apart (NumPy then puts their broadcast shape first)."""
    advanced = [i + 1 for i, e in enumerate(template) if e[0] in "ai"]
    if any(e[0] == "a" for e in template) and advanced != list(range(advanced[0], advanced[-1] + 1)):
        return len(broadcast_shapes("gather", *(tuple(ix.shape) for ix in indices)))
    return 0


_BATCH_SLICE = ("s", None, None, None)


def _gather_batch(args: Any, dims: Any, *, template: Template) -> tuple[Any, int]:
    if any(d is not None for d in dims[1:]):
        return batch_by_loop(gather_p)(args, dims, template=template)
    out = bind(gather_p, to_front(args[0], dims[0]), *args[1:], template=(_BATCH_SLICE, *template))
    return out, _batch_position(template, args[1:])


def _scatter_batch(args: Any, dims: Any, *, template: Template, mode: str) -> tuple[Any, int]:
    if any(d is not None for d in dims[2:]):
        return batch_by_loop(scatter_p)(args, dims, template=template, mode=mode)
    (x, values, *indices), n = args, axis_size(args, dims)
    x = to_front(x, dims[0], n)
    where = _batch_position(template, tuple(indices))
    rank = len(indexed_shape("scatter", tuple(x.shape[1:]), template, [tuple(ix.shape) for ix in indices]))
    if dims[1] is not None:  # the values' batch axis where the indexed region has it
        values = lax.moveaxis(with_batch(values, dims[1], rank), (0,), (where,))
    elif where and hasattr(values, "shape"):  # a size-1 axis there, so the values line up behind it
        values = lax.expand_dims(lax.reshape(values, (1,) * (rank - values.ndim) + tuple(values.shape)), (where,))
    return bind(scatter_p, x, values, *indices, template=(_BATCH_SLICE, *template), mode=mode), 0


gather_p.batch, scatter_p.batch = _gather_batch, _scatter_batch


# ---- searchsorted: where values would go in a sorted 1-D array -----------------------------

def _searchsorted_rule(sorted_: ShapedArray, values: ShapedArray, *, side: str) -> ShapedArray:
    if len(sorted_.shape) != 1:
        raise ShapeError(f"searchsorted: the sorted array must be 1-D, got shape {fmt_shape(sorted_.shape)}")
    if sorted_.dtype is not values.dtype:
        raise DTypeError(f"searchsorted: dtypes {sorted_.dtype} and {values.dtype} differ; promote them first")
    return ShapedArray(values.shape, int64, common_device("searchsorted", (sorted_, values)))


def _searchsorted(xp: Any, sorted_: Any, values: Any, *, side: str) -> Any:
    return xp.searchsorted(sorted_, values, side=side).astype(xp.int64, copy=False)


searchsorted_p = Primitive("searchsorted", _searchsorted_rule, kernel=_searchsorted, differentiable=False)


def _searchsorted_batch(args: Any, dims: Any, *, side: str) -> tuple[Any, Any]:
    (sorted_, values), (ds, dv) = args, dims
    if ds is None:  # one sorted array: the values' batch axis is just more values
        return bind(searchsorted_p, sorted_, values, side=side), dv
    return batch_by_loop(searchsorted_p)(args, dims, side=side)


searchsorted_p.batch = _searchsorted_batch
