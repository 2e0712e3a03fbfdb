"""Transposed convolution, fold/unfold, interpolate/Upsample, pixel shuffle, adaptive max
pooling, Bilinear and nn.utils: against PyTorch (values, gradients, reprs), adjoint
properties, finite differences, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

from .nn_common import RNG, F, _compare, needs_torch, nn, torch

CONV_T = [dict(), dict(stride=2, padding=1, output_padding=1), dict(stride=(2, 3), padding=(0, 1), dilation=(1, 2)),
          dict(groups=2, stride=2), dict(bias=False, dilation=2, padding=2), dict(stride=3, output_padding=2)]


@needs_torch
@pytest.mark.parametrize("kwargs", CONV_T)
def test_conv_transpose2d_matches_pytorch(kwargs) -> None:
    x = RNG.standard_normal((2, 4, 5, 6)).astype(np.float32)
    tm, fm = torch.nn.ConvTranspose2d(4, 6, 3, **kwargs), nn.ConvTranspose2d(4, 6, 3, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=3)])
def test_conv_transpose1d_matches_pytorch(kwargs) -> None:
    x = RNG.standard_normal((3, 4, 7)).astype(np.float32)
    tm, fm = torch.nn.ConvTranspose1d(4, 2, 3, **kwargs), nn.ConvTranspose1d(4, 2, 3, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


@needs_torch
def test_conv_transpose_output_size_and_unbatched_input() -> None:
    """forward(x, output_size) picks among the sizes a stride allows, as PyTorch's does."""
    tm, fm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    _compare(tm, fm, [x])
    for size in [(7, 9), (8, 10), (1, 3, 8, 9)]:
        want = tm(torch.tensor(x), output_size=size).detach().numpy()
        np.testing.assert_allclose(fm(fg.asarray(x), output_size=size).numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="output_size"):
        fm(fg.asarray(x), output_size=(9, 9))
    one = fm(fg.asarray(x[0]))
    assert one.shape == (3, 7, 9)
    np.testing.assert_allclose(one.numpy(), fm(fg.asarray(x)).numpy()[0], rtol=1e-6)


def test_conv_transpose_is_the_adjoint_of_conv() -> None:
    """<conv2d(x, w), y> == <x, conv_transpose2d(y, w)> for every geometry conv2d takes."""
    rng = np.random.default_rng(1)
    for stride, padding, dilation, groups in [(1, 0, 1, 1), (2, 1, 1, 1), (3, 2, 2, 2), ((2, 1), (1, 0), (1, 3), 1)]:
        x = rng.standard_normal((2, 4, 11, 10))
        w = rng.standard_normal((6, 4 // groups, 3, 3))
        y_shape = F.conv2d(fg.asarray(x), fg.asarray(w), None, stride, padding, dilation, groups).shape
        y = rng.standard_normal(y_shape)
        lhs = float((F.conv2d(fg.asarray(x), fg.asarray(w), None, stride, padding, dilation, groups) * y).sum())
        short = F.conv_transpose2d(fg.asarray(y), fg.asarray(w), None, stride, padding, 0, groups, dilation)
        extra = tuple(a - b for a, b in zip(x.shape[2:], short.shape[2:]))  # the sizes one stride allows
        back = F.conv_transpose2d(fg.asarray(y), fg.asarray(w), None, stride, padding, extra, groups, dilation)
        assert abs(lhs - float((back * x).sum())) < 1e-9 * (1 + abs(lhs))


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1,
                                                             stride=(2, 1)), dict(kernel_size=3, stride=3)])
def test_unfold_and_fold_match_pytorch(kwargs) -> None:
    x = RNG.standard_normal((2, 3, 7, 8))
    tx = torch.tensor(x, requires_grad=True)
    cols = torch.nn.functional.unfold(tx, **kwargs)
    ours = F.unfold(fg.asarray(x), **kwargs)
    np.testing.assert_array_equal(ours.numpy(), cols.detach().numpy())
    back = torch.nn.functional.fold(cols, (7, 8), **kwargs)
    np.testing.assert_allclose(F.fold(ours, (7, 8), **kwargs).numpy(), back.detach().numpy(), rtol=1e-12)
    w = RNG.standard_normal(tuple(back.shape))
    (back * torch.tensor(w)).sum().backward()
    g = fg.grad(lambda a: (F.fold(F.unfold(a, **kwargs), (7, 8), **kwargs) * fg.asarray(w)).sum())(fg.asarray(x))
    np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert repr(nn.Unfold(**kwargs)) == repr(torch.nn.Unfold(**kwargs))
    assert repr(nn.Fold((7, 8), **kwargs)) == repr(torch.nn.Fold((7, 8), **kwargs))
    assert F.unfold(fg.asarray(x[0]), **kwargs).shape == tuple(cols.shape[1:])  # unbatched


@settings(max_examples=30, deadline=None)
@given(h=st.integers(3, 9), w=st.integers(3, 9), k=st.integers(1, 3), s=st.integers(1, 3), p=st.integers(0, 1),
       d=st.integers(1, 2))
def test_fold_is_the_adjoint_of_unfold(h, w, k, s, p, d) -> None:
    """<unfold(x), y> == <x, fold(y)> for any geometry that fits."""
    if d * (k - 1) + 1 > min(h, w) + 2 * p:
        return
    rng = np.random.default_rng(h * 100 + w)
    x = rng.standard_normal((1, 2, h, w))
    cols = F.unfold(fg.asarray(x), k, d, p, s)
    y = rng.standard_normal(cols.shape)
    lhs = float((cols * y).sum())
    rhs = float((F.fold(fg.asarray(y), (h, w), k, d, p, s) * x).sum())
    assert abs(lhs - rhs) < 1e-9 * (1 + abs(lhs))


INTERP = [("nearest", dict(size=(8, 11))), ("nearest", dict(scale_factor=(1.7, 0.6))),
          ("nearest-exact", dict(size=(3, 13))), ("bilinear", dict(size=(8, 11))),
          ("bilinear", dict(scale_factor=2)), ("bilinear", dict(scale_factor=0.5, recompute_scale_factor=True)),
          ("area", dict(size=(3, 4))), ("nearest", dict(scale_factor=2))]


@needs_torch
@pytest.mark.parametrize("mode,kwargs", INTERP)
@pytest.mark.parametrize("align_corners", [None, True, False])
def test_interpolate_matches_pytorch(mode, kwargs, align_corners) -> None:
    if align_corners is not None and mode != "bilinear":
        return
    for dtype, tol in ((np.float32, 2e-6), (np.float64, 1e-13)):
        x = RNG.standard_normal((2, 3, 5, 7)).astype(dtype)
        tx = torch.tensor(x, requires_grad=True)
        want = torch.nn.functional.interpolate(tx, mode=mode, align_corners=align_corners, **kwargs)
        got = F.interpolate(fg.asarray(x), mode=mode, align_corners=align_corners, **kwargs)
        assert got.shape == tuple(want.shape) and got.dtype.np == x.dtype
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol, atol=tol)
        if mode.startswith("nearest"):  # the same pixels picked, exactly
            np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
        w = RNG.standard_normal(tuple(want.shape)).astype(dtype)
        (want * torch.tensor(w)).sum().backward()
        g = fg.grad(lambda a, w=w: (F.interpolate(a, mode=mode, align_corners=align_corners, **kwargs)
                                    * fg.asarray(w)).sum())(fg.asarray(x))
        np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=tol * 10, atol=tol * 10)


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "linear", "area"])
def test_interpolate_1d_and_the_upsample_layers(mode) -> None:
    x = RNG.standard_normal((2, 3, 9)).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.tensor(x), size=13, mode=mode)
    np.testing.assert_allclose(F.interpolate(fg.asarray(x), size=13, mode=mode).numpy(), want.numpy(), atol=2e-6)
    image = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    for ours, theirs in [(nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(scale_factor=2,
                                                                                          mode="bilinear")),
                         (nn.UpsamplingNearest2d(size=(7, 3)), torch.nn.UpsamplingNearest2d(size=(7, 3))),
                         (nn.UpsamplingBilinear2d(scale_factor=3), torch.nn.UpsamplingBilinear2d(scale_factor=3))]:
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(fg.asarray(image)).numpy(), theirs(torch.tensor(image)).numpy(), atol=2e-6)


def test_interpolate_keeps_infinities_in_place_and_checks_its_arguments() -> None:
    """A pixel's value reaches only the output pixels that read it (no dense matrix)."""
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.inf
    out = F.interpolate(fg.asarray(x), scale_factor=2, mode="bilinear").numpy()
    assert np.isinf(out[0, 0, :2, :2]).all() and np.isfinite(out[0, 0, 3:, 3:]).all()
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(fg.asarray(x))
    with pytest.raises(ValueError, match="bicubic.*not supported"):
        F.interpolate(fg.asarray(x), size=3, mode="bicubic")
    with pytest.raises(fg.ShapeError, match="'bilinear' takes inputs of 4"):
        F.interpolate(fg.ones((1, 2, 3)), size=3, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners only applies"):
        F.interpolate(fg.asarray(x), size=3, align_corners=True)


def test_interpolate_gradients_by_finite_differences() -> None:
    x = fg.asarray(RNG.standard_normal((1, 2, 3, 4)))
    for mode in ("nearest", "bilinear", "area"):
        check_grads(lambda a, m=mode: F.interpolate(a, size=(5, 3), mode=m), (x,), order=1)


@needs_torch
def test_pixel_shuffle_and_adaptive_max_pool_match_pytorch() -> None:
    x = RNG.standard_normal((2, 3, 8, 2, 3))  # extra batch axes
    np.testing.assert_array_equal(F.pixel_shuffle(fg.asarray(x), 2).numpy(),
                                  torch.nn.functional.pixel_shuffle(torch.tensor(x), 2).numpy())
    y = RNG.standard_normal((2, 3, 4, 6))
    np.testing.assert_array_equal(F.pixel_unshuffle(fg.asarray(y), 2).numpy(),
                                  torch.nn.functional.pixel_unshuffle(torch.tensor(y), 2).numpy())
    assert F.pixel_shuffle(F.pixel_unshuffle(fg.asarray(y), 2), 2).tolist() == y.tolist()
    assert repr(nn.PixelShuffle(3)) == repr(torch.nn.PixelShuffle(3))
    with pytest.raises(fg.ShapeError, match="not divisible by upscale_factor"):
        F.pixel_shuffle(fg.ones((1, 5, 2, 2)), 2)
    for shape, size in [((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 5), 5), ((1, 1, 10, 3), (4, None)), ((2, 2, 3, 8), (5, 3))]:
        x = RNG.standard_normal(shape).astype(np.float32)
        tm, fm = torch.nn.AdaptiveMaxPool2d(size, return_indices=True), nn.AdaptiveMaxPool2d(size, return_indices=True)
        _compare(tm, fm, [x], out_index=0)
        np.testing.assert_array_equal(fm(fg.asarray(x))[1].numpy(), tm(torch.tensor(x))[1].numpy())
        assert repr(nn.AdaptiveMaxPool2d(size)) == repr(torch.nn.AdaptiveMaxPool2d(size))


@needs_torch
def test_bilinear_matches_pytorch() -> None:
    a, b = RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal((5, 4)).astype(np.float32)
    tm, fm = torch.nn.Bilinear(3, 4, 2), nn.Bilinear(3, 4, 2)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [a, b])
    with pytest.raises(fg.ShapeError, match="bilinear: inputs of shapes"):
        fm(fg.asarray(b), fg.asarray(a))


@needs_torch
def test_nn_utils_match_pytorch() -> None:
    # in float64: float32 gradients summed in another order (another CPU's BLAS) differ in the last bits
    tm, fm = torch.nn.Linear(3, 2).double(), nn.Linear(3, 2).to(fg.float64)
    x = RNG.standard_normal((4, 3))
    _compare(tm, fm, [x])
    torch.nn.utils.clip_grad_value_(tm.parameters(), 0.3)
    nn.utils.clip_grad_value_(fm.parameters(), 0.3)
    for p, tp in zip(fm.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)
    vec = nn.utils.parameters_to_vector(fm.parameters())
    np.testing.assert_allclose(vec.numpy(), torch.nn.utils.parameters_to_vector(tm.parameters()).detach().numpy())
    nn.utils.vector_to_parameters(vec * 2, fm.parameters())
    assert np.allclose(fm.weight.numpy(), 2 * tm.weight.detach().numpy())
    with pytest.raises(ValueError, match="vector of 8 values"):
        nn.utils.vector_to_parameters(vec[:3], fm.parameters())
    seqs = [RNG.standard_normal((n, 2)) for n in (3, 5, 1)]
    for batch_first in (False, True):
        for side in ("right", "left"):
            want = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0, side)
            got = nn.utils.rnn.pad_sequence([fg.asarray(s) for s in seqs], batch_first, -1.0, side)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_init_sparse_zeroes_the_asked_fraction_of_each_column() -> None:
    w = nn.Parameter(fg.zeros((10, 6)))
    nn.init.sparse_(w, sparsity=0.3, std=0.5)
    host = w.numpy()
    assert ((host == 0).sum(axis=0) == 3).all()
    assert 0.2 < host[host != 0].std() < 1.0
    with pytest.raises(ValueError, match="only 2-D"):
        nn.init.sparse_(nn.Parameter(fg.zeros(3)), 0.1)


def test_conv_transpose_checks_its_arguments() -> None:
    with pytest.raises(fg.ShapeError, match="does not fit weight"):
        F.conv_transpose2d(fg.ones((1, 3, 4, 4)), fg.ones((2, 1, 3, 3)))
    with pytest.raises(ValueError, match="output_padding .* must be smaller"):
        F.conv_transpose2d(fg.ones((1, 2, 4, 4)), fg.ones((2, 1, 3, 3)), output_padding=1)
    with pytest.raises(fg.ShapeError, match="fold: columns of shape"):
        F.fold(fg.ones((1, 12, 5)), (4, 4), 2)
    x = fg.asarray(RNG.standard_normal((1, 2, 3, 3)))
    w = fg.asarray(RNG.standard_normal((2, 1, 2, 2)))
    check_grads(lambda a, b: F.conv_transpose2d(a, b, stride=2, padding=1, output_padding=1), (x, w), order=2)
