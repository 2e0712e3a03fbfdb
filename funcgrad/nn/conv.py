"""Convolution and pooling from strided views: ``windows`` (no copy) gives every
receptive field, then one reshape (the im2col copy) and a matmul. No Python loop
over pixels."""

from __future__ import annotations

import math
from typing import Any

from .. import ops as _o
from ..errors import ShapeError
from ..primitives.core import bind, fmt_shape
from ..primitives.shape import windows_p
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "Conv2d", "MaxPool2d", "AvgPool2d"]


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _check4(op: str, x: Any) -> None:
    if x.ndim != 4:
        raise ShapeError(f"{op}: expected a (N, C, H, W) input, got shape {fmt_shape(tuple(x.shape))}")


def _pad_hw(x: Any, padding: tuple[tuple[int, int], tuple[int, int]], value: float = 0.0) -> Any:
    """Pad H and W by ``((top, bottom), (left, right))``."""
    if padding == ((0, 0), (0, 0)):
        return x
    return _o.pad(x, ((0, 0), (0, 0)) + padding, constant_values=value)


def _symmetric(padding: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    ph, pw = _pair(padding)
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


def _patches(x: Any, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int]) -> Any:
    """(N, C, H, W) -> (N, C, OH, OW, KH, KW): every receptive field, as a view."""
    return bind(windows_p, x, axes=(2, 3), sizes=kernel, steps=stride, dilations=dilation)


def conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """PyTorch's conv2d: x (N, C, H, W), weight (O, C/groups, KH, KW)."""
    _check4("conv2d", x)
    n, c = x.shape[0], x.shape[1]
    o, cg, kh, kw = weight.shape
    if c != cg * groups or o % groups:
        raise ShapeError(f"conv2d: input with {c} channels does not fit weight {fmt_shape(tuple(weight.shape))} "
                         f"with groups={groups}")
    stride, dilation = _pair(stride), _pair(dilation)
    p = _patches(_pad_hw(x, _conv_padding(padding, (kh, kw), stride, dilation)), (kh, kw), stride, dilation)
    oh, ow = p.shape[2], p.shape[3]
    # (N, OH, OW, G, C/G, KH, KW) -> (G, N*OH*OW, C/G*KH*KW): the one copy (im2col)
    cols = _o.reshape(_o.transpose(_o.reshape(p, (n, groups, cg, oh, ow, kh, kw)), (1, 0, 3, 4, 2, 5, 6)),
                      (groups, n * oh * ow, cg * kh * kw))
    w = _o.reshape(weight, (groups, o // groups, cg * kh * kw))
    out = _o.matmul(cols, _o.matrix_transpose(w))                       # (G, N*OH*OW, O/G)
    out = _o.transpose(_o.reshape(out, (groups, n, oh, ow, o // groups)), (1, 0, 4, 2, 3))
    out = _o.reshape(out, (n, o, oh, ow))
    return out if bias is None else out + _o.reshape(bias, (1, o, 1, 1))


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1) -> Any:
    _check4("max_pool2d", x)
    k = _pair(kernel_size)
    stride = _pair(stride if stride is not None else k)
    p = _patches(_pad_hw(x, _symmetric(padding), -math.inf), k, stride, _pair(dilation))
    return _o.max(p, axis=(4, 5))


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """Average pooling; padded zeros count in the average (PyTorch's count_include_pad=True)."""
    _check4("avg_pool2d", x)
    k = _pair(kernel_size)
    p = _patches(_pad_hw(x, _symmetric(padding)), k, _pair(stride if stride is not None else k), (1, 1))
    return _o.mean(p, axis=(4, 5))


class Conv2d(Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        kh, kw = _pair(kernel_size)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, (kh, kw)
        self.stride, self.dilation, self.groups = _pair(stride), _pair(dilation), groups
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        _conv_padding(self.padding, (kh, kw), self.stride, self.dilation)  # a bad padding fails here, not at the call
        self.weight = Parameter(_o.zeros((out_channels, in_channels // groups, kh, kw), dtype, device=device))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            fan_in = in_channels // groups * kh * kw
            self.bias = Parameter(_o.zeros((out_channels,), dtype, device=device))
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        else:
            self.bias = None

    def forward(self, x: Any) -> Any:
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (f", padding={self.padding}" if self.padding != (0, 0) else "")
                + (f", dilation={self.dilation}" if self.dilation != (1, 1) else "")
                + (f", groups={self.groups}" if self.groups != 1 else "")
                + (", bias=False" if self.bias is None else ""))


class MaxPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation

    def forward(self, x: Any) -> Any:
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}"


class AvgPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Any) -> Any:
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}"
