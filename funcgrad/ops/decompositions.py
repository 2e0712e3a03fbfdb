"""``fg.linalg``'s decompositions and what is built on them: ``eigh``, ``eigvalsh``, ``svd``,
``svdvals``, ``qr``, ``slogdet``, ``det``, ``pinv``, ``matrix_rank``, ``matrix_power``,
``multi_dot``, and the array API's ``trace``, ``diagonal`` and ``cross`` (on the last axes).
They live in ``fg.linalg`` only, as in NumPy; results are the array API's named tuples."""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

from .. import dtypes as _dt
from ..errors import ArgumentValueError, DTypeError, ShapeError
from ..primitives.checks import as_int
from ..primitives.core import bind, fmt_shape
from ..primitives.decompositions import det_p, eig_p, eigh_p, pinv_p, qr_p, slogdet_p, svd_p
from .creation import eye
from .elementwise import as_operand, cast_to, where
from .linalg import inv, matmul
from .numpy_compat import cross as _cross
from .reduce import max, sum
from .shape import broadcast_to, expand_dims, tril, triu
from .shape import diagonal as _diagonal

__all__ = ["eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "qr", "slogdet", "det", "pinv", "matrix_rank",
           "matrix_power", "multi_dot", "trace", "diagonal", "cross", "EigResult", "EighResult", "SVDResult",
           "QRResult", "SlogdetResult"]


class EigResult(NamedTuple):
    """``eig``'s result: the eigenvalues and the eigenvectors as columns (complex).

    Example:
        >>> r = fg.linalg.eig(fg.asarray([[2.0, 0.0], [0.0, 1.0]]))
        >>> r.eigenvalues.tolist(), r._fields
        ([(2+0j), (1+0j)], ('eigenvalues', 'eigenvectors'))
    """

    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    """``eigh``'s result: ascending eigenvalues and the eigenvectors as columns.

    Example:
        >>> values, vectors = fg.linalg.eigh(fg.asarray([[2.0, 0.0], [0.0, 1.0]]))
        >>> values.tolist(), vectors.tolist()
        ([1.0, 2.0], [[0.0, 1.0], [1.0, 0.0]])
    """

    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    """``svd``'s result: ``U``, the singular values (descending) and ``Vh``.

    Example:
        >>> r = fg.linalg.svd(fg.asarray([[3.0, 0.0], [0.0, 2.0]]))
        >>> r.S.tolist(), r._fields
        ([3.0, 2.0], ('U', 'S', 'Vh'))
    """

    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    """``qr``'s result: orthonormal ``Q`` and upper-triangular ``R``.

    Example:
        >>> q, r = fg.linalg.qr(fg.asarray([[3.0, 0.0], [4.0, 5.0]], dtype=fg.float64))
        >>> (q @ r).round(6).tolist()
        [[3.0, 0.0], [4.0, 5.0]]
    """

    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the determinant's sign and the log of its absolute value.

    Example:
        >>> sign, logabsdet = fg.linalg.slogdet(fg.asarray([[2.0, 0.0], [0.0, -3.0]], dtype=fg.float64))
        >>> sign.item(), round(logabsdet.item(), 4)
        (-1.0, 1.7918)
    """

    sign: Any
    logabsdet: Any


def _matrices(op: str, x: Any, square: bool = False, complex_ok: bool = False) -> Any:
    """``x`` as a floating stack of matrices, checked."""
    x = as_operand(x)
    if x.dtype.kind == "c" and not complex_ok:
        raise DTypeError(f"linalg.{op}: complex matrices are not supported (the decompositions take real "
                         f"floating-point matrices), got {x.dtype}")
    if x.dtype.kind not in "fc":
        x = cast_to(x, _dt.default_float)
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise ShapeError(f"linalg.{op}: expected a stack of {kind}, got shape {fmt_shape(tuple(x.shape))}")
    return x


def _symmetric(x: Any) -> Any:
    return (x + x.mH) / 2


def eig(x: Any, /) -> EigResult:
    """Eigenvalues and right eigenvectors (unit columns) of general square matrices, complex
    (NumPy's ``linalg.eig``, in LAPACK's order). Differentiable as JAX's: an eigenvector's
    phase is free, so only what does not depend on it (``abs(v)``, ``w``) has a meaning."""
    w, v = bind(eig_p, _matrices("eig", x, square=True, complex_ok=True))
    return EigResult(w, v)


def eigvals(x: Any, /) -> Any:
    """The eigenvalues of general square matrices, complex."""
    return eig(x).eigenvalues


def eigh(x: Any, /, UPLO: str | None = None, *, symmetrize_input: bool = True) -> EighResult:  # noqa: N803
    """Eigenvalues (ascending, real) and eigenvectors of symmetric (Hermitian) matrices. The
    input is symmetrised first, ``(x + x.mH) / 2``, as JAX's: the gradient is then a
    symmetric (Hermitian) matrix. With ``symmetrize_input=False`` only the triangle
    ``UPLO`` names (``"L"``, NumPy's default, or ``"U"``) is read, as NumPy reads it."""
    if UPLO not in (None, "L", "U"):
        raise ArgumentValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    x = _matrices("eigh", x, square=True, complex_ok=True)
    if symmetrize_input:
        x = _symmetric(x)
    else:  # the named triangle, mirrored
        strict = tril(x, -1) if UPLO != "U" else triu(x, 1)
        x = strict + strict.mH + (tril(x) - tril(x, -1))
    w, v = bind(eigh_p, x)
    return EighResult(w, v)


def eigvalsh(x: Any, /, UPLO: str | None = None) -> Any:  # noqa: N803
    """The eigenvalues of symmetric matrices, ascending (the input symmetrised, as ``eigh``;
    ``UPLO`` is accepted as NumPy's and checked)."""
    return eigh(x, UPLO).eigenvalues


def svd(x: Any, /, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """``x = U @ diag(S) @ Vh``, the singular values descending. ``full_matrices=True`` (the
    array API's and NumPy's default) completes U or Vh to square matrices: that completion is
    not unique, so only ``full_matrices=False`` (or a square input) is differentiable.
    ``compute_uv=False`` gives the singular values alone (``svdvals``); ``hermitian`` is
    accepted, as NumPy's hint (the general decomposition is computed either way)."""
    if not compute_uv:
        return svdvals(x)
    x = _matrices("svd", x, complex_ok=True)
    full = bool(full_matrices) and x.shape[-2] != x.shape[-1]
    u, s, vh = bind(svd_p, x, full_matrices=full)
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> Any:
    """The singular values, descending."""
    return bind(svd_p, _matrices("svdvals", x, complex_ok=True), full_matrices=False)[1]


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """``x = Q @ R`` with orthonormal columns in Q and R upper-triangular: ``mode="reduced"``
    (Q has min(m, n) columns) or ``"complete"`` (Q square). Differentiable when there are at
    least as many rows as columns, as in JAX (and, complete, only for square matrices)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = bind(qr_p, _matrices("qr", x, complex_ok=True), complete=mode == "complete")
    return QRResult(q, r)


def slogdet(x: Any, /) -> SlogdetResult:
    """The sign of the determinant and the log of its absolute value (no overflow)."""
    sign, logabsdet = bind(slogdet_p, _matrices("slogdet", x, square=True, complex_ok=True))
    return SlogdetResult(sign, logabsdet)


def det(x: Any, /) -> Any:
    """The determinant. Its gradient is the cofactor matrix (the adjugate's transpose), at a
    singular matrix too, as in JAX and PyTorch.

    Args:
        x: square matrices, (..., n, n), real or complex.

    Returns:
        One determinant per matrix.

    Example:
        >>> a = fg.asarray([[2.0, 1.0], [1.0, 3.0]])
        >>> fg.linalg.det(a).item()
        5.0
        >>> [[round(v, 4) for v in row] for row in fg.grad(fg.linalg.det)(a).tolist()]   # the cofactors
        [[3.0, -1.0], [-1.0, 2.0]]
    """
    return bind(det_p, _matrices("det", x, square=True, complex_ok=True))


def pinv(x: Any, /, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse; singular values below ``rtol`` times the largest
    count as zero (default: ``max(m, n) * eps``; ``rcond`` is NumPy's name). ``hermitian`` (NumPy's) is
    accepted: the SVD serves any matrix."""
    if rcond is not None and rtol is not None:
        raise TypeError("linalg.pinv: give rtol or rcond (NumPy's name), not both")
    tol = rtol if rtol is not None else rcond
    x = _matrices("pinv", x, complex_ok=True)
    if getattr(tol, "ndim", 0):  # one tolerance per matrix of the stack: through the SVD
        u, s, vh = svd(x, full_matrices=False)
        cutoff = expand_dims(tol, -1) * max(s, axis=-1, keepdims=True) if s.shape[-1] else 0.0
        kept = s > cutoff
        s_inv = where(kept, 1.0 / where(kept, s, 1.0), 0.0)
        return matmul(vh.mH * expand_dims(s_inv, -2), u.mH)
    return bind(pinv_p, x, rtol=None if tol is None else float(tol))


def matrix_rank(x: Any, /, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """How many singular values exceed ``rtol`` times the largest (default ``max(m, n) * eps``),
    or the absolute ``tol`` (NumPy's). ``hermitian`` is accepted,
    as ``pinv``'s."""
    x = _matrices("matrix_rank", x, complex_ok=True)
    s = svdvals(x)
    if tol is not None:  # (a tolerance per matrix stands beside that matrix's singular values)
        cutoff = expand_dims(tol, -1) if getattr(tol, "ndim", 0) else tol
    else:
        relative = rtol if rtol is not None else builtins.max(tuple(x.shape[-2:])) * _dt.finfo(x.dtype).eps
        relative = expand_dims(relative, -1) if getattr(relative, "ndim", 0) else relative
        cutoff = max(s, axis=-1, keepdims=True) * relative if s.shape[-1] else 0.0
    return sum(s > cutoff, axis=-1)


def matrix_power(x: Any, /, n: int) -> Any:
    """``x`` multiplied by itself ``n`` times (by repeated squaring); ``n = 0`` gives the
    identity, a negative ``n`` powers of the inverse. Integer and bool matrices keep their
    dtype for ``n >= 0``, as NumPy's."""
    n = as_int("linalg.matrix_power", n, "n", minimum=None)
    x = as_operand(x)
    if n < 0 or x.dtype.kind not in "iub":
        x = _matrices("matrix_power", x, square=True, complex_ok=True)
    elif x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"linalg.matrix_power: expected a stack of square matrices (..., n, n), got shape "
                         f"{fmt_shape(tuple(x.shape))}")
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), tuple(x.shape))
    if n < 0:
        x, n = inv(x), -n
    result = None
    while n:
        if n & 1:
            result = x if result is None else matmul(result, x)
        n >>= 1
        if n:
            x = matmul(x, x)
    return result


def multi_dot(arrays: Any, /) -> Any:
    """The product of a chain of matrices (the first and last may be vectors)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least two arrays, got {len(arrays)}")
    out = arrays[0]
    for a in arrays[1:]:
        out = matmul(out, a)
    return out


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum along diagonal ``offset`` of the last two axes (the array API's)."""
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"linalg.trace: expected matrices (..., m, n), got shape {fmt_shape(tuple(x.shape))}")
    return sum(_diagonal(x, offset, -2, -1), axis=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """Diagonal ``offset`` of the last two axes (the array API's; ``fg.diagonal`` is NumPy's)."""
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"linalg.diagonal: expected matrices (..., m, n), got shape {fmt_shape(tuple(x.shape))}")
    return _diagonal(x, offset, -2, -1)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (the array API's)."""
    return _cross(x1, x2, axis=axis)
