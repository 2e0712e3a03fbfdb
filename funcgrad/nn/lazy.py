"""Lazy modules (PyTorch's ``LazyLinear``, ``LazyConv2d``, ``LazyBatchNorm2d``...): the
input size comes from the first call.

One mechanism serves them all. A lazy module holds ``UninitializedParameter``s (no
values yet) under the names its full class uses; a forward pre-hook, at the first call,
reads the size from the input, builds the full class with it (so the initial values are
drawn from the generator as that class's constructor draws them, at that moment, as in
PyTorch), fills the placeholders in place (an optimizer made before the call holds them
and sees the values) and turns the module into its full class (``cls_to_become``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .. import ops
from ..backends import random_state
from .conv import Conv1d, Conv2d
from .conv3d import Conv3d, ConvTranspose3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .layers import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, Linear
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .parameter import Parameter

__all__ = ["UninitializedParameter", "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


@contextlib.contextmanager
def _generators_kept() -> Iterator[None]:
    """Draws inside leave the global generator (``fg.rand``'s and ``nn.init``'s) as it was."""
    state = random_state.generator().get_state()
    try:
        yield
    finally:
        random_state.generator().set_state(state)


def _take_settings(module: Any, other: Module) -> None:
    """``other``'s attributes that are not parameters, buffers, submodules or the mode."""
    for name, value in other.__dict__.items():
        if name not in ("_parameters", "_buffers", "_modules", "training"):
            object.__setattr__(module, name, value)


class UninitializedParameter(Parameter):
    """A parameter whose shape its lazy module learns at its first call; until then it holds
    no values (an empty array of its dtype). ``materialize`` fills it in place.

    Example:
        >>> layer = fg.nn.LazyLinear(3)
        >>> type(layer.weight).__name__, layer.weight.shape
        ('UninitializedParameter', (0,))
        >>> _ = layer(fg.ones((2, 5)))
        >>> type(layer.weight).__name__, layer.weight.shape
        ('Parameter', (3, 5))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        return super().__new__(cls, ops.zeros((0,), dtype, device=device), requires_grad)  # type: ignore[return-value]

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass

    def materialize(self, value: Any) -> None:
        """Hold ``value`` (its shape, dtype and values) and become a plain ``Parameter``."""
        self._assign(value.detach())
        self.__class__ = Parameter  # type: ignore[assignment]


class LazyModuleMixin:
    """What the lazy modules share: the full class (``cls_to_become``), the name of the size
    the first call gives (``inferred``, its first constructor argument) and how to read it
    from an input (``size_of``)."""

    cls_to_become: Any  # (a Module subclass)
    inferred: str

    spatial_rank: int | None = None  # (convolutions and instance norms take unbatched inputs too)

    def size_of(self, x: Any) -> int:
        """The size the first input gives: its channels (axis 1, or axis 0 of an unbatched input)."""
        if self.spatial_rank is None:
            return int(x.shape[1])
        return int(x.shape[1] if x.ndim == self.spatial_rank + 2 else x.shape[0])

    def _lazy_init(self, stand_in_size: int, **kwargs: Any) -> None:
        """Placeholders named as the full class names its parameters and buffers, learned from
        a stand-in built with ``stand_in_size`` (the generators left as they were)."""
        with _generators_kept():
            stand_in = self.cls_to_become(stand_in_size, **kwargs)
        Module.__init__(self)  # type: ignore[arg-type]
        _take_settings(self, stand_in)
        object.__setattr__(self, self.inferred, 0)
        for name, p in stand_in._parameters.items():
            self._parameters[name] = None if p is None else UninitializedParameter(  # type: ignore[attr-defined]
                p.requires_grad, p.device, p.dtype)
        for name, b in stand_in._buffers.items():
            empty = b if b is None or name == "num_batches_tracked" else ops.zeros((0,), b.dtype, device=b.device)
            self._buffers[name] = empty  # type: ignore[attr-defined]
        object.__setattr__(self, "_lazy_kwargs", kwargs)
        object.__setattr__(self, "_lazy_hook", self.register_forward_pre_hook(  # type: ignore[attr-defined]
            lambda module, args: module.initialize_parameters(*args)))

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter still waits for the first call."""
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())  # type: ignore[attr-defined]

    def initialize_parameters(self, *inputs: Any) -> None:
        """Build the full module for the size ``inputs[0]`` gives, fill the placeholders with
        its values and become it (the first call does this; later calls nothing)."""
        if self.has_uninitialized_params() or type(self) is not self.cls_to_become:
            self._become(self.size_of(inputs[0]))

    def size_in_state(self, weight: Any) -> int:
        """The size a checkpoint's weight (or first array) gives: its axis 1 (a linear map's)."""
        return int(weight.shape[-1])

    def _initialize_from_state(self, state_dict: Any, prefix: str) -> None:
        """Before a checkpoint loads (``load_state_dict``), become the full module of the size
        its arrays have, as PyTorch's lazy modules do; the generators are left as they were."""
        if not self.has_uninitialized_params():
            return
        found = [state_dict[prefix + name] for name in (*self._parameters, *self._buffers)  # type: ignore[attr-defined]
                 if prefix + name in state_dict and name != "num_batches_tracked"]
        if found:
            with _generators_kept():
                self._become(self.size_in_state(found[0]))

    def _become(self, size: int) -> None:
        full = self.cls_to_become(size, **self._lazy_kwargs)  # type: ignore[attr-defined]
        for name, p in full._parameters.items():
            placeholder = self._parameters[name]  # type: ignore[attr-defined]
            if isinstance(placeholder, UninitializedParameter):
                placeholder.materialize(p)
        for name, b in full._buffers.items():
            self._buffers[name] = b  # type: ignore[attr-defined]
        _take_settings(self, full)
        self._lazy_hook.remove()  # type: ignore[attr-defined]
        for name in ("_lazy_hook", "_lazy_kwargs"):
            self.__dict__.pop(name, None)
        if not self.__dict__.get("_forward_pre_hooks"):
            self.__dict__.pop("_forward_pre_hooks", None)  # (no hooks left: calls go straight to forward)
        self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the last axis of its first input."""

    cls_to_become = Linear
    inferred = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        self._lazy_init(1, out_features=out_features, bias=bias, device=device, dtype=dtype)

    def size_of(self, x: Any) -> int:
        """The last axis of the first input."""
        return int(x.shape[-1])


def _lazy_conv(full: type[Module], rank: int, transposed: bool) -> type[Module]:
    """The lazy form of a convolution: ``in_channels`` from the first input."""

    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 *rest: Any, **kwargs: Any) -> None:
        names = ("output_padding", "groups", "bias", "dilation", "padding_mode", "device", "dtype") if transposed \
            else ("dilation", "groups", "bias", "padding_mode", "device", "dtype")
        kwargs.update(zip(names, rest))
        self._lazy_init(kwargs.get("groups", 1), out_channels=out_channels, kernel_size=kernel_size,
                        stride=stride, padding=padding, **kwargs)

    def size_in_state(self: Any, weight: Any) -> int:
        """``in_channels`` from a checkpoint's weight: (out, in/groups, ...), or (in, out/groups,
        ...) transposed."""
        return int(weight.shape[0]) if transposed else int(weight.shape[1]) * self._lazy_kwargs.get("groups", 1)

    return type(f"Lazy{full.__name__}", (LazyModuleMixin, full), {
        "__init__": __init__, "cls_to_become": full, "inferred": "in_channels", "spatial_rank": rank,
        "size_in_state": size_in_state,
        "__doc__": f"``{full.__name__}`` whose ``in_channels`` comes from its first input.",
        "__module__": __name__})


def _features_in_state(self: Any, weight: Any) -> int:
    """``num_features`` from a checkpoint's weight or running statistic."""
    return int(weight.shape[0])


def _lazy_norm(full: type[Module], spatial_rank: int | None = None) -> type[Module]:
    """The lazy form of a batch or instance normalization: ``num_features`` from the first
    input (axis 1; axis 0 of an unbatched input of an instance normalization). PyTorch's
    defaults: affine and tracking running statistics, for both."""

    def __init__(self: Any, eps: float = 1e-5, momentum: Any = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        self._lazy_init(1, eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats,
                        device=device, dtype=dtype)

    return type(f"Lazy{full.__name__}", (LazyModuleMixin, full), {
        "__init__": __init__, "cls_to_become": full, "inferred": "num_features", "spatial_rank": spatial_rank,
        "size_in_state": _features_in_state,
        "__doc__": f"``{full.__name__}`` whose ``num_features`` comes from its first input.",
        "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, 1, False)
LazyConv2d = _lazy_conv(Conv2d, 2, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, 2, True)
LazyConv3d = _lazy_conv(Conv3d, 3, False)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, 3, True)
LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, 1)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, 2)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, 3)
