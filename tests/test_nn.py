"""fg.nn and fg.optim: PyTorch semantics, checked against PyTorch when it is installed."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.primitives.reduce import softmax_cross_entropy_grad_p

nn, F = fg.nn, fg.nn.functional
RNG = np.random.default_rng(0)


def test_module_registration_and_state_dict() -> None:
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.blocks = nn.ModuleList([nn.Linear(8, 8), nn.ReLU()])
            self.head = nn.Sequential(nn.Linear(8, 3))
            self.register_buffer("steps", fg.zeros((), fg.int64))
            self.scale = 2.0

        def forward(self, x):
            h = F.relu(self.fc1(x))
            for b in self.blocks:
                h = b(h)
            return self.head(h) * self.scale

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias", "head.0.weight", "head.0.bias"]
    assert list(net.state_dict()) == ["steps"] + names  # PyTorch's order: own params and buffers, then children
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert len(list(net.children())) == 3 and len(list(net.modules())) == 7
    assert "(fc1): Linear(in_features=4, out_features=8, bias=True)" in repr(net)
    out = net(fg.ones((2, 4)))
    assert out.shape == (2, 3)
    net.eval()
    assert not net.head.training
    other = Net()
    other.load_state_dict(net.state_dict())
    np.testing.assert_array_equal(other(fg.ones((2, 4))).numpy(), net(fg.ones((2, 4))).numpy())


def test_load_state_dict_errors_list_everything() -> None:
    m = nn.Linear(3, 2)
    state = dict(m.state_dict())
    state["extra"] = fg.ones(1)
    del state["bias"]
    with pytest.raises(KeyError, match=r"missing keys: bias.*unexpected keys: extra"):
        m.load_state_dict(state)
    missing, unexpected = m.load_state_dict(state, strict=False)
    assert missing == ["bias"] and unexpected == ["extra"]
    with pytest.raises(fg.ShapeError, match=r"weight: checkpoint \(3, 3\) vs model \(2, 3\)"):
        m.load_state_dict({"weight": fg.ones((3, 3)), "bias": fg.ones(2)})


def test_parameter_is_the_one_mutable_holder() -> None:
    p = nn.Parameter(fg.array([1.0, 2.0, 3.0]))
    before = p.detach()
    view = p[1:]
    opt = fg.optim.SGD([p], lr=0.5)
    (p * p).sum().backward()
    opt.step()
    assert p.tolist() == [0.0, 0.0, 0.0]
    assert before.tolist() == [1.0, 2.0, 3.0] and view.tolist() == [2.0, 3.0]
    assert isinstance(p, fg.Array) and p.requires_grad and p[0].item() == 0.0


def _sgd_setup() -> tuple:
    model = nn.Linear(3, 2)
    return model, fg.optim.SGD(model.parameters(), lr=0.1), fg.ones((4, 3))


def test_optimizer_adds_into_a_parameter_buffer_nothing_else_reaches() -> None:
    """With nothing else holding a parameter's value, the step updates its buffer in place
    (as NumPy's ``p -= lr * g``); the values are the re-pointing update's, bit for bit."""
    model, opt, x = _sgd_setup()
    w = model.weight
    for _ in range(3):
        opt.zero_grad()
        model(x).sum().backward()
        memory, expected = weakref.ref(w._data), (w - 0.1 * w.grad).numpy().copy()  # (a weak reference
        opt.step()                                                            # holds nothing)
        assert w._data is memory()  # in place: no new buffer
        np.testing.assert_array_equal(w.numpy(), expected)


HOLDERS = {
    "detach": lambda p: p.detach(),
    "view": lambda p: p[0],
    "numpy": lambda p: p.numpy(),
    "np.asarray": lambda p: np.asarray(p),
    "memoryview": lambda p: memoryview(p.numpy()),
    "dlpack": lambda p: p.__dlpack__(max_version=(1, 0), dl_device=None, copy=None),  # a read-only capsule
    "np.from_dlpack": lambda p: np.from_dlpack(p),
    "buffer.owner": lambda p: p.buffer.owner,
    "buffer.flat": lambda p: p.buffer.flat,
    "alias in a list": lambda p: [p * 1.0, p.detach()][1],
    "reshape": lambda p: p.reshape(-1),
    "view of the whole": lambda p: p.reshape(p.shape),
    "positive": lambda p: +p,
    "to same device": lambda p: p.to(p.device),
}
try:
    import torch as _torch

    HOLDERS["torch.from_dlpack"] = lambda p: _torch.from_dlpack(p)  # a copy: the step may stay in place
except ImportError:
    pass


@pytest.mark.parametrize("how", sorted(HOLDERS))
def test_optimizer_never_changes_a_value_someone_holds(how: str) -> None:
    model, opt, x = _sgd_setup()
    opt.zero_grad()
    model(x).sum().backward()
    held = HOLDERS[how](model.weight)
    before = model.weight.numpy().copy()
    memory = weakref.ref(model.weight._data)
    opt.step()
    if how != "torch.from_dlpack":
        assert model.weight._data is not memory()  # re-pointed, not written
    if how not in ("dlpack",):
        values = np.asarray(held).ravel()  # (the view is the first row: a prefix in memory order)
        np.testing.assert_array_equal(values, before.ravel()[:values.size])
    assert not np.array_equal(model.weight.numpy(), before)


def test_optimizer_keeps_values_a_retained_graph_or_state_dict_holds() -> None:
    model, opt, x = _sgd_setup()
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward(retain_graph=True)  # the graph keeps the weight's value for a second backward
    saved = model.state_dict()
    snapshot = {k: v.numpy().copy() for k, v in saved.items()}
    opt.step()
    for k, v in saved.items():
        np.testing.assert_array_equal(v.numpy(), snapshot[k])
    opt.zero_grad()
    loss.backward()  # through the old values: the same gradients as the first time
    np.testing.assert_array_equal(model.bias.grad.numpy(), np.full(2, 4.0, np.float32))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["step", "hold", "drop"]), min_size=1, max_size=12))
def test_in_place_steps_match_re_pointing_steps(actions: list[str]) -> None:
    """Any mix of steps and held values: held values never change, and the parameters
    follow the same trajectory as steps that always make a new array."""
    fg.manual_seed(0)
    model, opt, x = _sgd_setup()
    reference = [p.numpy().copy() for p in model.parameters()]
    held: list[tuple] = []
    for act in actions:
        if act == "hold":
            held.append((model.weight.detach(), model.weight.numpy().copy()))
        elif act == "drop" and held:
            held.pop(0)
        elif act == "step":
            opt.zero_grad()
            (model(x) ** 2).sum().backward()
            grads = [p.grad.numpy() for p in model.parameters()]
            reference = [r - np.float32(0.1) * g for r, g in zip(reference, grads)]
            opt.step()
        for value, copy in held:
            np.testing.assert_array_equal(value.numpy(), copy)
    for p, r in zip(model.parameters(), reference):
        np.testing.assert_array_equal(p.numpy(), r)


@given(st.integers(0, 5), st.floats(1e-4, 1.0), st.sampled_from(["float32", "float64", "bfloat16"]))
def test_axpy_is_the_two_operation_update_bit_for_bit(n: int, lr: float, dtype: str) -> None:
    from funcgrad.optim.optimizer import axpy

    rng = np.random.default_rng(n)
    p = fg.asarray(rng.standard_normal((n, 3))).astype(dtype)
    g = fg.asarray(rng.standard_normal((n, 3))).astype(dtype)
    new = axpy(-lr, g, p)
    assert new.dtype == p.dtype and new.shape == p.shape
    np.testing.assert_array_equal(new.numpy(), (p - lr * g).numpy())
    mixed = axpy(-lr, g.astype("float64"), p.astype("float32"))  # other dtypes: the operations themselves
    assert mixed.dtype == fg.float64


def test_relu_is_one_primitive_with_pytorch_semantics() -> None:
    x = fg.asarray(np.array([-1.5, 0.0, 2.0, np.nan], np.float32))
    y = F.relu(x)
    assert np.array_equal(y.numpy(), [0.0, 0.0, 2.0, np.nan], equal_nan=True)  # NaN stays NaN (where() would give 0)
    assert fg.grad(lambda v: F.relu(v).sum())(x).tolist() == [0.0, 0.0, 1.0, 0.0]  # 0 at 0, as PyTorch
    assert [e.prim.name for e in fg.trace(F.relu)(x).eqns] == ["relu"]
    assert F.relu(fg.asarray(np.array([-2, 3]))).tolist() == [0, 3]
    assert F.relu(x.astype(fg.bfloat16)).dtype == fg.bfloat16
    with pytest.raises(fg.DTypeError, match="relu"):
        F.relu(fg.asarray(np.array([True, False])))


def test_optimizer_errors() -> None:
    with pytest.raises(TypeError, match="only optimize fg.nn.Parameter"):
        fg.optim.SGD([fg.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        fg.optim.Adam([], lr=0.1)


def test_module_on_another_device_and_bad_targets() -> None:
    from funcgrad.backends.device import Device
    from funcgrad.backends.numpy_backend import NumpyBackend

    other = Device("gpu", 9)
    other._backend = NumpyBackend(other)
    m = nn.Linear(3, 2)
    with pytest.raises(fg.DeviceMismatchError, match="gpu:9"):
        m(fg.ones((1, 3))._to_device(other))
    logits = fg.ones((4, 3))
    with pytest.raises(fg.ShapeError, match="class-index targets must be integers"):
        F.cross_entropy(logits, fg.ones(4))  # a float target means probabilities: wrong shape
    with pytest.raises(fg.DTypeError, match="class-index targets must be integers"):
        F.nll_loss(logits, fg.ones(4))
    with pytest.raises(fg.ShapeError, match=r"needs a target of shape \(4,\), got \(5,\)"):
        F.cross_entropy(logits, fg.zeros(5, fg.int64))
    with pytest.raises(fg.ShapeError, match="mse_loss"):
        F.mse_loss(logits, fg.ones((4, 2)))


def test_functional_style_with_functional_call_and_optimizer() -> None:
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    params = dict(model.named_parameters())
    x, y = fg.asarray(RNG.standard_normal((16, 4)).astype(np.float32)), fg.asarray(RNG.integers(0, 3, 16))
    loss_fn = lambda p, xb, yb: F.cross_entropy(nn.functional_call(model, p, xb), yb)  # noqa: E731
    opt = fg.optim.Adam(model.named_parameters(), lr=0.05)
    first = None
    for _ in range(30):
        loss, grads = fg.value_and_grad(loss_fn)(dict(model.named_parameters()), x, y)
        first = first if first is not None else loss.item()
        opt.step(grads)
    assert loss.item() < 0.5 * first
    g_module = fg.grad(lambda m: F.cross_entropy(m(x), y))(model)
    assert isinstance(g_module, nn.Sequential) and g_module[0].weight.shape == (8, 4)
    assert set(params) == {"0.weight", "0.bias", "2.weight", "2.bias"}


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


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(2, 3, 3, padding=1), lambda: nn.MaxPool2d(2),
                                  lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)])
def test_conv_and_pooling_take_one_unbatched_image(make) -> None:
    """(C, H, W) in, (C', H', W') out, as PyTorch: the same values and input gradient as a
    batch of one."""
    layer = make()
    image = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    single = fg.asarray(image, requires_grad=True)
    batch = fg.asarray(image[None], requires_grad=True)
    out, out_batch = layer(single), layer(batch)
    np.testing.assert_array_equal(out.numpy(), out_batch.numpy()[0])
    out.sum().backward()
    out_batch.sum().backward()
    np.testing.assert_array_equal(single.grad.numpy(), batch.grad.numpy()[0])


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
    with pytest.raises(ValueError, match="too little"):
        nn.init.trunc_normal_(w, a=20.0, b=21.0)
    conv = nn.Conv2d(4, 4, 3, padding=1, groups=2, bias=False)
    nn.init.dirac_(conv.weight, groups=2)
    x = fg.asarray(RNG.standard_normal((1, 4, 5, 5)).astype(np.float32))
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-6)  # a dirac convolution passes its input on
    e = nn.Parameter(fg.zeros((2, 3)))
    assert nn.init.eye_(e).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_uniform_(e, mode="fan_avg")


def test_schedulers() -> None:
    p = nn.Parameter(fg.ones(1))
    opt = fg.optim.SGD([p], lr=1.0)
    step = fg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(step.get_last_lr()[0])
        step.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt2 = fg.optim.SGD([p], lr=1.0)
    cos = fg.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=4)
    for _ in range(4):
        cos.step()
    assert abs(cos.get_last_lr()[0]) < 1e-12
    opt3 = fg.optim.SGD([p], lr=2.0)
    lam = fg.optim.lr_scheduler.LambdaLR(opt3, lambda e: 1 / (e + 1))
    lam.step()
    assert lam.get_last_lr() == [1.0]
    opt4 = fg.optim.SGD([p], lr=1.0)
    ex = fg.optim.lr_scheduler.ExponentialLR(opt4, gamma=0.9)
    ex.step()
    assert abs(ex.get_last_lr()[0] - 0.9) < 1e-12


def test_clip_grad_norm_and_zero_grad() -> None:
    p = nn.Parameter(fg.array([3.0, 4.0]))
    (p * fg.array([3.0, 4.0])).sum().backward()
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert abs(total.item() - 5.0) < 1e-6 and abs(float(fg.linalg.norm(p.grad)) - 1.0) < 1e-4
    m = nn.Linear(2, 2)
    m(fg.ones((1, 2))).sum().backward()
    m.zero_grad()
    assert m.weight.grad is None


# ---- against PyTorch -----------------------------------------------------------------

try:
    import torch  # noqa: F811
except ImportError:  # pragma: no cover
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")


def _copy_params(src, dst) -> None:
    for (name, p), (tname, tp) in zip(dst.named_parameters(), src.named_parameters()):
        assert name == tname
        p._assign(fg.asarray(tp.detach().numpy().copy()))


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
], ids=["linear", "gelu", "layernorm", "softmax", "logsoftmax", "flatten", "leaky_relu", "elu", "softplus",
        "gelu_tanh", "layernorm_no_affine", "layernorm_no_bias", "inplace_activations", "batchnorm_no_bias"])
def test_layers_match_pytorch(make) -> None:
    torch.manual_seed(0)  # the initial weights: the same whatever ran before (float32 tolerances)
    rng = np.random.default_rng(0)
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    _copy_params(tm, fm)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    fx = fg.asarray(x, requires_grad=True)
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


def test_inplace_is_accepted_and_changes_no_array() -> None:
    """PyTorch models pass inplace=True to activations and dropout; funcgrad accepts it and
    computes out of place (arrays are immutable): the same result, the input unchanged."""
    x = fg.asarray(RNG.standard_normal((3, 4)).astype(np.float32))
    before = x.numpy().copy()
    for plain, inplace in ((nn.ReLU(), nn.ReLU(inplace=True)), (nn.LeakyReLU(0.2), nn.LeakyReLU(0.2, True)),
                           (nn.ELU(), nn.ELU(inplace=True)), (nn.SiLU(), nn.SiLU(inplace=True))):
        assert np.array_equal(inplace(x).numpy(), plain(x).numpy())
        assert repr(inplace).endswith("inplace=True)") and "inplace" not in repr(plain)
    drop = nn.Dropout(1.0, inplace=True)
    assert (drop(x).numpy() == 0).all() and repr(drop) == "Dropout(p=1.0, inplace=True)"
    assert np.array_equal(x.numpy(), before)
    with pytest.raises(TypeError, match="unexpected keyword argument 'inplace'"):
        nn.Tanh(inplace=True)  # PyTorch's Tanh takes none either
    with pytest.raises(ValueError, match="Dropout: p must be a probability"):
        nn.Dropout(1.5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kwargs", [dict(), dict(label_smoothing=0.2), dict(ignore_index=3),
                                    dict(weight=np.arange(1.0, 6.0))])
def test_losses_take_one_unbatched_row(reduction, kwargs) -> None:
    """(C,) logits with a 0-d label, as PyTorch: the batch-of-one loss (with no reduction,
    the row's 0-d value), for cross_entropy and nll_loss."""
    z = fg.asarray(RNG.standard_normal(5))
    kw = {k: fg.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    for label in (3, 1):
        one = F.cross_entropy(z, fg.array(label), reduction=reduction, **kw)
        batch = F.cross_entropy(z[None], fg.array([label]), reduction=reduction, **kw)
        assert one.shape == () and np.allclose(one.numpy(), batch.numpy().reshape(()), equal_nan=True)
        kw.pop("label_smoothing", None)
        logp = F.log_softmax(z, 0)
        one = F.nll_loss(logp, fg.array(label), reduction=reduction, **kw)
        batch = F.nll_loss(logp[None], fg.array([label]), reduction=reduction, **kw)
        assert one.shape == () and np.allclose(one.numpy(), batch.numpy().reshape(()), equal_nan=True)
    with pytest.raises(fg.ShapeError, match=r"input of shape \(5,\) needs a target of shape \(\), got \(1,\)"):
        F.cross_entropy(z, fg.array([1]))


@needs_torch
def test_unbatched_losses_match_pytorch() -> None:
    z = RNG.standard_normal(5).astype(np.float32)
    for kwargs in (dict(), dict(reduction="none"), dict(label_smoothing=0.2), dict(ignore_index=3)):
        tz, fz = torch.tensor(z, requires_grad=True), fg.asarray(z, requires_grad=True)
        t = torch.nn.functional.cross_entropy(tz, torch.tensor(3), **kwargs)
        f = F.cross_entropy(fz, fg.array(3), **kwargs)
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-6, equal_nan=True)
        if not np.isnan(t.item()):
            t.backward()
            f.backward()
            np.testing.assert_allclose(fz.grad.numpy(), tz.grad.numpy(), rtol=1e-5, atol=1e-7)


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


@pytest.mark.parametrize("ignore_index", [7, 1])  # outside the classes, and one of them
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_equals_the_general_formula(reduction: str, ignore_index: int) -> None:
    """Cross-entropy with class labels is one primitive, ignored rows masked inside it. It
    must give the values, gradients and second derivatives of the general formula
    (log_softmax, then nll_loss, which masks with recorded operations), and an extra
    ignored row must leave the loss as it was."""
    rng = np.random.default_rng(5)
    z = fg.asarray(rng.standard_normal((6, 4)).astype(np.float64))
    w = fg.asarray(rng.standard_normal((6,) if reduction == "none" else ()))
    y = fg.asarray(np.array([0, 3, ignore_index, 1, 2, ignore_index]))

    def fused(v):
        return F.cross_entropy(v, y, reduction=reduction, ignore_index=ignore_index)

    def general(v):
        return F.nll_loss(F.log_softmax(v, 1), y, reduction=reduction, ignore_index=ignore_index)

    def one_more_row(v):
        out = F.cross_entropy(fg.concatenate([v, v[:1]]), fg.concatenate([y, fg.asarray(np.array([ignore_index]))]),
                              reduction=reduction, ignore_index=ignore_index)
        return out[:6] if reduction == "none" else out

    assert [e.prim.name for e in fg.trace(fused)(z).eqns] == ["softmax_cross_entropy"]
    assert "softmax_cross_entropy" not in [e.prim.name for e in fg.trace(general)(z).eqns]
    g_fused = fg.grad(lambda v: (fused(v) * w).sum())(z)
    for other in (general, one_more_row):
        np.testing.assert_allclose(fused(z).numpy(), other(z).numpy(), rtol=1e-12)
        g_other = fg.grad(lambda v, other=other: (other(v) * w).sum())(z)
        np.testing.assert_allclose(g_fused.numpy(), g_other.numpy(), rtol=1e-10, atol=1e-12)
    h_fused = fg.hessian(lambda v: (fused(v) * w).sum())(z)
    h_general = fg.hessian(lambda v: (general(v) * w).sum())(z)
    np.testing.assert_allclose(h_fused.numpy(), h_general.numpy(), rtol=1e-9, atol=1e-12)
    empty = F.cross_entropy(fg.zeros((0, 3)), fg.asarray(np.zeros(0, np.int64)), reduction=reduction)
    assert empty.shape == ((0,) if reduction == "none" else ())
    if reduction == "mean":
        assert np.isnan(empty.item())  # as PyTorch: the mean of no rows


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 1}, {"label_smoothing": 0.2}, {"reduction": "sum"},
                                    {"weight": [1.0, 2.0, 0.5]}, {"weight": [1.0, 2.0, 0.5], "label_smoothing": 0.1}])
def test_cross_entropy_matches_pytorch(kwargs) -> None:
    logits = RNG.standard_normal((6, 3))
    target = np.array([0, 1, 2, 1, 0, 2])
    t_kwargs = {k: (torch.tensor(v, dtype=torch.float64) if k == "weight" else v) for k, v in kwargs.items()}
    f_kwargs = {k: (fg.asarray(np.array(v)) if k == "weight" else v) for k, v in kwargs.items()}
    tl = torch.tensor(logits, requires_grad=True)
    fl = fg.asarray(logits, requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tl, torch.tensor(target), **t_kwargs)
    floss = F.cross_entropy(fl, fg.asarray(target), **f_kwargs)
    np.testing.assert_allclose(floss.item(), tloss.item(), rtol=1e-10)
    tloss.backward()
    floss.backward()
    np.testing.assert_allclose(fl.grad.numpy(), tl.grad.numpy(), rtol=1e-9, atol=1e-12)


@needs_torch
def test_other_losses_match_pytorch() -> None:
    a, b = RNG.standard_normal((4, 3)), RNG.random((4, 3))
    pairs = [(F.mse_loss, torch.nn.functional.mse_loss), (F.l1_loss, torch.nn.functional.l1_loss),
             (F.binary_cross_entropy_with_logits, torch.nn.functional.binary_cross_entropy_with_logits)]
    for f, t in pairs:
        np.testing.assert_allclose(f(fg.asarray(a), fg.asarray(b)).item(), t(torch.tensor(a), torch.tensor(b)).item(),
                                   rtol=1e-10)
    pw = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(fg.asarray(a), fg.asarray(b), pos_weight=fg.asarray(pw)).item(),
        torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(a), torch.tensor(b),
                                                             pos_weight=torch.tensor(pw)).item(), rtol=1e-10)
    logp = np.log(RNG.dirichlet(np.ones(3), 5))
    tgt = np.array([0, 2, 1, 1, 0])
    np.testing.assert_allclose(F.nll_loss(fg.asarray(logp), fg.asarray(tgt)).item(),
                               torch.nn.functional.nll_loss(torch.tensor(logp), torch.tensor(tgt)).item(), rtol=1e-10)


@needs_torch
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.01)), ("Adam", dict(lr=0.05, amsgrad=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.01)), ("RMSprop", dict(lr=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.01, maximize=True)), ("AdamW", dict(lr=0.05, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.3, maximize=True)),
])
def test_optimizers_match_pytorch_for_20_steps(name, kwargs) -> None:
    W0, X, Y = RNG.standard_normal((5, 3)), RNG.standard_normal((8, 5)), RNG.standard_normal((8, 3))
    p = nn.Parameter(fg.asarray(W0.copy()))
    tp = torch.nn.Parameter(torch.tensor(W0.copy()))
    opt, topt = getattr(fg.optim, name)([p], **kwargs), getattr(torch.optim, name)([tp], **kwargs)
    for _ in range(20):
        opt.zero_grad()
        ((fg.asarray(X) @ p - fg.asarray(Y)) ** 2).mean().backward()
        opt.step()
        topt.zero_grad()
        ((torch.tensor(X) @ tp - torch.tensor(Y)) ** 2).mean().backward()
        topt.step()
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6)
    state = opt.state_dict()
    opt2 = getattr(fg.optim, name)([nn.Parameter(fg.asarray(W0.copy()))], **kwargs)
    opt2.load_state_dict(state)
    assert opt2.state_dict()["param_groups"] == state["param_groups"]


@needs_torch
def test_default_initialisation_matches_pytorch_distribution() -> None:
    fg.manual_seed(1)
    w = nn.Linear(100, 50).weight.numpy()
    bound = 1 / np.sqrt(100)
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.01


def _compare(tm, fm, inputs, out_index=None, rtol=1e-4, atol=1e-5) -> None:
    _copy_params(tm, fm)
    tx = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    fx = [fg.asarray(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    tout, fout = tm(*tx), fm(*fx)
    if out_index is not None:
        tout, fout = tout[out_index], fout[out_index]
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (fout * fg.asarray(w)).sum().backward()
    for a, b in zip(fx, tx):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    for (name, b), (_, tb) in zip(fm.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=rtol, atol=atol, err_msg=name)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                    dict(groups=2, padding=1), dict(stride=(2, 1), bias=False),
                                    dict(padding="valid"), dict(padding="same", kernel_size=(4, 3), dilation=(1, 2)),
                                    dict(padding="same", kernel_size=2)])  # 'same' with an odd total: extra after
@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's note on its own zero-padded copy
def test_conv2d_matches_pytorch(kwargs) -> None:
    x = RNG.standard_normal((2, 4, 9, 8)).astype(np.float32)
    kwargs = {"kernel_size": 3, **kwargs}
    tm, fm = torch.nn.Conv2d(4, 6, **kwargs), nn.Conv2d(4, 6, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("kwargs", [dict(padding=1), dict(padding=(2, 1), stride=2), dict(padding="same", dilation=2),
                                    dict(padding="same", kernel_size=(2, 4)), dict(padding=(3, 0), groups=2)])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_padding_modes_match_pytorch(mode, kwargs) -> None:
    """The image's own values as padding, in PyTorch's three modes; batched and unbatched."""
    x = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    kwargs = {"kernel_size": 3, "padding_mode": mode, **kwargs}
    tm, fm = torch.nn.Conv2d(4, 6, **kwargs), nn.Conv2d(4, 6, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])
    np.testing.assert_allclose(fm(fg.asarray(x[0])).numpy(), tm(torch.tensor(x[0])).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


@needs_torch
def test_conv2d_padding_mode_limits_match_pytorch() -> None:
    """A reflection must be narrower than the image and a wrap at most as wide, in both libraries."""
    x = RNG.standard_normal((1, 1, 3, 5)).astype(np.float32)
    for mode, padding, ok in (("reflect", 2, True), ("reflect", 3, False), ("circular", 3, True),
                              ("circular", 4, False), ("replicate", 6, True)):
        tm, fm = (m.Conv2d(1, 1, 3, padding=(padding, 0), padding_mode=mode) for m in (torch.nn, nn))
        if ok:
            _compare(tm, fm, [x])
            continue
        with pytest.raises(RuntimeError):
            tm(torch.tensor(x))
        with pytest.raises(ValueError, match=rf"padding_mode='{mode}' needs padding .* the input's H size; "
                                             rf"got padding \({padding}, {padding}\) for an input of shape \(1, 1, 3, 5\)"):
            fm(fg.asarray(x))


@settings(max_examples=40, deadline=None)
@given(h=st.integers(2, 6), w=st.integers(2, 6), k=st.integers(1, 3), ph=st.integers(0, 4), pw=st.integers(0, 4),
       mode=st.sampled_from(["reflect", "replicate", "circular"]))
def test_conv2d_padding_mode_matches_numpy_pad_then_correlate(h, w, k, ph, pw, mode) -> None:
    """Against an independent reference: NumPy's pad in the same mode, then a plain
    cross-correlation over NumPy's sliding windows; out-of-limit paddings raise instead."""
    assume(h + 2 * ph >= k and w + 2 * pw >= k)  # the kernel fits the padded image
    x = RNG.standard_normal((1, 2, h, w))
    conv = nn.Conv2d(2, 3, k, padding=(ph, pw), padding_mode=mode).to(fg.float64)
    too_wide = {"reflect": lambda p, n: p >= n, "circular": lambda p, n: p > n, "replicate": lambda p, n: False}[mode]
    if too_wide(ph, h) or too_wide(pw, w):
        with pytest.raises(ValueError, match=f"padding_mode='{mode}'"):
            conv(fg.asarray(x))
        return
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), mode=np_mode)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))  # (1, C, OH, OW, k, k)
    expected = np.einsum("nchwij,ocij->nohw", windows, conv.weight.numpy()) + conv.bias.numpy()[:, None, None]
    np.testing.assert_allclose(conv(fg.asarray(x)).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_conv2d_padding_errors() -> None:
    with pytest.raises(ValueError, match="padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                         "got 'mirror'"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding must be an int, a pair, 'same' or 'valid', got 'full'"):
        nn.functional.conv2d(fg.zeros((1, 2, 4, 4)), fg.zeros((2, 2, 3, 3)), padding="full")


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.MaxPool2d(2), lambda m: m.MaxPool2d(3, stride=2, padding=1),
    lambda m: m.MaxPool2d(3, stride=2, ceil_mode=True), lambda m: m.MaxPool2d(2, padding=1, dilation=1, ceil_mode=True),
    lambda m: m.AvgPool2d(2), lambda m: m.AvgPool2d(3, stride=1, padding=1),
    lambda m: m.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda m: m.AvgPool2d(2, ceil_mode=True), lambda m: m.AvgPool2d(3, stride=2, padding=1, ceil_mode=True),
    lambda m: m.AvgPool2d(3, divisor_override=4),
    lambda m: m.MaxPool2d(8, stride=2, ceil_mode=True), lambda m: m.MaxPool2d(3, stride=3, dilation=4, ceil_mode=True),
    lambda m: m.AvgPool2d(9, stride=3, ceil_mode=True), lambda m: m.AvgPool2d(9, stride=3, padding=1, ceil_mode=True,
                                                                               count_include_pad=False)])
def test_pooling_matches_pytorch(make) -> None:
    x = RNG.standard_normal((2, 3, 8, 7)).astype(np.float32)  # continuous values: no ties in max windows
    tm, fm = make(torch.nn), make(nn)
    if isinstance(tm, torch.nn.MaxPool2d):
        assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


POOLS_WITH_INDICES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                      dict(kernel_size=3, stride=2, ceil_mode=True),
                      dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 1))]


def _awkward_image(shape: tuple[int, ...]) -> np.ndarray:
    """Values with ties (rounded), a window of -inf and a window of two NaNs: where the
    rules for which maximum an index names differ between implementations."""
    x = np.round(RNG.standard_normal(shape) * 2).astype(np.float32)
    x[0, 0, :2, :2] = -np.inf
    x[-1, -1, 0, :2] = np.nan
    return x


@needs_torch
@pytest.mark.parametrize("kwargs", POOLS_WITH_INDICES)
def test_max_pool_indices_and_unpool_match_pytorch(kwargs) -> None:
    x = _awkward_image((2, 3, 7, 6))
    tout, tidx = torch.nn.MaxPool2d(**kwargs, return_indices=True)(torch.tensor(x))
    fout, fidx = nn.MaxPool2d(**kwargs, return_indices=True)(fg.asarray(x))
    np.testing.assert_array_equal(fout.numpy(), tout.numpy())
    assert fidx.dtype == fg.int64
    np.testing.assert_array_equal(fidx.numpy(), tidx.numpy())
    if "dilation" in kwargs:  # PyTorch's MaxUnpool2d has no dilation
        return
    unpool_args = (kwargs["kernel_size"], kwargs.get("stride"), kwargs.get("padding", 0))
    tu, fu = torch.nn.MaxUnpool2d(*unpool_args), nn.MaxUnpool2d(*unpool_args)
    assert repr(fu) == repr(tu)
    y = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)  # any values: unpool puts them back
    ty, fy = torch.tensor(y, requires_grad=True), fg.asarray(y, requires_grad=True)
    tres, fres = tu(ty, tidx, output_size=x.shape[2:]), fu(fy, fidx, output_size=x.shape[2:])
    np.testing.assert_array_equal(fres.numpy(), tres.detach().numpy())
    w = RNG.standard_normal(x.shape).astype(np.float32)
    (tres * torch.tensor(w)).sum().backward()
    (fres * fg.asarray(w)).sum().backward()
    # Overlapping windows can name one position twice; unpooling keeps the last value there
    # (PyTorch too), so only that one reaches the output and has a derivative. PyTorch's
    # backward gathers for every duplicate; funcgrad gives the others 0 (docs/nn.md).
    flat = fidx.numpy().reshape(fidx.shape[0], fidx.shape[1], -1)
    kept = np.zeros(flat.shape, bool)
    for n, c in np.ndindex(*flat.shape[:2]):
        last = {p: k for k, p in enumerate(flat[n, c])}
        kept[n, c, list(last.values())] = True
    want = np.where(kept, ty.grad.numpy().reshape(flat.shape), 0.0).reshape(y.shape)
    np.testing.assert_array_equal(fy.grad.numpy(), want)


def test_max_unpool_bad_arguments_and_unbatched_input() -> None:
    x = fg.asarray(np.arange(32.0, dtype=np.float32).reshape(2, 1, 4, 4))
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert F.max_unpool2d(out, idx, 2).shape == (2, 1, 4, 4)
    assert F.max_unpool2d(out, idx, 2, output_size=(5, 5)).shape == (2, 1, 5, 5)
    single_out, single_idx = F.max_pool2d(x[0], 2, return_indices=True)   # (C, H, W) in, no batch axis out
    np.testing.assert_array_equal(single_idx.numpy(), idx.numpy()[0])
    np.testing.assert_array_equal(F.max_unpool2d(single_out, single_idx, 2).numpy(),
                                  F.max_unpool2d(out, idx, 2).numpy()[0])
    with pytest.raises(IndexError, match=r"max_unpool2d: index 21 is out of range for 16 output cells \(H, W\)"):
        F.max_unpool2d(out, idx + 16, 2)
    with pytest.raises(ValueError, match=r"output_size \(6, 6\) must give \(H, W\) within one stride"):
        F.max_unpool2d(out, idx, 2, output_size=(6, 6))
    with pytest.raises(fg.DTypeError, match="max_unpool2d: indices must be integers"):
        F.max_unpool2d(out, idx.astype(fg.float32), 2)
    with pytest.raises(fg.ShapeError, match=r"indices of shape \(2, 1, 1, 2\) for an input of shape \(2, 1, 2, 2\)"):
        F.max_unpool2d(out, idx[:, :, :1], 2)
    # traced (as on a GPU), a bad index cannot be read on the host: its channel comes out NaN, never wrong
    prog = fg.trace(lambda o, i: F.max_unpool2d(o, i, 2))(out, idx)
    bad = idx.at[1, 0, 0, 0].set(99)
    result = prog(out, bad)
    result = (result[0] if isinstance(result, (tuple, list)) else result).numpy()
    assert np.isnan(result[1]).all()
    np.testing.assert_array_equal(result[0], F.max_unpool2d(out, idx, 2).numpy()[0])


@settings(max_examples=40, deadline=None)
@given(shape=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 7), st.integers(2, 7)),
       kernel=st.integers(1, 3), stride=st.integers(1, 3), padding=st.integers(0, 1),
       dilation=st.integers(1, 2), ceil_mode=st.booleans(), seed=st.integers(0, 2**16))
def test_max_pool_indices_name_the_first_maximum_inside_the_input(shape, kernel, stride, padding, dilation,
                                                                   ceil_mode, seed) -> None:
    """Against a loop over every window: the index is the row-major first position, inside
    the input, that holds the window's maximum (values with many ties); reading the input
    there gives the pooled output; and unpooling puts each maximum back where it was, with
    zeros everywhere else."""
    span = dilation * (kernel - 1) + 1
    counts = [(size + 2 * padding - span + (stride - 1 if ceil_mode else 0)) // stride + 1 for size in shape[2:]]
    assume(padding <= span // 2 and min(counts) >= 1)  # PyTorch's output sizes (ceil_mode may reach past the input)
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float64)
    out, idx = F.max_pool2d(fg.asarray(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    out, idx = out.numpy(), idx.numpy()
    h, w = shape[2:]
    for n, c, i, j in np.ndindex(*idx.shape):
        cells = [(r, q) for r in range(i * stride - padding, i * stride - padding + span, dilation)
                 for q in range(j * stride - padding, j * stride - padding + span, dilation)
                 if 0 <= r < h and 0 <= q < w]
        best = max(x[n, c, r, q] for r, q in cells)
        first = next(r * w + q for r, q in cells if x[n, c, r, q] == best)
        assert idx[n, c, i, j] == first and out[n, c, i, j] == best
    flat_idx = idx.reshape(shape[0], shape[1], -1)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(shape[0], shape[1], -1), flat_idx, -1),
                                  out.reshape(flat_idx.shape))
    default = [(o - 1) * stride - 2 * padding + kernel for o in out.shape[2:]]
    if dilation == 1 and all(d - stride < size < d + stride for d, size in zip(default, (h, w))):
        back = F.max_unpool2d(fg.asarray(out), fg.asarray(idx), kernel, stride, padding, output_size=(h, w)).numpy()
        back = back.reshape(flat_idx.shape[:2] + (-1,))
        np.testing.assert_array_equal(np.take_along_axis(back, flat_idx, -1), out.reshape(flat_idx.shape))
        untouched = np.ones(back.shape, bool)
        np.put_along_axis(untouched, flat_idx, False, -1)
        assert (back[untouched] == 0).all()


def test_pooling_padding_must_leave_every_window_some_input() -> None:
    with pytest.raises(ValueError, match="max_pool2d: padding .* must be at most half the kernel"):
        nn.MaxPool2d(2, padding=2)(fg.zeros((1, 1, 4, 4)))
    with pytest.raises(fg.ShapeError, match="avg_pool2d: an input of shape .* is smaller than the kernel"):
        nn.AvgPool2d(5)(fg.zeros((1, 1, 4, 4)))


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
@pytest.mark.parametrize("case", ["unbatched", "float mask per head", "bool mask", "unbatched padding",
                                  "batch_first padding"])
def test_multihead_attention_masks_and_unbatched_inputs_match_pytorch(case) -> None:
    batch_first = case == "batch_first padding"
    tm, fm = torch.nn.MultiheadAttention(4, 2, batch_first=batch_first), nn.MultiheadAttention(4, 2, batch_first=batch_first)
    _copy_params(tm, fm)
    shape = {"unbatched": (3, 4), "unbatched padding": (3, 4), "batch_first padding": (2, 3, 4)}.get(case, (3, 2, 4))
    masks = {"float mask per head": {"attn_mask": RNG.standard_normal((4, 3, 3)).astype(np.float32)},
             "bool mask": {"attn_mask": np.triu(np.ones((3, 3), bool), 1)},
             "unbatched padding": {"key_padding_mask": np.array([False, False, True])},
             "batch_first padding": {"key_padding_mask": np.array([[False, False, True], [False, True, False]])}
             }.get(case, {})
    q = RNG.standard_normal(shape).astype(np.float32)
    tq, fq = torch.tensor(q, requires_grad=True), fg.asarray(q, requires_grad=True)
    tout, tw = tm(tq, tq, tq, **{k: torch.tensor(v) for k, v in masks.items()})
    fout, fw = fm(fq, fq, fq, **{k: fg.asarray(v) for k, v in masks.items()})
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    (tout.sum() + (tw * tw).sum()).backward()
    (fout.sum() + (fw * fw).sum()).backward()
    np.testing.assert_allclose(fq.grad.numpy(), tq.grad.numpy(), rtol=1e-3, atol=1e-4)
    with pytest.raises(fg.ShapeError, match=r"MultiheadAttention\(4, 2\): key must be"):
        fm(fq, fg.zeros((3, 2, 5)), fq)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(kdim=3, vdim=5), dict(add_bias_kv=True), dict(add_zero_attn=True),
                                    dict(kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True),
                                    dict(add_bias_kv=True, bias=False), dict(dropout=0.0, add_zero_attn=True)])
@pytest.mark.parametrize("masked", [False, True])
def test_multihead_attention_options_match_pytorch(kwargs, masked) -> None:
    """kdim/vdim (separate q/k/v projection weights, PyTorch's names and order), a learned
    key and value appended to every sequence, and a zero one, with masks that then grow a
    column; values, weights, and gradients of the inputs and every parameter."""
    tm, fm = torch.nn.MultiheadAttention(4, 2, **kwargs), nn.MultiheadAttention(4, 2, **kwargs)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _copy_params(tm, fm)
    first = kwargs.get("batch_first", False)
    lay = (lambda t, n: (2, t, n)) if first else (lambda t, n: (t, 2, n))
    q, k, v = (RNG.standard_normal(lay(t, n)).astype(np.float32)
               for t, n in ((3, 4), (5, kwargs.get("kdim", 4)), (5, kwargs.get("vdim", 4))))
    masks = {"attn_mask": np.triu(np.ones((3, 5), bool), 2),
             "key_padding_mask": np.array([[False] * 4 + [True], [False] * 5])} if masked else {}
    tx = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    fx = [fg.asarray(a, requires_grad=True) for a in (q, k, v)]
    tout, tw = tm(*tx, **{n: torch.tensor(m) for n, m in masks.items()})
    fout, fw = fm(*fx, **{n: fg.asarray(m) for n, m in masks.items()})
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    (tout.sum() + (tw * tw).sum()).backward()
    (fout.sum() + (fw * fw).sum()).backward()
    for a, b in zip(fx, tx):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-5)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=name)


@needs_torch
def test_lstm_unbatched_input_matches_pytorch() -> None:
    tm, fm = torch.nn.LSTM(3, 5, num_layers=2), nn.LSTM(3, 5, num_layers=2)
    _copy_params(tm, fm)
    x, h0, c0 = (RNG.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 5), (2, 5)])
    tout, (th, tc) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    fout, (fh, fc) = fm(fg.asarray(x), (fg.asarray(h0), fg.asarray(c0)))
    for f, t in ((fout, tout), (fh, th), (fc, tc)):
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(fg.ShapeError, match=r"LSTM\(3, 5\): expected an input of shape"):
        fm(fg.zeros((4, 2)))
    with pytest.raises(fg.ShapeError, match=r"LSTM: h_0 must have shape \(2, 5\), got \(1, 5\)"):
        fm(fg.asarray(x), (fg.zeros((1, 5)), fg.asarray(c0)))


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_pytorch(batch_first) -> None:
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    fm = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q = RNG.standard_normal((5, 3, 8) if not batch_first else (3, 5, 8)).astype(np.float32)
    kv = RNG.standard_normal((4, 3, 8) if not batch_first else (3, 4, 8)).astype(np.float32)
    _compare(tm, fm, [q, kv, kv], out_index=0)
    _, tw = tm(torch.tensor(q), torch.tensor(kv), torch.tensor(kv))
    _, fw = fm(fg.asarray(q), fg.asarray(kv), fg.asarray(kv))
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("layers,batch_first,bidirectional,proj", [(1, False, False, 0), (2, True, False, 0),
                                                                  (1, False, True, 0), (3, True, True, 0),
                                                                  (1, False, False, 2), (2, True, True, 3)])
def test_lstm_matches_pytorch(layers, batch_first, bidirectional, proj) -> None:
    kwargs = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidirectional, proj_size=proj)
    tm, fm = torch.nn.LSTM(3, 5, **kwargs), nn.LSTM(3, 5, **kwargs)
    assert repr(fm) == repr(tm)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    _compare(tm, fm, [x], out_index=0)
    d = 2 if bidirectional else 1
    batch = x.shape[0] if batch_first else x.shape[1]
    h0, c0 = (RNG.standard_normal((layers * d, batch, size)).astype(np.float32) for size in (proj or 5, 5))
    tout, (th, tc) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    fout, (fh, fc) = fm(fg.asarray(x), (fg.asarray(h0), fg.asarray(c0)))
    for f, t in ((fout, tout), (fh, th), (fc, tc)):
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    # the gradient reaches the initial states, through both directions
    th0 = torch.tensor(h0, requires_grad=True)
    fh0 = fg.asarray(h0, requires_grad=True)
    tm(torch.tensor(x), (th0, torch.tensor(c0)))[0].sum().backward()
    fm(fg.asarray(x), (fh0, fg.asarray(c0)))[0].sum().backward()
    np.testing.assert_allclose(fh0.grad.numpy(), th0.grad.numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
def test_lstm_dropout_between_layers_matches_pytorch() -> None:
    """Dropout applies to every layer's output but the last, only in training: with p=1
    the second layer sees zeros (deterministic in both libraries); in eval mode nothing."""
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    for p, train in ((1.0, True), (0.5, False)):
        tm = torch.nn.LSTM(3, 5, num_layers=2, dropout=p, bidirectional=True)
        fm = nn.LSTM(3, 5, num_layers=2, dropout=p, bidirectional=True)
        _copy_params(tm, fm)
        tm.train(train)
        fm.train(train)
        tout, _ = tm(torch.tensor(x))
        fout, _ = fm(fg.asarray(x))
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    fm = nn.LSTM(3, 5, num_layers=2, dropout=0.5)  # training with 0 < p < 1: different draws each call
    assert not np.allclose(fm(fg.asarray(x))[0].numpy(), fm(fg.asarray(x))[0].numpy())
    fm.eval()
    assert np.array_equal(fm(fg.asarray(x))[0].numpy(), fm(fg.asarray(x))[0].numpy())


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 5), batch=st.integers(1, 3), proj=st.sampled_from([0, 1, 3]))
def test_lstm_reverse_direction_is_a_forward_lstm_on_the_flipped_sequence(length, batch, proj) -> None:
    """The reverse half of a bidirectional LSTM's output is a one-way LSTM with the
    ``*_reverse`` weights run over the sequence backwards (its output flipped back), and
    the forward half is the one-way LSTM with the forward weights (with or without a
    projection of the hidden state)."""
    bi, one = nn.LSTM(3, 4, bidirectional=True, proj_size=proj), nn.LSTM(3, 4, proj_size=proj)
    x = fg.asarray(RNG.standard_normal((length, batch, 3)).astype(np.float32))
    out, (h, c) = bi(x)
    params = dict(bi.named_parameters())
    k = proj or 4
    for suffix, half, seq, flip in (("", slice(0, k), x, lambda a: a), ("_reverse", slice(k, 2 * k), x[::-1],
                                                                       lambda a: a[::-1])):
        for name, p in one.named_parameters():
            p._assign(params[name + suffix])
        ref, (rh, rc) = one(seq)
        np.testing.assert_allclose(out.numpy()[..., half], flip(ref.numpy()), rtol=1e-5, atol=1e-6)
        k = 0 if suffix == "" else 1
        np.testing.assert_allclose(h.numpy()[k], rh.numpy()[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c.numpy()[k], rc.numpy()[0], rtol=1e-5, atol=1e-6)


def test_lstm_bidirectional_unbatched_and_bad_arguments() -> None:
    fm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    out, (h, c) = fm(fg.ones((5, 3)))
    assert out.shape == (5, 8) and h.shape == (4, 4) and c.shape == (4, 4)
    batched, (hb, _) = fm(fg.ones((5, 1, 3)))
    np.testing.assert_allclose(out.numpy(), batched.numpy()[:, 0], rtol=1e-6)
    np.testing.assert_allclose(h.numpy(), hb.numpy()[:, 0], rtol=1e-6)
    # the reverse direction's last state is the first step's: the forward one's is the last step's
    np.testing.assert_allclose(h.numpy()[2], out.numpy()[-1, :4], rtol=1e-6)
    np.testing.assert_allclose(h.numpy()[3], out.numpy()[0, 4:], rtol=1e-6)
    with pytest.raises(fg.ShapeError, match=r"LSTM: h_0 must have shape \(4, 1, 4\), got \(2, 1, 4\)"):
        fm(fg.ones((5, 1, 3)), (fg.zeros((2, 1, 4)), fg.zeros((2, 1, 4))))
    with pytest.raises(ValueError, match="dropout must be a probability"):
        nn.LSTM(3, 4, dropout=1.5)
    for bad in (-1, 4):
        with pytest.raises(ValueError, match="proj_size must be at least 0 and smaller than hidden_size=4"):
            nn.LSTM(3, 4, proj_size=bad)
    projected = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    out, (h, c) = projected(fg.ones((5, 3)))
    assert out.shape == (5, 4) and h.shape == (4, 2) and c.shape == (4, 4)  # h projected, c not
    with pytest.raises(fg.ShapeError, match=r"LSTM: c_0 must have shape \(4, 1, 4\), got \(4, 1, 2\)"):
        projected(fg.ones((5, 1, 3)), (fg.zeros((4, 1, 2)), fg.zeros((4, 1, 2))))


def test_conv_and_pool_are_views_then_one_copy() -> None:
    from funcgrad.primitives.core import current_interpreter

    x = fg.ones((1, 2, 6, 6))
    names = []

    class Rec:
        def process(self, prim, args, params):
            names.append(prim.name)
            token = current_interpreter.set(None)
            try:
                return fg.bind(prim, *args, **params)
            finally:
                current_interpreter.reset(token)

    token = current_interpreter.set(Rec())
    try:
        nn.functional.conv2d(x, fg.ones((3, 2, 3, 3)))
    finally:
        current_interpreter.reset(token)
    assert "windows" in names and names.count("matmul") == 1
    pooled = nn.functional.max_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2)
    assert pooled.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]


class _NotNumPy:
    """NumPy under another name: the cross-entropy kernels take their CuPy branch (no host
    reads of the labels) when ``xp is not np``, so this runs that branch without a GPU."""

    def __getattr__(self, name: str):
        return getattr(np, name)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_kernels_device_branch_masks_without_reading_labels(reduction: str) -> None:
    from funcgrad.primitives.reduce import _xent, _xent_grad

    z = RNG.standard_normal((5, 4))
    g = RNG.standard_normal((5,) if reduction == "none" else ())
    ok = np.array([0, 3, -100, 1, 2])
    for labels in (ok, np.array([0, 3, -100, 9, -1])):  # the last two: out of range, not ignored
        bad = (labels != -100) & ((labels < 0) | (labels >= 4))
        counted = (labels != -100) & ~bad
        ref_rows = _xent(np, z[counted], labels[counted], reduction="none", ignore_index=-100)
        loss = _xent(_NotNumPy(), z, labels, reduction=reduction, ignore_index=-100)
        grad = _xent_grad(_NotNumPy(), g, z, labels, reduction=reduction, ignore_index=-100)
        if reduction == "none":
            np.testing.assert_allclose(loss[counted], ref_rows, rtol=1e-12)
            assert (loss[labels == -100] == 0).all() and np.isnan(loss[bad]).all()
        elif bad.any():
            assert np.isnan(loss)  # one NaN row poisons the reduced loss, never another class's entry
        else:
            np.testing.assert_allclose(loss, _xent(np, z, labels, reduction=reduction, ignore_index=-100))
        assert (grad[labels == -100] == 0).all() and np.isnan(grad[bad]).all()
        # the other rows: as the NumPy branch gives them with the bad rows ignored; a mean
        # still counts the bad rows (only their values are unknown)
        ref = _xent_grad(np, g, z, np.where(bad, -100, labels), reduction="sum" if reduction == "mean" else reduction,
                         ignore_index=-100)
        if reduction == "mean":
            ref = ref / (labels != -100).sum()
        np.testing.assert_allclose(grad[counted], ref[counted], rtol=1e-12)


def test_cross_entropy_reads_no_labels_on_the_host_and_checks_their_range() -> None:
    """The labels stay where they are: eager, traced and ignored rows all run the one fused
    primitive (so on a GPU nothing waits for a device-to-host copy). A label outside the
    classes that is not ignore_index is an error on the CPU, not a silent wrap-around."""
    logits = fg.asarray(RNG.standard_normal((6, 4)))
    target = fg.asarray(np.array([0, 3, 1, 1, 2, 0]))
    traced = fg.trace(lambda z, t: F.cross_entropy(z, t))(logits, target)
    assert [e.prim.name for e in traced.eqns] == ["softmax_cross_entropy"]
    np.testing.assert_allclose(traced(logits, target).item(), F.cross_entropy(logits, target).item(), rtol=1e-12)
    masked = F.cross_entropy(logits, fg.asarray(np.array([0, 3, 1, 1, 2, -100])))
    np.testing.assert_allclose(masked.item(), F.cross_entropy(logits[:5], target[:5]).item(), rtol=1e-12)
    g_masked = fg.grad(lambda z: F.cross_entropy(z, fg.asarray(np.array([0, 3, 1, 1, 2, -100]))))(logits)
    assert not g_masked.numpy()[5].any()
    for bad in ([0, 3, 1, -1, 2, 0], [0, 3, 1, 4, 2, 0], [0, 3, 1, -100, 2, 0]):
        with pytest.raises(IndexError, match=r"softmax_cross_entropy.*label (-1|4|-100) is out of range for 4"):
            F.cross_entropy(logits, fg.asarray(np.array(bad)), ignore_index=-7)
    with pytest.raises(IndexError, match="softmax_cross_entropy_grad.*label 4 is out of range"):
        fg.bind(softmax_cross_entropy_grad_p, fg.ones((), fg.float64), logits, fg.asarray(np.array([0, 3, 1, 4, 2, 0])),
                reduction="sum", ignore_index=-100)
    assert np.isnan(F.cross_entropy(logits, fg.asarray(np.full(6, -100))).item())  # no row counts: 0/0, as PyTorch
    log_probs = F.log_softmax(logits, 1)
    with pytest.raises(IndexError, match="nll_loss: label -1 is out of range for 4"):
        F.nll_loss(log_probs, fg.asarray(np.array([0, 3, 1, -1, 2, 0])))
    program = fg.trace(F.nll_loss)(log_probs, target)  # traced labels cannot be checked: the row is NaN instead
    assert np.isnan(program(log_probs, fg.asarray(np.array([0, 3, 1, -1, 2, 0]))).item())


@needs_torch
@pytest.mark.parametrize("size", [1, (2, 3), (3, None), (4, 5)])  # divides, does not, keeps an axis, overlaps
def test_adaptive_avg_pool_matches_pytorch(size) -> None:
    tm, fm = torch.nn.AdaptiveAvgPool2d(size), nn.AdaptiveAvgPool2d(size)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)])


@needs_torch
def test_normalize_and_one_hot_match_pytorch() -> None:
    x = RNG.standard_normal((4, 3))
    x[1] = 0.0  # a zero vector: its gradient is zero, not NaN
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
        tout, fout = torch.nn.functional.normalize(tx, p=p, dim=dim), F.normalize(fx, p=p, dim=dim)
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = RNG.standard_normal(x.shape)
        (tout * torch.tensor(w)).sum().backward()
        (fout * fg.asarray(w)).sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    labels = np.array([[0, 2], [1, 1]])
    assert F.one_hot(fg.asarray(labels)).tolist() == torch.nn.functional.one_hot(torch.tensor(labels)).tolist()
    assert F.one_hot(fg.asarray(labels), 4).shape == (2, 2, 4) and F.one_hot(fg.asarray(labels)).dtype == fg.int64
    with pytest.raises(IndexError, match="one_hot: index -1 is out of range for 3 classes"):
        F.one_hot(fg.asarray(np.array([0, -1])), 3)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(fg.ones(2), approximate="exact")
    with pytest.raises(TypeError, match="unexpected keyword argument 'slope'"):
        nn.LeakyReLU(slope=0.1)


def _tree_of(m):
    return m.Sequential(m.Linear(2, 3), m.ReLU(), m.Sequential(m.Linear(3, 3), m.BatchNorm1d(3)), m.Linear(3, 1))


MODULE_API = {  # each: a function of the nn namespace (torch.nn or fg.nn) giving plain Python values
    "state_dict keys": lambda m: list(_tree_of(m).state_dict().keys()),
    "state_dict prefix": lambda m: list(_tree_of(m).state_dict(prefix="net.").keys()),
    "named_modules": lambda m: [n for n, _ in _tree_of(m).named_modules()],
    "named_parameters prefix": lambda m: [n for n, _ in _tree_of(m).named_parameters(prefix="net")],
    "named_buffers": lambda m: [n for n, _ in _tree_of(m).named_buffers()],
    "shared module once": lambda m: (lambda lin: (len(list(m.Sequential(lin, lin).parameters())),
                                                  len(list(m.Sequential(lin, lin).modules()))))(m.Linear(2, 2)),
    "get_submodule": lambda m: type(_tree_of(m).get_submodule("2.1")).__name__,
    "get_parameter": lambda m: tuple(_tree_of(m).get_parameter("2.0.weight").shape),
    "get_buffer": lambda m: tuple(_tree_of(m).get_buffer("2.1.running_mean").shape),
    "load without num_batches_tracked": lambda m: (lambda net: [sorted(keys) for keys in net.load_state_dict(
        {k: v for k, v in net.state_dict().items() if "num_batches" not in k and k != "3.bias"}, strict=False)])(
        _tree_of(m)),
    "ModuleList edits": lambda m: (lambda lst: (lst.append(m.ReLU()), lst.extend([m.Tanh()]), lst.insert(0, m.Sigmoid()),
                                               [type(x).__name__ for x in lst], type(lst[1:]).__name__,
                                               [k for k, _ in lst.named_children()], len(lst + lst))[3:])(
        m.ModuleList([m.Linear(1, 1)])),
    "ModuleDict edits": lambda m: (lambda d: (d.update({"b": m.ReLU()}), d.update([("c", m.Tanh())]), d.pop("a"),
                                              list(d.keys()), "b" in d, len(d))[3:])(m.ModuleDict({"a": m.Linear(1, 1)})),
    "dtype shorthands": lambda m: [str(_tree_of(m).double()[0].weight.dtype).replace("torch.", ""),
                                   str(_tree_of(m).half()[0].weight.dtype).replace("torch.", ""),
                                   str(_tree_of(m).double().float()[0].weight.dtype).replace("torch.", ""),
                                   str(_tree_of(m).cpu()[0].weight.device)],
}


@needs_torch
@pytest.mark.parametrize("name", list(MODULE_API))
def test_module_api_matches_pytorch(name) -> None:
    assert MODULE_API[name](nn) == MODULE_API[name](torch.nn)


def test_module_api_without_pytorch() -> None:
    """The same calls in CI (no torch): what PyTorch gives, written out."""
    assert MODULE_API["shared module once"](nn) == (2, 2)
    assert MODULE_API["ModuleList edits"](nn) == (["Sigmoid", "Linear", "ReLU", "Tanh"], "ModuleList",
                                                  ["0", "1", "2", "3"], 8)
    assert MODULE_API["ModuleDict edits"](nn) == (["b", "c"], True, 2)
    assert MODULE_API["dtype shorthands"](nn) == ["float64", "float16", "float32", "cpu"]
    missing, unexpected = MODULE_API["load without num_batches_tracked"](nn)
    assert missing == ["3.bias"] and unexpected == []
    with pytest.raises(AttributeError, match=r"get_submodule\('2.5'\): 2 has no submodule '5'"):
        _tree_of(nn).get_submodule("2.5")
    with pytest.raises(AttributeError, match="no parameter 'weights' there"):
        _tree_of(nn).get_parameter("0.weights")
