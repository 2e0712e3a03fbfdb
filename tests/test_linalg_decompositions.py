"""fg.linalg's decompositions and the functions built on them: values against NumPy,
float64 gradients against PyTorch (on functions that do not depend on the vectors' signs),
reconstruction properties, and the transforms (vmap, compile) through them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad as fg

L = fg.linalg
RNG = np.random.default_rng(0)


def _sym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


def test_values_match_numpy() -> None:
    a = RNG.standard_normal((2, 4, 3))
    s = _sym(RNG.standard_normal((2, 4, 4)))
    np.testing.assert_allclose(L.eigvalsh(fg.asarray(s)).numpy(), np.linalg.eigvalsh(s), rtol=1e-12)
    w, v = L.eigh(fg.asarray(s))
    np.testing.assert_allclose((v.numpy() * w.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2), s, atol=1e-12)
    for full in (True, False):
        u, sv, vh = L.svd(fg.asarray(a), full_matrices=full)
        want = np.linalg.svd(a, full_matrices=full)
        assert u.shape == want[0].shape and vh.shape == want[2].shape
        np.testing.assert_allclose(sv.numpy(), want[1], rtol=1e-12)
    np.testing.assert_allclose(L.svdvals(fg.asarray(a)).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    q, r = L.qr(fg.asarray(a))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-12)
    np.testing.assert_allclose(np.triu(r.numpy()), r.numpy())
    sq = RNG.standard_normal((3, 4, 4))
    sign, logdet = L.slogdet(fg.asarray(sq))
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(sq)[0])
    np.testing.assert_allclose(logdet.numpy(), np.linalg.slogdet(sq)[1], rtol=1e-12)
    np.testing.assert_allclose(L.det(fg.asarray(sq)).numpy(), np.linalg.det(sq), rtol=1e-10)
    np.testing.assert_allclose(L.pinv(fg.asarray(a)).numpy(), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    low_rank = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))
    assert int(L.matrix_rank(fg.asarray(low_rank))) == np.linalg.matrix_rank(low_rank) == 2
    np.testing.assert_allclose(L.pinv(fg.asarray(low_rank)).numpy(), np.linalg.pinv(low_rank), atol=1e-10)
    for n in (-2, 0, 1, 5):
        np.testing.assert_allclose(L.matrix_power(fg.asarray(sq), n).numpy(), np.linalg.matrix_power(sq, n),
                                   rtol=1e-9, atol=1e-12)
    for m in (np.array([[1, 1], [0, 1]]), np.array([[True, False], [True, True]])):  # (NumPy keeps their dtype)
        for n in (0, 3):
            got, want = L.matrix_power(fg.asarray(m), n), np.linalg.matrix_power(m, n)
            assert got.dtype.name == want.dtype.name and got.tolist() == want.tolist()
    chain = [RNG.standard_normal(s) for s in ((3,), (3, 4), (4, 2), (2,))]
    np.testing.assert_allclose(L.multi_dot([fg.asarray(c) for c in chain]).numpy(), np.linalg.multi_dot(chain))
    np.testing.assert_allclose(L.trace(fg.asarray(a), offset=1).numpy(), np.trace(a, offset=1, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(L.diagonal(fg.asarray(a), offset=-1).numpy(),
                                  np.diagonal(a, offset=-1, axis1=-2, axis2=-1))
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(L.cross(fg.asarray(x), fg.asarray(y)).numpy(), np.cross(x, y))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 5)), elements=st.floats(-3, 3)))
def test_decompositions_reconstruct_their_input(a) -> None:
    u, s, vh = L.svd(fg.asarray(a), full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ vh.numpy(), a, atol=1e-10)
    assert (np.diff(s.numpy()) <= 1e-12).all() and (s.numpy() >= 0).all()
    q, r = L.qr(fg.asarray(a))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-10)
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(q.shape[1]), atol=1e-10)
    square = a[: min(a.shape), : min(a.shape)]
    w, v = L.eigh(fg.asarray(square))
    np.testing.assert_allclose((v.numpy() * w.numpy()) @ v.numpy().T, _sym(square), atol=1e-10)


def _torch_sym(g):
    return (g + g.transpose(-1, -2)) / 2


def test_gradients_match_pytorch() -> None:
    """float64, on functions of the factors that no sign choice changes."""
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 5, 3))
    s = _sym(RNG.standard_normal((2, 4, 4)))
    sq = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    c = {k: RNG.standard_normal(shape) for k, shape in
         {"w": (2, 4), "v": (2, 4, 4), "s": (2, 3), "u": (2, 5, 3), "vh": (2, 3, 3), "q": (2, 5, 3),
          "r": (2, 3, 3), "p": (2, 3, 5), "m": (2, 3, 3)}.items()}
    cases = [
        ("eigh", s, lambda x: (L.eigh(x)[0] * c["w"]).sum() + (L.eigh(x)[1] ** 2 * c["v"]).sum(),
         lambda x: (torch.linalg.eigh(x)[0] * torch.tensor(c["w"])).sum()
         + (torch.linalg.eigh(x)[1] ** 2 * torch.tensor(c["v"])).sum(), True),
        ("svd", a, lambda x: sum((f ** 2 * c[k]).sum() for f, k in zip(L.svd(x, full_matrices=False), ("u", "s", "vh"))),
         lambda x: sum((f ** 2 * torch.tensor(c[k])).sum() for f, k in zip(torch.linalg.svd(x, full_matrices=False),
                                                                           ("u", "s", "vh"))), False),
        ("qr", a, lambda x: (L.qr(x)[0] * c["q"]).sum() + (L.qr(x)[1] * c["r"]).sum(),
         lambda x: (torch.linalg.qr(x)[0] * torch.tensor(c["q"])).sum()
         + (torch.linalg.qr(x)[1] * torch.tensor(c["r"])).sum(), False),
        ("slogdet", sq, lambda x: L.slogdet(x)[1].sum() + L.det(x).sum(),
         lambda x: torch.linalg.slogdet(x)[1].sum() + torch.linalg.det(x).sum(), False),
        ("pinv", a, lambda x: (L.pinv(x) * c["p"]).sum(), lambda x: (torch.linalg.pinv(x) * torch.tensor(c["p"])).sum(),
         False),
        ("matrix_norm", a, lambda x: sum(L.matrix_norm(x, ord=o).sum() * k for k, o in ((1, "nuc"), (2, 2), (3, -2))),
         lambda x: sum(torch.linalg.matrix_norm(x, ord=o).sum() * k for k, o in ((1, "nuc"), (2, 2), (3, -2))),
         False),
        ("matrix_power", sq, lambda x: (L.matrix_power(x, -2) * c["m"]).sum() + (L.matrix_power(x, 3) * c["m"]).sum(),
         lambda x: (torch.linalg.matrix_power(x, -2) * torch.tensor(c["m"])).sum()
         + (torch.linalg.matrix_power(x, 3) * torch.tensor(c["m"])).sum(), False),
    ]
    for name, x, ours, theirs, symmetric in cases:
        got = fg.grad(ours)(fg.asarray(x)).numpy()
        tx = torch.tensor(x, requires_grad=True)
        theirs(tx).backward()
        want = _torch_sym(tx.grad) if symmetric else tx.grad
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


def test_repeated_values_give_finite_gradients_where_the_vectors_are_unused() -> None:
    """eigvalsh and svdvals at the identity (every value repeated): the vectors' cotangents
    are zero, so the gaps between values are never divided by."""
    eye = fg.eye(3, dtype=fg.float64)
    assert fg.grad(lambda x: L.eigvalsh(x).sum())(eye).tolist() == np.eye(3).tolist()
    assert fg.grad(lambda x: L.svdvals(x).sum())(eye).tolist() == np.eye(3).tolist()


def test_transforms_through_the_decompositions() -> None:
    s = _sym(RNG.standard_normal((5, 3, 3)))
    batched = fg.vmap(lambda x: L.eigh(x).eigenvalues)(fg.asarray(s))
    np.testing.assert_allclose(batched.numpy(), np.linalg.eigvalsh(s), rtol=1e-12)
    per = fg.vmap(fg.grad(lambda x: L.slogdet(x).logabsdet))(fg.asarray(s + 4 * np.eye(3)))
    np.testing.assert_allclose(per.numpy(), np.linalg.inv(s + 4 * np.eye(3)).transpose(0, 2, 1), rtol=1e-10)
    compiled = fg.compile(lambda x: L.svd(x, full_matrices=False).S.sum())
    assert abs(float(compiled(fg.asarray(s[0]))) - np.linalg.svd(s[0], compute_uv=False).sum()) < 1e-12
    fg.testing.check_grads(lambda x: L.pinv(x), [fg.asarray(RNG.standard_normal((4, 2)))], order=2)


def test_errors_name_the_function_and_shape() -> None:
    with pytest.raises(fg.ShapeError, match=r"linalg.eigh: expected a stack of square matrices .* \(3, 4\)"):
        L.eigh(fg.ones((3, 4)))
    with pytest.raises(fg.ShapeError, match="linalg.slogdet"):
        L.slogdet(fg.ones(3))
    with pytest.raises(NotImplementedError, match="full_matrices=True"):
        fg.grad(lambda x: L.svd(x).S.sum())(fg.ones((3, 2), dtype=fg.float64))
    with pytest.raises(NotImplementedError, match="at least as many rows"):
        fg.grad(lambda x: L.qr(x).R.sum())(fg.ones((2, 3), dtype=fg.float64))
    with pytest.raises(ValueError, match="mode must be 'reduced' or 'complete', got 'r'"):
        L.qr(fg.ones((3, 2)), mode="r")
    with pytest.raises(NotImplementedError, match="mode='complete'"):
        fg.grad(lambda x: L.qr(x, mode="complete").Q.sum())(fg.ones((3, 2), dtype=fg.float64))


def test_qr_complete_matches_numpy() -> None:
    a = RNG.standard_normal((2, 5, 3))
    q, r = L.qr(fg.asarray(a), mode="complete")
    want_q, want_r = np.linalg.qr(a, mode="complete")
    assert q.shape == (2, 5, 5) and r.shape == (2, 5, 3)
    np.testing.assert_allclose(q.numpy(), want_q, atol=1e-12)
    np.testing.assert_allclose(r.numpy(), want_r, atol=1e-12)
    square = RNG.standard_normal((3, 3))  # square: complete is reduced, and differentiable
    g = fg.grad(lambda x: (L.qr(x, mode="complete").R ** 2).sum())(fg.asarray(square))
    h = fg.grad(lambda x: (L.qr(x).R ** 2).sum())(fg.asarray(square))
    np.testing.assert_allclose(g.numpy(), h.numpy())


def test_complex_svd_and_eigh_tangents_equal_jax_in_the_same_gauge(jax64) -> None:
    """A complex SVD's factors (and a Hermitian matrix's eigenvectors) are unique up to a
    phase per pair; the tangents are those of the gauge JAX and PyTorch use (U^H dU with a
    zero real diagonal, V^H dV with a zero diagonal), equal to JAX's, and svdvals,
    matrix_rank and matrix_norm take complex matrices."""
    jax = jax64
    rng = np.random.default_rng(3)
    for n in (1, 4):
        m = rng.standard_normal((2, n, n)) + 1j * rng.standard_normal((2, n, n))
        h, t = (m + np.conj(np.swapaxes(m, -1, -2))) / 2, rng.standard_normal((2, n, n)) * (1 + 1j)
        t = (t + np.conj(np.swapaxes(t, -1, -2))) / 2
        ours = fg.jvp(L.eigh, (fg.asarray(h),), (fg.asarray(t),))[1]
        theirs = jax.jvp(jax.numpy.linalg.eigh, (jax.numpy.asarray(h),), (jax.numpy.asarray(t),))[1]
        assert ours[0].dtype == fg.float64
        for x, y in zip(ours, theirs):
            np.testing.assert_allclose(x.numpy(), np.asarray(y), atol=1e-12)
    for shape in ((4, 3), (3, 4), (2, 3, 3)):
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        t = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        ours = fg.jvp(lambda x: L.svd(x, full_matrices=False), (fg.asarray(a),), (fg.asarray(t),))[1]
        theirs = jax.jvp(lambda x: jax.numpy.linalg.svd(x, full_matrices=False), (jax.numpy.asarray(a),),
                         (jax.numpy.asarray(t),))[1]
        for x, y in zip(ours, theirs):
            np.testing.assert_allclose(x.numpy(), np.asarray(y), atol=1e-12)
        assert L.svdvals(fg.asarray(a)).dtype == fg.float64
        np.testing.assert_allclose(L.svdvals(fg.asarray(a)).numpy(), np.linalg.svd(a, compute_uv=False))
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    assert int(L.matrix_rank(fg.asarray(c @ np.diag([1, 1, 0]) @ c.T))) == 2
    np.testing.assert_allclose(L.matrix_norm(fg.asarray(c), ord=2).item(), np.linalg.norm(c, 2))


def test_eig_values_and_derivatives() -> None:
    """``eig``/``eigvals`` of general matrices: NumPy's values (complex, LAPACK's order), and
    derivatives of what does not depend on the eigenvectors' free phases against finite
    differences, real and complex, batched."""
    from funcgrad.testing import check_grads

    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 4))
    w, v = L.eig(fg.asarray(a))
    want_w, want_v = np.linalg.eig(a)
    assert w.dtype == fg.complex128 and v.dtype == fg.complex128
    np.testing.assert_allclose(w.numpy(), want_w)
    np.testing.assert_allclose(v.numpy(), want_v)
    np.testing.assert_allclose(L.eigvals(fg.asarray(np.float32(a))).numpy(), want_w, rtol=1e-5)
    assert L.eigvals(fg.asarray(np.float32(a))).dtype == fg.complex64
    weights = fg.asarray(np.arange(16.0).reshape(4, 4))
    for m in (a, a + 1j * rng.standard_normal((4, 4))):
        check_grads(lambda x: (fg.real(L.eigvals(x)) ** 2 + fg.imag(L.eigvals(x)) * 3).sum(), (fg.asarray(m),), order=1)
        check_grads(lambda x: (fg.abs(L.eig(x).eigenvectors) ** 2 * weights).sum(), (fg.asarray(m),), order=1)
    stack = np.stack([a, 2 * a + np.eye(4)])
    np.testing.assert_allclose(fg.vmap(L.eigvals)(fg.asarray(stack)).numpy(), np.linalg.eigvals(stack))
    with pytest.raises(fg.ShapeError, match="eig"):
        L.eig(fg.ones((2, 3)))


def test_eigvals_tangents_equal_jax(jax64) -> None:
    jax = jax64
    rng = np.random.default_rng(8)
    a, t = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    ours = fg.jvp(L.eigvals, (fg.asarray(a),), (fg.asarray(t),))[1]
    theirs = jax.jvp(jax.numpy.linalg.eigvals, (jax.numpy.asarray(a),), (jax.numpy.asarray(t),))[1]
    order = [int(np.argmin(np.abs(np.asarray(jax.numpy.linalg.eigvals(a)) - w))) for w in np.linalg.eigvals(a)]
    np.testing.assert_allclose(ours.numpy(), np.asarray(theirs)[order], atol=1e-10)
