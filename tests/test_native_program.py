"""A whole small program as one native function, and a scan's steps as one native loop
(``transforms/compiler/native_program.py``): the same bits as the step-by-step code, inputs
left as they were, the memory peak no higher than eager evaluation's."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.backends import cc
from funcgrad.transforms.compiler import native_program

from .backends import blas, compile_backend

pytestmark = [
    pytest.mark.skipif(not any(os.path.exists(os.path.join(p, c)) for p in os.environ["PATH"].split(":")
                               for c in ("cc", "gcc", "clang")), reason="no C compiler"),
    pytest.mark.skipif(cc.blas() is None, reason="NumPy's BLAS is not one a native program can call"),
]


def _rnn_loss(w: fg.Array, xs: fg.Array) -> fg.Array:
    h = fg.zeros((xs.shape[1], w.shape[0]), dtype=w.dtype)
    for t in range(xs.shape[0]):
        h = fg.tanh(h @ w + xs[t])
    return h.sum()


def _data(dtype: str, steps: int = 6) -> tuple[fg.Array, fg.Array]:
    rng = np.random.default_rng(3)
    return (fg.asarray((rng.standard_normal((12, 12)) * 0.3).astype(dtype)),
            fg.asarray(rng.standard_normal((steps, 5, 12)).astype(dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_unrolled_rnn_gradient_is_one_native_call(dtype: str) -> None:
    w, xs = _data(dtype)
    with compile_backend("c"):
        g = fg.compile(fg.grad(_rnn_loss))
        assert fg.config.write_guard  # (the suite's: each input compared after the call)
        got = np.asarray(g(w, xs))
        source = g.lower(w, xs).source
        eager = np.asarray(fg.grad(_rnn_loss)(w, xs))
    assert "native program" in source and source.count("CALL") == 1 and "matmul" not in source.split("return")[-1]
    with compile_backend("numpy"):
        want = np.asarray(fg.compile(fg.grad(_rnn_loss))(w, xs))
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-12)
    np.testing.assert_allclose(got, eager, rtol=1e-4 if dtype == "float32" else 1e-12)


# Programs of products, transposes, slices, sums and IEEE arithmetic: NumPy's bits exactly,
# so the native program must equal NumPy's lowering bit for bit.
def _mixed(a: fg.Array, b: fg.Array) -> fg.Array:
    s = a @ b  # gemm
    g = a.T @ a  # syrk: one matrix and its transpose
    t = (s.T @ s) * 0.5 - g  # products of views
    u = (t[1:, :] - t[:-1, :]).sum(axis=0) + (b * 2.0).sum(axis=1)[:1]
    return (t * t).sum() + (u * 3.0).sum() + (b.T @ a.T).sum()  # (a product of two transposes)


native: list[bool] = []  # (which of the examples below ran as a native program)


@settings(max_examples=12, deadline=None)
@given(m=st.integers(2, 9), k=st.integers(2, 9), dtype=st.sampled_from(["float32", "float64"]))
def test_products_views_and_sums_give_numpys_bits(m: int, k: int, dtype: str) -> None:
    rng = np.random.default_rng(m * 10 + k)
    a = fg.asarray(rng.standard_normal((m, k)).astype(dtype))
    b = fg.asarray(rng.standard_normal((k, k)).astype(dtype))
    before = (np.asarray(a).copy(), np.asarray(b).copy())
    results = {}
    for backend in ("c", "numpy"):
        with compile_backend(backend):
            f = fg.compile(fg.value_and_grad(_mixed, argnums=(0, 1)))
            value, (ga, gb) = f(a, b)
            results[backend] = [np.asarray(value), np.asarray(ga), np.asarray(gb)]
            if backend == "c":
                native.append("native program" in f.lower(a, b).source)
    for got, want in zip(results["c"], results["numpy"]):
        if cc.blas().name == "mkl":  # (MKL's bits depend on whether an operand is read transposed: the native
            tol = 1e-4 if dtype == "float32" else 1e-12  # program reads a transpose where it lies)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(a), before[0])
    np.testing.assert_array_equal(np.asarray(b), before[1])


def test_some_of_those_programs_ran_natively() -> None:
    if not native:
        test_products_views_and_sums_give_numpys_bits()
    assert any(native)


def test_transposed_and_strided_inputs_and_a_view_returned() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal((9, 14))
    a, b = fg.asarray(base).T, fg.asarray(base[::2, ::3])  # (14, 9) in Fortran order; (5, 5) strided

    def f(a: fg.Array, b: fg.Array) -> tuple[fg.Array, fg.Array]:
        c = (a[:5, :5] @ b + 1.0) * b.T
        return (c @ c).T, c.sum(axis=0)  # (a view of a product: copied into the output)

    with compile_backend("numpy"):
        want = [np.asarray(r) for r in fg.compile(f)(a, b)]
    with compile_backend("c"), blas("numpy"):  # (the NumPy backend's products: NumPy's BLAS)
        g = fg.compile(f)
        got = [np.asarray(r) for r in g(a, b)]
        assert "native program" in g.lower(a, b).source
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(np.asarray(a), base.T)


def test_the_peak_is_no_higher_than_eager_evaluations() -> None:
    w, xs = _data("float64", steps=20)
    with compile_backend("c"):
        g = fg.compile(fg.grad(_rnn_loss))
        g(w, xs)
        assert "native program" in g.lower(w, xs).source
        stats = fg.memory
        stats.reset_peak("cpu")
        base = stats.allocated("cpu")
        g(w, xs)
        compiled = stats.max_allocated("cpu") - base
        stats.reset_peak("cpu")
        base = stats.allocated("cpu")
        fg.grad(_rnn_loss)(w, xs)
        eager = stats.max_allocated("cpu") - base
    assert 0 < compiled <= eager


def test_the_write_guard_finds_no_write() -> None:
    w, xs = _data("float32")
    with compile_backend("c"):
        before = fg.config.write_guard
        fg.config.write_guard = True
        try:
            fg.compile(fg.grad(_rnn_loss))(w, xs)
        finally:
            fg.config.write_guard = before


# ---- a scan's steps as one native loop


def _scan_loss(w: fg.Array, xs: fg.Array, c0: fg.Array, reverse: bool) -> fg.Array:
    def body(c: tuple[fg.Array, fg.Array], x: fg.Array) -> tuple[tuple[fg.Array, fg.Array], tuple[fg.Array, ...]]:
        h, acc = c
        h2 = fg.tanh(h @ w + x)
        return (h2, acc + (h2 * h2).sum(axis=0)), (h, h2 @ w.T, x, h2)  # (an input and a carry as ys too)

    (h, acc), (hs, ps, xx, again) = fg.scan(body, (c0, fg.zeros((w.shape[0],), dtype=w.dtype)), xs, reverse=reverse)
    return h.sum() + acc.sum() + (hs * ps).sum() + xx.sum() + again[0].sum()


@settings(max_examples=10, deadline=None)
@given(length=st.integers(2, 7), reverse=st.booleans(), dtype=st.sampled_from(["float32", "float64"]))
def test_a_scan_runs_as_one_native_loop_with_the_step_by_step_bits(length: int, reverse: bool, dtype: str) -> None:
    rng = np.random.default_rng(length)
    w = fg.asarray((rng.standard_normal((6, 6)) * 0.4).astype(dtype))
    xs = fg.asarray(rng.standard_normal((length, 3, 6)).astype(dtype))
    c0 = fg.asarray(rng.standard_normal((3, 6)).astype(dtype))
    f = fg.compile(fg.value_and_grad(_scan_loss, argnums=(0, 1, 2)), static_argnums=3)
    looped: list[bool] = []
    original = native_program.scan

    def spy(*args: object) -> object:
        result = original(*args)  # type: ignore[arg-type]
        looped.append(result is not None)
        return result

    with compile_backend("c"), pytest.MonkeyPatch.context() as patch:
        patch.setattr(fg.config, "write_guard", False)  # (the guard checks a step at a time, from Python)
        patch.setattr(native_program, "scan", spy)
        value, grads = f(w, xs, c0, reverse)
        assert looped and looped[0]  # (the forward scan's body is native; the backward one's, which
        # would hold more at once than eager evaluation, runs its steps from Python)
        patch.setattr(native_program, "scan", lambda *args: None)  # (each step from Python)
        value2, grads2 = fg.compile(fg.value_and_grad(_scan_loss, argnums=(0, 1, 2)), static_argnums=3)(
            w, xs, c0, reverse)
    for got, want in zip([value, *grads], [value2, *grads2]):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with compile_backend("numpy"):
        value3, grads3 = fg.value_and_grad(_scan_loss, argnums=(0, 1, 2))(w, xs, c0, reverse)
    rtol = 2e-4 if dtype == "float32" else 1e-11
    for got, want in zip([value, *grads], [value3, *grads3]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol)


def test_a_scan_of_no_steps_and_a_body_returning_a_constant_run_from_python() -> None:
    w = fg.asarray(np.eye(4, dtype=np.float32))
    with compile_backend("c"):
        h, ys = fg.scan(lambda h, x: (fg.tanh(h @ w + x), h * 2.0), fg.ones((2, 4)), fg.zeros((0, 2, 4)))
        np.testing.assert_array_equal(np.asarray(h), np.ones((2, 4)))
        assert ys.shape == (0, 2, 4)
        const = fg.asarray(np.full((2, 4), 7.0, dtype=np.float32))
        h, ys = fg.scan(lambda h, x: (fg.tanh(h @ w + x), const), fg.ones((2, 4)), fg.zeros((3, 2, 4)))
        np.testing.assert_array_equal(np.asarray(ys), np.full((3, 2, 4), 7.0))


def test_an_rnn_scan_and_its_backward_scan_both_loop_natively() -> None:
    rng = np.random.default_rng(1)
    w = fg.asarray((rng.standard_normal((32, 32)) * 0.2).astype(np.float32))
    xs = fg.asarray((rng.standard_normal((50, 8, 32)) * 0.5).astype(np.float32))

    def loss(w: fg.Array, xs: fg.Array) -> fg.Array:
        h, _ = fg.scan(lambda h, x: (fg.tanh(h @ w + x), None), fg.zeros((8, 32)), xs)
        return h.sum()

    looped: list[object] = []
    original = native_program.scan
    with compile_backend("c"), pytest.MonkeyPatch.context() as patch:
        patch.setattr(fg.config, "write_guard", False)
        patch.setattr(native_program, "scan", lambda *args: looped.append(original(*args)) or looped[-1])
        got = np.asarray(fg.compile(fg.grad(loss))(w, xs))
    with compile_backend("numpy"):
        want = np.asarray(fg.compile(fg.grad(loss))(w, xs))
    assert len(looped) == 2 and all(r is not None for r in looped)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_more_arrays_than_one_call_takes_run_step_by_step() -> None:
    rng = np.random.default_rng(2)
    w = fg.asarray(rng.standard_normal((3, 3)))
    xs = [fg.asarray(rng.standard_normal((3, 3))) for _ in range(40)]  # (41 inputs and 40 outputs)

    def f(w: fg.Array, *xs: fg.Array) -> list[fg.Array]:
        return [x @ w for x in xs]

    with compile_backend("c"), blas("numpy"):  # (NumPy's bits, below)
        g = fg.compile(f)
        got = g(w, *xs)
        assert "native program" not in g.lower(w, *xs).source
    for x, y in zip(got, xs):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y) @ np.asarray(w))
