"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al., 2017), PyTorch's: the frequent classes (the
shortlist) and one entry per cluster of rarer classes share a ``head`` softmax; each
cluster has its own smaller softmax (``tail``, a two-layer projection narrowed by
``div_value`` per cluster). A target's log-probability is its head entry's, plus its
in-cluster one for a rare class.

Every row runs every cluster's projection and the results are selected by the targets'
clusters (one program, no data-dependent shapes: it traces and compiles); PyTorch runs each
cluster on its own rows only, which is the same arithmetic row by row.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .. import ops
from ..array import Array
from ..dtypes import int64
from ..errors import ArgumentValueError, ShapeError
from ..primitives.core import fmt_shape
from . import functional as F
from .layers import Linear, ModuleList, Sequential
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """PyTorch's adaptive softmax: ``forward(input, target)`` gives ``(output, loss)``, the
    targets' log-probabilities and their negated mean; ``log_prob(input)`` every class's;
    ``predict(input)`` the most probable class. Parameters ``head`` and ``tail.{i}.{0,1}``
    as PyTorch names and draws them."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Any, div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 or \
                len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers "
                             "sorted in an increasing order, where each value is between 1 and n_classes-1, got "
                             f"{cutoffs}")
        self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div_value, head_bias
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(
                Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Draw the parameters again, in PyTorch's order."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:  # type: ignore[attr-defined]
                layer.reset_parameters()

    def forward(self, input: Any, target: Any) -> Any:
        """``(output, loss)``: each target's log-probability, and their negated mean."""
        batched = target.ndim == 1
        if target.ndim > 1:
            raise ShapeError("AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not supported")
        if input.ndim != target.ndim + 1 or (batched and input.shape[0] != target.shape[0]):
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: a target of shape {fmt_shape(tuple(target.shape))} needs an "
                             f"input of shape ({'N, ' if batched else ''}{self.in_features}), got "
                             f"{fmt_shape(tuple(input.shape))}")
        x, t = (input, target) if batched else (ops.expand_dims(input, 0), ops.expand_dims(target, 0))
        if t.__class__ is Array and t.size:
            values = t._host()
            if values.min() < 0 or values.max() >= self.n_classes:
                raise ArgumentValueError(f"AdaptiveLogSoftmaxWithLoss: Target values should be in "
                                         f"[0, {self.n_classes - 1}], but values in range [{values.min()}, "
                                         f"{values.max()}] were found.")
        t = t.astype(int64)
        head = F.log_softmax(self.head(x), dim=1)
        gather = t  # the head's entry: the class itself in the shortlist, else its cluster's
        output = ops.zeros(t.shape, x.dtype, device=x.device)
        for i, (low, high) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            inside = (t >= low) & (t < high)
            gather = ops.where(inside, self.shortlist_size + i, gather)
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            relative = ops.where(inside, t - low, 0)
            picked = ops.squeeze(ops.take_along_axis(cluster, ops.expand_dims(relative, 1), axis=1), 1)
            output = ops.where(inside, picked, output)
        output = output + ops.squeeze(ops.take_along_axis(head, ops.expand_dims(gather, 1), axis=1), 1)
        loss = ops.mean(-output)
        return _ASMoutput(output if batched else ops.squeeze(output, 0), loss)

    def _full_log_prob(self, x: Any, head_output: Any) -> Any:
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return ops.concatenate(parts, axis=1)

    def log_prob(self, input: Any) -> Any:
        """Every class's log-probability, (N, n_classes) or (n_classes,)."""
        x = input if input.ndim == 2 else ops.expand_dims(input, 0)
        out = self._full_log_prob(x, self.head(x))
        return out if input.ndim == 2 else ops.squeeze(out, 0)

    def predict(self, input: Any) -> Any:
        """The most probable class of each row (PyTorch's: the head's choice where it picks a
        shortlisted class, else the best of all classes)."""
        x = input if input.ndim == 2 else ops.expand_dims(input, 0)
        head_output = self.head(x)
        choice = ops.argmax(head_output, axis=1)
        full = ops.argmax(self._full_log_prob(x, head_output), axis=1)
        out = ops.where(choice >= self.shortlist_size, full, choice)
        return out if input.ndim == 2 else ops.squeeze(out, 0)

    def extra_repr(self) -> str:
        """Nothing beyond the submodules (as PyTorch)."""
        return ""

