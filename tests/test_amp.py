"""Mixed precision: fg.autocast's policy (products low, reductions and exp/log in float32),
derivatives reaching float32 parameters, compile; fg.amp.GradScaler step by step against
torch.amp.GradScaler, an overflowing step included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.transforms.autocast import autocast_policy

F = fg.nn.functional


def _mlp() -> fg.nn.Module:
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.ReLU(), fg.nn.Linear(16, 4))


@pytest.mark.parametrize("low", [fg.bfloat16, fg.float16])
def test_products_run_low_and_reductions_in_float32(low) -> None:
    model, x = _mlp(), fg.randn(8, 6)
    y = fg.asarray(np.arange(8) % 4)
    with fg.autocast("cpu", dtype=low):
        out = model(x)
        loss = F.cross_entropy(out, y)
        total = out.sum()
        e = fg.exp(out)
        plain = out + 1  # not in the policy: the dtype its input has
    assert out.dtype == low and loss.dtype == fg.float32 and total.dtype == fg.float32 and e.dtype == fg.float32
    assert plain.dtype == low
    # the products' inputs are rounded to the low dtype, and accumulated in float32
    w, b = model[0].weight, model[0].bias
    rounded = [fg.asarray(a.numpy().astype(low.np).astype(np.float32)) for a in (x, w, b)]
    first = (rounded[0] @ rounded[1].T + rounded[2]).astype(low)
    with fg.autocast("cpu", dtype=low):
        np.testing.assert_array_equal(model[0](x).numpy().astype(np.float32), first.numpy().astype(np.float32))


def test_gradients_reach_float32_parameters_in_float32_and_match_pytorch() -> None:
    torch = pytest.importorskip("torch")
    model, x = _mlp(), fg.randn(8, 6)
    y = np.arange(8) % 4
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    with fg.autocast("cpu", dtype=fg.bfloat16):
        loss = F.cross_entropy(model(x), fg.asarray(y))
    loss.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tloss = torch.nn.functional.cross_entropy(tm(torch.tensor(x.numpy())), torch.tensor(y))
    tloss.backward()
    assert abs(loss.item() - tloss.item()) < 2e-2
    for (name, p), (_, tp) in zip(model.named_parameters(), tm.named_parameters()):
        assert p.grad.dtype == fg.float32
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=5e-2, atol=2e-2, err_msg=name)


def test_autocast_in_grad_compile_and_nesting() -> None:
    model, x = _mlp(), fg.randn(8, 6)
    params = dict(model.named_parameters())

    def loss_fn(p, xb):
        with fg.autocast("cpu"):
            return fg.nn.functional_call(model, p, xb).sum()

    g = fg.grad(loss_fn)(params, x)
    assert all(v.dtype == fg.float32 for v in g.values())
    step = fg.compile(fg.grad(loss_fn))
    compiled = step(params, x)
    for k in g:
        np.testing.assert_allclose(compiled[k].numpy(), g[k].numpy(), rtol=1e-6, atol=1e-6)
    text = str(step.lower(params, x))
    assert "bfloat16" in text and "convert_element_type" in text
    forward = fg.compile(lambda v: model(v))  # called inside a block: traced with its settings
    assert forward(x).dtype == fg.float32
    with fg.autocast("cpu"):
        assert forward(x).dtype == fg.bfloat16
        with fg.autocast("cpu", enabled=False):
            assert forward(x).dtype == fg.float32
    assert forward(x).dtype == fg.float32 and forward.cache_size() == 2
    with fg.autocast("cpu"):
        with fg.autocast("cpu", enabled=False):
            assert model(x).dtype == fg.float32 and not fg.amp.is_autocast_enabled("cpu")
        assert model(x).dtype == fg.bfloat16 and fg.amp.is_autocast_enabled("cpu")
    assert not fg.amp.is_autocast_enabled("cpu") and fg.amp.get_autocast_dtype("cpu") == fg.bfloat16

    @fg.autocast("cpu", dtype=fg.float16)
    def forward(v):
        return model(v)

    assert forward(x).dtype == fg.float16
    f64 = fg.nn.Linear(6, 2).double()
    with fg.autocast("cpu"):
        assert f64(x.astype(fg.float64)).dtype == fg.float64  # float64 is never cast


def test_policy_names_real_primitives_and_bad_arguments() -> None:
    names = {p.name for p in fg.registry()}
    policy = autocast_policy()
    assert set(policy) <= names and set(policy.values()) == {"lower", "float32"}
    with pytest.raises(fg.ArgumentValueError, match="bfloat16 or fg.float16"):
        fg.autocast("cpu", dtype=fg.float32)
    with pytest.raises(fg.ArgumentValueError, match="device_type"):
        fg.autocast("tpu")


def test_bfloat16_training_needs_no_scaler_and_learns() -> None:
    """Seed 001's bfloat16 loop: autocast alone, float32 parameters and optimizer."""
    rng = np.random.default_rng(0)
    x = fg.asarray(rng.standard_normal((64, 6)).astype(np.float32))
    y = fg.asarray((x.numpy()[:, 0] > 0).astype(np.int64) + 2 * (x.numpy()[:, 1] > 0))
    model = _mlp()
    opt = fg.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        with fg.autocast("cpu", dtype=fg.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


def _torch_pair():
    torch = pytest.importorskip("torch")
    fg_p = fg.nn.Parameter(fg.asarray(np.array([1.0, -2.0, 0.5], np.float32)))
    t_p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
    return torch, fg_p, t_p


@settings(max_examples=10, deadline=None)
@given(overflow_at=st.sets(st.integers(0, 9), max_size=3), interval=st.integers(1, 3))
def test_grad_scaler_matches_pytorch_step_by_step(overflow_at: set, interval: int) -> None:
    torch, p, tp = _torch_pair()
    opt, topt = fg.optim.SGD([p], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    scaler = fg.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=interval)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=interval)
    for step in range(10):
        bad = float("inf") if step in overflow_at else 1.0
        opt.zero_grad()
        topt.zero_grad()
        scaler.scale((p * p).sum() * bad).backward()
        tscaler.scale((tp * tp).sum() * bad).backward()
        scaler.unscale_(opt)
        tscaler.unscale_(topt)
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6)
        scaler.step(opt)
        tscaler.step(topt)
        scaler.update()
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale(), step
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-6)
    state, tstate = scaler.state_dict(), tscaler.state_dict()
    assert state == {k: (v.item() if hasattr(v, "item") else v) for k, v in tstate.items()}


def test_grad_scaler_rules_and_state() -> None:
    p = fg.nn.Parameter(fg.ones(2))
    opt = fg.optim.SGD([p], lr=0.1)
    scaler = fg.amp.GradScaler(init_scale=8.0, growth_interval=1)
    scaler.scale(p.sum()).backward()
    np.testing.assert_allclose(p.grad.numpy(), [8.0, 8.0])
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    np.testing.assert_allclose(p.numpy(), [0.9, 0.9])
    scaler.update()
    assert scaler.get_scale() == 16.0
    with pytest.raises(RuntimeError, match="No inf checks"):
        scaler.update()
    other = fg.amp.GradScaler()
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 16.0 and other.get_growth_interval() == 1
    off = fg.amp.GradScaler(enabled=False)
    loss = p.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(fg.ArgumentValueError, match="backoff_factor"):
        fg.amp.GradScaler(backoff_factor=2.0)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_the_digits_mlp_trains_under_autocast_to_95_percent(low: str) -> None:
    pytest.importorskip("sklearn")
    import runpy

    module = runpy.run_path(str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples" /
                                "digits_mixed_precision.py"))
    assert module["train"](8, low) >= 0.95


def test_the_docs_print_the_policy_table() -> None:
    import pathlib

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "mixed-precision.md").read_text()
    for policy in ("lower", "float32"):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{policy}` |"))
        assert sorted(n.strip("` ") for n in row.split("|")[2].split(",")) == sorted(
            k for k, v in autocast_policy().items() if v == policy)


@pytest.mark.parametrize("low", [fg.bfloat16, fg.float16])
def test_elementwise_operations_on_low_arrays_give_numpys_values(low) -> None:
    """Inside autocast an elementwise operation on bfloat16/float16 arrays runs in float32 and
    rounds back: bit for bit what NumPy's (ml_dtypes') low-precision loops give."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 33)).astype(low.np)
    b = rng.standard_normal((64, 33)).astype(low.np)
    x, y = fg.asarray(a), fg.asarray(b)
    with fg.autocast("cpu", dtype=low):
        got = {"tanh": fg.tanh(x), "mul": x * y, "add": x + y, "div": x / y, "sigmoid": fg.sigmoid(x),
               "max": fg.maximum(x, y), "where": fg.where(x > y, x, y), "square": x ** 2}
    want = {"tanh": np.tanh(a), "mul": a * b, "add": a + b, "div": a / b,
            "sigmoid": (1 / (1 + np.exp(-a.astype(np.float32)))).astype(low.np), "max": np.maximum(a, b),
            "where": np.where(a > b, a, b), "square": a * a}
    for name in got:
        assert got[name].dtype == low, name
        np.testing.assert_array_equal(got[name].numpy().view(np.uint16), want[name].view(np.uint16), err_msg=name)
