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


@pytest.fixture
def x64():
    """64-bit mode, switched off again after the test."""
    fg.config.update("enable_x64", True)
    yield
    fg.config.update("enable_x64", False)


def test_64_bit_mode_computes_what_numpy_computes(x64) -> None:
    """``fg.config.update("enable_x64", True)``: NumPy-style code gets NumPy's float64 where
    the default mode gives float32, and the same values as NumPy."""
    assert fg.config.x64_enabled and fg.get_default_dtype() is fg.float64
    for made, want in ((fg.zeros(3), np.zeros(3)), (fg.ones((2, 2)), np.ones((2, 2))), (fg.eye(2), np.eye(2)),
                       (fg.linspace(0, 1, 5), np.linspace(0, 1, 5)), (fg.arange(3.0), np.arange(3.0)),
                       (fg.array([0.1, 0.2]), np.array([0.1, 0.2])), (fg.log(2 * np.pi), np.log(2 * np.pi)),
                       (fg.exp(fg.arange(3)), np.exp(np.arange(3))), (fg.arange(3) * 2.5, np.arange(3) * 2.5),
                       (fg.asarray(1 + 2j), np.asarray(1 + 2j)), (fg.mean(fg.arange(4)), np.mean(np.arange(4)))):
        assert made.dtype == want.dtype, (made, want)
        np.testing.assert_array_equal(made.numpy(), want)
    assert fg.rand(2).dtype is fg.float64 and fg.nn.Linear(2, 3).weight.dtype is fg.float64
    assert fg.array([1.0], dtype=fg.float32).dtype is fg.float32  # (an explicit dtype wins)
    assert (fg.ones(2, dtype=fg.float32) * 2.5).dtype is fg.float32  # (Python floats stay weak)
    assert fg.__array_namespace_info__().default_dtypes()["real floating"] is fg.float64


def test_64_bit_mode_switches_back_and_from_the_environment() -> None:
    fg.config.update("jax_enable_x64", True)  # (JAX's spelling)
    fg.config.update("jax_enable_x64", False)
    assert fg.zeros(2).dtype is fg.float32 and fg.array([0.5]).dtype is fg.float32
    with pytest.raises(AttributeError, match="no switch named 'spam'"):
        fg.config.update("spam", True)
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import funcgrad as fg; print(fg.zeros(1).dtype, fg.config.x64_enabled)"],
                         env={**__import__("os").environ, "FUNCGRAD_ENABLE_X64": "1"}, capture_output=True, text=True)
    assert out.stdout.split() == ["float64", "True"], out.stderr


def test_set_default_dtype_is_pytorchs() -> None:
    fg.set_default_dtype(fg.float64)
    try:
        assert fg.get_default_dtype() is fg.float64 and fg.tensor([1.5]).dtype is fg.float64
        assert fg.zeros(2).dtype is fg.float64 and not fg.config.x64_enabled
    finally:
        fg.set_default_dtype(fg.float32)
    assert fg.tensor([1.5]).dtype is fg.float32
    with pytest.raises(fg.DTypeError, match="float32 or float64"):
        fg.set_default_dtype(fg.int32)


@pytest.mark.parametrize("make", [fg.zeros, fg.ones, fg.empty])
def test_creation_takes_numpys_and_pytorchs_forms(make) -> None:
    assert make(2, 3, dtype=fg.double).dtype is fg.float64 and make(2, 3, dtype=fg.double).shape == (2, 3)
    assert make((2, 3), fg.int32).dtype is fg.int32 and make((2, 3), "float64").dtype is fg.float64
    assert make(4).shape == (4,) and make(()).shape == () and make([2, 1]).shape == (2, 1)
    assert make((2,), None).dtype is fg.float32
    with pytest.raises(TypeError, match="dtype is given twice"):
        make(2, fg.float32, dtype=fg.float64)
    with pytest.raises(TypeError, match="missing the shape"):
        make()
