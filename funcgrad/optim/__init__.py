"""``fg.optim``: optimizers and learning-rate schedulers (PyTorch's update rules)."""

from __future__ import annotations

from . import lr_scheduler
from .functional import (
           GradientTransformation,
           adadelta,
           adagrad,
           adam,
           adamax,
           adamw,
           nadam,
           radam,
           rmsprop,
           rprop,
           sgd,
)
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .optimizers import SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, RAdam, RMSprop, Rprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler", "GradientTransformation", "sgd", "adam",
           "adamw", "rmsprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "LBFGS", "adagrad", "adamax",
           "nadam", "radam", "adadelta", "rprop"]
