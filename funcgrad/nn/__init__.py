"""``fg.nn``: PyTorch-style modules, layers, losses, initialisers and utilities."""

from __future__ import annotations

from . import functional, init, utils
from .attention import LSTM, MultiheadAttention
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv2d, MaxPool2d, MaxUnpool2d
from .layers import (
                     ELU,
                     GELU,
                     Dropout,
                     Embedding,
                     Flatten,
                     Identity,
                     LayerNorm,
                     LeakyReLU,
                     Linear,
                     LogSoftmax,
                     ModuleDict,
                     ModuleList,
                     ReLU,
                     Sequential,
                     Sigmoid,
                     SiLU,
                     Softmax,
                     Softplus,
                     Tanh,
)
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module, functional_call
from .norm import BatchNorm1d, BatchNorm2d
from .parameter import Parameter

__all__ = ["functional", "init", "utils", "Module", "Parameter", "functional_call", "Identity", "Linear", "ReLU",
           "LeakyReLU", "ELU", "Softplus", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Flatten",
           "Dropout", "LayerNorm", "Embedding", "Sequential", "ModuleList", "ModuleDict", "MSELoss", "L1Loss",
           "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "Conv2d", "MaxPool2d", "MaxUnpool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "MultiheadAttention", "LSTM"]
