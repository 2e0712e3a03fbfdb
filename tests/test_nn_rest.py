"""The last of PyTorch's ``nn`` classes: fractional max pooling, the adaptive softmax, the
linear cross-entropy loss and the recurrent base classes, against PyTorch after the same
seed (values, indices, gradients, ``repr`` and ``state_dict``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import F, needs_torch, nn, torch


def _same(want, got) -> None:
    w = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert w.dtype == got.numpy().dtype and w.tobytes() == got.numpy().tobytes()


@needs_torch
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([(2, 3, 11, 9), (3, 10, 10)]), st.sampled_from([2, (3, 2)]),
       st.sampled_from([("output_size", (5, 4)), ("output_ratio", (0.5, 0.7))]), st.booleans())
def test_fractional_max_pool2d_is_pytorchs(seed, shape, kernel, size, float64) -> None:
    dtype, fdtype = (torch.float64, fg.float64) if float64 else (torch.float32, fg.float32)
    torch.manual_seed(seed)
    fg.manual_seed(seed)
    values = torch.randn(shape, dtype=dtype).numpy()
    _same(torch.from_numpy(values), fg.randn(*shape, dtype=fdtype))
    values[..., 0, 0] = np.nan  # a NaN window: PyTorch picks the NaN
    x, fx = torch.tensor(values, requires_grad=True), fg.asarray(values, requires_grad=True)
    tm = torch.nn.FractionalMaxPool2d(kernel, **{size[0]: size[1]}, return_indices=True)
    fm = nn.FractionalMaxPool2d(kernel, **{size[0]: size[1]}, return_indices=True)
    assert repr(tm) == repr(fm)
    (a, ai), (b, bi) = tm(x), fm(fx)
    _same(ai, bi)
    np.testing.assert_array_equal(a.detach().numpy(), b.numpy())
    w = np.random.default_rng(seed).standard_normal(tuple(a.shape))
    (torch.nan_to_num(a) * torch.tensor(w, dtype=dtype)).sum().backward()
    (fg.nan_to_num(b) * fg.asarray(w, dtype=fdtype)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), x.grad.numpy(), rtol=1e-6)
    _same(torch.rand(2), fg.rand(2))  # the stream in step: one uniform per plane and axis


@needs_torch
@pytest.mark.parametrize("shape,kwargs", [((2, 2, 7, 8, 9), dict(kernel_size=2, output_ratio=(0.5, 0.6, 0.7))),
                                          ((2, 6, 6, 6), dict(kernel_size=(2, 3, 2), output_size=3))])
def test_fractional_max_pool3d_is_pytorchs(shape, kwargs) -> None:
    torch.manual_seed(3)
    fg.manual_seed(3)
    x, fx = torch.randn(shape), fg.randn(*shape)
    (a, ai), (b, bi) = (F.fractional_max_pool3d(fx, **kwargs, return_indices=True),
                        torch.nn.functional.fractional_max_pool3d(x, **kwargs, return_indices=True))[::-1]
    _same(a, b)
    _same(ai, bi)
    samples = torch.rand(1 if len(shape) == 4 else shape[0], shape[-4], 3)
    fixed = F.fractional_max_pool3d(fx, **kwargs, _random_samples=fg.asarray(samples.numpy()))
    _same(torch.nn.functional.fractional_max_pool3d(x, **kwargs, _random_samples=samples), fixed)


def test_fractional_max_pool_bad_sizes_raise_typed_errors() -> None:
    with pytest.raises(ValueError, match="either an output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(fg.ShapeError, match="needs an input of at least 7"):
        F.fractional_max_pool2d(fg.ones((1, 1, 6, 6)), 3, output_size=5)
    with pytest.raises(fg.ShapeError, match="needs an input of at least 6"):
        F.fractional_max_pool3d(fg.ones((1, 5, 5, 5)), 2, output_size=4)  # (PyTorch's 3-d check is one stricter)
    with pytest.raises(fg.ShapeError, match="_random_samples must have shape"):
        F.fractional_max_pool2d(fg.ones((1, 2, 6, 6)), 2, output_size=3, _random_samples=fg.ones((1, 2, 3)))
    with pytest.raises(fg.ShapeError, match="spatial axes"):
        F.fractional_max_pool2d(fg.ones((6, 6)), 2, output_size=3)


def test_fractional_max_pool_compiles_and_draws_each_call() -> None:
    fg.manual_seed(0)
    pool = fg.compile(lambda v: F.fractional_max_pool2d(v, 2, output_size=5, return_indices=True)[1])
    x = fg.randn(1, 2, 8, 8)
    assert pool(x).shape == (1, 2, 5, 5)  # (starts step 1.5: where they fall depends on the draw)
    assert any(pool(x).tolist() != pool(x).tolist() for _ in range(4))  # new windows per call


@needs_torch
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_is_pytorchs(head_bias) -> None:
    torch.manual_seed(1)
    fg.manual_seed(1)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=head_bias)
    fm = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=head_bias)
    assert repr(tm) == repr(fm) and list(tm.state_dict()) == list(fm.state_dict())
    for a, b in zip(tm.state_dict().values(), fm.state_dict().values()):
        _same(a, b)  # drawn in PyTorch's order
    x = torch.randn(12, 16, requires_grad=True)
    fx = fg.asarray(x.detach().numpy(), requires_grad=True)
    y = torch.randint(0, 20, (12,))
    a, b = tm(x, y), fm(fx, fg.asarray(y.numpy()))
    np.testing.assert_allclose(b.output.numpy(), a.output.detach().numpy(), rtol=1e-5, atol=1e-6)
    a.loss.backward()
    b.loss.backward()
    np.testing.assert_allclose(fx.grad.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(tm.parameters(), fm.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fm.log_prob(fx).numpy(), tm.log_prob(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    _same(tm.predict(x), fm.predict(fx))
    single = fm(fx[0], fg.asarray(y.numpy()[0]))
    assert single.output.shape == () and np.isclose(single.output.item(), tm(x[0], y[0]).output.item(), atol=1e-6)
    with pytest.raises(fg.ArgumentValueError, match="Target values should be in"):
        fm(fx, fg.asarray(np.full(12, 20)))
    with pytest.raises(ValueError, match="cutoffs should be"):
        nn.AdaptiveLogSoftmaxWithLoss(16, 20, [9, 4])


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(), dict(bias=True), dict(out_features=(2,), bias=True),
                                    dict(label_smoothing=0.1, reduction="sum", class_weight=True)])
def test_linear_cross_entropy_is_pytorchs(kwargs) -> None:
    kwargs = dict(kwargs)
    weighted = kwargs.pop("class_weight", False)
    torch.manual_seed(0)
    fg.manual_seed(0)
    tw = torch.tensor([1.0, 2.0, 3.0]) if weighted else None
    tm = torch.nn.LinearCrossEntropyLoss(4, 3, **kwargs, weight=tw)
    fm = nn.LinearCrossEntropyLoss(4, 3, **kwargs, weight=None if tw is None else fg.asarray(tw.numpy()))
    assert repr(tm) == repr(fm) and list(tm.state_dict()) == list(fm.state_dict())
    x = torch.randn(5, 4, requires_grad=True)
    fx = fg.asarray(x.detach().numpy(), requires_grad=True)
    y = torch.randint(0, 3, (5, *kwargs.get("out_features", ())))
    a, b = tm(x, y), fm(fx, fg.asarray(y.numpy()))
    a.backward()
    b.backward()
    np.testing.assert_allclose(b.item(), a.item(), rtol=1e-6)
    np.testing.assert_allclose(fx.grad.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fm.linear.weight.grad.numpy(), tm.linear.weight.grad.numpy(), rtol=1e-5, atol=1e-7)
    with pytest.raises(fg.ShapeError, match="linear_weight"):
        F.linear_cross_entropy(fg.ones((2, 5)), fg.ones((3, 4)), fg.zeros(2, dtype=fg.int64))


@needs_torch
def test_recurrent_bases_and_linear_reset_are_pytorchs() -> None:
    assert isinstance(nn.LSTM(3, 4), nn.RNNBase) and isinstance(nn.GRUCell(3, 4), nn.RNNCellBase)
    assert issubclass(nn.RNN, nn.RNNBase) and not issubclass(nn.RNNCell, nn.RNNBase)
    torch.manual_seed(5)
    fg.manual_seed(5)
    tl, fl = torch.nn.Linear(3, 2), nn.Linear(3, 2)
    tl.reset_parameters()
    fl.reset_parameters()
    _same(tl.weight, fl.weight)
    _same(tl.bias, fl.bias)
