"""fg.fft: values against NumPy, derivatives against finite differences, JAX (transforms)
and PyTorch (tape) in double precision, and typed errors."""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_AXES = ["fftn", "ifftn", "rfftn", "irfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfftn"}
NORMS = ["backward", "ortho", "forward"]


def _input(name: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x if name in REAL_INPUT else x + 1j * rng.standard_normal(shape)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(ONE_AXIS), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=6),
       n=st.none() | st.integers(2, 9), norm=st.sampled_from(NORMS), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_one_axis_transforms_match_numpy(name, shape, n, norm, seed, data) -> None:
    x = _input(name, np.random.default_rng(seed), shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    got = getattr(fg.fft, name)(fg.asarray(x), n=n, axis=axis, norm=norm).numpy()
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(MANY_AXES), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5),
       norm=st.sampled_from(NORMS), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_many_axes_transforms_match_numpy(name, shape, norm, seed, data) -> None:
    x = _input(name, np.random.default_rng(seed), shape)
    axes = data.draw(st.none() | st.permutations(range(len(shape))).map(lambda p: tuple(p[:max(1, len(p) - 1)])))
    s = None if axes is None or not data.draw(st.booleans()) else tuple(data.draw(st.integers(2, 6)) for _ in axes)
    got = getattr(fg.fft, name)(fg.asarray(x), s=s, axes=axes, norm=norm).numpy()
    want = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ONE_AXIS + MANY_AXES)
@pytest.mark.parametrize("norm", NORMS)
def test_derivatives_match_finite_differences(name: str, norm: str) -> None:
    rng = np.random.default_rng(0)
    x = fg.asarray(_input(name, rng, (3, 6)))
    if name in ONE_AXIS:
        for n in (None, 4, 9):
            check_grads(lambda v, n=n: getattr(fg.fft, name)(v, n=n, axis=0 if n == 4 else -1, norm=norm), [x], order=2)
    else:
        for s, axes in ((None, None), ((4, 7), (1, 0))):
            check_grads(lambda v, s=s, axes=axes: getattr(fg.fft, name)(v, s=s, axes=axes, norm=norm), [x], order=2)


@pytest.mark.parametrize("name", ONE_AXIS + MANY_AXES)
def test_gradients_match_jax(name: str, jax64) -> None:
    jax = jax64
    jnp = jax.numpy
    x = _input(name, np.random.default_rng(1), (4, 6))
    w = np.random.default_rng(2).standard_normal((4, 12)) + 1j * np.random.default_rng(3).standard_normal((4, 12))
    kw = {"n": 7, "norm": "ortho"} if name in ONE_AXIS else {"s": (3, 5), "norm": "forward"}

    def loss(m, v):
        y = getattr(m.fft, name)(v, **kw)
        return m.sum(m.real(y * w[tuple(slice(0, k) for k in y.shape)]) + m.abs(y) ** 2)

    got = fg.grad(lambda v: loss(fg, v))(fg.asarray(x)).numpy()
    want = np.asarray(jax.grad(lambda v: loss(jnp, v))(jnp.asarray(x)))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fftn", "rfftn", "irfftn", "hfft", "ihfft"])
def test_tape_gradients_match_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    x = _input(name, np.random.default_rng(4), (3, 8))
    kw = {"n": 6} if name not in ("fftn", "rfftn", "irfftn") else {"s": (2, 6)}
    v = fg.tensor(x, requires_grad=True)
    fg.abs(getattr(fg.fft, name)(v, **kw) * 1.5).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    torch.abs(getattr(torch.fft, name)(t, **kw) * 1.5).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_transforms_under_vmap_and_compile() -> None:
    x = fg.asarray(np.random.default_rng(5).standard_normal((3, 4, 8)))
    f = fg.grad(lambda v: fg.abs(fg.fft.rfft(v, n=10)).sum())
    want = np.stack([f(x[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(fg.vmap(f)(x).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(f, in_axes=1, out_axes=1)(x).numpy(),
                               np.stack([f(x[:, i]).numpy() for i in range(4)], 1), rtol=1e-12)
    np.testing.assert_allclose(fg.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-12)


def test_precision_promotion_and_helpers() -> None:
    ones32 = fg.ones(8)
    assert fg.fft.fft(ones32).dtype == fg.complex64 and fg.fft.rfft(ones32).dtype == fg.complex64
    assert fg.fft.irfft(fg.fft.rfft(ones32)).dtype == fg.float32
    assert fg.fft.fft(fg.asarray(np.ones(4))).dtype == fg.complex128
    assert fg.fft.fft(fg.arange(4)).dtype == fg.complex64  # integers: the default precision, as JAX
    np.testing.assert_allclose(fg.fft.fftfreq(7, d=0.3).numpy(), np.fft.fftfreq(7, 0.3), rtol=1e-6)
    np.testing.assert_allclose(fg.fft.rfftfreq(8, d=2.0).numpy(), np.fft.rfftfreq(8, 2.0), rtol=1e-6)
    assert fg.fft.fftfreq(4, dtype=fg.float64).dtype == fg.float64
    a = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(fg.fft.fftshift(fg.asarray(a), axes=axes).numpy(), np.fft.fftshift(a, axes))
        np.testing.assert_array_equal(fg.fft.ifftshift(fg.asarray(a), axes=axes).numpy(), np.fft.ifftshift(a, axes))


def test_bad_input_names_the_transform() -> None:
    z = fg.asarray(np.ones((2, 4), complex))
    with pytest.raises(fg.DTypeError, match=r"fft\.rfft: expected a real array, got complex128"):
        fg.fft.rfft(z)
    with pytest.raises(fg.ArgumentTypeError, match=r"fft\.fft: n must be a positive int"):
        fg.fft.fft(z, n=0)
    with pytest.raises(fg.ArgumentTypeError, match="norm must be one of"):
        fg.fft.ifft(z, norm="unitary")
    with pytest.raises(fg.ShapeError, match=r"fft\.fftn: s=\(3,\) must give one length per transformed axis"):
        fg.fft.fftn(z, s=(3,), axes=(0, 1))
    with pytest.raises(fg.ShapeError, match="repeated axis"):
        fg.fft.fftn(z, axes=(1, 1))
    with pytest.raises(fg.ShapeError, match="axis"):
        fg.fft.fft(z, axis=2)
    with pytest.raises(fg.ShapeError, match="pass n="):
        fg.fft.irfft(fg.asarray(np.ones(1, complex)))
