"""Sets and sorted search: the array API's ``unique_all``/``unique_counts``/``unique_inverse``/
``unique_values``, NumPy's ``unique``, and ``searchsorted``.

A unique set's size depends on the values, so the ``unique`` functions need concrete
arrays (as ``nonzero`` does); the values come out as a gather of the input at each value's
first occurrence, so a gradient reaches the input there. ``searchsorted`` is a primitive
and runs under every transform. NaNs are distinct from each other, as the array API asks
(NumPy's ``unique`` keeps one, ``equal_nan=True``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..array import Array, concrete_value
from ..errors import ConcretizationError
from ..primitives.checks import normalize_axis
from ..primitives.core import bind
from ..primitives.index import searchsorted_p
from .creation import create
from .elementwise import as_operand, promote
from .index import take
from .shape import reshape

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values", "unique", "searchsorted"]


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result."""

    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result."""

    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result."""

    values: Any
    inverse_indices: Any


def _concrete(op: str, x: Any) -> Array:
    x = as_operand(x)
    if isinstance(x, Array):
        return x
    try:
        return concrete_value(x)  # derivative tracers carry concrete values
    except ConcretizationError:
        raise ConcretizationError(f"{op}: the number of unique values depends on the values of the abstract array "
                                  f"{x.aval.str_short()}; it needs a concrete array (outside fg.compile/fg.vmap)"
                                  ) from None


def _unique(op: str, x: Any, equal_nan: bool = False) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """The values (a gather of ``x``, so differentiable), and on the host: each value's first
    index, the inverse indices (``x``'s shape) and the counts."""
    x = as_operand(x)
    host = _concrete(op, x)._host()
    flat = host.reshape(-1)
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    if ordered.size:
        new = np.empty(ordered.shape, dtype=bool)
        new[0] = True
        new[1:] = ordered[1:] != ordered[:-1]
        if equal_nan and ordered.dtype.kind == "f":  # (NaNs sort last; NumPy keeps one)
            nan = np.isnan(ordered)
            new[1:] &= ~(nan[1:] & nan[:-1])
    else:
        new = np.zeros(0, dtype=bool)  # type: ignore[assignment]
    starts = np.flatnonzero(new)
    first = order[starts]                                # stable sort: the first occurrence
    counts = np.diff(np.append(starts, ordered.size))
    inverse = np.empty(flat.shape, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    device = x.device
    values = take(reshape(x, (-1,)), create(device, lambda xp: xp.asarray(first, dtype=np.int64)))
    return values, first, inverse.reshape(host.shape), counts


def _ints(device: Any, a: np.ndarray) -> Any:
    return create(device, lambda xp: xp.asarray(a, dtype=np.int64))


def unique_all(x: Any, /) -> UniqueAllResult:
    """The sorted unique values, each one's first index in the flattened ``x``, the inverse
    indices (``values[inverse_indices]`` rebuilds ``x``) and the counts."""
    values, first, inverse, counts = _unique("unique_all", x)
    dev = values.device
    return UniqueAllResult(values, _ints(dev, first), _ints(dev, inverse), _ints(dev, counts))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The sorted unique values and how often each occurs."""
    values, _, _, counts = _unique("unique_counts", x)
    return UniqueCountsResult(values, _ints(values.device, counts))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The sorted unique values and the indices into them that rebuild ``x``."""
    values, _, inverse, _ = _unique("unique_inverse", x)
    return UniqueInverseResult(values, _ints(values.device, inverse))


def unique_values(x: Any, /) -> Any:
    """The sorted unique values of the flattened ``x``."""
    return _unique("unique_values", x)[0]


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """NumPy's ``unique``: of the flattened array, or the unique slices along ``axis``; NaNs
    collapse to one unless ``equal_nan=False``; always sorted (NumPy's ``sorted=False``
    allows any order, and sorted is one)."""
    if axis is None:
        values, first, inverse, counts = _unique("unique", ar, equal_nan=equal_nan)
    else:  # the unique slices along ``axis``, gathered from their first occurrences
        x = as_operand(ar)
        axis = normalize_axis("unique", axis, x.ndim)
        _, first, inverse, counts = np.unique(_concrete("unique", x)._host(), return_index=True, return_inverse=True,
                                              return_counts=True, axis=axis, equal_nan=equal_nan)
        values = take(x, _ints(x.device, first), axis=axis)
    extra = [_ints(values.device, a) for a, want in ((first, return_index), (inverse, return_inverse),
                                                     (counts, return_counts)) if want]
    return (values, *extra) if extra else values


def searchsorted(x1: Any, /, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Where each value of ``v`` would be inserted in the sorted 1-D ``x1`` to keep it sorted
    (``side="left"``: before equal values; ``"right"``: after). ``sorter`` sorts ``x1`` first."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x1, v = promote("searchsorted", (x1, v))
    if sorter is not None:
        x1 = take(x1, sorter)
    return bind(searchsorted_p, x1, v, side=side)
