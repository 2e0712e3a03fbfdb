"""The mixed-precision policy: what ``fg.autocast`` does to each primitive.

``"lower"``: the primitive runs in the autocast dtype (bfloat16 or float16): its
floating inputs are cast down first. These are the products, where the low dtype's speed
and memory savings are (PyTorch's autocast lists matmul, linear, conv, bmm and einsum).
``"float32"``: the primitive runs in float32: low-precision inputs are cast up first.
These are the ones whose results lose too much in 8 bits of mantissa: sums and products
over many elements (reductions, cumulative sums, the softmax and cross-entropy's
logsumexp), exp/log/pow and their relatives, and the linear-algebra decompositions and
FFTs (which NumPy computes in float32 anyway).
Every other primitive runs in the dtype its inputs have. float64 inputs are never cast.
"""

from __future__ import annotations

AUTOCAST_POLICY: dict[str, str] = {
    **dict.fromkeys(("matmul", "linear", "einsum"), "lower"),
    **dict.fromkeys((
        "reduce_sum", "reduce_prod", "cumsum", "cumprod", "logsumexp", "softmax_cross_entropy",
        "softmax_cross_entropy_grad", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "rsqrt",
        "reciprocal", "arcsin", "arccos", "sinh", "cosh", "tan", "linalg_cholesky", "linalg_eigh", "linalg_pinv",
        "linalg_qr", "linalg_slogdet", "linalg_solve", "linalg_svd", "triangular_solve", "fft",
    ), "float32"),
}

__all__ = ["AUTOCAST_POLICY"]
