"""Matrix decompositions: ``eigh``, ``svd``, ``qr``, ``slogdet`` and ``pinv``, each with
its derivative (real or complex matrices; stacks of them broadcast over the leading axes).

The rules are the standard ones (JAX's, and Giles' "extended collection of matrix
derivative results"): tangents through the decomposition's own factors, cotangents their
transposes under the pairing Re(sum(u * v)) of JAX's convention (so a complex rule has
conjugates where a real one has none). Where a factor is not unique (an eigenvector's
sign, or its phase) the derivative is that of the factor LAPACK returns in JAX's and
PyTorch's gauge; where it does not exist (repeated eigenvalues or singular values, when
the vectors' cotangents are not zero) it is infinite or NaN, as theirs are."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import complex64, complex128, component_dtype, float64
from ..errors import ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import to_front
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape
from .domains import MATRIX, Domain
from .linalg import solve_p

__all__ = ["eigh_p", "eig_p", "svd_p", "qr_p", "slogdet_p", "det_p", "cofactor_p", "pinv_p"]



def _matrices(op: str, a: ShapedArray, square: bool = False, kinds: str = "f") -> tuple[int, int]:
    require_kind(op, a.dtype, kinds, "a floating-point array" if kinds == "f" else "a floating-point or complex array")
    if len(a.shape) < 2 or (square and a.shape[-1] != a.shape[-2]):
        kind = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise ShapeError(f"{op}: expected a stack of {kind}, got shape {fmt_shape(a.shape)}")
    return a.shape[-2], a.shape[-1]


def _lapack(fn: Any) -> Any:
    """NumPy's LAPACK wrappers take float32/float64 only: halves run in float32, and every
    result comes back in the input's dtype (a real result of a complex matrix, such as S or
    log|det|, in its parts' dtype)."""

    def back(o: Any, a: Any) -> Any:
        return o.astype(a.real.dtype if a.dtype.kind == "c" and o.dtype.kind != "c" else a.dtype)

    def kernel(xp: Any, a: Any, **params: Any) -> Any:
        low = a.dtype.itemsize < 4
        outs = fn(xp, a.astype(np.float32) if low else a, **params)
        return tuple(back(o, a) for o in outs) if isinstance(outs, tuple) else back(outs, a)

    return kernel


def _batch_first(prim: Primitive, n_out: int) -> None:
    """The batch axis in front: the kernels work on the last two axes of a stack (``n_out``
    results; 0: one result, not a tuple)."""
    prim.batch = lambda args, dims, **p: (bind(prim, to_front(args[0], dims[0]), **p), (0,) * n_out if n_out else 0)


# -- small helpers on stacks of matrices ----------------------------------------------------

def _t(x: Any) -> Any:
    return lax.matrix_transpose(x)


_h = lax.matrix_conj_transpose


def _conj(x: Any) -> Any:
    return lax.conj(x) if x.dtype.kind == "c" else x


def _mm(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = lax.matmul(out, x)
    return out


def _diag(m: Any) -> Any:
    """The diagonal of the last two (square) axes."""
    return lax.reduce_sum(m * lax.eye(m, m.shape[-1]), (m.ndim - 1,))


def _diag_matrix(v: Any) -> Any:
    """Vectors (..., n) as diagonal matrices (..., n, n)."""
    return lax.expand_dims(v, (v.ndim,)) * lax.eye(v, v.shape[-1])


def _strictly_lower(x: Any) -> Any:
    n = x.shape[-1]
    i = lax.iota(x, n)
    return lax.select(lax.gt(lax.reshape(i, (n, 1)), lax.reshape(i, (1, n))), x, 0.0)


def _inverse_gaps(w: Any) -> Any:
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (the eigen- and singular-vector
    rules' coupling between directions)."""
    diff = lax.expand_dims(w, (w.ndim - 1,)) - lax.expand_dims(w, (w.ndim,))
    eye = lax.eye(w, w.shape[-1])
    return lax.select(lax.eq(eye, lax.const(w, 1.0)), 0.0, 1.0 / (diff + eye))


def _sym(x: Any) -> Any:
    return 0.5 * (x + _t(x))


# ---- eigh: eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices ------

def _eigh_rule(a: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    n, _ = _matrices("linalg.eigh", a, square=True, kinds="fc")
    return ShapedArray(a.shape[:-1], component_dtype(a.dtype), a.device), a


eigh_p = Primitive("linalg_eigh", _eigh_rule, kernel=_lapack(lambda xp, a: tuple(xp.linalg.eigh(a))),
                   multiple_results=True, domain=Domain(kind="spd"), autocast="float32")


# A complex eigenvector is unique up to a phase: the derivative is that of the gauge with a
# zero diagonal in V^H dV (JAX's and PyTorch's).

def _eigh_jvp(t: Any, ans: Any, a: Any) -> Any:
    # (the tangent is Hermitian, as the input: fg.linalg.eigh symmetrises what it is given)
    w, v = ans
    inner = _mm(_h(v), t, v)
    dw = _diag(inner)
    return (lax.real(dw) if a.dtype.kind == "c" else dw), lax.matmul(v, _like(_inverse_gaps(w), a) * inner)


def _eigh_vjp(g: Any, ans: Any, a: Any) -> Any:
    # the JVP's transpose under the pairing Re(sum(u * v)): S = conj(V) X V^T with
    # X = diag(gw) + F * (V^T gv), projected on Hermitian matrices as (S + S^H) / 2
    (gw, gv), (w, v) = g, ans
    inner = 0.0
    if gw is not None:
        inner = _diag_matrix(_like(gw, a))
    if gv is not None:  # (only the eigenvectors' cotangent meets the gaps: eigvalsh has none)
        inner = inner + _like(_inverse_gaps(w), a) * lax.matmul(_t(v), gv)
    s = _mm(_conj(v), inner, _t(v))
    return 0.5 * (s + _h(s))


defjvp(eigh_p, _eigh_jvp)
defvjp(eigh_p, _eigh_vjp, saves="ans")
_batch_first(eigh_p, 2)


# ---- eig: eigenvalues and right eigenvectors of general square matrices (complex) --------

def _complex_of(dtype: Any) -> Any:
    return complex128 if dtype in (float64, complex128) else complex64


def _eig_rule(a: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    _matrices("linalg.eig", a, square=True, kinds="fc")
    c = _complex_of(a.dtype)
    return ShapedArray(a.shape[:-1], c, a.device), ShapedArray(a.shape, c, a.device)


def _eig_kernel(xp: Any, a: Any) -> tuple[Any, Any]:
    """LAPACK's ``geev`` through NumPy: complex results whatever the eigenvalues (NumPy gives
    real arrays when they all are real), each eigenvector of unit norm."""
    c = np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64
    w, v = xp.linalg.eig(a.astype(np.float32) if a.dtype.itemsize < 4 else a)
    return w.astype(c), v.astype(c)


eig_p = Primitive("linalg_eig", _eig_rule, kernel=_eig_kernel, multiple_results=True, domain=MATRIX,
                  autocast="float32")


# JAX's derivative: dW = diag(V^-1 dA V), dV = V (F * V^-1 dA V), with each column's change
# along itself made purely imaginary (the eigenvectors keep unit norm; their phase is free).

def _eig_jvp(t: Any, ans: Any, a: Any) -> Any:
    w, v = ans
    m = bind(solve_p, v, lax.matmul(lax.convert(t, v.dtype), v))
    dv = lax.matmul(v, _inverse_gaps(w) * m)
    along = lax.real(lax.reduce_sum(_conj(v) * dv, (dv.ndim - 2,)))
    return _diag(m), dv - v * lax.convert(lax.expand_dims(along, (along.ndim - 1,)), v.dtype)


def _eig_vjp(g: Any, ans: Any, a: Any) -> Any:
    # the JVP's transpose under the pairing Re(sum(u * v)): V^-T X V^T with X = diag(gw)
    # + F * (V^T gv - V^T conj(V) diag(c)), c_j = Re(sum_i gv_ij V_ij)
    (gw, gv), (w, v) = g, ans
    vt = _t(v)
    x = _diag_matrix(gw) if gw is not None else lax.zeros(v, tuple(v.shape))
    if gv is not None:
        c = lax.convert(lax.real(lax.reduce_sum(gv * v, (v.ndim - 2,))), v.dtype)
        x = x + _inverse_gaps(w) * (lax.matmul(vt, gv) - lax.matmul(vt, _conj(v)) * lax.expand_dims(c, (c.ndim - 1,)))
    return bind(solve_p, vt, lax.matmul(x, vt))


defjvp(eig_p, _eig_jvp)
defvjp(eig_p, _eig_vjp, saves="ans")
_batch_first(eig_p, 2)


# ---- svd (reduced): u (..., m, k), s (..., k) descending, vh (..., k, n) ------------------

def _svd_rule(a: ShapedArray, *, full_matrices: bool) -> tuple[ShapedArray, ShapedArray, ShapedArray]:
    m, n = _matrices("linalg.svd", a, kinds="fc")
    k, batch = min(m, n), a.shape[:-2]
    cols, rows = (m, n) if full_matrices else (k, k)
    return (ShapedArray(batch + (m, cols), a.dtype, a.device),
            ShapedArray(batch + (k,), component_dtype(a.dtype), a.device),
            ShapedArray(batch + (rows, n), a.dtype, a.device))


svd_p = Primitive("linalg_svd", _svd_rule,
                  kernel=_lapack(lambda xp, a, *, full_matrices: tuple(xp.linalg.svd(a, full_matrices=full_matrices))),
                  multiple_results=True, domain=MATRIX, autocast="float32")


def _unique_factors(a: Any, full_matrices: bool) -> None:
    if full_matrices:
        raise NotImplementedError(f"linalg.svd(full_matrices=True) of a non-square matrix (shape "
                                  f"{fmt_shape(tuple(a.shape))}) has no derivative: the completed columns are not "
                                  "unique (as in JAX); use full_matrices=False")


def _like(x: Any, a: Any) -> Any:
    """A real ``x`` in ``a``'s (complex) dtype, for products with complex factors."""
    return lax.convert(x, a.dtype) if x.dtype is not a.dtype else x


# Complex matrices: the factors are unique up to a phase per singular pair; the derivative
# is that of the gauge in which U^H dU has a zero real diagonal and V^H dV a zero diagonal
# (JAX's and PyTorch's choice: the term i Im(diag(U^H dA V)) / S below). A loss that
# depends on the phases is not a function of the matrix (use S, |U|, U S Vh...).

def _svd_jvp(t: Any, ans: Any, a: Any, *, full_matrices: bool) -> Any:
    _unique_factors(a, full_matrices)
    u, s, vh = ans
    uh, v = _h(u), _h(vh)
    ds_full = _mm(uh, t, v)                                      # U^H dA V
    ds = _diag(ds_full)
    f = _like(_inverse_gaps(s * s), a)
    s_row = _like(lax.expand_dims(s, (s.ndim - 1,)), a)          # s_j along the columns
    s_col = _like(lax.expand_dims(s, (s.ndim,)), a)              # s_i along the rows
    dss, sds = ds_full * s_row, s_col * ds_full
    inner_u = f * (dss + _h(dss))
    if a.dtype.kind == "c":  # the phase gauge's diagonal
        inner_u = inner_u + _diag_matrix(_like(lax.imag(ds), a) * lax.const(ds, 1j) / _like(s, a))
        ds = lax.real(ds)
    du = lax.matmul(u, inner_u)
    dv = lax.matmul(v, f * (sds + _h(sds)))
    m, n = a.shape[-2], a.shape[-1]
    if m > n:  # the part of dA outside U's columns
        dav = lax.matmul(t, v)
        du = du + (dav - lax.matmul(u, lax.matmul(uh, dav))) / s_row
    if n > m:
        dau = lax.matmul(_h(t), u)
        dv = dv + (dau - lax.matmul(v, lax.matmul(vh, dau))) / s_row
    return du, ds, _h(dv)


def _svd_vjp(g: Any, ans: Any, a: Any, *, full_matrices: bool) -> Any:
    # For complex matrices the formula below is PyTorch's, on the conjugated cotangents; its
    # conjugate is the transpose of the JVP under the pairing Re(sum(u * v)) (JAX's)
    _unique_factors(a, full_matrices)
    (gu, gs, gvh), (u, s, vh) = g, ans
    cplx = a.dtype.kind == "c"
    if cplx:
        gu = None if gu is None else lax.conj(gu)
        gvh = None if gvh is None else lax.conj(gvh)
    uh, v = _h(u), _h(vh)
    m, n = a.shape[-2], a.shape[-1]
    inner = _diag_matrix(_like(gs, a)) if gs is not None else 0.0
    s_mat = _diag_matrix(_like(s, a))
    s_row = _like(lax.expand_dims(s, (s.ndim - 1,)), a)
    if gu is not None or gvh is not None:
        f = _like(_inverse_gaps(s * s), a)
    extra = 0.0
    if gu is not None:
        uhgu = lax.matmul(uh, gu)
        j = f * uhgu
        inner = inner + lax.matmul(j + _h(j), s_mat)
        if cplx:  # the phase gauge's diagonal
            inner = inner + _diag_matrix(_like(lax.imag(_diag(uhgu)), a) * lax.const(uhgu, 1j) / _like(s, a))
        if m > n:
            extra = lax.matmul((gu - lax.matmul(u, uhgu)) / s_row, vh)
    if gvh is not None:
        gv = _h(gvh)
        k = f * lax.matmul(vh, gv)
        inner = inner + lax.matmul(s_mat, k + _h(k))
        if n > m:
            ortho = gv - lax.matmul(v, lax.matmul(vh, gv))
            extra = extra + lax.matmul(u, _h(ortho / s_row))
    grad = _mm(u, inner, vh) + extra
    return lax.conj(grad) if cplx else grad


defjvp(svd_p, _svd_jvp)
defvjp(svd_p, _svd_vjp, saves="ans")
_batch_first(svd_p, 3)


# ---- qr: q (..., m, k), r (..., k, n) reduced; (..., m, m), (..., m, n) complete -------------

def _qr_rule(a: ShapedArray, *, complete: bool = False) -> tuple[ShapedArray, ShapedArray]:
    m, n = _matrices("linalg.qr", a, kinds="fc")
    k, batch = (m if complete else min(m, n)), a.shape[:-2]
    return ShapedArray(batch + (m, k), a.dtype, a.device), ShapedArray(batch + (k, n), a.dtype, a.device)


qr_p = Primitive("linalg_qr", _qr_rule, multiple_results=True, domain=MATRIX, autocast="float32", kernel=_lapack(
    lambda xp, a, *, complete=False: tuple(xp.linalg.qr(a, mode="complete" if complete else "reduced"))))


def _wide(a: Any, complete: bool) -> None:
    if a.shape[-2] < a.shape[-1]:
        raise NotImplementedError(f"linalg.qr: the derivative needs at least as many rows as columns (R square and "
                                  f"invertible), as in JAX; got shape {fmt_shape(tuple(a.shape))}")
    if complete and a.shape[-2] > a.shape[-1]:
        raise NotImplementedError(f"linalg.qr(mode='complete') of a tall matrix (shape {fmt_shape(tuple(a.shape))}) "
                                  "has no derivative: the completed columns of Q are not unique; use mode='reduced'")


def _right_solve(x: Any, r: Any) -> Any:
    """x @ r^-1 for upper-triangular r: (r^T \\ x^T)^T."""
    return _t(bind(solve_p, _t(r), _t(x)))


# Complex matrices: R's diagonal is real (LAPACK's Householder reflections make it so), and
# the derivative keeps it real, which fixes Q's phases: diag(Q^H dQ) is imaginary (JAX's choice).

def _qr_jvp(t: Any, ans: Any, a: Any, *, complete: bool = False) -> Any:
    _wide(a, complete)
    q, r = ans
    x = _right_solve(t, r)                                       # dA R^-1
    y = lax.matmul(_h(q), x)
    lower = _strictly_lower(y)
    omega = lower - _h(lower)                                    # skew-Hermitian
    if a.dtype.kind == "c":
        omega = omega + _diag_matrix(_like(lax.imag(_diag(y)), a) * lax.const(y, 1j))
    return lax.matmul(q, omega - y) + x, lax.matmul(y - omega, r)


def _qr_vjp(g: Any, ans: Any, a: Any, *, complete: bool = False) -> Any:
    # the JVP's transpose under the pairing Re(sum(u * v)): M = Q^T gQ - gR R^T,
    # W = strictly_lower(M - M^H) (+ i Im diag(M)) - M, and dA's cotangent (conj(Q) W + gQ) R^-T
    _wide(a, complete)
    (gq, gr), (q, r) = g, ans
    m = 0.0
    if gq is not None:
        m = lax.matmul(_t(q), gq)
    if gr is not None:
        m = m - lax.matmul(gr, _t(r))
    z = _strictly_lower(m - _h(m)) - m
    if a.dtype.kind == "c":
        z = z + _diag_matrix(_like(lax.imag(_diag(m)), a) * lax.const(m, 1j))
    c = lax.matmul(_conj(q), z) + (gq if gq is not None else 0.0)
    return _t(bind(solve_p, r, _t(c)))                          # C R^-T


defjvp(qr_p, _qr_jvp)
defvjp(qr_p, _qr_vjp, saves="both")
_batch_first(qr_p, 2)


# ---- slogdet: the determinant's sign and the log of its absolute value -------------------

def _slogdet_rule(a: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    _matrices("linalg.slogdet", a, square=True, kinds="fc")
    real = component_dtype(a.dtype)
    return ShapedArray(a.shape[:-2], a.dtype, a.device), ShapedArray(a.shape[:-2], real, a.device)


slogdet_p = Primitive("linalg_slogdet", _slogdet_rule, kernel=_lapack(lambda xp, a: tuple(xp.linalg.slogdet(a))),
                      multiple_results=True, domain=MATRIX, autocast="float32")


# With T = tr(A^-1 dA): d log|det A| = Re T, and a complex sign turns by i Im T (a real
# sign is constant). The cotangent of A is (g_log + i Im(g_sign sign)) A^-T, the transpose
# of that map under the pairing Re(sum(u * v)) of JAX's convention.

def _slogdet_jvp(t: Any, ans: Any, a: Any) -> Any:
    sign, logabsdet = ans
    trace = lax.reduce_sum(_diag(bind(solve_p, a, t)), (sign.ndim,))
    if a.dtype.kind != "c":
        return lax.zeros(sign, tuple(sign.shape)), trace
    turn = lax.imag(trace)
    return sign * lax.convert(turn, a.dtype) * lax.const(sign, 1j), lax.real(trace)


def _slogdet_vjp(g: Any, ans: Any, a: Any) -> Any:
    gsign, glog = g
    complex_ = a.dtype.kind == "c"
    if glog is None and (gsign is None or not complex_):
        return None
    weight = lax.convert(glog, a.dtype) if glog is not None else lax.zeros(ans[0], tuple(ans[0].shape))
    if complex_ and gsign is not None:
        weight = weight + lax.convert(lax.imag(gsign * ans[0]), a.dtype) * lax.const(ans[0], 1j)
    eye = lax.broadcast_to(lax.eye(a, a.shape[-1]), tuple(a.shape))
    return lax.expand_dims(weight, (weight.ndim, weight.ndim + 1)) * bind(solve_p, _t(a), eye)   # w A^-T


defjvp(slogdet_p, _slogdet_jvp)
defvjp(slogdet_p, _slogdet_vjp, saves="both")
_batch_first(slogdet_p, 2)


# ---- det and the cofactor matrix: derivatives that hold at singular matrices -------------
#
# d det(A) = sum(C * dA), C the cofactor matrix (the adjugate's transpose), which exists at
# every matrix: from the SVD A = U S Vh, C = det(U) det(Vh) conj(U) diag(p) conj(Vh) with
# p_i the product of the singular values other than s_i. (det * inv(A).mT, what slogdet's
# rules give, is NaN where A is singular; JAX and PyTorch give the adjugate there too.)
# C's own derivative, dC = C tr(A^-1 dA) - C (A^-1 dA)^T, needs A^-1: a second derivative at
# a singular matrix raises LinAlgError, naming the solve.

def _det_rule(a: ShapedArray) -> ShapedArray:
    _matrices("linalg.det", a, square=True, kinds="fc")
    return ShapedArray(a.shape[:-2], a.dtype, a.device)


def _cofactor_rule(a: ShapedArray) -> ShapedArray:
    _matrices("linalg.cofactor", a, square=True, kinds="fc")
    return ShapedArray(a.shape, a.dtype, a.device)


def _cofactor_kernel(xp: Any, a: Any) -> Any:
    n = a.shape[-1]
    if n == 0:
        return xp.zeros_like(a)
    u, s, vh = xp.linalg.svd(a)
    ones = xp.ones((*s.shape[:-1], 1), s.dtype)
    before = xp.cumprod(xp.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)  # s_0 ... s_(i-1)
    after = xp.flip(xp.cumprod(xp.concatenate([ones, xp.flip(s, -1)[..., :-1]], axis=-1), axis=-1), -1)
    others = before * after  # the product of every singular value but s_i
    phase = xp.linalg.det(u) * xp.linalg.det(vh)
    return phase[..., None, None] * (xp.conj(u) * others[..., None, :]) @ xp.conj(vh)


det_p = Primitive("linalg_det", _det_rule, kernel=_lapack(lambda xp, a: xp.linalg.det(a)), domain=MATRIX,
                  autocast="float32")
cofactor_p = Primitive("linalg_cofactor", _cofactor_rule, kernel=_lapack(_cofactor_kernel), domain=MATRIX,
                       autocast="float32")


def _det_jvp(t: Any, ans: Any, a: Any) -> Any:
    return lax.reduce_sum(bind(cofactor_p, a) * t, (a.ndim - 2, a.ndim - 1))


def _det_vjp(g: Any, ans: Any, a: Any) -> Any:
    return lax.expand_dims(g, (g.ndim, g.ndim + 1)) * bind(cofactor_p, a)


def _cofactor_jvp(t: Any, ans: Any, a: Any) -> Any:
    x = bind(solve_p, a, t)                                           # A^-1 dA
    trace = lax.reduce_sum(_diag(x), (x.ndim - 2,))
    return ans * lax.expand_dims(trace, (trace.ndim, trace.ndim + 1)) - lax.matmul(ans, _t(x))


def _cofactor_vjp(g: Any, ans: Any, a: Any) -> Any:
    weight = lax.reduce_sum(g * ans, (a.ndim - 2, a.ndim - 1))
    inv_t = bind(solve_p, _t(a), lax.broadcast_to(lax.eye(a, a.shape[-1]), tuple(a.shape)))   # A^-T
    return lax.expand_dims(weight, (weight.ndim, weight.ndim + 1)) * inv_t - lax.matmul(inv_t, lax.matmul(_t(g), ans))


defjvp(det_p, _det_jvp)
defvjp(det_p, _det_vjp, saves="args")
_batch_first(det_p, 0)
defjvp(cofactor_p, _cofactor_jvp)
defvjp(cofactor_p, _cofactor_vjp, saves="both")
_batch_first(cofactor_p, 0)


# ---- pinv: the Moore-Penrose pseudo-inverse ---------------------------------------------

def _pinv_rule(a: ShapedArray, *, rtol: float | None) -> ShapedArray:
    m, n = _matrices("linalg.pinv", a, kinds="fc")
    return ShapedArray(a.shape[:-2] + (n, m), a.dtype, a.device)


def _pinv(xp: Any, a: Any, *, rtol: float | None) -> Any:
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    cutoff = (rtol if rtol is not None else max(a.shape[-2:]) * np.finfo(a.dtype).eps) * s.max(-1, keepdims=True)
    inverse = xp.where(s > cutoff, 1.0 / xp.where(s > cutoff, s, 1.0), 0.0).astype(a.dtype)
    return xp.matmul(xp.conj(xp.swapaxes(vh, -1, -2)) * inverse[..., None, :], xp.conj(xp.swapaxes(u, -1, -2)))


pinv_p = Primitive("linalg_pinv", _pinv_rule, kernel=_lapack(_pinv), domain=MATRIX, autocast="float32")


def _pinv_jvp(t: Any, ans: Any, a: Any, *, rtol: float | None) -> Any:
    # Golub & Pereyra: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
    p = ans
    rows, cols = a.shape[-2], a.shape[-1]
    left = lax.eye(a, rows) - lax.matmul(a, p)
    right = lax.eye(a, cols) - lax.matmul(p, a)
    return -_mm(p, t, p) + _mm(p, _h(p), _h(t), left) + _mm(right, _h(t), _h(p), p)


def _pinv_vjp(g: Any, ans: Any, a: Any, *, rtol: float | None) -> Any:
    # the JVP's transpose under the pairing Re(sum(u * v)): a term through dA^H pairs with
    # the conjugate of its real-matrix form
    p = ans
    rows, cols = a.shape[-2], a.shape[-1]
    left = lax.eye(a, rows) - lax.matmul(a, p)
    right = lax.eye(a, cols) - lax.matmul(p, a)
    return -_mm(_t(p), g, _t(p)) + _conj(_mm(left, _t(g), p, _h(p))) + _conj(_mm(_h(p), p, _t(g), right))


defjvp(pinv_p, _pinv_jvp)
defvjp(pinv_p, _pinv_vjp, saves="both")
_batch_first(pinv_p, 0)

