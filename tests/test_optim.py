"""fg.optim: update rules against PyTorch, the in-place step that no holder can observe, schedulers, clipping."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import RNG, needs_torch, nn, torch


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


def test_optimizer_errors() -> None:
    with pytest.raises(TypeError, match="only optimize fg.nn.Parameter"):
        fg.optim.SGD([fg.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        fg.optim.Adam([], lr=0.1)


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


def test_a_new_optimizer_defines_update_and_gets_the_rest() -> None:
    """The public rule API: update returns the new value (or a triple); step(grads), param
    groups, schedulers and state_dict work with it; without a rule, the error says what to define."""
    class HalfStep(fg.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        def update(self, p, g, state, group):
            state["count"] = state.get("count", 0) + 1
            return p - group["lr"] * g

    w = fg.nn.Parameter(fg.asarray([1.0, 2.0]))
    opt = HalfStep([w], lr=0.5)
    sched = fg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step([fg.asarray([1.0, 1.0])])
    sched.step()
    opt.step([fg.asarray([1.0, 1.0])])
    assert w.tolist() == [0.25, 1.25] and opt.state_dict()["state"][0]["count"] == 2
    fresh = HalfStep([fg.nn.Parameter(fg.zeros(2))])
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == 0.25 and fresh.state_dict()["state"][0]["count"] == 2

    class Nothing(fg.optim.Optimizer):
        pass

    p = fg.nn.Parameter(fg.ones(1))
    with pytest.raises(NotImplementedError, match=r"defines update\(p, g, state, group\)"):
        Nothing([p], {}).step([fg.ones(1)])


def test_lbfgs_minimises_rosenbrock_and_wants_a_closure() -> None:
    """Rosenbrock's valley from (-1.5, 2): the minimum (1, 1) to 1e-6 with the strong-Wolfe
    line search; a step without a closure says what the closure does."""
    xy = fg.nn.Parameter(fg.asarray([-1.5, 2.0], dtype=fg.float64))
    opt = fg.optim.LBFGS([xy], lr=1, max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                         tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(xy.numpy(), [1.0, 1.0], atol=1e-6)
    with pytest.raises(TypeError, match="needs a closure"):
        opt.step()
    with pytest.raises(fg.errors.ArgumentValueError, match="line_search_fn"):
        fg.optim.LBFGS([xy], line_search_fn="backtracking")


def _adam_run(cls: type, fused: bool | None, dtype: str, shape: tuple[int, ...], steps: int, seed: int,
              hyper: dict) -> tuple[list[np.ndarray], dict]:
    rng = np.random.default_rng(seed)
    p = nn.Parameter(fg.asarray(rng.standard_normal(shape).astype(dtype)))
    opt = cls([p], fused=fused, **hyper)
    values = []
    for _ in range(steps):
        p.grad = fg.asarray((rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 3)).astype(dtype))
        opt.step()
        values.append(p.detach().numpy().copy())
    return values, {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in opt.state[p].items()}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["Adam", "AdamW"]), dtype=st.sampled_from(["float32", "float64"]),
       shape=st.sampled_from([(1,), (0,), (7,), (5, 33)]), lr=st.sampled_from([1e-3, 0.1]),
       weight_decay=st.sampled_from([0.0, 0.05]), amsgrad=st.booleans(), maximize=st.booleans(),
       betas=st.sampled_from([(0.9, 0.999), (0.5, 0.9)]), seed=st.integers(0, 2**16))
def test_fused_adam_is_the_rule_bit_for_bit(name, dtype, shape, lr, weight_decay, amsgrad, maximize, betas,
                                            seed) -> None:
    """Adam's and AdamW's native loop (``fused``, the default under the C backend) gives the
    rule's parameters and state, bit for bit, over hyperparameters, dtypes and steps."""
    cls = getattr(fg.optim, name)
    hyper = dict(lr=lr, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize, betas=betas)
    before = fg.config.compile_backend
    fg.config.compile_backend = "c"
    try:
        fused = _adam_run(cls, True, dtype, shape, 4, seed, hyper)
        rule = _adam_run(cls, False, dtype, shape, 4, seed, hyper)
    finally:
        fg.config.compile_backend = before
    for got, want in zip(fused[0], rule[0]):
        np.testing.assert_array_equal(got, want)
    assert fused[1].keys() == rule[1].keys()
    for key in rule[1]:
        np.testing.assert_array_equal(fused[1][key], rule[1][key], err_msg=key)


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from(["float32", "float64"]), shape=st.sampled_from([(1,), (0,), (7,), (5, 33)]),
       lr=st.sampled_from([1.0, 0.1]), rho=st.sampled_from([0.9, 0.5]), eps=st.sampled_from([1e-6, 1e-3]),
       weight_decay=st.sampled_from([0.0, 0.05]), maximize=st.booleans(), seed=st.integers(0, 2**16))
def test_adadelta_native_loop_is_the_rule_bit_for_bit(dtype, shape, lr, rho, eps, weight_decay, maximize,
                                                      seed) -> None:
    """Adadelta's native loop (the C backend's) gives the rule's parameters and state (the
    NumPy backend's), bit for bit, over hyperparameters, dtypes and steps."""
    hyper = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
    runs = {}
    before = fg.config.compile_backend
    try:
        for backend in ("c", "numpy"):
            fg.config.compile_backend = backend
            runs[backend] = _adam_run(lambda params, fused, **h: fg.optim.Adadelta(params, **h), None, dtype,
                                      shape, 4, seed, hyper)
    finally:
        fg.config.compile_backend = before
    (native, native_state), (rule, rule_state) = runs["c"], runs["numpy"]
    for got, want in zip(native, rule):
        np.testing.assert_array_equal(got, want)
    assert native_state.keys() == rule_state.keys()
    for key in rule_state:
        np.testing.assert_array_equal(native_state[key], rule_state[key], err_msg=key)


def test_fused_adam_says_why_it_cannot_run() -> None:
    """``fused=True`` where the loop cannot run (the NumPy backend, a float16 parameter)
    raises, naming the reason; ``fused=None`` runs the rule there."""
    p = nn.Parameter(fg.ones(3, dtype=fg.float16))
    p.grad = fg.ones(3, dtype=fg.float16)
    before = fg.config.compile_backend
    try:
        fg.config.compile_backend = "c"
        with pytest.raises(fg.ArgumentValueError, match=r"AdamW\(fused=True\): it takes float32 and float64"):
            fg.optim.AdamW([p], fused=True).step()
        fg.optim.AdamW([p]).step()  # (the rule)
        fg.config.compile_backend = "numpy"
        q = nn.Parameter(fg.ones(3))
        q.grad = fg.ones(3)
        with pytest.raises(fg.ArgumentValueError, match=r"Adam\(fused=True\): the C backend is off"):
            fg.optim.Adam([q], fused=True).step()
    finally:
        fg.config.compile_backend = before
