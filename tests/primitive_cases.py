"""One test case per registered primitive: a hypothesis strategy that draws
inputs and parameters, and the NumPy computation the result must equal.

``CASES[name](draw) -> Case``. The registry test fails for any primitive that
has no entry here, so a new primitive cannot land untested.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import ml_dtypes
import numpy as np

import funcgrad as fg
from funcgrad.primitives.elementwise import BINARY_TABLE, COMPARISON_TABLE, UNARY_TABLE, polygamma_series


@dataclass
class Case:
    args: list[Any]  # NumPy arrays (become fg arrays) and Python scalars
    params: dict[str, Any]
    reference: Callable[..., Any]  # called with the same args (NumPy arrays)
    rtol: float = 1e-6
    shares_input: bool = False  # view primitives return a view of args[0]
    extra: dict[str, Any] = field(default_factory=dict)  # "params_for": params for other args (traced ones)


FLOATS = [np.float32, np.float64]
ALL_FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
COMPLEX = [np.complex64, np.complex128]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def assert_matches(case: Case, got: np.ndarray, name: str) -> np.ndarray:
    """``got`` (a primitive's result on the case's inputs) equals the case's NumPy reference:
    the shape, then the values (within the case's tolerance for floats, exactly otherwise).
    Returns the reference."""
    want = np.asarray(case.reference(*case.args, **case.params))
    assert got.shape == want.shape, (name, got.shape, want.shape)
    if is_float(got.dtype) or got.dtype.kind == "c":
        wide = np.complex128 if got.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=case.rtol, atol=case.rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
    return want


def rtol_for(dtype: Any) -> float:
    return {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 2e-2,
            np.dtype(np.float32): 2e-5, np.dtype(np.complex64): 2e-5}.get(np.dtype(dtype), 1e-9)


def is_float(dtype: Any) -> bool:
    """NumPy reports ml-dtypes' bfloat16 as kind 'V'."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt == np.dtype(ml_dtypes.bfloat16)


def arrays(draw: Any, dtype: Any, shape: Any, lo: float = -3.0, hi: float = 3.0) -> np.ndarray:
    dt = np.dtype(dtype)
    if is_float(dt):
        raw = draw(hnp.arrays(np.float64, shape, elements=st.floats(lo, hi, allow_nan=False)))
        return raw.astype(dt)
    if dt.kind == "c":
        parts = [draw(hnp.arrays(np.float64, shape, elements=st.floats(lo, hi, allow_nan=False))) for _ in range(2)]
        return np.asarray(parts[0] + 1j * parts[1]).astype(dt)
    if dt.kind == "b":
        return draw(hnp.arrays(np.bool_, shape))
    info = np.iinfo(dt)
    return draw(hnp.arrays(dt, shape, elements=st.integers(max(info.min, int(lo)), min(info.max, int(hi)))))


_UNARY_DOMAIN = {"log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.9, 5), "sqrt": (0, 5),
                 "rsqrt": (0.1, 5), "arcsin": (-0.99, 0.99), "arccos": (-0.99, 0.99), "arctanh": (-0.99, 0.99),
                 "arccosh": (1.01, 5), "reciprocal": (0.1, 5), "tan": (-1.2, 1.2), "lgamma": (0.2, 6)}
_UNARY_REF = {"expm1": np.expm1, "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
              "erf": lambda x: np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype),
              "lgamma": lambda x: np.vectorize(math.lgamma, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype),
              "round": np.round, "relu": lambda x: np.maximum(x, x.dtype.type(0)),
              "gelu": lambda x: _in_float64(x, lambda v: v * _phi(v)),
              "gelu_grad": lambda x: _in_float64(x, lambda v: _phi(v) + v * np.exp(-v * v / 2) / math.sqrt(2 * math.pi))}


def _phi(v: np.ndarray) -> np.ndarray:
    """The normal distribution function, from ``math.erf``."""
    return 0.5 * (1 + np.vectorize(math.erf, otypes=[np.float64])(v / math.sqrt(2)))


def _in_float64(x: np.ndarray, f: Any) -> np.ndarray:
    return np.asarray(f(x.astype(np.float64))).astype(x.dtype)


def _unary(name: str) -> Any:
    kernel, kinds, *_ = UNARY_TABLE[name]
    ref = _UNARY_REF.get(name) or getattr(np, kernel)
    lo, hi = _UNARY_DOMAIN.get(name, (-3, 3))

    def case(draw: Any) -> Case:
        choices = (ALL_FLOATS if "f" in kinds else []) + (INTS if "i" in kinds else []) + ([np.bool_] if "b" in kinds else []) \
            + (COMPLEX if "c" in kinds else [])
        dtype = draw(st.sampled_from(choices))
        if np.dtype(dtype).kind in "iu":
            lo_, hi_ = (0, 10) if np.dtype(dtype).kind == "u" else (-10, 10)
        else:
            lo_, hi_ = lo, hi
        x = arrays(draw, dtype, draw(SHAPES), lo_, hi_)
        params = {"decimals": draw(st.integers(0, 2))} if name == "round" else {}
        reference = (lambda x, decimals=0: np.round(x, decimals)) if name == "round" else ref
        return Case([x], params, reference, rtol_for(dtype))

    return case


_BINARY_DOMAIN = {"div": ((-3, 3), (0.5, 3)), "pow": ((0.1, 3), (-2, 2)), "floor_divide": ((-20, 20), (1, 5)),
                  "remainder": ((-20, 20), (1, 5)), "left_shift": ((0, 10), (0, 3)), "right_shift": ((0, 100), (0, 3))}


def _binary(name: str) -> Any:
    kernel, kinds, *_ = BINARY_TABLE[name]

    def case(draw: Any) -> Case:
        choices = (FLOATS if "f" in kinds else []) + ([np.int32, np.int64, np.uint8] if "i" in kinds else []) + \
            ([np.bool_] if kinds == "biu" else []) + (COMPLEX if "c" in kinds else [])
        dtype = draw(st.sampled_from(choices))
        (lx, hx), (ly, hy) = _BINARY_DOMAIN.get(name, ((-3, 3), (-3, 3)))
        if np.dtype(dtype).kind == "u":
            lx, ly = max(lx, 0), max(ly, 0)
        if np.dtype(dtype).kind in "iu" and name == "pow":
            (lx, hx), (ly, hy) = (0, 4), (0, 3)
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
        x: Any = arrays(draw, dtype, shapes[0], lx, hx)
        y: Any = arrays(draw, dtype, shapes[1], ly, hy)
        scalar = draw(st.sampled_from(["neither", "y", "x"])) if np.dtype(dtype).kind == "f" else "neither"
        if scalar == "y" and name not in ("nextafter",):
            y = float(draw(st.floats(max(ly, -3), hy, allow_nan=False)))  # a weak Python scalar
            if name in ("div",) and abs(y) < 0.5:
                y = 1.5
        elif scalar == "x" and name not in ("nextafter", "remainder"):
            x = float(draw(st.floats(max(lx, -3), hx, allow_nan=False)))
            if name in ("pow",) and x < 0.2:
                x = 1.5
        return Case([x, y], {}, getattr(np, kernel), rtol_for(dtype))

    return case


def _comparison(name: str) -> Any:
    kernel, kinds, arity = COMPARISON_TABLE[name]

    def case(draw: Any) -> Case:
        dtype = np.bool_ if kinds == "b" else draw(st.sampled_from(
            (FLOATS + [np.int64] if kinds not in ("f", "fc") else ALL_FLOATS) + (COMPLEX if "c" in kinds else [])))
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=arity, max_dims=3, max_side=4)).input_shapes
        args = [arrays(draw, dtype, s, -2, 2) for s in shapes]
        if is_float(dtype) and arity == 1 and args[0].size:
            args[0] = args[0].copy()
            args[0].reshape(-1)[0] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]))
        return Case(args, {}, getattr(np, kernel))

    return case


def _float_array(draw: Any, shape: Any = None, lo: float = -3, hi: float = 3) -> np.ndarray:
    return arrays(draw, draw(st.sampled_from(FLOATS)), draw(SHAPES) if shape is None else shape, lo, hi)


def _reduction(kernel: str, kinds: str = "if", nonempty: bool = False) -> Any:
    def case(draw: Any) -> Case:
        if kinds == "b":
            dtype: Any = np.bool_
        else:
            dtype = draw(st.sampled_from(FLOATS + [np.int64]))
        shape = draw(NONEMPTY if nonempty else SHAPES)
        x = arrays(draw, dtype, shape, -2, 2)
        axes = tuple(sorted(draw(st.sets(st.integers(0, max(x.ndim - 1, 0)), max_size=x.ndim))))
        keepdims = draw(st.booleans())
        return Case([x], {"axes": axes, "keepdims": keepdims},
                    lambda x, axes, keepdims: getattr(np, kernel)(x, axis=axes, keepdims=keepdims), rtol_for(dtype))

    return case


def _arg_reduction(kernel: str) -> Any:
    def case(draw: Any) -> Case:
        x = _float_array(draw, draw(NONEMPTY))
        axis = draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
        keepdims = draw(st.booleans())
        return Case([x], {"axis": axis, "keepdims": keepdims},
                    lambda x, axis, keepdims: getattr(np, kernel)(x, axis=axis, keepdims=keepdims))

    return case


def _scan(kernel: str) -> Any:
    def case(draw: Any) -> Case:
        x = _float_array(draw, draw(NONEMPTY), -1.5, 1.5)
        axis = draw(st.integers(0, x.ndim - 1))
        return Case([x], {"axis": axis}, lambda x, axis: getattr(np, kernel)(x, axis=axis), rtol_for(x.dtype))

    return case


def _select(draw: Any) -> Case:
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4)).input_shapes
    dtype = draw(st.sampled_from(FLOATS + [np.int64]))
    cond = arrays(draw, np.bool_, shapes[0])
    return Case([cond, arrays(draw, dtype, shapes[1]), arrays(draw, dtype, shapes[2])], {}, np.where)


def _integer_pow(draw: Any) -> Case:
    x = _float_array(draw, lo=0.5, hi=2)
    y = draw(st.integers(-4, 6))
    return Case([x], {"y": y}, lambda x, y: x.astype(np.float64) ** y, rtol_for(x.dtype) * 10)


def _convert(draw: Any) -> Case:
    import funcgrad as fg

    src = draw(st.sampled_from(ALL_FLOATS + INTS + [np.bool_]))
    dst = draw(st.sampled_from(list(fg.dtypes.all_dtypes)))
    x = arrays(draw, src, draw(SHAPES), 0, 100)
    return Case([x], {"new_dtype": dst}, lambda x, new_dtype: x.astype(new_dtype.np))


def _copy(draw: Any) -> Case:
    return Case([_float_array(draw)], {}, lambda x: x.copy())


def world_of_one() -> None:
    """Join a process group of this process alone (MPI's singleton), where ``all_reduce``
    is the identity; skipped without the ``distributed`` extra (mpi4py)."""
    import pytest

    import funcgrad.distributed as dist

    pytest.importorskip("mpi4py", reason="all_reduce needs the distributed extra (pip install 'funcgrad[distributed]')")
    if not dist.is_initialized():
        dist.init_process_group("mpi")


def _all_reduce(draw: Any) -> Case:
    world_of_one()
    op = draw(st.sampled_from(["sum", "mean", "max", "min"]))
    return Case([_float_array(draw)], {"op": op}, lambda x, op: x.copy())


# Collectives over a named axis (fg.lax), bound eagerly: an axis of one member, where each is
# computed in place (tests/test_named_axes.py checks them across real batches).
ONE = {"axis_name": "i", "size": 1}


def _named_reduction(draw: Any) -> Case:
    return Case([_float_array(draw)], dict(ONE), lambda x, **p: x)


def _all_gather(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    tiled = draw(st.booleans())
    n = x.ndim if tiled else x.ndim + 1
    axis = draw(st.integers(-n, n - 1))
    return Case([x], {**ONE, "axis": axis, "tiled": tiled}, lambda x, axis, tiled, **p: x if tiled else
                np.expand_dims(x, axis))


def _psum_scatter(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    tiled = draw(st.booleans())
    s = draw(st.integers(0, x.ndim - 1))
    x = x if tiled else np.take(x, [0], axis=s)
    return Case([x], {**ONE, "scatter_dimension": s, "tiled": tiled},
                lambda x, scatter_dimension, tiled, **p: x if tiled else np.squeeze(x, scatter_dimension))


def _ppermute(draw: Any) -> Case:
    perm = draw(st.sampled_from([(), ((0, 0),)]))
    return Case([_float_array(draw)], {**ONE, "perm": perm}, lambda x, perm, **p: x if perm else np.zeros_like(x))


def _all_to_all(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    tiled = draw(st.booleans())
    s, c = draw(st.integers(0, x.ndim - 1)), draw(st.integers(0, x.ndim - 1))
    x = x if tiled else np.take(x, [0], axis=s)
    return Case([x], {**ONE, "split_axis": s, "concat_axis": c, "tiled": tiled},
                lambda x, split_axis, concat_axis, tiled, **p: x if tiled else
                np.expand_dims(np.squeeze(x, split_axis), concat_axis))


def _axis_index(draw: Any) -> Case:
    return Case([np.zeros((0,), np.float32)], dict(ONE), lambda like, **p: np.int32(0))


def _matmul(draw: Any) -> Case:
    n, k, m = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
    a_shape = draw(st.sampled_from([(k,), batch[0] + (n, k)]))
    b_shape = draw(st.sampled_from([(k,), batch[1] + (k, m)]))
    dtype = draw(st.sampled_from(FLOATS))
    return Case([arrays(draw, dtype, a_shape), arrays(draw, dtype, b_shape)], {}, np.matmul, rtol_for(dtype) * 10)


def _linear(draw: Any) -> Case:
    n_in, n_out = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    dtype = draw(st.sampled_from(FLOATS))
    args = [arrays(draw, dtype, lead + (n_in,)), arrays(draw, dtype, (n_out, n_in))]
    if draw(st.booleans()):
        args.append(arrays(draw, dtype, (n_out,)))
    return Case(args, {}, lambda x, w, *b: x @ w.T + (b[0] if b else 0), rtol_for(dtype) * 10)


def _logits_and_labels(draw: Any) -> tuple[int, Any, np.ndarray, np.ndarray, dict]:
    """(rows, dtype, logits (rows, classes), integer labels (rows,), params) for the
    cross-entropy pair: some labels may be ``ignore_index`` (-100, or class 0), and the
    mean is drawn only when a row counts (the mean of none is NaN, whose derivatives no
    finite difference can check: see test_nn)."""
    n, c = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(FLOATS))
    ignore_index = draw(st.sampled_from([-100, 0]))
    labels = draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, c - 1) | st.just(ignore_index)))
    counted = bool((labels != ignore_index).any())
    reduction = draw(st.sampled_from(["none", "sum", "mean"] if counted else ["none", "sum"]))
    return n, dtype, arrays(draw, dtype, (n, c)), labels, {"reduction": reduction, "ignore_index": ignore_index}


def _row_max(z: np.ndarray) -> np.ndarray:
    return z.max(1, keepdims=True) if z.shape[0] else np.zeros((0, 1), z.dtype)


def _row_weights(y: np.ndarray, reduction: str, ignore_index: int) -> np.ndarray:
    """Each row's weight in the reduced loss: 0 where ignored, 1/count for the mean."""
    counted = (y != ignore_index).astype(np.float64)
    return counted / counted.sum() if reduction == "mean" else counted


def _xent_reference(z: np.ndarray, y: np.ndarray, reduction: str, ignore_index: int) -> np.ndarray:
    m = _row_max(z)
    safe = np.where(y == ignore_index, 0, y)
    per_row = (np.log(np.exp(z - m).sum(1)) + m[:, 0] - z[np.arange(len(z)), safe]) * _row_weights(
        y, reduction, ignore_index)
    return np.asarray(per_row if reduction == "none" else per_row.sum()).astype(z.dtype)


def _softmax_cross_entropy(draw: Any) -> Case:
    _, dtype, logits, labels, params = _logits_and_labels(draw)
    return Case([logits, labels], params, _xent_reference, rtol_for(dtype) * 10)


def _softmax_cross_entropy_grad(draw: Any) -> Case:
    n, dtype, logits, labels, params = _logits_and_labels(draw)

    def reference(g: np.ndarray, z: np.ndarray, y: np.ndarray, reduction: str, ignore_index: int) -> np.ndarray:
        e = np.exp(z - _row_max(z))
        out = e / e.sum(1, keepdims=True)
        out[np.arange(n), np.where(y == ignore_index, 0, y)] -= 1
        return (out * (g * _row_weights(y, reduction, ignore_index))[:, None]).astype(z.dtype)

    g = arrays(draw, dtype, (n,) if params["reduction"] == "none" else ())  # one per row, or one for all rows
    return Case([g, logits, labels], params, reference, rtol_for(dtype) * 10)


def _softmax_cross_entropy_and_grad(draw: Any) -> Case:
    """The joined pair's inputs (the gradient's); the reference is the loss, its first
    result (tests/test_nn_losses.py checks both against the pair)."""
    grad = _softmax_cross_entropy_grad(draw)
    return Case(grad.args, grad.params, lambda g, z, y, **params: _xent_reference(z, y, **params), grad.rtol)


def _einsum(draw: Any) -> Case:
    spec, shapes = draw(st.sampled_from([
        ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]), ("ij,ij->", [(2, 3), (2, 3)]),
        ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("i,j->ij", [(3,), (2,)]), ("...i,i->...", [(2, 3, 4), (4,)]),
        ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]), ("ij", [(2, 3)]), ("ji", [(2, 3)])]))
    dtype = draw(st.sampled_from(FLOATS))
    args = [arrays(draw, dtype, s) for s in shapes]
    return Case(args, {"subscripts": spec}, lambda *xs, subscripts: np.einsum(subscripts, *xs), rtol_for(dtype) * 10)


def _spd(draw: Any, n: int, dtype: Any) -> np.ndarray:
    a = arrays(draw, np.float64, (n, n), -1, 1)
    return (a @ a.T + n * np.eye(n)).astype(dtype)


def _solve(draw: Any) -> Case:
    n, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
    b_shape = draw(st.sampled_from([(n,), (n, 2)]))
    return Case([_spd(draw, n, dtype), arrays(draw, dtype, b_shape)], {}, np.linalg.solve, rtol_for(dtype) * 100)


def _square_case(fn: Any) -> Any:
    def case(draw: Any) -> Case:
        n, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
        return Case([_spd(draw, n, dtype)], {}, fn, rtol_for(dtype) * 100)

    return case


def _orthogonal(draw: Any, n: int) -> np.ndarray:
    """A dense orthogonal matrix: a drawn rotation times a fixed dense one (a diagonal matrix
    would sit where LAPACK's choice of each vector's sign flips with the perturbation)."""
    q, _ = np.linalg.qr(arrays(draw, np.float64, (n, n), -1, 1) + 2 * np.eye(n))
    dense, _ = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))
    return q @ dense


def _spectrum(draw: Any, k: int) -> np.ndarray:
    """k positive values at least 0.5 apart (the decompositions' derivatives divide by gaps)."""
    return np.cumsum(draw(st.lists(st.floats(0.5, 1.5), min_size=k, max_size=k)))


def _eigh_case(draw: Any) -> Case:
    n, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
    q = _orthogonal(draw, n)
    a = (q * _spectrum(draw, n)) @ q.T
    return Case([a.astype(dtype)], {}, lambda a: np.linalg.eigh(a)[0], rtol_for(dtype) * 100)


def _eig_case(draw: Any) -> Case:
    """A matrix with well-separated eigenvalues; a general one (not symmetric) but for n = 1."""
    n, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
    q = _orthogonal(draw, n)
    a = (q * _spectrum(draw, n)) @ q.T + np.triu(np.ones((n, n)), 1) * 0.1
    complex_of = np.complex128 if dtype == np.float64 else np.complex64
    return Case([a.astype(dtype)], {}, lambda a: np.linalg.eig(a.astype(np.float64))[0].astype(complex_of),
                rtol_for(dtype) * 100)


def _full_rank(draw: Any, m: int, n: int, signs: bool = False) -> np.ndarray:
    """An m x n matrix with well-separated singular values (and, with ``signs``, either sign
    of determinant)."""
    k = min(m, n)
    s = _spectrum(draw, k)
    if signs:
        s = s * np.where(draw(st.lists(st.booleans(), min_size=k, max_size=k)), -1, 1)
    return (_orthogonal(draw, m)[:, :k] * s) @ _orthogonal(draw, n)[:, :k].T


def _decomposition_case(reference: Any, square: bool = False, tall: bool = False, signs: bool = False,
                        params: dict[str, Any] | None = None) -> Any:
    def case(draw: Any) -> Case:
        m, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
        n = m if square else draw(st.integers(1, m) if tall else st.integers(1, 4))
        return Case([_full_rank(draw, m, n, signs).astype(dtype)], dict(params or {}), reference,
                    rtol_for(dtype) * 100)

    return case


def _searchsorted_case(draw: Any) -> Case:
    dtype = draw(st.sampled_from(FLOATS + [np.int64]))
    sorted_ = np.sort(arrays(draw, dtype, (draw(st.integers(0, 6)),)))
    return Case([sorted_, arrays(draw, dtype, draw(SHAPES))], {"side": draw(st.sampled_from(["left", "right"]))},
                lambda a, v, side: np.searchsorted(a, v, side=side))


def _complex_part(reference: Any) -> Any:
    def case(draw: Any) -> Case:
        return Case([arrays(draw, draw(st.sampled_from(COMPLEX)), draw(SHAPES))], {}, reference)

    return case


def _fft_case(draw: Any) -> Case:
    fft_type = draw(st.sampled_from(["fft", "ifft", "rfft", "irfft"]))
    shape = draw(NONEMPTY)
    axes = tuple(draw(st.permutations(range(len(shape))))[:draw(st.integers(1, len(shape)))])
    lengths = tuple(draw(st.integers(1, 5)) for _ in axes)
    dtype = draw(st.sampled_from(FLOATS if fft_type == "rfft" else COMPLEX))
    kernel = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}[fft_type]
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    out = {"irfft": np.float32}.get(fft_type, np.complex64) if single else None

    def reference(x: np.ndarray, *, fft_type: str, axes: tuple, lengths: tuple, norm: str) -> np.ndarray:
        y = kernel(x, s=lengths, axes=axes, norm=norm)
        return y.astype(out) if out is not None else y

    return Case([arrays(draw, dtype, shape)], {"fft_type": fft_type, "axes": axes, "lengths": lengths,
                                               "norm": draw(st.sampled_from(["backward", "ortho", "forward"]))},
                reference, rtol=1e-4 if single else 1e-9)


def _triangular_solve(draw: Any) -> Case:
    n, dtype = draw(st.integers(1, 4)), draw(st.sampled_from(FLOATS))
    lower, transpose_a = draw(st.booleans()), draw(st.booleans())
    a = np.linalg.cholesky(_spd(draw, n, np.float64)).astype(dtype)
    if not lower:
        a = a.T.copy()

    def ref(a: Any, b: Any, lower: bool, transpose_a: bool) -> Any:
        t = np.tril(a) if lower else np.triu(a)
        return np.linalg.solve(t.T if transpose_a else t, b)

    return Case([a, arrays(draw, dtype, (n, 2))], {"lower": lower, "transpose_a": transpose_a}, ref,
                rtol_for(dtype) * 100)


# ---- views -----------------------------------------------------------------

def _reshape(draw: Any) -> Case:
    x = _float_array(draw)
    order = list(range(x.ndim))
    if x.ndim >= 2 and draw(st.booleans()):  # non-contiguous input: forces the copy path sometimes
        x = np.ascontiguousarray(x)
        x = x.transpose(tuple(draw(st.permutations(order))))
    sizes = _factor(draw, x.size)
    return Case([x], {"new_sizes": sizes}, lambda x, new_sizes: x.reshape(new_sizes))


def _factor(draw: Any, n: int) -> tuple[int, ...]:
    if n == 0:
        return draw(st.sampled_from([(0,), (0, 2), (2, 0, 1)]))
    dims = []
    rest = n
    for _ in range(draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    dims.append(rest)
    return tuple(dims)


def _transpose(draw: Any) -> Case:
    x = _float_array(draw)
    perm = tuple(draw(st.permutations(list(range(x.ndim)))))
    return Case([x], {"permutation": perm}, lambda x, permutation: x.transpose(permutation), shares_input=True)


def _broadcast_to(draw: Any) -> Case:
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
    x = _float_array(draw, shapes.input_shapes[0])
    return Case([x], {"shape": shapes.result_shape}, lambda x, shape: np.broadcast_to(x, shape), shares_input=True)


def _slice(draw: Any) -> Case:
    x = _float_array(draw)
    slices = tuple(slice(draw(st.none() | st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)),
                         draw(st.sampled_from([None, 1, 2, -1, -2]))) for _ in x.shape)
    index = tuple(s.indices(n) for s, n in zip(slices, x.shape))
    return Case([x], {"index": index}, lambda x, index: x[slices], shares_input=True)


def _squeeze(draw: Any) -> Case:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
    x = _float_array(draw, shape)
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = tuple(sorted(draw(st.sets(st.sampled_from(ones), max_size=len(ones))))) if ones else ()
    return Case([x], {"dimensions": dims}, lambda x, dimensions: np.squeeze(x, dimensions), shares_input=True)


def _expand_dims(draw: Any) -> Case:
    x = _float_array(draw)
    k = draw(st.integers(0, 2))
    dims = tuple(sorted(draw(st.sets(st.integers(0, x.ndim + k - 1), min_size=k, max_size=k)))) if k else ()
    return Case([x], {"dimensions": dims}, lambda x, dimensions: np.expand_dims(x, dimensions), shares_input=True)


def _flip(draw: Any) -> Case:
    x = _float_array(draw)
    axes = tuple(sorted(draw(st.sets(st.integers(0, max(x.ndim - 1, 0)), max_size=x.ndim)))) if x.ndim else ()
    return Case([x], {"axes": axes}, lambda x, axes: np.flip(x, axes) if axes else x, shares_input=True)


def _diagonal(draw: Any) -> Case:
    x = _float_array(draw, draw(hnp.array_shapes(min_dims=2, max_dims=3, max_side=4)))
    a1, a2 = draw(st.permutations(list(range(x.ndim))))[:2]
    offset = draw(st.integers(-3, 3))
    return Case([x], {"offset": offset, "axis1": a1, "axis2": a2},
                lambda x, offset, axis1, axis2: np.diagonal(x, offset, axis1, axis2), shares_input=True)


def _concatenate(draw: Any) -> Case:
    shape = draw(NONEMPTY)
    axis = draw(st.integers(0, len(shape) - 1))
    dtype = draw(st.sampled_from(FLOATS))
    parts = [arrays(draw, dtype, shape[:axis] + (draw(st.integers(0, 3)),) + shape[axis + 1:])
             for _ in range(draw(st.integers(1, 3)))]
    return Case(parts, {"axis": axis}, lambda *xs, axis: np.concatenate(xs, axis))


def _pad(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
    limit = min(x.shape) - 1 if mode == "reflect" else 2
    pw = tuple((draw(st.integers(0, max(limit, 0))), draw(st.integers(0, max(limit, 0)))) for _ in x.shape)
    value = draw(st.floats(-2, 2)) if mode == "constant" else 0

    def ref(x: Any, pad_width: Any, mode: str, value: Any) -> Any:
        return np.pad(x, pad_width, mode=mode, **({"constant_values": value} if mode == "constant" else {}))

    return Case([x], {"pad_width": pw, "mode": mode, "value": value}, ref)


def _sort_case(arg: bool) -> Any:
    def case(draw: Any) -> Case:
        x = arrays(draw, draw(st.sampled_from(FLOATS + [np.int64])), draw(NONEMPTY), -2, 2)
        axis, desc = draw(st.integers(0, x.ndim - 1)), draw(st.booleans())

        def ref(x: Any, axis: int, descending: bool) -> Any:
            key = -x.astype(np.float64) if descending else x
            idx = np.argsort(key, axis=axis, kind="stable")
            return idx if arg else np.take_along_axis(x, idx, axis)

        return Case([x], {"axis": axis, "descending": desc}, ref)

    return case


def _template_case(draw: Any, shape: tuple[int, ...], allow_none: bool) -> tuple[Any, list[np.ndarray]]:
    template, arrays_ = [], []
    for n in shape:
        kind = draw(st.sampled_from(["s", "a", "i"] + (["n"] if allow_none else [])))
        if kind == "n":
            template.append(("n",))
        if kind == "s" or (kind == "i" and n == 0):
            template.append(("s", draw(st.none() | st.integers(-3, 3)), draw(st.none() | st.integers(-3, 3)),
                             draw(st.sampled_from([None, 1, -1, 2]))))
        elif kind == "i":
            template.append(("i", draw(st.integers(0, n - 1))))
        elif n > 0:
            template.append(("a",))
            idx_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
            arrays_.append(draw(hnp.arrays(np.int64, idx_shape, elements=st.integers(-n, n - 1))))
        else:
            template.append(("s", None, None, None))
    return tuple(template), arrays_


def _gather(draw: Any) -> Case:
    from funcgrad.primitives.index import build_index

    x = _float_array(draw, draw(NONEMPTY))
    template, idx = _template_case(draw, x.shape, allow_none=True)
    if idx:  # index arrays must broadcast together
        common = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
        idx = [np.full(common, i.reshape(-1)[0] if i.size else 0, np.int64) for i in idx]
    return Case([x] + idx, {"template": template}, lambda x, *ix, template: x[build_index(template, ix)])


def _scatter(draw: Any) -> Case:
    from funcgrad.primitives.index import build_index

    x = _float_array(draw, draw(NONEMPTY))
    template, idx = _template_case(draw, x.shape, allow_none=False)
    if idx:
        common = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
        idx = [np.full(common, i.reshape(-1)[0] if i.size else 0, np.int64) for i in idx]
    mode = draw(st.sampled_from(["set", "add", "multiply", "min", "max"]))
    target = x[build_index(template, idx)].shape
    values = arrays(draw, x.dtype, target) if draw(st.booleans()) else float(draw(st.floats(-2, 2)))

    def ref(x: Any, values: Any, *ix: Any, template: Any, mode: str) -> Any:
        out = x.copy()
        index = build_index(template, ix)
        if mode == "set":
            out[index] = values
        else:
            getattr(np, {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}[mode]).at(
                out, index, values)
        return out

    # (repeated indices in 'set' keep the last update, as NumPy does, and only it has a derivative)
    return Case([x, values] + idx, {"template": template, "mode": mode}, ref)


def along_axis_indices(draw: Any) -> tuple[Any, int, Any]:
    """An array, an axis, and indices into that axis with 0-4 entries along it (the other
    axes as the array's): the arguments take_along_axis and its scatter share."""
    x = _float_array(draw, draw(NONEMPTY))
    axis = draw(st.integers(0, x.ndim - 1))
    shape = list(x.shape)
    shape[axis] = draw(st.integers(0, 4))
    idx = draw(hnp.arrays(np.int64, tuple(shape), elements=st.integers(0, x.shape[axis] - 1)))
    return x, axis, idx


def _program_of(fn: Any, *xs: np.ndarray) -> Any:
    import funcgrad as fg
    from funcgrad.transforms.ir import make_program

    arrs = tuple(fg.asarray(x) for x in xs)
    program, _ = make_program(fn, [a.aval for a in arrs], fg.tree.structure(arrs))
    return program


def _compiled_call(draw: Any) -> Case:
    """A compiled program of two inputs (one broadcast against the other)."""
    import funcgrad as fg
    from funcgrad.transforms.compiler.pipeline import optimize

    x = _float_array(draw, draw(NONEMPTY))
    y = arrays(draw, x.dtype, x.shape[-1:])

    def params_for(x: Any, y: Any) -> dict[str, Any]:
        program = optimize(_program_of(lambda u, v: fg.tanh(u * 1.0) * v + fg.exp(u) * (v * v), x, y))
        return {"name": "f", "program": program}

    def ref(x: Any, y: Any, **params: Any) -> Any:
        return np.tanh(x) * y + np.exp(x) * (y * y)

    return Case([x, y], params_for(x, y), ref, rtol_for(x.dtype) * 10, extra={"params_for": params_for})


def _debug_callback(draw: Any) -> Case:
    """No result: the case's reference is what the callback was handed (the tests read
    ``extra["seen"]``, and compare it with the input)."""
    x = _float_array(draw)
    seen: list[Any] = []
    return Case([x], {"fn": lambda v: seen.append(v.to("cpu").numpy())}, lambda x, fn: x, extra={"seen": seen})


def _checkpoint(draw: Any) -> Case:
    import funcgrad as fg
    from funcgrad.transforms.autodiff.checkpoint import _saved_eqns, checkpoint_policies

    x = _float_array(draw, draw(NONEMPTY))
    policy = draw(st.sampled_from([checkpoint_policies.nothing_saveable, checkpoint_policies.everything_saveable]))

    def params_for(x: Any) -> dict[str, Any]:
        program = _program_of(lambda v: fg.tanh(v) * 2.0 + fg.sin(v) * v, x)
        return {"program": program, "policy": policy, "saved": _saved_eqns(program, policy), "n_consts": 0}

    def ref(x: Any, **params: Any) -> Any:
        return np.tanh(x) * 2 + np.sin(x) * x

    return Case([x], params_for(x), ref, rtol_for(x.dtype), extra={"params_for": params_for})


def _custom_call(kind: str) -> Any:
    def case(draw: Any) -> Case:
        import funcgrad as fg
        from funcgrad.transforms.autodiff.custom import _prepare, custom_jvp, custom_vjp

        x = _float_array(draw, draw(NONEMPTY))
        if kind == "vjp":
            rule = custom_vjp(fg.sin)
            rule.defvjp(lambda v: (fg.sin(v), v), lambda v, g: (g * fg.cos(v),))
        else:
            rule = custom_jvp(fg.sin)
            rule.defjvp(lambda p, t: (fg.sin(p[0]), t[0] * fg.cos(p[0])))
        def params_for(x: Any) -> dict[str, Any]:
            return {"call": _prepare(rule.fun, rule, (), (fg.asarray(x),))[0]}

        return Case([x], params_for(x), lambda x, call: np.sin(x), rtol_for(x.dtype),
                    extra={"params_for": params_for})

    return case


# Custom VJPs define no forward mode (as in JAX): their JVP rule raises, saying so.
REVERSE_ONLY = {"custom_vjp_call", "autograd_function_call"}
# A while loop has no reverse mode (as in JAX): its VJP rule raises, saying so.
FORWARD_ONLY = {"while"}


def _threefry_reference(k1: Any, k2: Any, x1: Any, x2: Any) -> Any:
    """Threefry-2x32 with Python ints, one pair at a time (the paper's description), for
    its first output word (the registry tests compare the first output)."""
    mask = 0xFFFFFFFF

    def one(key1: int, key2: int, a: int, b: int) -> int:
        ks = (key1, key2, key1 ^ key2 ^ 0x1BD11BDA)
        a, b = (a + ks[0]) & mask, (b + ks[1]) & mask
        for group in range(5):
            for r in ((13, 15, 26, 6), (17, 29, 16, 24))[group % 2]:
                a = (a + b) & mask
                b = (((b << r) | (b >> (32 - r))) & mask) ^ a
            a = (a + ks[(group + 1) % 3]) & mask
            b = (b + ks[(group + 2) % 3] + group + 1) & mask
        return a

    args = np.broadcast_arrays(k1, k2, x1, x2)
    out = [one(*(int(v) for v in vals)) for vals in zip(*(a.reshape(-1) for a in args))]
    return np.array(out, np.uint32).reshape(args[0].shape)


def _threefry_case(draw: Any) -> Case:
    shape = draw(SHAPES)
    words = st.integers(0, 2**32 - 1)
    k1, k2 = (np.asarray(draw(words), np.uint32) for _ in range(2))
    x1, x2 = (draw(hnp.arrays(np.uint32, shape, elements=words)) for _ in range(2))
    return Case([k1, k2, x1, x2], {}, _threefry_reference)


def _cond_case(draw: Any) -> Case:
    """Two branches of one operand, the index chosen; every branch takes every input but the index."""
    import funcgrad as fg
    from funcgrad.transforms.control_flow import _program

    x = _float_array(draw, draw(NONEMPTY))
    index = np.asarray(draw(st.integers(0, 1)), np.int64)
    fns = [lambda v: fg.sin(v) * v, lambda v: fg.tanh(v) * 2.0]

    def params_for(index: Any, x: Any) -> dict[str, Any]:
        avals = [fg.asarray(x).aval]
        return {"branches": tuple(_program(lambda v, fn=fn: (fn(v),), avals) for fn in fns)}

    def ref(index: Any, x: Any, **params: Any) -> Any:
        return np.sin(x) * x if int(index) == 0 else np.tanh(x) * 2.0

    return Case([index, x], params_for(index, x), ref, rtol_for(x.dtype), extra={"params_for": params_for})


def _while_case(draw: Any) -> Case:
    """Three steps of ``c -> sin(c) * 0.5 + c``, counted by an integer carry (so the number of
    steps does not depend on the float values, and the loop is smooth in them)."""
    import funcgrad as fg
    from funcgrad.transforms.control_flow import _program

    x = _float_array(draw, draw(NONEMPTY))
    count = np.asarray(0, np.int64)

    def params_for(x: Any, count: Any) -> dict[str, Any]:
        avals = [fg.asarray(x).aval, fg.asarray(count).aval]
        return {"cond": _program(lambda c, i: (i < 3,), avals),
                "body": _program(lambda c, i: (fg.sin(c) * 0.5 + c, i + 1), avals), "n_consts": 0}

    def ref(x: Any, count: Any, **params: Any) -> Any:
        for _ in range(3):
            x = np.sin(x) * 0.5 + x
        return x

    return Case([x, count], params_for(x, count), ref, rtol_for(x.dtype) * 10, extra={"params_for": params_for})


def _scan_case(draw: Any) -> Case:
    """``c, y = tanh(c * w + x), c * x`` over the rows of ``xs``, forwards or backwards."""
    import funcgrad as fg
    from funcgrad.transforms.control_flow import _program

    dtype = draw(st.sampled_from(FLOATS))
    n = draw(st.integers(1, 3))
    w, c, xs = (arrays(draw, dtype, shape, -1, 1) for shape in ((n,), (n,), (draw(st.integers(1, 4)), n)))
    reverse = draw(st.booleans())

    def params_for(w: Any, c: Any, xs: Any) -> dict[str, Any]:
        avals = [fg.asarray(a).aval for a in (w, c, xs[0])]
        return {"body": _program(lambda w, c, x: (fg.tanh(c * w + x), c * x), avals), "n_consts": 1, "n_carry": 1,
                "length": xs.shape[0], "reverse": reverse}

    def ref(w: Any, c: Any, xs: Any, **params: Any) -> Any:
        ys = [None] * len(xs)
        for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            c, ys[i] = np.tanh(c * w + xs[i]), c * xs[i]
        return c  # the first output (the carry); the stacked ys are checked by the transforms' tests

    return Case([w, c, xs], params_for(w, c, xs), ref, rtol_for(dtype) * 10, extra={"params_for": params_for})


def _function_call(draw: Any) -> Case:
    import funcgrad as fg
    from funcgrad.transforms.autodiff.function import _FunctionCall

    class Sin(fg.autograd.Function):
        @staticmethod
        def forward(ctx: Any, v: Any) -> Any:
            ctx.save_for_backward(v)
            return fg.sin(v)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * fg.cos(v)

    x = _float_array(draw, draw(NONEMPTY))

    def params_for(x: Any) -> dict[str, Any]:
        return {"call": _FunctionCall(Sin, (fg.asarray(x),), [0])}

    return Case([x], params_for(x), lambda x, call: np.sin(x), rtol_for(x.dtype), extra={"params_for": params_for})


def _softmax_case(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    axis = draw(st.integers(0, max(x.ndim - 1, 0)))

    def ref(x: Any, axis: int) -> Any:
        w = x.astype(np.float64).reshape(x.shape or (1,))
        e = np.exp(w - w.max(axis=axis, keepdims=True))
        return (e / e.sum(axis=axis, keepdims=True)).reshape(x.shape).astype(x.dtype)

    return Case([x], {"axis": axis}, ref, rtol_for(x.dtype) * 10)


def _normalized(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray]:
    w = x.astype(np.float64)
    c = w - w.mean(axis=axes, keepdims=True)
    return c, 1 / np.sqrt((c * c).mean(axis=axes, keepdims=True) + eps)


def _layer_norm_case(draw: Any) -> Case:
    """x alone, with a weight, or with a weight and a bias (of a row's shape)."""
    x = _float_array(draw, draw(NONEMPTY))
    axes = tuple(range(draw(st.integers(0, x.ndim - 1)), x.ndim))
    eps = draw(st.sampled_from([1e-5, 0.1]))
    affine = [arrays(draw, x.dtype.type, x.shape[axes[0]:]) for _ in range(draw(st.integers(0, 2)))]

    def ref(x: Any, *affine: Any, axes: Any, eps: float) -> Any:
        c, r = _normalized(x, axes, eps)
        y = c * r
        for i, a in enumerate(affine):
            y = y * a.astype(np.float64) if i == 0 else y + a.astype(np.float64)
        return y.astype(x.dtype)

    return Case([x, *affine], {"axes": axes, "eps": eps}, ref, rtol_for(x.dtype) * 10)


def _layer_norm_affine_grad_case(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    g = arrays(draw, x.dtype.type, x.shape, -3, 3)
    axes = tuple(range(draw(st.integers(0, x.ndim - 1)), x.ndim))
    w = arrays(draw, x.dtype.type, x.shape[axes[0]:])
    eps = draw(st.sampled_from([1e-5, 0.1]))

    def ref(g: Any, x: Any, w: Any, axes: Any, eps: float) -> Any:
        c, r = _normalized(x, axes, eps)
        y, gw = c * r, g.astype(np.float64) * w.astype(np.float64)
        out = r * (gw - gw.mean(axis=axes, keepdims=True) - y * (gw * y).mean(axis=axes, keepdims=True))
        return out.astype(x.dtype)  # (dx: the first result; tests/test_layers_numerics.py checks all three)

    return Case([g, x, w], {"axes": axes, "eps": eps}, ref, rtol_for(x.dtype) * 10)


def _layer_norm_grad_case(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    g = arrays(draw, x.dtype.type, x.shape, -3, 3)
    axes = tuple(range(draw(st.integers(0, x.ndim - 1)), x.ndim))
    eps = draw(st.sampled_from([1e-5, 0.1]))

    def ref(g: Any, x: Any, axes: Any, eps: float) -> Any:
        c, r = _normalized(x, axes, eps)
        y, w = c * r, g.astype(np.float64)
        out = r * (w - w.mean(axis=axes, keepdims=True) - y * (w * y).mean(axis=axes, keepdims=True))
        return out.astype(x.dtype)

    return Case([g, x], {"axes": axes, "eps": eps}, ref, rtol_for(x.dtype) * 10)


def _logsumexp_case(draw: Any) -> Case:
    x = _float_array(draw, draw(NONEMPTY))
    axes = tuple(sorted(draw(st.sets(st.integers(0, x.ndim - 1), max_size=x.ndim))))
    keepdims = draw(st.booleans())

    def ref(x: Any, axes: Any, keepdims: bool) -> Any:
        w = x.astype(np.float64)
        m = w.max(axis=axes, keepdims=True) if w.size else 0.0
        out = np.log(np.exp(w - m).sum(axis=axes, keepdims=True)) + m
        return (out if keepdims else np.squeeze(out, axes)).astype(x.dtype)

    return Case([x], {"axes": axes, "keepdims": keepdims}, ref, rtol_for(x.dtype) * 10)


def _full_case(draw: Any) -> Case:
    like = _float_array(draw)
    shape = draw(SHAPES)
    dtype = draw(st.sampled_from([fg.float32, fg.float64, fg.int64, fg.bool_]))
    value = draw(st.sampled_from([0, 1, 0.5])) if dtype is not fg.bool_ else True
    return Case([like], {"shape": shape, "value": value, "dtype": dtype},
                lambda like, shape, value, dtype: np.full(shape, value, dtype.np))


def _polygamma_case(draw: Any) -> Case:
    """psi^(n) for n = 0..2, against the recurrence and asymptotic series in float64 (SciPy's,
    which the kernel calls, is not the reference it is checked by)."""
    dtype = draw(st.sampled_from(FLOATS))
    x = arrays(draw, dtype, draw(SHAPES), 0.3, 6)
    return Case([x], {"n": draw(st.integers(0, 2))},
                lambda v, n: polygamma_series(v.astype(np.float64), n).astype(v.dtype), rtol_for(dtype))


def _iota_case(draw: Any) -> Case:
    dtype = draw(st.sampled_from([fg.int64, fg.int32, fg.float32]))
    return Case([_float_array(draw)], {"n": draw(st.integers(0, 6)), "dtype": dtype},
                lambda like, n, dtype: np.arange(n, dtype=dtype.np))


CASES: dict[str, Callable[[Any], Case]] = {}
CASES.update({n: _unary(n) for n in UNARY_TABLE})
CASES.update({n: _binary(n) for n in BINARY_TABLE})
CASES.update({n: _comparison(n) for n in COMPARISON_TABLE})
CASES.update({
    "all_reduce": _all_reduce, "psum": _named_reduction, "pmax": _named_reduction, "pmin": _named_reduction,
    "all_gather": _all_gather, "psum_scatter": _psum_scatter, "ppermute": _ppermute, "all_to_all": _all_to_all,
    "axis_index": _axis_index, "polygamma": _polygamma_case, "select": _select, "integer_pow": _integer_pow, "convert_element_type": _convert, "copy": _copy,
    "reduce_sum": _reduction("sum"), "reduce_prod": _reduction("prod"),
    "reduce_max": _reduction("max", nonempty=True), "reduce_min": _reduction("min", nonempty=True),
    "reduce_any": _reduction("any", "b"), "reduce_all": _reduction("all", "b"),
    "argmax": _arg_reduction("argmax"), "argmin": _arg_reduction("argmin"),
    "cumsum": _scan("cumsum"), "cumprod": _scan("cumprod"),
    "matmul": _matmul, "linear": _linear, "softmax_cross_entropy": _softmax_cross_entropy,
    "softmax_cross_entropy_grad": _softmax_cross_entropy_grad,
    "softmax_cross_entropy_and_grad": _softmax_cross_entropy_and_grad, "einsum": _einsum, "linalg_solve": _solve,
    "linalg_cholesky": _square_case(np.linalg.cholesky), "triangular_solve": _triangular_solve,
    "linalg_eigh": _eigh_case, "linalg_eig": _eig_case, "searchsorted": _searchsorted_case,
    "real": _complex_part(np.real), "imag": _complex_part(np.imag), "conj": _complex_part(np.conjugate),
    "fft": _fft_case,
    "linalg_svd": _decomposition_case(lambda a, full_matrices: np.linalg.svd(a, full_matrices=False)[0],
                                      params={"full_matrices": False}),
    "linalg_qr": _decomposition_case(lambda a: np.linalg.qr(a)[0], tall=True),
    "linalg_slogdet": _decomposition_case(lambda a: np.linalg.slogdet(a)[0], square=True, signs=True),
    "linalg_det": _decomposition_case(np.linalg.det, square=True, signs=True),
    "linalg_cofactor": _decomposition_case(lambda a: np.linalg.det(a)[..., None, None] * np.linalg.inv(a).swapaxes(-1, -2),
                                           square=True, signs=True),
    "linalg_pinv": _decomposition_case(lambda a, rtol: np.linalg.pinv(a), params={"rtol": None}),
    "reshape": _reshape, "transpose": _transpose, "broadcast_to": _broadcast_to, "slice": _slice,
    "squeeze": _squeeze, "expand_dims": _expand_dims, "flip": _flip, "diagonal": _diagonal,
    "concatenate": _concatenate, "pad": _pad, "sort": _sort_case(False), "argsort": _sort_case(True),
    "gather": _gather, "scatter": _scatter, "logsumexp": _logsumexp_case, "softmax": _softmax_case,
    "layer_norm": _layer_norm_case, "layer_norm_grad": _layer_norm_grad_case,
    "layer_norm_affine_grad": _layer_norm_affine_grad_case,
    "checkpoint": _checkpoint, "compiled_call": _compiled_call, "debug_callback": _debug_callback,
    "custom_vjp_call": _custom_call("vjp"), "custom_jvp_call": _custom_call("jvp"),
    "autograd_function_call": _function_call, "cond": _cond_case, "while": _while_case, "scan": _scan_case,
    "threefry2x32": _threefry_case,
    "full": _full_case, "iota": _iota_case,
    "stop_gradient": lambda draw: Case([_float_array(draw)], {}, lambda x: x, shares_input=True),
})


def _windows_case(draw: Any) -> Case:
    x = _float_array(draw, draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)))
    axes = tuple(sorted(draw(st.sets(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim))))
    sizes, steps, dils = [], [], []
    for a in axes:
        d = draw(st.integers(1, 2))
        k = draw(st.integers(1, max(1, (x.shape[a] - 1) // d + 1)))
        sizes.append(k)
        steps.append(draw(st.integers(1, 3)))
        dils.append(d)
    params = {"axes": axes, "sizes": tuple(sizes), "steps": tuple(steps), "dilations": tuple(dils)}

    def ref(x: Any, axes: Any, sizes: Any, steps: Any, dilations: Any) -> Any:
        out = x
        for a, k, s, d in zip(axes, sizes, steps, dilations):
            span = (k - 1) * d + 1
            w = np.lib.stride_tricks.sliding_window_view(out, span, axis=a)[..., ::d]
            out = np.take(w, np.arange(0, w.shape[a], s), axis=a)
        return out

    return Case([x], params, ref, shares_input=True)


def _windows_add_case(draw: Any) -> Case:
    import funcgrad as fg

    base = _windows_case(draw)
    x = base.args[0]
    g = arrays(draw, x.dtype, fg.bind(fg.registry_lookup("windows"), fg.asarray(x), **base.params).shape)
    params = dict(base.params, shape=tuple(x.shape))

    def ref(g: Any, shape: Any, axes: Any, sizes: Any, steps: Any, dilations: Any) -> Any:
        out = np.zeros(shape, g.dtype)
        idx = np.arange(int(np.prod(shape))).reshape(shape)
        win = base.reference(idx, axes=axes, sizes=sizes, steps=steps, dilations=dilations)
        np.add.at(out.reshape(-1), win.reshape(-1), g.reshape(-1))
        return out

    return Case([g], params, ref, rtol_for(x.dtype) * 10)


CASES.update({"windows": _windows_case, "windows_add": _windows_add_case})


def _pool_windows(draw: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """An (..., H, W) array to select from, with ties (small integers as floats), NaNs and
    -inf, and a window geometry whose every window holds a position inside it."""
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from(FLOATS + [np.int32]))
    x = draw(hnp.arrays(np.float64, lead + (h, w), elements=st.sampled_from([-1.0, 0.0, 1.0, 2.5, -np.inf, np.nan])
                        if dtype != np.int32 and draw(st.booleans()) else st.floats(-3, 3, allow_nan=False)))
    x = x.astype(dtype)
    params: dict[str, Any] = {key: [] for key in ("sizes", "steps", "padding", "dilations", "shape")}
    for size in (h, w):
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        span = d * (k - 1) + 1
        p = draw(st.integers(0, span // 2))
        out = max(1, (size + 2 * p - span) // s + 1)
        starts = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
        out = int(np.argmin(np.append(((starts >= 0) & (starts < size)).any(axis=1), False)))  # windows that fit
        if out == 0:
            k, s, d, p, out = 1, 1, 1, 0, size
        for key, v in zip(("sizes", "steps", "padding", "dilations", "shape"), (k, s, p, d, out)):
            params[key].append(v)
    return x, {key: tuple(v) for key, v in params.items()}


def _pool_selections(x: np.ndarray, sizes: Any, steps: Any, padding: Any, dilations: Any, shape: Any) -> np.ndarray:
    """Each window's selection, window by window as PyTorch's CPU kernel: the first position
    inside, then any greater value or a NaN. Flat indices into (H, W), shape (..., OH, OW)."""
    h, w = x.shape[-2:]
    flat = x.reshape(-1, h, w)
    out = np.zeros((flat.shape[0],) + tuple(shape), np.int64)
    for b, plane in enumerate(flat):
        for i in range(shape[0]):
            for j in range(shape[1]):
                best, top = -1, None
                for a in range(sizes[0]):
                    for c in range(sizes[1]):
                        r, q = i * steps[0] - padding[0] + a * dilations[0], j * steps[1] - padding[1] + c * dilations[1]
                        if 0 <= r < h and 0 <= q < w and (best < 0 or plane[r, q] > top or plane[r, q] != plane[r, q]):
                            best, top = r * w + q, plane[r, q]
                out[b, i, j] = best
    return out.reshape(x.shape[:-2] + tuple(shape))


def _select_and_gather_case(draw: Any) -> Case:
    x, params = _pool_windows(draw)
    values = x if draw(st.booleans()) else arrays(draw, draw(st.sampled_from(FLOATS)), x.shape)

    def ref(values: Any, x: Any, **params: Any) -> Any:
        at = _pool_selections(x, **params)
        return np.take_along_axis(values.reshape(values.shape[:-2] + (-1,)), at.reshape(at.shape[:-2] + (-1,)),
                                  axis=-1).reshape(at.shape)

    return Case([values, x], params, ref)


def _select_and_scatter_add_case(draw: Any) -> Case:
    x, params = _pool_windows(draw)
    g = arrays(draw, draw(st.sampled_from(FLOATS)), x.shape[:-2] + params["shape"])

    def ref(g: Any, x: Any, **params: Any) -> Any:
        at = _pool_selections(x, **params).reshape(-1, math.prod(params["shape"]))
        out = np.zeros((at.shape[0], x.shape[-2] * x.shape[-1]), g.dtype)
        for b in range(at.shape[0]):
            np.add.at(out[b], at[b], g.reshape(at.shape[0], -1)[b])
        return out.reshape(x.shape)

    return Case([g, x], params, ref)


CASES.update({"select_and_gather": _select_and_gather_case, "select_and_scatter_add": _select_and_scatter_add_case})


# ---- convolution ------------------------------------------------------------------------------

def _conv_geometry(draw: Any) -> dict[str, Any]:
    """A convolution's sizes: images, groups and channels, kernel, strides, dilations, and an
    input whose windows fit (with a remainder the strides skip)."""
    n, groups = draw(st.integers(0, 2)), draw(st.integers(1, 2))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    sizes = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    out = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    hw = tuple((o - 1) * s + d * (k - 1) + 1 + draw(st.integers(0, s - 1))
               for o, s, d, k in zip(out, strides, dilations, sizes))
    return {"n": n, "c": cg * groups, "o": og * groups, "cg": cg, "hw": hw, "out": out, "dtype": draw(
        st.sampled_from(FLOATS)), "params": {"strides": strides, "dilations": dilations, "groups": groups},
        "sizes": sizes}


def _conv_windows(x: np.ndarray, sizes: Any, strides: Any, dilations: Any, out: Any) -> np.ndarray:
    """(N, C, KH, KW, OH, OW) in float64: every window's taps, by plain indexing."""
    n, c = x.shape[:2]
    win = np.zeros((n, c, *sizes, *out))
    for a in range(sizes[0]):
        for b in range(sizes[1]):
            for i in range(out[0]):
                for j in range(out[1]):
                    win[:, :, a, b, i, j] = x[:, :, i * strides[0] + a * dilations[0], j * strides[1] + b * dilations[1]]
    return win


def _conv_case(draw: Any) -> Case:
    geo = _conv_geometry(draw)
    x = arrays(draw, geo["dtype"], (geo["n"], geo["c"], *geo["hw"]))
    w = arrays(draw, geo["dtype"], (geo["o"], geo["cg"], *geo["sizes"]))

    def ref(x: Any, w: Any, *, strides: Any, dilations: Any, groups: int) -> Any:
        win = _conv_windows(x.astype(np.float64), w.shape[2:], strides, dilations, geo["out"])
        n, o = x.shape[0], w.shape[0]
        win = win.reshape(n, groups, w.shape[1], *win.shape[2:])
        y = np.einsum("ngcabij,gocab->ngoij", win, w.astype(np.float64).reshape(groups, o // groups, *w.shape[1:]))
        return y.reshape(n, o, *geo["out"]).astype(x.dtype)

    return Case([x, w], geo["params"], ref, rtol_for(geo["dtype"]) * 10)


def _conv_input_grad_case(draw: Any) -> Case:
    geo = _conv_geometry(draw)
    g = arrays(draw, geo["dtype"], (geo["n"], geo["o"], *geo["out"]))
    w = arrays(draw, geo["dtype"], (geo["o"], geo["cg"], *geo["sizes"]))

    def ref(g: Any, w: Any, *, strides: Any, dilations: Any, groups: int, shape: Any) -> Any:
        n, o = g.shape[:2]
        gg = g.astype(np.float64).reshape(n, groups, o // groups, *g.shape[2:])
        taps = np.einsum("ngoij,gocab->ngcabij", gg, w.astype(np.float64).reshape(groups, o // groups, *w.shape[1:]))
        taps = taps.reshape(n, groups * w.shape[1], *taps.shape[3:])
        out = np.zeros((n, taps.shape[1], *shape))
        for a in range(w.shape[2]):
            for b in range(w.shape[3]):
                for i in range(g.shape[2]):
                    for j in range(g.shape[3]):
                        out[:, :, i * strides[0] + a * dilations[0], j * strides[1] + b * dilations[1]] += \
                            taps[:, :, a, b, i, j]
        return out.astype(g.dtype)

    return Case([g, w], {**geo["params"], "shape": geo["hw"]}, ref, rtol_for(geo["dtype"]) * 10)


def _conv_weight_grad_case(draw: Any) -> Case:
    geo = _conv_geometry(draw)
    x = arrays(draw, geo["dtype"], (geo["n"], geo["c"], *geo["hw"]))
    g = arrays(draw, geo["dtype"], (geo["n"], geo["o"], *geo["out"]))

    def ref(x: Any, g: Any, *, strides: Any, dilations: Any, groups: int, sizes: Any) -> Any:
        win = _conv_windows(x.astype(np.float64), sizes, strides, dilations, g.shape[2:])
        n, o = g.shape[:2]
        cg = x.shape[1] // groups
        win = win.reshape(n, groups, cg, *win.shape[2:])
        gg = g.astype(np.float64).reshape(n, groups, o // groups, *g.shape[2:])
        return np.einsum("ngcabij,ngoij->gocab", win, gg).reshape(o, cg, *sizes).astype(x.dtype)

    return Case([x, g], {**geo["params"], "sizes": geo["sizes"]}, ref, rtol_for(geo["dtype"]) * 10)


CASES.update({"conv": _conv_case, "conv_input_grad": _conv_input_grad_case,
              "conv_weight_grad": _conv_weight_grad_case})


def _attention_case(draw: Any) -> Case:
    """Queries, keys and values of any leading axes (the same for all three), causal or not."""
    dtype = draw(st.sampled_from(FLOATS))
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    length, source, width, features = (draw(st.integers(1, 5)) for _ in range(4))
    q = arrays(draw, dtype, (*lead, length, width), -2, 2)
    k = arrays(draw, dtype, (*lead, source, width), -2, 2)
    v = arrays(draw, dtype, (*lead, source, features), -2, 2)

    def ref(q: Any, k: Any, v: Any, scale: float, causal: bool) -> Any:
        s = np.matmul(q.astype(np.float64) * scale, np.swapaxes(k.astype(np.float64), -1, -2))
        if causal:
            s = np.where(np.arange(s.shape[-1])[None, :] <= np.arange(s.shape[-2])[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p, v.astype(np.float64)).astype(q.dtype)

    params = {"scale": draw(st.sampled_from([0.5, 1.0])), "causal": draw(st.booleans())}
    return Case([q, k, v], params, ref, rtol_for(dtype) * 10)


def _attention_grad_case(draw: Any) -> Case:
    """Attention's inputs, weights of any values in (0, 1) (those a causal mask hides are
    read as 0) and an output cotangent; the reference is the composite in float64."""
    case = _attention_case(draw)
    q, k, v = case.args
    dtype = q.dtype.type
    p = arrays(draw, dtype, (*q.shape[:-1], k.shape[-2]), 0, 1)
    go = arrays(draw, dtype, (*q.shape[:-1], v.shape[-1]), -2, 2)

    def ref(q: Any, k: Any, v: Any, p: Any, go: Any, scale: float, causal: bool) -> Any:
        q, k, v, p, go = (a.astype(np.float64) for a in (q, k, v, p, go))
        if causal:
            p = np.where(np.arange(p.shape[-1])[None, :] <= np.arange(p.shape[-2])[:, None], p, 0.0)
        dp = go @ np.swapaxes(v, -1, -2)
        ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True)) * scale
        return (ds @ k).astype(dtype)  # (dq: the first result; tests/test_attention.py checks all three)

    return Case([q, k, v, p, go], case.params, ref, rtol_for(dtype) * 10)


CASES.update({"attention": _attention_case, "attention_grad": _attention_grad_case})
