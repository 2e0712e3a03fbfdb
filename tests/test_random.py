"""``fg.random``: keys, splits and bits identical to ``jax.random`` (against JAX when it is
installed, and against recorded values always), the same numbers under ``vmap`` and
``compile``, the distributions' statistics, and the errors."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .backends import assert_as_eager


def _jax():
    try:
        import jax
    except ImportError:
        pytest.skip("JAX is not installed: the recorded values cover the same bits")
    return jax


# jax.random with JAX's default configuration (recorded with jax 0.10.2); floats as their bits
RECORDED = {
    "PRNGKey(42)": [0, 42],
    "bits(PRNGKey(42), (4,))": [2098992034, 2919706841, 2646866425, 2409546199],
    "split(PRNGKey(42), 3)": [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]],
    "fold_in(PRNGKey(42), 7)": [2547012911, 1371500959],
    "split(key(0))": [[1797259609, 2579123966], [928981903, 3453687069]],
    "normal(key(42), (3,))": [3169312533, 1055861736, 1050109537],
    "randint(key(42), (5,), -10, 10)": [-6, 4, 1, -1, -1],
    "permutation(key(42), 8)": [7, 4, 2, 5, 3, 6, 0, 1],
    "bernoulli(key(0), 0.5, (8,))": [0, 0, 1, 1, 0, 1, 1, 0],
    "gumbel(key(42), (3,))": [1051397706, 1064548236, 1060748383],
    "choice(key(42), 10, (4,), replace=False)": [7, 4, 2, 5],
    "uniform(key(42), (4,), bfloat16)": [16162, 16216, 16248, 16214],
}
RECORDED_X64 = {  # with jax.config.update("jax_enable_x64", True)
    "PRNGKey(2**40 + 5)": [256, 5],
    "normal(key(42), (2,))": [13819194999123091801, 13835440466195626554],
    "randint(key(42), (3,), 0, 10**12)": [464050701877, 604979476158, 848944880791],
}


@contextlib.contextmanager
def x64(jax=None):
    """64-bit mode in funcgrad (and in JAX, when given), switched back after."""
    fg.config.update("enable_x64", True)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        fg.config.update("enable_x64", False)
        if jax is not None:
            jax.config.update("jax_enable_x64", False)


def _bits_of(a: fg.Array) -> list[int]:
    host = a.numpy()
    return host.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[host.dtype.itemsize]).tolist()


def test_recorded_jax_values() -> None:
    k, k42 = fg.random.PRNGKey(42), fg.random.key(42)
    assert k.tolist() == RECORDED["PRNGKey(42)"] and k.dtype is fg.uint32
    assert fg.random.bits(k, (4,)).tolist() == RECORDED["bits(PRNGKey(42), (4,))"]
    assert fg.random.split(k, 3).tolist() == RECORDED["split(PRNGKey(42), 3)"]
    assert fg.random.fold_in(k, 7).tolist() == RECORDED["fold_in(PRNGKey(42), 7)"]
    assert fg.random.key_data(fg.random.split(fg.random.key(0))).tolist() == RECORDED["split(key(0))"]
    assert _bits_of(fg.random.normal(k42, (3,))) == RECORDED["normal(key(42), (3,))"]
    randint = fg.random.randint(k42, (5,), -10, 10)
    assert randint.tolist() == RECORDED["randint(key(42), (5,), -10, 10)"] and randint.dtype is fg.int32
    assert fg.random.permutation(k42, 8).tolist() == RECORDED["permutation(key(42), 8)"]
    assert fg.random.bernoulli(fg.random.key(0), 0.5, (8,)).astype(int).tolist() == \
        RECORDED["bernoulli(key(0), 0.5, (8,))"]
    assert _bits_of(fg.random.gumbel(k42, (3,))) == RECORDED["gumbel(key(42), (3,))"]
    assert fg.random.choice(k42, 10, (4,), replace=False).tolist() == \
        RECORDED["choice(key(42), 10, (4,), replace=False)"]
    assert _bits_of(fg.random.uniform(k42, (4,), fg.bfloat16)) == RECORDED["uniform(key(42), (4,), bfloat16)"]
    # the seed's high word: JAX's default mode drops it, its 64-bit mode keeps it
    assert fg.random.PRNGKey(2**40 + 5).tolist() == [0, 5] and fg.random.PRNGKey(-1).tolist() == [0, 2**32 - 1]
    with x64():
        assert fg.random.PRNGKey(2**40 + 5).tolist() == RECORDED_X64["PRNGKey(2**40 + 5)"]
        assert fg.random.PRNGKey(-1).tolist() == [2**32 - 1, 2**32 - 1]
        assert _bits_of(fg.random.normal(k42, (2,))) == RECORDED_X64["normal(key(42), (2,))"]
        big = fg.random.randint(k42, (3,), 0, 10**12)
        assert big.tolist() == RECORDED_X64["randint(key(42), (3,), 0, 10**12)"] and big.dtype is fg.int64
    with pytest.raises(fg.ArgumentValueError, match="int64"):
        fg.random.key(2**63)


@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_keys_splits_and_bits_equal_jax(seed: int, n: int, data: int) -> None:
    """Against JAX in its default (32-bit) mode: keys from any int64 seed, splits, fold_in,
    bits of every width and uniform values of every float dtype."""
    jax = _jax()
    k, jk = fg.random.PRNGKey(seed), jax.random.PRNGKey(seed)
    assert k.tolist() == np.asarray(jk).tolist()
    assert fg.random.split(k, n).tolist() == np.asarray(jax.random.split(jk, n)).tolist()
    assert fg.random.fold_in(k, data).tolist() == np.asarray(jax.random.fold_in(jk, data)).tolist()
    for dtype in ("uint8", "uint16", "uint32"):
        assert fg.random.bits(k, (n, 2), dtype).tolist() == np.asarray(jax.random.bits(jk, (n, 2), dtype)).tolist()
    for dtype in ("float16", "bfloat16", "float32"):
        for lo, hi in ((0.0, 1.0), (-2.0, 3.0)):
            got, want = fg.random.uniform(k, (n + 3,), dtype, lo, hi), jax.random.uniform(jk, (n + 3,), dtype, lo, hi)
            assert got.numpy().tobytes() == np.asarray(want).tobytes(), (dtype, lo, hi)


def _draws(r, k):
    """Each ``jax.random`` distribution ``fg.random`` has, drawn the same way from ``r``
    (either module) and key ``k``."""
    x = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    logits = np.log(np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], np.float32))
    arr = (lambda a: fg.asarray(a)) if r is fg.random else (lambda a: a)
    return {
        "normal": r.normal(k, (64,)), "normal f16": r.normal(k, (8,), "float16"),
        "truncated_normal": r.truncated_normal(k, -1.0, 2.0, (64,)),
        "randint": r.randint(k, (16,), -5, 5), "randint big": r.randint(k, (16,), 0, 2**31 - 1),
        "randint int8": r.randint(k, (16,), -100, 100, "int8"), "randint uint8": r.randint(k, (16,), 0, 256, "uint8"),
        "permutation": r.permutation(k, 50), "permutation axis": r.permutation(k, arr(x), 1),
        "permutation independent": r.permutation(k, arr(x), 1, True),
        "choice": r.choice(k, 10, (7,)), "choice without": r.choice(k, 10, (7,), replace=False),
        "choice p": r.choice(k, 4, (30,), p=arr(p)), "choice p without": r.choice(k, 4, (3,), False, arr(p)),
        "choice axis": r.choice(k, arr(x), (2,), axis=1),
        "bernoulli": r.bernoulli(k, 0.3, (16,)), "bernoulli p": r.bernoulli(k, arr(np.linspace(0, 1, 9, dtype=np.float32))),
        "rademacher": r.rademacher(k, (16,)),
        "categorical": r.categorical(k, arr(logits)), "categorical axis 0": r.categorical(k, arr(logits), 0, (5, 3)),
        "categorical without": r.categorical(k, arr(logits), shape=(2, 2), replace=False),
        "gumbel": r.gumbel(k, (64,)), "exponential": r.exponential(k, (64,)), "laplace": r.laplace(k, (64,)),
        "logistic": r.logistic(k, (64,)), "cauchy": r.cauchy(k, (64,)),
    }


@settings(max_examples=30)
@given(st.integers(-(2**31), 2**31 - 1))
def test_every_distribution_equals_jax_bit_for_bit(seed: int) -> None:
    jax = _jax()
    got, want = _draws(fg.random, fg.random.key(seed)), _draws(jax.random, jax.random.key(seed))
    for name in got:
        g, w = got[name].numpy(), np.asarray(want[name])
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), name


def test_64_bit_mode_equals_jax_64_bit_mode() -> None:
    jax = _jax()
    with x64(jax):
        for seed in (0, -3, 2**40 + 7):
            k, jk = fg.random.key(seed), jax.random.key(seed)
            assert fg.random.key_data(k).tolist() == np.asarray(jax.random.key_data(jk)).tolist()
            assert fg.random.bits(k, (5,)).tolist() == np.asarray(jax.random.bits(jk, (5,))).tolist()
            got, want = _draws(fg.random, k), _draws(jax.random, jk)
            for name in got:
                g, w = got[name].numpy(), np.asarray(want[name])
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes(), name
            for f64 in ("uniform", "normal", "exponential", "gumbel"):
                g, w = getattr(fg.random, f64)(k, (32,)), getattr(jax.random, f64)(jk, (32,))
                assert g.dtype is fg.float64 and g.numpy().tobytes() == np.asarray(w).tobytes(), f64
            g, w = fg.random.uniform(k, (32,), minval=-2.0, maxval=3.0), jax.random.uniform(jk, (32,), minval=-2.0,
                                                                                        maxval=3.0)
            assert g.numpy().tobytes() == np.asarray(w).tobytes()


def test_typed_keys_match_jax_keys() -> None:
    jax = _jax()
    k, jk = fg.random.key(7), jax.random.key(7)
    assert fg.random.key_data(k).tolist() == np.asarray(jax.random.key_data(jk)).tolist()
    keys = fg.random.split(k, 4)
    assert isinstance(keys, fg.random.Key) and keys.shape == (4,) and isinstance(keys[1], fg.random.Key)
    batched = fg.vmap(lambda kk: fg.random.uniform(kk, (3,)))(keys)
    want = jax.vmap(lambda kk: jax.random.uniform(kk, (3,)))(jax.random.split(jk, 4))
    assert batched.numpy().tobytes() == np.asarray(want).tobytes()


def test_the_same_numbers_under_vmap_and_compile() -> None:
    keys = fg.random.split(fg.random.key(1), 5)
    draws = [lambda kk: fg.random.normal(kk, (4,)), lambda kk: fg.random.randint(kk, (3,), -5, 5),
             lambda kk: fg.random.bernoulli(kk, 0.3, (6,)), lambda kk: fg.random.permutation(kk, 6),
             lambda kk: fg.random.split(kk, 2), lambda kk: fg.random.fold_in(kk, 3)]
    for draw in draws:
        loop = np.stack([fg.random.key_data(draw(k)).numpy() if isinstance(draw(k), fg.random.Key)
                         else draw(k).numpy() for k in keys])
        for fn in (fg.vmap(draw), fg.compile(fg.vmap(draw))):  # (compiled: native loops' ulp, tests/backends.py)
            out = fn(keys)
            assert_as_eager(fg.random.key_data(out).numpy() if isinstance(out, fg.random.Key) else out.numpy(), loop)
        single = fg.compile(draw)(keys[2])
        assert_as_eager(fg.random.key_data(single).numpy() if isinstance(single, fg.random.Key)
                        else single.numpy(), loop[2])


def test_dropout_style_masks_are_differentiable_through_the_values() -> None:
    k = fg.random.key(0)
    f = lambda x, kk: (x * fg.random.bernoulli(kk, 0.5, x.shape)).sum()  # noqa: E731
    mask = fg.random.bernoulli(k, 0.5, (8,)).astype(fg.float32)
    np.testing.assert_array_equal(fg.grad(f)(fg.ones(8), k).numpy(), mask.numpy())
    np.testing.assert_array_equal(fg.compile(fg.grad(f))(fg.ones(8), k).numpy(), mask.numpy())


def test_distributions() -> None:
    k = fg.random.key(2024)
    n = 200_000
    u = fg.random.uniform(k, (n,), minval=2.0, maxval=5.0).numpy()
    assert u.min() >= 2.0 and u.max() < 5.0 and abs(u.mean() - 3.5) < 0.01
    for dtype in (fg.float32, fg.float64):
        z = fg.random.normal(k, (n + 1,), dtype)
        assert z.dtype is dtype and z.shape == (n + 1,)
        assert abs(z.numpy().mean()) < 0.01 and abs(z.numpy().std() - 1.0) < 0.01
        assert abs(np.mean(z.numpy() ** 4) - 3.0) < 0.05  # a normal's fourth moment
    t = fg.random.truncated_normal(k, -0.5, 1.0, (n,)).numpy()
    assert t.min() >= -0.5 and t.max() <= 1.0
    a, b = -0.5, 1.0  # the mean of a standard normal truncated to [a, b]
    pdf = lambda v: math.exp(-v * v / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    mass = (math.erf(b / math.sqrt(2)) - math.erf(a / math.sqrt(2))) / 2
    assert abs(t.mean() - (pdf(a) - pdf(b)) / mass) < 0.01
    r = fg.random.randint(k, (n,), -3, 4).numpy()
    assert r.min() == -3 and r.max() == 3 and np.allclose(np.bincount(r + 3) / n, 1 / 7, atol=0.005)
    assert abs(fg.random.bernoulli(k, 0.3, (n,)).numpy().mean() - 0.3) < 0.005
    c = fg.random.categorical(k, fg.log(fg.asarray([0.2, 0.5, 0.3])), shape=(n,)).numpy()
    np.testing.assert_allclose(np.bincount(c) / n, [0.2, 0.5, 0.3], atol=0.005)
    assert abs(fg.random.gumbel(k, (n,)).numpy().mean() - 0.5772156649) < 0.01
    assert sorted(fg.random.permutation(k, 50).tolist()) == list(range(50))
    x = fg.arange(12).reshape(3, 4)
    shuffled = fg.random.permutation(k, x, axis=1).numpy()
    assert sorted(shuffled[0].tolist()) == [0, 1, 2, 3] and (shuffled // 4 == np.arange(3)[:, None]).all()
    picked = fg.random.choice(k, 10, (6,), replace=False).tolist()
    assert len(set(picked)) == 6 and all(0 <= p < 10 for p in picked)
    weighted = fg.random.choice(k, 3, (n,), p=fg.asarray([0.1, 0.0, 0.9])).numpy()
    assert (weighted != 1).all() and abs((weighted == 2).mean() - 0.9) < 0.005


def test_gamma_family_statistics() -> None:
    k = fg.random.key(11)
    n = 8_000
    for a in (0.3, 1.0, 4.0):
        g = fg.random.gamma(k, a, (n,)).numpy()
        assert g.min() > 0 and abs(g.mean() - a) < 0.05 * a + 0.02 and abs(g.var() - a) < 0.15 * a + 0.02, a
        np.testing.assert_allclose(fg.random.loggamma(k, a, (n,)).numpy(), np.log(g), rtol=1e-4, atol=1e-5)
    b = fg.random.beta(k, 2.0, 5.0, (n,)).numpy()
    assert 0 < b.min() and b.max() < 1 and abs(b.mean() - 2 / 7) < 0.01
    dr = fg.random.dirichlet(k, fg.asarray([1.0, 2.0, 7.0]), (n,)).numpy()
    np.testing.assert_allclose(dr.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(dr.mean(0), [0.1, 0.2, 0.7], atol=0.01)
    tt = fg.random.t(k, 5.0, (n,)).numpy()
    assert abs(np.median(tt)) < 0.03 and abs(tt.var() - 5 / 3) < 0.15
    for lam in (0.5, 4.0, 30.0):
        c = fg.random.poisson(k, lam, (n,))
        assert c.dtype is fg.int32 and abs(c.numpy().mean() - lam) < 0.05 * lam and abs(c.numpy().var() - lam) < 0.1 * lam
    assert (fg.random.poisson(k, fg.asarray([0.0, 0.0]), (3, 2)).numpy() == 0).all()
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    for method in ("cholesky", "eigh", "svd"):
        z = fg.random.multivariate_normal(k, fg.asarray([1.0, -1.0]), fg.asarray(cov, dtype=fg.float32), (n,),
                                          method=method).numpy()
        np.testing.assert_allclose(z.mean(0), [1.0, -1.0], atol=0.05)
        np.testing.assert_allclose(np.cov(z.T), cov, atol=0.08)
    for shape, m in (((), None), ((3,), 6), ((2,), 2)):
        q = fg.random.orthogonal(k, 4, shape, fg.float64, m=m).numpy()
        gram = q @ np.swapaxes(q, -1, -2) if (m or 4) > 4 else np.swapaxes(q, -1, -2) @ q
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(4, m or 4)), gram.shape), atol=1e-12)
    with pytest.raises(fg.ShapeError, match="mean must be"):
        fg.random.multivariate_normal(k, fg.zeros(2), fg.eye(3))
    with pytest.raises(fg.ArgumentValueError, match="method"):
        fg.random.multivariate_normal(k, fg.zeros(2), fg.eye(2), method="qr")


def test_gamma_family_is_jaxs_up_to_its_cpu_dependent_roots() -> None:
    """The gamma draws follow JAX's algorithm and key splits. XLA computes float32 ``1 /
    sqrt`` with the CPU's approximate instruction, so JAX's own gamma values differ in the
    last bits between CPUs; these are within a few ulp of them (most are equal), as are the
    draws built on them. Beta, Dirichlet and Poisson draws come out equal."""
    jax = _jax()
    a = np.array([0.3, 1.0, 2.5, 7.0], np.float32)
    for seed in (0, 1, 2):
        k, jk = fg.random.key(seed), jax.random.key(seed)
        for got, want in ((fg.random.gamma(k, fg.asarray(a), (6, 4)), jax.random.gamma(jk, a, (6, 4))),
                          (fg.random.t(k, fg.asarray(a), (6, 4)), jax.random.t(jk, a, (6, 4)))):
            np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5)
            assert (got.numpy() == np.asarray(want)).mean() > 0.5
        lam = np.array([0.5, 3.0, 15.0, 100.0], np.float32)
        assert fg.random.poisson(k, fg.asarray(lam), (20, 4)).tolist() == np.asarray(jax.random.poisson(jk, lam, (20, 4))).tolist()
        np.testing.assert_allclose(fg.random.beta(k, fg.asarray(a), 2.0).numpy(), np.asarray(jax.random.beta(jk, a, 2.0)),
                                   rtol=1e-5)
        np.testing.assert_allclose(fg.random.dirichlet(k, fg.asarray(a), (5,)).numpy(),
                                   np.asarray(jax.random.dirichlet(jk, a, (5,))), rtol=1e-5)


def test_key_errors() -> None:
    k = fg.random.key(0)
    with pytest.raises(fg.ArgumentTypeError, match="not a number"):
        k + 1
    with pytest.raises(fg.ArgumentTypeError, match="not a number"):
        np.asarray(k)
    with pytest.raises(fg.ShapeError, match="single key.*vmap"):
        fg.random.uniform(fg.random.split(k, 3), (2,))
    with pytest.raises(fg.ArgumentTypeError, match="expected a key"):
        fg.random.normal(fg.ones(2), (3,))
    with pytest.raises(fg.ArgumentTypeError, match="seed"):
        fg.random.key(1.5)
    with pytest.raises(fg.DTypeError, match="floating dtype.*got int32"):
        fg.random.uniform(k, (2,), fg.int32)
    with pytest.raises(fg.DTypeError, match="unsigned integer type, got int32"):
        fg.random.bits(k, (2,), fg.int32)
    with pytest.raises(fg.DTypeError, match="integer type, got float32"):
        fg.random.randint(k, (2,), 0, 3, fg.float32)
    with pytest.raises(fg.ShapeError, match="negative"):
        fg.random.normal(k, (-1, 2))
    with pytest.raises(fg.ArgumentValueError, match="without replacement"):
        fg.random.choice(k, 3, (5,), replace=False)
    assert fg.random.uniform(k, (3,)).tolist() == fg.random.uniform(k, (3,)).tolist()  # reuse: the same numbers


# ---- PyTorch style: generators ---------------------------------------------------------------

def test_manual_seed_and_generators_reproduce_their_draws() -> None:
    fg.manual_seed(7)
    first = [fg.rand(3), fg.randn(2, 2), fg.randint(0, 10, (4,)), fg.randperm(5)]
    fg.manual_seed(7)
    again = [fg.rand(3), fg.randn(2, 2), fg.randint(0, 10, (4,)), fg.randperm(5)]
    for a, b in zip(first, again):
        assert a.tolist() == b.tolist()
    assert fg.rand(3).tolist() != first[0].tolist()  # the generator moved on
    g, h = fg.Generator().manual_seed(3), fg.Generator().manual_seed(3)
    assert fg.rand(4, generator=g).tolist() == fg.rand(4, generator=h).tolist()
    state = g.get_state()
    x = fg.randn(3, generator=g)
    assert fg.randn(3, generator=g.set_state(state)).tolist() == x.tolist() and g.initial_seed() == 3


def test_pytorch_style_draws() -> None:
    fg.manual_seed(0)
    assert fg.rand(2, 3).shape == (2, 3) and fg.rand((2, 3)).dtype is fg.float32
    assert fg.randn(4, dtype=fg.float64).dtype is fg.float64
    assert fg.randint(10, (3, 2)).shape == (3, 2) and fg.randint(10, size=(4,)).shape == (4,)  # randint(high, size)
    r = fg.randint(3, 6, (1000,)).numpy()
    assert r.min() == 3 and r.max() == 5
    assert sorted(fg.randperm(8).tolist()) == list(range(8))
    n = fg.normal(fg.full((20_000,), 2.0), 0.5).numpy()
    assert abs(n.mean() - 2.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    b = fg.bernoulli(fg.full((20_000,), 0.25))
    assert b.dtype is fg.float32 and abs(b.numpy().mean() - 0.25) < 0.01
    m = fg.multinomial(fg.asarray([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]), 2)
    assert m[0, 0].item() == 1 and sorted(m[1].tolist()) == [0, 2]
    counts = np.bincount(fg.multinomial(fg.asarray([0.2, 0.8]), 20_000, replacement=True).numpy()) / 20_000
    np.testing.assert_allclose(counts, [0.2, 0.8], atol=0.01)
    like = fg.randn_like(fg.ones((2, 2), dtype=fg.float64))
    assert like.shape == (2, 2) and like.dtype is fg.float64 and fg.rand_like(like).dtype is fg.float64
    with pytest.raises(fg.ArgumentValueError, match="without replacement"):
        fg.multinomial(fg.asarray([0.5, 0.5]), 3)
    with pytest.raises(fg.ArgumentValueError, match="greater"):
        fg.randint(5, 5, (2,))


def test_compiled_functions_thread_the_default_generator() -> None:
    """A compiled function that draws from the default generator takes a key made from the
    generator's words as an input on each call: fresh numbers every call, the same ones
    after the same seed (other numbers than eager draws, as under torch.compile)."""
    noisy = fg.compile(lambda x: x + fg.rand(3))
    fg.manual_seed(1)
    first = [noisy(fg.zeros(3)).tolist() for _ in range(3)]
    after = fg.rand(2).tolist()
    fg.manual_seed(1)
    assert [noisy(fg.zeros(3)).tolist() for _ in range(3)] == first and first[0] != first[1]
    assert fg.rand(2).tolist() == after and noisy.cache_size() == 1  # each call took two of the generator's words
    fg.manual_seed(1)
    fg.random.default_generator.engine.words(6)
    assert fg.rand(2).tolist() == after
    plain = fg.compile(lambda x: x * 2.0)
    assert "uint32" not in str(plain.lower(fg.ones(2)).program)  # no draw: no key in or out


def test_compiled_dropout_draws_fresh_masks_reproducibly() -> None:
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(8, 8), fg.nn.Dropout(0.5))
    compiled = fg.compile(model)
    x = fg.ones((4, 8))

    def masks():
        return [(compiled(x).detach().numpy() == 0).tolist() for _ in range(3)]

    fg.manual_seed(5)
    first = masks()
    fg.manual_seed(5)
    assert masks() == first and first[0] != first[1]
    model.eval()
    assert not (compiled(x).detach().numpy() == 0).any()


def test_functional_call_takes_an_explicit_key() -> None:
    model = fg.nn.Dropout(0.5)
    x = fg.ones(64)
    before = fg.get_rng_state().tolist()
    a = fg.nn.functional_call(model, {}, x, rng=fg.random.key(3))
    b = fg.nn.functional_call(model, {}, x, rng=fg.random.key(3))
    c = fg.nn.functional_call(model, {}, x, rng=fg.random.key(4))
    assert a.tolist() == b.tolist() != c.tolist()
    assert fg.get_rng_state().tolist() == before and fg.random.default_generator.key is None  # left as it was
    per_key = fg.vmap(lambda k: fg.nn.functional_call(model, {}, x, rng=k))(fg.random.split(fg.random.key(3), 2))
    assert per_key.shape == (2, 64) and per_key[0].tolist() != per_key[1].tolist()
