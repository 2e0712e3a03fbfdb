"""dtypes: names, NumPy-2 promotion between arrays, weak Python scalars, defaults."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg

STANDARD = [fg.bool, fg.int8, fg.int16, fg.int32, fg.int64, fg.uint8, fg.float16, fg.float32, fg.float64]


@pytest.mark.parametrize("a,b", list(itertools.product(STANDARD, STANDARD)))
def test_promotion_between_arrays_is_numpys(a: fg.DType, b: fg.DType) -> None:
    x, y = fg.zeros((2,), a), fg.ones((2,), b)
    assert (x + y).dtype == np.result_type(a.np, b.np)
    assert fg.result_type(a, b) == np.result_type(a.np, b.np)


@pytest.mark.parametrize("d", STANDARD)
def test_weak_python_scalars(d: fg.DType) -> None:
    x = fg.ones((2,), d)
    if d.kind == "f":
        assert (x * 2.0).dtype is d and (x + 1).dtype is d
    elif d.kind in "iu":
        assert (x + 1).dtype is d
        assert (x * 2.5).dtype is fg.float32  # PyTorch/JAX default float, documented
    else:
        assert (x + 1).dtype is fg.int64 and (x & True).dtype is fg.bool


def test_bfloat16_promotion_and_arithmetic() -> None:
    b = fg.ones((2,), fg.bfloat16)
    assert (b + 1.0).dtype is fg.bfloat16
    assert (b + fg.ones((2,), fg.float16)).dtype is fg.float32
    assert (b + fg.ones((2,), fg.int8)).dtype is fg.bfloat16
    assert (b @ b).dtype is fg.bfloat16 and fg.exp(b).dtype is fg.bfloat16
    assert b.numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    assert fg.finfo(fg.bfloat16).bits == 16


def test_creation_defaults() -> None:
    assert fg.array([1.0, 2.0]).dtype is fg.float32
    assert fg.array([1, 2]).dtype is fg.int64
    assert fg.array(True).dtype is fg.bool
    assert fg.array(np.ones(2)).dtype is fg.float64  # NumPy arrays keep their dtype
    assert fg.zeros(3).dtype is fg.float32 and fg.arange(3).dtype is fg.int64 and fg.arange(3.0).dtype is fg.float32
    assert fg.full((2,), 7).dtype is fg.int64 and fg.full((2,), 7.0).dtype is fg.float32


def test_dtype_objects_compare_with_numpy_and_strings() -> None:
    assert fg.float32 == np.float32 and fg.float32 == np.dtype("float32") and fg.float32 == "float32"
    assert fg.float32 != fg.float64 and np.dtype(fg.float32) == np.float32
    assert repr(fg.int8) == "int8" and hash(fg.float32) == hash(np.dtype(np.float32))
    assert fg.isdtype(fg.float32, "real floating") and fg.isdtype(fg.int8, ("bool", "integral"))
    assert not fg.isdtype(fg.uint8, "signed integer")
    assert fg.iinfo(fg.int8).max == 127 and fg.finfo(fg.float32).eps == np.finfo(np.float32).eps
    assert fg.can_cast(fg.int8, fg.int16) and not fg.can_cast(fg.float64, fg.float32)


def test_unsupported_dtypes_raise_dtype_error() -> None:
    for bad in ["datetime64[s]", np.float128 if hasattr(np, "float128") else "timedelta64[s]", "U3", object]:
        with pytest.raises(fg.DTypeError, match="unsupported dtype|not supported|objects"):
            fg.array([1, 2], dtype=bad)
    with pytest.raises(fg.DTypeError, match="from_numpy"):
        fg.from_numpy(np.ones(2, "datetime64[s]"))


@given(st.sampled_from(STANDARD), st.sampled_from(STANDARD), st.sampled_from(["add", "multiply", "maximum"]))
def test_promoted_results_equal_numpy_values(a: fg.DType, b: fg.DType, op: str) -> None:
    xn = np.array([0, 1, 2, 3], dtype=a.np) if a.kind != "b" else np.array([0, 1, 1, 0], bool)
    yn = np.array([3, 0, 1, 1], dtype=b.np) if b.kind != "b" else np.array([1, 1, 0, 0], bool)
    got = getattr(fg, op)(fg.asarray(xn), fg.asarray(yn))
    want = getattr(np, op)(xn, yn)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_integer_division_and_float_functions_give_float32() -> None:
    assert (fg.array([1, 2]) / 2).dtype is fg.float32
    assert fg.exp(fg.array([1, 2])).dtype is fg.float32
    assert fg.mean(fg.array([1, 2])).dtype is fg.float32
    assert fg.floor(fg.array([1, 2])).dtype is fg.int64
    assert fg.sum(fg.array([1, 2], dtype=fg.int8)).dtype is fg.int64
    assert fg.sum(fg.array([True, True])).item() == 2


def test_a_dtype_is_never_equal_to_none() -> None:
    """NumPy reads ``np.dtype(None)`` as float64; ``fg.float64 == None`` is still False (the
    array API suite compares dtypes with dict lookups that may return None)."""
    assert fg.float64 != None and not (None == fg.float64)  # noqa: E711
    assert fg.float64 == "float64" and fg.float32 != "spam"
