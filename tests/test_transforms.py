"""grad, vjp, jvp, jacobians, hessian, nesting, pytrees, no_grad, errors."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

X = fg.array([0.5, -1.0, 2.0], dtype=fg.float64)


def f(x):
    return (fg.tanh(x) * x ** 2).sum()


def df(x):  # by hand
    t = np.tanh(x)
    return (1 - t ** 2) * x ** 2 + 2 * x * t


def test_grad_matches_hand_derivative() -> None:
    np.testing.assert_allclose(fg.grad(f)(X).numpy(), df(X.numpy()), rtol=1e-12)


def test_value_and_grad_argnums_and_aux() -> None:
    g = lambda a, b, c: ((a * b).sum() + c, {"aux": a})  # noqa: E731
    a, b = fg.array([1.0, 2.0]), fg.array([3.0, 4.0])
    (value, aux), grads = fg.value_and_grad(g, argnums=(0, 1), has_aux=True)(a, b, 1.0)
    assert value.item() == 12.0 and aux["aux"].tolist() == [1.0, 2.0]
    assert grads[0].tolist() == [3.0, 4.0] and grads[1].tolist() == [1.0, 2.0]
    assert fg.grad(g, argnums=-2, has_aux=True)(a, b, 1.0)[0].tolist() == [1.0, 2.0]


def test_pytree_inputs_and_outputs() -> None:
    params = {"w": fg.ones((3, 2)), "b": fg.zeros(2), "layers": [fg.ones(2), None]}

    def loss(p, x):
        return fg.logsumexp(x @ p["w"] + p["b"] * p["layers"][0])

    grads = fg.grad(loss)(params, fg.array([1.0, 2.0, 3.0]))
    assert set(grads) == {"w", "b", "layers"} and grads["layers"][1] is None
    assert grads["w"].shape == (3, 2) and np.allclose(grads["b"].numpy(), [0.5, 0.5])
    Point = collections.namedtuple("Point", "x y")
    out, f_vjp = fg.vjp(lambda p: Point(p.x * 2, p.y * p.x), Point(fg.array(1.0), fg.array(3.0)))
    (ct,) = f_vjp(Point(fg.array(1.0), fg.array(1.0)))  # one cotangent per primal
    assert isinstance(ct, Point) and ct.x.item() == 5.0 and ct.y.item() == 1.0


def test_jvp_vjp_jacobians_hessian() -> None:
    A = fg.array([[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]], dtype=fg.float64)
    h = lambda x: fg.sin(A @ x)  # noqa: E731
    x = fg.array([0.3, -0.2], dtype=fg.float64)
    J = np.cos(A.numpy() @ x.numpy())[:, None] * A.numpy()
    np.testing.assert_allclose(fg.jacrev(h)(x).numpy(), J, rtol=1e-12)
    np.testing.assert_allclose(fg.jacfwd(h)(x).numpy(), J, rtol=1e-12)
    out, tangent = fg.jvp(h, (x,), (fg.array([1.0, 0.0], dtype=fg.float64),))
    np.testing.assert_allclose(tangent.numpy(), J[:, 0], rtol=1e-12)
    H = fg.hessian(lambda v: (v ** 3).sum() + v[0] * v[1])(x)
    np.testing.assert_allclose(H.numpy(), np.diag(6 * x.numpy()) + np.array([[0, 1], [1, 0]]), rtol=1e-12)


def test_nesting() -> None:
    s = lambda x: fg.sin(x).sum()  # noqa: E731
    x = fg.array(0.7, dtype=fg.float64)
    assert np.isclose(fg.grad(fg.grad(s))(x).item(), -np.sin(0.7))
    assert np.isclose(fg.grad(fg.grad(fg.grad(s)))(x).item(), -np.cos(0.7))
    assert np.isclose(fg.jvp(fg.grad(s), (x,), (fg.array(1.0, dtype=fg.float64),))[1].item(), -np.sin(0.7))
    assert np.isclose(fg.grad(fg.checkpoint(s))(x).item(), np.cos(0.7))
    prog = fg.trace(s)(x)
    assert np.isclose(fg.grad(prog)(x).item(), np.cos(0.7))
    assert np.isclose(fg.trace(fg.grad(s))(x)(x).item(), np.cos(0.7))
    assert np.isclose(fg.grad(lambda y: fg.grad(lambda z: z * y)(y))(x).item(), 1.0)  # perturbation confusion


@given(data=st.data())
def test_jacobian_modes_agree_and_match_finite_differences(data: st.DataObject) -> None:
    n, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    # |W @ x| <= 1: a chain like square, exp, sin is then smooth on the finite differences'
    # scale (from |h| = 3 it oscillates with period 1e-4, and no difference quotient can follow)
    W = fg.asarray(data.draw(hnp.arrays(np.float64, (m, n), elements=st.floats(-1, 1))) / n)
    x = fg.asarray(data.draw(hnp.arrays(np.float64, (n,), elements=st.floats(-1, 1))))
    ops = data.draw(st.lists(st.sampled_from(["tanh", "sin", "sigmoid", "square", "exp"]), min_size=1, max_size=3))

    def g(v):
        h = W @ v
        for op in ops:
            h = getattr(fg, op)(h)
        return h * fg.sum(v)

    np.testing.assert_allclose(fg.jacrev(g)(x).numpy(), fg.jacfwd(g)(x).numpy(), rtol=1e-10, atol=1e-12)
    check_grads(g, [x], order=2)


def test_stop_gradient_and_detach() -> None:
    x = fg.array([1.0, 2.0])
    assert fg.grad(lambda v: (fg.stop_gradient(v) * v).sum())(x).tolist() == [1.0, 2.0]
    assert fg.grad(lambda v: (v.detach() * v).sum())(x).tolist() == [1.0, 2.0]
    assert x.detach().buffer is x.buffer


def test_no_grad_as_transform_and_context() -> None:
    x = fg.array([1.0, 2.0])
    square = fg.no_grad(lambda v: v * v)
    assert fg.grad(lambda v: (square(v) * v).sum())(x).tolist() == [1.0, 4.0]

    def g(v):
        with fg.no_grad():
            c = v * v
        return (c * v).sum()

    assert fg.grad(g)(x).tolist() == [1.0, 4.0]

    def inner_grad_still_works(v):
        with fg.no_grad():
            return fg.grad(lambda u: (u ** 3).sum())(v)

    assert inner_grad_still_works(x).tolist() == [3.0, 12.0]

    @fg.no_grad()
    def decorated(v):
        return v * v

    assert fg.grad(lambda v: decorated(v).sum() + v.sum())(x).tolist() == [1.0, 1.0]
    prog = fg.trace(g)(x)  # no_grad is kept in programs as stop_gradient
    assert "stop_gradient" in str(prog) and fg.grad(prog)(x).tolist() == [1.0, 4.0]

    def masked(v):
        with fg.no_grad():
            keep = fg.flip(v > 1.5)                         # booleans: no gradient to stop
            return fg.where(keep, v * 2.0, 0.0)

    eqns = [e.prim.name for e in fg.trace(masked)(x).eqns]
    assert eqns == ["gt", "flip", "mul", "stop_gradient", "select", "stop_gradient"]


def test_tree_utilities() -> None:
    tree = {"b": (1, 2), "a": [3, None], "c": collections.namedtuple("P", "x y")(4, 5)}
    leaves, td = fg.tree.flatten(tree)
    assert leaves == [3, 1, 2, 4, 5]  # dict keys sorted; None is an empty node
    assert fg.tree.unflatten(td, [x * 10 for x in leaves])["c"].y == 50
    assert fg.tree.map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    assert fg.tree.leaves([None, (None,)]) == [] and fg.tree.structure(1) == fg.tree.structure(2)

    @fg.tree.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        name: str = dataclasses.field(default="dense", metadata={})

    fg.tree.register_dataclass(Layer, data_fields=["w"], meta_fields=["name"])
    layer = Layer(fg.array([1.0, 2.0]), "first")
    g = fg.grad(lambda lay: (lay.w ** 2).sum())(layer)
    assert isinstance(g, Layer) and g.name == "first" and g.w.tolist() == [2.0, 4.0]

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    fg.tree.register(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    got = fg.grad(lambda p: (p.a * p.b).sum())(Pair(fg.array([2.0]), fg.array([3.0])))
    assert got.a.tolist() == [3.0] and got.b.tolist() == [2.0]
    with pytest.raises(ValueError, match="structures differ"):
        fg.tree.map(lambda a, b: a, (1, 2), [1, 2])


# ---- bad input -------------------------------------------------------------------------

def test_grad_of_non_scalar_output() -> None:
    with pytest.raises(fg.ShapeError, match=r"shape \(3,\).*fg\.vjp.*fg\.jacrev.*\.sum\(\)"):
        fg.grad(lambda v: v * 2)(X)


def test_grad_with_respect_to_integers() -> None:
    with pytest.raises(fg.DTypeError, match="argument 0 has dtype int64"):
        fg.grad(lambda v: (v * 2.0).sum())(fg.array([1, 2]))
    with pytest.raises(fg.DTypeError, match="bool"):
        fg.grad(lambda a, b: a.sum(), argnums=1)(X, fg.array([True]))
    calls = []
    with pytest.raises(fg.DTypeError, match="argument 2 has dtype int64"):  # a pytree argument: its number
        fg.grad(lambda a, b, c: calls.append(1) or a.sum(), argnums=(0, 2))(X, X, {"w": X, "n": fg.array([1])})
    assert not calls  # checked before the function runs


def test_argnums_out_of_range() -> None:
    with pytest.raises(TypeError, match=r"argnums=3 is out of range.*2 positional"):
        fg.grad(lambda a, b: a.sum(), argnums=3)(X, X)


def test_has_aux_needs_a_pair() -> None:
    with pytest.raises(TypeError, match=r"has_aux=True requires the function to return a pair"):
        fg.grad(lambda v: v.sum(), has_aux=True)(X)


def test_concretization_errors() -> None:
    def branchy(v):
        if v.sum() > 0:
            return v
        return -v

    with pytest.raises(fg.ConcretizationError, match=r"bool\(\).*shape \(\).*fg\.trace.*fg\.where"):
        fg.trace(branchy)(X)
    with pytest.raises(fg.ConcretizationError, match=r"float\(\)"):
        fg.trace(lambda v: float(v.sum()))(X)
    with pytest.raises(fg.ConcretizationError, match=r"int\(\)"):
        fg.trace(lambda v: int(v[0]))(X)
    with pytest.raises(fg.ConcretizationError, match="boolean-mask"):
        fg.trace(lambda v: v[v > 0])(X)
    assert fg.grad(lambda v: branchy(v).sum())(X).tolist() == [1.0, 1.0, 1.0]  # concrete under grad, as in PyTorch and JAX


def test_tracer_leaks_are_caught() -> None:
    leaked = []

    def leaky(v):
        leaked.append(v * 2)
        return v.sum()

    fg.grad(leaky)(X)
    with pytest.raises(fg.TracerLeakError, match=r"created by fg\.grad"):  # the transform the user called
        leaked[0] + 1.0
    fg.trace(leaky)(X)
    with pytest.raises(fg.TracerLeakError, match=r"fg\.trace"):
        fg.exp(leaked[1])
    with pytest.raises(fg.TracerLeakError):
        fg.grad(lambda v: (v * leaked[1]).sum())(X)


def test_safe_where_pattern_gives_finite_gradients() -> None:
    x = fg.array([0.0, 4.0])
    naive = fg.grad(lambda v: fg.where(v > 0, fg.sqrt(v), 0.0).sum())(x)
    assert np.isnan(naive.numpy()[0])  # the trap: 0 * inf in the untaken branch
    safe = fg.grad(lambda v: fg.where(v > 0, fg.sqrt(fg.where(v > 0, v, 1.0)), 0.0).sum())(x)
    assert np.all(np.isfinite(safe.numpy())) and safe.tolist() == [0.0, 0.25]


# ---- checkpoint ------------------------------------------------------------------------

def _mlp(width: int, depth: int, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    Ws = [fg.asarray((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)) for _ in range(depth)]
    x = fg.asarray(rng.standard_normal((batch, width)).astype(np.float32))
    return Ws, x


def _forward(Ws, h, group: int | None):
    def run(layers, h):
        for W in layers:
            h = fg.tanh(h @ W)
        return h

    if group is None:
        return run(Ws, h)
    for i in range(0, len(Ws), group):
        h = fg.checkpoint(lambda v, layers=Ws[i:i + group]: run(layers, v))(h)
    return h


def test_checkpoint_gradients_equal_and_memory_drops() -> None:
    Ws, x = _mlp(64, 8, 32)
    loss = lambda Ws, group: _forward(Ws, x, group).sum()  # noqa: E731
    g_plain = fg.grad(loss)(Ws, None)
    g_ckpt = fg.grad(loss)(Ws, 4)
    g_dots = fg.grad(lambda Ws: fg.checkpoint(lambda v: _forward(Ws, v, None), "dots")(x).sum())(Ws)
    for a, b, c in zip(g_plain, g_ckpt, g_dots):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-5, atol=1e-6)

    def held_after_forward(group):
        gc.collect()
        base = fg.memory.allocated()
        _, f_vjp = fg.vjp(lambda v: _forward(Ws, v, group).sum(), x)
        gc.collect()
        held = fg.memory.allocated() - base
        del f_vjp
        return held

    plain, ckpt = held_after_forward(None), held_after_forward(4)
    act = 32 * 64 * 4
    assert plain >= 8 * act and ckpt <= 3 * act, (plain, ckpt)


def test_saved_residuals_lists_what_backward_keeps() -> None:
    Ws, x = _mlp(8, 4, 2)
    plain = fg.saved_residuals(lambda v: _forward(Ws, v, None).sum())(x)
    ckpt = fg.saved_residuals(lambda v: _forward(Ws, v, 4).sum())(x)
    assert ("f32[2,8]", "tanh") in plain and len([r for r in plain if r[1] == "tanh"]) == 4
    assert not any(made == "tanh" for _, made in ckpt)
    dots = fg.saved_residuals(lambda v: fg.checkpoint(lambda u: _forward(Ws, u, None), "dots")(v).sum())(x)
    assert len(dots) > len(ckpt)


# ---- custom rules and IR ---------------------------------------------------------------

def test_custom_vjp_and_custom_jvp() -> None:
    @fg.custom_vjp
    def clip_gradient(x, lo):
        return x

    clip_gradient.nondiff = (1,)
    clip_gradient.defvjp(lambda x, lo: (x, None), lambda lo, res, g: (fg.clip(g, -lo, lo),))
    assert fg.grad(lambda v: (clip_gradient(v, 0.5) * 3.0).sum())(X).tolist() == [0.5, 0.5, 0.5]

    @fg.custom_jvp
    def softplus(x):
        return fg.log1p(fg.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * fg.sigmoid(x)

    big = fg.array([0.0, 1000.0], dtype=fg.float64)
    assert fg.grad(lambda v: softplus(v).sum())(big).tolist() == [0.5, 1.0]
    check_grads(lambda v: softplus(v) * v, [X], order=2)
    with pytest.raises(TypeError, match="nondiff_argnums.*hashable"):
        fg.custom_vjp(lambda x, s: x, nondiff_argnums=(1,)).defvjp(lambda x, s: (x, None), lambda s, r, g: (g,))(X, [1])


def test_a_custom_rule_traces_its_function_once_per_input_signature() -> None:
    """Called every step (FSDP's gathered parameters), a custom rule traces its function for
    the output's structure and types once per input structure, types, static arguments and
    64-bit mode, then only runs it; its gradients stay the rule's."""
    calls = []

    @fg.custom_vjp
    def double(x):
        calls.append(isinstance(x, fg.Array))  # (False while traced)
        return x * 2.0

    double.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g * 10.0,))
    for _ in range(3):
        assert double(fg.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert calls == [False, True, True, True]
    double(fg.ones(4))
    double(fg.ones(3, dtype=fg.float64))
    assert calls.count(False) == 3
    assert fg.grad(lambda v: double(v).sum())(fg.ones(3)).tolist() == [10.0, 10.0, 10.0]

    @fg.custom_vjp
    def plus_zeros(x):
        calls.append(isinstance(x, fg.Array))
        return x + fg.zeros(3)  # (float64 zeros in 64-bit mode: the same input, another output type)

    plus_zeros.defvjp(lambda x: (x + fg.zeros(3), None), lambda res, g: (g,))
    x32 = fg.ones(3, dtype=fg.float32)
    assert plus_zeros(x32).dtype == fg.float32
    before = calls.count(False)
    with _x64():
        assert plus_zeros(x32).dtype == fg.float64
    assert calls.count(False) == before + 1


@contextlib.contextmanager
def _x64():
    kept = fg.config.enable_x64
    fg.config.update("enable_x64", True)
    try:
        yield
    finally:
        fg.config.update("enable_x64", kept)


def test_program_printing_and_evaluation() -> None:
    prog = fg.trace(lambda a: (a * 2.0 + 1.0).sum())(fg.ones(3))
    assert str(prog) == ("{ lambda a:f32[3]; let\n"
                         "    b:f32[3] = mul a 2.0\n"
                         "    c:f32[3] = add b 1.0\n"
                         "    d:f32[] = reduce_sum[axes=(0,) keepdims=False] c\n"
                         "  in (d,) }")
    assert prog(fg.array([1.0, 2.0, 3.0])).item() == 15.0
    dot = prog.to_dot()
    assert dot.startswith("digraph") and "reduce_sum" in dot
    w = fg.ones(3)
    p2 = fg.trace(lambda a: (a * w).sum())(fg.ones(3))
    assert "consts b:f32[3]" in str(p2) and p2.consts[0] is w
    assert len(p2.eqns) == 2 and p2.eqns[0].prim.name == "mul"


def test_check_grads_pairs_outputs_around_ones_without_derivatives() -> None:
    """A bool (or integer) output between float ones has no finite difference: the checker
    keeps its place, so each float output is compared with its own difference, never the
    next output's."""
    x = fg.asarray(np.array([0.5, -1.5]))
    fg.testing.check_grads(lambda v: (v * 2.0, v > 0, fg.sin(v) * 3.0), [x], order=2)

    @fg.custom_jvp
    def wrong(v):
        return fg.sin(v)

    wrong.defjvp(lambda primals, tangents: (fg.sin(primals[0]), tangents[0] * 2.0))  # should be cos
    with pytest.raises(AssertionError):
        fg.testing.check_grads(lambda v: (v > 0, wrong(v)), [x], order=1, modes=("fwd",))


_TREES = st.recursive(st.integers(0, 9), lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=8)


@given(_TREES, st.data())
def test_a_prefix_broadcasts_over_the_subtrees_it_stands_for(tree, data) -> None:
    """``fg.tree.broadcast_prefix`` (``vmap``'s ``in_axes``, ``shard_map``'s specs): cutting a
    tree at any depth and marking each cut subtree gives every leaf its subtree's mark."""
    def cut(t, depth):  # (the prefix, and the marks each leaf of t should get)
        if depth == 0 or fg.tree.structure(t).node_type is None:
            mark = data.draw(st.sampled_from([None, "m", 7]))
            return mark, [mark] * len(fg.tree.leaves(t))
        if isinstance(t, dict):
            parts = {k: cut(t[k], depth - 1) for k in sorted(t)}
            return {k: p for k, (p, _) in parts.items()}, [m for _, ms in parts.values() for m in ms]
        parts = [cut(c, depth - 1) for c in t]
        return type(t)(p for p, _ in parts), [m for _, ms in parts for m in ms]

    prefix, marks = cut(tree, data.draw(st.integers(0, 3)))
    assert fg.tree.broadcast_prefix(prefix, tree) == marks
    with pytest.raises(ValueError, match="does not match the structure of"):
        fg.tree.broadcast_prefix((prefix, prefix, prefix), [tree])
