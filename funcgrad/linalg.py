"""``fg.linalg``: the array API linear-algebra extension, differentiable, with NumPy's
``numpy.linalg`` names (``multi_dot``, ``eig``, ``eigh``, ``svd`` ...). A module, so ``from
funcgrad.linalg import solve`` works as ``from numpy.linalg import solve`` does."""

from __future__ import annotations

import inspect

from .ops import (  # (the fg.* functions themselves: their errors name them, their docstrings are the reference's)
    cholesky,
    inv,
    matmul,
    matrix_norm,
    norm,
    outer,
    solve,
    tensordot,
    vecdot,
    vector_norm,
)
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
from .ops.linalg import matrix_transpose
from .ops.reference_docs import LINALG, linalg_doc

__all__ = ["norm", "vector_norm", "matrix_norm", "solve", "inv", "cholesky", "matmul", "matrix_transpose", "vecdot",
           "tensordot", "outer", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "qr", "slogdet", "det",
           "pinv", "matrix_rank", "matrix_power", "multi_dot", "trace", "diagonal", "cross", "EigResult", "EighResult",
           "SVDResult", "QRResult", "SlogdetResult"]

# The reference sections of the functions only fg.linalg has (or has in the array API's form).
for _name in LINALG:
    _fn = globals()[_name]
    _fn.__doc__ = linalg_doc(_name, _fn.__doc__ or "", list(inspect.signature(_fn).parameters))
del _name, _fn
