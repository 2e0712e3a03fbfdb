"""``fg.nn``: PyTorch-style modules, layers, losses, initialisers and utilities."""

from __future__ import annotations

from . import functional, init, parallel, utils
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .attention import MultiheadAttention
from .conv import (
                   AdaptiveAvgPool1d,
                   AdaptiveAvgPool2d,
                   AvgPool1d,
                   AvgPool2d,
                   Conv1d,
                   Conv2d,
                   MaxPool1d,
                   MaxPool2d,
                   MaxUnpool2d,
)
from .conv3d import (
                   AdaptiveAvgPool3d,
                   AdaptiveMaxPool3d,
                   AvgPool3d,
                   Conv3d,
                   ConvTranspose3d,
                   MaxPool3d,
                   MaxUnpool3d,
)
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .fractional import FractionalMaxPool2d, FractionalMaxPool3d
from .layers import (
                   CELU,
                   ELU,
                   GELU,
                   GLU,
                   SELU,
                   AlphaDropout,
                   Bilinear,
                   Dropout,
                   Dropout1d,
                   Dropout2d,
                   Dropout3d,
                   Embedding,
                   EmbeddingBag,
                   FeatureAlphaDropout,
                   Flatten,
                   GroupNorm,
                   Hardsigmoid,
                   Hardswish,
                   Hardtanh,
                   Identity,
                   InstanceNorm1d,
                   InstanceNorm2d,
                   InstanceNorm3d,
                   LayerNorm,
                   LeakyReLU,
                   Linear,
                   LocalResponseNorm,
                   LogSigmoid,
                   LogSoftmax,
                   LPPool1d,
                   LPPool2d,
                   LPPool3d,
                   MaxUnpool1d,
                   Mish,
                   ModuleDict,
                   ModuleList,
                   ParameterDict,
                   ParameterList,
                   PReLU,
                   ReLU,
                   ReLU6,
                   RReLU,
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
from .lazy import (
                   LazyBatchNorm1d,
                   LazyBatchNorm2d,
                   LazyBatchNorm3d,
                   LazyConv1d,
                   LazyConv2d,
                   LazyConv3d,
                   LazyConvTranspose1d,
                   LazyConvTranspose2d,
                   LazyConvTranspose3d,
                   LazyInstanceNorm1d,
                   LazyInstanceNorm2d,
                   LazyInstanceNorm3d,
                   LazyLinear,
                   UninitializedParameter,
)
from .loss import (
                   BCELoss,
                   BCEWithLogitsLoss,
                   CosineEmbeddingLoss,
                   CosineSimilarity,
                   CrossEntropyLoss,
                   CTCLoss,
                   GaussianNLLLoss,
                   HingeEmbeddingLoss,
                   HuberLoss,
                   KLDivLoss,
                   L1Loss,
                   LinearCrossEntropyLoss,
                   MarginRankingLoss,
                   MSELoss,
                   MultiLabelMarginLoss,
                   MultiLabelSoftMarginLoss,
                   MultiMarginLoss,
                   NLLLoss,
                   NLLLoss2d,
                   PairwiseDistance,
                   PoissonNLLLoss,
                   SmoothL1Loss,
                   SoftMarginLoss,
                   TripletMarginLoss,
                   TripletMarginWithDistanceLoss,
)
from .module import Module, functional_call
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from .parallel import DataParallel
from .parameter import Parameter
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .resize import (
                   AdaptiveMaxPool1d,
                   AdaptiveMaxPool2d,
                   PixelShuffle,
                   PixelUnshuffle,
                   Upsample,
                   UpsamplingBilinear2d,
                   UpsamplingNearest2d,
)
from .shaping import (
                   ChannelShuffle,
                   CircularPad1d,
                   CircularPad2d,
                   CircularPad3d,
                   ConstantPad1d,
                   ConstantPad2d,
                   ConstantPad3d,
                   Hardshrink,
                   ReflectionPad1d,
                   ReflectionPad2d,
                   ReflectionPad3d,
                   ReplicationPad1d,
                   ReplicationPad2d,
                   ReplicationPad3d,
                   RMSNorm,
                   Softmax2d,
                   Softshrink,
                   Tanhshrink,
                   Unflatten,
                   ZeroPad1d,
                   ZeroPad2d,
                   ZeroPad3d,
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
           "UpsamplingNearest2d", "Unflatten", "ChannelShuffle", "Hardshrink", "Softshrink", "Tanhshrink",
           "Softmax2d", "RMSNorm", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
           "SoftMarginLoss", "HingeEmbeddingLoss", "MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d",
           "AdaptiveMaxPool1d", "BatchNorm3d", "InstanceNorm3d", "Dropout3d", "ParameterList", "ParameterDict",
           "AlphaDropout", "FeatureAlphaDropout", "RReLU", "LocalResponseNorm", "LPPool1d", "LPPool2d",
           "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "UninitializedParameter", "Conv3d", "ConvTranspose3d", "AvgPool3d",
           "MaxPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d", "MaxUnpool1d", "LPPool3d",
           "LazyConv3d", "LazyConvTranspose3d", "EmbeddingBag", "CTCLoss", "NLLLoss2d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "RNNBase", "RNNCellBase",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "LinearCrossEntropyLoss", "AdaptiveLogSoftmaxWithLoss"]

# The reference sections of the layers, losses and functional forms whose docstrings carry a summary alone.
from . import reference_docs as _reference_docs  # noqa: E402

for _name in _reference_docs.MODULES:
    globals()[_name].__doc__ = _reference_docs.module_doc(globals()[_name])
for _name in _reference_docs.FUNCTIONAL:
    getattr(functional, _name).__doc__ = _reference_docs.functional_doc(_name, getattr(functional, _name))
del _name
