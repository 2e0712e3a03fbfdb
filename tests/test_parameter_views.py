"""A Parameter is the one mutable holder: every view-returning method and function gives
an array of its own, which keeps its values after ``opt.step()``. Found by walking the
public API with a handful of argument patterns, not by listing cases."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.ops as ops
from funcgrad.array import Array

ATTEMPTS = [((), {}), (("shape",), {}), (("dtype",), {"copy": False}), (("dtype",), {}), (("device",), {}),
            ((0,), {}), ((None,), {}), ((-1,), {}), ((("shape"),), {"copy": False}), ((), {"copy": False})]


def _args(p, spec):
    return tuple({"shape": tuple(p.shape), "dtype": p.dtype, "device": p.device}.get(a, a)
                 if isinstance(a, str) else a for a in spec)


def _fresh_parameter():
    p = fg.nn.Parameter(fg.asarray(np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)))
    return p, fg.optim.SGD([p], lr=0.5)


def _results(out):
    return [o for o in fg.tree.leaves(out) if isinstance(o, Array)] if not isinstance(out, Array) else [out]


IN_PLACE = {"requires_grad_", "block_until_ready"}  # PyTorch's in-place methods (and JAX's wait) return the array itself


def _callables():
    def explains(n):  # x.add_, x.data: properties that raise, explaining what to write instead
        attr = inspect.getattr_static(Array, n)
        return isinstance(attr, property) and attr.fget.__qualname__.startswith("_explaining")

    methods = [(f"Array.{n}", n) for n in dir(Array)
               if (not n.startswith("_") or n in ("__pos__", "__array__")) and n not in IN_PLACE and not explains(n)]
    functions = [(f"fg.{n}", n) for n in ops.__all__ if callable(getattr(ops, n))]
    return methods + functions


@pytest.mark.parametrize("label,name", _callables(), ids=[c[0] for c in _callables()])
def test_results_sharing_a_parameters_memory_keep_their_values(label, name) -> None:
    for spec, kwargs in ATTEMPTS:
        p, opt = _fresh_parameter()
        target = getattr(p, name, None) if label.startswith("Array.") else getattr(ops, name)
        if not callable(target):
            return
        args = _args(p, spec)
        try:
            out = target(*args, **kwargs) if label.startswith("Array.") else target(p, *args, **kwargs)
        except Exception:
            continue
        shared = [o for o in _results(out) if o is p or (o.device is p.device and np.shares_memory(
            np.asarray(o.buffer.owner), np.asarray(p.buffer.owner)))]
        if not shared:
            continue
        for o in shared:
            assert o is not p and type(o) is Array, f"{label}{spec}{kwargs} returned the Parameter itself"
        before = [o.numpy().copy() for o in shared]
        opt.step([fg.ones_like(p)])
        assert p.tolist()[0][0] == 0.5  # the step happened
        for o, b in zip(shared, before):
            np.testing.assert_array_equal(o.numpy(), b, err_msg=f"{label}{spec}{kwargs} changed with the step")


@pytest.mark.parametrize("make", [
    lambda p: p.reshape(p.shape), lambda p: p.view(2, 3), lambda p: p.flatten(), lambda p: p.ravel(),
    lambda p: p.squeeze(), lambda p: fg.broadcast_to(p, (2, 3)), lambda p: fg.asarray(p), lambda p: p.contiguous(),
    lambda p: p.astype(fg.float32, copy=False), lambda p: +p, lambda p: p.to(p.device), lambda p: p[...],
    lambda p: fg.array(p, copy=False), lambda p: fg.reshape(p, (2, 3)), lambda p: fg.astype(p, fg.float32, copy=False),
])
def test_the_listed_views_of_a_parameter(make) -> None:
    """The issue's list, by hand as well: each is an Array, keeps its values, and passes the
    gradient back to the Parameter."""
    p, opt = _fresh_parameter()
    v = make(p)
    assert type(v) is Array and v is not p
    (v * 2.0).sum().backward()
    assert p.grad.tolist() == [[2.0] * 3] * 2
    before = v.numpy().copy()
    opt.step()
    np.testing.assert_array_equal(v.numpy(), before)
    assert not np.array_equal(p.numpy(), before.reshape(p.shape))
