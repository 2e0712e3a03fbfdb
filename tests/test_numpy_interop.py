"""NumPy-style code under funcgrad's derivatives: NumPy's own functions of values being
differentiated run funcgrad's (never a silently dropped derivative), and the NumPy names
and forms that autograd's test suite exercises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad as fg
from funcgrad.testing import check_grads


@pytest.fixture(autouse=True)
def _x64():
    fg.config.update("enable_x64", True)
    yield
    fg.config.update("enable_x64", False)


BASE = np.array([0.5, 1.25, 2.0, 0.75])


@pytest.mark.parametrize("numpy_fn", [np.sum, np.prod, np.max, np.min, np.mean, np.exp, np.tanh, np.cumsum])
def test_numpy_functions_of_traced_values_differentiate_as_funcgrads(numpy_fn) -> None:
    def as_numpy(a):
        return fg.sum(numpy_fn(fg.sin(a) * BASE))

    def as_funcgrad(a):
        return fg.sum(getattr(fg, numpy_fn.__name__)(fg.sin(a) * BASE))

    x = fg.asarray([0.3, -0.7, 1.1, 0.2])
    np.testing.assert_allclose(fg.grad(as_numpy)(x).numpy(), fg.grad(as_funcgrad)(x).numpy(), rtol=1e-12)
    check_grads(as_numpy, [x], order=2)
    got = fg.vmap(fg.grad(as_numpy))(fg.stack([x, x * 2.0]))
    assert got.shape == (2, 4)


def test_numpy_functions_keep_the_tapes_derivative() -> None:
    x = fg.asarray([1.0, 2.0], requires_grad=True)
    y = np.sum(np.exp(x) * np.float64(3.0))
    assert isinstance(y, fg.Array)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.exp([1.0, 2.0]))
    assert fg.grad(lambda m: np.linalg.det(m))(fg.eye(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_numpy_functions_of_plain_arrays_stay_numpys() -> None:
    x = fg.asarray([1.0, 2.0])
    assert isinstance(np.sum(x), np.floating) and isinstance(np.exp(x), np.ndarray)
    assert isinstance(np.float64(2.0) * x, fg.Array) and isinstance(np.ones(2) * x, fg.Array)  # (the operators')


def test_numpy_functions_without_a_counterpart_or_with_out_are_refused() -> None:
    with pytest.raises(fg.ArgumentTypeError, match="funcgrad has no function"):
        fg.grad(lambda a: np.busday_count(a, a))(fg.asarray(1.0))  # (not a numerical function at all)
    with pytest.raises(fg.ArgumentTypeError, match="out="):
        fg.grad(lambda a: np.exp(a, out=np.empty(())))(fg.asarray(1.0))


def test_std_and_norms_at_zero_have_pytorchs_zero_derivative() -> None:
    torch = pytest.importorskip("torch")
    for values in ([3.5], [2.0, 2.0, 2.0], [1.0, 2.0, 4.0]):
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        torch.std(t, unbiased=False).backward()
        got = fg.grad(fg.std)(fg.asarray(values))
        np.testing.assert_allclose(got.numpy(), t.grad.numpy(), rtol=1e-12)
    with np.errstate(invalid="ignore"):
        assert fg.isnan(fg.std(fg.asarray([1.0]), ddof=1)).item()  # no degrees of freedom left: NaN, as NumPy
    for shape in [(3,), (2, 3)]:
        t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        torch.linalg.norm(t).backward()
        assert fg.grad(fg.linalg.norm)(fg.zeros(shape)).tolist() == t.grad.tolist()  # zeros, not NaN
    check_grads(fg.linalg.norm, [fg.asarray([0.3, -1.2, 2.0])], order=2)


def test_grad_takes_one_element_outputs_and_jacobians_take_numbers() -> None:
    f = lambda x: fg.sum(fg.sin(x), axis=1, keepdims=True)  # noqa: E731  (shape (1, 1), as PyTorch and autograd take)
    a = fg.asarray([[0.1, 0.2, 0.3]])
    np.testing.assert_allclose(fg.grad(f)(a).numpy(), fg.jacrev(f)(a).numpy().reshape(1, 3))
    with pytest.raises(fg.ShapeError, match="one element"):
        fg.grad(lambda x: x * 2.0)(fg.ones(2))
    assert fg.jacrev(lambda x: fg.array([x, x ** 2]))(2.0).tolist() == [1.0, 4.0]


def test_dtypes_convert_when_called() -> None:
    x = fg.asarray([1.7, -2.2, 3.0])
    assert fg.int64(x).tolist() == [1, -2, 3] and fg.int64(x).dtype == fg.int64
    assert fg.float32(2).dtype == fg.float32
    assert fg.grad(lambda v: fg.float64(v) * 2.0)(fg.asarray(1.0)).item() == 2.0


finite_or_not = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, 6, elements=finite_or_not), hnp.arrays(np.float64, 6, elements=finite_or_not),
       st.booleans())
def test_isclose_and_allclose_are_numpys(a: np.ndarray, b: np.ndarray, equal_nan: bool) -> None:
    assert fg.isclose(a, b, equal_nan=equal_nan).tolist() == np.isclose(a, b, equal_nan=equal_nan).tolist()
    assert bool(fg.allclose(a, b, 1e-3, 1e-6, equal_nan)) == np.allclose(a, b, 1e-3, 1e-6, equal_nan)


def test_array_split_at_split_points_and_real_if_close() -> None:
    x = np.arange(49.0).reshape(7, 7)
    for points in ([3, 5], [0, 9], [-2]):
        for axis in (0, 1):
            got = fg.array_split(fg.asarray(x), points, axis=axis)
            assert [g.tolist() for g in got] == [w.tolist() for w in np.array_split(x, points, axis=axis)]
    z = np.array([1.0 + 1e-18j, 2.0])
    assert fg.real_if_close(z).tolist() == np.real_if_close(z).tolist() and fg.real_if_close(z).dtype == fg.float64
    assert fg.real_if_close(np.array([1.0 + 1j])).dtype == fg.complex128
    assert fg.conjugate(fg.asarray([1 + 2j])).tolist() == [1 - 2j]
