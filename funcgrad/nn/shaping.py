"""Modules that reshape, pad or regroup their input, and the shrinkage activations, each a
thin module over its ``F.*`` form, checked against PyTorch (values, gradients, ``state_dict``
names): ``Unflatten``, ``ChannelShuffle``, the padding modules (zero, constant,
reflection, replication and circular, in 1 to 3 dimensions), ``Hardshrink``,
``Softshrink``, ``Tanhshrink``, ``Softmax2d`` and ``RMSNorm``."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..errors import ArgumentValueError, ShapeError
from ..primitives.core import fmt_shape
from . import functional as F
from .module import Module
from .parameter import Parameter

__all__ = ["Unflatten", "ChannelShuffle", "Hardshrink", "Softshrink", "Tanhshrink", "Softmax2d", "RMSNorm",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class Unflatten(Module):
    """Axis ``dim`` split into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Any) -> Any:
        """Axis ``dim`` split into ``unflattened_size``."""
        dim = self.dim % x.ndim
        return ops.reshape(x, (*x.shape[:dim], *self.unflattened_size, *x.shape[dim + 1:]))

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class ChannelShuffle(Module):
    """The channels interleaved across ``groups`` (``F.channel_shuffle``)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, x: Any) -> Any:
        """The channels interleaved across ``groups``."""
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"groups={self.groups}"


class _Shrink(Module):
    fn: Any = None

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Any) -> Any:
        return type(self).fn(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""

    fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """``x`` moved towards 0 by ``lambd``, and 0 within ``lambd`` of it."""

    fn = staticmethod(F.softshrink)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, x: Any) -> Any:
        """``x - tanh(x)``."""
        return F.tanhshrink(x)


class Softmax2d(Module):
    """Softmax over the channels of each position of ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    def forward(self, x: Any) -> Any:
        """Softmax over axis -3."""
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected (C, H, W) or (N, C, H, W) input, got shape "
                             f"{fmt_shape(tuple(x.shape))}")
        return F.softmax(x, -3)


class RMSNorm(Module):
    """Root-mean-square normalization over the last axes ``normalized_shape``, with a learned
    scale (``elementwise_affine``), as PyTorch's ``RMSNorm``."""

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(ops.ones(self.normalized_shape, dtype=dtype, device=device)) if elementwise_affine \
            else None

    def forward(self, x: Any) -> Any:
        """``x / sqrt(mean(x**2) + eps)`` over the normalized axes, times ``weight``."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _Pad(Module):
    """``F.pad`` with amounts for the last ``dims`` axes (an int: the same on every side)."""

    dims = 1
    mode = "constant"
    constant = False  # (ConstantPad*: the value is an argument, shown in the repr)

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        amounts = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)
        if len(amounts) != 2 * self.dims:
            raise ArgumentValueError(f"{type(self).__name__}: padding must be an int or {2 * self.dims} ints, got "
                                     f"{padding!r}")
        self.padding, self.value = amounts, value

    def forward(self, x: Any) -> Any:
        """``x`` padded."""
        if x.ndim not in (self.dims + 1, self.dims + 2):
            raise ShapeError(f"{type(self).__name__}: expected {self.dims + 1}-D or {self.dims + 2}-D input, got shape "
                             f"{fmt_shape(tuple(x.shape))}")
        return F.pad(x, self.padding, self.mode, self.value if self.mode == "constant" else None)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}" if self.constant else f"{self.padding}"


def _padding(name: str, dims: int, mode: str, zero: bool = False) -> type:
    doc = f"PyTorch's ``{name}``: ``F.pad`` of the last {dims} axes, mode {mode!r}{' with zeros' if zero else ''}."
    namespace: dict[str, Any] = {"dims": dims, "mode": mode, "constant": mode == "constant" and not zero,
                                 "__doc__": doc}
    if not namespace["constant"]:  # (only ConstantPad* takes a value, as in PyTorch)
        namespace["__init__"] = lambda self, padding: _Pad.__init__(self, padding, 0.0)
    cls = type(name, (_Pad,), namespace)
    cls.__module__ = __name__
    return cls


ZeroPad1d, ZeroPad2d, ZeroPad3d = (_padding(f"ZeroPad{d}d", d, "constant", zero=True) for d in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (_padding(f"ConstantPad{d}d", d, "constant") for d in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_padding(f"ReflectionPad{d}d", d, "reflect") for d in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_padding(f"ReplicationPad{d}d", d, "replicate")
                                                        for d in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_padding(f"CircularPad{d}d", d, "circular") for d in (1, 2, 3))
