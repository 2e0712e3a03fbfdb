"""Linear algebra: matmul, einsum, and the differentiable solvers."""


from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..backends import cc
from ..backends.base import flat_span
from ..config import config
from ..errors import DTypeError, ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import defbatched_matrices, logical_ndim, to_front, with_batch
from .checks import broadcast_shapes, common_device, require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape, layout_kind
from .domains import MATRIX, Domain
from .elementwise import BINARY

__all__ = ["matmul_p", "linear_p", "einsum_p", "solve_p", "cholesky_p", "triangular_solve_p"]


def _same_dtype(op: str, *xs: ShapedArray) -> None:
    for x in xs[1:]:
        if x.dtype is not xs[0].dtype:
            raise DTypeError(f"{op}: dtypes {xs[0].dtype} and {x.dtype} differ; promote them first")


def _matmul_rule(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    _same_dtype("matmul", a, b)
    if a.dtype.name == "bfloat16":
        raise DTypeError("matmul: the primitive takes no bfloat16 (fg.matmul computes it in float32 and casts back)")
    if not a.shape or not b.shape:
        raise ShapeError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)} (use * for scalars)")
    a_shape = (1,) + a.shape if len(a.shape) == 1 else a.shape
    b_shape = b.shape + (1,) if len(b.shape) == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} do not align: "
                         f"{a_shape[-1]} (last axis of the first) != {b_shape[-2]} "
                         f"({'only' if len(b.shape) == 1 else 'second-to-last'} axis of the second)")
    batch = broadcast_shapes("matmul", a_shape[:-2], b_shape[:-2])
    shape = batch + (a_shape[-2],) * (len(a.shape) > 1) + (b_shape[-1],) * (len(b.shape) > 1)
    return ShapedArray(shape, a.dtype, common_device("matmul", (a, b)))


_DOT_MOST = 1 << 22  # multiply-adds: the largest product of two matrices ``np.dot`` computes


@functools.lru_cache(maxsize=16)
def _typed_kernel(source: str, c_type: str) -> int | None:
    """The native loop ``source`` with ``T`` the C type ``c_type``, or None where it cannot be built."""
    try:
        return cc.loop_kernel(f"#define T {c_type}\n" + source)
    except cc.NativeBuildError:
        return None


def _matmul_kernel(xp: Any, a: Any, b: Any, out: Any = None) -> Any:
    """``np.matmul``, the hottest kernel of a training loop. With a BLAS that runs one
    thread a call (MKL: ``cc.blas``), a product of two matrices is ``_blocked``'s. Else a
    small product of two matrices that BLAS reads as they lie (each C or Fortran ordered, a
    BLAS dtype) goes to ``np.dot``, which calls the same ``gemm`` with less around it (3.1
    against 2.2 us for 8x32 @ 32x32 here, 3.0 against 0.8 for 8x32.T @ 32x32) and so gives
    the same bits; a large one stays with ``np.matmul``, as NumPy's ``@``: ``np.dot`` is
    slower there with a transposed first operand (a weight gradient ``x.T @ dy``: 784x128 @
    128x512 1.05-1.07x in float32, 1.02-1.32x in float64). A stack of them, ``_stacked``'s
    native loop. bfloat16 has no matmul loop of its own, so fg.matmul runs it in float32
    with explicit casts."""
    if cc.blas_sequential() and a.ndim == 2 == b.ndim and a.dtype.char in "fd" and a.dtype == b.dtype and \
            cc.eager_native(xp):
        product = _blocked(a, b, out)
        if product is not None:
            return product
    if a.ndim == 2 == b.ndim and a.dtype.char in "fdFD" and (a.flags.c_contiguous or a.flags.f_contiguous) and \
            (b.flags.c_contiguous or b.flags.f_contiguous) and (out is None or out.flags.c_contiguous) and \
            a.size * b.shape[1] <= _DOT_MOST:
        return xp.dot(a, b, out=out)
    if out is None and a.ndim >= 3 and a.shape[:-2] == b.shape[:-2] and a.dtype == b.dtype and \
            a.dtype in (np.float32, np.float64) and cc.eager_native(xp):
        stacked = _stacked(a, b)
        if stacked is not None:
            return stacked
    return xp.matmul(a, b, out=out)


# A product of two matrices with a BLAS that runs one thread a call (MKL), as ``np.dot``
# computes one (``gemm``, each operand read transposed where it lies in Fortran order, or
# ``syrk`` where both are one matrix and its transpose, its upper triangle copied down: the
# native program's products are the same calls), cut into one block of rows (or of columns,
# where the result has more of those) a thread. (nanoGPT's products on two threads: 0.81-0.89x
# the time of NumPy's OpenBLAS, as PyTorch's MKL takes, Intel Xeon.)
# n: the blocks, gemm's and syrk's addresses, M, K, N; per operand whether it is read
# transposed and its leading dimension; whether the blocks are of columns.
_BLOCKED_C = """#include <stdint.h>
typedef void (*fg_gemm_f)(int, int, int, int64_t, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T,
                          T *, int64_t);
typedef void (*fg_syrk_f)(int, int, int, int64_t, int64_t, T, const T *, int64_t, T, T *, int64_t);
static int64_t fg_edge(int64_t size, int64_t i, int64_t blocks) {  /* on multiples of 16 between blocks */
    return (i == 0 || i == blocks) ? size * i / blocks : (size * i / blocks) & ~(int64_t)15;
}
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const fg_gemm_f gemm = (fg_gemm_f)(intptr_t)n[1];
    const fg_syrk_f syrk = (fg_syrk_f)(intptr_t)n[2];
    const int64_t blocks = n[0], m = n[3], k = n[4], q = n[5], ta = n[6], lda = n[7], tb = n[8], ldb = n[9];
    const int by_columns = (int)n[10], trans_a = ta ? 112 : 111, trans_b = tb ? 112 : 111;
    const T *a = (const T *)p[0], *b = (const T *)p[1];
    T *c = (T *)p[2];
    if (blocks == 1 && ta != tb && m == q && (const void *)a == (const void *)b) {
        syrk(101, 121, trans_a, q, k, 1, ta ? b : a, ta ? ldb : lda, 0, c, q);
        for (int64_t i = 0; i < q; i++) for (int64_t j = i + 1; j < q; j++) c[j * q + i] = c[i * q + j];
        return;
    }
    for (int64_t i = lo; i < hi; i++) {
        const int64_t s0 = fg_edge(by_columns ? q : m, i, blocks), s1 = fg_edge(by_columns ? q : m, i + 1, blocks);
        if (by_columns)
            gemm(101, trans_a, trans_b, m, s1 - s0, k, 1, a, lda, tb ? b + s0 * ldb : b + s0, ldb, 0, c + s0, q);
        else
            gemm(101, trans_a, trans_b, s1 - s0, q, k, 1, ta ? a + s0 : a + s0 * lda, lda, b, ldb, 0, c + s0 * q, q);
    }
}
"""
_BLOCK_WORK = 1 << 18  # multiply-adds a block takes at least (about 3 us on one core)


def _blocked(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` of two float matrices by ``_BLOCKED_C``'s blocks where the BLAS runs one
    thread a call; None otherwise (NumPy's BLAS, which threads itself; a row or column
    vector, ``gemv``'s; no compiler)."""
    blas = cc.blas()
    if blas is None or not blas.sequential or (out is not None and not out.flags.c_contiguous):
        return None
    (ra, ta, lda), (rb, tb, ldb) = _as_matrix(a), _as_matrix(b)
    (m, k), q = a.shape, b.shape[1]
    syrk = ta != tb and m == q and ra.__array_interface__["data"][0] == rb.__array_interface__["data"][0]
    plan = _blocked_plan(m, k, q, ta, lda, tb, ldb, a.dtype, blas, config.compile_threads, syrk)
    if plan is None:
        return None
    if out is None:
        out = np.empty((m, q), a.dtype)
    address, meta, blocks = plan
    cc.caller()(blocks, address, meta, 0, blocks, ra, rb, out)
    return out


@functools.lru_cache(maxsize=256)
def _blocked_plan(m: int, k: int, q: int, ta: int, lda: int, tb: int, ldb: int, dtype: Any, blas: cc.Blas,
                  threads: int, syrk: bool) -> tuple[int, Any, int] | None:
    """The kernel, its sizes and the blocks of one shape and layout of product (worked out
    once: a small product's call costs about what its arithmetic does)."""
    address = _typed_kernel(_BLOCKED_C, cc.C_TYPE_OF[dtype])
    if address is None or min(m, k, q) < 2:
        return None
    by_columns = q > m
    blocks = 1 if syrk else max(1, min(threads, (q if by_columns else m) // 16, m * k * q // _BLOCK_WORK))
    single = dtype == np.float32
    gemm, syrk_address = blas.addresses[0 if single else 1], blas.addresses[2 if single else 3]
    size = dtype.itemsize
    meta = cc.sizes_and_bytes(2, 1, [blocks, gemm, syrk_address, m, k, q, ta, lda, tb, ldb, by_columns],
                              [m * k * size, k * q * size, m * q * size])
    return address, meta, blocks


def _as_matrix(x: Any) -> tuple[Any, int, int]:
    """A matrix as BLAS reads it: its C-ordered memory, whether it is read transposed (it lies
    in Fortran order) and its leading dimension; a copy in C order where it lies in neither."""
    if x.flags.c_contiguous and x.strides[-1] == x.itemsize:
        return x, 0, x.shape[1]
    if x.flags.f_contiguous:
        return x.T, 1, x.shape[0]
    return np.ascontiguousarray(x), 0, x.shape[1]


# A stack of products (attention's scores and their gradients: 64 products of 64x32 by
# 32x64), one BLAS ``gemm`` a product as ``np.matmul`` calls it (the same bits), with the
# products shared out over threads. NumPy's loop calls them one after another: 270 us
# where PyTorch's batched product takes 120. An operand is read where it lies, as a view
# into a larger array (the heads of a fused qkv projection: rows 384 apart), through
# gemm's leading dimension and each product's offset, not copied first.
# n: the products, gemm's address, M, K, N; per operand whether it is read transposed and
# its leading dimension; the batch's rank, its sizes and each operand's strides in it.
_STACKED_C = """#include <stdint.h>
typedef void (*fg_gemm_f)(int, int, int, int64_t, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T,
                          T *, int64_t);
void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const fg_gemm_f gemm = (fg_gemm_f)(intptr_t)n[1];
    const int64_t m = n[2], k = n[3], q = n[4], ta = n[5], lda = n[6], tb = n[7], ldb = n[8], rank = n[9];
    const int64_t *dims = n + 10, *sa = dims + rank, *sb = sa + rank;
    const T *a = (const T *)p[0], *b = (const T *)p[1];
    T *c = (T *)p[2];
    for (int64_t i = lo; i < hi; i++) {
        int64_t rest = i, oa = 0, ob = 0;
        for (int64_t d = rank - 1; d >= 0; d--) {
            const int64_t at = rest % dims[d];
            rest /= dims[d];
            oa += at * sa[d];
            ob += at * sb[d];
        }
        gemm(101, ta ? 112 : 111, tb ? 112 : 111, m, q, k, 1, a + oa, lda, b + ob, ldb, 0, c + i * m * q, q);
    }
}
"""


def _as_read(x: Any) -> tuple[Any, int, int, list[int]]:
    """``x``'s matrices as BLAS reads them where they lie: the contiguous run of memory
    from its first element to its last, whether each matrix is read transposed (a view
    such as ``k.mT``), its leading dimension and the batch's strides (in elements). A
    matrix whose rows and columns are both strided, or negative strides, read a
    C-contiguous copy."""
    size = x.itemsize
    rows, cols = x.shape[-2:]
    strides = [s // size for s in x.strides]
    if all(s >= 0 and s % size == 0 for s in x.strides):
        sr, sc = strides[-2:]
        read = (0, sr) if sc == 1 and sr >= cols else (1, sc) if sr == 1 and sc >= rows else None
        if read is not None:  # (no negative stride: the span starts at x's first element)
            return flat_span(np, x)[0], read[0], read[1], strides[:-2]
    x = np.ascontiguousarray(x)
    return x, 0, cols, [s // size for s in x.strides[:-2]]


def _stacked(a: Any, b: Any) -> Any:
    """``a @ b`` for stacks of matrices of the same batch shape by the native loop, or None
    where NumPy calls something else than ``gemm`` (a matrix of one row or column: ``gemv``
    or ``dot``; ``x @ x.mT``: ``syrk``), or where the loop cannot be built or NumPy's BLAS
    cannot be found."""
    m, k, q = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[:-2]
    if min(m, k, q) < 2 or not math.prod(batch):
        return None
    blas = cc.blas()
    if blas is None:
        return None
    address = _typed_kernel(_STACKED_C, cc.C_TYPE_OF[a.dtype])
    if address is None:
        return None
    (ra, ta, lda, sa), (rb, tb, ldb, sb) = _as_read(a), _as_read(b)
    if ta != tb and ra.ctypes.data == rb.ctypes.data:
        return None
    out = np.empty((*batch, m, q), a.dtype)
    gemm = blas.addresses[0 if a.dtype == np.float32 else 1]
    cc.run(address, [ra, rb], [out], [math.prod(batch), gemm, m, k, q, ta, lda, tb, ldb, len(batch), *batch, *sa, *sb],
           per_element=2 * k)
    return out


def _product_flops(args: tuple[Any, ...], out: Any) -> int:
    """Multiply-adds of a product, twice (PyTorch's convention)."""
    first = args[0].shape
    return 2 * math.prod(out.shape) * (first[-1] if first else 1)


matmul_p = Primitive("matmul", _matmul_rule, kernel=_matmul_kernel, gpu_kernel="matmul", autocast="lower",
                     flops=_product_flops, tags=frozenset({"dot"}), torch_name="Mm", onnx="MatMul")


def _matmul_batch(args: Any, dims: Any) -> tuple[Any, int]:
    (a, b), (da, db) = args, dims
    ra, rb = logical_ndim(a, da), logical_ndim(b, db)
    if db is None and rb == 2:  # (B, ..., k) @ (k, m): one matrix product over all rows, not B small ones
        a = to_front(a, da)
        rows = lax.reshape(a, (math.prod(a.shape[:-1]), a.shape[-1]))
        return lax.reshape(lax.matmul(rows, b), (*a.shape[:-1], b.shape[-1])), 0
    if da is None and ra == 2 and rb == 2:  # (n, k) @ (B, k, m) as ((B * m, k) @ (k, n)).T per member:
        bt = lax.moveaxis(to_front(b, db), (1,), (2,))  # (B, m, k), no copy when m is 1 (a vector per member)
        size, m, k = bt.shape
        rows = lax.matmul(lax.reshape(bt, (size * m, k)), lax.matrix_transpose(a))
        return lax.moveaxis(lax.reshape(rows, (size, m, a.shape[0])), (1,), (2,)), 0
    vector_a, vector_b = ra == 1, rb == 1  # as (1, k) and (k, 1) matrices, squeezed after
    if vector_a:
        a = lax.expand_dims(to_front(a, da), (1,)) if da is not None else lax.expand_dims(a, (0,))
        da = None if da is None else 0
    if vector_b:
        b = lax.expand_dims(to_front(b, db), (2,)) if db is not None else lax.expand_dims(b, (1,))
        db = None if db is None else 0
    lead = max(ra, rb, 2) - 2
    out = lax.matmul(with_batch(a, da, lead + 2), with_batch(b, db, lead + 2))
    squeezed = (out.ndim - 2,) * vector_a + (out.ndim - 1,) * vector_b
    return (lax.squeeze(out, squeezed) if squeezed else out), 0


matmul_p.batch = _matmul_batch


def _matmul_vjp_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)   or  (k,) @ (k,) -> ()
        return lax.expand_dims(g, (-1,)) * b if a.ndim > 1 else g * b
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m): summed over the batch by the interpreter
        return lax.squeeze(lax.matmul(b, lax.expand_dims(g, (-1,))), (-1,))
    return lax.matmul(g, lax.matrix_transpose(b))


def _is_transposed_view(x: Any) -> bool:
    """A 2-D array laid out column-major (typically ``W.T`` of a row-major W)."""
    return x.ndim == 2 and layout_kind(x) == "F"


def _matmul_vjp_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    if a.ndim == 1:
        return g * a if b.ndim == 1 else lax.expand_dims(a, (-1,)) * lax.expand_dims(g, (-2,))
    if b.ndim == 1:
        return lax.squeeze(lax.matmul(lax.matrix_transpose(a), lax.expand_dims(g, (-1,))), (-1,))
    if _is_transposed_view(b) and a.ndim == 2:
        # x @ W.T (nn.Linear): compute (g.T @ x).T so W's gradient comes out row-major like W
        # itself; later elementwise work on it (accumulation, optimizer steps) stays contiguous
        return lax.matrix_transpose(lax.matmul(lax.matrix_transpose(g), a))
    return lax.matmul(lax.matrix_transpose(a), g)


defjvp(matmul_p, lambda t, ans, a, b: lax.matmul(t, b), lambda t, ans, a, b: lax.matmul(a, t))
defvjp(matmul_p, _matmul_vjp_a, _matmul_vjp_b, saves="args")


def _linear_rule(x: ShapedArray, w: ShapedArray, *bias: ShapedArray) -> ShapedArray:
    _same_dtype("linear", x, w, *bias)
    require_kind("linear", x.dtype, "f", "a floating-point array")
    if x.dtype.name == "bfloat16":
        raise DTypeError("linear: the primitive takes no bfloat16 (fg.nn.functional.linear computes it in float32)")
    if not x.shape or len(w.shape) != 2 or x.shape[-1] != w.shape[1]:
        raise ShapeError(f"linear: input of shape {fmt_shape(x.shape)} and weight of shape {fmt_shape(w.shape)} "
                         f"do not fit: the weight must be (out_features, in_features) with in_features = the "
                         f"input's last axis")
    if len(bias) > 1 or (bias and bias[0].shape != (w.shape[0],)):
        raise ShapeError(f"linear: bias of shape {fmt_shape(bias[0].shape if bias else ())} for a weight of shape "
                         f"{fmt_shape(w.shape)}: it must be ({w.shape[0]},)")
    return ShapedArray(x.shape[:-1] + (w.shape[0],), x.dtype, common_device("linear", (x, w, *bias)))


# The bias added to each row of a product's fresh result, in place: NumPy's ``out += b``
# took 95 us on a (1024, 512) float32 result here, this loop 38, with the same bits (one
# addition an element). (PyTorch's ``addmm`` has MKL add it inside the product; OpenBLAS's
# ``gemm`` with beta 1 leaves its small-matrix kernels and ran slower than the two passes.)
_ADD_BIAS_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {
    const T *restrict b = (const T *)p[0];
    T *restrict c = (T *)p[1];
    const int64_t q = n[1];
    for (int64_t i = lo; i < hi; i++) {
        T *restrict row = c + i * q;
        #pragma omp simd
        for (int64_t j = 0; j < q; j++) row[j] += b[j];
    }
}
"""


def _add_bias(xp: Any, out: Any, b: Any) -> None:
    """``out += b`` over ``out``'s rows: the native loop for C-ordered float arrays, else NumPy's."""
    if cc.eager_native(xp) and out.flags.c_contiguous and b.flags.c_contiguous and out.dtype == b.dtype and \
            out.dtype in (np.float32, np.float64) and out.size:
        address = _typed_kernel(_ADD_BIAS_C, cc.C_TYPE_OF[out.dtype])
        if address is not None:
            q = b.shape[0]
            cc.caller()(1, address, cc.sizes_and_bytes(1, 1, [out.size // q, q], [b.nbytes, out.nbytes]), 0,
                        out.size // q, b, out)
            return
    out += b


def _linear(xp: Any, x: Any, w: Any, b: Any = None) -> Any:
    if x.ndim > 2 and x.flags.c_contiguous:  # every leading axis a batch of rows: one 2-d product (one
        rows = x.reshape(-1, x.shape[-1])  # GEMM, not one each)
        out = _matmul_kernel(xp, rows, w.T).reshape(*x.shape[:-1], w.shape[0])
    else:
        out = _matmul_kernel(xp, x, w.T) if x.ndim == 2 else xp.matmul(x, w.T)
    if b is not None:
        _add_bias(xp, out, b)  # (the product's output is fresh memory: added in place, no allocation)
    return out


# ``x @ w.T + b`` (PyTorch's nn.Linear, weight (out, in)) as one primitive, like PyTorch's
# addmm: one kernel forward, the bias added in place; a small win over the composite
# (docs/performance.md), one the compiler's fusion should retire.
def _linear_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """MatMul + Add"""
    product = [ins[0], g.node("Transpose", [ins[1]], perm=[1, 0])]
    if len(ins) == 3:
        g.node("Add", [g.node("MatMul", product), ins[2]], [out])
    else:
        g.node("MatMul", product, [out])


linear_p = Primitive("linear", _linear_rule, kernel=_linear, autocast="lower", flops=_product_flops,
                     onnx=_linear_onnx)


def _linear_batch(args: Any, dims: Any) -> tuple[Any, Any]:
    (x, w, *bias), (dx, dw, *db) = args, dims
    if dw is None and all(d is None for d in db):  # only the input batched: it is a batch of rows already
        return bind(linear_p, to_front(x, dx), w, *bias), 0
    if dx is None and dw is None:
        out, d = bind(linear_p, x, w), None
    else:
        w = to_front(w, dw)
        out, d = _matmul_batch((x, lax.moveaxis(w, (-1,), (-2,))), (dx, None if dw is None else 0))  # x @ w.T
    if not bias:
        return out, d
    return BINARY["add"].batch((out, bias[0]), (d, db[0]))  # (the bias broadcasts over the rows)


linear_p.batch = _linear_batch


def _linear_vjp_w(g: Any, ans: Any, x: Any, w: Any, *bias: Any) -> Any:
    rows = math.prod(g.shape[:-1])  # every leading axis is a batch of rows
    return lax.matmul(lax.matrix_transpose(lax.reshape(g, (rows, g.shape[-1]))), lax.reshape(x, (rows, x.shape[-1])))


def _linear_vjp_b(g: Any, ans: Any, x: Any, w: Any, b: Any) -> Any:
    return lax.reduce_sum(g, tuple(range(g.ndim - 1))) if g.ndim > 1 else g


defjvp(linear_p, lambda t, ans, x, w, *b: bind(linear_p, t, w), lambda t, ans, x, w, *b: bind(linear_p, x, t),
       lambda t, ans, x, w, b: t)
defvjp(linear_p, lambda g, ans, x, w, *b: bind(linear_p, g, lax.matrix_transpose(w)), _linear_vjp_w, _linear_vjp_b,
       saves=(0, 1))  # (x's cotangent g @ w as a linear: leading axes become rows of one product)


def parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, dict[str, int]]:
    """Split explicit or implicit einsum subscripts; check sizes. Ellipsis is expanded
    to fresh capital letters so every later rule works on plain labels."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise ShapeError(f"einsum: {subscripts!r} names {len(inputs)} operands, got {len(shapes)}")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    ell_ndim = max((len(s) - len(t.replace("...", "")) for t, s in zip(inputs, shapes) if "..." in t), default=0)
    ell = "".join(free[:ell_ndim])
    expanded = []
    for term, shape in zip(inputs, shapes):
        if "..." in term:
            n = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", ell[ell_ndim - n:] if n else "")
        if len(term) != len(shape):
            raise ShapeError(f"einsum: operand {term!r} has {len(term)} labels but shape {fmt_shape(shape)}")
        expanded.append(term)
    sizes: dict[str, int] = {}
    for term, shape in zip(expanded, shapes):
        for c, d in zip(term, shape):
            if sizes.get(c, d) != d and 1 not in (sizes[c], d):
                raise ShapeError(f"einsum: label {c!r} has sizes {sizes[c]} and {d} in {subscripts!r}")
            sizes[c] = max(sizes.get(c, d), d) if 1 in (sizes.get(c, d), d) else d
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {c: "".join(expanded).count(c) for c in sizes}
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    for c in out:
        if c not in sizes:
            raise ShapeError(f"einsum: output label {c!r} does not appear in the inputs of {subscripts!r}")
    return expanded, out, sizes


def _einsum_rule(*xs: ShapedArray, subscripts: str) -> ShapedArray:
    _same_dtype("einsum", *xs)
    _, out, sizes = parse_einsum(subscripts, [x.shape for x in xs])
    return ShapedArray(tuple(sizes[c] for c in out), xs[0].dtype, common_device("einsum", xs))


def _einsum(xp: Any, *xs: Any, subscripts: str) -> Any:
    if xs[0].dtype.name == "bfloat16":  # NumPy's einsum has no bfloat16 loop
        wide = [x.astype(np.float32) for x in xs]
        return xp.asarray(xp.einsum(subscripts, *wide, optimize=len(xs) > 2)).astype(xs[0].dtype)
    out = xp.asarray(xp.einsum(subscripts, *xs, optimize=len(xs) > 2))
    return out if out.base is None else out.copy()  # 'ij->ji' is a view of the input in NumPy


def _einsum_flops(args: tuple[Any, ...], out: Any) -> int:
    shapes = [tuple(a.shape) for a in args if hasattr(a, "shape")]
    last = out.shape[-1] if out.shape else 1
    return 2 * math.prod(out.shape) * max(1, math.prod(s[-1] for s in shapes if s) // max(1, last))


def _einsum_onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Einsum"""
    g.node("Einsum", ins, [out], equation=eqn.params["subscripts"])


einsum_p = Primitive("einsum", _einsum_rule, kernel=_einsum, autocast="lower", flops=_einsum_flops,
                     tags=frozenset({"dot"}), onnx=_einsum_onnx)


def _einsum_batch(args: Any, dims: Any, *, subscripts: str) -> tuple[Any, int]:
    """A new label for the batch axis, on every batched operand and first in the result."""
    shapes = [tuple(x.shape[:d]) + tuple(x.shape[d + 1:]) if d is not None else tuple(x.shape)
              for x, d in zip(args, dims)]
    inputs, out, _ = parse_einsum(subscripts, shapes)
    label = next(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 if c not in "".join(inputs) + out)
    spec = ",".join(label + s if d is not None else s for s, d in zip(inputs, dims)) + "->" + label + out
    return bind(einsum_p, *(to_front(x, d) for x, d in zip(args, dims)), subscripts=spec), 0


einsum_p.batch = _einsum_batch


def _einsum_vjp(i: int, g: Any, ans: Any, *xs: Any, subscripts: str) -> Any:
    """Cotangent of operand ``i``: an einsum of ``g`` with the other operands. Labels the
    operand repeats (a diagonal) or sums alone are rebuilt with identity matrices and
    broadcasting, so every subscript pattern is exact."""
    inputs, out, sizes = parse_einsum(subscripts, [tuple(x.shape) for x in xs])
    target = inputs[i]
    others = [j for j in range(len(xs)) if j != i]
    available = set(out).union(*(set(inputs[j]) for j in others))
    unique = "".join(dict.fromkeys(target))
    reachable = "".join(c for c in unique if c in available)
    spec = ",".join([out] + [inputs[j] for j in others]) + "->" + reachable
    r = bind(einsum_p, g, *(xs[j] for j in others), subscripts=spec)
    for pos, c in enumerate(unique):  # labels only this operand has: its elements all get g
        if c not in available:
            r = lax.expand_dims(r, (pos,))
    r = lax.broadcast_to(r, tuple(sizes[c] for c in unique))
    if len(unique) == len(target):
        return lax.transpose(r, tuple(unique.index(c) for c in target))
    fresh = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in subscripts)
    seen: set[str] = set()
    out_labels, eyes, eye_specs = [], [], []
    for c in target:
        if c in seen:  # a repeated label: a new axis tied to the first by an identity matrix
            d = next(fresh)
            eyes.append(lax.eye(g, sizes[c]))
            eye_specs.append(c + d)
            out_labels.append(d)
        else:
            seen.add(c)
            out_labels.append(c)
    return bind(einsum_p, r, *eyes, subscripts=",".join([unique] + eye_specs) + "->" + "".join(out_labels))


def _einsum_jvp(i: int, t: Any, ans: Any, *xs: Any, subscripts: str) -> Any:
    return bind(einsum_p, *(t if j == i else x for j, x in enumerate(xs)), subscripts=subscripts)


defjvp(einsum_p, each=_einsum_jvp)
defvjp(einsum_p, each=_einsum_vjp, saves="args")


def _square(op: str, a: ShapedArray, kinds: str = "f") -> None:
    require_kind(op, a.dtype, kinds, "a floating-point array" if kinds == "f" else "a floating-point or complex array")
    if len(a.shape) < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{op}: expected a (..., n, n) stack of square matrices, got shape {fmt_shape(a.shape)}")


def _upcast_linalg(fn: Any) -> Any:
    """NumPy's LAPACK wrappers take float32/float64 only; run halves in float32."""

    def kernel(xp: Any, *xs: Any, **params: Any) -> Any:
        low = xs[0].dtype.itemsize < 4
        out = fn(xp, *(x.astype(np.float32) for x in xs) if low else xs, **params)
        return out.astype(xs[0].dtype) if low else out

    return kernel


def _solve_rule(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    _square("linalg.solve", a, "fc")  # (holomorphic: its rules hold for complex matrices as they are)
    _same_dtype("linalg.solve", a, b)
    n = a.shape[-1]
    if len(b.shape) == 1:
        if b.shape[0] != n:
            raise ShapeError(f"linalg.solve: a has shape {fmt_shape(a.shape)} but b has shape {fmt_shape(b.shape)}")
        return ShapedArray(a.shape[:-1], a.dtype, common_device("linalg.solve", (a, b)))
    if len(b.shape) < 2 or b.shape[-2] != n:
        raise ShapeError(f"linalg.solve: a has shape {fmt_shape(a.shape)}; b needs shape ({n},) or (..., {n}, k), "
                         f"got {fmt_shape(b.shape)}")
    batch = broadcast_shapes("linalg.solve", a.shape[:-2], b.shape[:-2])
    return ShapedArray(batch + b.shape[-2:], a.dtype, common_device("linalg.solve", (a, b)))


solve_p = Primitive("linalg_solve", _solve_rule, kernel=_upcast_linalg(lambda xp, a, b: xp.linalg.solve(a, b)),
                   domain=MATRIX, autocast="float32")


def _solve_batch(prim: Primitive) -> Any:
    def rule(args: Any, dims: Any, **params: Any) -> tuple[Any, int]:
        (a, b), (da, db) = args, dims
        vector = db is not None and logical_ndim(b, db) == 1  # a batch of vectors: (B, n, 1) matrices
        if vector:
            b, db = lax.expand_dims(to_front(b, db), (2,)), 0
        ra, rb = logical_ndim(a, da), logical_ndim(b, db)
        lead = max(ra - 2, rb - (1 if rb == 1 else 2))
        out = bind(prim, with_batch(a, da, lead + 2), with_batch(b, db, lead + (1 if rb == 1 else 2)), **params)
        return (lax.squeeze(out, (out.ndim - 1,)) if vector else out), 0

    return rule


solve_p.batch = _solve_batch(solve_p)


def _solve(a: Any, b: Any) -> Any:
    return bind(solve_p, a, b)


def _solve_vjp_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    return _solve(lax.matrix_transpose(a), g)


def _solve_vjp_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    ct_b = _solve(lax.matrix_transpose(a), g)
    if b.ndim == 1:
        return -(lax.expand_dims(ct_b, (-1,)) * lax.expand_dims(ans, (-2,)))
    return -lax.matmul(ct_b, lax.matrix_transpose(ans))


defjvp(solve_p, lambda t, ans, a, b: -_solve(a, lax.matmul(t, ans)), lambda t, ans, a, b: _solve(a, t))
defvjp(solve_p, _solve_vjp_a, _solve_vjp_b, saves=(0, "ans"))


def _tri_solve(a: Any, b: Any, lower: bool = True, transpose_a: bool = False) -> Any:
    return bind(triangular_solve_p, a, b, lower=lower, transpose_a=transpose_a)


def _phi(x: Any) -> Any:
    """Lower triangle with the diagonal halved."""
    n = x.shape[-1]
    return lax.tril(x) - 0.5 * x * lax.eye(x, n)


def _cholesky_rule(a: ShapedArray) -> ShapedArray:
    _square("linalg.cholesky", a, "fc")
    return a


cholesky_p = Primitive("linalg_cholesky", _cholesky_rule,
                       kernel=_upcast_linalg(lambda xp, a: xp.linalg.cholesky(a)), domain=Domain(kind="spd"),
                       autocast="float32")
defbatched_matrices(cholesky_p, lambda r: (2,))


def _cholesky_jvp(t: Any, ans: Any, a: Any) -> Any:
    # tL = L phi(L^-1 tA L^-H), for Hermitian (symmetric) tangents tA
    inner = lax.matrix_conj_transpose(_tri_solve(ans, lax.matrix_conj_transpose(_tri_solve(ans, t))))
    return lax.matmul(ans, _phi(inner))


def _cholesky_vjp(g: Any, ans: Any, a: Any) -> Any:
    # the transpose of the JVP under the pairing Re(sum(u * v)): S = L^-T phi(L^T g) conj(L)^-1,
    # projected on Hermitian matrices as (S + S^H) / 2 (symmetric ones, for real matrices)
    p = _phi(lax.matmul(lax.matrix_transpose(ans), g))
    y = _tri_solve(ans, p, transpose_a=True)                                    # L^-T p
    conj_l = lax.conj(ans) if ans.dtype.kind == "c" else ans
    s = lax.matrix_transpose(_tri_solve(conj_l, lax.matrix_transpose(y), transpose_a=True))   # y conj(L)^-1
    return 0.5 * (s + lax.matrix_conj_transpose(s))


defjvp(cholesky_p, _cholesky_jvp)
defvjp(cholesky_p, _cholesky_vjp, saves="ans")


def _triangular_solve_rule(a: ShapedArray, b: ShapedArray, *, lower: bool, transpose_a: bool) -> ShapedArray:
    _square("triangular_solve", a, "fc")
    _same_dtype("triangular_solve", a, b)
    if len(b.shape) < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"triangular_solve: a has shape {fmt_shape(a.shape)} but b has shape {fmt_shape(b.shape)}")
    batch = broadcast_shapes("triangular_solve", a.shape[:-2], b.shape[:-2])
    return ShapedArray(batch + b.shape[-2:], a.dtype, common_device("triangular_solve", (a, b)))


def _triangular_solve(xp: Any, a: Any, b: Any, *, lower: bool, transpose_a: bool) -> Any:
    """Solve op(a) x = b for triangular a (masking the other triangle first)."""
    tri = xp.tril(a) if lower else xp.triu(a)
    if transpose_a:
        tri = xp.swapaxes(tri, -1, -2)
    return xp.linalg.solve(tri, b)


triangular_solve_p = Primitive("triangular_solve", _triangular_solve_rule,
                               kernel=_upcast_linalg(_triangular_solve), domain=MATRIX, autocast="float32")


triangular_solve_p.batch = _solve_batch(triangular_solve_p)


def _masked(a: Any, lower: bool) -> Any:
    return lax.tril(a) if lower else lax.triu(a)


def _tri_vjp_a(g: Any, ans: Any, a: Any, b: Any, *, lower: bool, transpose_a: bool) -> Any:
    ct_b = _tri_solve(a, g, lower, not transpose_a)
    ct = -lax.matmul(ans, lax.matrix_transpose(ct_b)) if transpose_a else -lax.matmul(ct_b, lax.matrix_transpose(ans))
    return _masked(ct, lower)


def _tri_jvp_a(t: Any, ans: Any, a: Any, b: Any, *, lower: bool, transpose_a: bool) -> Any:
    ta = _masked(t, lower)
    if transpose_a:
        ta = lax.matrix_transpose(ta)
    return -_tri_solve(a, lax.matmul(ta, ans), lower, transpose_a)


defjvp(triangular_solve_p, _tri_jvp_a,
       lambda t, ans, a, b, *, lower, transpose_a: _tri_solve(a, t, lower, transpose_a))
defvjp(triangular_solve_p, _tri_vjp_a,
       lambda g, ans, a, b, *, lower, transpose_a: _tri_solve(a, g, lower, not transpose_a), saves=(0, "ans"))
