"""fg.inference_mode: no recording inside, and its arrays refuse the tape afterwards (PyTorch's rule)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg


def test_no_recording_inside_and_inference_arrays_after() -> None:
    model = fg.nn.Linear(3, 2)
    x = fg.randn(4, 3)
    with fg.inference_mode():
        y = model(x)
        assert not fg.is_grad_enabled()
    assert y.is_inference() and not y.requires_grad and y.grad_fn is None
    assert not model(x).is_inference() and model(x).requires_grad and fg.is_grad_enabled()
    np.testing.assert_allclose(y.numpy(), model(x).detach().numpy())


def test_the_tape_refuses_an_inference_array_and_a_clone_is_ordinary() -> None:
    w = fg.tensor(np.ones((1, 2)), requires_grad=True)
    with fg.inference_mode():
        y = fg.asarray(np.arange(8.0).reshape(4, 2)) * 2
    with pytest.raises(RuntimeError, match=r"mul: an array made in fg.inference_mode\(\).*x.clone\(\)"):
        w * y
    with pytest.raises(RuntimeError, match="inference_mode"):
        y.requires_grad_()
    z = y.clone()
    assert not z.is_inference()
    (w * z).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), y.numpy().sum(axis=0, keepdims=True))
    assert (y + 1).sum().item() == 64.0  # no tape involved: inference arrays compute as usual
    with fg.no_grad():
        assert (w * y).shape == (4, 2)  # nothing recorded: allowed


def test_decorator_forms_and_mode_false() -> None:
    @fg.inference_mode
    def f(v):
        return v * 2

    @fg.inference_mode()
    def g(v):
        return v * 3

    x = fg.ones(2)
    assert f(x).is_inference() and g(x).is_inference() and g(x).tolist() == [3.0, 3.0]
    w = fg.tensor(np.ones(2), requires_grad=True)
    with fg.inference_mode(False):
        out = w * 2
    assert not out.is_inference() and out.requires_grad


def test_the_seed_style_evaluation_loop() -> None:
    """Seed 001's evaluation under inference mode: the predictions match no_grad's."""
    model = fg.nn.Sequential(fg.nn.Linear(5, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))
    model.eval()
    x = fg.randn(16, 5)
    with fg.inference_mode():
        pred = model(x).argmax(axis=1)
    with fg.no_grad():
        want = model(x).argmax(axis=1)
    assert pred.tolist() == want.tolist() and pred.is_inference()
