"""Backward plans (transforms/compiler/plans.py) and lowered programs (transforms/compiler/lower.py).

A plan must compute exactly what the rules compute (under native loops, within their ulp
bound: tests/backends.py): every test here compares the
two paths bit for bit, and checks the cases a plan must step aside for."""

from __future__ import annotations

import contextlib
import gc
import re
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.primitives import registry
from funcgrad.primitives.core import bind
from funcgrad.transforms.compiler import plans as replay
from funcgrad.transforms.compiler.lower import _raw_view, lower, wrap_outputs

from .backends import BACKENDS, assert_as_eager, compile_backend
from .primitive_cases import CASES


@pytest.fixture(autouse=True, scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Any:
    """Every test here runs under both ways of running compiled code (``tests/backends.py``)."""
    with compile_backend(request.param):
        yield request.param



@contextlib.contextmanager
def rules_only() -> Iterator[None]:
    replay.ENABLED = False
    try:
        yield
    finally:
        replay.ENABLED = True


def same(a: object, b: object) -> None:
    """Bit for bit (NaNs equal) under NumPy's lowering; native loops' transcendental
    functions are the C library's (``backends.assert_as_eager``)."""
    for x, y in zip(fg.tree.leaves(a), fg.tree.leaves(b)):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert_as_eager(np.asarray(x), np.asarray(y))


def mlp_loss(params: list, x: fg.Array, y: fg.Array) -> fg.Array:
    w1, b1, w2, b2 = params
    h = fg.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    return (fg.logsumexp(z, axis=1) - fg.take_along_axis(z, y[:, None], 1)[:, 0]).mean()


def mlp_args(rng: np.random.Generator, batch: int, n_in: int, hidden: int, n_out: int) -> tuple:
    params = [fg.asarray(rng.standard_normal(s).astype(np.float32))
              for s in [(n_in, hidden), (hidden,), (hidden, n_out), (n_out,)]]
    x = fg.asarray(rng.standard_normal((batch, n_in)).astype(np.float32))
    return params, x, fg.asarray(rng.integers(0, n_out, batch))


@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31))
def test_plan_equals_rules_bit_for_bit(batch: int, n_in: int, hidden: int, n_out: int, seed: int) -> None:
    params, x, y = mlp_args(np.random.default_rng(seed), batch, n_in, hidden, n_out)
    vg = fg.value_and_grad(mlp_loss)
    with rules_only():
        expected = vg(params, x, y)
    first, again = vg(params, x, y), vg(params, x, y)  # builds the plan, then replays it
    same(first, expected)
    same(again, expected)


FUNCTIONS = {
    "broadcast_and_reduce": lambda a, b: (fg.exp(a[:2, None] * b.T) / (1.0 + b.sum())).max(),
    "views_and_indexing": lambda a, b: (a.reshape(2, 3).T[::-1] * b[:, :2].mean(0)).sum(),
    "where_and_abs": lambda a, b: fg.where(a > 0, fg.sqrt(fg.abs(a) + 1.0), a * 3).sum() + (b ** 3).sum(),
    "shared_input": lambda a, b: ((a * a).sum() * (a + 1.0).prod()) + fg.sin(b).sum(),
    "concatenate_split": lambda a, b: sum((t ** 2).sum() for t in fg.split(fg.concatenate([a, b.ravel()]), 4)),
    "float64": lambda a, b: (a.astype(fg.float64) ** 2).sum() + fg.tanh(b.astype(fg.float64)).sum(),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_plan_equals_rules_on_assorted_graphs(name: str) -> None:
    rng = np.random.default_rng(0)
    a = fg.asarray(rng.standard_normal(6).astype(np.float32))
    b = fg.asarray(rng.standard_normal((3, 2)).astype(np.float32))
    g = fg.grad(FUNCTIONS[name], argnums=(0, 1))
    with rules_only():
        expected = g(a, b)
    for _ in range(3):
        same(g(a, b), expected)


@pytest.mark.parametrize("causal", [False, True])
def test_a_graph_with_attention_has_a_plan_equal_to_the_rules(causal: bool) -> None:
    """Attention's reverse-mode rule is its own class, not per-input rules, and is
    ``plannable``: a transformer's backward pass (heads of a fused projection, nanoGPT's
    layout) is one plan, equal to the rules'."""
    rng = np.random.default_rng(1)
    x = fg.asarray(rng.standard_normal((2, 5, 8)).astype(np.float32))
    w = fg.asarray(rng.standard_normal((8, 24)).astype(np.float32) * 0.3)

    def loss(x, w):
        q, k, v = (t.reshape(2, 5, 2, 4).transpose(0, 2, 1, 3) for t in fg.split(x @ w, 3, axis=-1))
        out = fg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return (out * out).sum()

    g = fg.grad(loss, argnums=(0, 1))
    with rules_only():
        expected = g(x, w)
    replay.clear()  # (the cache holds at most MAX_PLANS: count this graph's from none)
    for _ in range(3):
        same(g(x, w), expected)
    assert replay.cache_info() == {"plans": 1, "unplannable": 0}


def test_one_plan_per_graph_structure() -> None:
    replay.clear()
    rng = np.random.default_rng(1)
    g = fg.grad(mlp_loss)
    for _ in range(5):
        g(*mlp_args(rng, 4, 3, 5, 2))  # new values, same structure
    assert replay.cache_info() == {"plans": 1, "unplannable": 0}
    g(*mlp_args(rng, 7, 3, 5, 2))  # another batch size: another structure
    assert replay.cache_info()["plans"] == 2
    # a saved Python scalar is part of the structure: 2 and 2.0 must not share a plan
    x = fg.arange(3.0)
    assert fg.grad(lambda x: (x * 2).sum())(x).tolist() == [2.0, 2.0, 2.0]
    assert fg.grad(lambda x: (x * 3.0).sum())(x).tolist() == [3.0, 3.0, 3.0]


def test_same_operations_wired_differently_get_their_own_plans() -> None:
    """The signature numbers nodes in the order a breadth-first walk meets them, which is
    not always parents-before-children: in ``b + b * 3`` the root meets ``b`` before ``b * 3``,
    whose cotangent ``b`` still needs. Plans must still order the backward pass correctly,
    and a graph with the same operations but other wiring must not reuse the plan."""
    x = fg.arange(1.0, 4.0)
    shared = lambda x: ((b := x * 2.0) + b * 3.0).sum()  # noqa: E731  d/dx = 2 + 6 = 8
    apart = lambda x: (x * 2.0 + x * 3.0).sum()  # noqa: E731  d/dx = 5
    for _ in range(3):
        assert fg.grad(shared)(x).tolist() == [8.0] * 3
        assert fg.grad(apart)(x).tolist() == [5.0] * 3
        w = fg.arange(1.0, 4.0, requires_grad=True)
        shared(w).backward()
        assert w.grad.tolist() == [8.0] * 3


def test_plans_add_cotangents_in_the_rules_order() -> None:
    """``x`` feeds three products, so its cotangent is a sum of three, whose rounding depends
    on the order. Written in two orders, the programs have one structure (one key); the
    plan must add in the order the rules would for each, so it sums as the rules' walk of
    the graph does (its order follows the graph, not the order the nodes were made)."""
    rng = np.random.default_rng(3)
    x, w1, w2, w3 = (fg.asarray(rng.standard_normal(64).astype(np.float32) * 10 ** k) for k in (0, 3, -3, 1))

    def made_in_order(x, w1, w2, w3):
        a, b, c = x * w1, x * w2, x * w3
        return ((a + b) + c).sum()

    def made_backwards(x, w1, w2, w3):
        c = x * w3
        b = x * w2
        a = x * w1
        return ((a + b) + c).sum()

    for f in (made_in_order, made_backwards, made_in_order):
        with rules_only():
            expected = fg.grad(f)(x, w1, w2, w3)
        for _ in range(2):
            same(fg.grad(f)(x, w1, w2, w3), expected)
            xs = x.detach().requires_grad_()
            f(xs, w1, w2, w3).backward()
            same(xs.grad, expected)


def test_unhashable_parameters_take_the_rules_path() -> None:
    from funcgrad.primitives.shape import transpose_p

    x = fg.arange(6.0).reshape(2, 3)
    f = lambda x: (fg.bind(transpose_p, x, permutation=[1, 0]) * 2.0).sum()  # a list: unhashable
    for _ in range(2):
        assert fg.grad(f)(x).tolist() == [[2.0] * 3] * 2


def test_user_rules_run_every_time() -> None:
    calls = []

    @fg.custom_vjp
    def scaled(x):
        return x * 2.0

    def fwd(x):
        return scaled(x), None

    def bwd(res, g):
        calls.append(1)
        return (g * 10.0,)

    scaled.defvjp(fwd, bwd)
    x = fg.arange(3.0)
    for _ in range(3):
        assert fg.grad(lambda x: scaled(x).sum())(x).tolist() == [10.0, 10.0, 10.0]
    assert len(calls) == 3  # a plan would have skipped user code

    class Cube(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            calls.append(2)
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    for _ in range(2):
        w = fg.array([2.0], requires_grad=True)
        Cube.apply(w).sum().backward()
        assert w.grad.tolist() == [12.0]
    assert calls.count(2) == 2


def test_tape_hooks_retain_grad_and_freed_graphs_with_plans() -> None:
    seen = []
    for _ in range(3):
        w = fg.array([1.0, 2.0], requires_grad=True)
        h = w * 3.0
        h.retain_grad()
        w.register_hook(lambda g: seen.append(g.tolist()))
        loss = (h * h).sum()
        loss.backward(retain_graph=True)
        loss.backward()  # the plan path accumulates like the rules path
        assert w.grad.tolist() == [36.0, 72.0] and h.grad.tolist() == [12.0, 24.0]
        with pytest.raises(fg.GraphFreedError):
            loss.backward()
    assert seen == [[18.0, 36.0]] * 6
    for _ in range(3):  # no hooks: the plan runs, and still frees the graph
        w = fg.array([1.0, 2.0], requires_grad=True)
        loss = (w * w).sum()
        loss.backward()
        with pytest.raises(fg.GraphFreedError):
            loss.backward()


def test_autograd_grad_of_an_intermediate_with_plans() -> None:
    for _ in range(3):
        w = fg.array([1.0, 2.0], requires_grad=True)
        h = fg.exp(w)
        loss = (h * h).sum()
        gh, gw = fg.autograd.grad(loss, [h, w])
        np.testing.assert_allclose(gh.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
        np.testing.assert_allclose(gw.numpy(), 2 * np.exp([2.0, 4.0]), rtol=1e-6)


def test_tape_step_with_plans_equals_rules() -> None:
    def grads(seed: int) -> list:
        fg.manual_seed(seed)
        model = fg.nn.Sequential(fg.nn.Linear(5, 4), fg.nn.Tanh(), fg.nn.Linear(4, 3))
        x = fg.asarray(np.random.default_rng(seed).standard_normal((6, 5)).astype(np.float32))
        fg.nn.functional.cross_entropy(model(x), fg.asarray(np.arange(6) % 3)).backward()
        return [p.grad for p in model.parameters()]

    with rules_only():
        expected = grads(3)
    same(grads(3), expected)
    same(grads(3), expected)


def test_linear_weight_gradients_keep_the_weights_layout() -> None:
    """matmul's VJP picks its computation by the weight's layout (core.layout_kind); a plan,
    traced without concrete arrays, must make the same choice."""
    w = fg.asarray(np.ones((4, 3), np.float32))  # (out, in), row-major
    x = fg.ones((2, 3))
    g = fg.grad(lambda w: (x @ w.T).sum())
    for _ in range(3):
        assert g(w).numpy().flags.c_contiguous


def test_memory_counts_return_to_baseline() -> None:
    params, x, y = mlp_args(np.random.default_rng(2), 8, 16, 32, 4)
    g = fg.grad(mlp_loss)
    g(params, x, y)
    gc.collect()
    base = fg.memory.allocated()
    fg.memory.reset_peak()
    grads = g(params, x, y)
    assert fg.memory.max_allocated() > base  # the plan's temporaries were counted while alive
    held = sum(a.nbytes for a in grads)
    assert fg.memory.allocated() == base + held
    del grads
    gc.collect()
    assert fg.memory.allocated() == base


def mlp_plan(seed: int) -> tuple:
    """``fg.grad`` of the MLP loss after one call, its arguments, and its one plan's lowered
    function's globals (the kernels, which a test may wrap) and source."""
    args = mlp_args(np.random.default_rng(seed), 8, 16, 32, 4)
    g = fg.grad(mlp_loss)
    replay.clear()
    g(*args)
    (plan,) = [p for p in replay._PLANS.values() if p is not None]
    return g, args, plan.lowered.fn.__globals__, plan.lowered.source


def test_memory_counts_survive_arrays_freed_while_a_plan_runs() -> None:
    """The garbage collector may free arrays (and uncount them) in the middle of a plan:
    the plan must not write back counters it read before they changed."""
    g, (params, x, y), namespace, _ = mlp_plan(3)
    name = next(k for k in namespace if k.startswith("k"))
    kernel = namespace[name]
    doomed: list = []

    def kernel_that_frees_an_array(*args: object) -> object:
        doomed.clear()  # as if the collector ran here
        return kernel(*args)

    namespace[name] = kernel_that_frees_an_array
    try:
        gc.collect()
        base = fg.memory.allocated()
        doomed.append(fg.ones((64,)) * 2.0)
        g(params, x, y)
        gc.collect()
        assert fg.memory.allocated() == base
    finally:
        namespace[name] = kernel


def test_a_plans_peak_is_the_most_its_kernel_results_hold_at_once() -> None:
    """LoweredFunction programs raise the peak once, by a size worked out from the program: it
    must equal the most bytes the kernels' results really hold at once while it runs."""
    g, (params, x, y), namespace, source = mlp_plan(4)
    views = {p.name for p in registry() if p.view is not None}
    step_prim = dict(re.findall(r"= (k\d+)\(.*\)  # (\w+)", source))
    originals = {k: namespace[k] for k in step_prim}
    live = [0, 0]  # bytes held now, most held

    def freed(n: int) -> None:
        live[0] -= n

    def counting(kernel: object, is_view: bool) -> object:
        def run(*args: object, **kwargs: object) -> object:
            out = kernel(*args, **kwargs)
            if isinstance(out, np.generic):  # a NumPy scalar: as a 0-d array, which a weak reference can watch
                out = np.asarray(out)
            if not is_view and "out" not in kwargs:  # (a result written into a temporary takes no new memory)
                live[0] += out.nbytes
                live[1] = max(live)
                weakref.finalize(out, freed, out.nbytes)
            return out
        return run

    for k, name in step_prim.items():
        namespace[k] = counting(originals[k], name in views)
    originals["EMPTY"] = namespace["EMPTY"]  # (native loops write into memory made here)
    namespace["EMPTY"] = counting(originals["EMPTY"], False)
    try:
        gc.collect()
        base = fg.memory.allocated()
        fg.memory.reset_peak()
        grads = g(params, x, y)
        assert live[1] > 0 and namespace["PEAK"] == live[1]
        assert fg.memory.max_allocated() >= base + live[1]  # the forward pass may have held more
        assert fg.memory.allocated() == base + sum(a.nbytes for a in grads)
    finally:
        namespace.update(originals)


def test_lowered_program_equals_the_program() -> None:
    def f(x, y):
        z = fg.tanh(x @ y.T) * 2.0
        return z.sum(0), z[::-1, :1].reshape(-1), x

    x, y = fg.arange(6.0).reshape(2, 3), fg.ones((4, 3))
    program = fg.trace(f)(x, y)
    low = lower(program)
    assert "def lowered" in low.source and "# matmul" in low.source
    got = wrap_outputs(low, low.run([x._data, y._data], x.device.stats), [x, y], x.device)
    for a, b in zip(got, program.eval_flat([x, y])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert got[2] is x  # an input returned as an output comes back as itself
    # call-like primitives (checkpoint: impl, multiple results) run through the eager path
    inner = fg.checkpoint(lambda a: (fg.sin(a) * a).sum())
    program = fg.trace(lambda a: inner(a) + 1.0)(x)
    assert "checkpoint" in str(program)
    low = lower(program)
    (got,) = wrap_outputs(low, low.run([x._data], x.device.stats), [x], x.device)
    np.testing.assert_array_equal(got.numpy(), program(x).numpy())


def test_dead_code_elimination_keeps_what_outputs_need() -> None:
    from funcgrad.transforms.compiler.passes import eliminate_dead_code

    def f(a):
        unused = fg.exp(a) * 3.0  # noqa: F841 - dead
        return (a * 2.0).sum()

    program = fg.trace(f)(fg.arange(3.0))
    pruned = eliminate_dead_code(program)
    assert [e.prim.name for e in pruned.eqns] == ["mul", "reduce_sum"]
    assert len(program.eqns) == 4 and pruned(fg.arange(3.0)).item() == 6.0


VIEWS = [p for p in registry() if p.view is not None]


@pytest.mark.parametrize("prim", VIEWS, ids=lambda p: p.name)
@given(data=st.data())
def test_raw_views_equal_the_eager_views(prim, data) -> None:
    """LoweredFunction programs make views of raw arrays: with the primitive's ``native`` call, and
    with the layout rule over flat memory (``_raw_view``, for a view without one). Both
    must equal the eager view, for any input layout."""
    case = CASES[prim.name](data.draw)
    x = np.asarray(case.args[0])
    if x.ndim >= 2 and data.draw(st.booleans()):  # a transposed input
        x = np.ascontiguousarray(x.swapaxes(0, 1)).swapaxes(0, 1)
    if x.ndim >= 1 and data.draw(st.booleans()):  # a reversed input (negative strides)
        x = x[::-1]
    expected = bind(prim, fg.asarray(x), **case.params).numpy()
    native = prim.native_for(fg.device("cpu"))
    assert native is not None, f"{prim.name}: a view primitive needs a native call (lowered programs use it)"
    for got in (native(x, **case.params), _raw_view(prim, case.params, fg.device("cpu").backend, x)):
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_program_cache_drops_the_least_recently_used() -> None:
    """Plans live in a ProgramCache: bounded, least recently used out first
    (a program whose graphs never repeat cannot grow it, and a hot graph is never dropped
    for a cold one)."""
    from funcgrad.transforms.ir import ProgramCache

    cache = ProgramCache("test", 2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now the most recent
    cache.put("c", 3)
    assert cache.get("b") is ProgramCache.MISSING and cache.get("a") == 1 and cache.get("c") == 3
    cache.put("d", None)  # "could not compile" is an entry too
    assert len(cache) == 2 and cache.get("d") is None
    with pytest.raises(TypeError):
        cache.get(["unhashable"])


def test_plans_are_compiled_by_the_pipeline() -> None:
    """A plan's program went through the compiler's passes: no equation computes a value
    nothing reads (here y's cotangent, which autograd.grad does not ask for)."""
    from funcgrad.transforms.compiler import pipeline as compiler

    seen = []
    original = compiler.lower

    def spy(program, **kwargs):
        seen.append(program)
        return original(program, **kwargs)

    replay.clear()
    compiler.lower = spy
    try:
        x, y = fg.ones(3, requires_grad=True), fg.full((3,), 2.0, requires_grad=True)
        (gx,) = fg.autograd.grad((fg.tanh(x) * y).sum(), [x])
    finally:
        compiler.lower = original
    (program,) = seen
    np.testing.assert_allclose(gx.numpy(), 2.0 * (1 - np.tanh(1.0) ** 2), rtol=1e-6)
    read = {id(a) for e in program.eqns for a in e.inputs} | {id(v) for v in program.outvars}
    assert all(any(id(v) in read for v in e.outputs) for e in program.eqns)
