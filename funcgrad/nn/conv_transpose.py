"""Transposed convolution, ``unfold`` and ``fold``: the adjoints of the windows that
convolution reads. Each multiplies (or reshapes) into one block per receptive field and
adds the blocks back where their windows lie (``windows_add``, the transpose of the
``windows`` view), so overlaps sum and no zeros are inserted between input pixels."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..errors import ShapeError
from ..primitives.checks import as_int
from ..primitives.core import bind, fmt_shape
from ..primitives.shape import windows_add_p
from . import init
from ._checks import same_dtype
from .conv import channels_of, check_4d, one_of, pad_hw, pair, patches, unbatched
from .module import Module
from .parameter import Parameter

__all__ = ["conv_transpose1d", "conv_transpose2d", "ConvTranspose1d", "ConvTranspose2d", "unfold", "fold", "Unfold",
           "Fold"]


def _add_windows(blocks: Any, size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int]) -> Any:
    """(N, C, OH, OW, KH, KW) blocks added onto an (N, C, *size) canvas where their windows lie."""
    return bind(windows_add_p, blocks, shape=tuple(blocks.shape[:2]) + size, axes=(2, 3), sizes=kernel,
                steps=stride, dilations=dilation)


def _crop(x: Any, start: tuple[int, int], size: tuple[int, int]) -> Any:
    """``x[..., start:start+size]`` on H and W, padding with zeros past the end (output_padding)."""
    extra = tuple(max(0, s + n - have) for s, n, have in zip(start, size, tuple(x.shape)[2:]))
    x = pad_hw(x, ((0, extra[0]), (0, extra[1])))
    return x[:, :, start[0]:start[0] + size[0], start[1]:start[1] + size[1]]


@unbatched
def conv_transpose2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """PyTorch's conv_transpose2d (the gradient of conv2d with respect to its input):
    x (N, C_in, H, W), weight (C_in, C_out/groups, KH, KW). The output's size is
    ``(H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1``."""
    op = "conv_transpose2d"
    check_4d(op, x)
    if getattr(weight, "ndim", None) != 4:
        raise ShapeError(f"{op}: the weight must be (in_channels, out_channels/groups, KH, KW), got shape "
                         f"{fmt_shape(tuple(getattr(weight, 'shape', ())))}")
    x = same_dtype(op, x, weight, bias)
    groups = as_int(op, groups, "groups", minimum=1)
    n, c, h, w = x.shape
    ci, og, kh, kw = weight.shape
    if c != ci or c % groups:
        raise ShapeError(f"{op}: input with {c} channels does not fit weight {fmt_shape(tuple(weight.shape))} "
                         f"with groups={groups} (the weight's first axis is the input channels)")
    s, p = pair(stride, op, "stride", 1), pair(padding, op, "padding", 0)
    d, extra = pair(dilation, op, "dilation", 1), pair(output_padding, op, "output_padding", 0)
    if any(e >= max(si, di) for e, si, di in zip(extra, s, d)):
        raise ValueError(f"{op}: output_padding {extra} must be smaller than the stride {s} or the dilation {d}, "
                         "as in PyTorch")
    size = tuple((i - 1) * si - 2 * pi + di * (k - 1) + e + 1 for i, si, pi, di, k, e in zip((h, w), s, p, d,
                                                                                            (kh, kw), extra))
    if min(size) < 1:
        raise ShapeError(f"{op}: an input of shape {fmt_shape(tuple(x.shape))} with kernel {(kh, kw)}, stride {s} and "
                         f"padding {p} gives the empty output size {size}")
    cg, o = c // groups, og * groups
    # (G, N*H*W, C/G) @ (G, C/G, O/G*KH*KW): every pixel's contribution to its window
    rows = ops.reshape(ops.transpose(ops.reshape(x, (n, groups, cg, h, w)), (1, 0, 3, 4, 2)), (groups, n * h * w, cg))
    blocks = ops.matmul(rows, ops.reshape(weight, (groups, cg, og * kh * kw)))
    blocks = ops.reshape(ops.transpose(ops.reshape(blocks, (groups, n, h, w, og, kh, kw)), (1, 0, 4, 2, 3, 5, 6)),
                         (n, o, h, w, kh, kw))
    full = ((h - 1) * s[0] + d[0] * (kh - 1) + 1, (w - 1) * s[1] + d[1] * (kw - 1) + 1)
    out = _crop(_add_windows(blocks, full, (kh, kw), s, d), p, size)
    return out if bias is None else out + ops.reshape(bias, (1, o, 1, 1))


def conv_transpose1d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """PyTorch's conv_transpose1d: x (N, C_in, L), weight (C_in, C_out/groups, K); a
    conv_transpose2d over a height of 1."""
    if getattr(x, "ndim", None) not in (2, 3) or getattr(weight, "ndim", None) != 3:
        shapes = [fmt_shape(tuple(getattr(a, "shape", ()))) for a in (x, weight)]
        raise ShapeError(f"conv_transpose1d: expects x (N, C, L) or (C, L) and weight (C_in, C_out/groups, K), got "
                         f"shapes {shapes[0]} and {shapes[1]}")
    unbatched = x.ndim == 2
    x4 = ops.expand_dims(x[None] if unbatched else x, 2)
    out = conv_transpose2d(x4, ops.expand_dims(weight, 2), bias, (1, one_of(stride)), (0, one_of(padding)),
                           (0, one_of(output_padding)), groups, (1, one_of(dilation)))
    out = ops.squeeze(out, 2)
    return out[0] if unbatched else out


class ConvTransposeNd(Module):
    """The shared constructor: weight (in, out/groups, *kernel), PyTorch's initialisation."""

    def __init__(self, in_channels: int, out_channels: int, kernel: tuple[int, ...], stride: tuple[int, ...],
                 padding: tuple[int, ...], output_padding: tuple[int, ...], groups: int, bias: bool,
                 dilation: tuple[int, ...], dtype: Any, device: Any) -> None:
        super().__init__()
        name = type(self).__name__
        channels_of(name, in_channels, out_channels, groups)
        for what, sizes, least in (("kernel_size", kernel, 1), ("stride", stride, 1), ("dilation", dilation, 1),
                                   ("padding", padding, 0), ("output_padding", output_padding, 0)):
            for size in sizes:
                as_int(name, size, what, minimum=least)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel
        self.stride, self.padding, self.output_padding = stride, padding, output_padding
        self.dilation, self.groups = dilation, groups
        self.weight = Parameter(ops.zeros((in_channels, out_channels // groups, *kernel), dtype, device=device))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            bound = 1 / math.sqrt(out_channels // groups * math.prod(kernel))  # PyTorch's fan_in: the weight's axis 1
            self.bias = Parameter(ops.zeros((out_channels,), dtype, device=device))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)

    def _output_padding(self, x: Any, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (PyTorch's ``forward(x, output_size)``):
        it must lie within one stride above the smallest output."""
        if output_size is None:
            return self.output_padding
        k = len(self.kernel_size)
        want = tuple(int(v) for v in tuple(output_size)[-k:])
        spatial = tuple(x.shape)[-k:]
        smallest = tuple((i - 1) * s - 2 * p + d * (kk - 1) + 1 for i, s, p, d, kk in zip(
            spatial, self.stride, self.padding, self.dilation, self.kernel_size))
        if any(not m <= v < m + max(s, d) for v, m, s, d in zip(want, smallest, self.stride, self.dilation)):
            raise ValueError(f"{type(self).__name__}: output_size {want} must lie between {smallest} and "
                             f"{tuple(m + max(s, d) - 1 for m, s, d in zip(smallest, self.stride, self.dilation))} "
                             f"for an input of shape {fmt_shape(tuple(x.shape))}")
        return tuple(v - m for v, m in zip(want, smallest))

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        k = len(self.kernel_size)
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (f", padding={self.padding}" if self.padding != (0,) * k else "")
                + (f", output_padding={self.output_padding}" if self.output_padding != (0,) * k else "")
                + (f", dilation={self.dilation}" if self.dilation != (1,) * k else "")
                + (f", groups={self.groups}" if self.groups != 1 else "")
                + (", bias=False" if self.bias is None else ""))


class ConvTranspose2d(ConvTransposeNd):
    """A 2-D transposed convolution (upsampling by ``stride``) over ``(N, C, H, W)`` inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", dtype: Any = None, device: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose2d: only padding_mode='zeros' (as in PyTorch), got {padding_mode!r}")
        super().__init__(in_channels, out_channels, pair(kernel_size), pair(stride), pair(padding),
                         pair(output_padding), groups, bias, pair(dilation), dtype, device)

    def forward(self, x: Any, output_size: Any = None) -> Any:
        """The transposed convolution; ``output_size`` picks among the sizes a stride allows."""
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(x, output_size), self.groups, self.dilation)


class ConvTranspose1d(ConvTransposeNd):
    """A 1-D transposed convolution over ``(N, C, L)`` inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", dtype: Any = None, device: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose1d: only padding_mode='zeros' (as in PyTorch), got {padding_mode!r}")
        super().__init__(in_channels, out_channels, (one_of(kernel_size),), (one_of(stride),), (one_of(padding),),
                         (one_of(output_padding),), groups, bias, (one_of(dilation),), dtype, device)

    def forward(self, x: Any, output_size: Any = None) -> Any:
        """The transposed convolution; ``output_size`` picks among the sizes a stride allows."""
        (extra,) = self._output_padding(x, output_size)
        return conv_transpose1d(x, self.weight, self.bias, self.stride[0], self.padding[0], extra, self.groups,
                                self.dilation[0])


def _blocks_geometry(op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> tuple[Any, ...]:
    return (pair(kernel_size, op, "kernel_size", 1), pair(dilation, op, "dilation", 1),
            pair(padding, op, "padding", 0), pair(stride, op, "stride", 1))


def unfold(x: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """PyTorch's unfold (im2col): (N, C, H, W) -> (N, C * KH * KW, L), one column per sliding
    block, L blocks in row-major order; an unbatched (C, H, W) gives (C * KH * KW, L)."""
    unbatched = getattr(x, "ndim", None) == 3
    if unbatched:
        x = ops.expand_dims(x, 0)
    check_4d("unfold", x)
    k, d, p, s = _blocks_geometry("unfold", kernel_size, dilation, padding, stride)
    n, c = x.shape[0], x.shape[1]
    blocks = patches(pad_hw(x, ((p[0], p[0]), (p[1], p[1]))), k, s, d)           # (N, C, OH, OW, KH, KW)
    oh, ow = blocks.shape[2], blocks.shape[3]
    out = ops.reshape(ops.transpose(blocks, (0, 1, 4, 5, 2, 3)), (n, c * k[0] * k[1], oh * ow))
    return out[0] if unbatched else out


def fold(x: Any, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """PyTorch's fold (col2im), the adjoint of ``unfold``: (N, C * KH * KW, L) columns added
    back into an (N, C, *output_size) image, overlapping blocks summed."""
    op = "fold"
    unbatched = getattr(x, "ndim", None) == 2
    if unbatched:
        x = ops.expand_dims(x, 0)
    if getattr(x, "ndim", None) != 3:
        raise ShapeError(f"{op}: expected (N, C * KH * KW, L) or unbatched (C * KH * KW, L) columns, got shape "
                         f"{fmt_shape(tuple(getattr(x, 'shape', ())))}")
    size = pair(output_size, op, "output_size", 1)
    k, d, p, s = _blocks_geometry(op, kernel_size, dilation, padding, stride)
    counts = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in (0, 1))
    n, rows, length = x.shape
    if rows % (k[0] * k[1]) or min(counts) < 1 or length != counts[0] * counts[1]:
        raise ShapeError(f"{op}: columns of shape {fmt_shape(tuple(x.shape))} do not fit output_size {size} with "
                         f"kernel {k}, dilation {d}, padding {p} and stride {s}: expected (N, C * {k[0] * k[1]}, "
                         f"{max(counts[0], 0) * max(counts[1], 0)})")
    c = rows // (k[0] * k[1])
    blocks = ops.transpose(ops.reshape(x, (n, c, k[0], k[1], counts[0], counts[1])), (0, 1, 4, 5, 2, 3))
    out = _add_windows(blocks, (size[0] + 2 * p[0], size[1] + 2 * p[1]), k, s, d)
    out = out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return out[0] if unbatched else out


class Unfold(Module):
    """Sliding blocks of ``(N, C, H, W)`` inputs as columns (``F.unfold``)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x: Any) -> Any:
        """Sliding blocks of ``(N, C, H, W)`` inputs as columns (``F.unfold``)."""
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    """Columns of sliding blocks added back into an image (``F.fold``)."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Any) -> Any:
        """Columns of sliding blocks added back into an image (``F.fold``)."""
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
