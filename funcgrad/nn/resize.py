"""Changing an image's size: ``interpolate`` / ``Upsample`` (nearest, linear, bilinear,
area), ``pixel_shuffle`` and its inverse, and adaptive max pooling.

Resampling is separable: along each spatial axis the source positions and weights are
computed on the host from the sizes alone (in the precision PyTorch's CPU kernels use,
so the same pixels are picked), and the values are gathered with ``take``, whose
gradient adds back into the picked pixels. No dense interpolation matrix: a NaN or an
infinity stays where it was instead of spreading through zero weights."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..primitives.core import fmt_shape
from ..transforms import no_grad
from .conv import adaptive_avg_pool2d, as_2d, check_4d, from_2d, one_int, unbatched
from .module import Module

__all__ = ["adaptive_max_pool1d", "AdaptiveMaxPool1d",
           "interpolate", "upsample", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "pixel_shuffle",
           "pixel_unshuffle", "PixelShuffle", "PixelUnshuffle", "adaptive_max_pool2d", "AdaptiveMaxPool2d"]

_MODES = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "linear": (3,), "bilinear": (4,), "area": (3, 4)}


def _output_sizes(x: Any, size: Any, scale_factor: Any, k: int) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """PyTorch's output size per spatial axis, and the scale factors given (None where a
    size was given): exactly one of ``size`` and ``scale_factor``."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    spatial = tuple(x.shape)[2:]
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * k
        if len(sizes) != k or not all(isinstance(s, (int, np.integer)) and s > 0 for s in sizes):
            raise ValueError(f"interpolate: size must be a positive int or {k} of them for an input of shape "
                             f"{fmt_shape(tuple(x.shape))}, got {size!r}")
        return tuple(int(s) for s in sizes), (None,) * k
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * k
    if len(scales) != k or not all(float(f) > 0 for f in scales):
        raise ValueError(f"interpolate: scale_factor must be a positive number or {k} of them, got {scale_factor!r}")
    sizes = tuple(int(math.floor(i * float(f))) for i, f in zip(spatial, scales))
    if min(sizes) < 1:
        raise ShapeError(f"interpolate: scale_factor {scale_factor!r} makes the input of shape "
                         f"{fmt_shape(tuple(x.shape))} empty")
    return sizes, tuple(float(f) for f in scales)


def _nearest(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    """Source pixel of each output pixel, PyTorch's float32 arithmetic (``nearest_idx``)."""
    ratio = np.float32(size) / np.float32(out) if scale is None else np.float32(1.0 / scale)
    dst = np.arange(out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    return np.minimum(np.floor(dst * ratio).astype(np.int64), size - 1)


def _linear(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any) -> tuple[np.ndarray, ...]:
    """Each output pixel's two source pixels and their weights (PyTorch's
    ``area_pixel_compute_source_index``, in the input's precision)."""
    real = np.float64 if dtype == np.float64 else np.float32
    if align_corners:
        ratio = real(size - 1) / real(out - 1) if out > 1 else real(0)
        src = np.arange(out, dtype=real) * ratio  # type: ignore[operator]
    else:
        ratio = real(size) / real(out) if scale is None else real(1.0 / scale)
        src = np.maximum((np.arange(out, dtype=real) + real(0.5)) * ratio - real(0.5), real(0))  # type: ignore[operator]
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    hi = lo + (lo < size - 1)
    weight_hi = np.clip(src - lo.astype(real), 0, 1).astype(real)
    return lo, hi, (real(1) - weight_hi), weight_hi


def _along(x: Any, axis: int, index: np.ndarray) -> Any:
    return ops.take(x, ops.asarray(index, device=x.device), axis=axis)


def _weights(w: np.ndarray, x: Any, axis: int) -> Any:
    shape = [1] * x.ndim
    shape[axis] = w.shape[0]
    return ops.asarray(w.reshape(shape), dtype=x.dtype, device=x.device)


def interpolate(x: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """PyTorch's ``F.interpolate`` for (N, C, L) and (N, C, H, W) inputs: modes ``nearest``,
    ``nearest-exact``, ``linear``, ``bilinear`` (``align_corners`` as PyTorch) and ``area``."""
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode {mode!r} is not supported; funcgrad has {', '.join(_MODES)}")
    ndim = getattr(x, "ndim", None)
    if ndim not in _MODES[mode]:
        raise ShapeError(f"interpolate: mode {mode!r} takes inputs of {' or '.join(map(str, _MODES[mode]))} "
                         f"dimensions (N, C, spatial...), got shape {fmt_shape(tuple(getattr(x, 'shape', ())))}")
    if align_corners is not None and mode not in ("linear", "bilinear"):
        raise ValueError(f"interpolate: align_corners only applies to the linear modes, not {mode!r}")
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported")
    k = ndim - 2
    sizes, scales = _output_sizes(x, size, scale_factor, k)
    if recompute_scale_factor:
        scales = (None,) * k
    if mode == "area":
        return adaptive_avg_pool2d(x, sizes) if k == 2 else ops.squeeze(
            adaptive_avg_pool2d(ops.expand_dims(x, 2), (1, sizes[0])), 2)
    out = x
    for axis, (n, m, scale) in reversed(list(enumerate(zip(tuple(x.shape)[2:], sizes, scales), start=2))):
        if mode.startswith("nearest"):
            out = _along(out, axis, _nearest(n, m, scale, mode == "nearest-exact"))
        else:
            lo, hi, w_lo, w_hi = _linear(n, m, scale, bool(align_corners), x.dtype.np)
            out = _weights(w_lo, out, axis) * _along(out, axis, lo) + _weights(w_hi, out, axis) * _along(out, axis, hi)
    return out


def upsample(x: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Any:
    """``interpolate`` by its older name."""
    return interpolate(x, size, scale_factor, mode, align_corners)


class Upsample(Module):
    """``F.interpolate`` as a layer."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x: Any) -> Any:
        """``F.interpolate`` as a layer."""
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        what = f"scale_factor={self.scale_factor}" if self.scale_factor is not None else f"size={self.size}"
        return f"{what}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W) inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) inputs with ``align_corners=True``, as PyTorch's."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


def _factor(op: str, x: Any, factor: Any, axis: int) -> int:
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 1:
        raise ValueError(f"{op}: the factor must be a positive int, got {factor!r}")
    if getattr(x, "ndim", 0) < 3:
        raise ShapeError(f"{op}: expected (*, C, H, W), got shape {fmt_shape(tuple(getattr(x, 'shape', ())))}")
    return int(factor)


def pixel_shuffle(x: Any, upscale_factor: int) -> Any:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): channels rearranged into space."""
    r = _factor("pixel_shuffle", x, upscale_factor, -3)
    *batch, c, h, w = x.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle: {c} channels are not divisible by upscale_factor ** 2 = {r * r} (shape "
                         f"{fmt_shape(tuple(x.shape))})")
    b = len(batch)
    out = ops.reshape(x, (*batch, c // (r * r), r, r, h, w))
    out = ops.transpose(out, (*range(b), b, b + 3, b + 1, b + 4, b + 2))
    return ops.reshape(out, (*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(x: Any, downscale_factor: int) -> Any:
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): the inverse of ``pixel_shuffle``."""
    r = _factor("pixel_unshuffle", x, downscale_factor, -3)
    *batch, c, h, w = x.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: the height {h} and width {w} must be divisible by downscale_factor {r}")
    b = len(batch)
    out = ops.reshape(x, (*batch, c, h // r, r, w // r, r))
    out = ops.transpose(out, (*range(b), b, b + 2, b + 4, b + 1, b + 3))
    return ops.reshape(out, (*batch, c * r * r, h // r, w // r))


class PixelShuffle(Module):
    """``F.pixel_shuffle`` as a layer."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x: Any) -> Any:
        """``F.pixel_shuffle`` as a layer."""
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``F.pixel_unshuffle`` as a layer."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x: Any) -> Any:
        """``F.pixel_unshuffle`` as a layer."""
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"downscale_factor={self.downscale_factor}"


def _bins(size: int, out: int) -> np.ndarray:
    """(out, widest) source positions of PyTorch's adaptive bins, floor(i * size / out) to
    ceil((i + 1) * size / out); a narrower bin repeats its first position (a repeat cannot
    change a maximum, and comes after it, so the first maximum is still the bin's own)."""
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(out) + 1) * size) // out)
    width = int((ends - starts).max())
    cols = starts[:, None] + np.arange(width)[None, :]
    return np.where(cols < ends[:, None], cols, starts[:, None])


@unbatched
def adaptive_max_pool2d(x: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed output size (``None`` keeps that axis), PyTorch's bins; with
    ``return_indices``, where each maximum came from (flat in its channel's (H, W))."""
    check_4d("adaptive_max_pool2d", x)
    sizes = (output_size, output_size) if isinstance(output_size, int) or output_size is None else tuple(output_size)
    h, w = x.shape[2], x.shape[3]
    oh, ow = (h if sizes[0] is None else sizes[0]), (w if sizes[1] is None else sizes[1])
    if oh < 1 or ow < 1:
        raise ShapeError(f"adaptive_max_pool2d: output size {(oh, ow)} must be positive")
    rows, cols = _bins(h, oh), _bins(w, ow)                                   # (OH, KH), (OW, KW)
    windows = _along(_along(x, 2, rows), 4, cols)                            # (N, C, OH, KH, OW, KW)
    windows = ops.transpose(windows, (0, 1, 2, 4, 3, 5))                      # (N, C, OH, OW, KH, KW)
    out = ops.max(windows, axis=(4, 5))
    if not return_indices:
        return out
    n, c = x.shape[0], x.shape[1]
    kh, kw = rows.shape[1], cols.shape[1]
    flat = (rows[:, None, :, None] * w + cols[None, :, None, :]).reshape(oh, ow, kh * kw)
    with no_grad():
        wins = ops.reshape(windows, (n, c, oh, ow, kh * kw))
        nan_first = ops.argmax(ops.isnan(wins), axis=-1)
        pick = ops.where(ops.isnan(out), nan_first, ops.argmax(wins == ops.expand_dims(out, -1), axis=-1))
        where = ops.take_along_axis(ops.broadcast_to(ops.asarray(flat, device=x.device), (n, c, oh, ow, kh * kw)),
                                    ops.expand_dims(pick, -1), axis=-1)
    return out, ops.squeeze(where, -1)


class AdaptiveMaxPool2d(Module):
    """The maximum over windows that divide the input into ``output_size`` cells."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Any) -> Any:
        """The maximum over windows that divide the input into ``output_size`` cells."""
        return adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"output_size={self.output_size}"


def adaptive_max_pool1d(x: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of the last axis to ``output_size`` cells, PyTorch's bins (``return_indices``:
    positions in L)."""
    x2, batched = as_2d(x, "adaptive_max_pool1d")
    out = adaptive_max_pool2d(x2, (1, one_int(output_size)), return_indices)
    if return_indices:
        return from_2d(out[0], batched), from_2d(out[1], batched)
    return from_2d(out, batched)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """The maximum over windows that divide the last axis into ``output_size`` cells."""

    def forward(self, x: Any) -> Any:
        """The maximum over windows that divide the last axis into ``output_size`` cells."""
        return adaptive_max_pool1d(x, self.output_size, self.return_indices)
