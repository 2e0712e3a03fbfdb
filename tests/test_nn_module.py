"""fg.nn.Module: registration, state dicts, Parameters, devices, functional_call, and the Module API against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg

from .nn_common import RNG, F, needs_torch, nn, torch


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
    rng = np.random.default_rng(0)  # (its own data: the module's RNG depends on which tests ran first)
    x, y = fg.asarray(rng.standard_normal((16, 4)).astype(np.float32)), fg.asarray(rng.integers(0, 3, 16))
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


def test_replacing_a_member_keeps_its_place_as_in_pytorch() -> None:
    """A subclass that replaces an inherited submodule (word_language_model's
    TransformerModel replaces nn.Transformer's decoder) keeps PyTorch's parameter order."""
    m = fg.nn.Module()
    m.a = fg.nn.Linear(2, 2)
    m.b = fg.nn.Linear(2, 2)
    m.a = fg.nn.Linear(2, 3)
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    m.a = 5  # a plain value: no longer a submodule
    assert [n for n, _ in m.named_parameters()] == ["b.weight", "b.bias"] and m.a == 5
