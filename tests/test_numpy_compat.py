"""The NumPy functions built as compositions (``ops/numpy_compat.py``): each against NumPy on
random inputs, and their derivatives against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 4))
V = RNG.standard_normal(5)

CASES = [
    ("diag 1-D", lambda xp, m, v: xp.diag(v, 1)),
    ("diag 1-D below", lambda xp, m, v: xp.diag(v, -2)),
    ("diag 2-D", lambda xp, m, v: xp.diag(m, 1)),
    ("append flat", lambda xp, m, v: xp.append(m, v)),
    ("append axis", lambda xp, m, v: xp.append(m, m, axis=1)),
    ("mod", lambda xp, m, v: xp.mod(m * 5, 1.5)),
    ("fmod", lambda xp, m, v: xp.fmod(m * 5, 1.5)),
    ("diff", lambda xp, m, v: xp.diff(m, 2, axis=1)),
    ("gradient 1-D", lambda xp, m, v: xp.gradient(v, 0.5)),
    ("gradient axis", lambda xp, m, v: xp.gradient(m, axis=0)),
    ("kron", lambda xp, m, v: xp.kron(m[:2, :2], m[1:, 2:])),
    ("cross", lambda xp, m, v: xp.cross(m[:, :3], m[:, 1:])),
    ("select", lambda xp, m, v: xp.select([m > 0.5, m < -0.5], [m * 2, m * 3], 0.0)),
    ("rot90", lambda xp, m, v: xp.rot90(m)),
    ("rot90 k=3", lambda xp, m, v: xp.rot90(m, 3)),
    ("rot90 k=2", lambda xp, m, v: xp.rot90(m, 2)),
    ("rollaxis", lambda xp, m, v: xp.rollaxis(xp.reshape(m, (3, 2, 2)), 2)),
    ("flipud", lambda xp, m, v: xp.flipud(m)),
    ("fliplr", lambda xp, m, v: xp.fliplr(m)),
    ("hsplit", lambda xp, m, v: xp.hsplit(m, 2)[1]),
    ("vsplit", lambda xp, m, v: xp.vsplit(m, [1])[1]),
    ("column_stack", lambda xp, m, v: xp.column_stack([v, v * 2])),
    ("dstack", lambda xp, m, v: xp.dstack([m, m])),
    ("atleast_3d", lambda xp, m, v: xp.atleast_3d(v)),
    ("nan_to_num", lambda xp, m, v: xp.nan_to_num(xp.log(m))),
    ("sinc", lambda xp, m, v: xp.sinc(m)),
    ("logaddexp2", lambda xp, m, v: xp.logaddexp2(m, m * 2)),
    ("fabs", lambda xp, m, v: xp.fabs(m)),
    ("fmin", lambda xp, m, v: xp.fmin(xp.log(m), m)),
    ("fmax", lambda xp, m, v: xp.fmax(xp.log(m), m)),
    ("radians", lambda xp, m, v: xp.radians(m)),
    ("rad2deg", lambda xp, m, v: xp.rad2deg(m)),
    ("real", lambda xp, m, v: xp.real(m)),
    ("imag", lambda xp, m, v: xp.imag(m)),
    ("conj", lambda xp, m, v: xp.conj(m)),
    ("angle", lambda xp, m, v: xp.angle(m)),
]


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name: str, f) -> None:
    with np.errstate(all="ignore"):
        want = np.asarray(f(np, M, V))
        got = f(fg, fg.asarray(M), fg.asarray(V)).numpy()
    assert got.shape == want.shape, (name, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_partition_places_the_kth() -> None:
    got = fg.partition(fg.asarray(V), 2).numpy()
    assert got[2] == np.partition(V, 2)[2] and (got[:2] <= got[2]).all() and (got[3:] >= got[2]).all()


DIFFERENTIABLE = ["diag 1-D", "diag 2-D", "append flat", "diff", "gradient axis", "kron", "cross", "select", "rot90",
                  "dstack", "sinc", "logaddexp2", "fabs", "radians"]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_derivatives(name: str) -> None:
    f = dict(CASES)[name]
    check_grads(lambda m, v: f(fg, m, v), (fg.asarray(M), fg.asarray(V)), order=2)


@given(st.floats(-3, 3).filter(lambda x: abs(x) > 1e-3))
def test_sinc_and_its_derivative_at_and_near_zero(x: float) -> None:
    np.testing.assert_allclose(fg.sinc(fg.asarray(np.float64(x))).item(), np.sinc(x), rtol=1e-12)
    zero = fg.asarray(np.float64(0.0))
    assert fg.sinc(zero).item() == 1.0 and fg.grad(fg.sinc)(zero).item() == 0.0


def test_trace_is_numpys_for_arrays_and_the_program_for_functions() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x = fg.asarray(a)
    for args, kwargs in [((), {}), ((1,), {}), ((), {"offset": -1, "axis1": 1, "axis2": 2}), ((0, 2, 0), {})]:
        np.testing.assert_allclose(fg.trace(x, *args, **kwargs).numpy(), np.trace(a, *args, **kwargs))
    g = fg.grad(lambda m: fg.trace(m, 1, 1, 2).sum())(x).numpy()
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(3, 4, 1), (2, 3, 4)))
    assert isinstance(fg.trace(lambda v: v * 2)(x), fg.Program)


def test_clip_takes_numpys_keywords() -> None:
    x = fg.arange(6.0)
    assert fg.clip(x, a_min=1.0, a_max=4.0).tolist() == np.clip(np.arange(6.0), a_min=1.0, a_max=4.0).tolist()


def test_numpys_keyword_forms() -> None:
    """The parameter names and forms NumPy code passes (autograd's tests among it)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4))
    assert fg.moveaxis(fg.asarray(x), source=0, destination=-1).shape == np.moveaxis(x, source=0, destination=-1).shape
    assert fg.swapaxes(fg.asarray(x), axis1=0, axis2=2).shape == np.swapaxes(x, axis1=0, axis2=2).shape
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(fg.cross(fg.asarray(a), fg.asarray(b), axisa=0, axisb=1, axisc=0).numpy(),
                               np.cross(a, b, axisa=0, axisb=1, axisc=0))
    np.testing.assert_allclose(fg.cross(fg.asarray(a), fg.asarray(b.T), axis=0).numpy(), np.cross(a, b.T, axis=0))
    m = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    for uplo in ("L", "U"):
        got = fg.linalg.eigh(fg.asarray(m), UPLO=uplo, symmetrize_input=False).eigenvalues.numpy()
        np.testing.assert_allclose(got, np.linalg.eigh(m, UPLO=uplo)[0], rtol=1e-10)
    with pytest.raises(fg.ArgumentValueError, match="UPLO"):
        fg.linalg.eigh(fg.asarray(m), UPLO="X")
    np.testing.assert_allclose(fg.linalg.svd(fg.asarray(a), compute_uv=False).numpy(), np.linalg.svd(a, compute_uv=False))
    assert fg.linalg.svd(fg.asarray(a), full_matrices=False, hermitian=False).U.shape == (3, 3)
    z = np.array([[3 + 1j, 1 - 2j, 3 + 5j], [2 + 0j, -1 + 9j, 2 - 1j]])
    for f in ("max", "min"):
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(getattr(fg, f)(fg.asarray(z), axis=axis).numpy(), getattr(np, f)(z, axis=axis))
    np.testing.assert_array_equal(fg.sort(fg.asarray(z.ravel())).numpy(), np.sort(z.ravel()))
    pieces = fg.split(fg.arange(10), fg.asarray([2, 5]))
    assert [p.tolist() for p in pieces] == [p.tolist() for p in np.split(np.arange(10), [2, 5])]
    for mode in ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect", "symmetric",
                 "wrap"):
        np.testing.assert_allclose(fg.pad(fg.arange(5.0), 2, mode=mode).numpy(), np.pad(np.arange(5.0), 2, mode=mode),
                                   err_msg=mode)
