"""Complex arrays: NumPy's promotion and values, and derivatives with JAX's convention in the
transforms and PyTorch's on the tape, against JAX and PyTorch in complex128."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

Z = np.array([3 + 4j, -1 + 0.5j, 0.3 - 2j, 0.7 + 0.1j])
X = np.array([0.5, -1.5, 2.0, 0.25])

# (funcgrad, JAX/NumPy-namespace) pairs of real losses of a complex argument: holomorphic
# pieces mixed with the non-holomorphic ones (abs, real, imag, conj, angle)
LOSSES = {
    "abs": lambda m, z: m.abs(z).sum(),
    "abs_squared": lambda m, z: (m.abs(z) ** 2).sum(),
    "real_of_product": lambda m, z: m.real(z * z * m.exp(z)).sum(),
    "imag_of_quotient": lambda m, z: m.imag(m.sin(z) / z).sum(),
    "conj": lambda m, z: m.abs(m.conj(z) * 2j + z).sum(),
    "angle": lambda m, z: m.angle(z).sum(),
    "log_sqrt_tanh": lambda m, z: m.real(m.log(z) + m.sqrt(z) * m.tanh(z / 4)).sum(),
    "matmul": lambda m, z: m.abs(m.reshape(z, (2, 2)) @ m.reshape(m.conj(z), (2, 2))).sum(),
    "reductions": lambda m, z: m.real(m.prod(z) + m.cumsum(z, axis=0)[-1] + m.mean(z * z)),
    "where": lambda m, z: m.abs(m.where(m.real(z) > 0, z * z, -z)).sum(),
    "pow": lambda m, z: m.real(z ** 2.5 + z ** (1 + 1j)).sum(),
    "linalg": lambda m, z: (lambda a: m.real(m.linalg.det(a) * (1 + 2j)) + m.abs(m.linalg.solve(a, m.conj(a))).sum()
                            + m.imag(m.linalg.inv(a)).sum() + m.linalg.slogdet(a)[1]
                            + m.imag(m.linalg.slogdet(a)[0]))(m.reshape(z, (2, 2))),
    "pinv": lambda m, z: (lambda p: m.real(m.sum(p * p)) + m.imag(m.sum(p)))(
        m.linalg.pinv(m.reshape(m.concatenate([z, z * z]), (4, 2)))),
    "svd": lambda m, z: (lambda usv: m.sum(usv[1] ** 3) + m.sum(m.abs(usv[0]) ** 4) + m.real(m.sum(
        (usv[0] * usv[1][None, :]) @ usv[2] * z[0])))(m.linalg.svd(m.reshape(m.concatenate([z, z * z, m.conj(z)]),
                                                                            (4, 3)), full_matrices=False)),
    "qr": lambda m, z: (lambda qr: m.real(m.sum(qr[0] * z[1])) + m.imag(m.sum(qr[1] * qr[1])))(
        m.linalg.qr(m.reshape(m.concatenate([z, z * z, m.conj(z)]), (4, 3)))),
    "eigh": lambda m, z: (lambda wv: m.sum(wv[0] ** 3) + m.sum(m.abs(wv[1]) ** 4))(m.linalg.eigh(
        (lambda a: a + m.conj(m.swapaxes(a, -1, -2)))(m.reshape(z, (2, 2))))),
    "cholesky": lambda m, z: (lambda a: (lambda low: m.real(m.sum(low * low * low)) + m.imag(m.sum(low)))(
        m.linalg.cholesky(a @ m.conj(m.swapaxes(a, -1, -2)) + 3 * m.eye(2))))(m.reshape(z, (2, 2))),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_of_a_real_loss_matches_jax(name: str, jax64) -> None:
    jax = jax64
    f = LOSSES[name]
    got = fg.grad(lambda z: f(fg, z))(fg.asarray(Z)).numpy()
    want = np.asarray(jax.grad(lambda z: f(jax.numpy, z))(jax.numpy.asarray(Z)))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_tape_gradient_matches_pytorch(name: str) -> None:
    """The tape states gradients as PyTorch does: the conjugate of the transforms' value."""
    torch = pytest.importorskip("torch")
    if name in ("angle", "pow", "where"):  # spelled differently in torch; the conjugate relation is checked below
        z = fg.tensor(Z, requires_grad=True)
        LOSSES[name](fg, z).backward()
        np.testing.assert_allclose(z.grad.numpy(), np.conj(fg.grad(lambda v: LOSSES[name](fg, v))(fg.asarray(Z))
                                                            .numpy()), rtol=1e-12)
        return
    z = fg.tensor(Z, requires_grad=True)
    LOSSES[name](fg, z).backward()
    t = torch.tensor(Z, requires_grad=True)
    LOSSES[name](torch, t).backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_real_argument_promoted_to_complex_gets_a_real_gradient(jax64) -> None:
    jax = jax64
    jnp = jax.numpy
    f = (lambda m, x: m.abs(x * (1 + 2j) + m.exp(1j * x)).sum())
    got = fg.grad(lambda x: f(fg, x))(fg.asarray(X))
    assert got.dtype == fg.float64
    np.testing.assert_allclose(got.numpy(), np.asarray(jax.grad(lambda x: f(jnp, x))(jnp.asarray(X))), rtol=1e-12)
    g = fg.grad(lambda x: fg.abs(x.astype(fg.complex128) * 1j).sum())(fg.asarray(X))
    assert g.dtype == fg.float64 and np.allclose(g.numpy(), np.sign(X))


def test_holomorphic_grad_jvp_and_vjp_match_jax(jax64) -> None:
    jax = jax64
    jnp = jax.numpy
    z = Z[1]
    got = fg.grad(lambda v: v * fg.sin(v), holomorphic=True)(fg.asarray(z))
    assert np.allclose(got.numpy(), jax.grad(lambda v: v * jnp.sin(v), holomorphic=True)(z))
    t = np.array([1j, 1.0, 0.5 - 2j, 1 + 1j])
    out, tan = fg.jvp(lambda v: fg.abs(v) * fg.exp(v), (fg.asarray(Z),), (fg.asarray(t),))
    out_j, tan_j = jax.jvp(lambda v: jnp.abs(v) * jnp.exp(v), (jnp.asarray(Z),), (jnp.asarray(t),))
    np.testing.assert_allclose(tan.numpy(), np.asarray(tan_j), rtol=1e-12)
    _, pull = fg.vjp(lambda v: fg.conj(v) * v * 1j, fg.asarray(Z))
    _, pull_j = jax.vjp(lambda v: jnp.conj(v) * v * 1j, jnp.asarray(Z))
    np.testing.assert_allclose(pull(fg.asarray(t))[0].numpy(), np.asarray(pull_j(jnp.asarray(t))[0]), rtol=1e-12)


def test_grad_errors_name_the_convention() -> None:
    z = fg.asarray(Z)
    with pytest.raises(fg.DTypeError, match="holomorphic=True"):
        fg.grad(lambda v: (v * v).sum())(z)
    with pytest.raises(fg.DTypeError, match="needs a complex output"):
        fg.grad(lambda v: fg.abs(v).sum(), holomorphic=True)(z)
    with pytest.raises(fg.DTypeError, match="complex arguments"):
        fg.grad(lambda v: (v * 1j).sum(), holomorphic=True)(fg.asarray(X))
    with pytest.raises(fg.DTypeError, match="gradient="):
        (fg.tensor(Z, requires_grad=True) * 2).sum().backward()
    with pytest.raises(fg.DTypeError, match="real"):
        fg.maximum(z, z)
    assert fg.max(z).item() == np.max(np.asarray(Z))  # (complex numbers in NumPy's order: real part first)


def test_backward_of_a_complex_output_with_a_gradient_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")
    v = np.array([1 - 1j, 2j, 0.5, -1 + 3j])
    z = fg.tensor(Z, requires_grad=True)
    (z * fg.exp(z)).backward(fg.asarray(v))
    t = torch.tensor(Z, requires_grad=True)
    (t * torch.exp(t)).backward(torch.tensor(v))
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    z2 = fg.tensor(Z, requires_grad=True)
    (g,) = fg.autograd.grad(fg.abs(z2 * z2).sum(), z2)
    t2 = torch.tensor(Z, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.abs(t2 * t2).sum(), t2)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


def test_sgd_descends_on_a_complex_parameter() -> None:
    target = fg.asarray(np.array([1 + 2j, -0.5j]))
    p = fg.nn.Parameter(fg.asarray(np.array([0j, 0j])))
    opt = fg.optim.SGD([p], lr=0.1)
    losses = []
    for _ in range(50):
        opt.zero_grad()
        loss = (fg.abs(p - target) ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 1e-8 * losses[0] + 1e-12
    np.testing.assert_allclose(p.numpy(), target.numpy(), atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(re=st.lists(st.floats(-2, 2), min_size=1, max_size=5), seed=st.integers(0, 2**31 - 1))
def test_grad_is_dL_dx_minus_i_dL_dy(re: list[float], seed: int) -> None:
    """The convention itself, by central differences in the real and imaginary directions."""
    rng = np.random.default_rng(seed)
    z = np.asarray(re) + 1j * rng.uniform(-2, 2, len(re))
    c = rng.standard_normal(len(re)) + 1j * rng.standard_normal(len(re))

    def loss(v):
        return fg.real(fg.sum(c * v * v) + fg.sum(fg.abs(v - 0.1j) * fg.conj(v)))

    g = fg.grad(loss)(fg.asarray(z)).numpy()
    eps = 1e-6
    for k in range(len(re)):
        e = np.zeros(len(re))
        e[k] = eps
        dx = (float(loss(fg.asarray(z + e))) - float(loss(fg.asarray(z - e)))) / (2 * eps)
        dy = (float(loss(fg.asarray(z + 1j * e))) - float(loss(fg.asarray(z - 1j * e)))) / (2 * eps)
        assert abs(g[k] - (dx - 1j * dy)) < 1e-5 * (1 + abs(g[k]))


def test_complex_under_vmap_compile_and_jacrev() -> None:
    f = LOSSES["log_sqrt_tanh"]
    z = fg.asarray(Z)
    want = fg.grad(lambda v: f(fg, v))(z).numpy()
    np.testing.assert_allclose(fg.compile(fg.grad(lambda v: f(fg, v)))(z).numpy(), want, rtol=1e-12)
    zs = fg.stack([z, z * 0.5])
    per = fg.vmap(fg.grad(lambda v: f(fg, v)))(zs).numpy()
    np.testing.assert_allclose(per[0], want, rtol=1e-12)
    np.testing.assert_allclose(per[1], fg.grad(lambda v: f(fg, v))(z * 0.5).numpy(), rtol=1e-12)
    jac = fg.jacrev(lambda v: fg.abs(v) ** 2)(z).numpy()
    np.testing.assert_allclose(np.diag(jac), 2 * np.conj(Z), rtol=1e-12)


def test_promotion_and_values_follow_numpy() -> None:
    pairs = [(np.float32, np.complex64), (np.float64, np.complex64), (np.int64, np.complex64),
             (np.complex64, np.complex128)]
    for a, b in pairs:
        x, y = np.ones(2, a), np.full(2, 1 + 2j, b)
        assert (fg.asarray(x) + fg.asarray(y)).dtype == np.result_type(x, y)
    assert (fg.asarray(np.ones(2, np.float32)) * 1j).dtype == fg.complex64
    z = fg.asarray(Z)
    for name in ("exp", "log", "sqrt", "sin", "tanh", "arcsinh", "abs", "conj", "real", "imag", "angle"):
        np.testing.assert_allclose(getattr(fg, name)(z).numpy(), getattr(np, name)(Z), rtol=1e-12)
    a = np.array([[1 + 1j, 2, 3 - 2j], [0.5j, 1, 2]])
    for axis in (None, 0, 1):
        np.testing.assert_allclose(fg.var(fg.asarray(a), axis=axis).numpy(), np.var(a, axis=axis), rtol=1e-12)
        np.testing.assert_allclose(fg.std(fg.asarray(a), axis=axis).numpy(), np.std(a, axis=axis), rtol=1e-12)
    with pytest.raises(fg.DTypeError, match="imag"):
        z.astype(fg.float64)


def test_complex_tanh_limit_follows_the_array_api() -> None:
    """tanh(+inf + bj) for a finite b is 1 + 0j, the zero with b's sign (NumPy's follows sin(2b))."""
    import warnings

    b = np.array([3.0, -3.0, 1.0, -1.0, 0.0, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fg.tanh(fg.asarray(np.inf + 1j * b)).numpy()
    np.testing.assert_array_equal(got.real, np.ones_like(b))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(b))
    z = fg.asarray(Z)
    np.testing.assert_allclose(fg.tanh(z).numpy(), np.tanh(Z), rtol=1e-12)
