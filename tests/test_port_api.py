"""What ports of JAX, autograd and PyTorch scripts reach for beyond the core: ``make_jaxpr``,
JAX's ``precision=``, NumPy's einsum sublists, ``fg.linalg`` as a module, SciPy's
``linalg`` and ``stats`` (against SciPy, gradients against finite differences), JAX's
``example_libraries.optimizers`` (against JAX when installed, against the rules written
out always), ``F.batch_norm``, ``fg.backends.cudnn``, and ``DataLoader`` workers in a
script without a ``__main__`` guard."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.example_libraries import optimizers
from funcgrad.testing import check_grads


def test_make_jaxpr_prints_the_program_with_static_arguments_as_constants() -> None:
    program = fg.make_jaxpr(lambda x, n: (x * n).sum(), static_argnums=1)(fg.ones(3), 2.0)
    assert "mul a 2.0" in str(program) and "reduce_sum" in str(program) and len(program.invars) == 1
    program, shapes = fg.make_jaxpr(lambda x: {"a": x * 2, "b": x.sum()}, return_shape=True)(fg.ones((2, 3)))
    assert shapes["a"].shape == (2, 3) and shapes["b"].shape == ()


def test_jax_precision_and_preferred_element_type() -> None:
    a = fg.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    wide = fg.dot(a, a.T, preferred_element_type=fg.int32)
    m = np.arange(6).reshape(2, 3)
    assert wide.dtype is fg.int32 and wide.tolist() == (m @ m.T).tolist()
    x = fg.ones((2, 2))
    for f in (fg.dot, fg.matmul, fg.inner, fg.vdot):
        assert f(x, x, precision="highest").tolist() == f(x, x).tolist()
    assert fg.einsum("ij,jk->ik", x, x, precision=("high", "high")).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert fg.tensordot(x, x, 1, precision=None).shape == (2, 2)
    with pytest.raises(fg.ArgumentValueError, match="precision must be"):
        fg.dot(x, x, precision="spam")


def test_einsum_sublist_form_and_vdot_are_numpys() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    fa, fb = fg.asarray(a), fg.asarray(b)
    np.testing.assert_allclose(fg.einsum(fa, [0, 1], fb, [1, 2], [0, 2]).numpy(), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    np.testing.assert_allclose(fg.einsum(fa, [0, 1], fb, [1, 2]).numpy(), np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_allclose(fg.einsum(fa, [Ellipsis, 1], [Ellipsis]).numpy(), np.einsum(a, [Ellipsis, 1], [Ellipsis]))
    z = np.array([1j, 2.0]), np.array([1j, 1.0])
    assert fg.vdot(fg.asarray(z[0]), fg.asarray(z[1])).item() == np.vdot(*z)  # (the first conjugated)
    with pytest.raises(fg.ArgumentTypeError, match="list of axis numbers"):
        fg.einsum(fa, 3, fb, [1, 2])


def test_linalg_is_a_module() -> None:
    from funcgrad.linalg import eigh, solve

    assert fg.linalg.solve is solve and fg.linalg.eigh is eigh and fg.linalg.__name__ == "funcgrad.linalg"


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(0, 10_000), st.sampled_from([0, 1, 2]), st.booleans(), st.booleans())
def test_scipy_linalg_equals_scipy(n: int, seed: int, trans: int, lower: bool, unit: bool) -> None:
    rng = np.random.default_rng(seed)
    a, b, s = rng.standard_normal((n, n)) + 3 * np.eye(n), rng.standard_normal((n, 2)), _spd(rng, n)
    got = fg.scipy.linalg.solve_triangular(fg.asarray(a), fg.asarray(b), trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(got.numpy(), sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit),
                               rtol=1e-8, atol=1e-10)
    for low in (False, True):
        np.testing.assert_allclose(fg.scipy.linalg.cholesky(fg.asarray(s), lower=low).numpy(), sl.cholesky(s, lower=low),
                                   rtol=1e-10, atol=1e-12)
        factor = fg.scipy.linalg.cho_factor(fg.asarray(s), lower=low)
        np.testing.assert_allclose(fg.scipy.linalg.cho_solve(factor, fg.asarray(b)).numpy(),
                                   sl.cho_solve(sl.cho_factor(s, lower=low), b), rtol=1e-8, atol=1e-10)
    scale = 10.0 ** rng.uniform(-2, 2)
    np.testing.assert_allclose(fg.scipy.linalg.expm(fg.asarray(a * scale)).numpy(), sl.expm(a * scale), rtol=1e-8,
                               atol=1e-10)


def test_scipy_linalg_gradients_and_errors() -> None:
    rng = np.random.default_rng(1)
    a, s, b = rng.standard_normal((3, 3)) + 3 * np.eye(3), _spd(rng, 3), rng.standard_normal(3)
    check_grads(lambda m: fg.scipy.linalg.expm(m), (fg.asarray(a * 0.5),), order=1)
    check_grads(lambda m, v: fg.scipy.linalg.solve_triangular(m, v, lower=True, trans=1), (fg.asarray(a), fg.asarray(b)),
                order=1)
    check_grads(lambda m, v: fg.scipy.linalg.cho_solve(fg.scipy.linalg.cho_factor((m + m.T) / 2), v),
                (fg.asarray(s), fg.asarray(b)), order=1)  # (a symmetric matrix's: the factor reads one triangle)
    batched = fg.scipy.linalg.expm(fg.asarray(np.stack([a, 2 * a])))
    np.testing.assert_allclose(batched.numpy()[1], sl.expm(2 * a), rtol=1e-8)
    np.testing.assert_allclose(fg.compile(fg.scipy.linalg.expm)(fg.asarray(a)).numpy(), sl.expm(a), rtol=1e-8)
    with pytest.raises(fg.ShapeError, match="expm: A must be square"):
        fg.scipy.linalg.expm(fg.ones((2, 3)))
    with pytest.raises(fg.ArgumentValueError, match="trans must be"):
        fg.scipy.linalg.solve_triangular(fg.asarray(a), fg.asarray(b), trans=5)


def test_scipy_stats_equal_scipy_and_differentiate() -> None:
    x = np.linspace(-4, 4, 9)
    for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        np.testing.assert_allclose(getattr(fg.scipy.stats.norm, name)(fg.asarray(x), 1.0, 2.0).numpy(),
                                   getattr(ss.norm, name)(x, 1.0, 2.0), rtol=1e-10, err_msg=name)
    rng = np.random.default_rng(2)
    s, mean, xs = _spd(rng, 3), rng.standard_normal(3), rng.standard_normal((5, 3))
    for args in ((xs, mean, s), (xs[0], mean, s), (xs, mean, 2.0)):
        wrapped = [a if isinstance(a, float) else fg.asarray(a) for a in args]  # (a Python float stays one)
        np.testing.assert_allclose(fg.scipy.stats.multivariate_normal.logpdf(*wrapped).numpy(),
                                   ss.multivariate_normal.logpdf(*args), rtol=1e-10)
    np.testing.assert_allclose(fg.scipy.stats.multivariate_normal.pdf(*map(fg.asarray, (xs, mean, s))).numpy(),
                               ss.multivariate_normal.pdf(xs, mean, s), rtol=1e-10)
    check_grads(lambda v, m, c: fg.scipy.stats.multivariate_normal.logpdf(v, m, (c + c.T) / 2),
                tuple(map(fg.asarray, (xs, mean, s))), order=1)
    check_grads(lambda v, m, sd: fg.scipy.stats.norm.logcdf(v, m, sd), tuple(map(fg.asarray, (x, 0.5, 1.5))), order=1)


def _jax_rule(name, step, *extra):
    """The rules written out, one leaf, as JAX's ``example_libraries.optimizers`` has them."""
    def run(x, grads):
        state = [np.zeros_like(x), np.zeros_like(x)]
        for i, g in enumerate(grads):
            m, v = state
            if name == "momentum":
                m = extra[0] * m + g
                x = x - step * m
            elif name == "rmsprop":
                v = v * 0.9 + g * g * 0.1
                x = x - step * g / np.sqrt(v + 1e-8)
            elif name == "adam":
                m, v = 0.1 * g + 0.9 * m, 0.001 * g * g + 0.999 * v
                x = x - step * (m / (1 - 0.9 ** (i + 1))) / (np.sqrt(v / (1 - 0.999 ** (i + 1))) + 1e-8)
            state = [m, v]
        return x
    return run


@pytest.mark.parametrize("name,extra", [("momentum", (0.9,)), ("rmsprop", ()), ("adam", ())])
def test_example_libraries_optimizers_take_jaxs_steps(name, extra) -> None:
    rng = np.random.default_rng(3)
    x0 = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(3)}
    grads = [{k: rng.standard_normal(v.shape) for k, v in x0.items()} for _ in range(4)]
    init, update, get_params = getattr(optimizers, name)(0.01, *extra)
    state = init(fg.tree.map(fg.asarray, x0))
    for i, g in enumerate(grads):
        state = update(i, fg.tree.map(fg.asarray, g), state)
    want = {k: _jax_rule(name, 0.01, *extra)(x0[k], [g[k] for g in grads]) for k in x0}
    got = get_params(state)
    for k in x0:
        np.testing.assert_allclose(got[k].numpy(), want[k], rtol=1e-12)
    try:
        from jax.example_libraries import optimizers as jax_optimizers
    except ImportError:
        return
    j_init, j_update, j_get = getattr(jax_optimizers, name)(0.01, *extra)
    jstate = j_init({k: np.float32(v) for k, v in x0.items()})
    fstate = init({k: fg.asarray(v, dtype=fg.float32) for k, v in x0.items()})
    for i, g in enumerate(grads):
        jstate = j_update(i, {k: np.float32(v) for k, v in g.items()}, jstate)
        fstate = update(i, {k: fg.asarray(v, dtype=fg.float32) for k, v in g.items()}, fstate)
    for k in x0:
        np.testing.assert_allclose(get_params(fstate)[k].numpy(), np.asarray(j_get(jstate)[k]), rtol=2e-6, atol=1e-7)


def test_example_libraries_schedules_and_utilities() -> None:
    init, update, get_params = optimizers.sgd(optimizers.exponential_decay(0.1, 10, 0.5))
    state = update(10, fg.ones(2), init(fg.zeros(2)))
    np.testing.assert_allclose(get_params(state).numpy(), [-0.05, -0.05])
    assert float(optimizers.piecewise_constant([5, 10], [1.0, 0.5, 0.1])(7)) == 0.5
    clipped = optimizers.clip_grads({"a": fg.full((4,), 3.0)}, 1.0)
    np.testing.assert_allclose(optimizers.l2_norm(clipped).item(), 1.0, rtol=1e-6)


def test_functional_batch_norm_is_pytorchs() -> None:
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((4, 3, 5)), np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    mean, var = x.mean((0, 2)), x.var((0, 2))
    want = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w[:, None] + b[:, None]
    F = fg.nn.functional
    running = [fg.nn.Parameter(fg.zeros(3, dtype=fg.float64), requires_grad=False),
               fg.nn.Parameter(fg.ones(3, dtype=fg.float64), requires_grad=False)]
    out = F.batch_norm(fg.asarray(x), *running, fg.asarray(w), fg.asarray(b), training=True, momentum=0.1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(running[0].numpy(), 0.1 * mean)  # (updated, as PyTorch does in place)
    np.testing.assert_allclose(running[1].numpy(), 0.9 + 0.1 * x.var((0, 2), ddof=1))
    evaluated = F.batch_norm(fg.asarray(x), fg.asarray(mean), fg.asarray(var), fg.asarray(w), fg.asarray(b))
    np.testing.assert_allclose(evaluated.numpy(), want, rtol=1e-10)
    with pytest.raises(fg.ArgumentValueError, match="cannot change"):
        F.batch_norm(fg.asarray(x), fg.zeros(3), fg.ones(3), training=True)
    with pytest.raises(fg.ArgumentValueError, match="needed when training=False"):
        F.batch_norm(fg.asarray(x), None, None)


def test_cudnn_switches_are_accepted() -> None:
    fg.backends.cudnn.benchmark = True
    fg.backends.cudnn.deterministic = True
    assert fg.backends.cudnn.benchmark and not fg.backends.cudnn.is_available()
    fg.backends.cudnn.benchmark = fg.backends.cudnn.deterministic = False


def test_dataloader_workers_run_without_a_main_guard_and_a_dead_worker_raises(tmp_path) -> None:
    script = tmp_path / "noguard.py"
    script.write_text(textwrap.dedent("""
        import os
        import funcgrad as fg
        from funcgrad.utils.data import DataLoader, Dataset, TensorDataset
        ds = TensorDataset(fg.arange(20.0).reshape(10, 2), fg.arange(10))
        print([y.tolist() for _, y in DataLoader(ds, batch_size=4, num_workers=2)])
        class Dying(Dataset):
            def __len__(self): return 8
            def __getitem__(self, i):
                if i == 5: os._exit(3)
                return fg.asarray(float(i))
        try:
            list(DataLoader(Dying(), batch_size=2, num_workers=2))
        except RuntimeError as exc:
            print("raised:", exc)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]"
    assert lines[1].startswith("raised: DataLoader: a worker process exited unexpectedly")
