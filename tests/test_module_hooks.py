"""``nn.Module``'s hooks, as PyTorch's: forward pre-hooks and hooks (with ``kwargs``,
``prepend``, ``always_call``), full backward hooks, and the handles that remove them; each
checked against PyTorch's module given the same weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import _copy_params, needs_torch, nn, torch


def _both(make):
    """The same layer in PyTorch and funcgrad, with PyTorch's weights."""
    tm, fm = make(torch.nn), make(nn)
    _copy_params(tm, fm)
    return tm, fm


def _run(lib, module, x, w):
    """``module(x)`` and the backward pass of ``(module(x) * w).sum()``: the output and x's gradient."""
    tensor = (lambda a, **k: torch.tensor(a, **k)) if lib is torch else (lambda a, **k: fg.asarray(a, **k))
    xt = tensor(x, requires_grad=True)
    out = module(xt)
    (out * tensor(w)).sum().backward()
    return np.asarray(out.detach().numpy()), np.asarray(xt.grad.numpy())


@needs_torch
def test_forward_hooks_change_inputs_and_outputs_as_pytorchs() -> None:
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
    results, orders = [], []
    for lib, m in zip((torch, fg), _both(lambda n: n.Linear(3, 2))):
        order: list[str] = []
        m.register_forward_pre_hook(lambda mod, args, order=order: (order.append("pre"), (args[0] * 2,))[1])
        m.register_forward_pre_hook(lambda mod, args, order=order: order.append("first"), prepend=True)
        m.register_forward_hook(lambda mod, args, out, order=order: (order.append("post"), out + args[0].sum())[1])
        m.register_forward_hook(lambda mod, args, kwargs, out, order=order: order.append(f"kw {sorted(kwargs)}"),
                                with_kwargs=True)
        results.append(_run(lib, m, x, w))
        orders.append(order)
    assert orders[0] == orders[1] == ["first", "pre", "post", "kw []"]
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_torch
def test_full_backward_hooks_see_and_replace_pytorchs_gradients() -> None:
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    seen, results = [], []
    for lib, m in zip((torch, fg), _both(lambda n: n.Sequential(n.Linear(3, 4), n.Tanh()))):
        log: list = []

        def hook(mod, grad_input, grad_output, log=log):
            log.append(([np.asarray(g.numpy()) for g in grad_input], [np.asarray(g.numpy()) for g in grad_output]))
            return tuple(3.0 * g for g in grad_input)

        handle = m.register_full_backward_hook(hook)
        results.append(_run(lib, m, x, w))
        handle.remove()
        results.append(_run(lib, m, x, w))  # (removed: the plain gradient again)
        seen.append(log)
    assert len(seen[0]) == len(seen[1]) == 1
    for got, want in zip(seen[1][0][0] + seen[1][0][1], seen[0][0][0] + seen[0][0][1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for got, want in zip(results[2:], results[:2]):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[2][1], 3 * results[3][1], rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_backward_hook_of_a_module_whose_input_needs_no_gradient() -> None:
    """Only the parameters need gradients: the hook still runs, with ``grad_input`` (None,)."""
    logs = []
    for lib, m in zip((torch, fg), _both(lambda n: n.Linear(3, 2))):
        log: list = []
        m.register_full_backward_hook(lambda mod, gi, go, log=log: log.append((gi, [tuple(g.shape) for g in go])))
        x = torch.ones(4, 3) if lib is torch else fg.ones((4, 3))
        m(x).sum().backward()
        logs.append(log)
    assert logs[0] == logs[1] == [((None,), [(4, 2)])]


def test_handles_remove_hooks_and_always_call_runs_after_an_error() -> None:
    m = nn.Linear(2, 2)
    calls: list = []
    with m.register_forward_hook(lambda mod, args, out: calls.append(out is None), always_call=True):
        m(fg.ones((1, 2)))
        with pytest.raises(fg.ShapeError):
            m(fg.ones((1, 5)))
    m(fg.ones((1, 2)))
    assert calls == [False, True]
    h = m.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        m(fg.ones((1, 2)))
    h.remove()
    h.remove()  # (twice: nothing)
    assert m(fg.ones((1, 2))).shape == (1, 2)


@settings(max_examples=20, deadline=None)
@given(prepends=st.lists(st.booleans(), min_size=1, max_size=6))
def test_hooks_run_in_registration_order_prepended_ones_first(prepends) -> None:
    m = nn.Identity()
    order: list[int] = []
    for k, prepend in enumerate(prepends):
        m.register_forward_hook(lambda mod, args, out, k=k: order.append(k), prepend=prepend)
    m(fg.ones(1))
    want = [k for k, p in reversed(list(enumerate(prepends))) if p] + [k for k, p in enumerate(prepends) if not p]
    assert order == want
