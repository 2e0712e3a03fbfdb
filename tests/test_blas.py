"""The BLAS library products call (``fg.config.blas``, ``cc.blas``) and the blocked product
that shares a one-thread library's products out over funcgrad's threads."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.backends import cc
from funcgrad.primitives import linalg

NUMPYS = cc._numpy_blas()
MKL = cc._mkl_blas()
needs_mkl = pytest.mark.skipif(MKL is None, reason="the mkl package is not installed (pip install funcgrad[mkl])")
needs_numpys = pytest.mark.skipif(NUMPYS is None, reason="NumPy's BLAS is not one native code can call")


def _one_thread_libraries() -> list[cc.Blas]:
    """MKL where it is installed, and a stand-in run everywhere: NumPy's OpenBLAS called as
    if it ran one thread a call (it threads itself as well, on threads made for the call),
    so that the blocks are cut and placed the same way without MKL."""
    found = [MKL] if MKL is not None else []
    if NUMPYS is not None:
        found.append(cc.Blas("stand-in", NUMPYS.addresses, True))
    return found


@pytest.fixture(params=_one_thread_libraries(), ids=lambda b: b.name)
def one_thread_blas(request, monkeypatch):
    monkeypatch.setattr(cc, "blas", lambda: request.param)
    return request.param


def test_the_choice_is_checked() -> None:
    with pytest.raises(ValueError, match="fg.config.blas: 'openblas' is not a BLAS choice"):
        fg.config.blas = "openblas"
    assert fg.config.blas in ("auto", "mkl", "numpy")


@needs_numpys
def test_numpy_chooses_numpys_own(monkeypatch) -> None:
    monkeypatch.setattr(fg.config, "blas", "numpy")
    assert cc.blas() == NUMPYS and not NUMPYS.sequential


@needs_mkl
def test_auto_chooses_mkl_where_it_is_installed_on_an_intel_cpu(monkeypatch) -> None:
    monkeypatch.setattr(fg.config, "blas", "auto")
    monkeypatch.setattr(cc, "_intel_cpu", lambda: True)
    assert cc.blas() == MKL and MKL.sequential and cc.blas_sequential()
    monkeypatch.setattr(cc, "_intel_cpu", lambda: False)  # (another vendor's: NumPy's, unless asked)
    assert cc.blas() == NUMPYS and not cc.blas_sequential()
    monkeypatch.setattr(fg.config, "blas", "mkl")
    assert cc.blas() == MKL and cc.blas_sequential()


def test_mkl_asked_for_and_missing_warns_and_uses_numpys(monkeypatch) -> None:
    monkeypatch.setattr(cc, "_mkl_blas", lambda: None)
    monkeypatch.setattr(fg.config, "blas", "mkl")
    cc._warn_no_mkl.cache_clear()
    with pytest.warns(RuntimeWarning, match="no MKL library was found"):
        assert cc.blas() == NUMPYS


def _laid_out(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "strided":  # (neither order: a copy in C order is read)
        wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
        wide[:, ::2] = x
        return wide[:, ::2]
    return x


SHAPES = [(1024, 128, 384), (128, 1024, 512), (600, 40, 13), (13, 40, 600), (64, 64, 64)]


@pytest.mark.parametrize("m,k,q", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blocks_of_rows_or_columns_give_the_product(one_thread_blas, m: int, k: int, q: int, dtype: str) -> None:
    rng = np.random.default_rng(m + k + q)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, q)).astype(dtype)
    for la, lb in [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F"), ("strided", "C")]:
        x, y = _laid_out(a, la), _laid_out(b, lb)
        before = (x.copy(), y.copy())
        got = linalg._blocked(x, y)
        assert got is not None and got.flags.c_contiguous
        np.testing.assert_allclose(got, a @ b, rtol=1e-4 if dtype == "float32" else 1e-12, atol=1e-4 if
                                   dtype == "float32" else 1e-12)
        np.testing.assert_array_equal(x, before[0])
        np.testing.assert_array_equal(y, before[1])


def test_a_matrix_times_its_transpose_is_symmetric(one_thread_blas) -> None:
    x = np.random.default_rng(0).standard_normal((300, 70))
    for product in (linalg._blocked(x, x.T), linalg._blocked(x.T, x)):
        np.testing.assert_array_equal(product, product.T)  # (syrk's upper triangle copied down)
    np.testing.assert_allclose(linalg._blocked(x, x.T), x @ x.T, rtol=1e-12, atol=1e-12)


def test_the_result_goes_where_it_is_asked(one_thread_blas) -> None:
    a, b = np.ones((40, 30), np.float32), np.ones((30, 20), np.float32)
    out = np.empty((40, 20), np.float32)
    assert linalg._blocked(a, b, out) is out and (out == 30).all()
    assert linalg._blocked(a, b, np.empty((20, 40), np.float32).T) is None  # (not C-ordered: NumPy's)
    assert linalg._blocked(a[:1], b) is None  # (a row vector: gemv's, NumPy's)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 90), k=st.integers(1, 90), q=st.integers(1, 90), dtype=st.sampled_from(["float32", "float64"]),
       la=st.sampled_from(["C", "F", "strided"]), lb=st.sampled_from(["C", "F", "strided"]))
def test_products_through_fg_match_numpy(m: int, k: int, q: int, dtype: str, la: str, lb: str) -> None:
    """Whatever library ``cc.blas`` picks here, eager ``@`` and ``linear`` agree with NumPy's
    product, and compiled ones with eager ones."""
    rng = np.random.default_rng(m * 10_000 + k * 100 + q)
    a = _laid_out(rng.standard_normal((m, k)).astype(dtype), la)
    b = _laid_out(rng.standard_normal((k, q)).astype(dtype), lb)
    tol = 1e-4 if dtype == "float32" else 1e-12
    eager = np.asarray(fg.asarray(a) @ fg.asarray(b))
    np.testing.assert_allclose(eager, a @ b, rtol=tol, atol=tol)
    compiled = np.asarray(fg.compile(lambda x, y: x @ y)(fg.asarray(a), fg.asarray(b)))
    np.testing.assert_allclose(compiled, eager, rtol=tol, atol=tol)
    linear = np.asarray(fg.nn.functional.linear(fg.asarray(a), fg.asarray(np.ascontiguousarray(b.T))))
    np.testing.assert_allclose(linear, a @ b, rtol=tol, atol=tol)


@needs_mkl
def test_mkl_runs_one_thread_a_call_and_leaves_its_setting_as_it_was(monkeypatch) -> None:
    """The shim sets MKL's thread count for the calling thread to 1 around each call and puts
    it back: MKL's own setting, which other users of MKL in the process read, is unchanged."""
    monkeypatch.setattr(fg.config, "blas", "mkl")
    library = ctypes.CDLL(cc._mkl_paths()[0])
    before = library.MKL_Get_Max_Threads()
    x = fg.asarray(np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32))
    (x @ x.T).numpy()
    (x @ x).numpy()
    assert library.MKL_Get_Max_Threads() == before


@needs_mkl
def test_the_environment_variable_chooses() -> None:
    code = "from funcgrad.backends import cc; print(cc.blas().name)"
    for choice, name in (("numpy", "numpy"), ("mkl", "mkl"), ("auto", "mkl" if cc._intel_cpu() else "numpy")):
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "FUNCGRAD_BLAS": choice},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.split() == [name], done.stderr
