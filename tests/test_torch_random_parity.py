"""fg.manual_seed's streams are torch.manual_seed's: every PyTorch-style draw, dropout mask,
data order and generator state after the same seed, bit for bit, against torch 2.13.0."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad.backends import cc
from funcgrad.random import xla_math
from funcgrad.utils import data as fd
from tests.backends import compile_backend

torch = pytest.importorskip("torch")
TF = torch.nn.functional
td = torch.utils.data


def _same(want: object, got: object) -> None:
    w = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    g = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert w.dtype == g.dtype and w.shape == g.shape, (w.dtype, g.dtype, w.shape, g.shape)
    assert w.tobytes() == g.tobytes(), (w.ravel()[:6], g.ravel()[:6])


def _seed(seed: int) -> None:
    torch.manual_seed(seed)
    fg.manual_seed(seed)


DTYPES = [(torch.float32, fg.float32), (torch.float64, fg.float64)]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**64 - 1), st.sampled_from([(), (1,), (5,), (16,), (17,), (3, 40), (257,)]),
       st.sampled_from(DTYPES))
def test_the_draws_equal_pytorch_bit_for_bit(seed: int, shape: tuple[int, ...], dtypes: tuple) -> None:
    t, f = dtypes
    _seed(seed)
    _same(torch.rand(shape, dtype=t), fg.rand(shape, dtype=f))
    _same(torch.randn(shape, dtype=t), fg.randn(shape, dtype=f))
    _same(torch.randint(-3, 11, shape), fg.randint(-3, 11, shape))
    _same(torch.randint(0, 2**40, shape), fg.randint(0, 2**40, shape))
    _same(torch.normal(0.25, 3.0, shape, dtype=t), fg.normal(0.25, 3.0, shape, dtype=f))
    m, fm = torch.rand(shape, dtype=t), fg.rand(shape, dtype=f)
    _same(torch.normal(m, 0.5), fg.normal(fm, 0.5))
    _same(torch.normal(0.5, m), fg.normal(0.5, fm))
    _same(torch.normal(m, m), fg.normal(fm, fm))
    _same(torch.bernoulli(m), fg.bernoulli(fm))
    _same(torch.rand_like(m), fg.rand_like(fm))
    _same(torch.randn_like(m), fg.randn_like(fm))
    _same(torch.randperm(23), fg.randperm(23))
    _same(torch.get_rng_state(), fg.get_rng_state())  # and the stream in step after them


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_normal_arrays_take_pytorchs_box_muller_under_both_backends(backend: str) -> None:
    """Float32 normals of 16 or more: PyTorch's vectorized kernel (its polynomial log, sin and
    cos on an AVX2 CPU, the C library's elsewhere), with mean and std fused as it fuses them."""
    with compile_backend(backend):
        for seed in range(6):
            _seed(seed)
            _same(torch.empty(1000).normal_(0.3, 0.02), fg.normal(0.3, 0.02, (1000,)))
            _same(torch.randn(4096), fg.randn(4096))
            _same(torch.normal(-1.0, 2.5, (33,), dtype=torch.float64), fg.normal(-1.0, 2.5, (33,), dtype=fg.float64))


def test_without_a_compiler_the_draws_are_still_pytorchs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C library's functions one ctypes call at a time, the AVX2 kernel's in NumPy,
    randperm's swaps in Python, erfinv (fg.random.normal) as array operations."""
    angles = np.linspace(-1.5, 1.5, 301)
    native = [cc.libm("tan", angles.astype(np.float32)), cc.libm("log", angles + 2.0)]
    cauchy = fg.random.cauchy(fg.random.key(3), (64,)).numpy()
    normal = fg.random.normal(fg.random.key(3), (300,)).numpy()  # (erfinv's native loop)
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(cc, "_LOADED", {})
    monkeypatch.setattr(cc, "_FAILED", {})
    cc.toolchain.cache_clear()
    xla_math._native_erfinv32.cache_clear()
    try:
        _same(normal, fg.random.normal(fg.random.key(3), (300,)))  # (the same steps as array operations)
        _seed(2)
        _same(torch.normal(0.5, 2.0, (40,), dtype=torch.float64), fg.normal(0.5, 2.0, (40,), dtype=fg.float64))
        _same(torch.randn(100), fg.randn(100))
        _same(torch.randperm(50), fg.randperm(50))
        _same(native[0], cc.libm("tan", angles.astype(np.float32)))
        _same(native[1], cc.libm("log", angles + 2.0))
        _same(cauchy, fg.random.cauchy(fg.random.key(3), (64,)))
    finally:
        cc.toolchain.cache_clear()
        xla_math._native_erfinv32.cache_clear()


_DEFAULT_BUILD_CHECK = """
import numpy as np, torch, funcgrad as fg
for seed in range(12):
    for t, f in [(torch.float32, fg.float32), (torch.float64, fg.float64)]:
        for n in (5, 40):
            torch.manual_seed(seed); fg.manual_seed(seed)
            weight = fg.nn.Parameter(fg.zeros(n, dtype=f))
            pairs = [(torch.empty(n, dtype=t).uniform_(-0.37, 1.3), fg.nn.init.uniform_(weight, -0.37, 1.3)),
                     (torch.normal(0.25, 3.0, (n,), dtype=t), fg.normal(0.25, 3.0, (n,), dtype=f)),
                     (torch.randn(n, dtype=t), fg.randn(n, dtype=f))]
            for want, got in pairs:
                assert want.numpy().tobytes() == got.detach().numpy().tobytes(), (seed, t, n, want, got)
"""


def test_pytorchs_default_build_rounds_its_serial_kernels_twice() -> None:
    """Under ATEN_CPU_CAPABILITY=default (PyTorch's build for CPUs without AVX2, no fused
    multiply-add) uniform_ and a short normal_ round after the product and after the sum,
    and the draws still equal PyTorch's."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    done = subprocess.run([sys.executable, "-c", _DEFAULT_BUILD_CHECK], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([0.0, 0.1, 0.5, 0.9]), st.sampled_from(DTYPES))
def test_dropout_masks_and_outputs_equal_pytorch(seed: int, p: float, dtypes: tuple) -> None:
    t, f = dtypes
    _seed(seed)
    x, fx = torch.randn(6, 4, 5, dtype=t), fg.randn(6, 4, 5, dtype=f)
    _same(TF.dropout(x, p), F.dropout(fx, p))
    _same(TF.dropout1d(x, p), F.dropout1d(fx, p))
    _same(TF.dropout2d(x.reshape(6, 4, 5, 1), p), F.dropout2d(fx.reshape(6, 4, 5, 1), p))
    _same(TF.alpha_dropout(x, p, True), F.alpha_dropout(fx, p, True))
    _same(TF.feature_alpha_dropout(x, p, True), F.feature_alpha_dropout(fx, p, True))
    _same(TF.rrelu(x, 0.1, 0.3, training=True), F.rrelu(fx, 0.1, 0.3, training=True))
    _same(torch.nn.Dropout(p)(x), fg.nn.Dropout(p)(fx))
    _same(torch.rand(3), fg.rand(3))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 12), st.booleans(), st.sampled_from(DTYPES))
def test_multinomial_equals_pytorch(seed: int, samples: int, replacement: bool, dtypes: tuple) -> None:
    t, f = dtypes
    _seed(seed)
    probs, fprobs = torch.rand(3, 12, dtype=t), fg.rand(3, 12, dtype=f)
    _same(torch.multinomial(probs, samples, replacement), fg.multinomial(fprobs, samples, replacement))
    _same(torch.multinomial(probs[0], samples, replacement), fg.multinomial(fprobs[0], samples, replacement))
    _same(torch.rand(2), fg.rand(2))


def test_generators_and_states_pass_between_the_two() -> None:
    g, fgen = torch.Generator(), fg.Generator()
    _same(torch.rand(5, generator=g), fg.rand(5, generator=fgen))  # both from PyTorch's default seed
    assert fgen.initial_seed() == g.initial_seed() == 67280421310721
    g.manual_seed(9)
    fgen.manual_seed(9)
    _same(torch.randn(40, generator=g), fg.randn(40, generator=fgen))
    _same(g.get_state(), fgen.get_state())
    torch.manual_seed(3)
    torch.randn(5)  # a cached normal value in the state too
    fg.set_rng_state(torch.get_rng_state().numpy())
    _same(torch.randn(7), fg.randn(7))
    _same(torch.get_rng_state(), fg.get_rng_state())
    _seed(-5)  # negative seeds map as PyTorch maps them
    _same(torch.rand(4), fg.rand(4))
    assert fg.initial_seed() == torch.initial_seed()
    own = fg.seed()
    assert fg.initial_seed() == own and fg.rand(2).tolist() == fg.Generator(seed=own).engine.uniform(0, 1, (2,)).tolist()


def test_bad_states_and_seeds_raise_typed_errors() -> None:
    with pytest.raises(fg.errors.ArgumentValueError, match="5056 uint8"):
        fg.set_rng_state(np.zeros(10, np.uint8))
    with pytest.raises(fg.errors.ArgumentValueError, match="5056 uint8"):
        fg.Generator().set_state(np.zeros(5056, np.int32))
    bad = fg.get_rng_state().numpy().copy()
    bad[8:12] = np.array([0], np.int32).view(np.uint8)
    with pytest.raises(fg.errors.ArgumentValueError, match="position"):
        fg.set_rng_state(bad)
    with pytest.raises(fg.errors.ArgumentTypeError, match="manual_seed"):
        fg.manual_seed(1.5)  # type: ignore[arg-type]
    with pytest.raises(fg.errors.ArgumentValueError, match="manual_seed"):
        fg.manual_seed(2**64)
    with pytest.raises(fg.errors.ArgumentTypeError, match="generator"):
        fg.rand(2, generator=torch.Generator())  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 11])
def test_data_order_equals_pytorch(seed: int) -> None:
    _seed(seed)
    x = np.arange(23, dtype=np.float32)
    tl = td.DataLoader(td.TensorDataset(torch.from_numpy(x)), batch_size=5, shuffle=True)
    fl = fd.DataLoader(fd.TensorDataset(fg.asarray(x)), batch_size=5, shuffle=True)
    for _ in range(3):
        assert [b[0].tolist() for b in tl] == [b[0].tolist() for b in fl]
    a = td.random_split(range(10), [0.3, 0.7])
    b = fd.random_split(list(range(10)), [0.3, 0.7])
    assert [list(s) for s in a] == [list(s) for s in b]
    assert list(td.RandomSampler(range(9), replacement=True, num_samples=40)) == \
        list(fd.RandomSampler(list(range(9)), replacement=True, num_samples=40))
    g, fgen = torch.Generator().manual_seed(4), fg.Generator().manual_seed(4)
    assert list(td.RandomSampler(range(9), generator=g, num_samples=20)) == \
        list(fd.RandomSampler(list(range(9)), generator=fgen, num_samples=20))
    assert list(td.SubsetRandomSampler([3, 5, 7, 9])) == list(fd.SubsetRandomSampler([3, 5, 7, 9]))
    assert list(td.WeightedRandomSampler([0.1, 0.5, 0.2, 3], 12)) == list(fd.WeightedRandomSampler([0.1, 0.5, 0.2, 3], 12))
    assert list(td.WeightedRandomSampler([0.1, 0.5, 0.2, 3], 3, False)) == \
        list(fd.WeightedRandomSampler([0.1, 0.5, 0.2, 3], 3, False))
    ts = td.DistributedSampler(range(10), num_replicas=2, rank=1, seed=seed)
    fs = fd.DistributedSampler(list(range(10)), num_replicas=2, rank=1, seed=seed)
    ts.set_epoch(3)
    fs.set_epoch(3)
    assert list(ts) == list(fs)
    _same(torch.rand(3), fg.rand(3))


def test_vmap_draws_as_torch_func_vmap() -> None:
    _seed(0)
    a = torch.func.vmap(lambda v: v + torch.rand(3), randomness="different")(torch.zeros(4, 3))
    b = fg.vmap(lambda v: v + fg.rand(3), randomness="different")(fg.zeros((4, 3)))
    _same(a, b)
    a = torch.func.vmap(lambda v: v + torch.randn(20), randomness="same")(torch.zeros(4, 20))
    b = fg.vmap(lambda v: v + fg.randn(20), randomness="same")(fg.zeros((4, 20)))
    _same(a, b)
    inner = torch.func.vmap(lambda v: TF.dropout(v, 0.5), randomness="different")
    f_inner = fg.vmap(lambda v: F.dropout(v, 0.5), randomness="different")
    _same(torch.func.vmap(inner, randomness="different")(torch.ones(2, 3, 8)),
          fg.vmap(f_inner, randomness="different")(fg.ones((2, 3, 8))))
    _same(torch.rand(2), fg.rand(2))


def test_a_training_loop_follows_pytorchs_trajectory() -> None:
    """Initial weights, dropout masks and the data order all come from the seed: a ported
    loop's losses follow PyTorch's (to the float32 rounding of the products)."""
    x = np.random.default_rng(0).standard_normal((40, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)

    def run(lib: object, nn: object, data: object, optim: object, tensor: object) -> list[float]:
        lib.manual_seed(7)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))
        opt = optim.SGD(model.parameters(), lr=0.1)
        loader = data.DataLoader(data.TensorDataset(tensor(x), tensor(y)), batch_size=8, shuffle=True)
        losses = []
        for _ in range(3):
            for xb, yb in loader:
                loss = nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(float(loss.item()))
        return losses

    want = run(torch, torch.nn, td, torch.optim, torch.tensor)
    got = run(fg, fg.nn, fd, fg.optim, fg.asarray)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
