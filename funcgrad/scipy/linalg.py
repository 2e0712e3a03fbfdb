"""``fg.scipy.linalg``: the ``scipy.linalg`` functions JAX's ``jax.scipy.linalg`` provides
most used, with SciPy's signatures, differentiable: ``cholesky(lower=)``,
``cho_factor``/``cho_solve``, ``solve_triangular`` and ``expm``.

SciPy's ``cholesky`` gives the *upper* factor by default (``lower=False``), where
``fg.linalg.cholesky`` (NumPy's, the array API's) gives the lower one. ``overwrite_*`` and
``check_finite`` are accepted: funcgrad arrays are never overwritten, and a non-finite
input gives non-finite results.
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..array import Array
from ..dtypes import result_type
from ..errors import ArgumentValueError, ShapeError
from ..primitives.core import bind
from ..primitives.linalg import triangular_solve_p
from ..transforms import stop_gradient

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "expm"]


def _adjoint(x: Any) -> Any:
    x = ops.swapaxes(x, -1, -2)
    return ops.conj(x) if x.dtype.kind == "c" else x


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The Cholesky factor of a Hermitian positive-definite ``a``: upper (``U^H U = a``) by
    default, as SciPy's, or lower (``L L^H = a``)."""
    factor = ops.linalg.cholesky(ops.asarray(a))
    return factor if lower else _adjoint(factor)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, bool]:
    """``(c, lower)`` for ``cho_solve``: the factor, with zeros in its other triangle (SciPy
    leaves arbitrary values there; nothing reads them)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """``x`` with ``a x = b``, given ``cho_factor(a)``."""
    c, lower = c_and_lower
    low = c if lower else _adjoint(c)
    y = solve_triangular(low, b, lower=True)
    return solve_triangular(low, y, lower=True, trans="C")


_TRANS = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """``x`` with ``op(a) x = b`` for triangular ``a`` (only its ``lower`` or upper triangle is
    read), ``op`` given by ``trans``: 0 or ``"N"`` none, 1 or ``"T"`` the transpose, 2 or
    ``"C"`` the conjugate transpose. ``b`` is a vector or a matrix (with batch axes)."""
    if trans not in _TRANS:
        raise ArgumentValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b = ops.asarray(a), ops.asarray(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"solve_triangular: a must be square, got shape {tuple(a.shape)}")
    if unit_diagonal:
        a = ops.where(ops.eye(a.shape[-1], dtype=bool), ops.ones_like(a), a)
    op = _TRANS[trans]
    if op == "C" and a.dtype.kind == "c":
        a = ops.conj(a)
    vector = b.ndim == a.ndim - 1
    if vector:
        b = ops.expand_dims(b, -1)
    common = result_type(a, b, 1.0)
    a, b = a.astype(common), b.astype(common)
    x = bind(triangular_solve_p, a, b, lower=bool(lower), transpose_a=op != "N")
    return ops.squeeze(x, -1) if vector else x


# Higham's Padé (13, 13) approximant of exp, with scaling and squaring (SIAM J. Matrix
# Anal. Appl. 26, 2005): its coefficients, and the largest 1-norm it is accurate for
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152
_MAX_SQUARINGS = 64


def expm(A: Any) -> Any:  # noqa: N803 - SciPy's name
    """The matrix exponential of a square ``A`` (batch axes allowed): Higham's scaling and
    squaring with the (13, 13) Padé approximant, differentiable."""
    a = ops.asarray(A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"expm: A must be square, got shape {tuple(a.shape)}")
    if a.dtype.kind not in "fc":
        a = a.astype(result_type(a.dtype, 1.0))
    norm = stop_gradient(ops.max(ops.sum(ops.abs(a), axis=-2), axis=-1))  # (the 1-norm; only picks the scaling)
    squarings = ops.maximum(ops.ceil(ops.log2(ops.maximum(norm, 1e-300) / _THETA13)), 0.0)
    scaled = a / ops.expand_dims(ops.exp2(squarings), (-1, -2))
    b = _PADE13
    eye = ops.broadcast_to(ops.eye(a.shape[-1], dtype=a.dtype), a.shape)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = scaled @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = ops.linalg.solve(v - u, v + u)
    # square where the scaling needs it: as often as the largest scaling, or (traced, when
    # that is unknown) as often as any could need
    times = int(ops.max(squarings).item()) if isinstance(squarings, Array) and squarings.size else _MAX_SQUARINGS
    for i in range(times):
        r = ops.where(ops.expand_dims(squarings > i, (-1, -2)), r @ r, r)
    return r
