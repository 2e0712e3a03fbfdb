"""Three-dimensional convolution and pooling (``nn/conv3d.py``) against PyTorch: values,
input and parameter gradients, ``repr``, indices (ties, NaNs and padding included), and the
1-d and 3-d unpooling and LP pooling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import F, _compare, needs_torch, nn, torch
from .test_nn_layers import _matches_pytorch


def _volume(shape, seed=0, awkward=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if awkward:  # a plateau (ties) and NaNs
        x[0, 0, :2, :2, :2] = 1.0
        x[-1, -1, 1, 1, 1:3] = np.nan
    return x


@needs_torch
@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.Conv3d(2, 4, 3), (2, 2, 5, 6, 5)), (lambda m: m.Conv3d(4, 6, (3, 2, 1), 2, 1, 1, 2), (2, 4, 6, 5, 4)),
    (lambda m: m.Conv3d(2, 3, 2, padding="same", dilation=(1, 2, 1)), (1, 2, 4, 5, 4)),
    (lambda m: m.Conv3d(2, 3, 2, bias=False), (2, 5, 4, 3)),
    (lambda m: m.ConvTranspose3d(4, 2, 3, 2, 1, 1), (2, 4, 3, 4, 3)),
    (lambda m: m.ConvTranspose3d(4, 6, (2, 3, 2), 1, 0, 0, 2), (1, 4, 3, 3, 2)),
    (lambda m: m.AvgPool3d(2), (2, 3, 4, 6, 4)), (lambda m: m.AvgPool3d(3, 2, 1, True, False), (2, 3, 5, 6, 7)),
    (lambda m: m.AvgPool3d((2, 3, 2), divisor_override=5), (1, 2, 4, 6, 4)),
    (lambda m: m.MaxPool3d(2), (2, 3, 4, 6, 4)), (lambda m: m.MaxPool3d(3, 2, 1, ceil_mode=True), (2, 3, 5, 6, 7)),
    (lambda m: m.MaxPool3d(2, 1, dilation=2), (1, 2, 5, 5, 5)),
    (lambda m: m.AdaptiveAvgPool3d((2, 3, 4)), (2, 3, 5, 7, 6)), (lambda m: m.AdaptiveMaxPool3d(3), (2, 3, 5, 7, 6)),
    (lambda m: m.AdaptiveMaxPool3d((None, 2, 3)), (1, 2, 4, 5, 7)),
])
def test_three_dimensional_layers_match_pytorch(make, shape) -> None:
    _matches_pytorch(make, shape, np.random.default_rng(1))


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=2, stride=1, dilation=2)])
def test_max_pool3d_indices_ties_and_nans_are_pytorchs(kwargs) -> None:
    x = _volume((2, 3, 5, 6, 5), 2, awkward=True)
    tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
    tout, tidx = torch.nn.functional.max_pool3d(tx, return_indices=True, **kwargs)
    fout, fidx = F.max_pool3d(fx, return_indices=True, **kwargs)
    np.testing.assert_array_equal(fout.numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(fidx.numpy(), tidx.numpy())
    tout.sum().backward()
    fout.sum().backward()
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())  # (the first maximum gets it all)
    if "dilation" not in kwargs:
        args = (kwargs["kernel_size"], kwargs.get("stride"), kwargs.get("padding", 0))
        want = torch.nn.functional.max_unpool3d(tout.detach(), tidx, *args, output_size=x.shape[2:])
        got = F.max_unpool3d(fout, fidx, *args, output_size=x.shape[2:])
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    tout, tidx = torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), (3, 4, 2), return_indices=True)
    fout, fidx = F.adaptive_max_pool3d(fg.asarray(x), (3, 4, 2), return_indices=True)
    np.testing.assert_array_equal(fidx.numpy(), tidx.numpy())


@needs_torch
def test_one_dimensional_unpooling_and_lp_pool3d_match_pytorch() -> None:
    x = np.random.default_rng(3).standard_normal((2, 3, 9)).astype(np.float32)
    out, idx = torch.nn.functional.max_pool1d(torch.tensor(x), 3, 2, 1, return_indices=True)
    tm, fm = torch.nn.MaxUnpool1d(3, 2, 1), nn.MaxUnpool1d(3, 2, 1)
    assert repr(fm) == repr(tm)
    np.testing.assert_array_equal(fm(fg.asarray(out.numpy()), fg.asarray(idx.numpy()), output_size=(9,)).numpy(),
                                  tm(out, idx, output_size=(9,)).numpy())
    xp = np.abs(_volume((2, 2, 4, 4, 6), 4)) + 0.1
    _compare(torch.nn.LPPool3d(2, 2), nn.LPPool3d(2, 2), [xp])
    assert repr(nn.LPPool3d(2, (1, 2, 2))) == repr(torch.nn.LPPool3d(2, (1, 2, 2)))


@needs_torch
def test_lazy_three_dimensional_convolutions() -> None:
    for name, args, shape in (("LazyConv3d", (4, 2), (2, 3, 4, 4, 4)), ("LazyConvTranspose3d", (4, 2), (3, 3, 3, 3))):
        fm, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(fm) == repr(tm)
        x = _volume(shape if len(shape) == 5 else (1, *shape), 5)[0 if len(shape) == 4 else slice(None)]
        assert tuple(fm(fg.asarray(x)).shape) == tuple(tm(torch.tensor(x)).shape) and repr(fm) == repr(tm)


@settings(max_examples=15, deadline=None)
@given(d=st.integers(3, 6), h=st.integers(3, 6), w=st.integers(3, 6), k=st.integers(1, 3), s=st.integers(1, 2))
def test_conv3d_is_the_sum_over_its_window(d, h, w, k, s) -> None:
    """Each output is the sum of the kernel times its window (a direct loop), and a 1x1x1
    kernel on a volume is a per-position product."""
    rng = np.random.default_rng(d * 100 + h * 10 + w)
    x = rng.standard_normal((1, 2, d, h, w))
    weight = rng.standard_normal((3, 2, k, k, k))
    got = F.conv3d(fg.asarray(x), fg.asarray(weight), stride=s).numpy()
    for o in range(3):
        for i in range(got.shape[2]):
            for j in range(got.shape[3]):
                for m in range(got.shape[4]):
                    window = x[0, :, i * s:i * s + k, j * s:j * s + k, m * s:m * s + k]
                    np.testing.assert_allclose(got[0, o, i, j, m], (window * weight[o]).sum(), rtol=1e-10)
    with pytest.raises(fg.ShapeError, match="conv3d: expected a"):
        F.conv3d(fg.ones((2, 3)), fg.asarray(weight))
