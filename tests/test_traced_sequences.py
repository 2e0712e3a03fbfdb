"""Arrays built from traced values keep their derivatives: a (nested) sequence holding
arrays or tracers is stacked, and creation functions whose arguments can be arrays
differentiate through them or refuse a traced argument; nothing silently becomes a constant."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.ops as ops
from funcgrad.array import ArrayBase

X = fg.asarray(3.0, dtype=fg.float64)


def _scalar(out) -> fg.Array | None:
    """Sum every float output into one scalar (None when nothing is float)."""
    leaves = [o for o in fg.tree.leaves(out) if isinstance(o, ArrayBase) and o.dtype.kind == "f"]
    return sum((o.astype(fg.float64).sum() for o in leaves), fg.asarray(0.0, dtype=fg.float64)) if leaves else None


@pytest.mark.parametrize("f,want", [
    (lambda v: fg.array([v, v * 2.0]).sum(), 3.0),
    (lambda v: fg.asarray([[v, 1.0], [v ** 2, v]]).sum(), 2.0 + 2 * 3.0),
    (lambda v: fg.mean([v, v + 2]), 1.0),
    (lambda v: fg.max(fg.array([v, v])), 1.0),
    (lambda v: fg.linspace(0.0, v, 5).sum(), 2.5),
    (lambda v: fg.linspace(v, 10.0, 5, endpoint=False).sum(), 5 * (1 - 2 / 5)),
    (lambda v: fg.full((2, 3), v).sum(), 6.0),
    (lambda v: fg.full_like(fg.zeros(4), v, dtype=fg.float64).sum(), 4.0),
    (lambda v: fg.arange(v, 6.0).sum(), 3.0),
    (lambda v: fg.arange(0.0, 4.0, v / 3.0).sum(), (0 + 1 + 2 + 3) / 3.0),
    (lambda v: fg.array((v, (v * 3.0))).sum(), 4.0),
    (lambda v: fg.array([np.float64(1.0), v]).prod(), 1.0),
])
def test_sequences_and_creation_keep_derivatives(f, want) -> None:
    """In reverse and forward mode, and on the tape."""
    assert float(fg.grad(f)(X)) == pytest.approx(want, rel=1e-12)
    assert float(fg.jvp(f, (X,), (fg.ones_like(X),))[1]) == pytest.approx(want, rel=1e-12)
    x = X.detach().requires_grad_()
    out = f(x)
    assert out.grad_fn is not None
    out.backward()
    assert float(x.grad) == pytest.approx(want, rel=1e-12)


def test_traced_lengths_are_refused_not_frozen() -> None:
    """A length that depends on a traced value cannot be known abstractly: ConcretizationError."""
    with pytest.raises(fg.ConcretizationError):
        fg.trace(lambda v: fg.arange(0.0, v))(X)
    program = fg.trace(lambda v: fg.linspace(0.0, v, 4) + fg.array([v, v, v, v]) + fg.full((4,), v))(X)
    assert program(fg.asarray(2.0, dtype=fg.float64)).tolist() == pytest.approx([4.0, 14 / 3, 16 / 3, 6.0])


def test_stacked_sequences_follow_weak_typing_and_refuse_ragged_rows() -> None:
    v = fg.asarray(1.0)  # float32
    assert fg.array([v, 2.0]).dtype is fg.float32  # Python scalars are weak (JAX's rule)
    assert fg.array([v, fg.asarray(2.0, dtype=fg.float64)]).dtype is fg.float64
    assert fg.array([v, 2.0], dtype=fg.float16).dtype is fg.float16
    assert fg.array([[v, v], [v, v]]).shape == (2, 2)
    with pytest.raises(fg.ShapeError, match="array"):
        fg.array([[v, v], [v]])
    with pytest.raises(fg.ShapeError, match="array"):
        fg.array([fg.ones(2), fg.ones(3)])


TAKES_ONE_ARRAY = {"sum", "mean", "prod", "max", "min", "sort", "cumsum", "cumprod", "exp", "tanh", "var", "std",
                   "logsumexp", "flip", "ravel", "square", "abs", "sin", "asarray", "array", "atleast_2d",
                   "cumulative_sum", "zeros_like", "argmax", "meshgrid"}


PRODUCERS_ONLY = {"from_dlpack"}  # takes a DLPack producer (an array), never a list


def _public_functions() -> list[str]:
    return sorted(n for n in ops.__all__ if callable(getattr(ops, n)) and not isinstance(getattr(ops, n), type)
                  and n not in PRODUCERS_ONLY)


@pytest.mark.parametrize("name", _public_functions())
def test_every_function_taking_a_list_of_traced_values_differentiates(name) -> None:
    """Walk the public fg.* functions: called with a list that holds traced values, each gives
    what it gives for the stacked array (values, and gradients in both modes), or refuses both."""
    f = getattr(ops, name)
    base = fg.asarray([0.3, -1.2, 2.5], dtype=fg.float64)

    def as_list(v):
        return [v[0], v[1] * 2.0, 1.5]

    def as_array(v):
        return fg.stack([v[0], v[1] * 2.0, fg.asarray(1.5, dtype=fg.float64)])

    try:
        want_out = f(as_array(base))
    except Exception:  # the function does not take one array: the list is refused too
        assert name not in TAKES_ONE_ARRAY, name
        with pytest.raises(Exception):  # noqa: B017 (whatever the array gave)
            f(as_list(base))
        return
    got_out = f(as_list(base))
    for g, w in zip(fg.tree.leaves(got_out), fg.tree.leaves(want_out)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=name)
    if _scalar(want_out) is None:  # no float output: nothing to differentiate
        return
    for build in (as_list, as_array):
        loss = lambda v, build=build: _scalar(f(build(v)))
        rev = fg.grad(loss)(base)
        fwd = fg.jvp(loss, (base,), (fg.ones_like(base),))[1]
        if build is as_list:
            got = (rev, fwd)
        else:
            for g, w, mode in zip(got, (rev, fwd), ("rev", "fwd")):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12, err_msg=f"{name} {mode}")
