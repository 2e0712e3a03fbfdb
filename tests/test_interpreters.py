"""User interpreters (fg.Interpreter, PyTorch's TorchDispatchMode): they see every primitive
bound in their block, hand it on with super().process, and compose with the transforms,
the tape and compile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad import nn


class Logger(fg.Interpreter):
    def __init__(self):
        self.names = []
        self.args = []

    def process(self, prim, args, params):
        self.names.append(prim.name)
        self.args.append(args)
        return super().process(prim, args, params)


FUNCTIONS = {
    "mlp": lambda x: fg.tanh(x @ fg.ones((3, 4)) + 1.0).sum(axis=0),
    "indexing": lambda x: x[1:, ::2] * x[0, 0] + x[fg.asarray([0, 1])][:, :1],
    "reductions": lambda x: fg.logsumexp(x, axis=1) - fg.mean(x) + fg.max(x, axis=0)[:1],
    "shapes": lambda x: fg.concatenate([x.T.reshape(-1), fg.flip(x, 0).ravel()]) ** 2,
    "where": lambda x: fg.where(x > 0, fg.sqrt(fg.abs(x)), fg.exp(x)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_an_interpreter_sees_what_a_trace_records(name: str) -> None:
    f = FUNCTIONS[name]
    x = fg.asarray(np.random.default_rng(0).standard_normal((3, 3)))
    with Logger() as log:
        got = f(x)
    program = fg.trace(f)(x)
    assert log.names == [eqn.prim.name for eqn in program.eqns]
    np.testing.assert_allclose(got.numpy(), f(x).numpy())


def test_the_seed_operation_logger_on_a_model() -> None:
    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 5))
    x = fg.randn(4, 10)
    with Logger() as log:
        y = model(x)
    assert log.names == ["linear", "relu", "linear"] and y.shape == (4, 5)
    assert [tuple(a.shape) for a in log.args[0]] == [(4, 10), (20, 10), (20,)]


def test_it_sees_the_transforms_work_below_and_hands_tracers_on_above() -> None:
    x = fg.asarray(np.array([0.5, -1.0, 2.0]))
    f = lambda v: (fg.sin(v) * v).sum()  # noqa: E731
    with Logger() as outside:
        g = fg.grad(f)(x)
    assert outside.names[:3] == ["sin", "mul", "reduce_sum"] and "cos" in outside.names  # the backward rules
    np.testing.assert_allclose(g.numpy(), np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy()))

    def logged(v):
        with Logger() as inside:
            out = f(v)
        assert all(isinstance(a, fg.Tracer) for a in inside.args[0])
        return out

    np.testing.assert_allclose(fg.grad(logged)(x).numpy(), g.numpy())
    np.testing.assert_allclose(fg.vmap(fg.grad(logged))(fg.stack([x, 2 * x])).numpy()[0], g.numpy())


def test_operations_of_plain_arrays_inside_vmap_and_jvp_still_reach_an_interpreter_below() -> None:
    """vmap and jvp hand an operation none of whose operands is their tracer straight to
    eager evaluation, unless an interpreter below them must see it: this one, which sees
    every operation of the constants ``c`` and ``d`` (and the batched ones, below vmap)."""
    c, d = fg.asarray(np.array([1.0, 2.0, 3.0])), fg.asarray(np.array([0.5, 0.25, 2.0]))

    def f(v):
        k = fg.exp(c) * d + 1.0  # (no operand differs between the members)
        return fg.sqrt(k) * v

    x = fg.asarray(np.arange(6.0).reshape(2, 3))
    expected = np.sqrt(np.exp(c.numpy()) * d.numpy() + 1.0) * x.numpy()
    for transformed in (lambda: fg.vmap(f)(x), lambda: fg.jvp(f, (x,), (fg.ones_like(x),))[0],
                        lambda: fg.vmap(lambda v: fg.jvp(f, (v,), (v,))[0])(x)):
        with Logger() as log:
            got = transformed()
        assert log.names[:4] == ["exp", "mul", "add", "sqrt"], log.names
        np.testing.assert_allclose(got.numpy(), expected)
        np.testing.assert_allclose(transformed().numpy(), expected)  # (and with no interpreter below)


def test_the_tape_backward_and_a_compiled_call_inside_the_block() -> None:
    w = fg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with Logger() as log:
        loss = (w * w).sum()
        loss.backward()
    assert log.names[:2] == ["mul", "reduce_sum"] and len(log.names) > 2
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])
    f, v = fg.compile(lambda v: fg.exp(v) + 1), w.detach()
    f(v)
    with Logger() as log2:
        f(v)
    assert log2.names == ["compiled_call"]


def test_nesting_exceptions_and_leaving_the_block() -> None:
    x = fg.ones(2)
    with Logger() as outer:
        with Logger() as inner:
            x + 1
        x * 2
    assert inner.names == ["add"] and outer.names == ["add", "mul"]
    with pytest.raises(ValueError):
        with Logger() as failed:
            fg.exp(x)
            raise ValueError("boom")
    x - 1  # after the block: nobody intercepts
    assert failed.names == ["exp"] and outer.names == ["add", "mul"]
    with outer:  # reusable
        fg.sqrt(x)
    assert outer.names[-1] == "sqrt"


class Doubler(fg.Interpreter):
    """Changes what runs: every exp computed as exp(x) * 2 (same shape and dtype)."""

    def process(self, prim, args, params):
        out = super().process(prim, args, params)
        return out * 2 if prim.name == "exp" else out


@settings(max_examples=20, deadline=None)
@given(values=st.lists(st.floats(-3, 3), min_size=1, max_size=5))
def test_an_interpreter_may_change_the_computation_and_grad_follows(values: list[float]) -> None:
    x = fg.asarray(np.array(values))
    with Doubler():
        y = fg.exp(x)
        g = fg.grad(lambda v: fg.exp(v).sum())(x)
    np.testing.assert_allclose(y.numpy(), 2 * np.exp(values))
    # the doubled exp is what the forward pass computes; its rule reads that value
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(values), rtol=1e-12)
