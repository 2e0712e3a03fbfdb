"""Batch normalisation (PyTorch semantics: biased variance to normalise, unbiased for the
running estimate, momentum 0.1, or ``None`` for the cumulative average, and
``num_batches_tracked``)."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..array import Array
from ..backends import process_group
from ..errors import ArgumentValueError, ConcretizationError, ShapeError
from ..primitives.collective import all_reduce_p
from ..primitives.core import bind, fmt_shape
from ..transforms.autodiff.api import stop_gradient
from ._checks import same_dtype
from .module import Module, buffers_collected
from .parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "batch_norm", "channel_state",
           "instance_norm_stats"]


def batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5,
               all_ranks: bool = False) -> tuple[Any, Any, Any]:
    """Returns (output, new running mean, new running var); statistics over all axes but 1.
    ``all_ranks``: the training statistics are those of every rank's batch together
    (SyncBatchNorm: sums travel through the differentiable ``all_reduce``)."""
    x = same_dtype("batch_norm", x, weight, bias)
    axes = tuple(i for i in range(x.ndim) if i != 1)
    shape = tuple(x.shape[1] if i == 1 else 1 for i in range(x.ndim))
    if training:
        if all_ranks:  # two passes, as in one process: the global mean, then the global squared deviations
            n: Any = bind(all_reduce_p, ops.full((), x.size // x.shape[1], x.dtype, device=x.device), op="sum")
            mean = bind(all_reduce_p, ops.sum(x, axes, keepdims=True), op="sum") / n
            var = bind(all_reduce_p, ops.sum(ops.square(x - mean), axes, keepdims=True), op="sum") / n
        else:
            mean = ops.mean(x, axes, keepdims=True)
            var = ops.mean(ops.square(x - mean), axes, keepdims=True)
            n = x.size // x.shape[1]
        if running_mean is not None:
            m, v = stop_gradient(ops.reshape(mean, (x.shape[1],))), stop_gradient(ops.reshape(var, (x.shape[1],)))
            running_mean = (1 - momentum) * running_mean + momentum * m
            unbiased = n / ops.maximum(n - 1, 1) if all_ranks else n / max(n - 1, 1)
            running_var = (1 - momentum) * running_var + momentum * v * unbiased
    else:
        mean, var = ops.reshape(running_mean, shape), ops.reshape(running_var, shape)
    out = (x - mean) * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return out, running_mean, running_var


def instance_norm_stats(x: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,
                        use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> tuple[Any, Any, Any]:
    """Instance normalization as PyTorch computes it with running statistics: the (N, C, ...)
    input seen as one sample of N * C channels, batch-normalized with the running statistics
    repeated per sample; returns (output, new running mean, new running var), the new
    statistics the mean over the samples of each one's update."""
    n, c = x.shape[0], x.shape[1]
    if running_mean is None or running_var is None:
        raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
    flat = ops.reshape(x, (1, n * c) + tuple(x.shape[2:]))
    out, mean, var = batch_norm(flat, ops.tile(running_mean, n), ops.tile(running_var, n), None, None,
                                use_input_stats, momentum, eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    out = ops.reshape(out, tuple(x.shape))
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    if use_input_stats:
        mean, var = ops.mean(ops.reshape(mean, (n, c)), axis=0), ops.mean(ops.reshape(var, (n, c)), axis=0)
    else:
        mean, var = running_mean, running_var
    return out, mean, var


def channel_state(module: Module, num_features: int, eps: float, momentum: float | None, affine: bool,
                  track_running_stats: bool, bias: bool, dtype: Any, device: Any) -> None:
    """The per-channel state batch and instance normalization share, as PyTorch names it:
    the settings, ``weight`` and ``bias`` (with ``affine``) and the running statistics
    (with ``track_running_stats``)."""
    module.num_features, module.eps, module.momentum = num_features, eps, momentum
    module.affine, module.track_running_stats = affine, track_running_stats
    module.weight = Parameter(ops.ones((num_features,), dtype, device=device)) if affine else None
    module.bias = Parameter(ops.zeros((num_features,), dtype, device=device)) if affine and bias else None
    if track_running_stats:
        module.register_buffer("running_mean", ops.zeros((num_features,), dtype, device=device))
        module.register_buffer("running_var", ops.ones((num_features,), dtype, device=device))
        module.register_buffer("num_batches_tracked", ops.zeros((), "int64", device=device))


class _BatchNorm(Module):
    expected_ndim: tuple[int, ...] = ()
    _optional_state = ("num_batches_tracked",)  # PyTorch loads checkpoints from before it existed

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype: Any = None, device: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        channel_state(self, num_features, eps, momentum, affine, track_running_stats, bias, dtype, device)

    def forward(self, x: Any) -> Any:
        if x.ndim not in self.expected_ndim or x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}): got input of shape "
                             f"{fmt_shape(tuple(x.shape))}")
        use_batch = self.training or not self.track_running_stats
        if use_batch and x.size // x.shape[1] <= 1:  # PyTorch: no variance from one value per channel
            raise ArgumentValueError(f"{type(self).__name__}: expected more than 1 value per channel when training, "
                                     f"got input of shape {fmt_shape(tuple(x.shape))}")
        momentum = self.momentum
        if momentum is None and self.training and self.track_running_stats:
            # PyTorch's cumulative average: batch k weighs 1/k (reading the count: PyTorch does too)
            momentum = 1.0 / (int(self.num_batches_tracked.item()) + 1)  # type: ignore[has-type]
        out, rm, rv = batch_norm(x, self.running_mean if self.track_running_stats else None,  # type: ignore[has-type]
                                 self.running_var if self.track_running_stats else None, self.weight, self.bias,  # type: ignore[has-type]
                                 use_batch, momentum, self.eps, self._all_ranks(use_batch))  # type: ignore[arg-type]
        if self.training and self.track_running_stats:
            if not isinstance(rm, Array) and not buffers_collected():  # abstract under fg.trace: it would leak

                raise ConcretizationError(
                    f"{type(self).__name__} in training mode updates its running statistics, which cannot hold "
                    "traced values: call model.eval() before tracing, or pass the statistics explicitly "
                    "(fg.nn.functional_call with the buffers).")
            self.running_mean, self.running_var = rm, rv
            self.num_batches_tracked = self.num_batches_tracked + 1  # type: ignore[has-type]
        return out

    def _all_ranks(self, use_batch: bool) -> bool:
        return False

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization over ``(N, C)`` or ``(N, C, L)`` inputs, with running statistics."""

    expected_ndim = (2, 3)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs."""

    expected_ndim = (5,)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over ``(N, C, H, W)`` inputs, with running statistics."""

    expected_ndim = (4,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics cover every rank's batch (PyTorch's
    SyncBatchNorm): the sums are all-reduced, and gradients flow back through the
    reduction, so two ranks on half batches compute what one process does on the whole.
    Outside a process group (or with one rank) it is BatchNorm. Inputs ``(N, C, ...)``."""

    expected_ndim = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, dtype: Any = None,
                 device: Any = None) -> None:
        if process_group is not None:
            raise ArgumentValueError("SyncBatchNorm: only the whole world is a process group here "
                                     "(process_group=None); sub-groups are not supported")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, device)

    def _all_ranks(self, use_batch: bool) -> bool:
        group = process_group.joined()
        return use_batch and self.training and group is not None and group.size > 1

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm layer replaced by a SyncBatchNorm holding the same
        parameters, buffers and mode (the module itself, when it is one)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            sync = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                       process_group)
            if module.affine:
                sync.weight, sync.bias = module.weight, module.bias
            for name, value in module.named_buffers(recurse=False):
                setattr(sync, name, value)
            sync.train(module.training)
            return sync
        for name, child in list(module.named_children()):
            setattr(module, name, cls.convert_sync_batchnorm(child, process_group))
        return module
