"""Every primitive in the registry, on hypothesis-drawn inputs: the eager result
equals NumPy's (values, dtype, shape), abstract evaluation predicts the kernel's
shape and dtype, and views share their input's buffer while kernels never do."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.primitives.core import aval_of

from .primitive_cases import CASES, FORWARD_ONLY, REVERSE_ONLY, assert_matches

PRIMITIVES = sorted(fg.registry(), key=lambda p: p.name)


def test_every_primitive_has_a_case() -> None:
    missing = [p.name for p in PRIMITIVES if p.name not in CASES]
    assert not missing, f"primitives with no test case in tests/primitive_cases.py: {missing}"
    stale = set(CASES) - {p.name for p in PRIMITIVES}
    assert not stale, f"cases for primitives that do not exist: {stale}"


def _fg(a: object) -> object:
    return fg.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) and a.ndim else (
        fg.asarray(a) if isinstance(a, np.ndarray) else a)


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
@given(data=st.data())
def test_primitive_matches_numpy(prim: fg.Primitive, data: st.DataObject) -> None:
    case = CASES[prim.name](data.draw)
    args = [_fg(a) for a in case.args]
    out = fg.bind(prim, *args, **case.params)
    if prim.multiple_results and not out:  # an effect alone (debug_callback): check what it was handed
        assert_matches(case, case.extra["seen"][-1], prim.name)
        return
    if prim.multiple_results:  # call-like primitives: the first output is the function's
        out = out[0]
    got = out.numpy()
    want = assert_matches(case, got, prim.name)
    if prim.name not in ("integer_pow",):
        assert got.dtype == want.dtype, (prim.name, got.dtype, want.dtype)

    aval = prim.abstract_eval(*[aval_of(a) for a in args], **case.params)
    if prim.multiple_results:
        aval = aval[0]
    assert aval.shape == out.shape and aval.dtype is out.dtype and aval.device is out.device

    inputs = [a for a in args if isinstance(a, fg.Array)]
    if prim.view is not None:
        if case.shares_input:
            assert out.buffer is inputs[0].buffer
    else:
        for a in inputs:
            assert out.buffer is not a.buffer
            assert not np.shares_memory(out.numpy(), a.numpy())


def test_registry_is_enumerable_and_complete() -> None:
    names = {p.name for p in fg.registry()}
    for expected in ["add", "exp", "reduce_sum", "matmul", "reshape", "transpose", "gather", "scatter"]:
        assert expected in names
    for p in fg.registry():
        assert [p.view, p.kernel_spec, p.impl].count(None) == 2
        if p.differentiable:  # both rules, in the forms the interpreters call
            assert callable(p.jvp), p.name
            assert callable(getattr(p.vjp, "fwd", None)) and callable(getattr(p.vjp, "bwd", None)), p.name
        else:  # the interpreters never ask a primitive without a derivative for its rules
            assert p.jvp is None and p.vjp is None, p.name


@pytest.mark.parametrize("prim", [p for p in PRIMITIVES if p.differentiable], ids=lambda p: p.name)
@given(data=st.data())
def test_rules_give_cotangents_and_tangents_of_the_right_types(prim: fg.Primitive, data: st.DataObject) -> None:
    """Each differentiable primitive's JVP returns its output and a tangent shaped like it,
    and its VJP returns one cotangent per input that sums to that input's shape, in the
    input's dtype family (the values are checked against finite differences in
    test_gradients.py)."""
    case = CASES[prim.name](data.draw)
    args = [_fg(a) for a in case.args]
    floats = [isinstance(a, fg.Array) and a.dtype.kind == "f" for a in args]
    if not any(floats):
        return
    tangents = tuple(fg.ones_like(a) if f else None for a, f in zip(args, floats))
    if prim.name not in REVERSE_ONLY:  # a custom VJP has no forward mode (as in JAX): its rule says so
        ans, t_out = prim.jvp(tuple(args), tangents, **case.params)
        outs, touts = (ans, t_out) if prim.multiple_results else ((ans,), (t_out,))
        for o, t in zip(outs, touts):
            if t is not None and o.dtype.kind == "f":
                assert fg.broadcast_shapes(tuple(t.shape), tuple(o.shape)) == tuple(o.shape), prim.name
    if prim.name in FORWARD_ONLY:  # a while loop has no reverse mode (as in JAX): its rule says so
        with pytest.raises(TypeError, match="fori_loop"):
            prim.vjp.fwd(tuple(args), case.params)
        return
    ans, residuals = prim.vjp.fwd(tuple(args), case.params)
    g = tuple(fg.ones_like(o) for o in ans) if prim.multiple_results else fg.ones_like(ans)
    cts = prim.vjp.bwd(residuals, g, case.params, tuple(floats))
    assert len(cts) == len(args), prim.name
    for a, f, ct in zip(args, floats, cts):
        if f and ct is not None:
            summed = fg.broadcast_shapes(tuple(ct.shape), tuple(a.shape))
            assert summed == tuple(ct.shape), (prim.name, ct.shape, a.shape)
