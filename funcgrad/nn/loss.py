"""Loss modules (PyTorch names and arguments)."""

from __future__ import annotations

import warnings
from typing import Any

from . import functional as F
from .layers import Linear
from .module import Module

__all__ = ["SoftMarginLoss", "HingeEmbeddingLoss",
           "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "BCELoss", "SmoothL1Loss",
           "HuberLoss", "KLDivLoss", "MarginRankingLoss", "TripletMarginLoss", "CosineEmbeddingLoss",
           "PoissonNLLLoss", "GaussianNLLLoss", "MultiLabelSoftMarginLoss", "CosineSimilarity", "PairwiseDistance",
           "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "NLLLoss2d", "CTCLoss",
           "LinearCrossEntropyLoss"]


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction


class MSELoss(_Loss):
    """The mean squared error."""

    def forward(self, input: Any, target: Any) -> Any:
        """The mean squared error."""
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """The mean absolute error."""

    def forward(self, input: Any, target: Any) -> Any:
        """The mean absolute error."""
        return F.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits against class labels (or probabilities)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input: Any, target: Any) -> Any:
        """Softmax cross-entropy of logits against class labels (or probabilities)."""
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """The negative log-likelihood of log-probabilities at the class labels."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Any, target: Any) -> Any:
        """The negative log-likelihood of log-probabilities at the class labels."""
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, computed stably."""

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Any, target: Any) -> Any:
        """Binary cross-entropy of logits, computed stably."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities."""

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Any, target: Any) -> Any:
        """Binary cross-entropy of probabilities."""
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class SmoothL1Loss(_Loss):
    """Squared below ``beta``, absolute above it."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Any, target: Any) -> Any:
        """Squared below ``beta``, absolute above it."""
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Squared below ``delta``, linear above it."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Any, target: Any) -> Any:
        """Squared below ``delta``, linear above it."""
        return F.huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(_Loss):
    """The KL divergence of a target distribution from log-probabilities."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input: Any, target: Any) -> Any:
        """The KL divergence of a target distribution from log-probabilities."""
        return F.kl_div(input, target, self.reduction, self.log_target)


class MarginRankingLoss(_Loss):
    """``max(0, -target * (x1 - x2) + margin)``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Any, input2: Any, target: Any) -> Any:
        """``max(0, -target * (x1 - x2) + margin)``."""
        return F.margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)``."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Any, positive: Any, negative: Any) -> Any:
        """``max(d(a, p) - d(a, n) + margin, 0)``."""
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for similar pairs, ``max(0, cos - margin)`` for dissimilar ones."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Any, input2: Any, target: Any) -> Any:
        """``1 - cos`` for similar pairs, ``max(0, cos - margin)`` for dissimilar ones."""
        return F.cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class PoissonNLLLoss(_Loss):
    """The Poisson negative log-likelihood."""

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-8, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Any, target: Any) -> Any:
        """The Poisson negative log-likelihood."""
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, self.eps, self.reduction)


class GaussianNLLLoss(_Loss):
    """The Gaussian negative log-likelihood given means and variances."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Any, target: Any, var: Any) -> Any:
        """The Gaussian negative log-likelihood given means and variances."""
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """Binary cross-entropy of logits per label, averaged over each sample's labels."""

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Any, target: Any) -> Any:
        """Binary cross-entropy of logits per label, averaged over each sample's labels."""
        return F.multilabel_soft_margin_loss(input, target, self.weight, self.reduction)


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Any, x2: Any) -> Any:
        """The cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm distance between rows."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Any, x2: Any) -> Any:
        """The ``p``-norm distance between rows."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))`` for targets of +-1."""

    def forward(self, input: Any, target: Any) -> Any:
        """The soft margin loss."""
        return F.soft_margin_loss(input, target, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Any, target: Any) -> Any:
        """The hinge embedding loss."""
        return F.hinge_embedding_loss(input, target, self.margin, self.reduction)


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss (``F.multi_margin_loss``)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: p must be 1 or 2, got {p}")
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input: Any, target: Any) -> Any:
        """The multi-class hinge loss."""
        return F.multi_margin_loss(input, target, self.p, self.margin, self.weight, self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss (``F.multilabel_margin_loss``): targets list classes, ended by -1."""

    def forward(self, input: Any, target: Any) -> Any:
        """The multi-label hinge loss."""
        return F.multilabel_margin_loss(input, target, self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance function."""

    def __init__(self, *, distance_function: Any = None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Any, positive: Any, negative: Any) -> Any:
        """The triplet loss with the module's distance."""
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """``NLLLoss``'s old name (PyTorch keeps it, deprecated, with a FutureWarning)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement.",
                      FutureWarning, stacklevel=2)
        super().__init__(weight, ignore_index, reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (``F.ctc_loss``)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any) -> Any:
        """The loss of each target's alignments to its inputs."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class LinearCrossEntropyLoss(Module):
    """``F.linear_cross_entropy`` with its own ``Linear`` layer (``linear``, from
    ``in_features`` to ``num_classes * prod(out_features)``, PyTorch's flat layout and
    initialisation) and the class ``weight`` as a buffer."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: Any = (), bias: bool = False,
                 device: Any = None, dtype: Any = None, reduction: str = "mean", weight: Any = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0, options: Any = None) -> None:
        super().__init__()
        self.in_features, self.num_classes, self.out_features = in_features, num_classes, tuple(out_features)
        self.reduction, self.ignore_index, self.label_smoothing = reduction, ignore_index, label_smoothing
        self.options = options
        size = num_classes
        for d in self.out_features:
            size *= d
        self.linear = Linear(in_features, size, bias=bias, device=device, dtype=dtype)
        self.register_buffer("weight", weight)

    def forward(self, input: Any, target: Any) -> Any:
        """The cross-entropy of the layer's logits of ``input`` against ``target``."""
        shape = (self.num_classes, *self.out_features)
        weight = self.linear.weight.reshape((*shape, self.in_features))
        bias = None if self.linear.bias is None else self.linear.bias.reshape(shape)
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return (f"in_features={self.in_features}, num_classes={self.num_classes}, out_features={self.out_features}, "
                f"bias={self.linear.bias is not None}, reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
