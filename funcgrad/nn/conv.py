"""Convolution and pooling from strided views: ``windows`` (no copy) gives every
receptive field, then one reshape (the im2col copy) and a matmul. No Python loop
over pixels."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import ops
from ..dtypes import int64
from ..errors import ArgumentValueError, DTypeError, ShapeError
from ..primitives.checks import as_int
from ..primitives.convolution import conv_p
from ..primitives.core import bind, fmt_shape
from ..primitives.pooling import select_and_gather_p
from ..primitives.shape import windows_p
from . import init
from ._checks import outside, same_dtype
from .module import Module
from .parameter import Parameter

__all__ = ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d",
           "conv1d", "Conv1d", "conv2d", "max_pool2d", "max_unpool2d", "avg_pool2d", "adaptive_avg_pool2d", "Conv2d",
           "MaxPool2d",
           "MaxUnpool2d", "AvgPool2d", "AdaptiveAvgPool2d"]


def pair(v: Any, op: str = "conv2d", what: str = "size", minimum: int | None = None) -> tuple[int, int]:
    """An int or a pair of ints as a pair, each checked (``ArgumentTypeError`` for a float or
    a string, ``ArgumentValueError`` below ``minimum``: PyTorch refuses a zero stride)."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ArgumentValueError(f"{op}: {what} must be an int or a pair of ints, got {v!r}")
        both = (v[0], v[1])
    else:
        both = (v, v)
    return (as_int(op, both[0], what, minimum=minimum), as_int(op, both[1], what, minimum=minimum))


def check_4d(op: str, x: Any) -> None:
    if x.ndim != 4:
        raise ShapeError(f"{op}: expected a (N, C, H, W) or unbatched (C, H, W) input, "
                         f"got shape {fmt_shape(tuple(x.shape))}")


def unbatched(fn: Any) -> Any:
    """Let a 2-D layer function take one unbatched (C, H, W) image, as PyTorch's do: it
    runs on a batch of one, and the batch axis comes off the result."""
    @functools.wraps(fn)
    def wrapper(x: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(x, "ndim", None) == 3:
            out = fn(ops.expand_dims(x, 0), *args, **kwargs)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return fn(x, *args, **kwargs)

    return wrapper


def pad_hw(x: Any, padding: tuple[tuple[int, int], tuple[int, int]], value: float = 0.0,
            mode: str = "constant") -> Any:
    """Pad the last two axes (H and W) by ``((top, bottom), (left, right))``: with ``value``,
    or in one of NumPy's other pad modes."""
    if padding == ((0, 0), (0, 0)):
        return x
    widths = ((0, 0),) * (x.ndim - 2) + padding
    return ops.pad(x, widths, constant_values=value) if mode == "constant" else ops.pad(x, widths, mode=mode)


# Conv2d's padding_mode (PyTorch's names) as NumPy's pad modes
_PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_edges(x: Any, padding: tuple[tuple[int, int], tuple[int, int]], padding_mode: str) -> Any:
    """Pad the last two axes of an image or a batch of them with copies of the image's own
    values, as PyTorch's non-zero ``padding_mode``: mirrored without repeating the edge
    (``reflect``), repeating it (``replicate``) or from the other side (``circular``).
    PyTorch refuses a reflection as wide as the image, or a wrap wider than it: so does this."""
    for (lo, hi), size, axis in zip(padding, tuple(x.shape)[-2:], ("H", "W")):
        if (padding_mode == "reflect" and max(lo, hi) >= size) or (padding_mode == "circular" and max(lo, hi) > size):
            limit = "less than" if padding_mode == "reflect" else "at most"
            raise ValueError(f"conv2d: padding_mode={padding_mode!r} needs padding {limit} the input's {axis} size; "
                             f"got padding ({lo}, {hi}) for an input of shape {fmt_shape(tuple(x.shape))}")
    return pad_hw(x, padding, mode=_PADDING_MODES[padding_mode])


def _symmetric(padding: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    ph, pw = pair(padding, "conv2d", "padding", 0)
    return (ph, ph), (pw, pw)


def _conv_padding(padding: Any, kernel: tuple[int, int], stride: tuple[int, int],
                  dilation: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """PyTorch's conv padding: an int or pair, ``"valid"`` (none) or ``"same"`` (the output
    keeps the input's size; an odd total puts the extra row and column after, as PyTorch)."""
    if not isinstance(padding, str):
        return _symmetric(padding)
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding != "same":
        raise ValueError(f"conv2d: padding must be an int, a pair, 'same' or 'valid', got {padding!r}")
    if stride != (1, 1):
        raise ValueError(f"conv2d: padding='same' needs stride 1 (as in PyTorch), got stride={stride}")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return (totals[0] // 2, totals[0] - totals[0] // 2), (totals[1] // 2, totals[1] - totals[1] // 2)


def patches(x: Any, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int]) -> Any:
    """(N, C, H, W) -> (N, C, OH, OW, KH, KW): every receptive field, as a view."""
    return bind(windows_p, x, axes=(2, 3), sizes=kernel, steps=stride, dilations=dilation)


@unbatched
def conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """A 2-D convolution (cross-correlation), as ``torch.nn.functional.conv2d``: padding
    first, then the ``conv`` primitive.

    Args:
        x: the input, (N, C, H, W) or one unbatched (C, H, W) image.
        weight: (O, C/groups, KH, KW).
        bias: (O,), added to each output channel.
        stride: an int or a pair.
        padding: an int, a pair, ``"valid"`` or ``"same"``.
        dilation: an int or a pair.
        groups: how many groups the channels split into.

    Returns:
        (N, O, OH, OW).

    Example:
        >>> fg.nn.functional.conv2d(fg.ones((1, 1, 4, 4)), fg.ones((2, 1, 3, 3)), padding=1).shape
        (1, 2, 4, 4)
    """
    check_4d("conv2d", x)
    if getattr(weight, "ndim", None) != 4:
        raise ShapeError(f"conv2d: the weight must be (out_channels, in_channels/groups, KH, KW), got shape "
                         f"{fmt_shape(tuple(getattr(weight, 'shape', ())))}")
    x = same_dtype("conv2d", x, weight, bias)
    groups = as_int("conv2d", groups, "groups", minimum=1)
    c = x.shape[1]
    o, cg, kh, kw = weight.shape
    if c != cg * groups or o % groups:
        raise ShapeError(f"conv2d: input with {c} channels does not fit weight {fmt_shape(tuple(weight.shape))} "
                         f"with groups={groups}")
    stride, dilation = pair(stride, "conv2d", "stride", 1), pair(dilation, "conv2d", "dilation", 1)
    padded = pad_hw(x, _conv_padding(padding, (kh, kw), stride, dilation))
    out = bind(conv_p, padded, weight, strides=stride, dilations=dilation, groups=groups)
    return out if bias is None else out + ops.reshape(bias, (1, o, 1, 1))


def conv1d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """PyTorch's conv1d: x (N, C, L), weight (O, C/groups, K); a conv2d over a height of 1."""
    if getattr(x, "ndim", None) not in (2, 3) or getattr(weight, "ndim", None) != 3:
        shapes = [fmt_shape(tuple(getattr(a, "shape", ()))) for a in (x, weight)]
        raise ShapeError(f"conv1d: expects x (N, C, L) or (C, L) and weight (O, C/groups, K), got shapes "
                         f"{shapes[0]} and {shapes[1]}")
    unbatched = x.ndim == 2
    x4 = ops.expand_dims(x[None] if unbatched else x, 2)
    pad = padding if isinstance(padding, str) else (0, one_of(padding))
    out = conv2d(x4, ops.expand_dims(weight, 2), bias, (1, one_of(stride)), pad, (1, one_of(dilation)), groups)
    out = ops.squeeze(out, 2)
    return out[0] if unbatched else out


def one_of(v: Any, op: str = "conv1d", what: str = "size", minimum: int | None = None) -> int:
    """A 1-D size: an int or a one-element tuple, checked as ``pair`` checks."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ArgumentValueError(f"{op}: {what} must be an int or a one-element tuple, got {v!r}")
        v = v[0]
    return as_int(op, v, what, minimum=minimum)


def channels_of(op: str, in_channels: Any, out_channels: Any, groups: Any) -> None:
    """PyTorch's checks of a convolution's channels, where the layer is made."""
    in_channels = as_int(op, in_channels, "in_channels", minimum=1)
    out_channels = as_int(op, out_channels, "out_channels", minimum=1)
    groups = as_int(op, groups, "groups", minimum=1)
    if in_channels % groups or out_channels % groups:
        raise ArgumentValueError(f"{op}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                                 f"divisible by groups ({groups})")


def pool_geometry(op: str, x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
                   dilation: tuple[int, ...], ceil_mode: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's pooling output size per spatial axis, and the extra padding after the
    input that ``ceil_mode`` needs for its last, partial window: ``((oh, ow), (eh, ew))``
    for two axes (any number of axes: one entry each).
    As in PyTorch, a window may not start in the padding after the input, and the padding
    may be at most half the (dilated) kernel, so that no window is padding alone."""
    sizes, extras = [], []
    for size, k, s, p, d in zip(tuple(x.shape)[2:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        if p > span // 2:
            raise ValueError(f"{op}: padding {padding} must be at most half the kernel {kernel} "
                             f"(dilated: {span}), as in PyTorch")
        room = size + 2 * p - span
        # PyTorch's count, rounding down (or up, with ceil_mode): with ceil_mode a window
        # may reach past the padded input, even when the dilated kernel is wider than it
        out = (room + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= size + p:  # the last window would start after the input
            out -= 1
        if out < 1:
            hint = " (ceil_mode=True would let a window reach past it)" if not ceil_mode and room >= 1 - s else ""
            raise ShapeError(f"{op}: an input of shape {fmt_shape(tuple(x.shape))} padded by {padding} is smaller "
                             f"than the kernel {kernel}" + (f" with dilation {dilation}" if span != k else "") + hint)
        sizes.append(out)
        extras.append(max(0, (out - 1) * s + span - (size + 2 * p)))
    return tuple(sizes), tuple(extras)  # type: ignore[return-value]


def _pool_windows(op: str, x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                  fill: float) -> tuple[Any, tuple[tuple[int, ...], ...]]:
    """The pooling windows (N, C, OH, OW, KH, KW) of ``x`` padded with ``fill``, as a view,
    and the geometry they were cut with: kernel, stride, padding, and the extra padding
    after the input that ``ceil_mode`` added."""
    check_4d(op, x)
    k = pair(kernel_size, op, "kernel_size", 1)
    s = pair(stride if stride is not None else k, op, "stride", 1)
    p, d = pair(padding, op, "padding", 0), pair(dilation, op, "dilation", 1)
    (oh, ow), extra = pool_geometry(op, x, k, s, p, d, ceil_mode)
    padded = pad_hw(x, ((p[0], p[0] + extra[0]), (p[1], p[1] + extra[1])), fill)
    windows = patches(padded, k, s, d)
    if tuple(windows.shape[2:4]) != (oh, ow):  # ceil_mode dropped a window starting after the input
        windows = windows[:, :, :oh, :ow]
    return windows, (k, s, p, extra)


@unbatched
def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling; with ``return_indices`` also where each maximum came from, as PyTorch's
    indices: the position in its channel's flattened (H, W) input (for ``max_unpool2d``).
    Each window selects the first maximum inside the input (or its last NaN), as PyTorch's
    kernels do; the gradient goes to that position alone."""
    check_4d("max_pool2d", x)
    k = pair(kernel_size, "max_pool2d", "kernel_size", 1)
    s = pair(stride if stride is not None else k, "max_pool2d", "stride", 1)
    p, d = pair(padding, "max_pool2d", "padding", 0), pair(dilation, "max_pool2d", "dilation", 1)
    shape, _ = pool_geometry("max_pool2d", x, k, s, p, d, ceil_mode)
    geometry = {"sizes": k, "steps": s, "padding": p, "dilations": d, "shape": shape}
    out = bind(select_and_gather_p, x, x, **geometry)
    if not return_indices:
        return out
    h, w = x.shape[2], x.shape[3]
    positions = ops.reshape(ops.arange(h * w, dtype=int64, device=x.device), (h, w))
    return out, bind(select_and_gather_p, positions, x, **geometry)


def max_unpool2d(x: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Any:
    """The inverse of ``max_pool2d``: each value of ``x`` put back where ``indices`` (from
    ``max_pool2d(..., return_indices=True)``) says it came from, zeros elsewhere. The
    output's size is PyTorch's, ``(H - 1) * stride - 2 * padding + kernel``, or
    ``output_size`` (within one stride of that, as in PyTorch)."""
    unbatched = getattr(x, "ndim", None) == 3
    if unbatched:
        x, indices = ops.expand_dims(x, 0), ops.expand_dims(indices, 0)
    check_4d("max_unpool2d", x)
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"max_unpool2d: indices must be integers (from max_pool2d(..., return_indices=True)), "
                         f"got {indices.dtype}")
    if tuple(indices.shape) != tuple(x.shape):
        raise ShapeError(f"max_unpool2d: indices of shape {fmt_shape(tuple(indices.shape))} for an input of shape "
                         f"{fmt_shape(tuple(x.shape))}: they must match (both from one max_pool2d)")
    k = pair(kernel_size)
    s, p = pair(stride if stride is not None else k), pair(padding)
    default = tuple((size - 1) * st - 2 * pd + kk for size, st, pd, kk in zip(x.shape[2:], s, p, k))
    if output_size is None:
        size = default
    else:
        size = tuple(int(v) for v in tuple(output_size)[-2:])
        if len(tuple(output_size)) not in (2, 3, 4) or any(
                not d - st < v < d + st for v, d, st in zip(size, default, s)):
            raise ValueError(f"max_unpool2d: output_size {tuple(output_size)} must give (H, W) within one stride "
                             f"{s} of the default {default}")
    n, c, h, w = x.shape
    cells = size[0] * size[1]
    # an index outside the output raises on the CPU; elsewhere (a GPU, a trace) its channel comes out NaN
    bad = outside("max_unpool2d", indices, cells, "index", f"output cells (H, W) = {size}")
    if bad is not None:
        indices = ops.where(bad, 0, indices)
    rows = ops.expand_dims(ops.arange(n * c, device=x.device), 1)
    out = ops.zeros((n * c, cells), x.dtype, device=x.device).at[rows, ops.reshape(indices, (n * c, h * w))].set(
        ops.reshape(x, (n * c, h * w)))
    out = ops.reshape(out, (n, c) + size)
    if bad is not None:
        out = ops.where(ops.any(bad, axis=(2, 3), keepdims=True), float("nan"), out)
    return out[0] if unbatched else out


@unbatched
def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Any:
    """Average pooling, PyTorch's divisors: with ``count_include_pad`` the padding counts in
    the average (not the extra padding ``ceil_mode`` adds); without, only the input does;
    ``divisor_override`` replaces both."""
    windows, (k, s, p, extra) = _pool_windows("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode, 0.0)
    if divisor_override is not None:
        return ops.sum(windows, axis=(4, 5)) / divisor_override
    if extra == (0, 0) and (count_include_pad or p == (0, 0)):
        return ops.mean(windows, axis=(4, 5))  # every window is whole: one divisor
    # the divisor of each window: how many of its positions count, from the same windows
    # over a mask of the counted positions (host arithmetic on the shapes alone)
    h, w = x.shape[2], x.shape[3]
    counted = np.zeros((h + 2 * p[0] + extra[0], w + 2 * p[1] + extra[1]))
    if count_include_pad:
        counted[:h + 2 * p[0], :w + 2 * p[1]] = 1.0
    else:
        counted[p[0]:p[0] + h, p[1]:p[1] + w] = 1.0
    oh, ow = windows.shape[2], windows.shape[3]
    divisor = np.lib.stride_tricks.sliding_window_view(counted, k)[::s[0], ::s[1]][:oh, :ow].sum((2, 3))
    return ops.sum(windows, axis=(4, 5)) / ops.asarray(divisor, dtype=x.dtype, device=x.device)


def bin_averages(size: int, out: int) -> np.ndarray:
    """The (out, size) matrix of PyTorch's adaptive bins: row i averages input positions
    floor(i * size / out) to ceil((i + 1) * size / out)."""
    matrix = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


@unbatched
def adaptive_avg_pool2d(x: Any, output_size: Any) -> Any:
    """Average pooling to a fixed output size (``None`` keeps that axis), PyTorch's bins.
    Each axis's averaging is a small matrix, so the pooling is two contractions: no loop
    over bins, and bins that overlap (when the size does not divide) are exact."""
    check_4d("adaptive_avg_pool2d", x)
    sizes = (output_size, output_size) if isinstance(output_size, int) or output_size is None else output_size
    oh, ow = (x.shape[2] if sizes[0] is None else sizes[0]), (x.shape[3] if sizes[1] is None else sizes[1])
    if oh < 1 or ow < 1:
        raise ShapeError(f"adaptive_avg_pool2d: output size {(oh, ow)} must be positive")
    rows = ops.asarray(bin_averages(x.shape[2], oh), dtype=x.dtype, device=x.device)
    cols = ops.asarray(bin_averages(x.shape[3], ow), dtype=x.dtype, device=x.device)
    return ops.einsum("ih,nchw,jw->ncij", rows, x, cols)


class Conv2d(Module):
    """A 2-D convolution (cross-correlation) over ``(N, C, H, W)`` inputs
    (``F.conv2d``), with PyTorch's initialisation drawn from the global generator.

    Args:
        in_channels: C.
        out_channels: O.
        kernel_size: an int or a pair.
        stride: an int or a pair.
        padding: an int, a pair, ``"valid"`` or ``"same"``.
        dilation: an int or a pair.
        groups: how many groups the channels split into.
        bias: learn a bias per output channel.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        dtype: the parameters' dtype (float32 by default).
        device: where the parameters live.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.nn.Conv2d(1, 2, 3).bias.tolist()   # torch.manual_seed(0); torch.nn.Conv2d(1, 2, 3).bias
        [-0.22598037123680115, -0.14515428245067596]
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"Conv2d: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                             f"got {padding_mode!r}")
        self.padding_mode = padding_mode
        channels_of("Conv2d", in_channels, out_channels, groups)
        kh, kw = pair(kernel_size, "Conv2d", "kernel_size", minimum=1)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, (kh, kw)
        self.stride, self.dilation = pair(stride, "Conv2d", "stride", 1), pair(dilation, "Conv2d", "dilation", 1)
        self.groups = groups
        self.padding = padding if isinstance(padding, str) else pair(padding, "Conv2d", "padding", 0)
        _conv_padding(self.padding, (kh, kw), self.stride, self.dilation)  # a bad padding fails here, not at the call
        self.weight = Parameter(ops.zeros((out_channels, in_channels // groups, kh, kw), dtype, device=device))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            fan_in = in_channels // groups * kh * kw
            self.bias = Parameter(ops.zeros((out_channels,), dtype, device=device))
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)

    def forward(self, x: Any) -> Any:
        """A 2-D convolution (cross-correlation) over ``(N, C, H, W)`` inputs."""
        if self.padding_mode == "zeros" or getattr(x, "ndim", None) not in (3, 4):
            return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        # as PyTorch: pad with the image's own values first, then convolve with no padding
        padded = _pad_edges(x, _conv_padding(self.padding, self.kernel_size, self.stride, self.dilation),
                            self.padding_mode)
        return conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (f", padding={self.padding}" if self.padding != (0, 0) else "")
                + (f", dilation={self.dilation}" if self.dilation != (1, 1) else "")
                + (f", groups={self.groups}" if self.groups != 1 else "")
                + (", bias=False" if self.bias is None else "")
                + (f", padding_mode={self.padding_mode}" if self.padding_mode != "zeros" else ""))


class Conv1d(Module):
    """A 1-D convolution (cross-correlation) over ``(N, C, L)`` inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError("Conv1d: only padding_mode='zeros'")
        self.padding_mode = padding_mode
        channels_of("Conv1d", in_channels, out_channels, groups)
        k = one_of(kernel_size, "Conv1d", "kernel_size", minimum=1)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, (k,)
        self.stride = (one_of(stride, "Conv1d", "stride", 1),)
        self.dilation = (one_of(dilation, "Conv1d", "dilation", 1),)
        self.groups = groups
        self.padding = padding if isinstance(padding, str) else (one_of(padding, "Conv1d", "padding", 0),)
        self.weight = Parameter(ops.zeros((out_channels, in_channels // groups, k), dtype, device=device))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            bound = 1 / math.sqrt(in_channels // groups * k)  # (channels and k are at least 1: checked above)
            self.bias = Parameter(ops.zeros((out_channels,), dtype, device=device))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)

    def forward(self, x: Any) -> Any:
        """A 1-D convolution (cross-correlation) over ``(N, C, L)`` inputs."""
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return conv1d(x, self.weight, self.bias, self.stride[0], padding, self.dilation[0], self.groups)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (f", padding={self.padding}" if self.padding != (0,) else "")
                + (f", dilation={self.dilation}" if self.dilation != (1,) else "")
                + (f", groups={self.groups}" if self.groups != 1 else "")
                + (", bias=False" if self.bias is None else ""))


def as_2d(x: Any, op: str) -> tuple[Any, bool]:
    """A (N, C, L) or unbatched (C, L) input as (N, C, 1, L): 1-d pooling is 2-d pooling
    with a height of one."""
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a (N, C, L) or unbatched (C, L) input, got shape {fmt_shape(tuple(x.shape))}")
    batched = x.ndim == 3
    return (x if batched else x[None])[:, :, None, :], batched


def from_2d(out: Any, batched: bool) -> Any:
    out = out[:, :, 0, :]
    return out if batched else out[0]


def one_int(v: Any) -> int:
    return int(v[0]) if isinstance(v, (tuple, list)) else int(v)


def max_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling over the last axis of (N, C, L) inputs (``return_indices``: positions in L)."""
    x2, batched = as_2d(x, "max_pool1d")
    k = one_int(kernel_size)
    out = max_pool2d(x2, (1, k), (1, one_int(stride) if stride is not None else k), (0, one_int(padding)),
                     (1, one_int(dilation)), ceil_mode, return_indices)
    if return_indices:
        return from_2d(out[0], batched), from_2d(out[1], batched)
    return from_2d(out, batched)


def avg_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Any:
    """Average pooling over the last axis of (N, C, L) inputs, PyTorch's divisors."""
    x2, batched = as_2d(x, "avg_pool1d")
    k = one_int(kernel_size)
    return from_2d(avg_pool2d(x2, (1, k), (1, one_int(stride) if stride is not None else k), (0, one_int(padding)),
                               ceil_mode, count_include_pad), batched)


def adaptive_avg_pool1d(x: Any, output_size: Any) -> Any:
    """Average pooling of the last axis to ``output_size`` cells, PyTorch's bins."""
    x2, batched = as_2d(x, "adaptive_avg_pool1d")
    return from_2d(adaptive_avg_pool2d(x2, (1, one_int(output_size))), batched)


class AvgPool1d(Module):
    """The mean over windows of ``(N, C, L)`` inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = (one_int(kernel_size),)
        self.stride = (one_int(stride),) if stride is not None else self.kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = (one_int(padding),), ceil_mode, count_include_pad

    def forward(self, x: Any) -> Any:
        """The mean over windows of ``(N, C, L)`` inputs."""
        return avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(Module):
    """The maximum over windows of ``(N, C, H, W)`` inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: Any) -> Any:
        """The maximum over windows of ``(N, C, H, W)`` inputs."""
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(MaxPool2d):
    """The maximum over windows of ``(N, C, L)`` inputs."""

    def forward(self, x: Any) -> Any:
        """The maximum over windows of ``(N, C, L)`` inputs."""
        return max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class MaxUnpool2d(Module):
    """``max_unpool2d`` as a layer: ``forward(x, indices, output_size=None)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = pair(kernel_size)
        self.stride, self.padding = pair(stride if stride is not None else kernel_size), pair(padding)

    def forward(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        """``max_unpool2d`` as a layer: ``forward(x, indices, output_size=None)``."""
        return max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean over windows of ``(N, C, H, W)`` inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x: Any) -> Any:
        """The mean over windows of ``(N, C, H, W)`` inputs."""
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """The mean over windows that divide the input into ``output_size`` cells."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Any) -> Any:
        """The mean over windows that divide the input into ``output_size`` cells."""
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """The mean over windows that divide the last axis into ``output_size`` cells."""

    def forward(self, x: Any) -> Any:
        """The mean over windows that divide the last axis into ``output_size`` cells."""
        return adaptive_avg_pool1d(x, self.output_size)
