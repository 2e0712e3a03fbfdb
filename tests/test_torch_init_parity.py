"""``fg.manual_seed(s)`` then a layer: PyTorch's weights for ``torch.manual_seed(s)``. The
initialisers draw from PyTorch's CPU generator (mt19937) with its transforms
(``backends/random_state.TorchGenerator``): uniform draws bit for bit, normal ones bit for
bit in float64 and below 16 elements, within a few ulp otherwise (PyTorch's own float32
normals of 16 or more depend on the CPU's vector units)."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.backends.random_state import TORCH_DEFAULT_SEED, TorchGenerator

from .nn_common import needs_torch, nn, torch

EXACT = {
    "Linear": lambda m: m.Linear(20, 7), "Conv2d": lambda m: m.Conv2d(3, 5, 3), "Conv1d": lambda m: m.Conv1d(4, 6, 2, groups=2),
    "ConvTranspose2d": lambda m: m.ConvTranspose2d(3, 4, 3), "Bilinear": lambda m: m.Bilinear(3, 4, 5),
    "LSTM": lambda m: m.LSTM(4, 6, num_layers=2), "GRU": lambda m: m.GRU(3, 5), "RNN": lambda m: m.RNN(3, 4, bidirectional=True),
    "LSTMCell": lambda m: m.LSTMCell(3, 4), "MultiheadAttention": lambda m: m.MultiheadAttention(8, 2),
    "MultiheadAttention kdim": lambda m: m.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True),
    "TransformerEncoderLayer": lambda m: m.TransformerEncoderLayer(8, 2, 16),
    "TransformerDecoderLayer": lambda m: m.TransformerDecoderLayer(8, 2, 16),
    "Transformer": lambda m: m.Transformer(8, 2, 2, 1, 16), "PReLU": lambda m: m.PReLU(3),
    "Embedding of few": lambda m: m.Embedding(3, 4), "BatchNorm2d": lambda m: m.BatchNorm2d(3),
    "MLP": lambda m: m.Sequential(m.Linear(4, 8), m.ReLU(), m.Linear(8, 2), m.Linear(2, 2)),
}


@needs_torch
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("name", sorted(EXACT))
@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_layers_start_from_pytorchs_weights(name, seed) -> None:
    torch.manual_seed(seed)
    want = EXACT[name](torch.nn).state_dict()
    fg.manual_seed(seed)
    got = EXACT[name](nn).state_dict()
    assert list(got) == list(want)
    for key in want:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)


@needs_torch
def test_normal_initialisers_follow_pytorchs_stream() -> None:
    """Exact in float64 and for fewer than 16 values; float32 blocks of 16 within a few ulp;
    the streams stay in step (the layer after a normal one is exact again)."""
    makers = [lambda m: m.Embedding(10, 4), lambda m: m.Linear(5, 3), lambda m: m.Embedding(2, 3),
              lambda m: m.Linear(2, 2)]
    torch.manual_seed(1)
    want = [make(torch.nn).state_dict() for make in makers]
    fg.manual_seed(1)
    got = [make(nn).state_dict() for make in makers]
    np.testing.assert_allclose(got[0]["weight"].numpy(), want[0]["weight"].numpy(), rtol=1e-6, atol=1e-6)
    for g, w in zip(got[1:], want[1:]):
        for key in w:
            np.testing.assert_array_equal(g[key].numpy(), w[key].numpy(), err_msg=key)
    for dtype, tdtype in ((fg.float64, torch.float64), (fg.float32, torch.float32)):
        for shape in ((3,), (15,), (16,), (37,), (4, 9)):
            torch.manual_seed(5)
            t = torch.empty(shape, dtype=tdtype)
            torch.nn.init.normal_(t, 0.5, 2.0)
            torch.nn.init.kaiming_normal_(t2 := torch.empty(4, 3, dtype=tdtype))
            fg.manual_seed(5)
            p = nn.init.normal_(nn.Parameter(fg.zeros(shape, dtype=dtype)), 0.5, 2.0)
            p2 = nn.init.kaiming_normal_(nn.Parameter(fg.zeros((4, 3), dtype=dtype)))
            exact = dtype == fg.float64 or int(np.prod(shape)) < 16
            for a, b in ((p, t), (p2, t2)):
                if exact:
                    np.testing.assert_array_equal(a.numpy(), b.numpy())
                else:
                    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), n=st.integers(0, 300), dtype=st.sampled_from(["float32", "float64"]),
       low=st.floats(-5, 5), width=st.floats(0.01, 10))
def test_uniform_draws_are_pytorchs_bit_for_bit(seed, n, dtype, low, width) -> None:
    torch.manual_seed(seed)
    want = torch.empty(n, dtype=getattr(torch, dtype)).uniform_(low, low + width).numpy()
    got = TorchGenerator(seed).uniform(low, low + width, (n,), dtype)
    np.testing.assert_array_equal(got, want)


@needs_torch
def test_permutations_and_the_unseeded_start_are_pytorchs() -> None:
    torch.manual_seed(11)
    want = [torch.randperm(n).numpy() for n in (1, 2, 10, 100)]
    g = TorchGenerator(11)
    for w in want:
        np.testing.assert_array_equal(g.permutation(len(w)), w)
    assert torch.Generator().initial_seed() == TORCH_DEFAULT_SEED
    np.testing.assert_array_equal(TorchGenerator().uniform(0, 1, (5,)), torch.rand(5, generator=torch.Generator()).numpy())
    torch.manual_seed(2)
    rows = torch.empty(6, 5)
    torch.nn.init.sparse_(rows, 0.5)
    fg.manual_seed(2)
    ours = nn.init.sparse_(nn.Parameter(fg.zeros((6, 5))), 0.5).numpy()
    np.testing.assert_array_equal(ours == 0, rows.numpy() == 0)  # the same entries zeroed


def test_lazy_modules_and_stand_ins_leave_the_stream_where_it_was() -> None:
    fg.manual_seed(3)
    direct = nn.Linear(6, 4).weight.numpy()
    fg.manual_seed(3)
    lazy = nn.LazyLinear(4)
    lazy(fg.ones((1, 6)))
    np.testing.assert_array_equal(lazy.weight.numpy(), direct)


@needs_torch
@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), n=st.integers(0, 200), dtype=st.sampled_from(["float32", "float64"]),
       mean=st.floats(-2, 2), std=st.floats(0.2, 3), a=st.floats(-4, 4), width=st.floats(0.05, 6))
def test_trunc_normal_draws_pytorchs_values(seed, n, dtype, mean, std, a, width) -> None:
    """Both of PyTorch's samplers (normal values redrawn where out of range when [a, b] holds
    more than 0.3 of the mass, uniform candidates accepted by their density elsewhere): its
    values, and the stream left where PyTorch leaves it."""
    b = a + width
    torch.manual_seed(seed)
    want = torch.nn.init.trunc_normal_(torch.empty(n, dtype=getattr(torch, dtype)), mean, std, a, b).numpy()
    after = torch.rand(3, dtype=torch.float64).numpy()
    fg.manual_seed(seed)
    got = nn.init.trunc_normal_(nn.Parameter(fg.zeros((n,), dtype=getattr(fg, dtype))), mean, std, a, b).numpy()
    assert ((got >= np.float32(a)) & (got <= np.float32(b))).all() if dtype == "float32" else ((got >= a) & (got <= b)).all()
    if dtype == "float64" or n < 16:
        np.testing.assert_array_equal(got, want)
    else:  # (the normal sampler's float32 blocks of 16: within a few ulp, as normal_'s)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(fg.rand(3, dtype=fg.float64).numpy(), after)


@needs_torch
def test_trunc_normal_of_a_vision_transformers_weights_is_pytorchs() -> None:
    """timm's ViT initialisation, ``trunc_normal_(w, std=0.02)`` (bounds +-2 absolute, so the
    normal sampler), and a range far in the tail (the density sampler), in float32."""
    for shape, args in (((192, 64), (0.0, 0.02)), ((3, 4, 5), (0.0, 1.0, 1.5, 3.0)), ((50,), (0.0, 1.0, 20.0, 21.0))):
        torch.manual_seed(4)
        want = torch.nn.init.trunc_normal_(torch.empty(shape), *args).numpy()
        fg.manual_seed(4)
        with pytest.warns(UserWarning, match="more than 2 std") if args[-2:] == (20.0, 21.0) else _no_warning():
            got = nn.init.trunc_normal_(nn.Parameter(fg.zeros(shape)), *args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@contextlib.contextmanager
def _no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 5, 16, 17, 37, 100])
def test_sixteen_bit_draws_are_pytorchs(dtype, n) -> None:
    """16-bit uniforms are float32's rounded (one that rounds up to the upper bound becomes
    the lower); normals come in whole blocks of 16, the last block's values ending the
    array; trunc_normal_'s normal sampler, and its density sampler for a standard normal:
    PyTorch's values and its stream after them."""
    draws = [("uniform_", (-0.3, 2.5)), ("uniform_", (1.5, 3.0)), ("normal_", (0.5, 2.0)),
             ("trunc_normal_", (0.0, 1.0, -2.0, 2.0)), ("trunc_normal_", (0.0, 1.0, 1.5, 3.0))]
    for name, args in draws:
        torch.manual_seed(n)
        want = getattr(torch.nn.init, name)(torch.empty(n, dtype=getattr(torch, dtype)), *args).float().numpy()
        after = torch.rand(2, dtype=getattr(torch, dtype)).float().numpy()
        fg.manual_seed(n)
        got = getattr(nn.init, name)(nn.Parameter(fg.zeros((n,), dtype=getattr(fg, dtype))), *args).numpy()
        np.testing.assert_array_equal(got.astype(np.float32), want, err_msg=name)
        np.testing.assert_array_equal(fg.rand(2, dtype=getattr(fg, dtype)).numpy().astype(np.float32), after)
