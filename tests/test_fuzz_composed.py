"""Random programs through composed features: ``compile`` x control flow x custom rules x
``grad``/``jvp``/``vmap``, each against eager evaluation (and JAX, when installed), with the
inputs and the arrays the program closes over checked unchanged.

A program is a list of steps over a growing list of values (all float64 arrays of shape
``(N,)``): elementwise arithmetic, views, reductions, and every call-like construct
(``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``checkpoint``,
``custom_vjp``, ``custom_jvp``, a nested ``compile``), whose functions are drawn from a
menu that includes returning their operand unchanged, returning an array they close over,
zero-trip loops and carries passed through: the cases where a call returns memory it did
not make. Each step is written once over a namespace (``fg``'s, or a JAX shim with the same
names), so the same program runs in both.

Every call-like result that aliases an input is what the memory planner must never write
into; the write guard (``fg.config.write_guard``, on here) raises on any such write.
"""

from __future__ import annotations

import types
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import funcgrad as fg
from funcgrad.primitives.elementwise import BINARY_TABLE, UNARY_TABLE

from .backends import BACKENDS, assert_as_eager, compile_backend, native

N = 3

# ---- the namespaces ---------------------------------------------------------------------------


def _custom_rules(custom_vjp: Any, custom_jvp: Any, xp: Any, sigmoid: Any) -> dict[str, Any]:
    """The custom-rule functions the programs call, written once for either library."""
    ident_vjp = custom_vjp(lambda v: v)
    ident_vjp.defvjp(lambda v: (v, None), lambda _, g: (g,))
    square_vjp = custom_vjp(lambda v: v * v)
    square_vjp.defvjp(lambda v: (v * v, v), lambda v, g: (2.0 * v * g,))
    ident_jvp = custom_jvp(lambda v: v)
    ident_jvp.defjvp(lambda p, t: (ident_jvp(p[0]), t[0]))
    softplus = custom_jvp(lambda v: xp.log1p(xp.exp(v)))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * sigmoid(p[0])))
    return dict(ident_vjp=ident_vjp, square_vjp=square_vjp, ident_jvp=ident_jvp, softplus=softplus)


def _fg_namespace() -> Any:
    return types.SimpleNamespace(
        name="fg", xp=fg, asarray=fg.asarray, cond=fg.cond, switch=fg.switch, while_loop=fg.while_loop,
        fori_loop=fg.fori_loop, scan=fg.scan, checkpoint=fg.checkpoint, compile=fg.compile, stack=fg.stack,
        argmax=fg.argmax, clip=fg.clip, int32=fg.int32,
        **_custom_rules(fg.custom_vjp, fg.custom_jvp, fg, fg.sigmoid))


def _jax_namespace() -> Any:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    return types.SimpleNamespace(
        name="jax", xp=jnp, asarray=jnp.asarray, cond=jax.lax.cond, switch=jax.lax.switch,
        while_loop=jax.lax.while_loop, fori_loop=jax.lax.fori_loop, scan=jax.lax.scan, checkpoint=jax.checkpoint,
        compile=jax.jit, stack=jnp.stack, argmax=jnp.argmax, clip=jnp.clip, int32=jnp.int32,
        **_custom_rules(jax.custom_vjp, jax.custom_jvp, jnp, jax.nn.sigmoid))


# ---- the menu of functions a call-like step applies to its operand ---------------------------
# each: (ns, closed-over array) -> a function of one array; index 0 returns its operand unchanged

def _menu(ns: Any, z: Any) -> list[Any]:
    xp = ns.xp
    return [
        lambda v: v,                           # the operand itself
        lambda v: -v,
        lambda v: xp.tanh(v) * 2.0,
        lambda v: z,                           # an array it closes over, unchanged
        lambda v: v * z + 1.0,
        lambda v: xp.maximum(v, 0.0),
    ]


UNARY = ["exp_tanh", "sin", "neg", "abs", "sqrt", "square", "log1p_sq", "relu", "flip", "sum_bcast", "slice_cat"]
BINARY = ["add", "sub", "mul", "maximum", "where"]
# every float elementwise primitive of the registry, by its fg.* function (compiled against eager only:
# outside their domains they give NaN both ways; NaN's sign bit is unspecified, see _binary)
REGISTRY_UNARY = [n for n in UNARY_TABLE if hasattr(fg, n) and "f" in UNARY_TABLE[n][1]]
REGISTRY_BINARY = [n for n in BINARY_TABLE if hasattr(fg, n) and "f" in BINARY_TABLE[n][1]]
CALLS = ["cond", "switch", "while", "fori", "scan_pass", "scan_acc", "checkpoint", "ident_vjp", "square_vjp",
         "ident_jvp", "softplus", "nested"]


def _unary(ns: Any, op: str, a: Any) -> Any:
    xp = ns.xp
    if op in REGISTRY_UNARY and op not in UNARY:
        return getattr(xp, op)(a)
    return {
        "exp_tanh": lambda: xp.exp(xp.tanh(a)), "sin": lambda: xp.sin(a), "neg": lambda: -a,
        # (abs's derivative at its kink is a convention: 0 in PyTorch and funcgrad, 1 in JAX; the
        # kink sits at 1/pi, off the values hypothesis favours, so the oracles agree)
        "abs": lambda: xp.abs(a - 0.3183098861837907) + 0.5, "sqrt": lambda: xp.sqrt(a * a + 1.0), "square": lambda: a * a,
        "log1p_sq": lambda: xp.log1p(a * a), "relu": lambda: xp.maximum(a, 0.0), "flip": lambda: xp.flip(a, 0),
        "sum_bcast": lambda: a - xp.sum(a) / N,
        "slice_cat": lambda: xp.concatenate([a[1:], a[:1] * 2.0]),
    }[op]()


def _binary(ns: Any, op: str, a: Any, b: Any) -> Any:
    xp = ns.xp
    if op in REGISTRY_BINARY and op not in BINARY:
        if op == "copysign":  # the sign of a NaN is unspecified (IEEE 754, 6.3): NumPy's arcsin(2) is -NaN
            b = xp.where(xp.isnan(b), 1.0, b)  # on x86, the C library's +NaN, so copysign reads it from numbers
        return getattr(xp, op)(a, b)
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "maximum": lambda: xp.maximum(a, b),
            "where": lambda: xp.where(a > b, a, b * 0.5)}[op]()


def _call(ns: Any, op: str, a: Any, b: Any, z: Any, k: int, m: int) -> Any:
    """A call-like step: ``k`` and ``m`` pick functions from the menu, trip counts and branches."""
    xp, menu = ns.xp, _menu(ns, z)
    f, g = menu[k % len(menu)], menu[m % len(menu)]
    if op == "cond":
        return ns.cond(xp.sum(b) > 0.0, f, g, a)
    if op == "switch":
        index = ns.clip(ns.argmax(b), 0, 2).astype(ns.int32)
        return ns.switch(index, [f, g, menu[(k + m) % len(menu)]], a)
    if op == "while":  # k % 3 trips (0: the carry passes through untouched)
        trips = k % 3
        _, out = ns.while_loop(lambda c: c[0] < trips, lambda c: (c[0] + 1, xp.tanh(c[1]) + b), (0, a))
        return out
    if op == "fori":  # k % 3 trips; the index promotes as a Python int
        return ns.fori_loop(0, k % 3, lambda i, v: v * (1.0 + 0.1 * i) + xp.sin(b) * i, a)
    if op == "scan_pass":  # the carry passed through; ys from the xs
        carry, ys = ns.scan(lambda c, x: (c, x * 2.0), a, ns.stack([b, b * 0.5]))
        return carry + ys[1] if m % 2 else carry
    if op == "scan_acc":
        carry, ys = ns.scan(lambda c, x: (f(c) + x, c), a, ns.stack([b, -b, b * b]))
        return carry if m % 2 else ys[0]
    if op == "checkpoint":
        return ns.checkpoint(f)(a)
    if op in ("ident_vjp", "square_vjp", "ident_jvp", "softplus"):
        return getattr(ns, op)(a)
    if op == "nested":
        return ns.compile(f)(a)
    raise AssertionError(op)


# ---- programs ---------------------------------------------------------------------------------

@st.composite
def programs(draw: Any, calls: list[str] = CALLS, registry: bool = False) -> tuple[list[Any], int]:
    """(steps, number of inputs); a step is (kind, op, operand indices, k, m). ``registry``:
    elementwise steps drawn from every float elementwise primitive too."""
    n_in = draw(st.integers(1, 2))
    steps = []
    unary = UNARY + REGISTRY_UNARY if registry else UNARY
    binary = BINARY + REGISTRY_BINARY if registry else BINARY
    for i in range(draw(st.integers(3, 12))):
        n = n_in + i
        kind = draw(st.sampled_from(["unary", "binary", "call", "call"]))
        op = draw(st.sampled_from({"unary": unary, "binary": binary, "call": calls}[kind]))
        steps.append((kind, op, draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)),
                      draw(st.integers(0, 11)), draw(st.integers(0, 11))))
    return steps, n_in


def build(ns: Any, steps: list[Any], n_in: int, z: Any) -> Any:
    """The program as a function of its inputs (returning its last two values: often an input)."""

    def f(*xs: Any) -> Any:
        values = list(xs)
        for kind, op, i, j, k, m in steps:
            a, b = values[i], values[j]
            if kind == "unary":
                values.append(_unary(ns, op, a))
            elif kind == "binary":
                values.append(_binary(ns, op, a, b))
            else:
                values.append(_call(ns, op, a, b, z, k, m))
        return values[-1], values[-2]

    return f


def _same(got: Any, want: Any, what: str, ulps: int = 1, scale: float = 0.0) -> None:
    """Equal to within ``ulps`` units in the last place (NaN where NaN); under native loops,
    whose transcendental functions are the C library's, within the relative tolerance the
    comparison with JAX takes (``backends.py``). ``scale``: the size of the terms a value is
    summed from, where the two sides may add them in another order (a gradient's
    contributions: 0.0625 + 0.5 - 0.5 is not 0.0625 + (0.5 - 0.5) to 1 ulp of 0.0625)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    both_nan = np.isnan(got) & np.isnan(want)
    bound = np.maximum(np.maximum(abs(got), abs(want)), scale)
    tolerance = np.maximum(1e-10 * bound, 1e-12) if native() else ulps * np.spacing(bound)
    close = (got == want) | both_nan | (np.abs(got - want) <= tolerance)
    assert close.all(), f"{what}: {got} != {want}"


def _arrays(draw: Any, n: int) -> list[np.ndarray]:
    # (no subnormals: XLA flushes them to zero, so JAX and NumPy would take different branches on them)
    return [np.array(draw(st.lists(st.floats(-2, 2, allow_subnormal=False), min_size=N, max_size=N))) for _ in range(n)]


@st.composite
def cases(draw: Any, calls: list[str] = CALLS, registry: bool = False) -> tuple[list[Any], int, list[np.ndarray],
                                                                                 np.ndarray]:
    steps, n_in = draw(programs(calls, registry))
    return steps, n_in, _arrays(draw, n_in), _arrays(draw, 1)[0]


def _unchanged(arrays: list[Any], saved: list[np.ndarray], what: str) -> None:
    for a, s in zip(arrays, saved):
        assert a.numpy().tobytes() == s.tobytes(), f"{what} changed: {s} -> {a.numpy()}"


@pytest.fixture(autouse=True)
def _guarded():
    before, fg.config.write_guard = fg.config.write_guard, True
    yield
    fg.config.write_guard = before


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60)
@given(case=cases(registry=True))
def test_compiled_equals_eager_and_leaves_its_inputs(case: Any, backend: str) -> None:
    with compile_backend(backend):
        _test_compiled_equals_eager_and_leaves_its_inputs(case)


def _test_compiled_equals_eager_and_leaves_its_inputs(case: Any) -> None:
    steps, n_in, raw, raw_z = case
    ns = _fg_namespace()
    xs, z = [fg.asarray(r) for r in raw], fg.asarray(raw_z)
    f = build(ns, steps, n_in, z)
    want = f(*xs)
    compiled = fg.compile(f)
    for call in range(3):
        got = compiled(*xs)
        for g, w in zip(got, want):
            _same(g.numpy(), w.numpy(), f"compiled call {call}")
        _unchanged(xs, raw, "an input")
        _unchanged([z], [raw_z], "a closed-over array")


NO_REVERSE = [c for c in CALLS if c != "while"]  # while_loop has no reverse mode (as in JAX)
NO_FORWARD = [c for c in CALLS if c not in ("ident_vjp", "square_vjp")]  # custom_vjp has no forward mode


def _loss(f: Any) -> Any:
    def loss(*xs: Any) -> Any:
        a, b = f(*xs)
        return (a * a).sum() + (b * 0.5).sum()

    return loss


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40)
@given(case=cases(NO_REVERSE))
def test_gradients_compiled_equal_eager(case: Any, backend: str) -> None:
    with compile_backend(backend):
        _test_gradients_compiled_equal_eager(case)


def _test_gradients_compiled_equal_eager(case: Any) -> None:
    steps, n_in, raw, raw_z = case
    xs, z = [fg.asarray(r) for r in raw], fg.asarray(raw_z)
    grad = fg.grad(_loss(build(_fg_namespace(), steps, n_in, z)), argnums=tuple(range(n_in)))
    want = grad(*xs)
    compiled = fg.compile(grad)
    for _ in range(3):
        for g, w in zip(compiled(*xs), want):
            # (the compiled program folds and reorders a gradient's contributions: terms of
            # the inputs' size, in [-2, 2], may cancel in another order)
            _same(g.numpy(), w.numpy(), "compiled gradient", ulps=4, scale=2.0)
        _unchanged(xs, raw, "an input")
        _unchanged([z], [raw_z], "a closed-over array")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40)
@given(case=cases(NO_FORWARD))
def test_jvp_and_vmap_compiled_equal_eager(case: Any, backend: str) -> None:
    with compile_backend(backend):
        _test_jvp_and_vmap_compiled_equal_eager(case)


def _test_jvp_and_vmap_compiled_equal_eager(case: Any) -> None:
    steps, n_in, raw, raw_z = case
    xs, z = [fg.asarray(r) for r in raw], fg.asarray(raw_z)
    f = build(_fg_namespace(), steps, n_in, z)
    tangents = tuple(fg.ones_like(x) for x in xs)
    pushed = lambda *p: fg.jvp(f, p, tangents)  # noqa: E731
    want = pushed(*xs)
    got = fg.compile(pushed)(*xs)
    for g, w in zip(fg.tree.leaves(got), fg.tree.leaves(want)):
        _same(g.numpy(), w.numpy(), "compiled jvp", ulps=4)
    batch = [fg.stack([x, x * 0.5 - 1.0]) for x in xs]
    mapped = fg.vmap(f)(*batch)
    for row in range(2):
        one = f(*[b[row] for b in batch])
        for m, o in zip(mapped, one):
            _same(m[row].numpy(), o.numpy(), f"vmap row {row}", ulps=4)
    compiled_mapped = fg.compile(fg.vmap(f))(*batch)
    for g, w in zip(compiled_mapped, mapped):
        _same(g.numpy(), w.numpy(), "compiled vmap", ulps=4)
    _unchanged(xs, raw, "an input")
    _unchanged([z], [raw_z], "a closed-over array")


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])  # (x64 on for them all)
@given(case=cases(NO_REVERSE))
def test_values_and_gradients_equal_jax(case: Any, jax64: Any) -> None:
    steps, n_in, raw, raw_z = case
    jns = _jax_namespace()
    jf = build(jns, steps, n_in, jns.asarray(raw_z))
    f = build(_fg_namespace(), steps, n_in, fg.asarray(raw_z))
    xs = [fg.asarray(r) for r in raw]
    for g, w in zip(fg.compile(f)(*xs), jf(*raw)):
        # (XLA's transcendental functions are not NumPy's to the last bit, and a program's
        # cancellations amplify that: a relative and an absolute tolerance, not ulps)
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-9, atol=1e-12, err_msg="compiled against JAX")
    argnums = tuple(range(n_in))
    want = jax64.grad(_loss(jf), argnums=argnums)(*raw)
    for got in (fg.grad(_loss(f), argnums=argnums)(*xs), fg.compile(fg.grad(_loss(f), argnums=argnums))(*xs)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_the_fori_loop_index_promotes_as_a_python_int(dtype) -> None:
    """The traced index is weakly typed: ``0.1 * i`` is a Python float's arithmetic, so the
    compiled loop is the eager loop bit for bit, in the carry's dtype."""
    f = lambda v: fg.fori_loop(0, 3, lambda i, v: v * (1.0 + 0.1 * i), v)  # noqa: E731
    x = fg.asarray([0.3, 0.7], dtype=dtype)
    got = fg.compile(f)(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), f(x).numpy())


# ---- gradients of control flow against the unrolled loop --------------------------------------

PATTERNS = [tuple(1.0 if bit == "1" else -1.0 for bit in f"{n:04b}") for n in range(16)]


def _cond_in_scan(ns: Any, preds: Any, unrolled: bool) -> Any:

    def f(w: Any) -> Any:
        def step(c: Any, p: Any) -> Any:
            c = ns.cond(p > 0, lambda c: c * w, lambda c: c + w, c)
            return c, c.sum()

        if unrolled:  # the Python loop: each predicate known, so each branch runs as plain code
            total = 0.0
            c = w
            for p in preds:
                c = c * w if p > 0 else c + w
                total = total + c.sum()
            return c.sum() + total
        c, ys = ns.scan(step, w, ns.asarray(np.array(preds)))
        return c.sum() + ys.sum()

    return f


@pytest.mark.parametrize("preds", PATTERNS, ids=lambda p: "".join("+" if v > 0 else "-" for v in p))
def test_gradient_of_cond_in_scan_equals_the_unrolled_loop(preds: Any) -> None:
    ns, w = _fg_namespace(), fg.asarray([2.0, 3.0])
    want = fg.grad(_cond_in_scan(ns, preds, unrolled=True))(w).numpy()
    scanned = _cond_in_scan(ns, preds, unrolled=False)
    for got in (fg.grad(scanned)(w), fg.compile(fg.grad(scanned))(w), fg.vjp(scanned, w)[1](fg.asarray(1.0))[0],
                fg.jvp(scanned, (w,), (fg.asarray([1.0, 0.0]),))[1]):
        if got.shape == ():  # forward mode: one directional derivative
            np.testing.assert_allclose(got.numpy(), want[0], rtol=1e-12)
        else:
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    x = fg.asarray([2.0, 3.0], requires_grad=True)
    scanned(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("preds", PATTERNS[::3], ids=lambda p: "".join("+" if v > 0 else "-" for v in p))
def test_gradient_of_cond_in_scan_equals_jax(preds: Any, jax64: Any) -> None:
    want = jax64.grad(_cond_in_scan(_jax_namespace(), preds, unrolled=False))(np.array([2.0, 3.0]))
    got = fg.grad(_cond_in_scan(_fg_namespace(), preds, unrolled=False))(fg.asarray([2.0, 3.0]))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)


# ---- the cases the probe found, each by name ---------------------------------------------------

def _identity_cases() -> list[Any]:
    z = fg.zeros(3)
    inner = fg.compile(lambda v: v)
    ident = _fg_namespace().ident_vjp
    return [
        ("cond returns its operand", lambda a: fg.cond(a.sum() > 0, lambda v: v, lambda v: -v, a) + 1.0, None),
        ("cond of a temporary", lambda a: fg.exp(fg.cond(a.sum() > 0, lambda v: v, lambda v: -v, a * 3.0)) - a, None),
        ("switch identity", lambda a: fg.switch(fg.argmax(a), [lambda v: v, lambda v: -v, lambda v: v], a) + 1.0,
         None),
        ("zero-trip while", lambda a: fg.while_loop(lambda v: v.sum() < -10, lambda v: v * 2.0, a) + 1.0, None),
        ("scan carry passed through", lambda a: fg.scan(lambda c, x: (c, x), a, fg.arange(2.0))[0] + 1.0, None),
        ("checkpoint identity", lambda a: fg.checkpoint(lambda v: v)(a) + 1.0, None),
        ("custom_vjp identity", lambda a: ident(a) + 1.0, None),
        ("nested compile identity", lambda a: inner(a) + 1.0, None),
        ("a closed-over array from a branch", lambda a: fg.cond(a.sum() > 0, lambda v: z, lambda v: v, a) + 1.0, z),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, f, closed", _identity_cases(), ids=lambda c: c if isinstance(c, str) else "")
def test_a_call_that_returns_memory_it_did_not_make_is_never_written(name: str, f: Any, closed: Any,
                                                                     backend: str) -> None:
    x = fg.asarray([0.1, 0.2, 0.3])
    want = f(x).numpy()
    with compile_backend(backend):
        compiled = fg.compile(f)
        for _ in range(3):
            assert_as_eager(compiled(x).numpy(), want)
    assert x.tolist() == fg.asarray([0.1, 0.2, 0.3]).tolist()
    if closed is not None:
        assert closed.tolist() == [0.0, 0.0, 0.0]


def test_the_write_guard_names_the_program_and_the_equation(monkeypatch: Any) -> None:
    """With a call-like primitive wrongly declared as making fresh memory, the planner writes
    into the caller's array: the guard catches it, restores the array and names the write."""
    from funcgrad.transforms.control_flow import cond_p

    monkeypatch.setattr(cond_p, "aliases", fg.primitives.FRESH)
    monkeypatch.setattr(fg.config, "compile_backend", "numpy")  # (NumPy's ufuncs write into what out= names)
    x = fg.asarray([0.1, 0.2, 0.3])
    g = fg.compile(lambda a: fg.cond(a.sum() > 0, lambda v: v, lambda v: -v, a) + 1.0)
    with pytest.raises(fg.WriteGuardError, match=r"fg.compile\(<lambda>\) wrote into input 0 at `t\d+ = .*# add`"):
        g(x)
    assert x.tolist() == fg.asarray([0.1, 0.2, 0.3]).tolist()


def test_every_primitive_declares_what_its_outputs_may_alias() -> None:
    for prim in fg.primitives.registry():
        expected = "operand" if prim.view is not None else "any" if prim.impl is not None else None
        if expected is not None:
            assert prim.aliases == expected, prim.name
        else:
            assert prim.aliases in ("fresh", "any"), prim.name


def test_vmap_of_a_nested_compile_returning_a_constant_under_compile() -> None:
    """The fuzzer's find: vmap's batching rule of a compiled call traced the batched program
    while an outer fg.compile traced, and constant folding ran the broadcast of the constant
    output in that outer trace, leaving its tracer as a constant of the program."""
    z = fg.asarray([0.0, 0.0, 0.0])

    def f(a):
        c = fg.compile(lambda v: z)(fg.exp(a))
        return fg.exp(c) + a, c

    batch = fg.stack([fg.zeros(3), fg.ones(3)])
    want = fg.vmap(f)(batch)
    for got, w in zip(fg.compile(fg.vmap(f))(batch), want):
        np.testing.assert_array_equal(got.numpy(), w.numpy())
