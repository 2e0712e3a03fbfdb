"""The fg.* functions against NumPy: broad coverage of SPEC §3's list, with
hypothesis over shapes and axes for the reductions and binary operators."""

from __future__ import annotations

import math
import sys

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
SPD = (A[:, :3] @ A[:, :3].T + 3 * np.eye(3)).astype(np.float32)


def close(got: fg.Array, want: np.ndarray, rtol: float = 1e-5) -> None:
    got_np = got.numpy() if isinstance(got, fg.Array) else np.asarray(got)
    want = np.asarray(want)
    assert got_np.shape == want.shape, (got_np.shape, want.shape)
    assert got_np.dtype == want.dtype, (got_np.dtype, want.dtype)
    np.testing.assert_allclose(got_np.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol)


x = fg.asarray(A)

CASES = {
    "exp": (lambda: fg.exp(x), lambda: np.exp(A)),
    "log1p_abs": (lambda: fg.log1p(fg.abs(x)), lambda: np.log1p(np.abs(A))),
    "sum": (lambda: x.sum(1), lambda: A.sum(1)),
    "mean_keep": (lambda: x.mean(0, keepdims=True), lambda: A.mean(0, keepdims=True)),
    "var_ddof": (lambda: fg.var(x, 1, ddof=1), lambda: A.var(1, ddof=1)),
    "std": (lambda: x.std(), lambda: A.std()),
    "max": (lambda: x.max(1), lambda: A.max(1)),
    "argmax": (lambda: x.argmax(1), lambda: A.argmax(1)),
    "argmin_flat": (lambda: x.argmin(), lambda: A.argmin()),
    "cumsum": (lambda: fg.cumsum(x, 1), lambda: A.cumsum(1)),
    "cumsum_flat": (lambda: fg.cumsum(x), lambda: A.cumsum()),
    "prod": (lambda: x.prod(0), lambda: A.prod(0)),
    "logsumexp": (lambda: fg.logsumexp(x, 1), lambda: np.log(np.exp(A.astype(np.float64)).sum(1)).astype(np.float32)),
    "matmul": (lambda: x @ x.T, lambda: A @ A.T),
    "dot": (lambda: fg.dot(x[0], x[1]), lambda: A[0] @ A[1]),
    "dot_nd": (lambda: fg.dot(fg.ones((2, 3, 4)), fg.ones((5, 4, 2))), lambda: np.dot(np.ones((2, 3, 4), np.float32), np.ones((5, 4, 2), np.float32))),
    "einsum": (lambda: fg.einsum("ij,kj->ik", x, x), lambda: A @ A.T),
    "einsum_implicit": (lambda: fg.einsum("ij,jk", x, x.T), lambda: np.einsum("ij,jk", A, A.T)),
    "tensordot": (lambda: fg.tensordot(x, x, axes=([1], [1])), lambda: np.tensordot(A, A, axes=([1], [1]))),
    "tensordot_int": (lambda: fg.tensordot(x, x.T, axes=1), lambda: np.tensordot(A, A.T, axes=1)),
    "outer": (lambda: fg.outer(x[0], x[1]), lambda: np.outer(A[0], A[1])),
    "concatenate": (lambda: fg.concatenate([x, x], 1), lambda: np.concatenate([A, A], 1)),
    "concat_none": (lambda: fg.concat([x, x], axis=None), lambda: np.concatenate([A, A], axis=None)),
    "stack": (lambda: fg.stack([x, x], 1), lambda: np.stack([A, A], 1)),
    "pad": (lambda: fg.pad(x, 1), lambda: np.pad(A, 1)),
    "pad_edge": (lambda: fg.pad(x, ((1, 0), (0, 2)), mode="edge"), lambda: np.pad(A, ((1, 0), (0, 2)), mode="edge")),
    "flip": (lambda: fg.flip(x, 1), lambda: np.flip(A, 1)),
    "tile": (lambda: fg.tile(x, (2, 1)), lambda: np.tile(A, (2, 1))),
    "tile3": (lambda: fg.tile(x[0], (2, 2)), lambda: np.tile(A[0], (2, 2))),
    "repeat": (lambda: fg.repeat(x, 2, 1), lambda: np.repeat(A, 2, 1)),
    "repeat_flat": (lambda: fg.repeat(x, 2), lambda: np.repeat(A, 2)),
    "repeat_counts": (lambda: fg.repeat(x, [1, 0, 2], axis=0), lambda: np.repeat(A, [1, 0, 2], axis=0)),
    "take": (lambda: fg.take(x, fg.array([2, 0]), 1), lambda: np.take(A, [2, 0], 1)),
    "take_flat": (lambda: fg.take(x, [5, 1]), lambda: np.take(A, [5, 1])),
    "take_along_axis": (lambda: fg.take_along_axis(x, fg.argsort(x, axis=1), 1),
                        lambda: np.take_along_axis(A, np.argsort(A, 1), 1)),
    "sort": (lambda: fg.sort(x), lambda: np.sort(A)),
    "sort_desc": (lambda: fg.sort(x, axis=0, descending=True), lambda: -np.sort(-A, axis=0)),
    "argsort": (lambda: fg.argsort(x, axis=0), lambda: np.argsort(A, axis=0, kind="stable")),
    "triu": (lambda: fg.triu(x, 1), lambda: np.triu(A, 1)),
    "tril": (lambda: fg.tril(x, -1), lambda: np.tril(A, -1)),
    "norm": (lambda: fg.linalg.norm(x), lambda: np.linalg.norm(A)),
    "norm_axis": (lambda: fg.linalg.norm(x, axis=1), lambda: np.linalg.norm(A, axis=1)),
    "norm_ord1": (lambda: fg.linalg.norm(x, 1, axis=0), lambda: np.linalg.norm(A, 1, axis=0)),
    "norm_inf": (lambda: fg.linalg.norm(x[0], np.inf), lambda: np.linalg.norm(A[0], np.inf)),
    "norm_fro": (lambda: fg.linalg.norm(x, "fro", axis=(0, 1)), lambda: np.linalg.norm(A, "fro")),
    "norm_mat1": (lambda: fg.linalg.norm(x, 1, axis=(0, 1)), lambda: np.linalg.norm(A, 1)),
    "norm_p3": (lambda: fg.linalg.norm(x[0], 3), lambda: np.linalg.norm(A[0], 3)),
    "solve": (lambda: fg.linalg.solve(fg.asarray(SPD), fg.ones(3)), lambda: np.linalg.solve(SPD, np.ones(3, np.float32))),
    "inv": (lambda: fg.linalg.inv(fg.asarray(SPD)), lambda: np.linalg.inv(SPD)),
    "cholesky": (lambda: fg.linalg.cholesky(fg.asarray(SPD)), lambda: np.linalg.cholesky(SPD)),
    "cholesky_upper": (lambda: fg.linalg.cholesky(fg.asarray(SPD), upper=True), lambda: np.linalg.cholesky(SPD).T),
    "where": (lambda: fg.where(x > 0, x, 0.0), lambda: np.where(A > 0, A, np.float32(0))),
    "clip": (lambda: fg.clip(x, -0.5, 0.5), lambda: np.clip(A, -0.5, 0.5)),
    "pow3": (lambda: x ** 3, lambda: A ** 3),
    "pow_neg": (lambda: x ** -2, lambda: A ** -2.0),
    "rpow": (lambda: 2.0 ** x, lambda: 2.0 ** A),
    "pow_float": (lambda: fg.abs(x) ** 0.5, lambda: np.abs(A) ** 0.5),
    "pow_array": (lambda: fg.abs(x) ** x, lambda: np.abs(A) ** A),
    "int_pow": (lambda: fg.arange(5) ** 3, lambda: np.arange(5) ** 3),
    "index": (lambda: x[1:, ::-2], lambda: A[1:, ::-2]),
    "index_none": (lambda: x[None, 1, ..., None], lambda: A[None, 1, ..., None]),
    "index_adv": (lambda: x[[0, 2], [1, 3]], lambda: A[[0, 2], [1, 3]]),
    "index_adv_slice": (lambda: x[:, [0, 0, 1]], lambda: A[:, [0, 0, 1]]),
    "index_adv_split": (lambda: fg.ones((2, 3, 4))[[0, 1], :, [1, 2]], lambda: np.ones((2, 3, 4), np.float32)[[0, 1], :, [1, 2]]),
    "index_mask": (lambda: x[x > 0], lambda: A[A > 0]),
    "index_mask_row": (lambda: x[fg.array([True, False, True])], lambda: A[[True, False, True]]),
    "at_add_dups": (lambda: x.at[[0, 0], 1].add(1.0), lambda: _np_at(A, ([0, 0], 1), 1.0)),
    "at_max": (lambda: x.at[1].max(0.0), lambda: np.where(np.arange(3)[:, None] == 1, np.maximum(A, 0), A)),
    "diagonal": (lambda: fg.diagonal(x, 1), lambda: np.diagonal(A, 1)),
    "roll": (lambda: fg.roll(x, 1, axis=1), lambda: np.roll(A, 1, 1)),
    "roll_flat": (lambda: fg.roll(x, -5), lambda: np.roll(A, -5)),
    "moveaxis": (lambda: fg.moveaxis(fg.ones((2, 3, 4)), 0, -1), lambda: np.moveaxis(np.ones((2, 3, 4), np.float32), 0, -1)),
    "int_div": (lambda: fg.array([1, 2, 3]) / 2, lambda: np.array([0.5, 1, 1.5], np.float32)),
    "floordiv": (lambda: fg.array([7, -7]) // 2, lambda: np.array([7, -7]) // 2),
    "mod": (lambda: fg.array([7, -7]) % 3, lambda: np.array([7, -7]) % 3),
    "erf": (lambda: fg.erf(x), lambda: np.vectorize(math.erf)(A).astype(np.float32)),
    "sigmoid": (lambda: fg.sigmoid(x), lambda: (1 / (1 + np.exp(-A))).astype(np.float32)),
    "sigmoid_extreme": (lambda: fg.sigmoid(fg.array([-100.0, 100.0])), lambda: np.array([0.0, 1.0], np.float32)),
    "rsqrt": (lambda: fg.rsqrt(fg.abs(x) + 1), lambda: 1 / np.sqrt(np.abs(A) + 1)),
    "arange": (lambda: fg.arange(2, 11, 3), lambda: np.arange(2, 11, 3)),
    "linspace": (lambda: fg.linspace(0, 1, 5), lambda: np.linspace(0, 1, 5, dtype=np.float32)),
    "eye": (lambda: fg.eye(3, k=1), lambda: np.eye(3, k=1, dtype=np.float32)),
    "full_like": (lambda: fg.full_like(x, 2.0), lambda: np.full_like(A, 2.0)),
    "squeeze": (lambda: fg.squeeze(x[None, :, None]), lambda: A),
    "expand_dims": (lambda: fg.expand_dims(x, (0, 2)), lambda: np.expand_dims(A, (0, 2))),
    "flatten": (lambda: fg.ones((2, 3, 4)).flatten(1), lambda: np.ones((2, 12), np.float32)),
    "round": (lambda: fg.round(x, 1), lambda: np.round(A, 1)),
    "minimum": (lambda: fg.minimum(x, 0), lambda: np.minimum(A, np.float32(0))),
    "any_all": (lambda: fg.stack([fg.any(x > 1), fg.all(x > -9)]), lambda: np.array([(A > 1).any(), (A > -9).all()])),
    "count_nonzero": (lambda: fg.count_nonzero(x > 0, axis=0), lambda: np.count_nonzero(A > 0, axis=0)),
    "hypot": (lambda: fg.hypot(x, 2.0), lambda: np.hypot(A, np.float32(2))),
    "logical": (lambda: fg.logical_and(x > 0, x < 1), lambda: np.logical_and(A > 0, A < 1)),
    "isnan": (lambda: fg.isnan(fg.array([1.0, math.nan])), lambda: np.array([False, True])),
    "isfinite_int": (lambda: fg.isfinite(fg.array([1, 2])), lambda: np.array([True, True])),
    "vecdot": (lambda: fg.vecdot(x, x), lambda: (A * A).sum(-1)),
    "meshgrid": (lambda: fg.stack(fg.meshgrid(fg.arange(3), fg.arange(2))), lambda: np.stack(np.meshgrid(np.arange(3), np.arange(2)))),
    "unstack": (lambda: fg.stack(fg.unstack(x, axis=1)), lambda: np.stack(list(A.T))),
    "cumulative_sum": (lambda: fg.cumulative_sum(x, axis=1, include_initial=True),
                       lambda: np.concatenate([np.zeros((3, 1), np.float32), A.cumsum(1)], 1)),
}


def _np_at(a: np.ndarray, index: object, v: float) -> np.ndarray:
    out = a.copy()
    np.add.at(out, index, v)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_matches_numpy(name: str) -> None:
    got, want = CASES[name]
    close(got(), want(), rtol=2e-5)


@given(data=st.data(), op=st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum", "greater", "equal"]))
def test_broadcasting_binary_ops(data: st.DataObject, op: str) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4)).input_shapes
    a = data.draw(hnp.arrays(np.float32, shapes[0], elements=st.floats(-5, 5, width=32)))
    b = data.draw(hnp.arrays(np.float32, shapes[1], elements=st.floats(-5, 5, width=32)))
    close(getattr(fg, op)(fg.asarray(a), fg.asarray(b)), getattr(np, op)(a, b))
    close(getattr(fg, op)(fg.asarray(a), 1.5), getattr(np, op)(a, np.float32(1.5)))


@given(data=st.data(), op=st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "std", "any", "all"]))
def test_reductions_over_random_axes(data: st.DataObject, op: str) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-2, 2)))
    axis = data.draw(st.none() | st.sets(st.integers(-len(shape), len(shape) - 1), min_size=1).map(
        lambda s: tuple(sorted({i % len(shape) for i in s}))))
    keepdims = data.draw(st.booleans())
    got = getattr(fg, op)(fg.asarray(a), axis=axis, keepdims=keepdims)
    want = getattr(np, op)(a, axis=axis, keepdims=keepdims)
    close(got, np.asarray(want), rtol=1e-9)


class Recorder:
    """A minimal interpreter: records each primitive ``bind`` hands it, then
    evaluates it eagerly (the mechanism the transforms build on)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def process(self, prim: fg.Primitive, args: tuple, params: dict) -> object:
        from funcgrad.primitives.core import current_interpreter

        self.names.append(prim.name)
        token = current_interpreter.set(None)
        try:
            return fg.bind(prim, *args, **params)
        finally:
            current_interpreter.reset(token)


def record(fn, *args) -> list[str]:
    from funcgrad.primitives.core import current_interpreter

    rec = Recorder()
    token = current_interpreter.set(rec)
    try:
        fn(*args)
    finally:
        current_interpreter.reset(token)
    return rec.names


def test_integer_powers_use_repeated_multiplication() -> None:
    assert record(lambda v: v ** 3, x) == ["integer_pow"]
    assert record(lambda v: v ** 2.5, x) == ["pow"]
    close(x ** 0, np.ones_like(A))
    close(x ** 1, A)
    assert (x ** 1).buffer is not x.buffer


def test_every_operation_goes_through_bind() -> None:
    assert record(lambda v: v + 1.0, x) == ["add"]
    assert record(lambda v: v.T[0], x) == ["transpose", "slice", "squeeze"]
    assert record(lambda v: fg.arange(3) + v[0, :3], x) == ["slice", "squeeze", "convert_element_type", "convert_element_type", "add"]
    assert record(lambda v: v.sum(), x) == ["reduce_sum"]


def test_operators_with_numpy_on_the_left() -> None:
    out = A + x
    assert isinstance(out, fg.Array)
    close(out, A + A)
    close(np.float32(2) * x, 2 * A)


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_erf_without_scipy(shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """SciPy is optional: without it erf runs an exact loop, for every shape (a 0-d input
    once came back from that loop as a Python float)."""
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails
    values = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
    for dtype in (np.float32, np.float64):
        out = fg.erf(fg.asarray(values.astype(dtype)))
        assert out.shape == shape and out.dtype.name == np.dtype(dtype).name
        np.testing.assert_allclose(out.numpy(), np.vectorize(math.erf)(values), rtol=1e-6)


def test_arange_with_only_a_stop_keeps_its_step() -> None:
    """``arange(stop, step=s)``: NumPy's and the array API's reading (a huge stop with a huge
    step is one element, not billions)."""
    assert fg.arange(5, step=2).tolist() == [0, 2, 4]
    assert fg.arange(7866574456.0, step=370232578156136, dtype=fg.float32).tolist() == [0.0]
    assert fg.arange(3.0, step=-1).shape == (0,)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_max_and_min_over_a_few_elements_each_give_numpys_bits(data) -> None:
    """Reductions over small blocks (a max pool's windows) run as one ufunc call per block
    element: NumPy's values bit for bit, NaN included, in any layout (a tie of +0 and -0
    goes either way, as it does between NumPy's own loops)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=2, max_size=4))) + (64, 8)
    x = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, np.nan, 2.5], np.float32), shape)
    if data.draw(st.booleans()):
        x = x.transpose(*rng.permutation(x.ndim))
    k = data.draw(st.integers(1, 2))
    axes = tuple(sorted(data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=k, max_size=k, unique=True))))
    keepdims = data.draw(st.booleans())
    for ours, theirs in ((fg.max, np.max), (fg.min, np.min)):
        got = ours(fg.asarray(x), axis=axes, keepdims=keepdims).numpy()
        want = theirs(x, axis=axes, keepdims=keepdims)
        assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
        assert got[got != 0].tobytes() == want[want != 0].tobytes()
