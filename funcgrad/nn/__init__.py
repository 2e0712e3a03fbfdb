"""``fg.nn``: PyTorch-style modules, layers, losses, initialisers and utilities."""

from __future__ import annotations

from . import functional, init, parallel, utils
from .attention import MultiheadAttention
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d, MaxUnpool2d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .layers import (
                     CELU,
                     ELU,
                     GELU,
                     GLU,
                     SELU,
                     Bilinear,
                     Dropout,
                     Dropout1d,
                     Dropout2d,
                     Embedding,
                     Flatten,
                     GroupNorm,
                     Hardsigmoid,
                     Hardswish,
                     Hardtanh,
                     Identity,
                     InstanceNorm1d,
                     InstanceNorm2d,
                     LayerNorm,
                     LeakyReLU,
                     Linear,
                     LogSigmoid,
                     LogSoftmax,
                     Mish,
                     ModuleDict,
                     ModuleList,
                     PReLU,
                     ReLU,
                     ReLU6,
                     Sequential,
                     Sigmoid,
                     SiLU,
                     Softmax,
                     Softmin,
                     Softplus,
                     Softsign,
                     Tanh,
                     Threshold,
)
from .loss import (
                     BCELoss,
                     BCEWithLogitsLoss,
                     CosineEmbeddingLoss,
                     CosineSimilarity,
                     CrossEntropyLoss,
                     GaussianNLLLoss,
                     HuberLoss,
                     KLDivLoss,
                     L1Loss,
                     MarginRankingLoss,
                     MSELoss,
                     MultiLabelSoftMarginLoss,
                     NLLLoss,
                     PairwiseDistance,
                     PoissonNLLLoss,
                     SmoothL1Loss,
                     TripletMarginLoss,
)
from .module import Module, functional_call
from .norm import BatchNorm1d, BatchNorm2d, SyncBatchNorm
from .parallel import DataParallel
from .parameter import Parameter
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .resize import (
                     AdaptiveMaxPool2d,
                     PixelShuffle,
                     PixelUnshuffle,
                     Upsample,
                     UpsamplingBilinear2d,
                     UpsamplingNearest2d,
)
from .transformer import (
                     Transformer,
                     TransformerDecoder,
                     TransformerDecoderLayer,
                     TransformerEncoder,
                     TransformerEncoderLayer,
)

__all__ = ["functional", "init", "utils", "Module", "Parameter", "functional_call", "Identity", "Linear", "ReLU",
           "LeakyReLU", "ELU", "Softplus", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Flatten",
           "Dropout", "LayerNorm", "Embedding", "Sequential", "ModuleList", "ModuleDict", "MSELoss", "L1Loss",
           "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "Conv2d", "MaxPool2d", "MaxUnpool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "SyncBatchNorm", "parallel", "DataParallel",
           "MultiheadAttention", "LSTM",
           "ReLU6", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "LogSigmoid", "Softsign", "SELU", "CELU",
           "Threshold", "GLU", "PReLU", "Softmin", "BCELoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss",
           "MarginRankingLoss", "TripletMarginLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "MultiLabelSoftMarginLoss", "CosineSimilarity", "PairwiseDistance", "RNN", "GRU", "RNNCell", "LSTMCell",
           "GRUCell", "Conv1d", "Dropout1d", "Dropout2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold", "Bilinear",
           "AdaptiveMaxPool2d", "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d",
           "UpsamplingNearest2d"]
