"""``fg.linalg``: the array API linear-algebra extension, differentiable, with NumPy's
``numpy.linalg`` names (``multi_dot``, ``eig``, ``eigh``, ``svd`` ...). A module, so ``from
funcgrad.linalg import solve`` works as ``from numpy.linalg import solve`` does."""

from __future__ import annotations

from .ops.decompositions import (
                                 EighResult,
                                 EigResult,
                                 QRResult,
                                 SlogdetResult,
                                 SVDResult,
                                 cross,
                                 det,
                                 diagonal,
                                 eig,
                                 eigh,
                                 eigvals,
                                 eigvalsh,
                                 matrix_power,
                                 matrix_rank,
                                 multi_dot,
                                 pinv,
                                 qr,
                                 slogdet,
                                 svd,
                                 svdvals,
                                 trace,
)
from .ops.linalg import (
                                 cholesky,
                                 inv,
                                 matmul,
                                 matrix_norm,
                                 matrix_transpose,
                                 norm,
                                 outer,
                                 solve,
                                 tensordot,
                                 vecdot,
                                 vector_norm,
)

__all__ = ["norm", "vector_norm", "matrix_norm", "solve", "inv", "cholesky", "matmul", "matrix_transpose", "vecdot",
           "tensordot", "outer", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "qr", "slogdet", "det",
           "pinv", "matrix_rank", "matrix_power", "multi_dot", "trace", "diagonal", "cross", "EigResult", "EighResult",
           "SVDResult", "QRResult", "SlogdetResult"]
