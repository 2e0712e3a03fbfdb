"""Native loops (``fg.config.compile_backend = "c"``): every C expression against its
primitive's eager kernel, broadcasting and strided inputs, the disk cache, and the fallback
to NumPy when no compiler can be used."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.backends import cc
from funcgrad.primitives.core import ShapedArray

from .backends import blas, compile_backend

pytestmark = pytest.mark.skipif(not any(os.path.exists(os.path.join(p, c)) for p in os.environ["PATH"].split(":")
                                        for c in ("cc", "gcc", "clang")), reason="no C compiler")

# Results equal to NumPy's bit for bit: IEEE arithmetic, comparisons, selects, casts, and the
# functions the C library computes exactly. The rest are within ULPS of NumPy's.
EXACT = {"add", "sub", "mul", "div", "neg", "square", "abs", "floor", "ceil", "trunc", "maximum", "minimum", "relu",
         "reciprocal", "copysign", "sqrt", "rsqrt", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
         "logical_not", "select", "convert_element_type"}
ULPS = {"float32": 8, "float64": 4}  # (docs/compile.md, "Native loops": measured at most 5 and 3)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place (NaN where NaN counts 0)."""
    both_nan = np.isnan(a) & np.isnan(b)
    ints = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = (v.view(ints).astype(np.int64) for v in (a, b))
    ia = np.where(ia < 0, np.iinfo(ints).min - ia, ia)  # (the sign-magnitude order as integers)
    ib = np.where(ib < 0, np.iinfo(ints).min - ib, ib)
    return int(np.where(both_nan, 0, np.abs(ia - ib)).max(initial=0))


def _operands(prim: fg.Primitive, dtype: str) -> list[fg.Array]:
    """Inputs that reach the primitive's interesting values, of the kinds it takes."""
    rng = np.random.default_rng(0)
    low, high = (prim.domain.low, prim.domain.high) if prim.domain else (-3.0, 3.0)
    x = rng.uniform(low, high, 4099).astype(dtype)
    x[:6] = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf] if not prim.domain else x[:6]
    y = rng.uniform(low, high, 4099).astype(dtype)
    arity = 3 if "{2}" in prim.c_expr else 2 if "{1}" in prim.c_expr else 1
    probe = ShapedArray((2,), fg.float32, fg.device("cpu"))
    if arity == 3:  # select(condition, x, y)
        return [fg.asarray(x > 0), fg.asarray(x), fg.asarray(y)]
    if "{out}" in prim.c_expr:  # a cast
        return [fg.asarray(x)]
    try:
        prim.abstract_eval(*(probe,) * arity)
    except fg.errors.DTypeError:  # logical operators: bool operands
        return [fg.asarray(x > 0), fg.asarray(y > 0)][:arity]
    return [fg.asarray(x), fg.asarray(y)][:arity]


_NATIVE = sorted((p for p in fg.primitives.registry() if p.c_expr is not None), key=lambda p: p.name)


@pytest.mark.parametrize("prim", _NATIVE, ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_c_expression_computes_its_primitive(prim: fg.Primitive, dtype: str) -> None:
    """Each primitive's C expression in a native loop, against its eager kernel: bit for bit
    where EXACT says, else within ULPS (with a literal operand too)."""
    args = _operands(prim, dtype)
    params = {"new_dtype": fg.float64 if dtype == "float32" else fg.float32} if "{out}" in prim.c_expr else {}

    def f(*a: fg.Array) -> fg.Array:
        return fg.bind(prim, *a, **params)

    with compile_backend("c"):
        compiled = fg.compile(f)
        assert f"native loop: {prim.name}" in compiled.lower(*args).source
        got, want = compiled(*args).numpy(), f(*args).numpy()
    assert got.dtype == want.dtype
    if prim.name in EXACT or got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        assert _ulps(got, want) <= ULPS[str(got.dtype)], prim.name


def test_literals_round_as_numpy_rounds_weak_scalars() -> None:
    x = fg.asarray(np.linspace(-3, 3, 1001, dtype=np.float32))
    f = lambda v: (v * 0.1 + 1e-3) / 3.3 - 1e30 * (v > 1e-45)  # noqa: E731
    with compile_backend("c"):
        np.testing.assert_array_equal(fg.compile(f)(x).numpy(), f(x).numpy())


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([((5, 7), (7,)), ((5, 7), (5, 1)), ((3, 1, 4), (1, 6, 1)), ((2, 3, 4), ()),
                        ((1, 9), (9, 1)), ((4, 5, 6), (4, 5, 6))]),
       st.booleans(), st.integers(0, 2**31))
def test_broadcast_and_strided_operands_give_eagers_values(shapes, transpose, seed) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    x, y = fg.asarray(a), fg.asarray(b)
    if transpose and x.ndim == 2:  # a strided (transposed) operand
        x = fg.asarray(a.T.copy()).T

    def f(u, v):
        w = u * v - fg.maximum(u, 0.0)
        return fg.where(w > 0.25, w / (1.0 + v * v), -w), w * 2.0

    with compile_backend("c"):
        compiled = fg.compile(f)
        assert "native loop" in compiled.lower(x, y).source
        for got, want in zip(compiled(x, y), f(x, y)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


_SUM_SHAPES = [(3, 7), (5, 100), (4, 129), (2, 700), (64, 10), (3, 40, 30), (1, 5, 1, 9), (1000,)]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (eager's inf - inf)
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_SUM_SHAPES), st.sampled_from(["float32", "float64"]), st.booleans(), st.booleans(),
       st.integers(0, 2**31), st.data())
def test_a_sum_ends_a_native_loop_with_numpys_bits(shape, dtype, keepdims, special, seed, data) -> None:
    """A sum over leading axes (row after row) or trailing axes (each row pairwise, as
    NumPy's pairwise_sum) of a native loop's value equals the eager sum bit for bit, at any
    row length (below 8, up to 128, beyond), with broadcast operands, signed zeros, NaN and
    infinities, and with the value itself also returned. A max or a min ends a loop the same
    way, with NumPy's values (a tie of +0 and -0 may go either way)."""
    fold = data.draw(st.sampled_from(["sum", "max", "min"]))
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dtype)
    if special:
        a.reshape(-1)[rng.integers(0, a.size, 3)] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan], 3)
    b = rng.standard_normal(shape[-1:]).astype(dtype)
    rank = len(shape)
    k = data.draw(st.integers(1, rank))
    axes = tuple(range(k)) if data.draw(st.booleans()) else tuple(range(rank - k, rank))
    also_value = data.draw(st.booleans())

    def f(u, v):
        w = u * v - fg.maximum(u, 0.0) * 0.5
        total = getattr(w, fold)(axes, keepdims=keepdims)
        return (total, w) if also_value else total

    x, y = fg.asarray(a), fg.asarray(b)
    with compile_backend("c"):
        compiled = fg.compile(f)
        assert f"reduce_{fold}" in compiled.lower(x, y).source.split("native loop:")[1].splitlines()[0]
        for got, want in zip(fg.tree.leaves(compiled(x, y)), fg.tree.leaves(f(x, y))):
            g, w = got.numpy(), want.numpy()  # (bit for bit, signed zeros too; a NaN's sign is the CPU's choice)
            assert g.shape == w.shape and np.array_equal(np.isnan(g), np.isnan(w))
            if fold != "sum":  # (a max's or min's tie of +0 and -0 goes either way)
                g, w = np.where(g == 0, 0, g), np.where(w == 0, 0, w)
            assert g[~np.isnan(g)].tobytes() == w[~np.isnan(w)].tobytes()


def test_a_later_sum_moves_up_to_end_the_loop_and_splits_over_threads() -> None:
    """A bias gradient's sum written after a matmul still ends the native loop of its value;
    a sum over trailing axes runs its rows on several threads, one over leading axes on one."""
    rng = np.random.default_rng(1)
    x, w = fg.asarray(rng.standard_normal((2048, 300)).astype(np.float32)), fg.asarray(rng.standard_normal((300, 8)))

    def f(u, v):
        g = fg.where(u > 0, u * 3.0, 0.0)
        return g @ v.astype(fg.float32), g.sum(0), (g * g).sum(-1)

    with compile_backend("c"):
        compiled = fg.compile(f)
        source = compiled.lower(x, w).source
        assert source.count("native loop") == 2 and "mul select_n reduce_sum" in source.replace("select ", "select_n ")
        for got, want in zip(compiled(x, w), f(x, w)):
            assert got.numpy().tobytes() == want.numpy().tobytes()


def test_a_linears_bias_joins_the_native_loop_that_reads_it() -> None:
    """``linear(x, w, b)`` read by the next native loop (a GELU, a residual add) lowers as the
    product and an ``add`` of the bias inside that loop, with eager's bits, forward and
    backward; a linear whose result goes to another product keeps its own bias add."""
    rng = np.random.default_rng(5)
    x, r = (fg.asarray(rng.standard_normal((4, 16, 32)).astype(np.float32)) for _ in range(2))
    w1, w2 = (fg.asarray(rng.standard_normal((32, 32)).astype(np.float32)) for _ in range(2))
    b1, b2 = (fg.asarray(rng.standard_normal(32).astype(np.float32)) for _ in range(2))
    F = fg.nn.functional

    def f(x, r, w1, b1, w2, b2):
        h = F.gelu(F.linear(x, w1, b1))
        return (r + F.linear(F.linear(h, w2, b2), w1, b1)).sum()

    with compile_backend("c"):
        compiled = fg.compile(f)
        source = compiled.lower(x, r, w1, b1, w2, b2).source
        assert "native: add gelu" in source and "native: add add" in source
        assert source.count("# linear") == 3 and sum("# linear" in ln and ln.count(",") == 2
                                                     for ln in source.splitlines()) == 1  # (the inner one keeps b2)
        args = (x, r, w1, b1, w2, b2)
        assert compiled(*args).numpy().tobytes() == f(*args).numpy().tobytes()
        got, want = fg.grad(compiled, argnums=(0, 2, 3))(*args), fg.grad(f, argnums=(0, 2, 3))(*args)
        for g, e in zip(got, want):
            assert g.numpy().tobytes() == e.numpy().tobytes()


def test_a_native_loop_writes_its_result_where_a_dying_input_lay() -> None:
    """A loop's result goes into the memory of a temporary that dies in it (the product a
    ReLU reads, the cotangent its gradient reads): the C loop declares that pair without
    ``restrict``; the values are eager's, the caller's arrays unchanged, and a result
    returned by one call is not overwritten by the next."""
    rng = np.random.default_rng(6)
    x, w = (rng.standard_normal(s).astype(np.float32) for s in ((128, 64), (64, 256)))  # (not one native program)
    b = rng.standard_normal(256).astype(np.float32)
    args = tuple(fg.asarray(a) for a in (x, w, b))

    def f(x, w, b):
        return fg.maximum(x @ w + b, 0.0) * 2.0

    with compile_backend("c"), blas("numpy"):  # (eager products: NumPy's BLAS, as the suite's NumPy backend runs them)
        compiled = fg.compile(f)
        source = compiled.lower(*args).source
        first = compiled(*args)
        kept = first.numpy().copy()
        second = compiled(*args)
        grads = fg.grad(lambda *a: compiled(*a).sum(), argnums=(0, 1, 2))(*args)
        assert "if t" in source and ".flags.c_contiguous else EMPTY" in source
        assert "    float *y0 = (float *)p[2];" in source and "    const float *a0 = (const float *)p[0];" in source
        assert first.numpy().tobytes() == kept.tobytes() == second.numpy().tobytes() == f(*args).numpy().tobytes()
        for got, want in zip(grads, fg.grad(lambda *a: f(*a).sum(), argnums=(0, 1, 2))(*args)):
            assert got.numpy().tobytes() == want.numpy().tobytes()
    assert all(a.numpy().tobytes() == raw.tobytes() for a, raw in zip(args, (x, w, b)))


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(["add b", "mul 2", "relu", "sub h", "mul h", "keep"]), min_size=1, max_size=6),
       rows=st.sampled_from([64, 129, 300]), transpose=st.booleans(), seed=st.integers(0, 2**16))
def test_chains_over_dying_temporaries_give_eagers_bits(ops, rows, transpose, seed) -> None:
    """Chains of exact operations over products that die in them (some values kept, read
    again or returned, some products laid out transposed): the compiled values are eager's
    bits, the arrays a call returned keep their values through the next call, and the
    gradients are eager's (up to the products' roundings: a compiled gradient may take a
    product in another layout)."""
    rng = np.random.default_rng(seed)
    x, w = (fg.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((rows, 96), (96, 192)))
    b = fg.asarray(rng.standard_normal(192).astype(np.float32))

    def f(x, w, b):
        h = (w.T @ x.T).T if transpose else x @ w
        out, kept = h, []
        for op in ops:
            out = {"add b": lambda v: v + b, "mul 2": lambda v: v * 2.0, "relu": lambda v: fg.maximum(v, 0.0),
                   "sub h": lambda v: v - h, "mul h": lambda v: v * h, "keep": lambda v: v}[op](out)
            if op == "keep":
                kept.append(out * 1.5)
            out = out @ w.T @ w if op == "keep" else out  # (a product: the chain goes on over a new temporary)
        return out, *kept

    with compile_backend("c"), blas("numpy"):  # (eager products: NumPy's BLAS, as the suite's NumPy backend runs them)
        compiled = fg.compile(f)
        first = [a.numpy().copy() for a in compiled(x, w, b)]
        again = compiled(x, w, b)
        grads = fg.grad(lambda *a: compiled(*a)[0].sum(), argnums=(1, 2))(x, w, b)
        want = [a.numpy() for a in f(x, w, b)]
    assert [a.tobytes() for a in first] == [a.numpy().tobytes() for a in again] == [a.tobytes() for a in want]
    for got, expected in zip(grads, fg.grad(lambda *a: f(*a)[0].sum(), argnums=(1, 2))(x, w, b)):
        scale = np.abs(expected.numpy()).max()  # (products in other layouts: roundings of the largest terms)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_gradients_lie_as_a_fused_projections_heads(monkeypatch, dtype) -> None:
    """q, k and v read from one projection's result get gradients in one new memory lying as
    they do, so joining them back is a view, with the bits of gradients laid out apart;
    q, k and v that overlap (one array three times) get memory of their own each."""
    from funcgrad.backends.base import joined_view, laid_out_together
    from funcgrad.primitives import attention

    monkeypatch.setattr(fg.config, "compile_backend", "c")  # (the native kernels)
    rng = np.random.default_rng(3)
    qkv = rng.standard_normal((2, 8, 3 * 32)).astype(dtype)
    q, k, v = (qkv[:, :, i * 32:(i + 1) * 32].reshape(2, 8, 2, 16).transpose(0, 2, 1, 3) for i in range(3))
    _, p = attention._attention(np, q, k, v, scale=0.25, causal=True)
    go = rng.standard_normal(q.shape).astype(dtype)
    together = attention._attention_grad(np, q, k, v, p, go, scale=0.25, causal=True)
    joined = joined_view([g.transpose(0, 2, 1, 3).reshape(2, 8, 32) for g in together], 2)
    assert joined is not None and joined.shape == qkv.shape
    monkeypatch.setattr(attention, "laid_out_together", lambda *a: None)
    apart = attention._attention_grad(np, q, k, v, p, go, scale=0.25, causal=True)
    assert [g.tobytes() for g in together] == [g.tobytes() for g in apart]
    monkeypatch.setattr(attention, "laid_out_together", laid_out_together)
    own = attention._attention_grad(np, q, q, q, p, go, scale=0.25, causal=True)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(own) for b in own[i + 1:])
    want = attention._grad_composite(np, q, q, q, p, go, 0.25, True)
    for g, w in zip(own, want):
        np.testing.assert_allclose(g, w, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_a_native_result_never_takes_memory_laid_out_otherwise() -> None:
    """A temporary laid out otherwise than in C order (attention's output takes its query's
    layout; NumPy's ufunc of a transposed operand keeps it) is not written by a C loop,
    whether the loop comes after it died or reads it as it dies: the loop's result gets new
    memory."""
    F = fg.nn.functional
    rng = np.random.default_rng(7)

    def after_attention(qkv, z):
        q, k, v = (a.reshape(2, 8, 2, 16).transpose(1, 2) for a in qkv.split(32, 2))
        s = (F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2.0).sum()  # (dies here, read where it lies)
        return s, fg.exp(z) + 1.0

    def reading_a_transposed_result(t, z):
        e = fg.exp(t.T)  # (alone, between values of other shapes: a small NumPy ufunc; z: not one native program)
        return fg.sin(z) * 2.0, e * 2.0 + 1.0

    for f, args in [(after_attention, (rng.standard_normal((2, 8, 96)), rng.standard_normal((2, 2, 8, 16)))),
                    (reading_a_transposed_result, (rng.standard_normal((3, 4)), rng.standard_normal(20000)))]:
        args = tuple(fg.asarray(a.astype(np.float32)) for a in args)
        with compile_backend("c"):
            compiled = fg.compile(f)
            source = compiled.lower(*args).source
            got = compiled(*args)
        assert ".flags.c_contiguous else EMPTY" in source
        for g, e in zip(got, f(*args)):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 3), st.integers(40, 700), st.sampled_from(["float32", "float64"]), st.booleans(),
       st.integers(0, 2**31))
def test_an_expensive_loop_splits_its_leading_sum_over_its_columns(lead, columns, dtype, keepdims, seed) -> None:
    """A run of transcendental functions large enough for two threads, ended by a sum over
    its leading axes, splits over the sum's columns (each thread all the rows of its
    columns, in order): the sum has NumPy's bits of the loop's own values, whatever the
    column count, and the values are eager's."""
    rng = np.random.default_rng(seed)
    shape = (*(2,) * (lead - 1), 2 ** 18 // columns // 2 ** (lead - 1) + 1, columns)
    x, g = (fg.asarray(rng.standard_normal(shape).astype(dtype)) for _ in range(2))
    axes = tuple(range(lead))

    def f(u, v):
        h = fg.tanh(u) * v
        return h.sum(axes, keepdims=keepdims), h * 2.0

    kept = fg.config.compile_threads
    fg.config.compile_threads = 2
    try:
        with compile_backend("c"):
            compiled = fg.compile(f)
            source = compiled.lower(x, g).source
            total, doubled = compiled(x, g)
    finally:
        fg.config.compile_threads = kept
    assert "native loop: tanh mul reduce_sum, on 2 threads" in source
    h = doubled.numpy() / 2.0  # (exact: the loop's own values)
    assert total.numpy().tobytes() == np.add.reduce(h, axis=axes, keepdims=keepdims).tobytes()
    for compiled_value, eager_value in zip((total, doubled), f(x, g)):  # (tanh within 2 ulp of NumPy's)
        np.testing.assert_allclose(compiled_value.numpy(), eager_value.numpy(), rtol=2e-5, atol=1e-3)


def test_the_lowered_source_shows_the_c_loop() -> None:
    with compile_backend("c"):
        source = fg.compile(lambda v: fg.exp(v) * 2.0 + v).lower(fg.ones((64, 3))).source
    assert "#pragma omp simd" in source and "float v0 = fg_exp(x0);" in source


def test_native_loops_raise_no_floating_point_errors() -> None:
    x = fg.asarray([0.0, 1.0])
    with compile_backend("c"):
        f = fg.compile(lambda v: fg.log(v) * 2.0)
        with np.errstate(all="raise"):
            assert f(x).numpy()[0] == -np.inf


def test_the_backend_is_checked() -> None:
    with pytest.raises(ValueError, match="compile_backend: 'fortran' is not a backend"):
        fg.config.compile_backend = "fortran"


def test_no_compiler_falls_back_to_numpy_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from funcgrad.transforms.compiler import native

    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(native, "_WARNED", set())
    monkeypatch.setattr(cc, "_LOADED", {})
    monkeypatch.setattr(cc, "_FAILED", {})
    cc.toolchain.cache_clear()
    try:
        x = fg.asarray([1.0, 2.0])
        with compile_backend("c"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = fg.compile(lambda v: fg.exp(v) + 1.0)
            np.testing.assert_array_equal(f(x).numpy(), (fg.exp(x) + 1.0).numpy())
            g = fg.compile(lambda v: fg.sin(v) * 3.0)
            np.testing.assert_array_equal(g(x).numpy(), (fg.sin(x) * 3.0).numpy())
            assert "native loop" not in f.lower(x).source
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1 and "no C compiler found" in messages[0] and "NumPy calls instead" in messages[0]
    finally:
        cc.toolchain.cache_clear()


_PRODUCTS = """
import hashlib, os, sys, threading, numpy as np, funcgrad as fg
from funcgrad.backends import cc
fg.config.compile_backend = "c"
cc.caller()
module = cc.extension(cc.CALLER)  # (loaded by caller(), which shares the threads)
rng = np.random.default_rng(0)
digest = hashlib.sha256()
shapes = [((512, 512), (512, 512)), ((1024, 128), (128, 384)), ((128, 1024), (1024, 384)), ((3, 200, 300), (300, 250))]
for dtype in (np.float32, np.float64, np.complex64):
    for a, b in shapes:
        x, y = rng.standard_normal(a).astype(dtype), rng.standard_normal(b).astype(dtype)
        for p in (x @ y, (y.T @ x.swapaxes(-1, -2)) if x.ndim == 2 else x @ y):
            digest.update(p.tobytes())
calls = module.blas_calls()
f = fg.compile(lambda v: fg.tanh(v @ v) * 2.0 + 1.0)
v = fg.asarray(rng.standard_normal((512, 512)).astype(np.float32))
want = np.tanh(v.numpy() @ v.numpy()) * 2.0 + 1.0
errors = []
def work():  # (products and native loops from several Python threads at once)
    try:
        for _ in range(20):
            np.testing.assert_allclose(f(v).numpy(), want, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(v.numpy() @ v.numpy(), v.numpy() @ v.numpy())
    except Exception as exc:
        errors.append(exc)
threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
pid = os.fork()
if pid == 0:  # (a forked child: its own threads, the same products)
    os._exit(0 if np.array_equal(v.numpy() @ v.numpy(), v.numpy() @ v.numpy()) else 1)
_, status = os.waitpid(pid, 0)
print(digest.hexdigest(), calls, bool(errors), status)
"""


def test_numpys_products_run_on_the_extensions_threads_with_their_own_bits() -> None:
    """With the extension loaded, NumPy's OpenBLAS runs its parallel work on the extension's
    threads (one pool, ``cc.share_blas_threads``): the products' bits are those of its own
    threads, and products and native loops from several Python threads, and in a forked
    child, all finish with the right values."""
    if not any(hasattr(lib, name) for lib in cc._blas_libraries() for name in cc._BLAS_CALLBACK_SETTERS):
        pytest.skip("NumPy's BLAS takes no threads callback (OpenBLAS 0.3.28 or later does)")
    runs = {}
    for share in ("0", "1"):  # (NumPy's OpenBLAS for funcgrad's products too: the threads shared are its)
        env = dict(os.environ, FUNCGRAD_SHARE_BLAS_THREADS=share, FUNCGRAD_BLAS="numpy")
        done = subprocess.run([sys.executable, "-c", _PRODUCTS], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs[share] = done.stdout.split()
    assert runs["0"][0] == runs["1"][0]  # (the same bits)
    assert runs["0"][1] == "0" and int(runs["1"][1]) > 0  # (the products ran on the extension's threads)
    assert runs["0"][2:] == runs["1"][2:] == ["False", "0"]


_BUILD = """
import sys, numpy as np, funcgrad as fg
fg.config.compile_backend = "c"
x = fg.asarray(np.arange(6, dtype=np.float32))
print(fg.compile(lambda v: fg.tanh(v * 0.5) + v * {k})(x).numpy().sum())
"""


def test_processes_share_the_disk_cache(tmp_path) -> None:
    """Two processes building the same kernels at once both succeed and agree; a third finds
    the built module in the cache and compiles nothing."""
    env = dict(os.environ, FUNCGRAD_CACHE_DIR=str(tmp_path))
    code = _BUILD.format(k=3.0)
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outs = [r.communicate(timeout=120)[0] for r in runs]
    assert all(r.returncode == 0 for r in runs) and outs[0] == outs[1]
    built = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "native").iterdir()}
    assert sorted(name.split("_")[1] for name in built) == ["ext", "kernel"]  # no leftovers of either build
    assert all(name.startswith("funcgrad_") and name.endswith(".so") for name in built)
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout == outs[0]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "native").iterdir()} == built  # loaded, not built


def test_one_kernel_serves_every_shape_of_a_pattern() -> None:
    """Kernels take their sizes at each call: a bias add over other shapes builds nothing new."""
    from funcgrad.backends import cc

    f = lambda v, b: fg.tanh(v + b)  # noqa: E731
    with compile_backend("c"):
        fg.compile(f)(fg.ones((8, 16)), fg.ones(16))
        before = len(cc._LOADED)
        for shape in ((3, 5), (128, 512), (2, 7)):
            out = fg.compile(f)(fg.ones(shape), fg.ones(shape[1]))
            np.testing.assert_array_equal(out.numpy(), np.tanh(np.full(shape, 2.0, np.float32)))
    assert len(cc._LOADED) == before


@pytest.mark.parametrize(("g_shape", "params"), [
    ((4, 3, 26, 26, 3, 3), dict(shape=(4, 3, 28, 28), axes=(2, 3), sizes=(3, 3), steps=(1, 1), dilations=(1, 1))),
    ((2, 3, 4, 7, 2, 3), dict(shape=(2, 3, 9, 11), axes=(2, 3), sizes=(2, 3), steps=(2, 1), dilations=(1, 2))),
    ((2, 3, 3, 3), dict(shape=(2, 3, 10), axes=(2,), sizes=(3,), steps=(3,), dilations=(1,))),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_native_kernels_give_numpys_bits(g_shape, params, dtype) -> None:
    """Eager kernels with a native loop (a convolution's input gradient, ``windows_add``;
    float32 ``erf``) against their NumPy paths: windows_add bit for bit (the same additions
    in the same order), erf within 4 ulp of SciPy's (glibc's vector ``erff``: 1 ulp in its
    AVX2 version, 4 in its AVX-512 one)."""
    from funcgrad.primitives import shape as shape_module

    g = np.random.default_rng(0).standard_normal(g_shape).astype(dtype)
    with compile_backend("c"):
        native = shape_module._windows_add(np, g, **params)
        assert shape_module._native_windows_add(np, g, **params) is not None
    with compile_backend("numpy"):
        np.testing.assert_array_equal(native, shape_module._windows_add(np, g, **params))
    x = fg.asarray(np.linspace(-5, 5, 10001, dtype=np.float32))
    with compile_backend("c"):
        fast = fg.erf(x).numpy()
    with compile_backend("numpy"):
        assert _ulps(fast, fg.erf(x).numpy()) <= 4


def test_native_windows_add_reads_a_transposed_gradient_where_it_lies() -> None:
    from funcgrad.primitives import shape as shape_module

    g = np.random.default_rng(1).standard_normal((3, 6, 6, 4, 3, 3)).astype(np.float32).transpose(0, 3, 1, 2, 4, 5)
    params = dict(shape=(3, 4, 8, 8), axes=(2, 3), sizes=(3, 3), steps=(1, 1), dilations=(1, 1))
    with compile_backend("c"):
        native = shape_module._native_windows_add(np, g, **params)
    with compile_backend("numpy"):
        np.testing.assert_array_equal(native, shape_module._windows_add(np, g, **params))


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_layer_norm_gradient_of_a_nearly_constant_row_stays_exact(backend: str) -> None:
    """Both kernels take the mean in double: for a row of nearly equal float32 values (r in
    the hundreds) and a constant cotangent, the gradient is 0, where a float32 mean left 5e-4
    (a hypothesis draw found it, on each backend in turn)."""
    from funcgrad.primitives import normalization

    g, x = np.array([1.0, 1.0], np.float32), np.array([-0.7, -0.6875], np.float32)
    with compile_backend(backend):
        assert (normalization._native_layer_norm(np, (g, x), (0,), 1e-5, grad=True) is not None) == (backend == "c")
        got = normalization._layer_norm_grad(np, g, x, axes=(0,), eps=1e-5)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [0.0, 0.0], atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 9), m=st.sampled_from([1, 2, 7, 128, 1000, 4099]), offset=st.sampled_from([0.0, 1.0, -300.0]),
       spread=st.sampled_from([1.0, 1e-3, 1e-5]), seed=st.integers(0, 2**16))
def test_native_layer_norm_gradient_is_float64s_within_float32_rounding(rows: int, m: int, offset: float, spread: float,
                                                                       seed: int) -> None:
    """The native float32 backward row loop (elementwise work in float32 lanes around a
    double mean split in two, sums in double) against the same formula in float64 on the
    same float32 inputs: rows short and long, centred and far from 0, spread and nearly
    constant (r up to 1/sqrt(eps)). The error is a few float32 roundings of the result's
    scale, r |g|."""
    from funcgrad.primitives import normalization

    rng = np.random.default_rng(seed)
    x = (offset + spread * rng.standard_normal((rows, m))).astype(np.float32)
    g = rng.standard_normal((rows, m)).astype(np.float32)
    with compile_backend("c"):
        got = normalization._native_layer_norm(np, (g, x), (1,), 1e-5, grad=True)
    if got is None:
        pytest.skip("no C compiler")
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    c = x64 - x64.mean(1, keepdims=True)
    r = 1 / np.sqrt((c * c).mean(1, keepdims=True) + np.float64(np.float32(1e-5)))
    y = c * r
    want = r * (g64 - g64.mean(1, keepdims=True) - y * (g64 * y).mean(1, keepdims=True))
    scale = r * np.abs(g64).max(1, keepdims=True)
    assert np.all(np.abs(got - want) <= 2e-6 * scale + 1e-30)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 300) | st.sampled_from([4160, 9000]), m=st.sampled_from([1, 3, 16, 128, 1000]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_native_affine_layer_norm_gradients_are_float64s(rows: int, m: int, dtype: Any, seed: int) -> None:
    """The affine backward loop's three results against float64: x's (the Jacobian applied
    to g w) within a few roundings of r |g w|, and the weight's and bias's column sums (a
    block of rows at a time in the input's precision, the blocks added in float64: rows past
    64 share blocks, and past 4096 there are more blocks than 64) within a few roundings of
    their terms' magnitudes (y's before x - mean cancels: an x near its row's mean has a y
    of few correct digits in any order of summing); and the same values on one thread as
    on two."""
    from funcgrad.primitives import normalization

    assume(rows * m <= 300_000)
    rng = np.random.default_rng(seed)
    x, g = (rng.standard_normal((rows, m)).astype(dtype) for _ in range(2))
    w = rng.standard_normal(m).astype(dtype)
    results = []
    for threads in (1, 2):
        with compile_backend("c"):
            fg.config.compile_threads, before = threads, fg.config.compile_threads
            try:
                results.append(normalization._layer_norm_affine_grad(np, g, x, w, axes=(1,), eps=1e-5))
            finally:
                fg.config.compile_threads = before
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    x64, g64, w64 = (a.astype(np.float64) for a in (x, g, w))
    c = x64 - x64.mean(1, keepdims=True)
    r = 1 / np.sqrt((c * c).mean(1, keepdims=True) + np.float64(dtype(1e-5)))
    y, gw = c * r, g64 * w64
    dx = r * (gw - gw.mean(1, keepdims=True) - y * (gw * y).mean(1, keepdims=True))
    unit = 4e-6 if dtype == np.float32 else 1e-13
    got_dx, got_dw, got_db = results[0]
    assert got_dx.dtype == got_dw.dtype == got_db.dtype == dtype and got_dw.shape == got_db.shape == (m,)
    assert np.all(np.abs(got_dx - dx) <= unit * r * np.abs(gw).max(1, keepdims=True) + 1e-30)
    uncancelled = r * (np.abs(x64) + np.abs(x64.mean(1, keepdims=True)))  # (|y|'s bound before x - mean cancels)
    assert np.all(np.abs(got_dw - (g64 * y).sum(0)) <= unit * np.abs(g64 * uncancelled).sum(0) + 1e-30)
    assert np.all(np.abs(got_db - g64.sum(0)) <= unit * np.abs(g64).sum(0) + 1e-30)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 13), m=st.sampled_from([1, 5, 16, 37, 128]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_layer_norm_loops_give_each_row_the_bits_it_has_alone(rows: int, m: int, dtype: Any, seed: int) -> None:
    """The row loops take several rows at once (their sums in one loop) and the rest one at
    a time: every row of every kernel (forward with and without the affine operands, the
    Jacobian applied, the affine backward pass) has the bits it has as a one-row input."""
    from funcgrad.primitives import normalization

    rng = np.random.default_rng(seed)
    x, g = ((rng.standard_normal((rows, m)) * 2 + 1).astype(dtype) for _ in range(2))
    w, b = (rng.standard_normal(m).astype(dtype) for _ in range(2))
    kernels = {
        "forward": lambda x, g: normalization._native_layer_norm(np, (x,), (1,), 1e-5, grad=False),
        "affine forward": lambda x, g: normalization._native_layer_norm(np, (x, w, b), (1,), 1e-5, grad=False),
        "Jacobian applied": lambda x, g: normalization._native_layer_norm(np, (g, x), (1,), 1e-5, grad=True),
        "affine backward, x's": lambda x, g: normalization._layer_norm_affine_grad(np, g, x, w, axes=(1,),
                                                                                   eps=1e-5)[0],
    }
    with compile_backend("c"):
        for name, kernel in kernels.items():
            whole = kernel(x, g)
            if whole is None:
                pytest.skip("no C compiler")
            for i in range(rows):
                np.testing.assert_array_equal(whole[i:i + 1], kernel(x[i:i + 1], g[i:i + 1]), err_msg=f"{name}, row {i}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_native_gelu_and_layer_norm_agree_with_their_numpy_kernels(dtype) -> None:
    """GELU, layer normalization, softmax and their derivatives run as native loops in eager
    mode where a compiler is found: the same values as their NumPy kernels, within erf's and
    exp's ulps (GELU, softmax) and the rounding of a sum accumulated in double."""
    rng = np.random.default_rng(3)
    x = fg.asarray((rng.standard_normal((6, 5, 33)) * 3 + 1).astype(dtype))
    g = fg.asarray(rng.standard_normal((6, 5, 33)).astype(dtype))
    programs = {
        "gelu": lambda: fg.nn.functional.gelu(x),
        "gelu grad": lambda: fg.vjp(fg.nn.functional.gelu, x)[1](g)[0],
        "layer_norm": lambda: fg.nn.functional.layer_norm(x, (5, 33)),
        "layer_norm grad": lambda: fg.vjp(lambda v: fg.nn.functional.layer_norm(v, (33,)), x)[1](g)[0],
        "affine layer_norm": lambda: fg.nn.functional.layer_norm(x, (33,), x[0, 0], x[1, 1]),
        "affine layer_norm grads": lambda: fg.concatenate([a.reshape(-1) for a in fg.vjp(
            lambda v, w, b: fg.nn.functional.layer_norm(v, (33,), w, b), x, x[0, 0], x[1, 1])[1](g)]),
        "softmax": lambda: fg.nn.functional.softmax(x, dim=-1),
        "softmax grad": lambda: fg.vjp(lambda v: fg.nn.functional.softmax(v, dim=-1), x)[1](g)[0],
    }
    from funcgrad.primitives import normalization

    with compile_backend("c"):  # (the native loops are built, so the comparison is not of NumPy with itself)
        assert cc.unary("fg_gelu({0})", dtype) is not None
        assert normalization._native_layer_norm(np, (x.numpy(),), (2,), 1e-5, grad=False) is not None
        assert normalization._native_softmax(np, x.numpy()) is not None
    tolerance = 4e-6 if dtype == np.float32 else 1e-13
    for name, run in programs.items():
        with compile_backend("c"):
            native = run().numpy()
        with compile_backend("numpy"):
            reference = run().numpy()
        np.testing.assert_allclose(native, reference, rtol=tolerance, atol=tolerance, err_msg=name)


@pytest.mark.parametrize("pattern", ["scalar keys", "keys per element", "high words per element", "2-d", "a split",
                                     "0-d"])
def test_native_threefry_gives_the_numpy_rounds_bits(pattern: str) -> None:
    """Threefry runs as one native loop: the same words as the NumPy rounds for every
    broadcasting pattern of keys and counters (the key words one per draw under ``vmap``, the
    counters' high words 0-d), large draws and a key's split alike, and the draws
    ``fg.random`` makes from them."""
    from funcgrad.primitives import random as random_module

    rng = np.random.default_rng(7)
    shape = {"2-d": (3, 4000), "a split": (2,), "0-d": ()}.get(pattern, (9000,))

    def words(per_element: bool) -> np.ndarray:
        return rng.integers(0, 2**32, shape if per_element else (), dtype=np.uint64).astype(np.uint32)

    k1, k2 = words(pattern == "keys per element"), words(False)
    x1, x2 = words(True), words(pattern in ("high words per element", "2-d"))
    with compile_backend("c"):
        native = random_module._native_threefry((k1, k2, x1, x2))
        assert native is not None
    with np.errstate(over="ignore"):
        reference = random_module._rounds(np, k1, k2, x1, x2)
    for got, want in zip(native, reference):
        np.testing.assert_array_equal(got, want)
    key = fg.random.key(3)
    with compile_backend("c"):
        fast = fg.random.normal(key, (100, 100)).numpy()
    with compile_backend("numpy"):
        np.testing.assert_array_equal(fast, fg.random.normal(key, (100, 100)).numpy())


@pytest.mark.parametrize("y", [2, 3, 4, 5, 7, -1, -2, -3, 16, 17])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_integer_powers_are_the_kernels_products_in_one_loop(y, dtype) -> None:
    """``x ** y`` compiles to the products the eager kernel's repeated squaring makes (then
    1/... for y < 0): one native loop with its neighbours, the eager bits; ``x ** 3`` and
    ``x * (x * x)`` give the same loop."""
    x = fg.asarray(np.random.default_rng(y + 20).uniform(0.5, 1.5, 5000).astype(dtype))
    with compile_backend("c"):
        compiled = fg.compile(lambda v: v ** y + 1.0)
        source = compiled.lower(x).source
        assert ("integer_pow" in source) == (abs(y) > 16) and source.count("native loop") == 1
        assert compiled(x).numpy().tobytes() == (x ** y + 1.0).numpy().tobytes()
        if y == 3:
            by_hand = fg.compile(lambda v: v * (v * v) + 1.0).lower(x).source
            assert by_hand.split("native loop")[1] == source.split("native loop")[1]
        g = fg.compile(fg.grad(lambda v: (v ** y).sum()))(x)
        np.testing.assert_allclose(g.numpy(), y * x.numpy().astype(np.float64) ** (y - 1), rtol=1e-5)


_CUMSUM_C = """
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const double *x = (const double *)p[0];
    double *y = (double *)p[1];
    int64_t cols = n[1];
    for (int64_t i = lo; i < hi; i++) {
        double s = 0;
        for (int64_t j = 0; j < cols; j++) { s += x[i * cols + j]; y[i * cols + j] = s; }
    }
}"""


@pytest.fixture
def _registry():
    from funcgrad.primitives import core

    registered = dict(core.REGISTRY)
    yield
    core.REGISTRY.clear()
    core.REGISTRY.update(registered)


def _cumsum_primitive(**kernel: Any) -> Any:
    from funcgrad.primitives import Primitive
    from funcgrad.primitives.ad import defvjp
    def rule(x: Any) -> Any:  # (the C reads doubles)
        if x.dtype != fg.float64 or x.ndim != 2:
            raise fg.DTypeError(f"cumsum_rows_test: a 2-d float64 array, got {x.str_short()}")
        return x

    prim = Primitive("cumsum_rows_test", rule, c_kernel=_CUMSUM_C, **kernel)
    defvjp(prim, lambda g, ans, x: fg.flip(fg.bind(prim, fg.flip(g, -1)), -1))
    return prim


def test_a_primitive_given_as_c_runs_differentiates_and_compiles(_registry) -> None:
    """``Primitive(c_kernel=...)``: the C function is the CPU kernel, eager and compiled, with
    the user's derivative rule; its build is cached like the native loops'."""
    prim = _cumsum_primitive()
    x = fg.asarray(np.random.default_rng(0).standard_normal((5, 7)))
    np.testing.assert_allclose(fg.bind(prim, x).numpy(), np.cumsum(x.numpy(), axis=1), rtol=1e-15)
    w = fg.arange(7.0, dtype=fg.float64)
    g = fg.grad(lambda v: (fg.bind(prim, v) * w).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.broadcast_to(np.cumsum(w.numpy()[::-1])[::-1], (5, 7)))
    compiled = fg.compile(fg.grad(lambda v: (fg.bind(prim, v * 2.0) * w).sum()))
    np.testing.assert_allclose(compiled(x).numpy(), 2 * g.numpy())
    forward = fg.compile(lambda v: fg.bind(prim, v * 2.0) + 1.0)
    assert "cumsum_rows_test" in forward.lower(x).source
    np.testing.assert_allclose(forward(x).numpy(), np.cumsum(2 * x.numpy(), axis=1) + 1.0, rtol=1e-15)


def test_a_c_kernel_without_a_compiler_runs_its_numpy_kernel_or_says_why(_registry,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(cc, "_LOADED", {})
    monkeypatch.setattr(cc, "_FAILED", {})
    cc.toolchain.cache_clear()
    try:
        x = fg.asarray(np.ones((2, 3)))
        with pytest.raises(fg.DTypeError, match="cumsum_rows_test"):
            fg.bind(_cumsum_primitive(), fg.ones((2, 3)))  # (float32: refused by the rule)
        from funcgrad.primitives import core

        del core.REGISTRY["cumsum_rows_test"]
        prim = _cumsum_primitive(kernel=lambda xp, v: xp.cumsum(v, axis=1))
        assert fg.bind(prim, x).tolist() == [[1.0, 2.0, 3.0]] * 2
        from funcgrad.primitives import core

        del core.REGISTRY["cumsum_rows_test"]
        with pytest.raises(cc.NativeBuildError, match="no C compiler"):
            fg.bind(_cumsum_primitive(), x)
    finally:
        cc.toolchain.cache_clear()


def test_float32_exp_is_within_2_ulp_of_the_correctly_rounded_value() -> None:
    """The native loops' float32 exp (``fg_expf``: glibc's vector expf, arguments below -87
    shifted off its slow path) over every 997th float32 of both signs, and around the
    edges of its ranges: within 2 ulp of float64's exp rounded to float32, subnormal and 0
    results included; inf and NaN as NumPy's."""
    from funcgrad.backends import cc

    kernel = cc.unary("fg_exp({0})", np.float32)
    if kernel is None:
        pytest.skip("no C compiler")
    bits = np.arange(0, 0x7F800001, 997, dtype=np.uint32)
    edges = np.float32([-86, -86.5, -87, -87.0001, -95, -103.28, -103.3, -103.9, -104, -104.5, -200, 88.7, 88.73])
    x = np.concatenate([bits.view(np.float32), -bits.view(np.float32), edges, np.float32([-np.inf, np.inf, np.nan])])
    got = kernel(x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert _ulps(got[:-1], want[:-1]) <= 2
    assert np.isnan(got[-1]) and got[-2] == np.inf and got[-3] == 0


def test_float32_tanh_is_within_2_ulp_of_the_correctly_rounded_value() -> None:
    """The native loops' own float32 tanh (``fg_tanhf`` in ``cc.PRELUDE``) over every 1009th
    float32 from 0 to inf and both signs, and the values its branches meet: the correctly
    rounded tanh is float64's rounded to float32. |tanh| <= 1, odd, NaN stays NaN."""
    from funcgrad.backends import cc

    kernel = cc.unary("fg_tanh({0})", np.float32)
    assert kernel is not None
    bits = np.arange(0, 0x7F800001, 1009, dtype=np.uint32)
    x = np.concatenate([bits.view(np.float32), np.float32([0.4, 0.5, 9.0, 9.01, 9.02, 9.1, 9.2, 88.8, np.inf])])
    x = np.concatenate([x, -x, np.float32([np.nan, -np.nan])])
    got = kernel(x)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    assert _ulps(got, want) <= 2
    assert np.all(np.abs(got[:-2]) <= 1) and np.isnan(got[-2:]).all()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x))


def test_float32_gelu_and_its_gradient_are_within_their_bounds_of_the_correctly_rounded_values() -> None:
    """The native loops' own float32 GELU and gradient (``fg_gelu_f``, ``fg_gelu_grad_f`` in
    ``cc.PRELUDE``: Phi(x) = erfc(-x / sqrt 2) / 2 from one inlined exponential) over every
    1009th float32 of both signs, against float64's x Phi(x) and Phi(x) + x phi(x): GELU
    within 8 ulp where its value is a normal float (0 where it underflows), the gradient
    within 6e-7 of the larger of its two terms; NaN stays NaN, +inf gives inf."""
    from scipy.special import erfc

    gelu, grad = cc.unary("fg_gelu({0})", np.float32), cc.unary("fg_gelu_grad({0})", np.float32)
    if gelu is None or grad is None:
        pytest.skip("no C compiler")
    bits = np.arange(0, 0x7F800000, 1009, dtype=np.uint32)
    x = np.concatenate([bits.view(np.float32), np.float32([0.5, 1.0, 13.19, 14.0, 14.5, 20.0, 1e30])])
    x = np.concatenate([x, -x])
    x64 = x.astype(np.float64)
    cdf = 0.5 * erfc(-x64 / np.sqrt(2.0))
    density = np.exp(-0.5 * x64 * x64) / np.sqrt(2 * np.pi)
    want = (x64 * cdf).astype(np.float32)
    got = gelu(x)
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    assert _ulps(got[normal], want[normal]) <= 8
    assert np.all(np.abs(got[~normal]) <= np.finfo(np.float32).tiny)
    scale = np.maximum(np.abs(cdf), np.abs(x64 * density))
    assert np.all(np.abs(grad(x) - (cdf + x64 * density)) <= 6e-7 * scale + 1e-37)
    special = np.float32([np.nan, np.inf])
    assert np.isnan(gelu(special[:1])).all() and gelu(special[1:])[0] == np.inf


_PLUS_ONE = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const double *restrict a = (const double *)p[0];
    double *restrict y = (double *)p[1];
    for (int64_t i = lo; i < hi; i++) y[i] += a[i] + 1;  /* (a step run twice adds twice) */
}
"""


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5000), threads=st.integers(1, 9), data=st.data())
def test_a_split_call_runs_every_step_of_its_range_once(n: int, threads: int, data: Any) -> None:
    """``call(threads, ...)`` shares ``[lo, hi)`` out in chunks over its own threads:
    together they run each step exactly once, whatever its length and the thread count."""
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    try:
        address = cc.loop_kernel(_PLUS_ONE)
    except cc.NativeBuildError:
        pytest.skip("no C compiler")
    x, out = np.arange(n, dtype=np.float64), np.zeros(n)
    cc.caller()(threads, address, cc.sizes_and_bytes(1, 1, [n], [x.nbytes, out.nbytes]), lo, hi, x, out)
    want = np.zeros(n)
    want[lo:hi] = x[lo:hi] + 1
    np.testing.assert_array_equal(out, want)


def test_split_calls_from_several_python_threads_each_run_their_range_once() -> None:
    """Calls made at once from several Python threads: one shares its loop over the
    extension's threads, the others (finding them busy) run theirs alone; each run of 100
    calls gives every array its steps exactly once."""
    try:
        address = cc.loop_kernel(_PLUS_ONE)
    except cc.NativeBuildError:
        pytest.skip("no C compiler")
    n = 1 << 16
    x = np.arange(n, dtype=np.float64)
    outs = [np.zeros(n) for _ in range(4)]
    meta = cc.sizes_and_bytes(1, 1, [n], [x.nbytes, x.nbytes])

    def calls(out: np.ndarray) -> None:
        for _ in range(100):
            cc.caller()(2, address, meta, 0, n, x, out)

    workers = [threading.Thread(target=calls, args=(out,)) for out in outs]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for out in outs:
        np.testing.assert_array_equal(out, 100 * (x + 1))


def test_eager_native_loops_split_over_compile_threads() -> None:
    """An eager native kernel over enough elements splits over ``fg.config.compile_threads``
    threads (``cc.threads_for``) and computes what one thread does."""
    kernel = cc.unary("fg_tanh({0})", np.float32)
    if kernel is None:
        pytest.skip("no C compiler")
    x = np.linspace(-10, 10, 3 * cc.SPLIT_WORK + 77, dtype=np.float32)
    kept = fg.config.compile_threads
    try:
        results = []
        for threads in (1, 3):
            fg.config.compile_threads = threads
            assert cc.threads_for(x.size, x.size, cc.work(["fg_tanh(x)"])) == threads
            results.append(kernel(x))
    finally:
        fg.config.compile_threads = kept
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_splits_over_threads_of_its_own() -> None:
    """The split call's threads do not survive a fork: a child that splits a loop makes its
    own (rather than waiting on its parent's for ever) and computes the same values."""
    kernel = cc.unary("fg_tanh({0})", np.float32)
    if kernel is None:
        pytest.skip("no C compiler")
    x = np.linspace(-10, 10, 4 * cc.SPLIT_WORK, dtype=np.float32)
    kept = fg.config.compile_threads
    fg.config.compile_threads = 2
    try:
        want = kernel(x)  # (the parent's threads exist now)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (fork in a process with threads)
            child = os.fork()
        if child == 0:
            os._exit(0 if np.array_equal(kernel(x), want) else 1)
        status = _wait_for(child, seconds=60)
    finally:
        fg.config.compile_threads = kept
    assert status == 0, "the forked child's split call hung" if status is None else "it computed other values"


def _wait_for(child: int, seconds: float) -> int | None:
    """The exit code of process ``child``, or None (after killing it) if it runs longer."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return None


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), index_shape=st.sampled_from([(5,), (3, 4), (70,)]), width=st.sampled_from([(), (1,), (6,), (2, 3)]),
       dtype=st.sampled_from([np.float32, np.float64]), broadcast=st.booleans(), seed=st.integers(0, 2**16))
def test_native_row_scatter_add_gives_add_ats_bits(n, index_shape, width, dtype, broadcast, seed) -> None:
    """``x.at[rows].add(v)`` (an embedding's gradient) runs as one native loop that adds
    the rows in the index's order: ``np.add.at``'s bits, with repeated and negative rows,
    into any array (not only zeros), with values broadcast; an index out of range still
    raises."""
    from funcgrad.primitives import index as index_module

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, *width)).astype(dtype)
    rows = rng.integers(-n, n, index_shape)
    v = rng.standard_normal(width if broadcast else (*index_shape, *width)).astype(dtype)
    want = x.copy()
    np.add.at(want, rows, v)
    with compile_backend("c"):
        assert index_module._native_add_rows(np, x.copy(), (rows,), v)
        got = fg.asarray(x).at[fg.asarray(rows)].add(fg.asarray(v)).numpy()
        by_rows = np.asarray(x.copy())
        assert index_module._native_add_rows(np, by_rows, (rows, *(slice(None),) * len(width)), v)  # x[rows, :]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(by_rows, want)
    with compile_backend("c"), pytest.raises(IndexError):
        fg.asarray(x).at[fg.asarray(np.array([0, n]))].add(fg.asarray(x[:1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_softmax_rows_of_special_values_are_numpys(dtype) -> None:
    """A row holding +inf, NaN or only -inf is NaN throughout; a row of huge values does not
    overflow; a row of one value is 1 (as the NumPy kernel and PyTorch give)."""
    from funcgrad.primitives import normalization

    x = np.array([[1, np.inf, 2], [-np.inf] * 3, [1, np.nan, 2], [0, 0, 0], [1e30, 1e30, -1e30], [-np.inf, 0, 1]],
                 dtype)
    with compile_backend("c"):
        got = normalization._native_softmax(np, x)
        one = normalization._native_softmax(np, np.ones((4, 1), dtype))
    with compile_backend("numpy"), np.errstate(invalid="ignore"):
        want = fg.nn.functional.softmax(fg.asarray(x), dim=-1).numpy()
    assert got is not None and one is not None
    np.testing.assert_allclose(got, want, rtol=4e-7 if dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(one, np.ones((4, 1), dtype))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 70), classes=st.integers(1, 40), dtype=st.sampled_from([np.float32, np.float64]),
       labels=st.sampled_from([np.int64, np.int32]), reduction=st.sampled_from(["mean", "sum", "none"]),
       special=st.booleans(), seed=st.integers(0, 2**31))
def test_native_cross_entropy_and_its_gradient_agree_with_the_numpy_kernels(rows, classes, dtype, labels, reduction,
                                                                             special, seed) -> None:
    """The loss and the logits' gradient of ``F.cross_entropy`` as one native kernel (every
    label a class) equal the NumPy kernels' to a few ulp: any row length, both label dtypes,
    each reduction, and rows holding +inf, -inf or NaN (NaN rows, as NumPy's kernels give)."""
    from funcgrad.primitives import cross_entropy

    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((rows, classes)) * 4).astype(dtype)
    if special:
        z.flat[rng.integers(0, z.size, 3)] = rng.choice([np.inf, -np.inf, np.nan, 1e30], 3)
    y = rng.integers(0, classes, rows).astype(labels)
    g = rng.standard_normal(rows if reduction == "none" else ()).astype(dtype)

    def loss_and_grad():
        loss, vjp = fg.vjp(lambda v: fg.nn.functional.cross_entropy(v, fg.asarray(y), reduction=reduction),
                           fg.asarray(z))
        return loss.numpy(), vjp(fg.asarray(g))[0].numpy()

    with compile_backend("c"):
        assert cross_entropy._native(np, z, y, None, reduction, -100, loss=True) is not None
        got = loss_and_grad()
        joined = fg.bind(cross_entropy.softmax_cross_entropy_and_grad_p, fg.asarray(g), fg.asarray(z), fg.asarray(y),
                         reduction=reduction, ignore_index=-100)
        for a, b in zip(joined, got):  # the loss and its gradient from one pass: each as its own kernel gives it
            np.testing.assert_array_equal(a.numpy(), b)
    with compile_backend("numpy"), np.errstate(invalid="ignore", over="ignore"):
        want = loss_and_grad()
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=2e-6 if dtype == np.float32 else 1e-14,
                                   atol=2e-6 if dtype == np.float32 else 1e-14)


_EAGER_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
              "minimum": np.minimum, "gt": np.greater, "le": np.less_equal, "eq": np.equal}


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(_EAGER_OPS)), dtype=st.sampled_from([np.float32, np.float64]),
       shapes=st.sampled_from([((16, 64, 128), (128,)), ((64, 8, 12, 12), (1, 8, 1, 1)), ((300, 250), (300, 1)),
                               ((2, 1, 40000), (3, 1)), ((1 << 19,), (1 << 19,))]),
       swap=st.booleans(), seed=st.integers(0, 2**16))
def test_large_eager_elementwise_operations_run_natively_with_numpys_bits(name, dtype, shapes, swap, seed) -> None:
    """A large eager application of an exact elementwise primitive (arithmetic, max/min,
    comparisons) runs as one native loop over any broadcasting (``Primitive.native_eager``,
    ``cc.elementwise``): NumPy's bits and dtype, NaN and infinities included."""
    from funcgrad.primitives.core import REGISTRY

    rng = np.random.default_rng(seed)
    a, b = ((rng.standard_normal(s) * 3).astype(dtype) for s in (shapes[::-1] if swap else shapes))
    a.flat[::97] = np.nan
    b.flat[::13] = np.inf
    prim = REGISTRY[name]
    with compile_backend("c"):
        native = prim.native_eager(a, b)
        got = fg.bind(prim, fg.asarray(a), fg.asarray(b)).numpy()
    assert native is not None
    with np.errstate(all="ignore"):
        want = _EAGER_OPS[name](a, b)
    for value in (native, got):
        np.testing.assert_array_equal(value, want)
        assert value.dtype == want.dtype


def test_large_eager_unary_and_select_run_natively_with_numpys_bits() -> None:
    """The same for one-operand primitives (over 2^19 elements: below that, where nothing
    broadcasts, NumPy's loops are as fast and run) and a select whose condition broadcasts."""
    from funcgrad.primitives.core import REGISTRY

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((128, 64, 64)) * 4).astype(np.float32)
    x.flat[::101] = np.nan
    c = rng.standard_normal((128, 1, 64)) > 0
    y = rng.standard_normal((1, 64, 64)).astype(np.float32)
    ax = np.abs(x)
    cases = {"relu": ((x,), lambda: fg.nn.functional.relu(fg.asarray(x)), np.maximum(x, np.float32(0))),
             "neg": ((x,), lambda: -fg.asarray(x), -x),
             "sqrt": ((ax,), lambda: fg.sqrt(fg.asarray(ax)), np.sqrt(ax)),
             "select": ((c, x, y), lambda: fg.where(fg.asarray(c), fg.asarray(x), fg.asarray(y)), np.where(c, x, y))}
    for name, (raw, run, want) in cases.items():
        with compile_backend("c"):
            assert REGISTRY[name].native_eager(*raw) is not None, name
            got = run().numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_small_or_plain_eager_operations_keep_numpys_kernels() -> None:
    """Below ``cc.EAGER_MIN`` elements eager evaluation never asks for a native loop, and
    where nothing broadcasts along a row below 2^19 it declines one (NumPy is as fast)."""
    from funcgrad.primitives.core import REGISTRY

    x = np.ones((200, 300), np.float32)
    with compile_backend("c"):
        assert REGISTRY["add"].native_eager(x, x) is None
        assert REGISTRY["add"].native_eager(x, x[:1]) is not None
    with compile_backend("numpy"):
        assert REGISTRY["add"].native_eager(x, x[:1]) is None


_TIMEOUT_PROBE = """
import os, numpy as np
np.dot(np.ones((64, 64)), np.ones((64, 64)))  # (NumPy's BLAS loaded, its threads started, before funcgrad)
import funcgrad
from funcgrad.backends import cc
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), [lib.openblas_thread_timeout() for lib in cc._blas_libraries()
                                                  if hasattr(lib, "openblas_thread_timeout")])
print(float(np.dot(np.ones((300, 300)), np.ones((300, 300))).sum()))  # (its threads start again)
"""


@pytest.mark.parametrize("user", [None, "25"])
def test_blas_threads_sleep_soon_after_a_product_unless_the_user_says(user):
    """Importing funcgrad gives NumPy's already-loaded OpenBLAS the short idle spin
    (``cc.BLAS_THREAD_TIMEOUT``); a user's OPENBLAS_THREAD_TIMEOUT is kept as it is."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if user is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = user
    out = subprocess.run([sys.executable, "-c", _TIMEOUT_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    variable, timeouts = out.stdout.splitlines()[0].split(" ", 1)
    expected = user or cc.BLAS_THREAD_TIMEOUT
    assert variable == expected
    assert timeouts in ("[]", f"[{expected}]")  # (no OpenBLAS found: nothing to settle)
    assert out.stdout.splitlines()[1] == str(300.0 ** 3)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_linear_kernels_bias_add_is_numpys_bits(data):
    """``linear``'s bias, added by the native row loop, gives the bits of NumPy's
    ``out += b`` after the same product, for any leading shape, either float dtype, and a
    transposed input."""
    from funcgrad.primitives.linalg import _linear

    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    lead = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    k, q = data.draw(st.integers(1, 20)), data.draw(st.integers(1, 20))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((*lead, k)).astype(dtype)
    if len(lead) == 1 and data.draw(st.booleans()):
        x = np.ascontiguousarray(x.T).T  # (a transposed view)
    w, b = rng.standard_normal((q, k)).astype(dtype), rng.standard_normal(q).astype(dtype)
    with compile_backend("numpy"):
        want = _linear(np, x, w, b)
    with compile_backend("c"), blas("numpy"):  # (the same product: NumPy's)
        assert _linear(np, x, w, b).tobytes() == want.tobytes()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_stacked_products_are_numpys_bits(data):
    """A stack of matrix products runs one BLAS ``gemm`` a product over threads, as
    ``np.matmul`` calls it: the same bits, any batch shape, either operand read transposed
    (a view such as ``k.mT``), matrices of one row or column and ``x @ x.mT`` (NumPy's
    ``gemv``, ``dot`` and ``syrk``) included, and operands that are views into larger arrays
    (read where they lie)."""
    from funcgrad.primitives.linalg import _matmul_kernel

    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    batch = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=2)))
    m, k, q = (data.draw(st.integers(1, 40)) for _ in range(3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))

    def operand(rows, cols):
        """(*batch, rows, cols): contiguous, a transposed view, or a view into a larger array
        (a head of a fused projection: its rows further apart, its batch axes permuted)."""
        transposed, wider, permuted = (data.draw(st.booleans()) for _ in range(3))
        inner = (cols, rows) if transposed else (rows, cols)
        pad = data.draw(st.integers(1, 9)) if wider else 0
        full = rng.standard_normal((*batch[::-1], inner[0], inner[1] + pad) if permuted else
                                   (*batch, inner[0], inner[1] + pad)).astype(dtype)
        x = full[..., :inner[1]]
        x = np.moveaxis(x, range(len(batch)), range(len(batch))[::-1]) if permuted else x
        return x.swapaxes(-1, -2) if transposed else x

    a = operand(m, k)
    b = a.swapaxes(-1, -2) if data.draw(st.booleans()) else operand(k, q)  # (x @ x.mT)
    before = a.copy(), b.copy()
    for library in ("numpy", "mkl") if cc._mkl_blas() is not None else ("numpy",):
        with blas(library), compile_backend("c"):
            got = _matmul_kernel(np, a, b)
        if library == "numpy":
            np.testing.assert_array_equal(got, np.matmul(a, b))
        else:  # (MKL's products, one thread each: NumPy's values, not its bits)
            tol = 1e-4 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, np.matmul(a, b), rtol=tol, atol=tol)
        np.testing.assert_array_equal(a, before[0])
        np.testing.assert_array_equal(b, before[1])
