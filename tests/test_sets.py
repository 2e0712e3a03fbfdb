"""unique_all/counts/inverse/values, NumPy's unique, searchsorted and to_device: against
NumPy on drawn arrays (NaNs included), the transforms, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad as fg

VALUES = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
                    elements=st.sampled_from([0.0, -1.5, 2.0, 3.0, np.nan, -0.0, 7.25]))


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_unique_functions_match_numpy(a) -> None:
    x = fg.asarray(a)
    got, want = fg.unique_all(x), np.unique_all(a)
    # (NaNs are distinct values, in an order NumPy leaves unspecified: funcgrad keeps x's)
    exact = ("values", "indices", "inverse_indices", "counts") if not np.isnan(a).any() else ("values", "counts")
    for field in exact:
        np.testing.assert_array_equal(getattr(got, field).numpy(), getattr(want, field), err_msg=field)
    values = got.values.numpy()
    np.testing.assert_array_equal(values[got.inverse_indices.numpy()], a)
    np.testing.assert_array_equal(a.reshape(-1)[got.indices.numpy()], values)
    np.testing.assert_array_equal(fg.unique_values(x).numpy(), np.unique_values(a))
    np.testing.assert_array_equal(fg.unique_counts(x).counts.numpy(), np.unique_counts(a).counts)
    np.testing.assert_array_equal(fg.unique_inverse(x).inverse_indices.numpy(), got.inverse_indices.numpy())
    values, index, inverse, counts = fg.unique(x, return_index=True, return_inverse=True, return_counts=True)
    ref = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip((values, index, inverse, counts), ref):
        np.testing.assert_array_equal(g.numpy(), w)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, st.integers(0, 8), elements=st.integers(-5, 5)),
       hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), elements=st.integers(-6, 6)),
       st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(a, v, side) -> None:
    sorter = np.argsort(a, kind="stable")
    got = fg.searchsorted(fg.asarray(a), fg.asarray(v), side=side, sorter=fg.asarray(sorter))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(a, v, side=side, sorter=sorter))
    assert got.dtype is fg.int64


def test_unique_values_carry_a_gradient_and_need_concrete_arrays() -> None:
    x = fg.asarray([2.0, 1.0, 2.0, 5.0])
    assert fg.grad(lambda v: (fg.unique_values(v) * fg.asarray([1.0, 10.0, 100.0])).sum())(x).tolist() == [
        10.0, 1.0, 0.0, 100.0]  # the first occurrence of each value
    with pytest.raises(fg.ConcretizationError, match="unique_values: the number of unique values"):
        fg.compile(fg.unique_values)(x)


def test_searchsorted_under_the_transforms() -> None:
    edges = fg.asarray([0.0, 1.0, 2.0, 3.0])
    values = fg.asarray([[0.5, 2.5], [3.5, -1.0]])
    want = np.searchsorted(edges.numpy(), values.numpy())
    assert fg.compile(lambda v: fg.searchsorted(edges, v))(values).tolist() == want.tolist()
    assert fg.vmap(lambda v: fg.searchsorted(edges, v))(values).tolist() == want.tolist()
    rows = fg.asarray([[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]])
    assert fg.vmap(lambda s: fg.searchsorted(s, fg.asarray(1.5)))(rows).tolist() == [2, 0]
    assert fg.grad(lambda v: (v * fg.searchsorted(edges, v)).sum())(values).tolist() == want.tolist()
    with pytest.raises(fg.ShapeError, match="searchsorted: the sorted array must be 1-D"):
        fg.searchsorted(fg.ones((2, 2)), fg.ones(2))
    with pytest.raises(ValueError, match="side must be"):
        fg.searchsorted(edges, values, side="middle")


def test_to_device_is_the_array_apis_to() -> None:
    x = fg.arange(3)
    assert x.to_device("cpu") is x and x.to_device(x.device).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="stream"):
        x.to_device("cpu", stream=1)


def test_block_until_ready_returns_the_array() -> None:
    x = fg.arange(3.0)
    assert x.block_until_ready() is x
