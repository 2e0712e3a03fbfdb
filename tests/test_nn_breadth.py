"""More of PyTorch's ``nn``: parameter containers, lazy modules, RReLU, alpha dropout, local
response normalization, LP pooling and three margin losses, each against PyTorch (values,
gradients, ``repr`` and ``state_dict`` names)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import F, _compare, _copy_params, needs_torch, nn, torch
from .test_nn_layers import _matches_pytorch


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.RReLU().eval(), (3, 7)), (lambda m: m.RReLU(0.1, 0.4).eval(), (2, 3, 4)),
    (lambda m: m.AlphaDropout(0.3).eval(), (4, 5)), (lambda m: m.FeatureAlphaDropout(0.3).eval(), (2, 3, 4)),
    (lambda m: m.LocalResponseNorm(3), (2, 6, 4, 4)), (lambda m: m.LocalResponseNorm(4, 0.1, 0.5, 2.0), (2, 5, 7)),
    (lambda m: m.LocalResponseNorm(2), (2, 4, 2, 3, 3)),
])
def test_layers_match_pytorch(make, shape) -> None:
    _matches_pytorch(make, shape, np.random.default_rng(0))


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.LPPool2d(2, 2), (2, 3, 6, 6)), (lambda m: m.LPPool2d(3, (3, 2), stride=1, ceil_mode=True), (2, 3, 5, 6)),
    (lambda m: m.LPPool1d(2, 3), (2, 3, 9)), (lambda m: m.LPPool1d(1.5, 2, 1), (3, 8)),
])
def test_lp_pools_match_pytorch(make, shape) -> None:
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    x = np.abs(np.random.default_rng(1).standard_normal(shape)).astype(np.float32) + 0.1  # (PyTorch's gradient
    _compare(tm, fm, [x])  # at a zero window is NaN)


@needs_torch
def test_margin_losses_match_pytorch() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.integers(0, 5, 6)
    weight = np.linspace(0.5, 2.0, 5).astype(np.float32)
    for kwargs in (dict(), dict(p=2, margin=0.7), dict(reduction="none"), dict(reduction="sum")):
        _compare(torch.nn.MultiMarginLoss(**kwargs), nn.MultiMarginLoss(**kwargs), [x, y])
    _compare(torch.nn.MultiMarginLoss(weight=torch.tensor(weight)), nn.MultiMarginLoss(weight=fg.asarray(weight)),
             [x, y])
    _compare(torch.nn.MultiMarginLoss(), nn.MultiMarginLoss(), [x[0], y[:1].reshape(())])  # one unbatched row
    labels = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 2, 2, 2], [4, -1, 0, 0, 0], [2, 2, -1, 0, 0],
                       [0, 1, -1, -1, -1]])
    for reduction in ("mean", "sum", "none"):
        _compare(torch.nn.MultiLabelMarginLoss(reduction=reduction), nn.MultiLabelMarginLoss(reduction=reduction),
                 [x, labels])
    a, p, n = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))
    _compare(torch.nn.TripletMarginWithDistanceLoss(swap=True), nn.TripletMarginWithDistanceLoss(swap=True), [a, p, n])
    assert repr(nn.TripletMarginWithDistanceLoss()) == repr(torch.nn.TripletMarginWithDistanceLoss())
    cos = (lambda lib: lambda u, v: 1.0 - lib.nn.functional.cosine_similarity(u, v))
    _compare(torch.nn.TripletMarginWithDistanceLoss(distance_function=cos(torch), margin=0.5, reduction="none"),
             nn.TripletMarginWithDistanceLoss(distance_function=cos(fg), margin=0.5, reduction="none"), [a, p, n])
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0.0)
    with pytest.raises(fg.DTypeError, match="multi_margin_loss: target must hold integer class indices"):
        F.multi_margin_loss(fg.asarray(x), fg.asarray(x))


@needs_torch
def test_alpha_dropout_values_are_pytorchs_affine_map() -> None:
    """Training, each element is one of PyTorch's two values for it (kept: ``a x + b``,
    dropped: ``-alpha a + b``); the mean and variance of a SELU-normal input survive."""
    fg.manual_seed(0)
    x = np.random.default_rng(3).standard_normal((400, 250)).astype(np.float32)
    out = F.alpha_dropout(fg.asarray(x), 0.2, True).numpy()
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha * alpha * 0.2 + 1) * 0.8)
    kept = np.isclose(out, a * x + alpha * a * 0.2, atol=1e-6)
    dropped = np.isclose(out, -alpha * a + alpha * a * 0.2, atol=1e-6)
    assert (kept | dropped).all() and abs(dropped.mean() - 0.2) < 0.01
    assert abs(out.mean() - x.mean()) < 0.02 and abs(out.std() - x.std()) < 0.02
    channels = F.feature_alpha_dropout(fg.ones((50, 40, 3, 3)), 0.5, True).numpy()
    assert (channels.reshape(50, 40, -1).std(axis=-1) == 0).all()  # whole channels
    assert set(np.unique(channels.round(5))) == set(np.unique(
        torch.nn.functional.feature_alpha_dropout(torch.ones(50, 40, 3, 3), 0.5, True).numpy().round(5)))


def test_rrelu_draws_its_slopes_in_training() -> None:
    fg.manual_seed(1)
    x = -fg.ones((2000,))
    out = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert (out >= -0.3).all() and (out <= -0.1).all() and out.std() > 0.05
    g = fg.grad(lambda v: F.rrelu(v, 0.1, 0.3, training=True).sum())(fg.asarray([-1.0, 2.0]))
    assert 0.1 <= g.numpy()[0] <= 0.3 and g.numpy()[1] == 1.0


@needs_torch
def test_parameter_containers_are_pytorchs() -> None:
    shapes = [(3, 4), (5,), (2, 2)]
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(s)) for s in shapes[:2]])
    fl = nn.ParameterList([fg.zeros(s) for s in shapes[:2]])  # (arrays become Parameters)
    tl.append(torch.nn.Parameter(torch.zeros(shapes[2])))
    fl.append(fg.zeros(shapes[2]))
    assert list(fl.state_dict()) == list(tl.state_dict()) == ["0", "1", "2"]
    assert all(isinstance(p, nn.Parameter) for p in fl) and len(fl) == 3 and fl[-1].shape == (2, 2)
    assert [tuple(p.shape) for p in fl[1:]] == [(5,), (2, 2)]
    td = torch.nn.ParameterDict({"b": torch.nn.Parameter(torch.zeros(2)), "a": torch.nn.Parameter(torch.zeros(3))})
    fd = nn.ParameterDict({"b": fg.zeros(2), "a": fg.zeros(3)})
    fd["c"] = nn.Parameter(fg.ones(1))
    td["c"] = torch.nn.Parameter(torch.ones(1))
    assert list(fd.state_dict()) == list(td.state_dict()) == ["a", "b", "c"]  # (a plain dict: sorted)
    assert "a" in fd and list(fd.keys()) == ["a", "b", "c"] and fd.get("z") is None
    del fd["a"]
    assert list(fd) == ["b", "c"]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([fg.ones(3), 2 * fg.ones(3)])
            self.shifts = nn.ParameterDict({"x": fg.zeros(3)})

        def forward(self, v):
            for s in self.scales:
                v = v * s
            return v + self.shifts["x"]

    model = Model()
    assert [n for n, _ in model.named_parameters()] == ["scales.0", "scales.1", "shifts.x"]
    opt = fg.optim.SGD(model.parameters(), lr=0.5)
    model(fg.ones(3)).sum().backward()
    opt.step()
    assert model.scales[0].numpy().tolist() == [0.0, 0.0, 0.0] and model.shifts["x"].numpy().tolist() == [-0.5] * 3
    grads = fg.grad(lambda m: m(fg.ones(3)).sum())(model)
    assert grads.scales[1].shape == (3,)


LAZY = [
    ("LazyLinear", (5,), (4, 3)), ("LazyConv2d", (4, 3), (2, 3, 8, 8)), ("LazyConv1d", (4, 3, 2, 1, 1, 2), (2, 6, 9)),
    ("LazyConvTranspose2d", (4, 3, 2), (2, 3, 5, 5)), ("LazyConvTranspose1d", (4, 3), (3, 6)),
    ("LazyBatchNorm1d", (), (4, 3, 5)), ("LazyBatchNorm2d", (1e-3, 0.2), (4, 3, 5, 5)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (1e-3, 0.2, True), (2, 3, 4, 4)), ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


@needs_torch
@pytest.mark.parametrize("name,args,shape", LAZY)
def test_lazy_modules_become_their_full_class_as_pytorchs(name, args, shape) -> None:
    fm, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(fm) == repr(tm) and list(fm.state_dict()) == list(tm.state_dict())
    assert fm.has_uninitialized_params() and all(p.shape == (0,) for p in fm.parameters())
    held = list(fm.parameters())
    opt = fg.optim.SGD(held, lr=0.1) if held else None
    fg.manual_seed(4)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = fm(fg.asarray(x))
    tm(torch.tensor(x))
    assert type(fm).__name__ == type(tm).__name__ and repr(fm) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in fm.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert all(a is b for a, b in zip(held, fm.parameters()))  # the placeholders themselves, filled
    fg.manual_seed(4)
    direct = getattr(nn, name[4:])(fm.weight.shape[1] * fm.groups if "Conv" in name and "Transpose" not in name
                                   else fm.weight.shape[0] if "Transpose" in name else fm.weight.shape[-1]
                                   if name == "LazyLinear" else fm.num_features, *args)
    for (k, a), b in zip(fm.named_parameters(), direct.parameters()):  # the draws of a direct build
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    if opt is not None:
        out.sum().backward()
        opt.step()
    _copy_params(tm, fm)


@needs_torch
def test_lazy_modules_load_a_checkpoint_and_take_its_sizes() -> None:
    full = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                               torch.nn.Linear(64, 5))
    lazy = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(5))
    state = fg.get_rng_state().numpy()
    lazy.load_state_dict({k: fg.asarray(v.numpy()) for k, v in full.state_dict().items()})
    assert np.array_equal(state, fg.get_rng_state().numpy())
    assert repr(lazy) == repr(full)
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(lazy.eval()(fg.asarray(x)).numpy(), full.eval()(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(features=st.integers(1, 6), batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       out=st.integers(1, 4))
def test_lazy_linear_takes_the_last_axis_of_any_input(features, batch, out) -> None:
    layer = nn.LazyLinear(out)
    y = layer(fg.ones((*batch, features)))
    assert type(layer) is nn.Linear and layer.in_features == features and y.shape == (*batch, out)
    assert "_forward_pre_hooks" not in layer.__dict__  # (the inference hook is gone)


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_pytorch(mode) -> None:
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((10, 3)).astype(np.float32)
    cases = [(np.array([[1, 2, 4], [4, 3, 9]]), None, {}),
             (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4, 4]), {}),            # (an empty bag)
             (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4, 4]), {"padding_idx": 4}),
             (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 5, 8]), {"include_last_offset": True})]
    for indices, offsets, kwargs in cases:
        tm = torch.nn.EmbeddingBag(10, 3, mode=mode, _weight=torch.tensor(weight), **kwargs)
        fm = nn.EmbeddingBag(10, 3, mode=mode, _weight=fg.asarray(weight), **kwargs)
        assert repr(fm) == repr(tm)
        tout = tm(torch.tensor(indices), None if offsets is None else torch.tensor(offsets))
        fout = fm(fg.asarray(indices), None if offsets is None else fg.asarray(offsets))
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-6, atol=1e-6)
        g = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
        (tout * torch.tensor(g)).sum().backward()
        (fout * fg.asarray(g)).sum().backward()
        np.testing.assert_allclose(fm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
    if mode == "sum":
        per = rng.standard_normal(8).astype(np.float32)
        want = torch.nn.functional.embedding_bag(torch.tensor(cases[1][0]), torch.tensor(weight),
                                                 torch.tensor(cases[1][1]), mode="sum",
                                                 per_sample_weights=torch.tensor(per))
        got = F.embedding_bag(fg.asarray(cases[1][0]), fg.asarray(weight), fg.asarray(cases[1][1]), mode="sum",
                              per_sample_weights=fg.asarray(per))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    else:
        with pytest.raises(ValueError, match="per_sample_weights is only supported for mode='sum'"):
            F.embedding_bag(fg.asarray(cases[0][0]), fg.asarray(weight), mode=mode, per_sample_weights=fg.ones((2, 3)))


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_pytorch(reduction) -> None:
    """Values, and gradients with respect to the logits through log_softmax. (PyTorch's own
    gradient with respect to log_probs adds exp(log_probs), which a log_softmax before it
    cancels; funcgrad's is the derivative itself.)"""
    rng = np.random.default_rng(7)
    steps, batch, classes = 12, 3, 5
    logits = rng.standard_normal((steps, batch, classes)).astype(np.float32)
    targets = rng.integers(1, classes, (batch, 4))
    targets[1, 1] = targets[1, 2]  # a repeated label needs a blank between
    input_lengths, target_lengths = np.array([12, 10, 7]), np.array([4, 3, 2])
    tx, fx = torch.tensor(logits, requires_grad=True), fg.asarray(logits, requires_grad=True)
    tm, fm = torch.nn.CTCLoss(reduction=reduction), nn.CTCLoss(reduction=reduction)
    tout = tm(tx.log_softmax(2), torch.tensor(targets), torch.tensor(input_lengths), torch.tensor(target_lengths))
    fout = fm(F.log_softmax(fx, dim=2), fg.asarray(targets), fg.asarray(input_lengths), fg.asarray(target_lengths))
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-5)
    tout.sum().backward()
    fout.sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), atol=1e-5)
    flat = np.concatenate([targets[0, :4], targets[1, :3], targets[2, :2]])  # (targets concatenated)
    np.testing.assert_allclose(
        F.ctc_loss(F.log_softmax(fg.asarray(logits), dim=2), fg.asarray(flat), fg.asarray(input_lengths),
                   fg.asarray(target_lengths), reduction=reduction).numpy(),
        torch.nn.functional.ctc_loss(torch.tensor(logits).log_softmax(2), torch.tensor(flat),
                                     torch.tensor(input_lengths), torch.tensor(target_lengths),
                                     reduction=reduction).numpy(), rtol=1e-5)
    short = np.array([2, 10, 7])  # 2 steps cannot hold 4 labels: an infinite loss, or 0 with zero_infinity
    for zero_infinity in (False, True):
        got = F.ctc_loss(fg.asarray(logits), fg.asarray(targets), fg.asarray(short), fg.asarray(target_lengths),
                         reduction="none", zero_infinity=zero_infinity).numpy()
        want = torch.nn.functional.ctc_loss(torch.tensor(logits), torch.tensor(targets), torch.tensor(short),
                                            torch.tensor(target_lengths), reduction="none",
                                            zero_infinity=zero_infinity).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_nll_loss2d_is_nll_loss_with_a_warning() -> None:
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        loss = nn.NLLLoss2d()
    x = F.log_softmax(fg.asarray(np.random.default_rng(0).standard_normal((2, 3, 4, 4))), dim=1)
    y = fg.asarray(np.random.default_rng(1).integers(0, 3, (2, 4, 4)))
    assert float(loss(x, y)) == float(nn.NLLLoss()(x, y))


@needs_torch
@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (3, 4, 7)), ("InstanceNorm2d", (2, 3, 5, 4)),
                                        ("InstanceNorm3d", (2, 2, 3, 3, 4))])
def test_instance_norm_running_statistics_are_pytorchs(name, shape) -> None:
    """With ``track_running_stats``: PyTorch's running mean and (unbiased) variance after
    training steps, its outputs and gradients, and the running statistics in eval mode."""
    rng = np.random.default_rng(8)
    tm = getattr(torch.nn, name)(shape[1], affine=True, track_running_stats=True, momentum=0.3)
    fm = getattr(nn, name)(shape[1], affine=True, track_running_stats=True, momentum=0.3)
    assert repr(fm) == repr(tm) and list(fm.state_dict()) == list(tm.state_dict())
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
        tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
        tout, fout = tm(tx), fm(fx)
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
        w = rng.standard_normal(shape).astype(np.float32)
        (tout * torch.tensor(w)).sum().backward()
        (fout * fg.asarray(w)).sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(fm.state_dict()[key].numpy(), tm.state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)
    tm.eval()
    fm.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(fm(fg.asarray(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fm(fg.asarray(x[0])).numpy(), tm(torch.tensor(x[0])).detach().numpy(), rtol=1e-5,
                               atol=1e-5)  # (one unbatched sample)
