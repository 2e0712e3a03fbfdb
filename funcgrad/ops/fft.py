"""``fg.fft``: the array API's Fourier-transform extension (NumPy's and JAX's signatures),
differentiable in both modes through the one ``fft`` primitive (``primitives.fft``).

Real input to a complex transform is promoted (float64 to complex128, anything else to
complex64, as JAX does by default); ``rfft`` takes real arrays only. ``hfft`` and ``ihfft``
are ``irfft`` and ``rfft`` of conjugates with the normalisation's direction swapped, as
NumPy defines them, so they differentiate through those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import ArgumentTypeError, DTypeError, ShapeError
from ..primitives.checks import normalize_axis
from ..primitives.core import bind
from ..primitives.elementwise import conj_p
from ..primitives.fft import NORMS, fft_p
from .creation import asarray
from .elementwise import as_operand, cast_to
from .reference_docs import sections
from .shape import roll

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _as_complex(op: str, x: Any) -> Any:
    kind = x.dtype.kind
    if kind == "c":
        return x
    if kind not in "fiub" and x.dtype is not _dt.bfloat16:
        raise DTypeError(f"fft.{op}: expected a numeric array, got {x.dtype}")
    return cast_to(x, _dt.complex128 if x.dtype is _dt.float64 else _dt.complex64)


def _as_real(op: str, x: Any) -> Any:
    if x.dtype.kind == "c":
        raise DTypeError(f"fft.{op}: expected a real array, got {x.dtype} (take fg.real(x) first, or use fft.fft)")
    return x if x.dtype in (_dt.float32, _dt.float64) else cast_to(x, _dt.float32)  # (halves and integers)


def _length(op: str, n: Any, what: str = "n") -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ArgumentTypeError(f"fft.{op}: {what} must be a positive int, got {n!r}")
    return int(n)


def _norm(op: str, norm: Any) -> str:
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise ArgumentTypeError(f"fft.{op}: norm must be one of {NORMS}, got {norm!r}")
    return str(norm)


def _axes_and_lengths(op: str, x: Any, s: Any, axes: Any, real_out: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """NumPy's rules: ``axes`` in the given order (the last is the half-spectrum axis of
    the real transforms); ``s`` the lengths along them (default: the input's; ``irfft``'s
    last: ``2 * (m - 1)``); with ``s`` alone, the last ``len(s)`` axes."""
    if axes is None:
        axes_t = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    else:
        axes_t = tuple(normalize_axis(f"fft.{op}", a, x.ndim) for a in  # type: ignore[arg-type]
                       ((axes,) if isinstance(axes, (int, np.integer)) else axes))
    if len(set(axes_t)) != len(axes_t):
        raise ShapeError(f"fft.{op}: repeated axis in {axes!r}")
    if not axes_t:
        raise ShapeError(f"fft.{op}: no axes to transform (array of shape {tuple(x.shape)})")
    if s is None:
        lengths = [x.shape[a] for a in axes_t]
        if real_out:
            lengths[-1] = 2 * (lengths[-1] - 1)
    else:
        if isinstance(s, (int, np.integer)) or len(s) != len(axes_t):
            raise ShapeError(f"fft.{op}: s={s!r} must give one length per transformed axis {axes_t}")
        lengths = [_length(op, n, "each entry of s") for n in s]
    if any(n < 1 for n in lengths):
        raise ShapeError(f"fft.{op}: the output length along axis {axes_t[-1]} would be {lengths[-1]}; pass n= "
                         f"(input shape {tuple(x.shape)})")
    return axes_t, tuple(lengths)


def _transform(op: str, fft_type: str, x: Any, s: Any, axes: Any, norm: Any) -> Any:
    x = as_operand(x)
    x = _as_real(op, x) if fft_type == "rfft" else _as_complex(op, x)
    if x.ndim == 0:
        raise ShapeError(f"fft.{op}: expected an array with at least one axis, got a scalar")
    axes_t, lengths = _axes_and_lengths(op, x, s, axes, fft_type == "irfft")
    return bind(fft_p, x, fft_type=fft_type, axes=axes_t, lengths=lengths, norm=_norm(op, norm))


def _one_axis(op: str, fft_type: str, x: Any, n: Any, axis: int, norm: Any) -> Any:
    s = None if n is None else (_length(op, n),)
    return _transform(op, fft_type, x, s, (axis,), norm)


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The one-dimensional discrete Fourier transform along ``axis``, as ``np.fft.fft``."""
    return _one_axis("fft", "fft", x, n, axis, norm)


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``fft`` along ``axis``."""
    return _one_axis("ifft", "ifft", x, n, axis, norm)


def fftn(x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward") -> Any:
    """The n-dimensional discrete Fourier transform over ``axes`` (default: all, or the last ``len(s)``)."""
    return _transform("fftn", "fft", x, s, axes, norm)


def ifftn(x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Any:
    """The inverse of ``fftn``."""
    return _transform("ifftn", "ifft", x, s, axes, norm)


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The Fourier transform of a real array: the ``n // 2 + 1`` non-negative frequencies, as
    ``np.fft.rfft``."""
    return _one_axis("rfft", "rfft", x, n, axis, norm)


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``rfft``: a real array of length ``n`` (default ``2 * (m - 1)``)."""
    return _one_axis("irfft", "irfft", x, n, axis, norm)


def rfftn(x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Any:
    """The n-dimensional transform of a real array, halved along the last of ``axes``."""
    return _transform("rfftn", "rfft", x, s, axes, norm)


def irfftn(x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward") -> Any:
    """The inverse of ``rfftn``."""
    return _transform("irfftn", "irfft", x, s, axes, norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The transform of a signal with Hermitian symmetry, given by its first half: a real spectrum."""
    x = _as_complex("hfft", as_operand(x))
    return irfft(bind(conj_p, x), n=n, axis=axis, norm=_SWAPPED[_norm("hfft", norm)])


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``hfft``: the first half of a real signal's Hermitian spectrum."""
    return bind(conj_p, rfft(x, n=n, axis=axis, norm=_SWAPPED[_norm("ihfft", norm)]))


def _freq_dtype(dtype: Any) -> Any:
    return _dt.default_float if dtype is None else _dt.as_dtype(dtype, op="fftfreq")


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point ``fft``: ``[0, 1, ..., -1] / (d * n)``."""
    n = _length("fftfreq", n)
    return asarray(np.fft.fftfreq(n, d), _freq_dtype(dtype), device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    n = _length("rfftfreq", n)
    return asarray(np.fft.rfftfreq(n, d), _freq_dtype(dtype), device=device)


def _shift(op: str, x: Any, axes: Any, sign: int) -> Any:
    x = as_operand(x)
    axes_t = tuple(range(x.ndim)) if axes is None else tuple(
        normalize_axis(f"fft.{op}", a, x.ndim) for a in ((axes,) if isinstance(axes, (int, np.integer)) else axes))  # type: ignore[arg-type]
    if not axes_t:
        return x
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes_t), axis=axes_t)


def fftshift(x: Any, /, *, axes: int | Sequence[int] | None = None) -> Any:
    """The zero frequency moved to the middle (a roll by half of each axis)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, /, *, axes: int | Sequence[int] | None = None) -> Any:
    """The inverse of ``fftshift``."""
    return _shift("ifftshift", x, axes, -1)


# The API reference's sections: each function's summary above, then its parameters (one
# description each, shared by the functions that take it), its result and an example whose
# values are NumPy's.
_PARAMETERS = {
    "x": "the array.",
    "n": "the transform's length (``x`` cropped or zero-padded to it; for the inverses of real "
         "transforms, ``2 * (m - 1)`` for ``m`` values by default; else its own).",
    "axis": "the axis to transform.",
    "s": "the transform's length along each of ``axes`` (cropped or zero-padded to it).",
    "axes": "the axes (all by default; for the n-dimensional transforms given ``s``, its last ``len(s)``).",
    "norm": '``"backward"`` (no scaling forward), ``"ortho"`` or ``"forward"``.',
    "d": "the sample spacing.",
    "dtype": "the result's dtype (the default float dtype by default).",
    "device": "where the result goes.",
}
_REFERENCE = {  # name: (what it returns, the example's call, what it prints)
    "fft": ("A complex array.", "fg.fft.fft(fg.asarray([1.0, 0.0, 0.0, 0.0])).tolist()",
            "[(1+0j), (1+0j), (1+0j), (1+0j)]"),
    "ifft": ("A complex array.", "fg.fft.ifft(fg.asarray([4.0, 0.0, 0.0, 0.0])).tolist()",
             "[(1+0j), (1+0j), (1+0j), (1+0j)]"),
    "fftn": ("A complex array.", "fg.fft.fftn(fg.asarray([[1.0, 2.0], [3.0, 4.0]])).tolist()",
             "[[(10+0j), (-2+0j)], [(-4+0j), 0j]]"),
    "ifftn": ("A complex array.", "fg.fft.ifftn(fg.asarray([[4.0, 0.0], [0.0, 0.0]])).tolist()",
              "[[(1+0j), (1+0j)], [(1+0j), (1+0j)]]"),
    "rfft": ("A complex array.", "fg.fft.rfft(fg.asarray([1.0, 2.0, 3.0, 4.0])).tolist()",
             "[(10+0j), (-2+2j), (-2+0j)]"),
    "irfft": ("A real array.", "fg.fft.irfft(fg.asarray([10 + 0j, -2 + 2j, -2 + 0j])).tolist()",
              "[1.0, 2.0, 3.0, 4.0]"),
    "rfftn": ("A complex array.", "fg.fft.rfftn(fg.asarray([[1.0, 2.0], [3.0, 4.0]])).tolist()",
              "[[(10+0j), (-2+0j)], [(-4+0j), 0j]]"),
    "irfftn": ("A real array.", "fg.fft.irfftn(fg.asarray([[10 + 0j, -2 + 0j], [-4 + 0j, 0j]])).tolist()",
               "[[1.0, 2.0], [3.0, 4.0]]"),
    "hfft": ("A real array.", "fg.fft.hfft(fg.asarray([1 + 0j, 2 + 0j, 3 + 0j])).tolist()", "[8.0, -2.0, 0.0, -2.0]"),
    "ihfft": ("A complex array of ``n // 2 + 1`` values.", "fg.fft.ihfft(fg.asarray([1.0, 2.0, 3.0, 4.0])).tolist()",
              "[(2.5-0j), (-0.5-0.5j), (-0.5-0j)]"),
    "fftfreq": ("A 1-d array.", "fg.fft.fftfreq(4).tolist()", "[0.0, 0.25, -0.5, -0.25]"),
    "rfftfreq": ("A 1-d array.", "fg.fft.rfftfreq(4).tolist()", "[0.0, 0.25, 0.5]"),
    "fftshift": ("An array of ``x``'s shape.", "fg.fft.fftshift(fg.arange(5)).tolist()", "[3, 4, 0, 1, 2]"),
    "ifftshift": ("An array of ``x``'s shape.", "fg.fft.ifftshift(fg.arange(5)).tolist()", "[2, 3, 4, 0, 1]"),
}
for _name, (_returns, _call, _shown) in _REFERENCE.items():
    _fn = globals()[_name]
    _fn.__doc__ = sections(_fn.__doc__ or "", [(p, _PARAMETERS[p]) for p in _fn.__code__.co_varnames[
        :_fn.__code__.co_argcount + _fn.__code__.co_kwonlyargcount]], [f">>> {_call}", _shown], _returns)

