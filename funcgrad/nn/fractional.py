"""Fractional max pooling (Graham, 2014), PyTorch's ``FractionalMaxPool2d/3d``: windows of a
fixed size at pseudo-random, increasing starts, so the output size can be any fraction of
the input's. Each (sample, channel) plane draws one uniform per spatial axis (from the
default generator, as ``torch.rand`` draws them, unless ``_random_samples`` gives them),
and an axis's starts are ``int((i + u) * alpha) - int(u * alpha)`` with ``alpha =
(input - kernel) / (output - 1)``, the last at ``input - kernel``: PyTorch's formula in the
input's dtype, so after the same seed the windows, values and indices are PyTorch's.

The windows are gathered (``take_along_axis``: the gradient scatters back) and each picks
PyTorch's position: the first largest value, or the last NaN.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from ..dtypes import int64
from ..errors import ArgumentValueError, ShapeError
from ..primitives.checks import as_int
from ..primitives.core import fmt_shape
from ..random.generator import rand
from .module import Module

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]


def _tuple(value: Any, dims: int) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


def _starts(u: Any, size: int, out: int, kernel: int, dtype: Any) -> Any:
    """Each plane's window starts along one axis, (planes, out), from its uniforms ``u`` (on
    their device)."""
    last = ops.full((*u.shape, 1), size - kernel, dtype=int64, device=u.device)
    if out == 1:
        return last
    # (in the input's dtype, as a number: it is exact there, and meets arrays on any device)
    alpha = float(np.divide(np.asarray(size - kernel, dtype.np), np.asarray(out - 1, dtype.np)))
    steps = ops.arange(out - 1, dtype=dtype, device=u.device)
    u = ops.expand_dims(u, -1)
    scaled = ((steps + u) * alpha).astype(int64) - (u * alpha).astype(int64)
    return ops.concatenate([scaled, last], axis=-1)


def _fractional_max_pool(x: Any, kernel_size: Any, output_size: Any, output_ratio: Any, return_indices: bool,
                         samples: Any, dims: int, op: str) -> Any:
    if x.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{op}: expects (N, C, ...) or (C, ...) with {dims} spatial axes, got {fmt_shape(x.shape)}")
    batched = x.ndim == dims + 2
    x = x if batched else ops.expand_dims(x, 0)
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    kernel = tuple(as_int(op, k, "kernel_size") for k in _tuple(kernel_size, dims))
    if output_size is None:
        if output_ratio is None:
            raise ArgumentValueError(f"{op}: give output_size or output_ratio")
        ratios = _tuple(output_ratio, dims)
        if not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in ratios):
            raise ArgumentValueError(f"{op}: output_ratio must be numbers, got {output_ratio!r}")
        output_size = [int(s * r) for s, r in zip(spatial, ratios)]
    out = tuple(as_int(op, o, "output_size") for o in _tuple(output_size, dims))
    if len(kernel) != dims or len(out) != dims or min(kernel) < 1 or min(out) < 1:
        raise ArgumentValueError(f"{op}: kernel_size {kernel_size!r} and output size {out} need {dims} positive sizes")
    for axis, (s, o, k) in enumerate(zip(spatial, out, kernel)):
        need = o + k - 1 + (dims == 3)  # (PyTorch's checks: the 3-d one asks for one more)
        if need > s:
            raise ShapeError(f"{op}: an output of {o} windows of {k} along spatial axis {axis} needs an input of at "
                             f"least {need}, got {s} (input {fmt_shape(tuple(x.shape))})")
    if samples is None:
        samples = rand(n, c, dims, dtype=x.dtype, device=x.device)
    elif tuple(samples.shape) != (n, c, dims):
        raise ShapeError(f"{op}: _random_samples must have shape {(n, c, dims)}, got {fmt_shape(samples.shape)}")
    # PyTorch's order of the uniforms: width first in 2-d (W, H); time, height, width in 3-d
    order = (1, 0) if dims == 2 else (0, 1, 2)
    starts = [_starts(samples[..., order[a]], spatial[a], out[a], kernel[a], x.dtype) for a in range(dims)]
    # the flat plane index of every tap of every window: (N, C, *out, *kernel)
    flat = ops.zeros((n, c) + (1,) * (2 * dims), dtype=int64, device=x.device)
    for a in range(dims):
        stride = math.prod(spatial[a + 1:])
        start = ops.reshape(starts[a], (n, c) + tuple(out[a] if b == a else 1 for b in range(dims)) + (1,) * dims)
        tap = ops.reshape(ops.arange(kernel[a], dtype=int64, device=x.device), (1, 1) + (1,) * dims +
                          tuple(kernel[a] if b == a else 1 for b in range(dims)))
        flat = flat + (start + tap) * stride
    taps = math.prod(kernel)
    flat = ops.reshape(ops.broadcast_to(flat, (n, c, *out, *kernel)), (n, c, *out, taps))
    plane = ops.reshape(x, (n, c, math.prod(spatial)))
    windows = ops.reshape(ops.take_along_axis(plane, ops.reshape(flat, (n, c, -1)), axis=2), (n, c, *out, taps))
    # PyTorch's choice: the first largest value, unless a NaN: then the last NaN
    nans = ops.isnan(windows)
    last_nan = (taps - 1) - ops.argmax(ops.flip(nans, -1), axis=-1, keepdims=True)
    pick = ops.where(ops.any(nans, axis=-1, keepdims=True), last_nan, ops.argmax(windows, axis=-1, keepdims=True))
    values = ops.squeeze(ops.take_along_axis(windows, pick, axis=-1), -1)
    indices = ops.squeeze(ops.take_along_axis(flat, pick, axis=-1), -1)
    if not batched:
        values, indices = ops.squeeze(values, 0), ops.squeeze(indices, 0)
    return (values, indices) if return_indices else values


def fractional_max_pool2d(input: Any, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Any = None) -> Any:
    """Fractional max pooling of (N, C, H, W) or (C, H, W) inputs (PyTorch's)."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2,
                                "fractional_max_pool2d")


def fractional_max_pool3d(input: Any, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Any = None) -> Any:
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W) inputs (PyTorch's)."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3,
                                "fractional_max_pool3d")


class FractionalMaxPool2d(Module):
    """``F.fractional_max_pool2d`` with the module's sizes: ``output_size``, or
    ``output_ratio`` in (0, 1) of the input's."""

    dims = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        if (output_size is None) == (output_ratio is None):
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_ratio is not None and not all(0 < r < 1 for r in _tuple(output_ratio, self.dims)):
            raise ValueError(f"{name}: output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, x: Any) -> Any:
        """Fractional max pooling with new windows each call (unless ``_random_samples`` was given)."""
        pool = fractional_max_pool2d if self.dims == 2 else fractional_max_pool3d
        return pool(x, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                    self._random_samples)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """``F.fractional_max_pool3d`` with the module's sizes."""

    dims = 3
