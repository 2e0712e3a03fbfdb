"""``fg.compile``: one trace per signature, the passes, and composition with every transform
and with the tape. (Speed is measured in benchmarks/, never here.)"""

from __future__ import annotations

import gc
import warnings
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads
from funcgrad.transforms.compiler import passes
from funcgrad.transforms.ir import make_program

from .backends import BACKENDS, assert_as_eager, compile_backend, native


@pytest.fixture(autouse=True, scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Any:
    """Every test here runs under both ways of running compiled code (``tests/backends.py``)."""
    with compile_backend(request.param):
        yield request.param


RNG = np.random.default_rng(0)


def _arr(*shape: int, dtype: str = "float64") -> fg.Array:
    return fg.asarray(RNG.standard_normal(shape).astype(dtype))


def mlp(x: fg.Array, w: fg.Array, b: fg.Array) -> fg.Array:
    return fg.tanh(x @ w + b).sum(axis=1)


# ---- values and the cache -------------------------------------------------------------------

@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                  elements=st.floats(-3, 3)))
def test_compiled_equals_eager(a: np.ndarray) -> None:
    def f(x):
        y = fg.exp(x * 0.5) - x ** 2 + fg.sin(x) * 1.0
        return (y / (1.0 + x * x)).sum(), fg.transpose(fg.transpose(y))

    x = fg.asarray(a)
    got, want = fg.compile(f)(x), f(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
        assert g.dtype is w.dtype and g.shape == w.shape


_UNARY_STEPS = [fg.sin, fg.tanh, lambda v: v * 0.5 + 1.0, lambda v: v * v, fg.negative, lambda v: v / 2.0]
_BINARY_STEPS = [fg.add, fg.multiply, fg.subtract, fg.maximum]


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.booleans()), min_size=1, max_size=8),
       st.sampled_from([(7,), (3, 5), (40_000,), (200, 250)]), st.integers(0, 2**31 - 1))
def test_random_elementwise_programs_compile_to_the_same_values_and_gradients(steps, shape, seed) -> None:
    """Chains of elementwise operations (large ones become fused loops, small ones reuse
    dead temporaries): compiled values and gradients equal eager ones exactly."""
    rng = np.random.default_rng(seed)
    x, y = (fg.asarray(rng.uniform(-1, 1, shape).astype(np.float32)) for _ in range(2))

    def f(x, y, sines=None):
        values = [x, y]
        for u, b, pair in steps:
            if sines is not None and u == 0:
                sines.append(float(np.abs(values[-1].numpy()).max()))
            v = _UNARY_STEPS[u](values[-1])
            values.append(_BINARY_STEPS[b](v, values[-2]) if pair else v)
        return values[-1]

    # (native sin and tanh differ by an ulp or two; cancellations amplify it, and each squaring
    # in the chain doubles a relative error in the value and again in its derivative: sin of
    # (sin(y) + x) ** 8 measured 7e-5 apart, where the values' bound is 2e-5. A sin's own error
    # is its argument's relative error times the argument: sin(c ** 4) c ** 2 with c ** 4 near
    # 200 measured 8e-4 apart.)
    sines: list[float] = []
    f(x, y, sines)
    amplified = 4.0 ** sum(u == 3 for u, _, _ in steps) * max([1.0, *sines])
    assert_as_eager(fg.compile(f)(x, y).numpy(), f(x, y).numpy(), amplified=amplified)
    loss = lambda x, y: f(x, y).sum()  # noqa: E731
    tolerance = 1e-5 * amplified if native() else 1e-6
    for got, want in zip(fg.compile(fg.grad(loss, (0, 1)))(x, y), fg.grad(loss, (0, 1))(x, y)):
        scale = max(1.0, float(np.abs(want.numpy()).max()))  # (an element near a cancellation: relative to the rest)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tolerance, atol=tolerance * scale)


def test_large_fused_loops_split_across_threads_give_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fused loop over more than 2**19 elements runs its pieces on several threads (each
    piece ending in a short chunk here): the values, and the gradients, are those of one thread."""
    x = fg.asarray(RNG.uniform(-2, 2, (1 << 19) + 4097).astype(np.float32))
    f = lambda v: 0.5 * v * (1 + fg.tanh(0.79788456 * (v + 0.044715 * v * v * v)))  # noqa: E731
    results = {}
    for threads in (1, 3):
        monkeypatch.setattr(fg.config, "compile_threads", threads)
        fwd, grad = fg.compile(f), fg.compile(fg.grad(lambda v: f(v).sum()))
        assert ("threads" in fwd.lower(x).source) == (threads > 1)
        results[threads] = fwd(x).numpy(), grad(x).numpy()
    for one, many in zip(results[1], results[3]):
        np.testing.assert_array_equal(one, many)
    assert_as_eager(results[1][0], f(x).numpy())


def test_threaded_loops_keep_the_callers_floating_point_error_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """``np.errstate`` is per thread: a worker runs under the caller's, so an error the caller
    asks to raise does, from whichever piece meets it, and one it ignores stays silent."""
    monkeypatch.setattr(fg.config, "compile_threads", 2)
    monkeypatch.setattr(fg.config, "compile_backend", "numpy")  # (native loops raise no floating-point errors)
    values = np.ones(1 << 20, np.float32)
    values[-1] = 0.0  # in the last piece, which a worker runs
    x = fg.asarray(values)
    f = fg.compile(lambda v: fg.log(v * 2.0) + 1.0)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        f(x)
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(x).numpy()[-1] == -np.inf


def test_one_trace_per_signature() -> None:
    traces = []

    @fg.compile
    def f(x, y):
        traces.append(1)  # runs while tracing only
        return x * y

    x32, x64 = _arr(3, dtype="float32"), _arr(3)
    for _ in range(3):
        f(x32, x32)
    assert len(traces) == 1 and f.cache_size() == 1
    f(x64, x64)  # a new dtype
    f(_arr(4), _arr(4))  # a new shape
    f(x64, {"a": x64}["a"])
    assert len(traces) == 3 and f.cache_size() == 3
    f(x64, 2.0)  # a Python number is a weakly typed input: its type is in the signature, not its value
    f(x64, 3.0)
    assert len(traces) == 4
    np.testing.assert_allclose(f(x64, 3.0).numpy(), x64.numpy() * 3.0)
    f(x64, 3)  # an int: another weak type
    assert len(traces) == 5
    f.clear_cache()
    assert f.cache_size() == 0
    f(x64, x64)
    assert len(traces) == 6


def test_static_arguments_are_hashed_by_value() -> None:
    @fg.compile(static_argnums=1, static_argnames=("mode",))
    def f(x, n, mode="sum"):
        y = x ** n
        return y.sum() if mode == "sum" else y.max()

    x = _arr(5)
    np.testing.assert_allclose(f(x, 2).item(), (x.numpy() ** 2).sum())
    np.testing.assert_allclose(f(x, 3, mode="max").item(), (x.numpy() ** 3).max())
    f(x, 2)
    assert f.cache_size() == 2
    with pytest.raises(fg.ArgumentTypeError, match=r"compile\(f\): argument 1 is static, so it must be hashable"):
        f(x, [2])
    with pytest.raises(fg.ArgumentValueError, match="static_argnums=3 is out of range"):
        fg.compile(lambda x, n: x, static_argnums=3)
    with pytest.raises(fg.ArgumentValueError, match="static_argnames names 'm'"):
        fg.compile(lambda x, n: x, static_argnames="m")
    with pytest.raises(fg.ArgumentTypeError, match="compile: expected a callable"):
        fg.compile(3)


def test_unusual_signatures() -> None:
    x = _arr(3)
    np.testing.assert_allclose(fg.compile(lambda: fg.ones(3) * 2.0)().numpy(), [2.0, 2.0, 2.0])  # no input
    assert fg.compile(lambda v: v)(x) is not None and fg.compile(lambda v: (v, None))(x)[1] is None
    np.testing.assert_allclose(fg.compile(lambda v, scale=1.0: v * scale)(x, scale=3.0).numpy(), 3 * x.numpy())
    np.testing.assert_allclose(fg.compile(lambda vs: vs[0] + vs[1])([x, x]).numpy(), 2 * x.numpy())
    np.testing.assert_allclose(fg.compile(lambda v: v * 2)(np.arange(3.0)).numpy(), [0.0, 2.0, 4.0])  # NumPy in
    assert fg.compile(lambda v: 3.0)(x).item() == 3.0  # a number out: an array
    np.testing.assert_allclose(fg.compile(fg.jacfwd(lambda v: fg.sin(v) * v))(x).numpy(),
                               fg.jacfwd(lambda v: fg.sin(v) * v)(x).numpy(), rtol=1e-12)


def test_jit_is_compile_and_methods_bind() -> None:
    class Scaler:
        def __init__(self, k: float) -> None:
            self.k = k

        @fg.jit
        def apply(self, x):
            return x * self.k

    x = _arr(3)
    assert fg.jit is fg.compile
    np.testing.assert_allclose(Scaler(2.0).apply(x).numpy(), 2 * x.numpy())


def test_cache_misses_explain_themselves() -> None:
    f = fg.compile(lambda x: x + 1)
    f(_arr(32, 8, dtype="float32"))
    fg.config.explain_cache_misses = True
    try:
        with pytest.warns(RuntimeWarning, match=r"traced again: leaf 0: f32\[32,8\] -> f32\[16,8\]"):
            f(_arr(16, 8, dtype="float32"))
    finally:
        fg.config.explain_cache_misses = False
    g = fg.compile(lambda x: x + 1)
    with pytest.warns(RuntimeWarning, match=r"has traced 8 times; the last change: leaf 0: f64\[8\] -> f64\[9\]"):
        for n in range(2, 10):
            g(_arr(n))


def test_python_control_flow_on_traced_values_is_a_concretization_error() -> None:
    @fg.compile
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fg.ConcretizationError, match=r"inside fg\.compile \(at .*test_compile\.py:\d+\).*static_argnums"):
        f(_arr(3))


def test_an_escaped_tracer_names_compile() -> None:
    leaked = []

    @fg.compile
    def f(x):
        leaked.append(x)
        return x * 2

    f(_arr(3))
    with pytest.raises(fg.TracerLeakError, match=r"created by fg\.compile"):
        leaked[0] + 1


def test_closed_over_parameters_are_inputs() -> None:
    """An optimizer step changes a Parameter's values in place: the program reads it as an
    input, so the next call sees the new values without tracing again."""
    lin = fg.nn.Linear(4, 2)
    opt = fg.optim.SGD(lin.parameters(), lr=0.1)
    step = fg.compile(lambda x: lin(x).sum())
    x = _arr(3, 4, dtype="float32")
    before = step(x).item()
    loss = step(x)
    loss.backward()
    opt.step()
    after = step(x).item()
    np.testing.assert_allclose(after, lin(x).sum().item(), rtol=1e-6)
    assert after != before and step.cache_size() == 1


# ---- composition --------------------------------------------------------------------------

def test_grad_of_compiled_equals_grad() -> None:
    x, w, b = _arr(4, 3), _arr(3, 5), _arr(5)
    f = fg.compile(lambda x, w, b: mlp(x, w, b).sum())
    for argnums in (0, 1, (0, 1, 2)):
        got, want = fg.grad(f, argnums)(x, w, b), fg.grad(lambda *a: mlp(*a).sum(), argnums)(x, w, b)
        for g_, w_ in zip(fg.tree.leaves(got), fg.tree.leaves(want)):
            np.testing.assert_allclose(g_.numpy(), w_.numpy(), rtol=1e-12)
    check_grads(f, (x, w, b), order=2)  # grad, jvp and their second orders against finite differences


def test_compile_of_transforms_equals_the_transforms() -> None:
    x, w, b = _arr(4, 3), _arr(3, 5), _arr(5)
    loss = lambda x, w, b: mlp(x, w, b).sum()  # noqa: E731
    cases = [
        (fg.grad(loss, (0, 1)), (x, w, b)),
        (lambda x: fg.jvp(lambda x: mlp(x, w, b), (x,), (fg.ones_like(x),)), (x,)),
        (lambda x: fg.vjp(lambda x: mlp(x, w, b), x)[1](fg.ones((4,), fg.float64)), (x,)),
        (fg.jacrev(lambda x: mlp(x, w, b)), (x,)),
        (fg.hessian(lambda v: fg.tanh(v).sum()), (b,)),
        (fg.checkpoint(lambda x: mlp(x, w, b)), (x,)),
        (fg.compile(lambda x: mlp(x, w, b)), (x,)),
    ]
    for f, args in cases:
        for g_, w_ in zip(fg.tree.leaves(fg.compile(f)(*args)), fg.tree.leaves(f(*args))):
            np.testing.assert_allclose(g_.numpy(), w_.numpy(), rtol=1e-12, atol=1e-14)


def test_higher_orders_through_compiled_calls() -> None:
    f = fg.compile(lambda v: (fg.sin(v) * v).sum())
    v = _arr(4)
    np.testing.assert_allclose(fg.hessian(f)(v).numpy(), fg.hessian(lambda v: (fg.sin(v) * v).sum())(v).numpy(),
                               rtol=1e-12)
    xr = fg.asarray(v.numpy(), requires_grad=True)
    (g,) = fg.autograd.grad(f(xr), [xr], create_graph=True)
    g.sum().backward()
    want = fg.grad(lambda v: fg.grad(lambda u: (fg.sin(u) * u).sum())(v).sum())(v)
    np.testing.assert_allclose(xr.grad.numpy(), want.numpy(), rtol=1e-12)


def test_reverse_mode_runs_a_compiled_forward_half_and_backward_half() -> None:
    """grad(compile(f)) binds two compiled calls: the forward half keeps the residuals the
    rules need, the backward half maps them and the cotangent to the gradient; a third
    derivative through them equals the plain function's."""
    f = fg.compile(lambda v: (fg.sin(v) * fg.exp(v)).sum())
    plain = lambda v: (fg.sin(v) * fg.exp(v)).sum()  # noqa: E731
    v = _arr(5)
    names = [e.params.get("name") for e in fg.trace(fg.grad(f))(v).eqns if e.prim.name == "compiled_call"]
    assert names == ["<lambda>_forward", "<lambda>_backward"]
    third = lambda g: fg.grad(lambda u: fg.grad(lambda w: fg.grad(g)(w).sum())(u).sum())  # noqa: E731
    np.testing.assert_allclose(third(f)(v).numpy(), third(plain)(v).numpy(), rtol=1e-12)


def test_custom_rules_and_no_grad_inside_compile() -> None:
    @fg.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda res, g: (fg.clip(g, -0.1, 0.1),))
    f = fg.compile(lambda x: (clip_grad(x) * 3.0).sum() + fg.stop_gradient(x).sum() + fg.no_grad(fg.exp)(x).sum())
    np.testing.assert_allclose(fg.grad(f)(_arr(4)).numpy(), np.full(4, 0.1))


def test_the_tape_records_one_node_per_compiled_call() -> None:
    w = fg.asarray(RNG.standard_normal((3, 5)), requires_grad=True)
    x = _arr(4, 3)
    f = fg.compile(lambda x: fg.tanh(x @ w).sum())
    out = f(x)
    assert out.grad_fn is not None and out.grad_fn.prim.name == "compiled_call"
    out.backward()
    np.testing.assert_allclose(w.grad.numpy(), fg.grad(lambda w: fg.tanh(x @ w).sum())(fg.asarray(w.numpy())).numpy(),
                               rtol=1e-12)


def test_a_compiled_call_is_one_equation() -> None:
    f = fg.compile(lambda x: fg.exp(x) * 2.0)
    program = fg.trace(lambda x: f(x) + 1.0)(_arr(3))
    assert [e.prim.name for e in program.eqns] == ["compiled_call", "add"]
    assert "exp" in str(program)  # the nested program prints below its equation


def test_a_compiled_call_holds_no_more_memory_at_its_peak_than_eager() -> None:
    w1, w2 = _arr(64, 128, dtype="float32"), _arr(128, 16, dtype="float32")

    def f(x):
        h = fg.tanh(x @ w1)
        return (fg.exp(h) * h + h) @ w2

    x = _arr(256, 64, dtype="float32")
    compiled = fg.compile(f)
    compiled(x)  # traced and lowered before measuring
    peaks = []
    for fn in (f, compiled):
        fg.memory.reset_peak()
        base = fg.memory.allocated()
        out = fn(x)
        peaks.append(fg.memory.max_allocated() - base)
        del out
    assert peaks[1] <= peaks[0], peaks


# ---- passes -------------------------------------------------------------------------------

def _program(f, *args):
    return make_program(f, [a.aval for a in args], fg.tree.flatten(args)[1])[0]


def _names(program) -> list[str]:
    return [e.prim.name for e in program.eqns]


def test_simplify_removes_identities_and_merges_views() -> None:
    x = _arr(2, 3)
    program = _program(lambda x: fg.negative(fg.negative(fg.transpose(fg.transpose(x * 1.0 + 0.0) - 0.0) / 1.0)), x)
    assert _names(passes.eliminate_dead_code(passes.simplify(program))) == []  # x itself
    program = _program(lambda x: fg.reshape(fg.reshape(x, (3, 2)), (6,)) ** 2, x)
    simplified = passes.eliminate_dead_code(passes.simplify(program))
    assert _names(simplified) == ["reshape", "mul"]
    np.testing.assert_allclose(simplified.eval_flat([x])[0].numpy(), program.eval_flat([x])[0].numpy())


def test_constant_folding_and_common_subexpressions() -> None:
    c = _arr(3)

    def f(x):
        k = fg.exp(c) * 2.0  # constants only: computed once, when compiled
        return fg.sin(x) * k + fg.sin(x)

    program = _program(f, _arr(3))
    folded = passes.fold_constants(program)
    assert _names(folded) == ["sin", "mul", "sin", "add"]
    assert _names(passes.eliminate_common_subexpressions(folded)) == ["sin", "mul", "add"]
    x = _arr(3)
    np.testing.assert_allclose(fg.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-12)
    assert _names(fg.compile(f).lower(x).program) == ["sin", "mul", "add"]


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_a_gradients_own_constants_fold_so_a_layers_backward_is_one_run(backend: str) -> None:
    """``maximum(h, 0)``'s gradient rule makes its ones and halves with ``full`` on the
    operand's type (JAX's tie split). ``full`` reads no values (``Primitive.reads_values``),
    so they fold into constants whatever ``h`` is, and nothing sits between the rule's
    comparisons, selects, the product with the cotangent and the bias gradient's sum: on the
    C backend one native loop a layer. Ties at 0 keep the half, as eagerly."""
    rng = np.random.default_rng(3)
    x = fg.asarray(rng.standard_normal((16, 8)).astype(np.float32))
    w1, w2 = (fg.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((8, 12), (12, 4)))
    b = fg.asarray(np.where(np.arange(12) % 3 == 0, -1e9, 0.0).astype(np.float32))  # some units off
    x = x.at[0].set(0.0)  # a row of ties: h is exactly 0 at units with b = 0

    def loss(w1, b, w2):
        return (fg.maximum(x @ w1 + b, 0.0) @ w2).sum()

    with compile_backend(backend):
        compiled = fg.compile(fg.grad(loss, argnums=(0, 1, 2)))
        lowered = compiled.lower(w1, b, w2)
        assert "full" not in _names(lowered.program)
        if backend == "c":
            loops = [line for line in lowered.source.splitlines() if "# native loop:" in line]
            assert loops[-1].split("# native loop: ")[1] == "gt eq select select mul reduce_sum"
        for got, want in zip(compiled(w1, b, w2), fg.grad(loss, argnums=(0, 1, 2))(w1, b, w2)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_dead_code_is_dropped_with_its_constants() -> None:
    c = _arr(3)
    program = _program(lambda x: (fg.exp(x + c), x * 2.0)[1], _arr(3))
    pruned = passes.eliminate_dead_code(program)
    assert _names(pruned) == ["mul"] and pruned.consts == []


@pytest.mark.parametrize("backend", BACKENDS)
@given(rows=st.integers(1, 6), classes=st.integers(1, 5), reduction=st.sampled_from(["mean", "sum", "none"]),
       dtype=st.sampled_from([np.float32, np.float64]), ignored=st.booleans(), squared=st.booleans(),
       seed=st.integers(0, 2**16))
def test_a_loss_and_its_gradient_join_into_one_kernel(backend, rows, classes, reduction, dtype, ignored, squared,
                                                      seed) -> None:
    """``value_and_grad`` of a cross-entropy computes the loss and the logits' gradient in
    one equation (``join_siblings``), with eager's values and the inputs unchanged; where
    the gradient's cotangent is computed from the loss (its square's), it cannot, and the
    pair stays apart."""
    rng = np.random.default_rng(seed)
    z = fg.asarray(rng.standard_normal((rows, classes)).astype(dtype))
    labels = rng.integers(0, classes, rows)
    if ignored:
        labels[0] = -100
    y, before = fg.asarray(labels), (z.numpy().copy(), labels.copy())

    def loss(z, y):
        value = fg.nn.functional.cross_entropy(z * 2.0, y, reduction=reduction).sum()
        return value * value if squared else value

    vg = fg.value_and_grad(loss)
    with compile_backend(backend):
        compiled = fg.compile(vg)
        names = _names(compiled.lower(z, y).program)
        assert ("softmax_cross_entropy_and_grad" in names) is not squared
        assert ("softmax_cross_entropy_grad" in names) is squared
        for got, want in zip(compiled(z, y), vg(z, y)):
            assert_as_eager(got.numpy(), want.numpy())
    np.testing.assert_array_equal(z.numpy(), before[0])
    np.testing.assert_array_equal(y.numpy(), before[1])


def test_lowering_shows_the_passes_and_the_generated_code() -> None:
    f = fg.compile(lambda x: fg.tanh(x * 1.0) * fg.tanh(x * 1.0))
    lowered = f.lower(_arr(3))
    assert _names(lowered.traced) == ["mul", "tanh", "mul", "tanh", "mul"]
    assert _names(lowered.program) == ["tanh", "mul"]
    assert "tanh" in lowered.source and "def lowered" in lowered.source


def test_side_effects_run_while_tracing() -> None:
    seen = []
    f = fg.compile(lambda x: (seen.append(x.shape), x + 1)[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            f(_arr(2))
    assert seen == [(2,)]


# ---- modules ------------------------------------------------------------------------------

def _bn_model() -> fg.nn.Module:
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.BatchNorm1d(8), fg.nn.ReLU(), fg.nn.Linear(8, 3))


def test_a_compiled_module_trains_as_the_module_does() -> None:
    """Parameters and buffers are inputs (an optimizer step needs no new trace), BatchNorm's
    statistics are outputs assigned back, and train()/eval() trace once each."""
    F = fg.nn.functional
    model, reference = _bn_model(), _bn_model()
    reference.load_state_dict(model.state_dict())
    compiled = fg.compile(model)
    x = fg.asarray(RNG.standard_normal((16, 4)).astype("float32"))
    y = fg.asarray(RNG.integers(0, 3, 16))
    optimizers = [fg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, reference)]
    for _ in range(3):
        for m, opt in zip((compiled, reference), optimizers):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert compiled.cache_size() == 1 and compiled.state_dict().keys() == model.state_dict().keys()
    compiled.eval()
    reference.eval()
    np.testing.assert_allclose(compiled(x).numpy(), reference(x).numpy(), rtol=1e-5, atol=1e-6)
    compiled.train()
    compiled(x)
    assert compiled.cache_size() == 2
    assert not model[1].running_mean.requires_grad  # buffers carry no history
    with pytest.raises(fg.ArgumentValueError, match="static or donated arguments of a module's forward"):
        fg.compile(model, static_argnums=0)


# ---- a whole training step ------------------------------------------------------------------

@pytest.mark.parametrize("name, kwargs", [
    ("sgd", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd", dict(lr=0.1, momentum=0.9, dampening=0.5)),
    ("adam", dict(lr=0.01, weight_decay=0.1)),
    ("adamw", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("rmsprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.3, weight_decay=0.01)),
    ("adamax", dict(lr=0.01, weight_decay=0.1)),
    ("nadam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    ("radam", dict(lr=0.01, weight_decay=0.1)),
    ("adadelta", dict(lr=0.5, weight_decay=0.01)),
    ("rprop", dict(lr=0.01, maximize=True)),
])
def test_a_compiled_step_with_a_functional_optimizer_equals_the_class(name: str, kwargs: dict) -> None:
    """fg.optim.<rule>(...) is the class's own update rule as (init, update) over pytrees, so
    forward, backward and update are one compiled program, step for step equal to the
    PyTorch-style loop (float64, four steps)."""
    w0, x = RNG.standard_normal((3, 2)), _arr(4, 3)

    def loss(p, x):
        return (fg.tanh(x @ p["w"]) ** 2).sum()

    opt = getattr(fg.optim, name)(**kwargs)

    @fg.compile
    def step(params, state, x):
        return opt.update(fg.grad(loss)(params, x), state, params)

    params = {"w": fg.asarray(w0)}
    state = opt.init(params)
    p = fg.nn.Parameter(fg.asarray(w0))
    cls = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop", "adagrad": "Adagrad",
           "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam", "adadelta": "Adadelta", "rprop": "Rprop"}[name]
    reference = getattr(fg.optim, cls)([p], **kwargs)
    for _ in range(4 if name != "radam" else 8):  # (RAdam's rectified steps start at step 6)
        params, state = step(params, state, x)
        reference.zero_grad()
        loss({"w": p}, x).backward()
        reference.step()
    np.testing.assert_allclose(params["w"].numpy(), p.numpy(), rtol=1e-12, atol=1e-14)
    assert step.cache_size() <= 2  # (a state entry the rule starts absent appears after step one)


def test_functional_optimizers_check_their_arguments() -> None:
    with pytest.raises(fg.ArgumentValueError, match="invalid lr"):
        fg.optim.adam(lr=-1.0)
    opt = fg.optim.sgd(lr=0.1)
    params = {"w": _arr(2)}
    with pytest.raises(ValueError, match="1 gradients and 2 states for 1 parameters"):
        opt.update({"w": _arr(2)}, [{}, {}], params)


def test_no_retrace_turns_a_new_signature_into_an_error() -> None:
    f = fg.compile(lambda x: x * 2)
    f(_arr(3))
    fg.config.no_retrace = True
    try:
        f(_arr(3))  # the same signature still runs
        with pytest.raises(fg.RetraceError, match=r"would trace again .*leaf 0: f64\[3\] -> f64\[4\]"):
            f(_arr(4))
        with pytest.raises(fg.RetraceError, match="argument structure"):
            f((_arr(3),))
    finally:
        fg.config.no_retrace = False


def test_changing_a_parameter_inside_a_compiled_function_is_an_error() -> None:
    lin = fg.nn.Linear(3, 1)
    opt = fg.optim.SGD(lin.named_parameters(), lr=0.1)

    @fg.compile
    def step(x):
        loss, grads = fg.value_and_grad(lambda p: fg.nn.functional_call(lin, p, x).sum())(dict(lin.named_parameters()))
        opt.step(grads)
        return loss

    with pytest.raises(fg.ConcretizationError, match="a Parameter was changed .*while fg.compile traced.*fg.optim.sgd"):
        step(fg.ones((2, 3)))


def test_debug_print_runs_when_the_program_runs(capsys: pytest.CaptureFixture[str]) -> None:
    @fg.compile
    def f(x):
        y = x * 2.0
        fg.debug.print("y = {}", y)
        print("tracing")
        return y.sum()

    x = fg.asarray(np.arange(3.0))
    f(x)
    f(x)
    fg.grad(f)(x)  # the forward half runs it too
    out = capsys.readouterr().out
    assert out.count("tracing") == 1 and out.count("y = [0. 2. 4.]") == 3
    assert "debug_callback" in str(f.lower(x))  # kept by the passes though nothing reads it
    seen = []
    fg.debug.callback(lambda a, b: seen.append((a.item(), b)), fg.asarray(1.0), 2)
    fg.debug.callback(lambda b: seen.append(b), 3)  # no array: called at once
    assert seen == [(1.0, 2), 3]


def test_donated_arrays_give_their_memory_to_the_results() -> None:
    """A training step with its parameters and state donated computes what it computes
    without donation, allocates nothing new for them step after step, and a donated array
    is unusable afterwards."""
    opt = fg.optim.sgd(lr=0.1, momentum=0.9)

    def step(params, state, x):
        grads = fg.grad(lambda p: (fg.tanh(x @ p["w"]) ** 2).sum())(params)
        return opt.update(grads, state, params)

    x, w = _arr(8, 64), RNG.standard_normal((64, 64))
    plain, donating = fg.compile(step), fg.compile(step, donate_argnums=(0, 1))
    p1 = {"w": fg.asarray(w)}
    p2 = {"w": fg.asarray(w.copy())}
    s1, s2 = opt.init(p1), opt.init(p2)
    for i in range(4):
        p1, s1 = plain(p1, s1, x)
        gc.collect()  # (nothing else is freed while the step runs)
        before, held = fg.memory.allocated(), p2
        p2, s2 = donating(p2, s2, x)
        if i:  # (the first step fills the state's momentum buffer)
            assert fg.memory.allocated() <= before
    np.testing.assert_allclose(p2["w"].numpy(), p1["w"].numpy(), rtol=1e-12)
    with pytest.raises(fg.DonatedArrayError, match="donated to a compiled call"):
        held["w"] + 1.0
    with pytest.raises(fg.DonatedArrayError):
        held["w"].numpy()


def test_donation_errors() -> None:
    x = _arr(3)
    with pytest.raises(fg.ArgumentValueError, match="donated input 0 is also returned"):
        fg.compile(lambda a, b: (a, a + b), donate_argnums=0)(_arr(3), x)
    with pytest.raises(fg.ArgumentValueError, match="donated input 0 is passed more than once"):
        fg.compile(lambda a, b: a * b, donate_argnums=0)(x, x)
    with pytest.raises(fg.ArgumentValueError, match="donate_argnums=2 is out of range"):
        fg.compile(lambda a, b: a, donate_argnums=2)
    with pytest.raises(fg.ArgumentValueError, match="donate_argnames names 'c'"):
        fg.compile(lambda a, b: a, donate_argnames="c")
    with pytest.raises(fg.ArgumentValueError, match="is both static and donated"):
        fg.compile(lambda a: a, static_argnums=0, donate_argnums=0)
    with pytest.raises(fg.ArgumentValueError, match="a Parameter"):
        fg.compile(lambda a: a * 2, donate_argnums=0)(fg.nn.Parameter(_arr(3)))
    kept = _arr(3)
    view = kept[1:]  # its memory is shared: the call writes into a copy
    out = fg.compile(lambda a: fg.exp(a), donate_argnums=0)(kept)
    np.testing.assert_allclose(out.numpy()[1:], np.exp(view.numpy()))


def test_array_methods_work_on_traced_values() -> None:
    """Every no-argument array method gives under compile what it gives eagerly (a tracer's
    own attributes must not shadow a method, such as ``var``)."""
    x = fg.asarray(np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 1.0]]))
    for name in ("var", "std", "sum", "mean", "prod", "max", "min", "exp", "log", "sqrt", "tanh", "sigmoid", "abs",
                 "t", "clone", "ravel", "flatten", "argmax", "argmin", "any", "all", "cumsum", "round", "float",
                 "double", "T", "mT"):
        def f(v, name=name):
            got = getattr(v, name)
            return got() if callable(got) else got

        np.testing.assert_allclose(fg.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-6, err_msg=name)


def test_a_one_array_call_takes_the_quick_path_only_where_nothing_is_around_it() -> None:
    """After its first call, a compiled function of one array returning one new array runs
    its lowered code on the data; the tape, an enclosing transform, the profiler and the
    write guard each still see the call."""
    f = fg.compile(lambda v: v * 3.0 + 1.0)
    x = fg.asarray([0.0, 1.0])
    assert f(x).tolist() == [1.0, 4.0] and f(x).tolist() == [1.0, 4.0]  # (the second call: the quick path)
    w = fg.tensor([0.0, 1.0], requires_grad=True)
    y = f(w)
    assert y.grad_fn is not None
    y.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    assert fg.grad(lambda v: f(v).sum())(x).tolist() == [3.0, 3.0]
    with fg.profiler.profile() as prof:
        f(x)
    assert any("compiled_call" in e.name for e in prof.events())
    before, fg.config.write_guard = fg.config.write_guard, True
    try:
        assert f(x).tolist() == [1.0, 4.0]
    finally:
        fg.config.write_guard = before


def test_any_callable_compiles_a_partial_and_a_callable_object() -> None:
    import functools

    scaled = fg.jit(functools.partial(lambda a, x: a * x, 2.0))
    assert scaled(fg.ones(2)).tolist() == [2.0, 2.0] and scaled.__name__ == "<lambda>"

    class AddOne:
        def __call__(self, x):
            return x + 1

    compiled = fg.compile(AddOne())
    assert compiled(fg.ones(2)).tolist() == [2.0, 2.0] and compiled.__name__ == "AddOne"


@given(sections=st.sampled_from([3, 4, 6, [2, 5], [1, 7, 9], [0, 12]]), order=st.sampled_from(["in", "reversed", "mixed"]),
       seed=st.integers(0, 2**16))
def test_a_splits_gradient_is_its_pieces_gradients_joined(sections: Any, order: str, seed: int) -> None:
    """The gradient of a split whose pieces' gradients add up in order (or in reverse) is
    one ``concatenate`` of them (the passes' ``pad(a) + pad(b)`` identity), where the rules'
    path pads each piece with zeros and sums them. In another order (and with empty pieces)
    the pieces that meet are joined and the others added into that buffer (``scatter``).
    Never an ``add`` of whole arrays; always eager's values."""
    rng = np.random.default_rng(seed)
    n = len(fg.split(fg.zeros((3, 12)), sections, axis=1))
    w = rng.standard_normal((n, 3, 12)).astype(np.float32)
    uses = {"in": list(range(n)), "reversed": list(range(n))[::-1],
            "mixed": list(range(0, n, 2)) + list(range(1, n, 2))}[order]

    def loss(x: Any) -> Any:
        pieces = fg.split(x, sections, axis=1)
        return sum(((pieces[k] * w[k, :, :pieces[k].shape[1]]) ** 2).sum() for k in uses)

    x = fg.asarray(rng.standard_normal((3, 12)).astype(np.float32))
    compiled = fg.compile(fg.grad(loss))
    lines = [line for line in compiled.lower(x).source.splitlines() if not line.lstrip().startswith("#")]
    kinds = [line.rsplit("# ", 1)[-1] for line in lines if "# " in line]
    assert "add" not in kinds and "full" not in kinds
    if order != "mixed" and 0 not in np.diff([0, *np.atleast_1d(sections), 12]):
        assert kinds.count("concatenate") == 1 and "pad" not in kinds and "scatter" not in kinds
    np.testing.assert_allclose(compiled(x).numpy(), fg.grad(loss)(x).numpy(), rtol=1e-6, atol=1e-6)


@given(axis=st.integers(0, 2), cuts=st.lists(st.integers(0, 6), max_size=4), keep=st.data(),
       other=st.sampled_from([None, (0, 2), (1, 3)]), seed=st.integers(0, 2**16))
def test_slices_gradients_joined_or_not_are_eagers(axis: int, cuts: list[int], keep: Any, other: Any,
                                                   seed: int) -> None:
    """Slices of one array along any axis (cut anywhere, empty pieces included), all taken
    within the same range of another axis or not, some pieces unused, the rest used in any
    order: the compiled gradient (pads joined, padded, scattered) equals eager's."""
    rng = np.random.default_rng(seed)
    x = fg.asarray(rng.standard_normal((4, 6, 5)).astype(np.float32))
    n = x.shape[axis]
    bounds = [0, *sorted(min(c, n) for c in cuts), n]
    pieces = list(zip(bounds[:-1], bounds[1:]))
    used = keep.draw(st.permutations(range(len(pieces))))[:keep.draw(st.integers(1, len(pieces)))]
    across = (axis + 1) % 3

    def loss(v: Any) -> Any:
        total = 0.0
        for k in used:
            index = [slice(None)] * 3
            index[axis] = slice(*pieces[k])
            if other is not None:
                index[across] = slice(*other)
            piece = v[tuple(index)]
            total = total + ((piece * float(k + 1)) ** 2).sum()
        return total

    compiled = fg.compile(fg.grad(loss))
    np.testing.assert_array_equal(compiled(x).numpy(), fg.grad(loss)(x).numpy())


def test_a_scatter_never_writes_into_the_values_it_reads() -> None:
    """``scatter`` takes its operand's buffer (``Primitive.updates``) only: values that are
    views of that buffer are read before anything is written, as eager evaluation reads them."""
    def f(v: Any) -> Any:
        y = v * 2.0
        return y.at[0:3].add(y[1:4]).at[2:5].set(y[0:3] + 1.0)

    x = fg.asarray(np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(fg.compile(f)(x).numpy(), f(x).numpy())
