"""fg.nn layers, embeddings, batch norm and initialisers, against PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import RNG, F, _compare, _copy_params, needs_torch, nn, torch


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([(), (2,), (1, 3)]), st.floats(0.5, 3.0))
def test_orthogonal_init_gives_orthonormal_rows_or_columns(rows, cols, kernel, gain) -> None:
    w = nn.Parameter(fg.zeros((rows, cols) + kernel))
    nn.init.orthogonal_(w, gain=gain)
    flat = w.numpy().astype(np.float64).reshape(rows, -1)
    small = min(flat.shape)
    gram = flat @ flat.T if flat.shape[0] == small else flat.T @ flat
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(small), atol=1e-5)


@pytest.mark.parametrize("make,shape", [(lambda: nn.Linear(3, 2), (4, 3)), (lambda: nn.Conv2d(2, 2, 3), (1, 2, 4, 4)),
                                        (lambda: nn.LayerNorm(3), (4, 3)), (lambda: nn.BatchNorm1d(3), (4, 3))])
def test_layers_refuse_an_input_of_another_dtype(make, shape) -> None:
    """PyTorch's rule: a float32 layer fed float64 (NumPy's default) or integer data is an
    error naming both dtypes and both fixes, not a silent float64 computation."""
    layer = make()
    for dtype in (fg.float64, fg.int64):
        with pytest.raises(fg.DTypeError, match=f"the input is {dtype} but the weight is float32; cast the input"):
            layer(fg.zeros(shape, dtype))
    assert layer(fg.zeros(shape)).dtype == fg.float32
    assert layer.to(fg.float64)(fg.zeros(shape, fg.float64)).dtype == fg.float64  # or cast the module


def test_other_initialisers() -> None:
    import math

    fg.manual_seed(3)
    w = nn.Parameter(fg.zeros((20000,), fg.float64))
    nn.init.trunc_normal_(w, mean=0.0, std=0.5, a=-0.6, b=1.0)
    v = w.numpy()
    assert v.min() >= -0.6 and v.max() <= 1.0
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    expected = 0.5 * (pdf(-1.2) - pdf(2.0)) / (cdf(2.0) - cdf(-1.2))  # the truncated normal's mean
    assert abs(v.mean() - expected) < 0.01
    with pytest.warns(UserWarning, match="more than 2 std"):  # (PyTorch's warning; its density sampler)
        far = nn.init.trunc_normal_(w, a=20.0, b=21.0).numpy()
    assert far.min() >= 20.0 and far.max() <= 21.0 and far.mean() < 20.2  # (the density falls off from 20)
    conv = nn.Conv2d(4, 4, 3, padding=1, groups=2, bias=False)
    nn.init.dirac_(conv.weight, groups=2)
    x = fg.asarray(RNG.standard_normal((1, 4, 5, 5)).astype(np.float32))
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-6)  # a dirac convolution passes its input on
    e = nn.Parameter(fg.zeros((2, 3)))
    assert nn.init.eye_(e).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_uniform_(e, mode="fan_avg")


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.Linear(5, 4), lambda m: m.Sequential(m.Linear(5, 6), m.GELU(), m.Linear(6, 4)),
    lambda m: m.Sequential(m.Linear(5, 4), m.SiLU(), m.LayerNorm(4)), lambda m: m.Sequential(m.Tanh(), m.Softmax(dim=1)),
    lambda m: m.Sequential(m.Sigmoid(), m.LogSoftmax(dim=1)), lambda m: m.Sequential(m.ReLU(), m.Flatten()),
    lambda m: m.LeakyReLU(0.2), lambda m: m.ELU(alpha=0.7), lambda m: m.Softplus(beta=2.0, threshold=1.5),
    lambda m: m.GELU(approximate="tanh"),
    lambda m: m.Sequential(m.Linear(5, 4), m.LayerNorm(4, elementwise_affine=False)),
    lambda m: m.Sequential(m.Linear(5, 4), m.LayerNorm(4, bias=False)),
    lambda m: m.Sequential(m.Linear(5, 4), m.ReLU(inplace=True), m.Linear(4, 4), m.LeakyReLU(0.1, True),
                           m.Linear(4, 4), m.ELU(inplace=True), m.Linear(4, 4), m.SiLU(True),
                           m.Dropout(0.3, inplace=True).eval(), m.Identity(7, k=1)),
    lambda m: m.Sequential(m.Linear(5, 4), m.BatchNorm1d(4, bias=False)),
    lambda m: m.Sequential(m.Linear(5, 5), m.ReLU6(True)), lambda m: m.Hardtanh(-0.5, 0.7), lambda m: m.Hardsigmoid(),
    lambda m: m.Hardswish(), lambda m: m.Mish(), lambda m: m.LogSigmoid(), lambda m: m.Softsign(), lambda m: m.SELU(),
    lambda m: m.CELU(0.5), lambda m: m.Threshold(0.1, 20.0), lambda m: m.Sequential(m.Linear(5, 4), m.GLU()),
    lambda m: m.PReLU(), lambda m: m.PReLU(5, 0.1), lambda m: m.Softmin(dim=1),
], ids=["linear", "gelu", "layernorm", "softmax", "logsoftmax", "flatten", "leaky_relu", "elu", "softplus",
        "gelu_tanh", "layernorm_no_affine", "layernorm_no_bias", "inplace_activations", "batchnorm_no_bias",
        "relu6", "hardtanh", "hardsigmoid", "hardswish", "mish", "logsigmoid", "softsign", "selu", "celu",
        "threshold", "glu", "prelu", "prelu_channels", "softmin"])
def test_layers_match_pytorch(make) -> None:
    torch.manual_seed(0)  # the initial weights: the same whatever ran before (float32 tolerances)
    _matches_pytorch(make, (3, 5), np.random.default_rng(0))


def _matches_pytorch(make, shape, rng) -> None:
    """``make(torch.nn)`` and ``make(fg.nn)``: the same repr and state_dict names; with the
    same parameters, the same values, input gradients and parameter gradients."""
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    assert list(fm.state_dict()) == list(tm.state_dict())
    _copy_params(tm, fm)
    x = rng.standard_normal(shape).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
    tout, fout = tm(tx), fm(fx)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (fout * fg.asarray(w)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (_, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 1, -2])
def test_embedding_matches_pytorch(padding_idx) -> None:
    """Repeated rows add up their gradients; the padding row passes none back (PyTorch's
    rule), though its value comes out as it is."""
    tm = torch.nn.Embedding(5, 3, padding_idx=padding_idx)
    fm = nn.Embedding(5, 3, padding_idx=padding_idx)
    assert repr(fm) == repr(tm)
    with torch.no_grad():
        tm.weight.add_(1.0)  # a padding row that is not zero must still come out as it is
    _copy_params(tm, fm)
    idx = np.array([[0, 1, 3], [3, 1, 4]])
    tout, fout = tm(torch.tensor(idx)), fm(fg.asarray(idx))
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-6)
    w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (fout * fg.asarray(w)).sum().backward()
    np.testing.assert_allclose(fm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(max_norm=1.0), dict(max_norm=2.0, norm_type=1.0),
                                    dict(scale_grad_by_freq=True),
                                    dict(max_norm=1.5, scale_grad_by_freq=True, padding_idx=1)])
def test_embedding_max_norm_and_scale_grad_by_freq_match_pytorch(kwargs) -> None:
    """max_norm rescales the looked-up rows that are too long, and (as PyTorch writes them
    into the weight) the Parameter keeps them; the gradients are PyTorch's, which pass
    through the rescaling and, with scale_grad_by_freq, divide by how often a row is picked."""
    tm, fm = torch.nn.Embedding(6, 4, **kwargs), nn.Embedding(6, 4, **kwargs)
    assert repr(fm) == repr(tm)
    with torch.no_grad():
        tm.weight.mul_(2.0)  # most rows longer than max_norm
    _copy_params(tm, fm)
    for idx in (np.array([[0, 2, 2], [5, 2, 1]]), np.array([3, 3, 0])):
        tout, fout = tm(torch.tensor(idx)), fm(fg.asarray(idx))
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fm.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
        w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
        (tout * torch.tensor(w)).sum().backward()
        (fout * fg.asarray(w)).sum().backward()
        np.testing.assert_allclose(fm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
def test_embedding_options_in_the_functional_style_and_from_pretrained() -> None:
    """Through functional_call the weight is a plain array: the result uses the rescaled
    rows and the gradient is PyTorch's, but nothing is stored; under fg.trace the
    Parameter cannot store traced rows, and says so."""
    W = (RNG.standard_normal((6, 4)) * 2).astype(np.float64)
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    tm = torch.nn.Embedding(6, 4, max_norm=1.0, scale_grad_by_freq=True, dtype=torch.float64)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(W))
    expected = torch.autograd.grad((tm(torch.tensor(idx)) ** 2).sum(), tm.weight)[0].numpy()
    fm = nn.Embedding(6, 4, max_norm=1.0, scale_grad_by_freq=True, dtype=fg.float64)
    before = fm.weight.numpy().copy()
    g = fg.grad(lambda p, i: (nn.functional_call(fm, p, i) ** 2).sum())({"weight": fg.asarray(W)}, fg.asarray(idx))
    np.testing.assert_allclose(g["weight"].numpy(), expected, rtol=1e-12)
    assert np.array_equal(fm.weight.numpy(), before)
    with pytest.raises(fg.ConcretizationError, match="max_norm rescales the rows of the Embedding's Parameter"):
        fg.trace(lambda i: fm(i).sum())(fg.asarray(idx))
    # from_pretrained: the rows as given (the padding row too), frozen unless asked
    te = torch.nn.Embedding.from_pretrained(torch.tensor(W), padding_idx=0)
    fe = nn.Embedding.from_pretrained(fg.asarray(W), padding_idx=0)
    assert repr(fe) == repr(te) and not fe.weight.requires_grad
    assert np.array_equal(fe.weight.numpy(), W)
    assert nn.Embedding.from_pretrained(fg.asarray(W), freeze=False).weight.requires_grad
    with pytest.raises(fg.ShapeError, match="from_pretrained: embeddings must be 2-D"):
        nn.Embedding.from_pretrained(fg.ones(3))
    for make in (lambda: nn.Embedding(3, 2, sparse=True),
                 lambda: F.embedding(fg.array([0]), fg.ones((2, 2)), sparse=True)):
        with pytest.raises(ValueError, match="sparse=True .* not supported: funcgrad's gradients are dense"):
            make()


@settings(max_examples=50, deadline=None)
@given(rows=st.integers(1, 5), dim=st.integers(1, 4), n=st.integers(1, 8), max_norm=st.floats(0.1, 3.0),
       norm_type=st.sampled_from([1.0, 2.0, 3.0]), seed=st.integers(0, 2**16))
def test_embedding_max_norm_and_frequency_scaling_properties(rows, dim, n, max_norm, norm_type, seed) -> None:
    """max_norm: every output row is at most max_norm long, points the way its weight row
    does, and is that row unchanged when it was short enough; only the rows looked up are
    rescaled in the Parameter. Gradients: max_norm leaves the weight's gradient as plain
    embedding's; scale_grad_by_freq divides each row's by how often it is picked."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((rows, dim)) * 2
    idx = rng.integers(0, rows, n)
    g = rng.standard_normal((n, dim))
    emb = nn.Embedding(rows, dim, max_norm=max_norm, norm_type=norm_type, dtype=fg.float64)
    emb.weight._assign(fg.asarray(W.copy()))
    out = emb(fg.asarray(idx))
    (out * fg.asarray(g)).sum().backward()
    out, stored = out.numpy(), emb.weight.numpy()
    norms = np.linalg.norm(W, ord=norm_type, axis=1)
    for k, r in enumerate(idx):
        assert np.linalg.norm(out[k], ord=norm_type) <= max_norm * (1 + 1e-9) or norms[r] <= max_norm
        np.testing.assert_allclose(out[k], W[r] * min(1.0, max_norm / (norms[r] + 1e-7)), rtol=1e-12)
        if norms[r] <= max_norm:
            assert np.array_equal(out[k], W[r])
    untouched = np.setdiff1d(np.arange(rows), idx)
    assert np.array_equal(stored[untouched], W[untouched])
    plain = np.zeros_like(W)
    np.add.at(plain, idx, g)
    np.testing.assert_allclose(emb.weight.grad.numpy(), plain, rtol=1e-12)
    scaled = fg.grad(lambda w: (F.embedding(fg.asarray(idx), w, scale_grad_by_freq=True) * fg.asarray(g)).sum())(
        fg.asarray(W))
    counts = np.bincount(idx, minlength=rows)
    np.testing.assert_allclose(scaled.numpy(), plain / np.maximum(counts, 1)[:, None], rtol=1e-12)


def test_embedding_indices_must_lie_in_range() -> None:
    """-1 is an error, as in PyTorch, not NumPy's last row; where the indices cannot be read
    for free (a traced program) the row comes out NaN instead of another row."""
    emb = nn.Embedding(4, 2)
    for bad in (4, -1):
        with pytest.raises(IndexError, match=f"embedding: index {bad} is out of range for 4 rows"):
            emb(fg.asarray(np.array([0, bad])))
    with pytest.raises(IndexError, match="padding_idx=4 is out of range"):
        nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(fg.DTypeError, match="embedding: indices must be integers"):
        emb(fg.asarray(np.array([0.0, 1.0])))
    program = fg.trace(lambda i: emb(i))(fg.asarray(np.array([0, 1])))
    out = program(fg.asarray(np.array([-1, 1]))).numpy()
    assert np.isnan(out[0]).all() and np.array_equal(out[1], emb.weight.detach().numpy()[1])


@needs_torch
def test_default_initialisation_matches_pytorch_distribution() -> None:
    fg.manual_seed(1)
    w = nn.Linear(100, 50).weight.numpy()
    bound = 1 / np.sqrt(100)
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.01


@needs_torch
@pytest.mark.parametrize("make,shape", [(lambda m: m.BatchNorm1d(5), (8, 5)), (lambda m: m.BatchNorm1d(5), (4, 5, 3)),
                                        (lambda m: m.BatchNorm2d(3), (4, 3, 5, 5)),
                                        (lambda m: m.BatchNorm1d(5, affine=False), (8, 5)),
                                        (lambda m: m.BatchNorm2d(3, affine=False), (4, 3, 5, 5))])
def test_batchnorm_matches_pytorch_in_train_and_eval(make, shape) -> None:
    tm, fm = make(torch.nn), make(nn)
    x = RNG.standard_normal(shape).astype(np.float32)
    _compare(tm, fm, [x])                       # train mode: batch statistics, running stats updated
    tm.eval(), fm.eval()
    np.testing.assert_allclose(fm(fg.asarray(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert fm.num_batches_tracked.item() == 1


@needs_torch
def test_batchnorm_momentum_none_is_the_cumulative_average() -> None:
    tm, fm = torch.nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None)
    for _ in range(3):
        x = RNG.standard_normal((6, 3)).astype(np.float32)
        tm(torch.tensor(x)), fm(fg.asarray(x))
    np.testing.assert_allclose(fm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.Conv1d(3, 4, 3), (2, 3, 7)), (lambda m: m.Conv1d(4, 4, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    (lambda m: m.Conv1d(3, 2, 2, dilation=2, bias=False), (3, 6)), (lambda m: m.Conv1d(3, 5, 3, padding="same"), (2, 3, 6)),
    (lambda m: m.GroupNorm(2, 4), (3, 4, 5)), (lambda m: m.GroupNorm(1, 4, affine=False), (2, 4, 3, 3)),
    (lambda m: m.InstanceNorm1d(3, affine=True), (2, 3, 6)), (lambda m: m.InstanceNorm2d(3), (2, 3, 4, 4)),
    (lambda m: m.InstanceNorm1d(3), (3, 6)), (lambda m: m.Dropout2d(0.4).eval(), (2, 3, 4, 4)),
], ids=["conv1d", "conv1d_strided_groups", "conv1d_unbatched", "conv1d_same", "groupnorm", "groupnorm_no_affine",
        "instancenorm1d", "instancenorm2d", "instancenorm_unbatched", "dropout2d_eval"])
def test_1d_convolutions_and_normalizations_match_pytorch(make, shape) -> None:
    torch.manual_seed(0)
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    _copy_params(tm, fm)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
    tout, fout = tm(tx), fm(fx)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = np.random.default_rng(2).standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (fout * fg.asarray(w)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


def test_channel_dropout_zeros_whole_channels() -> None:
    fg.manual_seed(0)
    out = nn.Dropout2d(0.5)(fg.ones((4, 8, 3, 3))).numpy()
    per_channel = out.reshape(4, 8, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    assert 0 < (per_channel[..., 0] == 0).mean() < 1


def test_every_torch_nn_init_name_exists_and_old_names_warn() -> None:
    """All of torch.nn.init: the functions, and the old names without an underscore (which
    still work and warn, as PyTorch's do)."""
    torch = pytest.importorskip("torch")
    names = [n for n in dir(torch.nn.init) if not n.startswith("_") and callable(getattr(torch.nn.init, n))
             and getattr(getattr(torch.nn.init, n), "__module__", "") == "torch.nn.init"]
    assert names and [n for n in names if not hasattr(fg.nn.init, n)] == []
    p = fg.nn.Parameter(fg.zeros((3, 4)))
    with pytest.warns(FutureWarning, match="nn.init.xavier_uniform_"):
        fg.nn.init.xavier_uniform(p)
    assert float(fg.abs(p).sum()) > 0


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.ZeroPad1d((1, 2)), (2, 3, 5)), (lambda m: m.ZeroPad2d(1), (2, 3, 4, 5)),
    (lambda m: m.ZeroPad3d((1, 0, 2, 1, 0, 1)), (1, 2, 3, 4, 5)), (lambda m: m.ConstantPad1d((1, 2), 3.0), (2, 3, 5)),
    (lambda m: m.ConstantPad2d(2, -1.0), (3, 4, 5)), (lambda m: m.ConstantPad3d(1, 2.0), (1, 2, 3, 4, 5)),
    (lambda m: m.ReflectionPad1d((2, 1)), (2, 3, 5)), (lambda m: m.ReflectionPad2d(1), (2, 3, 4, 5)),
    (lambda m: m.ReflectionPad3d(1), (1, 2, 3, 4, 5)), (lambda m: m.ReplicationPad1d(2), (2, 3, 5)),
    (lambda m: m.ReplicationPad2d((1, 2, 0, 1)), (2, 3, 4, 5)), (lambda m: m.ReplicationPad3d(1), (1, 2, 3, 4, 5)),
    (lambda m: m.CircularPad1d(2), (2, 3, 5)), (lambda m: m.CircularPad2d((1, 2, 2, 1)), (2, 3, 4, 5)),
    (lambda m: m.CircularPad3d(1), (1, 2, 3, 4, 5)), (lambda m: m.Hardshrink(), (3, 5)),
    (lambda m: m.Softshrink(0.3), (3, 5)), (lambda m: m.Tanhshrink(), (3, 5)), (lambda m: m.Softmax2d(), (2, 3, 4, 5)),
    (lambda m: m.RMSNorm(5), (3, 5)), (lambda m: m.RMSNorm((4, 5), eps=1e-3), (2, 4, 5)),
    (lambda m: m.RMSNorm(5, elementwise_affine=False), (3, 5)), (lambda m: m.Unflatten(1, (2, 3)), (4, 6)),
    (lambda m: m.ChannelShuffle(2), (2, 4, 3, 3)),
])
def test_shaping_modules_match_pytorch(make, shape) -> None:
    """The padding modules, shrinkage activations, Softmax2d, RMSNorm, Unflatten and
    ChannelShuffle: repr, values, input gradients, parameter gradients and state_dict names."""
    _matches_pytorch(make, shape, np.random.default_rng(1))


@needs_torch
def test_shrinkage_keeps_pytorchs_bits_at_the_edges() -> None:
    """Hardshrink and Softshrink give PyTorch's bits for NaN, infinities, signed zeros and
    values on the threshold (Softshrink's zeros are ``x * 0``: -0 for a negative x)."""
    x = np.array([-2.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, np.nan, np.inf, -np.inf], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no invalid-value warning from an infinity times 0)
        for name in ("hardshrink", "softshrink"):
            got = getattr(F, name)(fg.asarray(x)).numpy()
            assert got.tobytes() == getattr(torch.nn.functional, name)(torch.tensor(x)).numpy().tobytes(), name


@needs_torch
def test_margin_losses_match_pytorch() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = np.where(rng.standard_normal((4, 3)) > 0, 1.0, -1.0).astype(np.float32)
    for make in (lambda m: m.SoftMarginLoss(), lambda m: m.HingeEmbeddingLoss(0.5, reduction="sum"),
                 lambda m: m.SoftMarginLoss(reduction="none")):
        tm, fm = make(torch.nn), make(nn)
        assert repr(fm) == repr(tm)
        tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
        tout, fout = tm(tx, torch.tensor(y)), fm(fx, fg.asarray(y))
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
        tout.sum().backward()
        fout.sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
def test_functional_pad_matches_pytorch() -> None:
    rng = np.random.default_rng(3)
    for shape, pads in (((2, 4, 6), (1, 2)), ((2, 4, 5, 6), (1, 2, 2, 1)), ((1, 2, 4, 5, 6), (2, 1, 1, 2, 1, 0))):
        x = rng.standard_normal(shape).astype(np.float32)
        for mode in ("constant", "reflect", "replicate", "circular"):
            np.testing.assert_allclose(F.pad(fg.asarray(x), pads, mode=mode).numpy(),
                                       torch.nn.functional.pad(torch.tensor(x), pads, mode=mode).numpy())
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(F.pad(fg.asarray(x), (-1, 2, 1, -2), value=3.0).numpy(),
                               torch.nn.functional.pad(torch.tensor(x), (-1, 2, 1, -2), value=3.0).numpy())
    with pytest.raises(fg.ArgumentValueError, match="mode must be"):
        F.pad(fg.asarray(x), (1, 1), mode="mirror")


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.MaxPool1d(3), (2, 3, 10)), (lambda m: m.MaxPool1d(3, 2, 1, 2, ceil_mode=True), (2, 3, 11)),
    (lambda m: m.MaxPool1d(2), (3, 9)), (lambda m: m.AvgPool1d(3), (2, 3, 10)),
    (lambda m: m.AvgPool1d(3, 2, 1, True, False), (2, 3, 11)), (lambda m: m.AdaptiveAvgPool1d(4), (2, 3, 10)),
    (lambda m: m.AdaptiveMaxPool1d(4), (2, 3, 10)), (lambda m: m.AdaptiveAvgPool1d(3), (3, 7)),
    (lambda m: m.BatchNorm3d(3), (2, 3, 2, 3, 4)), (lambda m: m.InstanceNorm3d(3, affine=True), (2, 3, 2, 3, 4)),
    (lambda m: m.InstanceNorm3d(3), (3, 2, 3, 4)), (lambda m: m.Dropout3d(0.4).eval(), (2, 3, 2, 2, 2)),
])
def test_one_and_three_dimensional_layers_match_pytorch(make, shape) -> None:
    _matches_pytorch(make, shape, np.random.default_rng(1))


@needs_torch
def test_one_dimensional_pool_indices_and_three_dimensional_dropout() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    got = F.max_pool1d(fg.asarray(x), 3, 2, 1, return_indices=True)
    want = torch.nn.functional.max_pool1d(torch.tensor(x), 3, 2, 1, return_indices=True)
    assert got[1].tolist() == want[1].tolist()
    got = F.adaptive_max_pool1d(fg.asarray(x), 4, return_indices=True)
    assert got[1].tolist() == torch.nn.functional.adaptive_max_pool1d(torch.tensor(x), 4, return_indices=True)[1].tolist()
    fg.manual_seed(0)
    y = nn.Dropout3d(0.5)(fg.ones((4, 6, 2, 2, 2))).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and (y.reshape(4, 6, -1).std(axis=-1) == 0).all()  # whole channels
