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

# The reference sections of the optimizers whose docstrings carry a summary alone.
from . import reference_docs as _reference_docs  # noqa: E402

for _cls in (AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop):
    _cls.__doc__ = _reference_docs.optimizer_doc(_cls)
for _name in _reference_docs.RULES:
    globals()[_name].__doc__ = _reference_docs.rule_doc(_name, globals()[_name])
for _name in _reference_docs.SCHEDULERS:
    _cls = getattr(lr_scheduler, _name)
    _cls.__doc__ = _reference_docs.scheduler_doc(_cls)
del _cls, _name
