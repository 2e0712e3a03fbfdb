"""Three-dimensional convolution and pooling over (N, C, D, H, W) inputs (or one unbatched
(C, D, H, W) volume), by the 2-d layers' mechanism with one more spatial axis: ``windows``
gives every receptive field as a view, one im2col copy and a product per volume make the
convolution, its transpose adds blocks back with ``windows_add``, and pooling reduces the
windows. Max pooling selects each window's first maximum inside the input (or its last
NaN), as PyTorch's kernels do, and gathers it, so the gradient goes there alone."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import ops
from ..dtypes import int64
from ..errors import ArgumentValueError, ShapeError
from ..primitives.checks import as_int
from ..primitives.core import bind, fmt_shape
from ..primitives.shape import windows_add_p, windows_p
from ..transforms import no_grad
from . import init
from ._checks import same_dtype
from .conv import bin_averages, channels_of, pool_geometry
from .conv_transpose import ConvTransposeNd
from .module import Module
from .parameter import Parameter

__all__ = ["conv3d", "conv_transpose3d", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "max_unpool3d", "Conv3d", "ConvTranspose3d", "AvgPool3d", "MaxPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "MaxUnpool3d"]

AXES = (2, 3, 4)


def triple(v: Any, op: str, what: str = "size", minimum: int | None = None) -> tuple[int, int, int]:
    """An int or three ints, each checked (as ``pair`` checks a pair)."""
    values = tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)
    if len(values) != 3:
        raise ArgumentValueError(f"{op}: {what} must be an int or three ints, got {v!r}")
    return tuple(as_int(op, e, what, minimum=minimum) for e in values)  # type: ignore[return-value]


def volumes(op: str) -> Any:
    """Let a 3-d layer function take one unbatched (C, D, H, W) volume; a batch must be
    (N, C, D, H, W)."""
    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(x: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(x, "ndim", None) == 4:
                out = fn(ops.expand_dims(x, 0), *args, **kwargs)
                return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
            if getattr(x, "ndim", None) != 5:
                raise ShapeError(f"{op}: expected a (N, C, D, H, W) or unbatched (C, D, H, W) input, got shape "
                                 f"{fmt_shape(tuple(getattr(x, 'shape', ())))}")
            return fn(x, *args, **kwargs)
        return wrapper
    return wrap


def _pad3(x: Any, before: tuple[int, ...], after: tuple[int, ...], value: float = 0.0) -> Any:
    if not any(before) and not any(after):
        return x
    return ops.pad(x, ((0, 0), (0, 0)) + tuple(zip(before, after)), constant_values=value)


def _padding(padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
             dilation: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's convolution padding as (before, after): an int or triple, ``"valid"`` or
    ``"same"`` (stride 1; an odd total puts the extra one after)."""
    if not isinstance(padding, str):
        p = triple(padding, "conv3d", "padding", 0)
        return p, p
    if padding == "valid":
        return (0, 0, 0), (0, 0, 0)
    if padding != "same":
        raise ValueError(f"conv3d: padding must be an int, a triple, 'same' or 'valid', got {padding!r}")
    if stride != (1, 1, 1):
        raise ValueError(f"conv3d: padding='same' needs stride 1 (as in PyTorch), got stride={stride}")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in totals), tuple(t - t // 2 for t in totals)


@volumes("conv3d")
def conv3d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """PyTorch's conv3d: x (N, C, D, H, W), weight (O, C/groups, KD, KH, KW)."""
    if getattr(weight, "ndim", None) != 5:
        raise ShapeError(f"conv3d: the weight must be (out_channels, in_channels/groups, KD, KH, KW), got shape "
                         f"{fmt_shape(tuple(getattr(weight, 'shape', ())))}")
    x = same_dtype("conv3d", x, weight, bias)
    groups = as_int("conv3d", groups, "groups", minimum=1)
    n, c = x.shape[0], x.shape[1]
    o, cg, *k = weight.shape
    if c != cg * groups or o % groups:
        raise ShapeError(f"conv3d: input with {c} channels does not fit weight {fmt_shape(tuple(weight.shape))} "
                         f"with groups={groups}")
    s, d = triple(stride, "conv3d", "stride", 1), triple(dilation, "conv3d", "dilation", 1)
    before, after = _padding(padding, tuple(k), s, d)
    p = bind(windows_p, _pad3(x, before, after), axes=AXES, sizes=tuple(k), steps=s, dilations=d)
    out_size = tuple(p.shape[2:5])
    taps = math.prod(k)
    # (N, G, C/G, OD, OH, OW, KD, KH, KW) -> (N, G, C/G*KD*KH*KW, OD*OH*OW): the im2col copy
    cols = ops.reshape(ops.transpose(ops.reshape(p, (n, groups, cg, *out_size, *k)), (0, 1, 2, 6, 7, 8, 3, 4, 5)),
                       (n, groups, cg * taps, math.prod(out_size)))
    w = ops.reshape(weight, (1, groups, o // groups, cg * taps))
    out = ops.reshape(ops.matmul(w, cols), (n, o, *out_size))
    return out if bias is None else out + ops.reshape(bias, (1, o, 1, 1, 1))


@volumes("conv_transpose3d")
def conv_transpose3d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """PyTorch's conv_transpose3d (conv3d's gradient with respect to its input): x (N, C_in,
    D, H, W), weight (C_in, C_out/groups, KD, KH, KW)."""
    op = "conv_transpose3d"
    if getattr(weight, "ndim", None) != 5:
        raise ShapeError(f"{op}: the weight must be (in_channels, out_channels/groups, KD, KH, KW), got shape "
                         f"{fmt_shape(tuple(getattr(weight, 'shape', ())))}")
    x = same_dtype(op, x, weight, bias)
    groups = as_int(op, groups, "groups", minimum=1)
    n, c, *spatial = x.shape
    ci, og, *k = weight.shape
    if c != ci or c % groups:
        raise ShapeError(f"{op}: input with {c} channels does not fit weight {fmt_shape(tuple(weight.shape))} "
                         f"with groups={groups} (the weight's first axis is the input channels)")
    s, p = triple(stride, op, "stride", 1), triple(padding, op, "padding", 0)
    d, extra = triple(dilation, op, "dilation", 1), triple(output_padding, op, "output_padding", 0)
    if any(e >= max(si, di) for e, si, di in zip(extra, s, d)):
        raise ValueError(f"{op}: output_padding {extra} must be smaller than the stride {s} or the dilation {d}, "
                         "as in PyTorch")
    size = tuple((i - 1) * si - 2 * pi + di * (kk - 1) + e + 1 for i, si, pi, di, kk, e in zip(spatial, s, p, d, k,
                                                                                               extra))
    if min(size) < 1:
        raise ShapeError(f"{op}: an input of shape {fmt_shape(tuple(x.shape))} with kernel {tuple(k)}, stride {s} "
                         f"and padding {p} gives the empty output size {size}")
    cg, o, volume = c // groups, og * groups, math.prod(spatial)
    rows = ops.reshape(ops.transpose(ops.reshape(x, (n, groups, cg, *spatial)), (1, 0, 3, 4, 5, 2)),
                       (groups, n * volume, cg))
    blocks = ops.matmul(rows, ops.reshape(weight, (groups, cg, og * math.prod(k))))
    blocks = ops.reshape(ops.transpose(ops.reshape(blocks, (groups, n, *spatial, og, *k)), (1, 0, 5, 2, 3, 4, 6, 7, 8)),
                         (n, o, *spatial, *k))
    full = tuple((i - 1) * si + di * (kk - 1) + 1 for i, si, di, kk in zip(spatial, s, d, k))
    canvas = bind(windows_add_p, blocks, shape=(n, o, *full), axes=AXES, sizes=tuple(k), steps=s, dilations=d)
    grow = tuple(max(0, pi + z - f) for pi, z, f in zip(p, size, full))  # (output_padding past the canvas)
    canvas = _pad3(canvas, (0, 0, 0), grow)
    out = canvas[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1], p[2]:p[2] + size[2]]
    return out if bias is None else out + ops.reshape(bias, (1, o, 1, 1, 1))


def _pool(op: str, x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
          fill: float) -> tuple[Any, tuple[Any, ...]]:
    """The pooling windows (N, C, OD, OH, OW, KD, KH, KW) of ``x`` padded with ``fill``, and
    the geometry: kernel, stride, padding, dilation, the extra padding ``ceil_mode`` adds."""
    k = triple(kernel_size, op, "kernel_size", 1)
    s = triple(stride if stride is not None else k, op, "stride", 1)
    p, d = triple(padding, op, "padding", 0), triple(dilation, op, "dilation", 1)
    out, extra = pool_geometry(op, x, k, s, p, d, ceil_mode)
    padded = _pad3(x, p, tuple(pi + e for pi, e in zip(p, extra)), fill)
    windows = bind(windows_p, padded, axes=AXES, sizes=k, steps=s, dilations=d)
    if tuple(windows.shape[2:5]) != tuple(out):
        windows = windows[:, :, :out[0], :out[1], :out[2]]
    return windows, (k, s, p, d, extra)


@volumes("avg_pool3d")
def avg_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Any:
    """Average pooling, PyTorch's divisors (as ``avg_pool2d``'s, over three axes)."""
    windows, (k, s, p, _, extra) = _pool("avg_pool3d", x, kernel_size, stride, padding, 1, ceil_mode, 0.0)
    window_axes = (5, 6, 7)
    if divisor_override is not None:
        return ops.sum(windows, axis=window_axes) / divisor_override
    if not any(extra) and (count_include_pad or not any(p)):
        return ops.mean(windows, axis=window_axes)
    spatial = tuple(x.shape[2:])
    counted = np.zeros(tuple(n + 2 * pi + e for n, pi, e in zip(spatial, p, extra)))
    if count_include_pad:
        counted[tuple(slice(0, n + 2 * pi) for n, pi in zip(spatial, p))] = 1.0
    else:
        counted[tuple(slice(pi, pi + n) for n, pi in zip(spatial, p))] = 1.0
    out = tuple(windows.shape[2:5])
    view = np.lib.stride_tricks.sliding_window_view(counted, k)[::s[0], ::s[1], ::s[2]]
    divisor = view[:out[0], :out[1], :out[2]].sum((3, 4, 5))
    return ops.sum(windows, axis=window_axes) / ops.asarray(divisor, dtype=x.dtype, device=x.device)


def _select(windows: Any, positions: np.ndarray, inside: np.ndarray) -> Any:
    """Each window's selected position (PyTorch's rule: the first maximum inside the input,
    or the last NaN), from its taps ``windows`` (..., K) and their ``positions``."""
    n_taps = positions.shape[-1]
    mask = ops.asarray(inside, device=windows.device)
    low = ops.where(mask, windows, float("-inf"))
    top = ops.max(low, axis=-1, keepdims=True)
    first = ops.argmax(ops.logical_and(mask, low == top), axis=-1)
    nan = ops.logical_and(mask, ops.isnan(windows))
    last_nan = n_taps - 1 - ops.argmax(ops.flip(nan, axis=-1), axis=-1)
    pick = ops.where(ops.any(nan, axis=-1), last_nan, first)
    flat = ops.broadcast_to(ops.asarray(positions, device=windows.device), tuple(windows.shape))
    return ops.squeeze(ops.take_along_axis(flat, ops.expand_dims(pick, -1), axis=-1), -1)


def _gathered(x: Any, at: Any) -> Any:
    """``x``'s values at flat positions ``at`` (N, C, ...) of each channel: its gradient goes
    to those positions alone."""
    n, c = x.shape[0], x.shape[1]
    flat = ops.reshape(x, (n, c, -1))
    return ops.reshape(ops.take_along_axis(flat, ops.reshape(at, (n, c, -1)), axis=2), tuple(at.shape))


@volumes("max_pool3d")
def max_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling over (D, H, W); with ``return_indices``, PyTorch's indices (positions in
    each channel's flattened volume, for ``max_unpool3d``)."""
    windows, (k, s, p, d, _) = _pool("max_pool3d", x, kernel_size, stride, padding, dilation, ceil_mode, -math.inf)
    out = tuple(windows.shape[2:5])
    spatial = tuple(x.shape[2:])
    taps = [np.arange(o)[:, None] * si - pi + np.arange(kk)[None, :] * di for o, si, pi, kk, di in
            zip(out, s, p, k, d)]                                                         # (O, K) per axis
    ins = [(t >= 0) & (t < size) for t, size in zip(taps, spatial)]
    inside = (ins[0][:, None, None, :, None, None] & ins[1][None, :, None, None, :, None]
              & ins[2][None, None, :, None, None, :])
    clipped = [np.clip(t, 0, size - 1) for t, size in zip(taps, spatial)]
    positions = ((clipped[0][:, None, None, :, None, None] * spatial[1]
                  + clipped[1][None, :, None, None, :, None]) * spatial[2] + clipped[2][None, None, :, None, None, :])
    shape = (*out, math.prod(k))
    with no_grad():
        taps_of = ops.reshape(windows, (*tuple(windows.shape[:2]), *shape))
        at = _select(taps_of, positions.reshape(shape).astype(np.int64), inside.reshape(shape))
    values = _gathered(x, at)
    return (values, at.astype(int64)) if return_indices else values


@volumes("adaptive_avg_pool3d")
def adaptive_avg_pool3d(x: Any, output_size: Any) -> Any:
    """Average pooling to a fixed output size (``None`` keeps that axis), PyTorch's bins:
    a small averaging matrix per axis."""
    sizes = _adaptive_sizes("adaptive_avg_pool3d", x, output_size)
    mats = [ops.asarray(bin_averages(n, o), dtype=x.dtype, device=x.device) for n, o in zip(x.shape[2:], sizes)]
    return ops.einsum("ad,be,cf,nxdef->nxabc", *mats, x)


def _adaptive_sizes(op: str, x: Any, output_size: Any) -> tuple[int, int, int]:
    sizes = (output_size,) * 3 if isinstance(output_size, int) or output_size is None else tuple(output_size)
    out = tuple(n if o is None else int(o) for n, o in zip(x.shape[2:], sizes))
    if len(out) != 3 or min(out) < 1:
        raise ShapeError(f"{op}: output size {output_size!r} must be three positive sizes (or None)")
    return out  # type: ignore[return-value]


@volumes("adaptive_max_pool3d")
def adaptive_max_pool3d(x: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed output size, PyTorch's bins (the first maximum of each bin);
    with ``return_indices``, flat positions in each channel's volume."""
    out = _adaptive_sizes("adaptive_max_pool3d", x, output_size)
    spatial = tuple(x.shape[2:])
    bins = []
    for n, o in zip(spatial, out):
        starts = [(i * n) // o for i in range(o)]
        ends = [-((-(i + 1) * n) // o) for i in range(o)]
        width = max(e - b for b, e in zip(starts, ends))
        cells = np.array([[b + j for j in range(width)] for b in starts])
        bins.append((np.minimum(cells, n - 1), cells < np.array(ends)[:, None]))
    (t0, i0), (t1, i1), (t2, i2) = bins
    inside = i0[:, None, None, :, None, None] & i1[None, :, None, None, :, None] & i2[None, None, :, None, None, :]
    positions = (t0[:, None, None, :, None, None] * spatial[1] + t1[None, :, None, None, :, None]) * spatial[2] \
        + t2[None, None, :, None, None, :]
    inside = np.broadcast_to(inside, positions.shape)
    shape = (*out, math.prod(positions.shape[3:]))
    positions, inside = positions.reshape(shape), inside.reshape(shape)
    n_, c = x.shape[0], x.shape[1]
    with no_grad():
        flat = ops.reshape(x, (n_, c, -1))
        taps = ops.reshape(ops.take(flat, ops.asarray(positions.reshape(-1), device=x.device), axis=2),
                           (n_, c, *shape))
        at = _select(taps, positions.astype(np.int64), inside)
    values = _gathered(x, at)
    return (values, at.astype(int64)) if return_indices else values


class Conv3d(Module):
    """A 3-D convolution (cross-correlation) over ``(N, C, D, H, W)`` inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError("Conv3d: only padding_mode='zeros'")
        self.padding_mode = padding_mode
        channels_of("Conv3d", in_channels, out_channels, groups)
        k = triple(kernel_size, "Conv3d", "kernel_size", 1)
        self.in_channels, self.out_channels, self.kernel_size, self.groups = in_channels, out_channels, k, groups
        self.stride, self.dilation = triple(stride, "Conv3d", "stride", 1), triple(dilation, "Conv3d", "dilation", 1)
        self.padding = padding if isinstance(padding, str) else triple(padding, "Conv3d", "padding", 0)
        _padding(self.padding, k, self.stride, self.dilation)  # (a bad padding fails here, not at the call)
        self.weight = Parameter(ops.zeros((out_channels, in_channels // groups, *k), dtype, device=device))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            bound = 1 / math.sqrt(in_channels // groups * math.prod(k))
            self.bias = Parameter(ops.zeros((out_channels,), dtype, device=device))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)

    def forward(self, x: Any) -> Any:
        """The convolution of ``x``."""
        return conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (f", padding={self.padding}" if self.padding != (0, 0, 0) else "")
                + (f", dilation={self.dilation}" if self.dilation != (1, 1, 1) else "")
                + (f", groups={self.groups}" if self.groups != 1 else "")
                + (", bias=False" if self.bias is None else ""))


class ConvTranspose3d(ConvTransposeNd):
    """A 3-D transposed convolution (upsampling by ``stride``) over ``(N, C, D, H, W)`` inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", dtype: Any = None, device: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose3d: only padding_mode='zeros' (as in PyTorch), got {padding_mode!r}")
        op = "ConvTranspose3d"
        super().__init__(in_channels, out_channels, triple(kernel_size, op, "kernel_size", 1),
                         triple(stride, op, "stride", 1), triple(padding, op, "padding", 0),
                         triple(output_padding, op, "output_padding", 0), groups, bias,
                         triple(dilation, op, "dilation", 1), dtype, device)

    def forward(self, x: Any, output_size: Any = None) -> Any:
        """The transposed convolution; ``output_size`` picks among the sizes a stride allows."""
        return conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(x, output_size), self.groups, self.dilation)


class AvgPool3d(Module):
    """The mean over windows of ``(N, C, D, H, W)`` inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, \
            padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x: Any) -> Any:
        """The mean over each window."""
        return avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(Module):
    """The maximum over windows of ``(N, C, D, H, W)`` inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride if stride is not None \
            else kernel_size, padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: Any) -> Any:
        """The maximum over each window."""
        return max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AdaptiveAvgPool3d(Module):
    """The mean over bins that divide the input into ``output_size`` cells."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Any) -> Any:
        """The mean over each bin."""
        return adaptive_avg_pool3d(x, self.output_size)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3d(Module):
    """The maximum over bins that divide the input into ``output_size`` cells."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Any) -> Any:
        """The maximum over each bin."""
        return adaptive_max_pool3d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"output_size={self.output_size}"


def max_unpool3d(x: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Any:
    """The inverse of ``max_pool3d``: each value put back where ``indices`` says it came
    from, zeros elsewhere; the output's size is PyTorch's (or ``output_size``)."""
    unbatched = getattr(x, "ndim", None) == 4
    if unbatched:
        x, indices = ops.expand_dims(x, 0), ops.expand_dims(indices, 0)
    if getattr(x, "ndim", None) != 5 or tuple(indices.shape) != tuple(x.shape):
        raise ShapeError(f"max_unpool3d: x of shape {fmt_shape(tuple(getattr(x, 'shape', ())))} and indices of shape "
                         f"{fmt_shape(tuple(getattr(indices, 'shape', ())))} must be one (N, C, D, H, W) shape")
    k = triple(kernel_size, "max_unpool3d", "kernel_size", 1)
    s = triple(stride if stride is not None else k, "max_unpool3d", "stride", 1)
    p = triple(padding, "max_unpool3d", "padding", 0)
    size = tuple((n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(x.shape[2:], s, p, k)) if output_size is None \
        else tuple(int(v) for v in tuple(output_size)[-3:])
    n, c = x.shape[0], x.shape[1]
    rows = ops.expand_dims(ops.arange(n * c, device=x.device), 1)
    out = ops.zeros((n * c, math.prod(size)), x.dtype, device=x.device).at[
        rows, ops.reshape(indices, (n * c, -1))].set(ops.reshape(x, (n * c, -1)))
    out = ops.reshape(out, (n, c, *size))
    return out[0] if unbatched else out


class MaxUnpool3d(Module):
    """``max_unpool3d`` as a layer: ``forward(x, indices, output_size=None)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = triple(kernel_size, "MaxUnpool3d", "kernel_size", 1)
        self.stride = triple(stride if stride is not None else kernel_size, "MaxUnpool3d", "stride", 1)
        self.padding = triple(padding, "MaxUnpool3d", "padding", 0)

    def forward(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        """Each value put back where it came from."""
        return max_unpool3d(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
