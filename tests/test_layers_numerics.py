"""Layer numerics without PyTorch (these run in CI): conv2d against a naive loop, and
check_grads (finite differences, float64) through every composite layer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

nn, F = fg.nn, fg.nn.functional
RNG = np.random.default_rng(0)


def naive_conv2d(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for ni in range(n):
        for oi in range(o):
            g = oi // og
            for i in range(oh):
                for j in range(ow):
                    patch = xp[ni, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                               j * sw:j * sw + dw * (kw - 1) + 1:dw]
                    out[ni, oi, i, j] = (patch * w[oi]).sum() + (b[oi] if b is not None else 0.0)
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 2), st.sampled_from([1, 2]), st.integers(1, 2), st.integers(0, 2), st.integers(1, 2),
       st.integers(1, 3), st.booleans())
def test_conv2d_matches_a_naive_loop(groups, cg, stride, padding, dilation, kernel, bias) -> None:
    c, o = cg * groups, 2 * groups
    x = RNG.standard_normal((2, c, 7, 6))
    w = RNG.standard_normal((o, cg, kernel, kernel))
    b = RNG.standard_normal(o) if bias else None
    got = F.conv2d(fg.asarray(x), fg.asarray(w), None if b is None else fg.asarray(b), stride, padding, dilation,
                   groups)
    want = naive_conv2d(x, w, b, (stride, stride), (padding, padding), (dilation, dilation), groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 2), st.integers(1, 2))
def test_conv2d_same_padding_keeps_the_size_and_pads_the_extra_after(kh, kw, dh, dw) -> None:
    """padding="same": total padding dilation * (kernel - 1) per axis, the odd one after (as
    PyTorch), so the output has the input's height and width."""
    x = RNG.standard_normal((1, 2, 6, 5))
    w = RNG.standard_normal((3, 2, kh, kw))
    got = F.conv2d(fg.asarray(x), fg.asarray(w), padding="same", dilation=(dh, dw))
    th, tw = dh * (kh - 1), dw * (kw - 1)
    padded = np.pad(x, ((0, 0), (0, 0), (th // 2, th - th // 2), (tw // 2, tw - tw // 2)))
    want = naive_conv2d(padded, w, None, (1, 1), (0, 0), (dh, dw), 1)
    assert got.shape == (1, 3, 6, 5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=8), st.sampled_from([None, 0, 2, -1]))
def test_embedding_gradient_counts_each_use_except_the_padding_row(indices, padding_idx) -> None:
    """The weight's gradient row r is the sum of the output cotangents where the index is
    r (a scatter-add), and zero for the padding row."""
    weight = fg.asarray(RNG.standard_normal((5, 3)))
    idx = np.array(indices)
    w = RNG.standard_normal((len(indices), 3))
    g = fg.grad(lambda t: (F.embedding(fg.asarray(idx), t, padding_idx) * fg.asarray(w)).sum())(weight)
    want = np.zeros((5, 3))
    np.add.at(want, idx, w)
    if padding_idx is not None:
        want[padding_idx % 5] = 0.0
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(F.embedding(fg.asarray(idx), weight, padding_idx).numpy(), weight.numpy()[idx])


def naive_avg_pool2d(x, k, s, p, ceil_mode, count_include_pad):
    """PyTorch's average pooling, one window at a time, from its documented formula."""
    n, c, h, w = x.shape
    def size(i):
        out = (-(-(i + 2 * p - k) // s) if ceil_mode else (i + 2 * p - k) // s) + 1
        return out - 1 if ceil_mode and (out - 1) * s >= i + p else out
    oh, ow = size(h), size(w)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            area = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            divisor = area if count_include_pad else (h1 - h0) * (w1 - w0)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].sum((2, 3)) / divisor
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 7), st.integers(4, 7), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1), st.booleans(),
       st.booleans())
def test_avg_pool2d_matches_pytorchs_formula(h, w, k, s, p, ceil_mode, count_include_pad) -> None:
    if p > k // 2:
        p = 0
    x = RNG.standard_normal((1, 2, h, w))
    got = F.avg_pool2d(fg.asarray(x), k, s, p, ceil_mode, count_include_pad)
    np.testing.assert_allclose(got.numpy(), naive_avg_pool2d(x, k, s, p, ceil_mode, count_include_pad), rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.integers(1, 4), st.integers(1, 4))
def test_adaptive_avg_pool2d_averages_pytorchs_bins(h, w, oh, ow) -> None:
    x = RNG.standard_normal((1, 2, h, w))
    got = F.adaptive_avg_pool2d(fg.asarray(x), (oh, ow)).numpy()
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * h // oh, -(-(i + 1) * h // oh))
            cols = slice(j * w // ow, -(-(j + 1) * w // ow))
            np.testing.assert_allclose(got[..., i, j], x[..., rows, cols].mean((2, 3)), rtol=1e-12)


def _params64(module):
    return {k: fg.asarray(v.numpy().astype(np.float64)) for k, v in module.named_parameters()}


class _PoolUnpool(nn.Module):
    """Max pooling with its indices, then unpooling: the gradient reaches each window's
    maximum through the pooled value and the scatter that puts it back."""

    def __init__(self) -> None:
        super().__init__()
        self.pool, self.unpool = nn.MaxPool2d(2, stride=2, padding=1, return_indices=True), nn.MaxUnpool2d(2, 2, 1)

    def forward(self, x):
        out, idx = self.pool(x)
        return self.unpool(out * 3.0, idx, output_size=x.shape[2:])


LAYERS = [  # (name, module factory, input shape): every composite layer, in float64 here
    ("conv2d", lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), (2, 2, 5, 5)),
    ("conv2d_groups_dilation", lambda: nn.Conv2d(4, 2, 2, dilation=2, groups=2), (1, 4, 5, 5)),
    ("conv2d_reflect", lambda: nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="reflect"), (1, 2, 4, 5)),
    ("conv2d_circular", lambda: nn.Conv2d(2, 2, 2, padding="same", padding_mode="circular"), (1, 2, 3, 4)),
    ("maxpool", lambda: nn.MaxPool2d(2), (1, 2, 4, 4)),
    ("avgpool", lambda: nn.AvgPool2d(3, stride=1, padding=1), (1, 2, 4, 4)),
    ("avgpool_ceil", lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     (1, 2, 6, 5)),
    ("maxpool_ceil", lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True), (1, 2, 6, 5)),
    ("adaptive_avgpool", lambda: nn.AdaptiveAvgPool2d((2, 3)), (1, 2, 5, 4)),
    ("elu_softplus", lambda: nn.Sequential(nn.ELU(0.5), nn.Softplus(beta=2.0)), (2, 3)),
    ("layernorm", lambda: nn.LayerNorm(4), (3, 4)),
    ("layernorm_no_affine", lambda: nn.LayerNorm(4, elementwise_affine=False), (3, 4)),
    ("batchnorm1d_no_affine", lambda: nn.BatchNorm1d(3, affine=False), (4, 3)),
    ("batchnorm2d_no_bias", lambda: nn.BatchNorm2d(2, bias=False), (3, 2, 2, 2)),
    ("batchnorm2d", lambda: nn.BatchNorm2d(2), (3, 2, 3, 3)),
    ("lstm", lambda: nn.LSTM(3, 4), (3, 2, 3)),
    ("lstm_bidirectional", lambda: nn.LSTM(3, 2, num_layers=2, bidirectional=True), (3, 2, 3)),
    ("lstm_projected", lambda: nn.LSTM(3, 3, num_layers=2, bidirectional=True, proj_size=2), (3, 2, 3)),
    ("maxpool_unpool", lambda: _PoolUnpool(), (1, 2, 5, 4)),
    ("linear_gelu", lambda: nn.Sequential(nn.Linear(4, 3), nn.GELU(), nn.Linear(3, 2)), (2, 4)),
]


@pytest.mark.parametrize("name,make,shape", LAYERS)
def test_layer_gradients_match_finite_differences(name, make, shape) -> None:
    fg.manual_seed(0)
    module = make()
    params = _params64(module)
    rng = np.random.default_rng(sum(map(ord, name)))  # the same input whatever ran before
    # pooling layers: values at least 0.05 apart, so no finite-difference step crosses a tie
    values = (rng.permutation(int(np.prod(shape))) - 10.0) * 0.05 if "pool" in name else rng.standard_normal(shape)
    x = fg.asarray(np.reshape(values, shape))

    def f(p, inp):
        out = nn.functional_call(module, p, inp)
        out = out[0] if isinstance(out, tuple) else out
        return (out * fg.sin(out)).sum()

    check_grads(lambda inp: f(params, inp), [x], order=1)
    check_grads(lambda *vals: f(dict(zip(params, vals)), x), list(params.values()), order=1)


@pytest.mark.parametrize("kwargs", [dict(), dict(kdim=3, vdim=3, add_bias_kv=True, add_zero_attn=True)])
def test_attention_gradients_match_finite_differences(kwargs) -> None:
    fg.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, **kwargs)
    params = _params64(mha)
    q = fg.asarray(RNG.standard_normal((3, 2, 4)))
    kv = fg.asarray(RNG.standard_normal((2, 2, kwargs.get("kdim", 4))))

    def f(qq, kk):
        out, weights = nn.functional_call(mha, params, qq, kk, kk)
        return (out * out).sum() + weights.sum()

    check_grads(f, [q, kv], order=1)
    check_grads(lambda *vals: (nn.functional_call(mha, dict(zip(params, vals)), q, kv, kv)[0] ** 2).sum(),
                list(params.values()), order=1)  # and the parameters' (bias_k and bias_v among them)


def test_cross_entropy_gradient_matches_finite_differences() -> None:
    logits = fg.asarray(RNG.standard_normal((4, 3)))
    target = fg.array([0, 2, 1, 1])
    check_grads(lambda z: F.cross_entropy(z, target, label_smoothing=0.1), [logits], order=2)
    check_grads(lambda z: F.cross_entropy(z, fg.array([0, -100, 1, 2])), [logits], order=2)


def test_batchnorm_running_stats_never_hold_tracers() -> None:
    bn = nn.BatchNorm1d(3)
    x = fg.asarray(RNG.standard_normal((4, 3)).astype(np.float32))
    g = fg.grad(lambda v: bn(v).sum())(x)                 # fine under grad: statistics stay concrete
    assert isinstance(bn.running_mean, fg.Array) and g.shape == (4, 3)
    with pytest.raises(fg.ConcretizationError, match="model.eval"):
        fg.trace(lambda v: bn(v).sum())(x)
    bn.eval()
    assert "reduce_sum" in str(fg.trace(lambda v: bn(v).sum())(x))
