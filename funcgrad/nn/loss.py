"""Loss modules (PyTorch names and arguments)."""

from __future__ import annotations

from typing import Any

from . import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction


class MSELoss(_Loss):
    """The mean squared error."""

    def forward(self, input: Any, target: Any) -> Any:
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """The mean absolute error."""

    def forward(self, input: Any, target: Any) -> Any:
        return F.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits against class labels (or probabilities)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input: Any, target: Any) -> Any:
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """The negative log-likelihood of log-probabilities at the class labels."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Any, target: Any) -> Any:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, computed stably."""

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Any, target: Any) -> Any:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)
