"""Values at the edges where funcgrad once disagreed with NumPy and PyTorch: infinite
norms, variance without degrees of freedom, negating bools, softmax of a row holding
+inf, and NaN in bfloat16 sorts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.nn.functional as F

inf, nan = math.inf, math.nan


@pytest.mark.parametrize("p", [inf, -inf, 1.0, 2.0, 3.0])
def test_normalize_with_every_p(p: float) -> None:
    x = np.array([[1.0, -3.0, 0.5], [0.0, 0.0, 0.0], [2.0, 2.0, -4.0]])
    got = F.normalize(fg.asarray(x), p=p).numpy()
    norm = np.linalg.norm(x, ord=p, axis=1, keepdims=True) if p not in (inf, -inf) else \
        (np.max if p > 0 else np.min)(np.abs(x), axis=1, keepdims=True)
    np.testing.assert_allclose(got, x / np.maximum(norm, 1e-12), rtol=1e-12)
    assert got[0, 1] != x[0, 1] or p == -inf  # never the input unchanged


@pytest.mark.parametrize("values,ddof", [([1.0, 2.0], 2), ([1.0, 2.0], 5), ([1.0, 1.0], 2), ([3.0], 1)])
def test_variance_without_degrees_of_freedom(values: list[float], ddof: int) -> None:
    """inf for a positive sum of squares, NaN for 0/0: NumPy's and PyTorch's answers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_var = np.var(np.asarray(values), ddof=ddof)
        got = fg.var(fg.asarray(values, dtype=fg.float64), ddof=ddof)
        got_std = fg.std(fg.asarray(values, dtype=fg.float64), ddof=ddof)
    np.testing.assert_equal(got.item(), want_var)
    np.testing.assert_equal(got_std.item(), np.sqrt(want_var))
    assert got.dtype is fg.float64


def test_negating_a_bool_array_is_refused() -> None:
    with pytest.raises(fg.DTypeError, match="negative.*bool"):
        -fg.array([True, False])
    with pytest.raises(TypeError):
        fg.negative(fg.array(True))
    assert (~fg.array([True])).tolist() == [False]
    assert (-fg.array([1, 2])).tolist() == [-1, -2]


@pytest.mark.parametrize("row", [[inf, 1.0], [-inf, -inf], [-inf, 1.0], [nan, 1.0], [inf, inf], [1.0, 2.0]])
def test_softmax_rows_with_infinities_match_pytorch(row: list[float]) -> None:
    """PyTorch's rule: softmax is exp(x - max) / sum, so a row with +inf (or NaN, or only
    -inf) is NaN throughout; -inf beside finite values is a zero probability."""
    x = np.asarray([row])
    with np.errstate(invalid="ignore"):
        shifted = x - x.max(axis=1, keepdims=True)
        want_log = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = F.softmax(fg.asarray(x, dtype=fg.float64), dim=1).numpy()
        got_log = F.log_softmax(fg.asarray(x, dtype=fg.float64), dim=1).numpy()
    np.testing.assert_allclose(got, np.exp(want_log), rtol=1e-12)
    np.testing.assert_allclose(got_log, want_log, rtol=1e-12)
    try:
        import torch
    except ImportError:
        return
    np.testing.assert_allclose(got, torch.softmax(torch.tensor(x), 1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_log, torch.log_softmax(torch.tensor(x), 1).numpy(), rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.sampled_from([nan, inf, -inf, 0.0, -0.0, 1.5, -2.0, 3.0]), min_size=1, max_size=7),
       dtype=st.sampled_from(["bfloat16", "float16", "float32", "float64"]), descending=st.booleans())
def test_nan_sorts_last_for_every_dtype(values: list[float], dtype: str, descending: bool) -> None:
    """Ascending sorts put NaN last (descending ones first, as PyTorch's), in every float
    dtype, bfloat16 included; argsort agrees with sort."""
    dt = getattr(fg, dtype)
    x = fg.asarray(np.asarray(values), dtype=dt)
    got = fg.sort(x, descending=descending).astype(fg.float64).numpy()
    want = np.sort(np.asarray(values, np.float64))  # NaN last
    if descending:
        want = np.concatenate([want[np.isnan(want)], np.sort(want[~np.isnan(want)])[::-1]])
    np.testing.assert_array_equal(got, want)
    order = fg.argsort(x, descending=descending).numpy()
    np.testing.assert_array_equal(x.astype(fg.float64).numpy()[order], want)
