"""Hypothesis strategies for funcgrad arrays (needs ``pip install hypothesis``).

``arrays(dtype, shape)`` draws funcgrad arrays, ``shapes`` and
``broadcastable_shapes`` draw shapes, and ``float_arrays`` draws floating-point
arrays in a safe range (finite, no values whose derivative checks would drown
in rounding). Each wraps ``hypothesis.extra.numpy``.
"""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from .. import dtypes as _dt
from ..ops import asarray

__all__ = ["arrays", "shapes", "broadcastable_shapes", "float_arrays", "dtypes"]


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy[Any]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_shapes(shape: tuple[int, ...], min_dims: int = 0, max_dims: int | None = None,
                         min_side: int = 1, max_side: int | None = None) -> st.SearchStrategy[Any]:
    """Shapes that broadcast to ``shape``."""
    return hnp.broadcastable_shapes(shape, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def dtypes(kinds: str = "f") -> st.SearchStrategy[Any]:
    return st.sampled_from([d for d in _dt.all_dtypes if d.kind in kinds])


def _np_dtype(dtype: Any) -> Any:
    return _dt.as_dtype(dtype).np


def arrays(dtype: Any, shape: Any, *, elements: Any = None, device: Any = None) -> st.SearchStrategy[Any]:
    """funcgrad arrays of ``dtype`` and ``shape`` (a shape strategy is fine too)."""
    dt = _dt.as_dtype(dtype)
    if dt.kind == "f" and elements is None:
        elements = st.floats(-10, 10, allow_nan=False, width=32 if dt.itemsize <= 4 else 64)
    wide = np.float32 if dt.itemsize < 4 and dt.kind == "f" else _np_dtype(dt)
    return hnp.arrays(wide, shape, elements=elements).map(lambda a: asarray(a.astype(dt.np), device=device))


def float_arrays(shape: Any = None, dtype: Any = "float64", *, min_value: float = -3.0, max_value: float = 3.0,
                 device: Any = None) -> st.SearchStrategy[Any]:
    """Finite floating-point arrays with values in ``[min_value, max_value]``."""
    shape = shapes() if shape is None else shape
    return arrays(dtype, shape, elements=st.floats(min_value, max_value, allow_nan=False, allow_infinity=False,
                                                   width=64), device=device)
