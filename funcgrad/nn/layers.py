"""Layers and containers (PyTorch names, shapes and default initialisations)."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from .. import dtypes as _dt
from .. import ops
from ..array import ArrayBase
from ..errors import ArgumentTypeError, ShapeError
from ..primitives.checks import as_int
from ..primitives.core import fmt_shape
from . import functional as F
from . import init
from .module import Module
from .norm import channel_state, instance_norm_stats
from .parameter import Parameter

__all__ = ["Dropout3d", "InstanceNorm3d",
           "Identity", "Linear", "ReLU", "LeakyReLU", "ELU", "Softplus", "GELU", "SiLU", "Tanh", "Sigmoid",
           "Softmax", "LogSoftmax", "Flatten", "Dropout", "LayerNorm", "Embedding", "Sequential", "ModuleList",
           "ModuleDict",
           "ReLU6", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "LogSigmoid", "Softsign", "SELU", "CELU",
           "Threshold", "GLU", "PReLU", "Softmin", "Dropout1d", "Dropout2d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "AlphaDropout", "FeatureAlphaDropout", "RReLU", "LocalResponseNorm", "ParameterList",
           "ParameterDict", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "EmbeddingBag"]


class Identity(Module):
    """Returns its input; takes and ignores any arguments, as PyTorch's placeholder does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        """Returns its input; takes and ignores any arguments, as PyTorch's placeholder does."""
        return x


class Linear(Module):
    """``y = x @ W.T + b`` with W of shape (out_features, in_features); PyTorch's init
    (uniform in ±1/sqrt(in_features) for both, via kaiming_uniform(a=sqrt(5))), drawn from
    the global generator as PyTorch draws it.

    Args:
        in_features: the size of each input's last axis.
        out_features: the size of each output's last axis.
        bias: learn an additive bias.
        dtype: the parameters' dtype (float32 by default).
        device: where the parameters live.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.nn.Linear(3, 2).bias.tolist()   # torch.manual_seed(0); torch.nn.Linear(3, 2).bias
        [-0.011439144611358643, 0.45777493715286255]
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(ops.zeros((out_features, in_features), dtype, device=device))
        if bias:
            self.bias = Parameter(ops.zeros((out_features,), dtype, device=device))
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again (PyTorch's initialisation, from the global generator)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Any) -> Any:
        """``y = x @ W.T + b`` with W of shape (out_features, in_features); PyTorch's init"""
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1 @ W[o] @ x2 + b[o]`` for each output feature, W of shape (out, in1, in2);
    PyTorch's init (uniform in ±1/sqrt(in1_features) for both)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        bound = 1 / math.sqrt(in1_features) if in1_features > 0 else 0.0
        self.weight = Parameter(ops.zeros((out_features, in1_features, in2_features), dtype, device=device))
        init.uniform_(self.weight, -bound, bound)
        if bias:
            self.bias = Parameter(ops.zeros((out_features,), dtype, device=device))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.bias = None  # type: ignore[assignment]  # (no bias: PyTorch's attribute is None)

    def forward(self, x1: Any, x2: Any) -> Any:
        """``y = x1 @ W[o] @ x2 + b[o]`` for each output feature."""
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class _Elementwise(Module):
    """An elementwise activation: ``fn`` with PyTorch's keyword parameters (``defaults``,
    none for most), kept on the module and shown in its repr.

    Where PyTorch's takes ``inplace`` (its last argument), so does this one, so models
    build unchanged. Arrays are immutable, so it computes out of place either way: the
    result is the same, and the input is never changed (use the result, as
    ``x = relu(x)`` and ``Sequential`` do)."""

    fn: Any = None
    defaults: dict[str, Any] = {}
    takes_inplace = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        names = list(self.defaults) + (["inplace"] if self.takes_inplace else [])
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} arguments ({', '.join(names)})")
        for name in kwargs:
            if name not in names:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
        given = {**dict(zip(names, args)), **kwargs}
        self.inplace = bool(given.pop("inplace", False))
        self.params = {**self.defaults, **given}

    def forward(self, x: Any) -> Any:
        params = self.params
        return type(self).fn(x, **params) if params else type(self).fn(x)  # (no kwargs to unpack: a hot path)

    def extra_repr(self) -> str:
        return ", ".join([f"{k}={v}" for k, v in self.params.items()] + (["inplace=True"] if self.inplace else []))


class LeakyReLU(_Elementwise):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    fn, defaults, takes_inplace = staticmethod(F.leaky_relu), {"negative_slope": 0.01}, True


class ELU(_Elementwise):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    fn, defaults, takes_inplace = staticmethod(F.elu), {"alpha": 1.0}, True


class Softplus(_Elementwise):
    """``log(1 + exp(beta * x)) / beta``, smooth ReLU."""

    fn, defaults = staticmethod(F.softplus), {"beta": 1.0, "threshold": 20.0}


class ReLU(_Elementwise):
    """``max(x, 0)``, elementwise."""

    fn, takes_inplace = staticmethod(F.relu), True


class SiLU(_Elementwise):
    """SiLU (swish): ``x * sigmoid(x)``."""

    fn, takes_inplace = staticmethod(F.silu), True


class Tanh(_Elementwise):
    """The hyperbolic tangent, elementwise."""

    fn = staticmethod(F.tanh)


class Sigmoid(_Elementwise):
    """``1 / (1 + exp(-x))``, elementwise."""

    fn = staticmethod(F.sigmoid)


class ReLU6(_Elementwise):
    """``min(max(x, 0), 6)``."""

    fn, takes_inplace = staticmethod(F.relu6), True


class Hardtanh(_Elementwise):
    """``x`` clipped to ``[min_val, max_val]``."""

    fn, defaults, takes_inplace = staticmethod(F.hardtanh), {"min_val": -1.0, "max_val": 1.0}, True


class Hardsigmoid(_Elementwise):
    """``relu6(x + 3) / 6``."""

    fn, takes_inplace = staticmethod(F.hardsigmoid), True


class Hardswish(_Elementwise):
    """``x * relu6(x + 3) / 6``."""

    fn, takes_inplace = staticmethod(F.hardswish), True


class Mish(_Elementwise):
    """``x * tanh(softplus(x))``."""

    fn, takes_inplace = staticmethod(F.mish), True


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``, without overflow."""

    fn = staticmethod(F.logsigmoid)


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    fn = staticmethod(F.softsign)


class SELU(_Elementwise):
    """The self-normalizing ELU."""

    fn, takes_inplace = staticmethod(F.selu), True


class CELU(_Elementwise):
    """The continuously differentiable ELU."""

    fn, defaults, takes_inplace = staticmethod(F.celu), {"alpha": 1.0}, True


class Threshold(_Elementwise):
    """``x`` above ``threshold``, else ``value``."""

    fn, defaults, takes_inplace = staticmethod(F.threshold), {"threshold": 0.0, "value": 0.0}, True

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(threshold, value, inplace)


class GLU(_Elementwise):
    """The gated linear unit along ``dim``."""

    fn, defaults = staticmethod(F.glu), {"dim": -1}


class PReLU(Module):
    """``x`` where non-negative, a learned ``weight * x`` elsewhere (one weight, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(ops.full((num_parameters,), init, dtype or _dt.float32, device=device))

    def forward(self, x: Any) -> Any:
        """``x`` where non-negative, a learned ``weight * x`` elsewhere (one weight, or one per channel)."""
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"num_parameters={self.num_parameters}"


class GELU(Module):
    """GELU: ``x * Phi(x)`` (``approximate='tanh'``: the tanh form)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Any) -> Any:
        """GELU: ``x * Phi(x)`` (``approximate='tanh'``: the tanh form)."""
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """``exp(x)`` normalized to sum to 1 along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Any) -> Any:
        """``exp(x)`` normalized to sum to 1 along ``dim``."""
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"dim={self.dim}"


class Softmin(Softmax):
    """``softmax(-x)`` along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim)  # type: ignore[arg-type]

    def forward(self, x: Any) -> Any:
        """``softmax(-x)`` along ``dim``."""
        return F.softmin(x, self.dim)


class LogSoftmax(Softmax):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    def forward(self, x: Any) -> Any:
        """``log(softmax(x))`` along ``dim``, computed stably."""
        return F.log_softmax(x, self.dim)


class Flatten(Module):
    """Axes ``start_dim`` to ``end_dim`` merged into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Any) -> Any:
        """Axes ``start_dim`` to ``end_dim`` merged into one."""
        return ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """``F.dropout`` in training, the identity in eval mode: PyTorch's mask after the same
    seed.

    Args:
        p: the probability of zeroing an element (the rest are scaled by ``1 / (1 - p)``).
        inplace: accepted; computes out of place, like the activations' (arrays are immutable).

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.nn.Dropout(0.5)(fg.ones(8)).tolist()   # torch.nn.Dropout's, after torch.manual_seed(0)
        [0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 2.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    drop: Any = staticmethod(F.dropout)  # (each kind of dropout names its function)

    def forward(self, x: Any) -> Any:
        """The dropout in training, the identity in eval mode."""
        return type(self).drop(x, self.p, self.training)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"p={self.p}, inplace={self.inplace}"


class AlphaDropout(Dropout):
    """``F.alpha_dropout`` in training (for SELU networks: the mean and variance survive), the
    identity in eval mode."""

    drop = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(Dropout):
    """``F.feature_alpha_dropout`` (whole channels) in training, the identity in eval mode."""

    drop = staticmethod(F.feature_alpha_dropout)


class RReLU(Module):
    """Randomized leaky ReLU (``F.rrelu``): slopes drawn from ``[lower, upper]`` in training,
    their mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Any) -> Any:
        """``F.rrelu`` with the module's bounds and mode."""
        return F.rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class LocalResponseNorm(Module):
    """``F.local_response_norm``: each value over the root-mean-square of its neighbouring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Any) -> Any:
        """``F.local_response_norm`` with the module's constants."""
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LPPool2d(Module):
    """``F.lp_pool2d``: the ``norm_type``-norm of each window of (N, C, H, W) inputs."""

    dims = 2

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, x: Any) -> Any:
        """The ``norm_type``-norm of each window."""
        pool = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[self.dims]
        return pool(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(LPPool2d):
    """``F.lp_pool1d``: the ``norm_type``-norm of each window of (N, C, L) inputs."""

    dims = 1


class LPPool3d(LPPool2d):
    """``F.lp_pool3d``: the ``norm_type``-norm of each window of (N, C, D, H, W) inputs."""

    dims = 3


class MaxUnpool1d(Module):
    """``F.max_unpool1d`` as a layer: ``forward(x, indices, output_size=None)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        one = (lambda v: (v,) if isinstance(v, int) else tuple(v))
        self.kernel_size = one(kernel_size)
        self.stride, self.padding = one(stride if stride is not None else kernel_size), one(padding)

    def forward(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        """Each value put back where it came from."""
        return F.max_unpool1d(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class Dropout1d(Dropout):
    """Whole channels of (N, C, L) inputs zeroed with probability ``p`` in training."""

    drop = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    """Whole channels of (N, C, H, W) inputs zeroed with probability ``p`` in training."""

    drop = staticmethod(F.dropout2d)


class Dropout3d(Dropout):
    """Whole channels of (N, C, D, H, W) inputs zeroed with probability ``p`` in training."""

    drop = staticmethod(F.dropout3d)


class GroupNorm(Module):
    """Normalized over groups of channels, with a learned per-channel scale and shift."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        as_int("GroupNorm", num_groups, "num_groups", minimum=1)
        as_int("GroupNorm", num_channels, "num_channels", minimum=1)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(ops.ones((num_channels,), dtype, device=device)) if affine else None
        self.bias = Parameter(ops.zeros((num_channels,), dtype, device=device)) if affine and bias else None

    def forward(self, x: Any) -> Any:
        """Normalized over groups of channels, with a learned per-channel scale and shift."""
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(Module):
    spatial = 1
    _optional_state = ("num_batches_tracked",)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        channel_state(self, num_features, eps, momentum, affine, track_running_stats, bias, dtype, device)

    def forward(self, x: Any) -> Any:
        """Each channel of each sample normalized: over its spatial axes (training, or without
        running statistics), or with the running statistics (eval mode)."""
        batched = x.ndim == self.spatial + 2
        x = x if batched else x[None]
        if not self.track_running_stats:
            out = F.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)
        else:
            out, mean, var = instance_norm_stats(x, self.running_mean, self.running_var,  # type: ignore[has-type]
                                                   self.weight, self.bias, self.training, self.momentum, self.eps)
            if self.training:  # (PyTorch leaves num_batches_tracked at 0 here)
                self.running_mean, self.running_var = mean.detach(), var.detach()
        return out if batched else out[0]

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Each channel of each (N, C, L) sample normalized over its length."""


class InstanceNorm2d(_InstanceNorm):
    """Each channel of each (N, C, H, W) sample normalized over its height and width."""

    spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Each channel of each (N, C, D, H, W) sample normalized over its three spatial axes."""

    spatial = 3


class LayerNorm(Module):
    """Normalized over the last axes (mean 0, variance 1), then a learned scale and shift
    (``F.layer_norm``, one primitive).

    Args:
        normalized_shape: the last axes' sizes (an int or a tuple).
        eps: added to the variance.
        elementwise_affine: learn the scale (and the shift, with ``bias``).
        bias: learn the shift.
        dtype: the parameters' dtype (float32 by default).
        device: where the parameters live.

    Example:
        >>> [round(v, 4) for v in fg.nn.LayerNorm(3)(fg.asarray([[1.0, 2.0, 3.0]]))[0].tolist()]
        [-1.2247, 0.0, 1.2247]
    """

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(ops.ones(self.normalized_shape, dtype, device=device))
            self.bias = Parameter(ops.zeros(self.normalized_shape, dtype, device=device)) if bias else None
        else:
            self.weight = self.bias = None  # type: ignore[assignment]  # (PyTorch's attributes are None)

    def forward(self, x: Any) -> Any:
        """Normalized over the last axes, with a learned scale and shift."""
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}, "
                f"bias={self.bias is not None}")


def _table(owner: str, rows: int, dim: int, padding_idx: int | None, given: Any, frozen: bool, dtype: Any,
           device: Any) -> Parameter:
    """An embedding table: ``given`` (checked), or PyTorch's N(0, 1) with the padding row zeroed."""
    if given is None:
        weight = Parameter(ops.zeros((rows, dim), dtype, device=device))
        init.normal_(weight)
        if padding_idx is not None:
            weight._assign(weight.detach().at[padding_idx].set(0.0))
        return weight
    if not isinstance(given, ArrayBase):
        raise ArgumentTypeError(f"{owner}: _weight must be an array, got {type(given).__name__}")
    if tuple(given.shape) != (rows, dim):
        raise ShapeError(f"{owner}: the weight must have shape ({rows}, {dim}), got {fmt_shape(tuple(given.shape))}")
    return Parameter(given, requires_grad=not frozen)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` rows (``F.embedding``), its rows drawn from the
    global generator as PyTorch draws them. ``from_pretrained`` wraps given rows, frozen by
    default.

    Args:
        num_embeddings: how many rows.
        embedding_dim: each row's size.
        padding_idx: a row kept at zero, with no gradient.
        max_norm: rows looked up are renormalized to at most this norm.
        norm_type: the p of that norm.
        scale_grad_by_freq: scale gradients by the inverse frequency of the indices.
        sparse: must be false (funcgrad's gradients are dense).
        dtype: the rows' dtype (float32 by default).
        device: where the rows live.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.nn.Embedding(4, 2).weight[1].tolist()   # torch.nn.Embedding's, after torch.manual_seed(0)
        [-2.1787893772125244, 0.5684312582015991]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Any = None, _freeze: bool = False, dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise IndexError(f"Embedding: padding_idx={padding_idx} is out of range for {num_embeddings} rows")
            padding_idx %= num_embeddings  # as PyTorch: -1 is the last row
        if sparse:
            raise ValueError("Embedding: sparse=True (sparse gradients) is not supported: funcgrad's gradients "
                             "are dense")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.sparse = False
        self.weight = _table("Embedding", num_embeddings, embedding_dim, padding_idx, _weight, _freeze, dtype, device)

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding over the given (num_embeddings, embedding_dim) rows, as they are (the
        padding row too); ``freeze`` (the default) keeps them out of training."""
        if getattr(embeddings, "ndim", None) != 2:
            raise ShapeError(f"Embedding.from_pretrained: embeddings must be 2-D (num_embeddings, embedding_dim), "
                             f"got shape {fmt_shape(tuple(getattr(embeddings, 'shape', ())))}")
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)

    def forward(self, indices: Any) -> Any:
        """A lookup table of ``num_embeddings`` rows (``F.embedding``, with its ``padding_idx``,"""
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s


class EmbeddingBag(Module):
    """The sum, mean or maximum of bags of embedding rows (``F.embedding_bag``), without
    making the (bags, rows, dim) array of each bag's rows."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight: Any = None,
                 include_last_offset: bool = False, padding_idx: int | None = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if sparse:
            raise ValueError("EmbeddingBag: sparse=True (sparse gradients) is not supported: funcgrad's gradients "
                             "are dense")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise IndexError(f"EmbeddingBag: padding_idx={padding_idx} is out of range for {num_embeddings} rows")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.max_norm, self.norm_type = (num_embeddings, embedding_dim,
                                                                                  max_norm, norm_type)
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, False
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        self.weight = _table("EmbeddingBag", num_embeddings, embedding_dim, padding_idx, _weight, False, dtype,
                             device)

    def forward(self, input: Any, offsets: Any = None, per_sample_weights: Any = None) -> Any:
        """Each bag's sum, mean or maximum."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, False, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"{self.num_embeddings}, {self.embedding_dim}"
                + (f", max_norm={self.max_norm}" if self.max_norm is not None else "")
                + (f", norm_type={self.norm_type}" if self.norm_type != 2 else "")
                + (", scale_grad_by_freq=True" if self.scale_grad_by_freq else "")
                + f", mode={self.mode!r}"
                + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""))


class Sequential(Module):
    """Modules applied one after another, as PyTorch's (indexing, slicing, ``append``; the
    parameters named by position).

    Args:
        *modules: the modules, in order (or one ``OrderedDict`` of named ones).

    Example:
        >>> model = fg.nn.Sequential(fg.nn.Linear(4, 3), fg.nn.ReLU(), fg.nn.Linear(3, 2))
        >>> model(fg.ones((5, 4))).shape, [name for name, _ in model.named_parameters()]
        ((5, 2), ['0.weight', '0.bias', '2.weight', '2.bias'])
    """

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x: Any) -> Any:
        """Modules applied one after another."""
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: int | slice) -> Any:
        mods = list(self._modules.values())
        return Sequential(*mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Add a module at the end."""
        self.add_module(str(len(self._modules)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered as submodules."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end."""
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add modules at the end."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert a module at ``index``."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)

    def pop(self, index: int = -1) -> Module:
        """Remove and return an entry."""
        items = list(self._modules.values())
        module = items.pop(index)
        self._renumber(items)
        return module

    def _renumber(self, items: list[Module]) -> None:
        """Keys are positions ("0", "1", ...), as PyTorch's: rebuilt after a change in the middle."""
        self._modules.clear()
        for m in items:
            self.append(m)

    def __getitem__(self, i: Any) -> Any:
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i: int, module: Module) -> None:
        items = list(self._modules.values())
        items[i] = module
        self._renumber(items)

    def __delitem__(self, i: Any) -> None:
        items = list(self._modules.values())
        del items[i]
        self._renumber(items)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class _Entries:
    """The mapping reads of a container module over one of its stores (``store``): what
    ``ModuleDict`` and ``ParameterDict`` share."""

    store: str

    def _entries(self) -> Any:
        return self.__dict__[self.store]

    def __getitem__(self, key: str) -> Any:
        return self._entries()[key]

    def __delitem__(self, key: str) -> None:
        del self._entries()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries()

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def pop(self, key: str) -> Any:
        """Remove and return an entry."""
        return self._entries().pop(key)

    def clear(self) -> None:
        """Remove every entry."""
        self._entries().clear()

    def keys(self) -> Any:
        """The names."""
        return self._entries().keys()

    def items(self) -> Any:
        """The (name, entry) pairs."""
        return self._entries().items()

    def values(self) -> Any:
        """The entries."""
        return self._entries().values()


class ModuleDict(_Entries, Module):
    """A dict of modules, registered as submodules."""

    store = "_modules"

    def __init__(self, modules: dict[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None and not hasattr(modules, "items"):
            raise ArgumentTypeError(f"ModuleDict: modules must be a dict of name to Module, got "
                                    f"{type(modules).__name__}")
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def update(self, modules: Any) -> None:
        """Add or replace entries from a mapping or from (key, module) pairs."""
        for k, m in (modules.items() if hasattr(modules, "items") else modules):
            self.add_module(k, m)


def _as_parameter(owner: str, value: Any) -> Any:
    """An array becomes a ``Parameter`` (PyTorch's containers wrap tensors so); a Parameter
    or ``None`` stays as it is."""
    if value is None or isinstance(value, Parameter):
        return value
    if isinstance(value, ArrayBase):
        return Parameter(value)
    raise ArgumentTypeError(f"{owner}: expected an array or a Parameter, got {type(value).__name__}")


def _parameter_lines(container: Module) -> str:
    """A container's parameters, a line each, as PyTorch's repr writes them."""
    lines = []
    for key, p in container._parameters.items():
        size = "" if p is None else "x".join(str(d) for d in p.shape)
        what = "None" if p is None else f"Parameter containing: [{p.dtype}{' of size ' + size if size else ''}]"
        lines.append(f"({key}): {what}")
    return "\n".join(lines)


class ParameterList(Module):
    """A list of parameters, registered under their positions (``"0"``, ``"1"``...), as
    PyTorch's: arrays appended become ``Parameter``s."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value: Any) -> ParameterList:
        """Add a parameter at the end."""
        self.register_parameter(str(len(self._parameters)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add parameters at the end."""
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def __getitem__(self, i: Any) -> Any:
        items = list(self._parameters.values())
        return ParameterList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i: int, value: Any) -> None:
        n = len(self._parameters)
        if not -n <= i < n:
            raise IndexError(f"ParameterList: index {i} is out of range for {n} parameters")
        self.register_parameter(str(i % n), _as_parameter("ParameterList", value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._parameters.values())

    def extra_repr(self) -> str:
        """A line per parameter, as PyTorch's repr shows them."""
        return _parameter_lines(self)


class ParameterDict(_Entries, Module):
    """A dict of parameters, registered under their keys, as PyTorch's: arrays put in become
    ``Parameter``s; the order is the insertion order (a plain dict given at once: sorted)."""

    store = "_parameters"

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter("ParameterDict", value))

    def update(self, parameters: Any) -> None:
        """Add or replace entries from a mapping or from (key, parameter) pairs; a plain
        mapping's keys in sorted order, an ``OrderedDict``'s or ``ParameterDict``'s in theirs
        (PyTorch's rule)."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif hasattr(parameters, "items"):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
        for k, v in pairs:
            self[k] = v

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The parameter ``key``, first set to ``default`` if it is not there."""
        if key not in self._parameters:
            self[key] = default
        return self._parameters[key]

    def extra_repr(self) -> str:
        """A line per parameter, as PyTorch's repr shows them."""
        return _parameter_lines(self)
