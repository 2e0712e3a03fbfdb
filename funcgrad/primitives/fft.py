"""Discrete Fourier transforms: one primitive, ``fft``, of four kinds over any set of axes.

``fft_type`` is ``"fft"`` or ``"ifft"`` (complex to complex), ``"rfft"`` (real to the
non-negative half of the spectrum) or ``"irfft"`` (that half back to real); ``lengths`` are
the transform's lengths along ``axes`` (NumPy's ``s``: the input is cropped or zero-padded
to them, and for ``irfft`` they are the output's), ``norm`` is NumPy's.

A transform is linear, so its tangent is the transform of the tangent. Cotangents pair with
values bilinearly (JAX's convention, ``docs/transforms.md``), and the DFT matrix is
symmetric, so the transpose of a complex transform is the same transform (then the
transpose of the crop or pad); ``rfft``'s is a padded complex transform's real part, and
``irfft``'s weighs the half spectrum's interior twice, as JAX's rules do.
"""

from __future__ import annotations

import math
from typing import Any

from ..dtypes import DType, complex64, complex128, component_dtype, float32, float64
from ..errors import ShapeError
from . import lax
from .ad import defjvp, defvjp
from .batching import defvectorized, shift_axes
from .checks import require_kind
from .core import Primitive, ShapedArray, bind, fmt_shape

__all__ = ["fft_p", "FFT_TYPES", "NORMS"]

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")
NORMS = ("backward", "ortho", "forward")
_COMPLEX_OF = {float32: complex64, float64: complex128}


def _fft_rule(x: ShapedArray, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
              norm: str) -> ShapedArray:
    real_in = fft_type == "rfft"
    require_kind(f"fft.{fft_type}", x.dtype, "f" if real_in else "c",
                 "a real floating-point array" if real_in else "a complex array")
    if any(n < 1 for n in lengths):
        raise ShapeError(f"fft.{fft_type}: transform lengths must be positive, got {lengths} for an array of shape "
                         f"{fmt_shape(x.shape)}")
    shape = list(x.shape)
    for a, n in zip(axes, lengths):
        shape[a] = n
    if fft_type == "rfft":
        shape[axes[-1]] = lengths[-1] // 2 + 1
    dtype: DType = (_COMPLEX_OF[x.dtype] if real_in else component_dtype(x.dtype) if fft_type == "irfft" else x.dtype)
    return ShapedArray(tuple(shape), dtype, x.device)


_KERNELS = {"fft": "fftn", "ifft": "ifftn", "rfft": "rfftn", "irfft": "irfftn"}
_RESULT_DTYPE = {("fft", "complex64"): "complex64", ("ifft", "complex64"): "complex64",
                 ("rfft", "float32"): "complex64", ("irfft", "complex64"): "float32"}


def _fft_kernel(xp: Any, x: Any, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
                norm: str) -> Any:
    out = getattr(xp.fft, _KERNELS[fft_type])(x, s=lengths, axes=axes, norm=norm)
    want = _RESULT_DTYPE.get((fft_type, x.dtype.name))  # single precision stays single
    return out.astype(want) if want is not None and out.dtype != want else out


fft_p = Primitive("fft", _fft_rule, kernel=_fft_kernel, autocast="float32")  # (NumPy computes in float32 anyway)


def _fit(y: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
    """``y`` cropped or zero-padded along ``axes`` to ``sizes``: the transpose of the
    forward crop or pad."""
    for a, n in zip(axes, sizes):
        have = y.shape[a]
        if have > n:
            y = lax.slice_axis(y, a, 0, n)
        elif have < n:
            y = lax.pad(y, [(0, n - have) if i == a else (0, 0) for i in range(len(y.shape))])
    return y


def _scale(norm: str, lengths: tuple[int, ...]) -> float:
    """The factor an unnormalised inverse transform is multiplied by under ``norm``."""
    n = math.prod(lengths)
    return {"backward": 1.0 / n, "ortho": 1.0 / math.sqrt(n), "forward": 1.0}[norm]


def _fft_vjp(g: Any, ans: Any, x: Any, *, fft_type: str, axes: tuple[int, ...], lengths: tuple[int, ...],
             norm: str) -> Any:
    in_sizes = tuple(x.shape[a] for a in axes)
    if fft_type in ("fft", "ifft"):
        return _fit(bind(fft_p, g, fft_type=fft_type, axes=axes, lengths=lengths, norm=norm), axes, in_sizes)
    if fft_type == "rfft":  # pad the half spectrum with zeros, transform, keep the real part
        full = _fit(g, axes[-1:], lengths[-1:])
        return _fit(lax.real(bind(fft_p, full, fft_type="fft", axes=axes, lengths=lengths, norm=norm)), axes, in_sizes)
    # irfft: the unnormalised rfft of g, the interior of the half spectrum counted twice (it
    # stands for itself and its mirror image), conjugated, scaled as the inverse was
    spectrum = bind(fft_p, g, fft_type="rfft", axes=axes, lengths=lengths, norm="backward")
    last, n = axes[-1], lengths[-1]
    half = n // 2 + 1
    weights = lax.full(spectrum, (half,), 2.0, dtype=component_dtype(spectrum.dtype))
    ends = lax.iota(weights, half)
    interior = lax.ne(ends, 0)
    if n % 2 == 0:  # (an even length also has a Nyquist frequency, its own mirror image)
        interior = lax.logical_and(interior, lax.ne(ends, n // 2))
    weights = lax.select(interior, weights, 1.0)
    shape = [1] * len(spectrum.shape)
    shape[last] = half
    weighted = spectrum * lax.convert(lax.reshape(weights * _scale(norm, lengths), shape), spectrum.dtype)
    return _fit(lax.conj(weighted), axes, in_sizes)


defjvp(fft_p, lambda t, ans, x, **params: bind(fft_p, t, **params))
defvjp(fft_p, _fft_vjp, saves="none")
defvectorized(fft_p, lambda x, *, axes, **params: {"axes": shift_axes(axes), **params})

