"""The API reference's sections for ``fg.nn``'s layers and losses, and ``fg.nn.functional``'s
functions, whose docstrings carry a summary alone: Google-style ``Args`` (the constructor's
or the function's parameters) and a runnable ``Example``. The examples' values were
checked against PyTorch's when written (the losses and the functions with a parameter, to
the digits shown); the others show shapes or values that follow from the definition.
``tests/test_docstrings.py`` runs them."""

from __future__ import annotations

import inspect
from typing import Any

from ..ops.reference_docs import sections

__all__ = ["FUNCTIONAL", "MODULES", "functional_doc", "module_doc"]

# The parameters Upsample and interpolate share.
_RESIZE = {
    'size': 'the spatial size out.',
    'scale_factor': 'or the factor each spatial size is multiplied by.',
    'mode': ("``'nearest'``, ``'nearest-exact'``, ``'linear'``, ``'bilinear'``, ``'bicubic'``, "
             "``'trilinear'`` or ``'area'``."),
    'align_corners': "for the linear modes: the corners' pixels line up (PyTorch's).",
    'recompute_scale_factor': "PyTorch's: compute the scale from the size out.",
}


# The parameters the transposed convolutions share (after x and weight).
_TRANSPOSED = {
    'bias': '(C_out,), or ``None``.',
    'stride': "the step between the input's positions in the output.",
    'padding': 'removed from each side of the output.',
    'output_padding': "added to one side of the output's size.",
    'groups': 'the channels split into this many independent groups.',
    'dilation': "the spacing of the kernel's taps.",
}


# Each module's example call, what it prints, and the descriptions of its constructor's
# parameters that ``COMMON`` does not give (or gives otherwise).
MODULES: dict[str, tuple[str, str, dict[str, str]]] = {
    'ReLU': (
        'fg.nn.ReLU()(fg.asarray([-1.0, 0.0, 2.0])).tolist()',
        '[0.0, 0.0, 2.0]',
        {}),
    'Tanh': (
        'fg.nn.Tanh()(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.7616, 0.0, 0.964]',
        {}),
    'Sigmoid': (
        'fg.nn.Sigmoid()(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[0.2689, 0.5, 0.8808]',
        {}),
    'SiLU': (
        'fg.nn.SiLU()(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.2689, 0.0, 1.7616]',
        {}),
    'LeakyReLU': (
        'fg.nn.LeakyReLU(0.1)(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).tolist()',
        '[-0.1, 0.0, 2.0]',
        {}),
    'ELU': (
        'fg.nn.ELU()(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.6321, 0.0, 2.0]',
        {}),
    'ReLU6': (
        'fg.nn.ReLU6()(fg.asarray([-1.0, 3.0, 8.0])).tolist()',
        '[0.0, 3.0, 6.0]',
        {}),
    'Hardtanh': (
        'fg.nn.Hardtanh()(fg.asarray([-2.0, 0.5, 2.0])).tolist()',
        '[-1.0, 0.5, 1.0]',
        {}),
    'Identity': (
        'fg.nn.Identity()(fg.asarray([-1.0, 0.0, 2.0])).tolist()',
        '[-1.0, 0.0, 2.0]',
        {}),
    'GELU': (
        'fg.nn.GELU()(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.1587, 0.0, 1.9545]',
        {
            'approximate': "``'none'`` (the exact form, with ``erf``) or ``'tanh'``.",
        }),
    'Softmax': (
        'fg.nn.Softmax(dim=-1)(fg.asarray([[0.0, 0.0], [0.0, 1.0]], dtype=fg.float64)).round(4).tolist()',
        '[[0.5, 0.5], [0.2689, 0.7311]]',
        {
            'dim': 'the axis the probabilities sum to 1 along.',
        }),
    'LogSoftmax': (
        'fg.nn.LogSoftmax(dim=-1)(fg.asarray([0.0, 0.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.6931, -0.6931]',
        {
            'dim': 'the axis to normalize along.',
        }),
    'Flatten': (
        'fg.nn.Flatten()(fg.ones((2, 3, 4))).shape',
        '(2, 12)',
        {
            'start_dim': 'the first axis to merge (1: every axis but the batch).',
            'end_dim': 'the last axis to merge.',
        }),
    'Unflatten': (
        'fg.nn.Unflatten(1, (2, 3))(fg.ones((4, 6))).shape',
        '(4, 2, 3)',
        {
            'dim': 'the axis to split.',
            'unflattened_size': 'the sizes it is split into.',
        }),
    'MaxPool2d': (
        'fg.nn.MaxPool2d(2)(fg.arange(16.0).reshape(1, 1, 4, 4)).tolist()',
        '[[[[5.0, 7.0], [13.0, 15.0]]]]',
        {
            'kernel_size': "the window's size (an int or a pair).",
            'stride': "the step between windows (the window's size by default).",
            'padding': '-inf added on each side.',
            'dilation': "the spacing of a window's taps.",
            'return_indices': "also return each maximum's flat index in its plane (for ``MaxUnpool2d``).",
            'ceil_mode': 'a last window that starts inside the input is kept even where it would hang over.',
        }),
    'AvgPool2d': (
        'fg.nn.AvgPool2d(2)(fg.arange(16.0).reshape(1, 1, 4, 4)).tolist()',
        '[[[[2.5, 4.5], [10.5, 12.5]]]]',
        {
            'kernel_size': "the window's size (an int or a pair).",
            'stride': "the step between windows (the window's size by default).",
            'padding': 'zeros added on each side.',
            'ceil_mode': 'a last window that starts inside the input is kept even where it would hang over.',
            'count_include_pad': "the padding's zeros count in the mean.",
            'divisor_override': "divide by this instead of the window's size.",
        }),
    'AdaptiveAvgPool2d': (
        'fg.nn.AdaptiveAvgPool2d(1)(fg.arange(16.0).reshape(1, 1, 4, 4)).tolist()',
        '[[[[7.5]]]]',
        {
            'output_size': "the output's height and width (an int, a pair, ``None`` keeping an axis).",
        }),
    'BatchNorm1d': (
        'fg.nn.BatchNorm1d(2)(fg.asarray([[1.0, 2.0], [3.0, 6.0]])).round(4).tolist()',
        '[[-1.0, -1.0], [1.0, 1.0]]',
        {}),
    'BatchNorm2d': (
        'fg.nn.BatchNorm2d(3)(fg.ones((2, 3, 4, 4))).shape',
        '(2, 3, 4, 4)',
        {}),
    'GroupNorm': (
        'fg.nn.GroupNorm(2, 4)(fg.ones((1, 4, 3))).shape',
        '(1, 4, 3)',
        {
            'num_groups': 'how many groups the channels are split into.',
            'num_channels': 'the number of channels (a multiple of ``num_groups``).',
        }),
    'RMSNorm': (
        'fg.nn.RMSNorm(2)(fg.asarray([[2.0, -2.0]])).round(4).tolist()',
        '[[1.0, -1.0]]',
        {
            'normalized_shape': 'the trailing shape normalized over.',
            'eps': "added to the mean square (the dtype's machine epsilon by default).",
            'elementwise_affine': 'a learned per-element scale.',
        }),
    'Conv1d': (
        'fg.nn.Conv1d(2, 4, 3)(fg.ones((8, 2, 10))).shape',
        '(8, 4, 8)',
        {}),
    'ConvTranspose2d': (
        'fg.nn.ConvTranspose2d(2, 4, 3, stride=2)(fg.ones((1, 2, 5, 5))).shape',
        '(1, 4, 11, 11)',
        {
            'output_padding': (
                'rows and columns added on one side of the output (where ``stride`` leaves '
                'its size ambiguous).'
            ),
        }),
    'LSTM': (
        '[t.shape for t in fg.nn.LSTM(4, 8, batch_first=True)(fg.ones((2, 5, 4)))[0:1]]',
        '[(2, 5, 8)]',
        {}),
    'GRU': (
        'fg.nn.GRU(4, 8)(fg.ones((5, 2, 4)))[1].shape',
        '(1, 2, 8)',
        {}),
    'RNN': (
        'fg.nn.RNN(4, 8)(fg.ones((5, 2, 4)))[0].shape',
        '(5, 2, 8)',
        {}),
    'MultiheadAttention': (
        'fg.nn.MultiheadAttention(8, 2, batch_first=True)(*[fg.ones((2, 5, 8))] * 3)[0].shape',
        '(2, 5, 8)',
        {}),
    'TransformerEncoderLayer': (
        'fg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)(fg.ones((2, 5, 8))).shape',
        '(2, 5, 8)',
        {}),
    'CrossEntropyLoss': (
        'round(fg.nn.CrossEntropyLoss()(fg.asarray([[2.0, 0.0], [0.0, 2.0]]), fg.asarray([0, 1])).item(), 4)',
        '0.1269',
        {
            'weight': 'a weight per class.',
            'ignore_index': 'a label whose examples add nothing (and do not count in the mean).',
            'label_smoothing': 'the share of each target spread evenly over the classes.',
        }),
    'NLLLoss': (
        'round(fg.nn.NLLLoss()(fg.asarray([[-0.1, -2.0], [-3.0, -0.2]]), fg.asarray([0, 1])).item(), 4)',
        '0.15',
        {
            'weight': 'a weight per class.',
            'ignore_index': 'a label whose examples add nothing (and do not count in the mean).',
        }),
    'MSELoss': (
        'fg.nn.MSELoss()(fg.asarray([1.0, 2.0]), fg.asarray([1.0, 4.0])).item()',
        '2.0',
        {}),
    'L1Loss': (
        'fg.nn.L1Loss()(fg.asarray([1.0, 2.0]), fg.asarray([1.0, 4.0])).item()',
        '1.0',
        {}),
    'SmoothL1Loss': (
        'fg.nn.SmoothL1Loss()(fg.asarray([1.0, 2.0]), fg.asarray([1.5, 4.0])).item()',
        '0.8125',
        {
            'beta': 'where the loss turns from squared to absolute.',
        }),
    'HuberLoss': (
        'fg.nn.HuberLoss()(fg.asarray([1.0, 2.0]), fg.asarray([1.5, 4.0])).item()',
        '0.8125',
        {
            'delta': 'where the loss turns from squared to linear.',
        }),
    'BCELoss': (
        'round(fg.nn.BCELoss()(fg.asarray([0.8, 0.4]), fg.asarray([1.0, 0.0])).item(), 4)',
        '0.367',
        {
            'weight': 'a weight per element (broadcast).',
        }),
    'BCEWithLogitsLoss': (
        'round(fg.nn.BCEWithLogitsLoss()(fg.asarray([2.0, -1.0]), fg.asarray([1.0, 0.0])).item(), 4)',
        '0.2201',
        {
            'weight': 'a weight per element (broadcast).',
            'pos_weight': "a weight of the positive examples' term, per class.",
        }),
    'KLDivLoss': (
        "round(fg.nn.KLDivLoss(reduction='batchmean')(fg.asarray([[-0.5, -1.0]]), fg.asarray([[0.6, 0.4]])).item(), 4)",
        '0.027',
        {
            'log_target': 'the target is given as log-probabilities.',
        }),
    'ModuleList': (
        'len(fg.nn.ModuleList([fg.nn.Linear(2, 2), fg.nn.ReLU()]))',
        '2',
        {
            'modules': 'the modules, registered as submodules ``0``, ``1``, ...',
        }),
    'ModuleDict': (
        "sorted(fg.nn.ModuleDict({'a': fg.nn.ReLU(), 'b': fg.nn.Tanh()}).keys())",
        "['a', 'b']",
        {
            'modules': 'the modules by name, registered as submodules.',
        }),
    'PReLU': (
        'fg.nn.PReLU()(fg.asarray([-1.0, 0.0, 2.0])).tolist()',
        '[-0.25, 0.0, 2.0]',
        {
            'num_parameters': 'one learned slope, or one per channel.',
            'init': "the slopes' first value.",
        }),
    'CosineSimilarity': (
        'round(fg.nn.CosineSimilarity(dim=0)(fg.asarray([1.0, 0.0]), fg.asarray([1.0, 1.0])).item(), 4)',
        '0.7071',
        {
            'dim': 'the axis the vectors lie along.',
            'eps': "a floor under each vector's norm.",
        }),
    'PairwiseDistance': (
        'fg.nn.PairwiseDistance()(fg.asarray([[0.0, 0.0]], dtype=fg.float64), fg.asarray'
        '([[3.0, 4.0]], dtype=fg.float64)).round(4).tolist()',
        '[5.0]',
        {
            'p': "the norm's order.",
            'eps': "added to the differences (PyTorch's).",
            'keepdim': 'keep the reduced axis.',
        }),
    'PixelShuffle': (
        'fg.nn.PixelShuffle(2)(fg.ones((1, 8, 3, 3))).shape',
        '(1, 2, 6, 6)',
        {
            'upscale_factor': 'the factor by which height and width grow (channels shrink by its square).',
        }),
    'CELU': (
        'fg.nn.CELU(2.0)(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.2642, -0.235, 0.0, 0.5, 3.0]',
        {}),
    'SELU': (
        'fg.nn.SELU()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.5202, -0.3889, 0.0, 0.5254, 3.1521]',
        {}),
    'GLU': (
        'fg.nn.GLU()(fg.asarray([[1.0, 2.0, 0.0, 100.0]])).tolist()',
        '[[0.5, 2.0]]',
        {}),
    'Hardsigmoid': (
        'fg.nn.Hardsigmoid()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[0.1667, 0.4583, 0.5, 0.5833, 1.0]',
        {}),
    'Hardswish': (
        'fg.nn.Hardswish()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.3333, -0.1146, 0.0, 0.2917, 3.0]',
        {}),
    'LogSigmoid': (
        'fg.nn.LogSigmoid()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-2.1269, -0.8259, -0.6931, -0.4741, -0.0486]',
        {}),
    'Mish': (
        'fg.nn.Mish()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.2525, -0.1299, 0.0, 0.3752, 2.9865]',
        {}),
    'Softplus': (
        'fg.nn.Softplus()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[0.1269, 0.5759, 0.6931, 0.9741, 3.0486]',
        {}),
    'Softsign': (
        'fg.nn.Softsign()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.6667, -0.2, 0.0, 0.3333, 0.75]',
        {}),
    'Hardshrink': (
        'fg.nn.Hardshrink()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).tolist()',
        '[-2.0, 0.0, 0.0, 0.0, 3.0]',
        {
            'lambd': 'values within ``[-lambd, lambd]`` become 0.',
        }),
    'Softshrink': (
        'fg.nn.Softshrink(0.25)(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).tolist()',
        '[-1.75, -0.0, 0.0, 0.25, 2.75]',
        {
            'lambd': 'values within ``[-lambd, lambd]`` become 0; the rest move ``lambd`` towards 0.',
        }),
    'Tanhshrink': (
        'fg.nn.Tanhshrink()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.036, -0.0051, 0.0, 0.0379, 2.0049]',
        {}),
    'Threshold': (
        'fg.nn.Threshold(0.25, -1.0)(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).tolist()',
        '[-1.0, -1.0, -1.0, 0.5, 3.0]',
        {
            'threshold': 'values at or below it are replaced.',
            'value': 'what replaces them.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'RReLU': (
        'fg.nn.RReLU().eval()(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.4583, -0.0573, 0.0, 0.5, 3.0]',
        {
            'lower': "the random negative slope's lower bound.",
            'upper': 'its upper bound.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'Softmin': (
        'fg.nn.Softmin(dim=0)(fg.asarray([0.0, 1.0], dtype=fg.float64)).round(4).tolist()',
        '[0.7311, 0.2689]',
        {
            'dim': 'the axis the result sums to one along.',
        }),
    'Softmax2d': (
        'fg.nn.Softmax2d()(fg.zeros((1, 2, 1, 1))).flatten().tolist()',
        '[0.5, 0.5]',
        {}),
    'AdaptiveAvgPool1d': (
        'fg.nn.AdaptiveAvgPool1d(2)(fg.arange(8.0).reshape(1, 1, 8)).tolist()',
        '[[[1.5, 5.5]]]',
        {
            'output_size': 'the length out.',
        }),
    'AdaptiveAvgPool3d': (
        'fg.nn.AdaptiveAvgPool3d(1)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()',
        '[3.5]',
        {
            'output_size': 'the size out (an int or a triple).',
        }),
    'AdaptiveMaxPool1d': (
        'fg.nn.AdaptiveMaxPool1d(2)(fg.arange(8.0).reshape(1, 1, 8)).tolist()',
        '[[[3.0, 7.0]]]',
        {
            'output_size': 'the length out.',
            'return_indices': 'also return where each maximum was.',
        }),
    'AdaptiveMaxPool2d': (
        'fg.nn.AdaptiveMaxPool2d(1)(fg.arange(16.0).reshape(1, 1, 4, 4)).flatten().tolist()',
        '[15.0]',
        {
            'output_size': 'the size out (an int or a pair).',
            'return_indices': 'also return where each maximum was.',
        }),
    'AdaptiveMaxPool3d': (
        'fg.nn.AdaptiveMaxPool3d(1)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()',
        '[7.0]',
        {
            'output_size': 'the size out (an int or a triple).',
            'return_indices': 'also return where each maximum was.',
        }),
    'AvgPool1d': (
        'fg.nn.AvgPool1d(2)(fg.arange(8.0).reshape(1, 1, 8)).tolist()',
        '[[[0.5, 2.5, 4.5, 6.5]]]',
        {
            'ceil_mode': 'a last partial window where the step leaves one.',
            'count_include_pad': "average over the padding's zeros too.",
        }),
    'AvgPool3d': (
        'fg.nn.AvgPool3d(2)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()',
        '[3.5]',
        {
            'ceil_mode': 'a last partial window where the step leaves one.',
            'count_include_pad': "average over the padding's zeros too.",
            'divisor_override': "divide by this instead of the window's size.",
        }),
    'MaxPool1d': (
        'fg.nn.MaxPool1d(2)(fg.arange(8.0).reshape(1, 1, 8)).tolist()',
        '[[[1.0, 3.0, 5.0, 7.0]]]',
        {
            'return_indices': 'also return where each maximum was.',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'MaxPool3d': (
        'fg.nn.MaxPool3d(2)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()',
        '[7.0]',
        {
            'return_indices': 'also return where each maximum was.',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'LPPool1d': (
        'fg.nn.LPPool1d(1.0, 2)(fg.arange(8.0).reshape(1, 1, 8)).tolist()',
        '[[[1.0, 5.0, 9.0, 13.0]]]',
        {
            'norm_type': 'the p of the p-norm over each window.',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'LPPool2d': (
        'fg.nn.LPPool2d(1.0, 2)(fg.arange(16.0).reshape(1, 1, 4, 4)).tolist()',
        '[[[[10.0, 18.0], [42.0, 50.0]]]]',
        {
            'norm_type': 'the p of the p-norm over each window.',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'LPPool3d': (
        'fg.nn.LPPool3d(1.0, 2)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten().tolist()',
        '[28.0]',
        {
            'norm_type': 'the p of the p-norm over each window.',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'ZeroPad1d': (
        'fg.nn.ZeroPad1d((1, 0))(fg.ones((1, 2))).tolist()',
        '[[0.0, 1.0, 1.0]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ZeroPad2d': (
        'fg.nn.ZeroPad2d(1)(fg.ones((1, 1, 1))).tolist()',
        '[[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ZeroPad3d': (
        'fg.nn.ZeroPad3d(1)(fg.ones((1, 1, 1, 1))).shape',
        '(1, 3, 3, 3)',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ConstantPad1d': (
        'fg.nn.ConstantPad1d((1, 2), 9.0)(fg.ones((1, 2))).tolist()',
        '[[9.0, 1.0, 1.0, 9.0, 9.0]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
            'value': 'the value padded with.',
        }),
    'ConstantPad2d': (
        'fg.nn.ConstantPad2d((1, 0, 0, 1), 9.0)(fg.ones((1, 1, 1))).tolist()',
        '[[[9.0, 1.0], [9.0, 9.0]]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
            'value': 'the value padded with.',
        }),
    'ConstantPad3d': (
        'fg.nn.ConstantPad3d(1, 9.0)(fg.ones((1, 1, 1, 1))).shape',
        '(1, 3, 3, 3)',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
            'value': 'the value padded with.',
        }),
    'ReflectionPad1d': (
        'fg.nn.ReflectionPad1d(2)(fg.arange(4.0).reshape(1, 4)).tolist()',
        '[[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ReflectionPad2d': (
        'fg.nn.ReflectionPad2d(1)(fg.arange(4.0).reshape(1, 2, 2)).tolist()',
        '[[[3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0], [3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0]]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ReflectionPad3d': (
        'fg.nn.ReflectionPad3d(1)(fg.ones((1, 2, 2, 2))).shape',
        '(1, 4, 4, 4)',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ReplicationPad1d': (
        'fg.nn.ReplicationPad1d(2)(fg.arange(3.0).reshape(1, 3)).tolist()',
        '[[0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ReplicationPad2d': (
        'fg.nn.ReplicationPad2d(1)(fg.arange(4.0).reshape(1, 2, 2)).tolist()',
        '[[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0], [2.0, 2.0, 3.0, 3.0]]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'ReplicationPad3d': (
        'fg.nn.ReplicationPad3d(1)(fg.ones((1, 2, 2, 2))).shape',
        '(1, 4, 4, 4)',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'CircularPad1d': (
        'fg.nn.CircularPad1d(2)(fg.arange(3.0).reshape(1, 3)).tolist()',
        '[[1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'CircularPad2d': (
        'fg.nn.CircularPad2d(1)(fg.arange(4.0).reshape(1, 2, 2)).tolist()',
        '[[[3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0], [3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0]]]',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'CircularPad3d': (
        'fg.nn.CircularPad3d(1)(fg.ones((1, 2, 2, 2))).shape',
        '(1, 4, 4, 4)',
        {
            'padding': 'the padding: an int for every side, or one per side (left, right, then top, bottom, ...).',
        }),
    'PixelUnshuffle': (
        'fg.nn.PixelUnshuffle(2)(fg.ones((1, 1, 4, 4))).shape',
        '(1, 4, 2, 2)',
        {
            'downscale_factor': 'r: each r x r block of pixels becomes r*r channels.',
        }),
    'ChannelShuffle': (
        'fg.nn.ChannelShuffle(2)(fg.arange(4.0).reshape(1, 4, 1, 1)).flatten().tolist()',
        '[0.0, 2.0, 1.0, 3.0]',
        {
            'groups': 'the channels, as a (groups, C / groups) grid, read by columns.',
        }),
    'Unfold': (
        'fg.nn.Unfold(2, stride=2)(fg.arange(16.0).reshape(1, 1, 4, 4)).shape',
        '(1, 4, 4)',
        {
            'kernel_size': "the window's size.",
        }),
    'Fold': (
        'fg.nn.Fold((4, 4), 2, stride=2)(fg.ones((1, 4, 4))).shape',
        '(1, 1, 4, 4)',
        {
            'output_size': 'the spatial size out.',
        }),
    'HingeEmbeddingLoss': (
        'fg.nn.HingeEmbeddingLoss()(fg.asarray([0.5, 2.0]), fg.asarray([1.0, -1.0])).tolist()',
        '0.25',
        {
            'margin': 'the margin for dissimilar pairs.',
        }),
    'SoftMarginLoss': (
        ('fg.nn.SoftMarginLoss()(fg.asarray([0.5, -2.0], dtype=fg.float64), fg.asarray([1.0, -1.0], '
         'dtype=fg.float64)).round(4).tolist()'),
        '0.3005',
        {}),
    'MarginRankingLoss': (
        ('fg.nn.MarginRankingLoss(0.5)(fg.asarray([1.0, 2.0]), fg.asarray([2.0, 1.0]), fg.asarray([1.0, '
         '1.0])).tolist()'),
        '0.75',
        {
            'margin': 'the margin.',
        }),
    'CosineEmbeddingLoss': (
        ('fg.nn.CosineEmbeddingLoss()(fg.asarray([[1.0, 0.0]]), fg.asarray([[0.0, 1.0]]), '
         'fg.asarray([1.0])).tolist()'),
        '1.0',
        {
            'margin': 'for -1 pairs: the cosine above which they cost.',
        }),
    'PoissonNLLLoss': (
        ('fg.nn.PoissonNLLLoss()(fg.asarray([0.0, 1.0], dtype=fg.float64), fg.asarray([1.0, 2.0], '
         'dtype=fg.float64)).round(4).tolist()'),
        '0.8591',
        {
            'log_input': 'the input holds log rates.',
            'full': "add Stirling's approximation of ``log(target!)``.",
            'eps': 'added to the rates before the log (without ``log_input``).',
        }),
    'GaussianNLLLoss': (
        ('fg.nn.GaussianNLLLoss()(fg.asarray([0.0, 1.0], dtype=fg.float64), fg.asarray([1.0, 1.0], '
         'dtype=fg.float64), fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()'),
        '0.4233',
        {
            'full': 'add the constant ``log(2 pi) / 2``.',
            'eps': 'the least variance.',
        }),
    'MultiMarginLoss': (
        ('fg.nn.MultiMarginLoss()(fg.asarray([[0.1, 0.8, 0.3]], dtype=fg.float64), '
         'fg.asarray([1])).round(4).tolist()'),
        '0.2667',
        {
            'p': '1 or 2: the hinge, or its square.',
            'margin': 'the margin.',
            'weight': 'a per-class weight, or ``None``.',
        }),
    'MultiLabelMarginLoss': (
        ('fg.nn.MultiLabelMarginLoss()(fg.asarray([[0.1, 0.2, 0.4, 0.8]], dtype=fg.float64), fg.asarray([[3, 0, '
         '-1, 1]])).round(4).tolist()'),
        '0.85',
        {}),
    'MultiLabelSoftMarginLoss': (
        ('fg.nn.MultiLabelSoftMarginLoss()(fg.asarray([[0.0, 2.0]], dtype=fg.float64), fg.asarray([[0.0, 1.0]], '
         'dtype=fg.float64)).round(4).tolist()'),
        '0.41',
        {
            'weight': 'a per-class weight, or ``None``.',
        }),
    'TripletMarginLoss': (
        ('fg.nn.TripletMarginLoss()(fg.asarray([[0.0, 0.0]]), fg.asarray([[1.0, 0.0]]), fg.asarray([[3.0, '
         '0.0]])).round(4).tolist()'),
        '0.0',
        {
            'margin': 'the margin.',
            'p': 'the norm of the distances.',
            'eps': "added to the differences (PyTorch's).",
            'swap': 'use the positive-negative distance where it is smaller (the distance swap).',
        }),
    'LocalResponseNorm': (
        'fg.nn.LocalResponseNorm(2)(fg.ones((1, 3, 1, 1))).round(4).flatten().tolist()',
        '[1.0, 0.9998999834060669, 0.9998999834060669]',
        {
            'size': 'the neighbouring channels normalized over.',
            'alpha': 'the scale of their mean square.',
            'beta': 'its exponent.',
            'k': 'the additive constant.',
        }),
    'Dropout1d': (
        'fg.nn.Dropout1d().eval()(fg.ones((1, 2, 3))).tolist()',
        '[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]',
        {
            'p': 'the probability of zeroing a channel.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'Dropout2d': (
        'fg.nn.Dropout2d().eval()(fg.ones((1, 2, 1, 1))).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'p': 'the probability of zeroing a channel.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'Dropout3d': (
        'fg.nn.Dropout3d().eval()(fg.ones((1, 2, 1, 1, 1))).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'p': 'the probability of zeroing a channel.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'AlphaDropout': (
        'fg.nn.AlphaDropout().eval()(fg.ones(3)).tolist()',
        '[1.0, 1.0, 1.0]',
        {
            'p': 'the probability of dropping an element.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'FeatureAlphaDropout': (
        'fg.nn.FeatureAlphaDropout().eval()(fg.ones((1, 2, 1))).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'p': 'the probability of dropping a channel.',
            'inplace': "PyTorch's (arrays are immutable: a new array either way).",
        }),
    'UpsamplingNearest2d': (
        'fg.nn.UpsamplingNearest2d(scale_factor=2)(fg.ones((1, 1, 2, 2))).shape',
        '(1, 1, 4, 4)',
        {
            'size': 'the spatial size out.',
            'scale_factor': 'or the factor each spatial size is multiplied by.',
        }),
    'UpsamplingBilinear2d': (
        'fg.nn.UpsamplingBilinear2d(scale_factor=2)(fg.arange(2.0).reshape(1, 1, 1, 2)).flatten().round(4).tolist()',
        '[0.0, 0.33329999446868896, 0.666700005531311, 1.0, 0.0, 0.33329999446868896, 0.666700005531311, 1.0]',
        {
            'size': 'the spatial size out.',
            'scale_factor': 'or the factor each spatial size is multiplied by.',
        }),
    'Upsample': (
        'fg.nn.Upsample(scale_factor=2, mode="linear")(fg.asarray([[[1.0, 2.0]]])).tolist()',
        '[[[1.0, 1.25, 1.75, 2.0]]]',
        {
            **_RESIZE,
        }),
    'Bilinear': (
        'fg.nn.Bilinear(2, 3, 4)(fg.ones((5, 2)), fg.ones((5, 3))).shape',
        '(5, 4)',
        {
            'in1_features': "the first input's features.",
            'in2_features': "the second's.",
            'out_features': 'the features out.',
        }),
    'MaxUnpool1d': (
        ('fg.nn.MaxUnpool1d(2)(*fg.nn.MaxPool1d(2, return_indices=True)(fg.asarray([[[1.0, 3.0, 2.0, '
         '0.0]]]))).tolist()'),
        '[[[0.0, 3.0, 2.0, 0.0]]]',
        {}),
    'MaxUnpool2d': (
        ('fg.nn.MaxUnpool2d(2)(*fg.nn.MaxPool2d(2, return_indices=True)(fg.arange(4.0).reshape(1, 1, 2, '
         '2))).flatten().tolist()'),
        '[0.0, 0.0, 0.0, 3.0]',
        {}),
    'Conv3d': (
        'fg.nn.Conv3d(2, 4, 3)(fg.ones((1, 2, 5, 5, 5))).shape',
        '(1, 4, 3, 3, 3)',
        {}),
    'ConvTranspose1d': (
        'fg.nn.ConvTranspose1d(2, 4, 3, stride=2)(fg.ones((1, 2, 5))).shape',
        '(1, 4, 11)',
        {
            'output_padding': "added to one side of the output's size.",
        }),
    'ConvTranspose3d': (
        'fg.nn.ConvTranspose3d(2, 4, 3)(fg.ones((1, 2, 2, 2, 2))).shape',
        '(1, 4, 4, 4, 4)',
        {
            'output_padding': "added to one side of the output's size.",
        }),
    'InstanceNorm1d': (
        'fg.nn.InstanceNorm1d(1)(fg.asarray([[[1.0, 3.0]]])).tolist()',
        '[[[-0.9999949932098389, 0.9999949932098389]]]',
        {}),
    'InstanceNorm2d': (
        'fg.nn.InstanceNorm2d(1)(fg.asarray([[[[1.0, 3.0]]]])).tolist()',
        '[[[[-0.9999949932098389, 0.9999949932098389]]]]',
        {}),
    'InstanceNorm3d': (
        'fg.nn.InstanceNorm3d(1)(fg.asarray([[[[[1.0, 3.0]]]]])).tolist()',
        '[[[[[-0.9999949932098389, 0.9999949932098389]]]]]',
        {}),
    'BatchNorm3d': (
        'fg.nn.BatchNorm3d(1)(fg.asarray([[[[[1.0]]]], [[[[3.0]]]]])).flatten().tolist()',
        '[-0.9999949932098389, 0.9999949932098389]',
        {}),
    'RNNCell': (
        'fg.nn.RNNCell(3, 5)(fg.ones((2, 3))).shape',
        '(2, 5)',
        {}),
    'LSTMCell': (
        '[h.shape for h in fg.nn.LSTMCell(3, 5)(fg.ones((2, 3)))]',
        '[(2, 5), (2, 5)]',
        {}),
    'GRUCell': (
        'fg.nn.GRUCell(3, 5)(fg.ones((2, 3))).shape',
        '(2, 5)',
        {}),
    'LazyConv1d': (
        '(lambda m: (m(fg.ones((2, 3, 8))).shape, m.weight.shape))(fg.nn.LazyConv1d(4, 3))',
        '((2, 4, 6), (4, 3, 3))',
        {}),
    'LazyConv2d': (
        '(lambda m: (m(fg.ones((2, 3, 8, 8))).shape, m.weight.shape))(fg.nn.LazyConv2d(4, 3))',
        '((2, 4, 6, 6), (4, 3, 3, 3))',
        {}),
    'LazyConv3d': (
        '(lambda m: (m(fg.ones((2, 3, 5, 5, 5))).shape, m.weight.shape))(fg.nn.LazyConv3d(4, 3))',
        '((2, 4, 3, 3, 3), (4, 3, 3, 3, 3))',
        {}),
    'LazyConvTranspose1d': (
        '(lambda m: (m(fg.ones((2, 3, 8))).shape, m.weight.shape))(fg.nn.LazyConvTranspose1d(4, 3))',
        '((2, 4, 10), (3, 4, 3))',
        {}),
    'LazyConvTranspose2d': (
        '(lambda m: (m(fg.ones((2, 3, 8, 8))).shape, m.weight.shape))(fg.nn.LazyConvTranspose2d(4, 3))',
        '((2, 4, 10, 10), (3, 4, 3, 3))',
        {}),
    'LazyConvTranspose3d': (
        '(lambda m: (m(fg.ones((2, 3, 5, 5, 5))).shape, m.weight.shape))(fg.nn.LazyConvTranspose3d(4, 3))',
        '((2, 4, 7, 7, 7), (3, 4, 3, 3, 3))',
        {}),
    'LazyBatchNorm1d': (
        '(lambda m: (m(fg.ones((2, 3, 8))).shape, m.weight.shape))(fg.nn.LazyBatchNorm1d())',
        '((2, 3, 8), (3,))',
        {}),
    'LazyBatchNorm2d': (
        '(lambda m: (m(fg.ones((2, 3, 8, 8))).shape, m.weight.shape))(fg.nn.LazyBatchNorm2d())',
        '((2, 3, 8, 8), (3,))',
        {}),
    'LazyBatchNorm3d': (
        '(lambda m: (m(fg.ones((2, 3, 5, 5, 5))).shape, m.weight.shape))(fg.nn.LazyBatchNorm3d())',
        '((2, 3, 5, 5, 5), (3,))',
        {}),
    'LazyInstanceNorm1d': (
        '(lambda m: (m(fg.ones((2, 3, 8))).shape, m.weight.shape))(fg.nn.LazyInstanceNorm1d(affine=True))',
        '((2, 3, 8), (3,))',
        {}),
    'LazyInstanceNorm2d': (
        '(lambda m: (m(fg.ones((2, 3, 8, 8))).shape, m.weight.shape))(fg.nn.LazyInstanceNorm2d(affine=True))',
        '((2, 3, 8, 8), (3,))',
        {}),
    'LazyInstanceNorm3d': (
        '(lambda m: (m(fg.ones((2, 3, 5, 5, 5))).shape, m.weight.shape))(fg.nn.LazyInstanceNorm3d(affine=True))',
        '((2, 3, 5, 5, 5), (3,))',
        {}),
    'LazyLinear': (
        '(lambda m: (m(fg.ones((2, 3))).shape, m.weight.shape))(fg.nn.LazyLinear(4))',
        '((2, 4), (4, 3))',
        {
            'out_features': "the output's features (the input's come from the first call).",
        }),
    'CTCLoss': (
        'round(fg.nn.CTCLoss()(fg.nn.functional.log_softmax(fg.asarray([[[0.0, 1.0, 2.0]], [[2.0, 1.0, 0.0]], '
        '[[0.0, 0.0, 0.0]]]), dim=2), fg.asarray([[1, 2]]), fg.asarray([3]), fg.asarray([2])).item(), 4)',
        '1.1703',
        {
            'blank': 'the blank label.',
            'reduction': "``'mean'`` (each loss divided by its target's length, then the mean), ``'sum'`` or "
                         "``'none'``.",
            'zero_infinity': 'infinite losses (impossible alignments) and their gradients become zero.',
        }),
    'EmbeddingBag': (
        'fg.nn.EmbeddingBag(3, 2, _weight=fg.asarray([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]]), '
        'mode="sum")(fg.asarray([[0, 2], [1, 1]])).tolist()',
        '[[4.0, 3.0], [0.0, 2.0]]',
        {
            'num_embeddings': "the table's rows.",
            'embedding_dim': "each row's size.",
            'max_norm': 'renormalize the rows looked up to at most this norm.',
            'norm_type': "the norm ``max_norm`` uses.",
            'scale_grad_by_freq': "scale the gradient by the inverse of each index's count in the batch.",
            'mode': "``'sum'``, ``'mean'`` or ``'max'``.",
            'sparse': "PyTorch's sparse gradients (accepted; the gradient is dense).",
            '_weight': 'an initial table (drawn from a standard normal by default).',
            'include_last_offset': "``offsets`` has one more entry, the end of the last bag.",
            'padding_idx': 'an index that contributes nothing.',
        }),
    'FractionalMaxPool2d': (
        'fg.nn.FractionalMaxPool2d(2, output_size=2, _random_samples=fg.asarray([[[0.5, 0.5]]]))'
        '(fg.arange(16.0).reshape(1, 1, 4, 4)).tolist()',
        '[[[[5.0, 7.0], [13.0, 15.0]]]]',
        {
            'output_size': 'the size out (or give ``output_ratio``).',
            'output_ratio': "the size out as a fraction of the input's.",
            'return_indices': "also return where each maximum came from (for ``MaxUnpool2d``).",
            '_random_samples': "(N, C, 2) uniforms placing the windows (drawn from the global generator by default).",
        }),
    'FractionalMaxPool3d': (
        'fg.nn.FractionalMaxPool3d(1, output_size=1, _random_samples=fg.asarray([[[0.5, 0.5, 0.5]]]))'
        '(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).tolist()',
        '[[[[[7.0]]]]]',
        {
            'output_size': 'the size out (or give ``output_ratio``).',
            'output_ratio': "the size out as a fraction of the input's.",
            'return_indices': "also return where each maximum came from (for ``MaxUnpool3d``).",
            '_random_samples': "(N, C, 3) uniforms placing the windows (drawn from the global generator by default).",
        }),
    'MaxUnpool3d': (
        'fg.nn.MaxUnpool3d(2)(fg.asarray([[[[[5.0]]]]]), fg.asarray([[[[[7]]]]])).tolist()',
        '[[[[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 5.0]]]]]',
        {
            'kernel_size': "the pooling window's size.",
            'stride': "the pooling's stride (the kernel size by default).",
            'padding': "the pooling's padding.",
        }),
    'LinearCrossEntropyLoss': (
        'fg.nn.LinearCrossEntropyLoss(4, 3).linear.weight.shape',
        '(3, 4)',
        {
            'in_features': "the features' size.",
            'num_classes': 'the classes (the rows of the weight).',
            'out_features': "further output axes after the classes' (the linear layer's width is their product "
                            "times ``num_classes``).",
            'bias': "add a learned bias to the logits.",
            'weight': 'a weight per class.',
            'ignore_index': 'a target index that contributes nothing.',
            'label_smoothing': 'the share of the target spread over all classes.',
            'options': "PyTorch's backend options (accepted, unused).",
        }),
    'NLLLoss2d': (
        'round(fg.nn.NLLLoss2d()(fg.log(fg.full((1, 2, 1, 1), 0.5)), fg.asarray([[[1]]])).item(), 4)',
        '0.6931',
        {
            'weight': 'a weight per class.',
            'ignore_index': 'a target index that contributes nothing.',
        }),
    'TripletMarginWithDistanceLoss': (
        'fg.nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(-1))'
        '(fg.asarray([[0.0, 0.0]]), fg.asarray([[3.0, 4.0]]), fg.asarray([[1.0, 0.0]])).item()',
        '7.0',
        {
            'distance_function': 'a function of two batches giving their distances (``pairwise_distance`` by default).',
            'margin': 'how much farther the negative should be.',
            'swap': "use the positive-negative distance where it is smaller (the distance swap).",
        }),
    'Transformer': (
        'fg.nn.Transformer(8, 2, 1, 1, 16)(fg.ones((5, 1, 8)), fg.ones((3, 1, 8))).shape',
        '(3, 1, 8)',
        {
            'num_encoder_layers': 'the encoder layers.',
            'num_decoder_layers': 'the decoder layers.',
            'custom_encoder': 'an encoder to use instead of the stack of layers.',
            'custom_decoder': 'a decoder to use instead of the stack of layers.',
            'bias': 'learned biases in the linear layers and layer norms.',
        }),
    'TransformerEncoder': (
        'fg.nn.TransformerEncoder(fg.nn.TransformerEncoderLayer(8, 2, 16), 2)(fg.ones((5, 1, 8))).shape',
        '(5, 1, 8)',
        {
            'encoder_layer': 'the layer copied ``num_layers`` times.',
            'num_layers': 'the copies.',
            'norm': 'a layer norm after the stack (or ``None``).',
            'enable_nested_tensor': "PyTorch's nested-tensor fast path (accepted, unused).",
            'mask_check': "PyTorch's mask check for that path (accepted, unused).",
        }),
    'TransformerDecoder': (
        'fg.nn.TransformerDecoder(fg.nn.TransformerDecoderLayer(8, 2, 16), 2)(fg.ones((3, 1, 8)), '
        'fg.ones((5, 1, 8))).shape',
        '(3, 1, 8)',
        {
            'decoder_layer': 'the layer copied ``num_layers`` times.',
            'num_layers': 'the copies.',
            'norm': 'a layer norm after the stack (or ``None``).',
        }),
    'TransformerDecoderLayer': (
        'fg.nn.TransformerDecoderLayer(8, 2, 16)(fg.ones((3, 1, 8)), fg.ones((5, 1, 8))).shape',
        '(3, 1, 8)',
        {
            'bias': 'learned biases in the linear layers and layer norms.',
        }),
    'AdaptiveLogSoftmaxWithLoss': (
        'fg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(fg.ones((2, 8)), fg.asarray([1, 7])).output.shape',
        '(2,)',
        {
            'in_features': "the features' size.",
            'n_classes': 'the classes.',
            'cutoffs': 'increasing class boundaries: the head holds the classes below the first, a cluster each range.',
            'div_value': "how much smaller each cluster's projection is than the one before.",
            'head_bias': "a bias in the head's linear layer.",
        }),
    'ParameterDict': (
        'fg.nn.ParameterDict({"w": fg.nn.Parameter(fg.ones(2))})["w"].tolist()',
        '[1.0, 1.0]',
        {
            'parameters': 'a mapping (or pairs) of names to parameters.',
        }),
    'ParameterList': (
        'len(fg.nn.ParameterList([fg.nn.Parameter(fg.ones(2)), fg.nn.Parameter(fg.zeros(3))]))',
        '2',
        {
            'values': 'the parameters, in order.',
        }),
    'SyncBatchNorm': (
        'fg.nn.SyncBatchNorm(3)(fg.ones((2, 3, 4))).shape',
        '(2, 3, 4)',
        {
            'process_group': "the ranks whose statistics are combined (the default process group; one "
                             "process: ``BatchNorm``'s).",
        }),
}

# Each functional form's example call, what it prints, and what its parameters mean.
FUNCTIONAL: dict[str, tuple[str, str, dict[str, str]]] = {
    'linear': (
        'fg.nn.functional.linear(fg.asarray([[1.0, 2.0]]), fg.asarray([[1.0, 1.0], [0.0, 1.0]]), '
        'fg.asarray([0.5, 0.0])).tolist()',
        '[[3.5, 2.0]]',
        {
            'x': 'the input, features last.',
            'weight': "(out_features, in_features), PyTorch's layout.",
            'bias': '(out_features,), or ``None``.',
        }),
    'dropout': (
        'fg.nn.functional.dropout(fg.ones(4), 0.5, training=False).tolist()',
        '[1.0, 1.0, 1.0, 1.0]',
        {
            'x': 'the input.',
            'p': 'the probability of zeroing an element.',
            'training': 'drop (else the input is returned as it is).',
        }),
    'layer_norm': (
        'fg.nn.functional.layer_norm(fg.asarray([[1.0, 3.0]]), (2,)).round(4).tolist()',
        '[[-1.0, 1.0]]',
        {
            'x': 'the input.',
            'normalized_shape': 'the trailing shape normalized over.',
            'weight': 'a scale of that shape, or ``None``.',
            'bias': 'a shift of that shape, or ``None``.',
            'eps': 'added to the variance.',
        }),
    'max_pool2d': (
        'fg.nn.functional.max_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()',
        '[[[[5.0, 7.0], [13.0, 15.0]]]]',
        {
            'x': '(N, C, H, W) or (C, H, W).',
            'kernel_size': "the window's size.",
            'stride': "the step between windows (the window's size by default).",
            'padding': '-inf added on each side.',
            'dilation': "the spacing of a window's taps.",
            'ceil_mode': 'keep a last window that starts inside the input.',
            'return_indices': "also return each maximum's flat index in its plane.",
        }),
    'embedding': (
        'fg.nn.functional.embedding(fg.asarray([2, 0]), fg.arange(6.0).reshape(3, 2)).tolist()',
        '[[4.0, 5.0], [0.0, 1.0]]',
        {
            'indices': 'integer indices, any shape.',
            'weight': 'the table, one row per index.',
            'padding_idx': 'an index whose row gets no gradient.',
            'max_norm': "rows whose norm exceeds it are renormalized (PyTorch's).",
            'norm_type': "the norm's order for ``max_norm``.",
            'scale_grad_by_freq': "scale each row's gradient by the inverse of its count in the batch.",
            'sparse': 'accepted; gradients are dense.',
        }),
    'log_softmax': (
        'fg.nn.functional.log_softmax(fg.asarray([0.0, 0.0], dtype=fg.float64), dim=-1).round(4).tolist()',
        '[-0.6931, -0.6931]',
        {
            'x': 'the logits.',
            'dim': 'the axis to normalize along.',
        }),
    'nll_loss': (
        'round(fg.nn.functional.nll_loss(fg.asarray([[-0.1, -2.0], [-3.0, -0.2]]), fg.asarray([0, 1])).item(), 4)',
        '0.15',
        {
            'log_probs': '(N, C) log-probabilities (or (N, C, ...)).',
            'target': '(N,) class indices.',
            'weight': 'a weight per class.',
            'ignore_index': 'a label whose examples add nothing.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'binary_cross_entropy': (
        'round(fg.nn.functional.binary_cross_entropy(fg.asarray([0.8, 0.4]), fg.asarray([1.0, 0.0])).item(), 4)',
        '0.367',
        {
            'input': 'probabilities.',
            'target': 'the targets, in [0, 1].',
            'weight': 'a weight per element (broadcast).',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'binary_cross_entropy_with_logits': (
        'round(fg.nn.functional.binary_cross_entropy_with_logits(fg.asarray([2.0, -1.0]), fg.asarray([1.0, '
        '0.0])).item(), 4)',
        '0.2201',
        {
            'input': 'logits.',
            'target': 'the targets, in [0, 1].',
            'weight': 'a weight per element (broadcast).',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
            'pos_weight': 'a weight of the positive term, per class.',
        }),
    'pad': (
        'fg.nn.functional.pad(fg.asarray([[1, 2]]), (1, 2)).tolist()',
        '[[0, 1, 2, 0, 0]]',
        {
            'input': 'the array.',
            'pad': '(before, after) amounts for the last axis, then the one before it, and so on.',
            'mode': "``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.",
            'value': "the constant for ``mode='constant'`` (0 by default).",
        }),
    'one_hot': (
        'fg.nn.functional.one_hot(fg.asarray([0, 2]), 3).tolist()',
        '[[1, 0, 0], [0, 0, 1]]',
        {
            'x': 'integer class indices.',
            'num_classes': 'the classes (the largest index + 1 by default).',
        }),
    'silu': (
        'fg.nn.functional.silu(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.2689, 0.0, 1.7616]',
        {
            'x': 'the input.',
        }),
    'leaky_relu': (
        'fg.nn.functional.leaky_relu(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64), 0.1).tolist()',
        '[-0.1, 0.0, 2.0]',
        {
            'x': 'the input.',
            'negative_slope': 'the slope below 0.',
        }),
    'elu': (
        'fg.nn.functional.elu(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.6321, 0.0, 2.0]',
        {
            'x': 'the input.',
            'alpha': 'the scale of the negative part.',
        }),
    'softplus': (
        'fg.nn.functional.softplus(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[0.3133, 0.6931, 2.1269]',
        {
            'x': 'the input.',
            'beta': 'the sharpness.',
            'threshold': 'above ``beta * x`` of this, ``x`` itself.',
        }),
    'normalize': (
        'fg.nn.functional.normalize(fg.asarray([[3.0, 4.0]], dtype=fg.float64)).tolist()',
        '[[0.6, 0.8]]',
        {
            'x': 'the input.',
            'p': "the norm's order.",
            'dim': 'the axis the vectors lie along.',
            'eps': 'a floor under the norm.',
        }),
    'cosine_similarity': (
        'round(fg.nn.functional.cosine_similarity(fg.asarray([[1.0, 0.0]]), fg.asarray([[1.0, 1.0]])).item(), 4)',
        '0.7071',
        {
            'x1': 'an array.',
            'x2': 'another, broadcast against ``x1``.',
            'dim': 'the axis the vectors lie along.',
            'eps': 'a floor under the product of the norms.',
        }),
    'l1_loss': (
        'fg.nn.functional.l1_loss(fg.asarray([1.0, 2.0]), fg.asarray([1.0, 4.0])).item()',
        '1.0',
        {
            'input': 'the predictions.',
            'target': 'the targets.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'smooth_l1_loss': (
        'fg.nn.functional.smooth_l1_loss(fg.asarray([1.0, 2.0]), fg.asarray([1.5, 4.0])).item()',
        '0.8125',
        {
            'input': 'the predictions.',
            'target': 'the targets.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
            'beta': 'where the loss turns from squared to absolute.',
        }),
    'huber_loss': (
        'fg.nn.functional.huber_loss(fg.asarray([1.0, 2.0]), fg.asarray([1.5, 4.0])).item()',
        '0.8125',
        {
            'input': 'the predictions.',
            'target': 'the targets.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
            'delta': 'where the loss turns from squared to linear.',
        }),
    'kl_div': (
        'round(fg.nn.functional.kl_div(fg.asarray([[-0.5, -1.0]]), fg.asarray([[0.6, 0.4]]), '
        "reduction='batchmean').item(), 4)",
        '0.027',
        {
            'input': 'log-probabilities.',
            'target': 'probabilities (or log-probabilities with ``log_target``).',
            'reduction': "``'mean'``, ``'sum'``, ``'batchmean'`` (PyTorch's correct one) or ``'none'``.",
            'log_target': 'the target is given as log-probabilities.',
        }),
    'scaled_dot_product_attention': (
        'fg.nn.functional.scaled_dot_product_attention(*[fg.ones((2, 4, 5, 8))] * 3, is_causal=True).shape',
        '(2, 4, 5, 8)',
        {
            'query': '(..., L, E).',
            'key': '(..., S, E).',
            'value': '(..., S, Ev).',
            'attn_mask': 'a bool mask (True: attend) or a float one added to the scores.',
            'dropout_p': 'dropout of the attention weights.',
            'is_causal': 'a causal mask.',
            'scale': "the scores' factor (``1 / sqrt(E)`` by default).",
            'enable_gqa': 'keys and values with fewer heads, shared by groups of query heads.',
        }),
    'pixel_shuffle': (
        'fg.nn.functional.pixel_shuffle(fg.ones((1, 8, 3, 3)), 2).shape',
        '(1, 2, 6, 6)',
        {
            'x': '(*, C * r * r, H, W).',
            'upscale_factor': '``r``.',
        }),
    'glu': (
        'fg.nn.functional.glu(fg.asarray([1.0, 2.0, 0.0, 0.0])).tolist()',
        '[0.5, 1.0]',
        {
            'x': 'the input.',
            'dim': 'the axis split in halves.',
        }),
    'hardtanh': (
        'fg.nn.functional.hardtanh(fg.asarray([-2.0, 0.5, 2.0])).tolist()',
        '[-1.0, 0.5, 1.0]',
        {
            'x': 'the input.',
            'min_val': 'the lower bound.',
            'max_val': 'the upper bound.',
        }),
    'relu6': (
        'fg.nn.functional.relu6(fg.asarray([-1.0, 3.0, 8.0])).tolist()',
        '[0.0, 3.0, 6.0]',
        {
            'x': 'the input.',
        }),
    'logsigmoid': (
        'fg.nn.functional.logsigmoid(fg.asarray([-1.0, 0.0, 2.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.3133, -0.6931, -0.1269]',
        {
            'x': 'the input.',
        }),
    'adaptive_avg_pool2d': (
        'fg.nn.functional.adaptive_avg_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()',
        '[[[[2.5, 4.5], [10.5, 12.5]]]]',
        {
            'x': '(N, C, H, W) or (C, H, W).',
            'output_size': "the output's height and width (``None`` keeps an axis).",
        }),
    'softmin': (
        'fg.nn.functional.softmin(fg.asarray([0.0, 0.0]), dim=0).tolist()',
        '[0.5, 0.5]',
        {
            'x': 'the input.',
            'dim': 'the axis the probabilities sum to 1 along.',
        }),
    'group_norm': (
        'fg.nn.functional.group_norm(fg.ones((1, 4, 3)), 2).shape',
        '(1, 4, 3)',
        {
            'x': '(N, C, ...).',
            'num_groups': 'how many groups the channels are split into.',
            'weight': 'a per-channel scale, or ``None``.',
            'bias': 'a per-channel shift, or ``None``.',
            'eps': 'added to the variance.',
        }),
    'celu': (
        'fg.nn.functional.celu(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64), 2.0).round(4).tolist()',
        '[-1.2642, -0.235, 0.0, 0.5, 3.0]',
        {
            'x': 'the input.',
            'alpha': "the negative side's scale: ``alpha (exp(x / alpha) - 1)``.",
        }),
    'hardshrink': (
        'fg.nn.functional.hardshrink(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64), 0.5).tolist()',
        '[-2.0, 0.0, 0.0, 0.0, 3.0]',
        {
            'input': 'the input.',
            'lambd': 'values within ``[-lambd, lambd]`` become 0.',
        }),
    'softshrink': (
        'fg.nn.functional.softshrink(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64), 0.5).tolist()',
        '[-1.5, -0.0, 0.0, 0.0, 2.5]',
        {
            'input': 'the input.',
            'lambd': 'values within ``[-lambd, lambd]`` become 0; the rest move ``lambd`` towards 0.',
        }),
    'tanhshrink': (
        'fg.nn.functional.tanhshrink(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.036, -0.0051, 0.0, 0.0379, 2.0049]',
        {
            'input': 'the input.',
        }),
    'hardsigmoid': (
        'fg.nn.functional.hardsigmoid(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[0.1667, 0.4583, 0.5, 0.5833, 1.0]',
        {
            'x': 'the input.',
        }),
    'hardswish': (
        'fg.nn.functional.hardswish(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.3333, -0.1146, 0.0, 0.2917, 3.0]',
        {
            'x': 'the input.',
        }),
    'mish': (
        'fg.nn.functional.mish(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.2525, -0.1299, 0.0, 0.3752, 2.9865]',
        {
            'x': 'the input.',
        }),
    'selu': (
        'fg.nn.functional.selu(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-1.5202, -0.3889, 0.0, 0.5254, 3.1521]',
        {
            'x': 'the input.',
        }),
    'softsign': (
        'fg.nn.functional.softsign(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.6667, -0.2, 0.0, 0.3333, 0.75]',
        {
            'x': 'the input.',
        }),
    'threshold': (
        ('fg.nn.functional.threshold(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64), 0.25, '
         '-1.0).tolist()'),
        '[-1.0, -1.0, -1.0, 0.5, 3.0]',
        {
            'x': 'the input.',
            'threshold': 'values at or below it are replaced.',
            'value': 'what replaces them.',
        }),
    'prelu': (
        ('fg.nn.functional.prelu(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64), fg.asarray([0.25], '
         'dtype=fg.float64)).tolist()'),
        '[-0.5, -0.0625, 0.0, 0.5, 3.0]',
        {
            'x': 'the input, channels on axis 1 (when it has two axes or more).',
            'weight': "the negative side's slope: one, or one per channel.",
        }),
    'rrelu': (
        'fg.nn.functional.rrelu(fg.asarray([-2.0, -0.25, 0.0, 0.5, 3.0], dtype=fg.float64)).round(4).tolist()',
        '[-0.4583, -0.0573, 0.0, 0.5, 3.0]',
        {
            'input': 'the input.',
            'lower': "the random negative slope's lower bound.",
            'upper': 'its upper bound.',
            'training': 'draw a slope per element (else their mean, ``(lower + upper) / 2``).',
        }),
    'adaptive_avg_pool1d': (
        'fg.nn.functional.adaptive_avg_pool1d(fg.arange(8.0).reshape(1, 1, 8), 3).round(4).tolist()',
        '[[[1.0, 3.5, 6.0]]]',
        {
            'x': '(N, C, L) or (C, L).',
            'output_size': 'the length out.',
        }),
    'adaptive_avg_pool3d': (
        'fg.nn.functional.adaptive_avg_pool3d(fg.arange(8.0).reshape(1, 2, 2, 2), 1).tolist()',
        '[[[[3.5]]]]',
        {
            'x': '(N, C, D, H, W) or (C, D, H, W).',
            'output_size': 'the size out (an int or a triple).',
        }),
    'adaptive_max_pool1d': (
        'fg.nn.functional.adaptive_max_pool1d(fg.arange(8.0).reshape(1, 1, 8), 3).tolist()',
        '[[[2.0, 5.0, 7.0]]]',
        {
            'x': '(N, C, L) or (C, L).',
            'output_size': 'the length out.',
            'return_indices': 'also return where each maximum was.',
        }),
    'adaptive_max_pool2d': (
        'fg.nn.functional.adaptive_max_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()',
        '[[[[5.0, 7.0], [13.0, 15.0]]]]',
        {
            'x': '(N, C, H, W) or (C, H, W).',
            'output_size': 'the size out (an int or a pair).',
            'return_indices': 'also return where each maximum was.',
        }),
    'adaptive_max_pool3d': (
        'fg.nn.functional.adaptive_max_pool3d(fg.arange(8.0).reshape(1, 2, 2, 2), 1).tolist()',
        '[[[[7.0]]]]',
        {
            'x': '(N, C, D, H, W) or (C, D, H, W).',
            'output_size': 'the size out (an int or a triple).',
            'return_indices': 'also return where each maximum was.',
        }),
    'avg_pool1d': (
        'fg.nn.functional.avg_pool1d(fg.arange(8.0).reshape(1, 1, 8), 2).tolist()',
        '[[[0.5, 2.5, 4.5, 6.5]]]',
        {
            'x': '(N, C, L) or (C, L).',
            'kernel_size': "the window's length.",
            'stride': 'the step between windows (the window by default).',
            'padding': 'zeros added on each side.',
            'ceil_mode': 'a last partial window where the step leaves one.',
            'count_include_pad': "average over the padding's zeros too.",
        }),
    'avg_pool2d': (
        'fg.nn.functional.avg_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()',
        '[[[[2.5, 4.5], [10.5, 12.5]]]]',
        {
            'x': '(N, C, H, W) or (C, H, W).',
            'kernel_size': "the window's size (an int or a pair).",
            'stride': 'the step between windows (the window by default).',
            'padding': 'zeros added on each side.',
            'ceil_mode': 'a last partial window where the step leaves one.',
            'count_include_pad': "average over the padding's zeros too.",
            'divisor_override': "divide by this instead of the window's size.",
        }),
    'avg_pool3d': (
        'fg.nn.functional.avg_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), 2).tolist()',
        '[[[[[3.5]]]]]',
        {
            'x': '(N, C, D, H, W) or (C, D, H, W).',
            'kernel_size': "the window's size (an int or a triple).",
            'stride': 'the step between windows (the window by default).',
            'padding': 'zeros added on each side.',
            'ceil_mode': 'a last partial window where the step leaves one.',
            'count_include_pad': "average over the padding's zeros too.",
            'divisor_override': "divide by this instead of the window's size.",
        }),
    'max_pool1d': (
        'fg.nn.functional.max_pool1d(fg.arange(8.0).reshape(1, 1, 8), 3, stride=2).tolist()',
        '[[[2.0, 4.0, 6.0]]]',
        {
            'x': '(N, C, L) or (C, L).',
            'kernel_size': "the window's length.",
            'stride': 'the step between windows (the window by default).',
            'padding': '-inf added on each side.',
            'dilation': "the spacing of the window's taps.",
            'ceil_mode': 'a last partial window where the step leaves one.',
            'return_indices': 'also return where each maximum was.',
        }),
    'max_pool3d': (
        'fg.nn.functional.max_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), 2).tolist()',
        '[[[[[7.0]]]]]',
        {
            'x': '(N, C, D, H, W) or (C, D, H, W).',
            'kernel_size': "the window's size (an int or a triple).",
            'stride': 'the step between windows (the window by default).',
            'padding': '-inf added on each side.',
            'dilation': "the spacing of the window's taps.",
            'ceil_mode': 'a last partial window where the step leaves one.',
            'return_indices': 'also return where each maximum was.',
        }),
    'lp_pool1d': (
        'fg.nn.functional.lp_pool1d(fg.arange(8.0).reshape(1, 1, 8), 2.0, 2).round(4).tolist()',
        '[[[1.0, 3.605600118637085, 6.40310001373291, 9.219499588012695]]]',
        {
            'input': '(N, C, L) or (C, L).',
            'norm_type': 'the p of the p-norm over each window.',
            'kernel_size': "the window's length.",
            'stride': 'the step between windows (the window by default).',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'lp_pool2d': (
        'fg.nn.functional.lp_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 1.0, 2).tolist()',
        '[[[[10.0, 18.0], [42.0, 50.0]]]]',
        {
            'input': '(N, C, H, W) or (C, H, W).',
            'norm_type': 'the p of the p-norm over each window.',
            'kernel_size': "the window's size (an int or a pair).",
            'stride': 'the step between windows (the window by default).',
            'ceil_mode': 'a last partial window where the step leaves one.',
        }),
    'pixel_unshuffle': (
        'fg.nn.functional.pixel_unshuffle(fg.ones((1, 1, 4, 4)), 2).shape',
        '(1, 4, 2, 2)',
        {
            'x': '(N, C, H, W).',
            'downscale_factor': 'r: each r x r block of pixels becomes r*r channels.',
        }),
    'channel_shuffle': (
        'fg.nn.functional.channel_shuffle(fg.arange(4.0).reshape(1, 4, 1, 1), 2).flatten().tolist()',
        '[0.0, 2.0, 1.0, 3.0]',
        {
            'input': '(N, C, ...).',
            'groups': 'the channels, as a (groups, C / groups) grid, read by columns.',
        }),
    'pairwise_distance': (
        'fg.nn.functional.pairwise_distance(fg.asarray([[0.0, 0.0]]), fg.asarray([[3.0, 4.0]])).round(4).tolist()',
        '[5.0]',
        {
            'x1': 'the first vectors, features last.',
            'x2': 'the second, broadcast against them.',
            'p': 'the norm.',
            'eps': "added to the differences (PyTorch's).",
            'keepdim': 'keep the reduced axis.',
        }),
    'hinge_embedding_loss': (
        'fg.nn.functional.hinge_embedding_loss(fg.asarray([0.5, 2.0]), fg.asarray([1.0, -1.0])).tolist()',
        '0.25',
        {
            'input': 'the distances.',
            'target': '1 (similar: the loss is the distance) or -1 (dissimilar: ``max(0, margin - distance)``).',
            'margin': 'the margin.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'soft_margin_loss': (
        ('fg.nn.functional.soft_margin_loss(fg.asarray([0.5, -2.0], dtype=fg.float64), fg.asarray([1.0, -1.0], '
         'dtype=fg.float64)).round(4).tolist()'),
        '0.3005',
        {
            'input': 'the scores.',
            'target': '1 or -1 each.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'margin_ranking_loss': (
        ('fg.nn.functional.margin_ranking_loss(fg.asarray([1.0, 2.0]), fg.asarray([2.0, 1.0]), fg.asarray([1.0, '
         '1.0]), margin=0.5).tolist()'),
        '0.75',
        {
            'input1': 'the first scores.',
            'input2': 'the second.',
            'target': '1 where the first should rank higher, -1 where the second.',
            'margin': 'the margin.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'cosine_embedding_loss': (
        ('fg.nn.functional.cosine_embedding_loss(fg.asarray([[1.0, 0.0]]), fg.asarray([[0.0, 1.0]]), '
         'fg.asarray([1.0])).tolist()'),
        '1.0',
        {
            'input1': 'the first vectors.',
            'input2': 'the second.',
            'target': '1 (should align) or -1 (should not) per pair.',
            'margin': 'for -1 pairs: the cosine above which they cost.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'poisson_nll_loss': (
        ('fg.nn.functional.poisson_nll_loss(fg.asarray([0.0, 1.0], dtype=fg.float64), fg.asarray([1.0, 2.0], '
         'dtype=fg.float64)).round(4).tolist()'),
        '0.8591',
        {
            'input': "the rates' logarithms (with ``log_input``) or the rates.",
            'target': 'the counts.',
            'log_input': '``input`` holds log rates.',
            'full': "add Stirling's approximation of ``log(target!)``.",
            'eps': 'added to the rates before the log (without ``log_input``).',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'gaussian_nll_loss': (
        ('fg.nn.functional.gaussian_nll_loss(fg.asarray([0.0, 1.0], dtype=fg.float64), fg.asarray([1.0, 1.0], '
         'dtype=fg.float64), fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()'),
        '0.4233',
        {
            'input': 'the means.',
            'target': 'the observations.',
            'var': 'the variances (broadcast against them).',
            'full': 'add the constant ``log(2 pi) / 2``.',
            'eps': 'the least variance.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'multi_margin_loss': (
        ('fg.nn.functional.multi_margin_loss(fg.asarray([[0.1, 0.8, 0.3]], dtype=fg.float64), '
         'fg.asarray([1])).round(4).tolist()'),
        '0.2667',
        {
            'input': '(N, C) scores.',
            'target': '(N,) class indices.',
            'p': '1 or 2: the hinge, or its square.',
            'margin': 'the margin.',
            'weight': 'a per-class weight, or ``None``.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'multilabel_margin_loss': (
        ('fg.nn.functional.multilabel_margin_loss(fg.asarray([[0.1, 0.2, 0.4, 0.8]], dtype=fg.float64), '
         'fg.asarray([[3, 0, -1, 1]])).round(4).tolist()'),
        '0.85',
        {
            'input': '(N, C) scores.',
            'target': "(N, C) each row's classes, ended by -1.",
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'multilabel_soft_margin_loss': (
        ('fg.nn.functional.multilabel_soft_margin_loss(fg.asarray([[0.0, 2.0]], dtype=fg.float64), '
         'fg.asarray([[0.0, 1.0]], dtype=fg.float64)).round(4).tolist()'),
        '0.41',
        {
            'input': '(N, C) scores.',
            'target': '(N, C) of 0 and 1.',
            'weight': 'a per-class weight, or ``None``.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'triplet_margin_loss': (
        ('fg.nn.functional.triplet_margin_loss(fg.asarray([[0.0, 0.0]]), fg.asarray([[1.0, 0.0]]), '
         'fg.asarray([[3.0, 0.0]])).round(4).tolist()'),
        '0.0',
        {
            'anchor': 'the anchors, features last.',
            'positive': 'what each should be near.',
            'negative': 'what each should be far from.',
            'margin': 'the margin.',
            'p': 'the norm of the distances.',
            'eps': "added to the differences (PyTorch's).",
            'swap': 'use the positive-negative distance where it is smaller (the distance swap).',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'local_response_norm': (
        'fg.nn.functional.local_response_norm(fg.ones((1, 3, 1, 1)), 2).round(4).flatten().tolist()',
        '[1.0, 0.9998999834060669, 0.9998999834060669]',
        {
            'input': '(N, C, ...).',
            'size': 'the neighbouring channels normalized over.',
            'alpha': 'the scale of their mean square.',
            'beta': 'its exponent.',
            'k': 'the additive constant.',
        }),
    'rms_norm': (
        'fg.nn.functional.rms_norm(fg.asarray([[3.0, 4.0]], dtype=fg.float64), (2,)).round(4).tolist()',
        '[[0.8485, 1.1314]]',
        {
            'input': 'the input.',
            'normalized_shape': 'the trailing shape normalized over.',
            'weight': 'a scale of that shape, or ``None``.',
            'eps': "added to the mean square (the dtype's epsilon by default).",
        }),
    'dropout1d': (
        'fg.nn.functional.dropout1d(fg.ones((1, 2, 3)), 0.5, training=False).tolist()',
        '[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]',
        {
            'x': '(N, C, L) or (C, L).',
            'p': 'the probability of zeroing a channel.',
            'training': 'drop (else the input is returned as it is).',
        }),
    'dropout2d': (
        'fg.nn.functional.dropout2d(fg.ones((1, 2, 1, 1)), 0.5, training=False).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'x': '(N, C, H, W) or (C, H, W).',
            'p': 'the probability of zeroing a channel.',
            'training': 'drop (else the input is returned as it is).',
        }),
    'dropout3d': (
        'fg.nn.functional.dropout3d(fg.ones((1, 2, 1, 1, 1)), 0.5, training=False).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'x': '(N, C, D, H, W) or (C, D, H, W).',
            'p': 'the probability of zeroing a channel.',
            'training': 'drop (else the input is returned as it is).',
        }),
    'alpha_dropout': (
        'fg.nn.functional.alpha_dropout(fg.ones(3), 0.5).tolist()',
        '[1.0, 1.0, 1.0]',
        {
            'input': 'the input.',
            'p': 'the probability of dropping an element.',
            'training': ("drop, keeping SELU's mean and variance (else the input as it is; off by default, as "
                         "PyTorch's)."),
        }),
    'feature_alpha_dropout': (
        'fg.nn.functional.feature_alpha_dropout(fg.ones((1, 2, 1)), 0.5).flatten().tolist()',
        '[1.0, 1.0]',
        {
            'input': '(N, C, ...).',
            'p': 'the probability of dropping a channel.',
            'training': ("drop, keeping SELU's mean and variance (else the input as it is; off by default, as "
                         "PyTorch's)."),
        }),
    'bilinear': (
        'fg.nn.functional.bilinear(fg.asarray([[1.0, 2.0]]), fg.asarray([[3.0]]), fg.ones((1, 2, 1))).tolist()',
        '[[9.0]]',
        {
            'x1': '(N, in1) inputs.',
            'x2': '(N, in2) inputs.',
            'weight': '(out, in1, in2): ``y[n, o] = x1[n] @ weight[o] @ x2[n]``.',
            'bias': '(out,), or ``None``.',
        }),
    'unfold': (
        'fg.nn.functional.unfold(fg.arange(16.0).reshape(1, 1, 4, 4), 2, stride=2).shape',
        '(1, 4, 4)',
        {
            'x': '(N, C, H, W).',
            'kernel_size': "the window's size.",
            'dilation': "the spacing of the window's taps.",
            'padding': 'zeros added on each side.',
            'stride': 'the step between windows.',
        }),
    'fold': (
        'fg.nn.functional.fold(fg.ones((1, 4, 4)), (4, 4), 2, stride=2).shape',
        '(1, 1, 4, 4)',
        {
            'x': '(N, C * kernel taps, windows): what ``unfold`` makes.',
            'output_size': 'the spatial size out.',
            'kernel_size': "the window's size.",
            'dilation': "the spacing of the window's taps.",
            'padding': 'the padding removed from each side.',
            'stride': 'the step between windows.',
        }),
    'conv1d': (
        'fg.nn.functional.conv1d(fg.arange(5.0).reshape(1, 1, 5), fg.asarray([[[1.0, -1.0]]])).tolist()',
        '[[[-1.0, -1.0, -1.0, -1.0]]]',
        {
            'x': '(N, C_in, L) or (C_in, L).',
            'weight': '(C_out, C_in / groups, k).',
            'bias': '(C_out,), or ``None``.',
            'stride': 'the step between windows.',
            'padding': "zeros added on each side (or ``'same'`` / ``'valid'``).",
            'dilation': "the spacing of the kernel's taps.",
            'groups': 'the channels split into this many independent groups.',
        }),
    'conv3d': (
        'fg.nn.functional.conv3d(fg.ones((1, 1, 2, 2, 2)), fg.ones((1, 1, 2, 2, 2))).flatten().tolist()',
        '[8.0]',
        {
            'x': '(N, C_in, D, H, W) or (C_in, D, H, W).',
            'weight': '(C_out, C_in / groups, kD, kH, kW).',
            'bias': '(C_out,), or ``None``.',
            'stride': 'the step between windows.',
            'padding': "zeros added on each side (or ``'same'`` / ``'valid'``).",
            'dilation': "the spacing of the kernel's taps.",
            'groups': 'the channels split into this many independent groups.',
        }),
    'conv_transpose1d': (
        'fg.nn.functional.conv_transpose1d(fg.asarray([[[1.0, 2.0]]]), fg.asarray([[[1.0, 1.0]]])).tolist()',
        '[[[1.0, 3.0, 2.0]]]',
        {
            'x': '(N, C_in, L) or (C_in, L).',
            'weight': '(C_in, C_out / groups, k).',
            **_TRANSPOSED,
        }),
    'conv_transpose2d': (
        'fg.nn.functional.conv_transpose2d(fg.ones((1, 1, 2, 2)), fg.ones((1, 1, 2, 2)), stride=2).shape',
        '(1, 1, 4, 4)',
        {
            'x': '(N, C_in, H, W) or (C_in, H, W).',
            'weight': '(C_in, C_out / groups, kH, kW).',
            **_TRANSPOSED,
        }),
    'conv_transpose3d': (
        'fg.nn.functional.conv_transpose3d(fg.ones((1, 1, 1, 1, 1)), fg.ones((1, 1, 2, 2, 2))).shape',
        '(1, 1, 2, 2, 2)',
        {
            'x': '(N, C_in, D, H, W) or (C_in, D, H, W).',
            'weight': '(C_in, C_out / groups, kD, kH, kW).',
            **_TRANSPOSED,
        }),
    'interpolate': (
        'fg.nn.functional.interpolate(fg.asarray([[[1.0, 2.0]]]), scale_factor=2, mode="linear").tolist()',
        '[[[1.0, 1.25, 1.75, 2.0]]]',
        {
            'x': '(N, C, ...) with 1 to 3 spatial axes.',
            **_RESIZE,
            'antialias': "PyTorch's (bilinear and bicubic downsampling).",
        }),
    'batch_norm': (
        'fg.nn.functional.batch_norm(fg.asarray([[1.0, 2.0], [3.0, 6.0]]), fg.asarray([1.0, 2.0]), '
        'fg.asarray([4.0, 1.0])).round(4).tolist()',
        '[[0.0, 0.0], [1.0, 4.0]]',
        {
            'input': '(N, C, ...): normalized per channel (axis 1).',
            'running_mean': 'the per-channel means used out of training (or ``None``).',
            'running_var': 'the per-channel variances used out of training (or ``None``).',
            'weight': 'a per-channel scale (or ``None``).',
            'bias': 'a per-channel shift (or ``None``).',
            'training': "normalize with the batch's statistics (the running ones must then be ``None`` or "
                        "``Parameter`` holders, which are updated).",
            'momentum': "the running statistics' update factor.",
            'eps': 'added to the variance.',
        }),
    'instance_norm': (
        'fg.nn.functional.instance_norm(fg.asarray([[[1.0, 3.0], [2.0, 6.0]]])).round(4).tolist()',
        '[[[-1.0, 1.0], [-1.0, 1.0]]]',
        {
            'x': '(N, C, ...): each sample and channel normalized over the spatial axes.',
            'running_mean': 'per-channel means, used where ``use_input_stats`` is ``False``.',
            'running_var': 'per-channel variances, used where ``use_input_stats`` is ``False``.',
            'weight': 'a per-channel scale (or ``None``).',
            'bias': 'a per-channel shift (or ``None``).',
            'use_input_stats': "normalize with each instance's own statistics.",
            'momentum': "the running statistics' update factor.",
            'eps': 'added to the variance.',
        }),
    'embedding_bag': (
        'fg.nn.functional.embedding_bag(fg.asarray([0, 2, 1]), fg.asarray([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]]), '
        'fg.asarray([0, 2])).tolist()',
        '[[2.0, 1.5], [0.0, 1.0]]',
        {
            'input': 'indices: a 2-d array (a bag a row), or 1-d with ``offsets``.',
            'weight': 'the embedding table (num_embeddings, dim).',
            'offsets': "where each bag starts in a 1-d ``input``.",
            'max_norm': 'renormalize the rows looked up to at most this norm.',
            'norm_type': "the norm ``max_norm`` uses.",
            'scale_grad_by_freq': "scale the gradient by the inverse of each index's count in the batch.",
            'mode': "``'sum'``, ``'mean'`` or ``'max'``.",
            'sparse': "PyTorch's sparse gradients (accepted; the gradient is dense).",
            'per_sample_weights': "a weight per index (``mode='sum'``).",
            'include_last_offset': "``offsets`` has one more entry, the end of the last bag.",
            'padding_idx': 'an index that contributes nothing.',
        }),
    'ctc_loss': (
        'round(fg.nn.functional.ctc_loss(fg.nn.functional.log_softmax(fg.asarray([[[0.0, 1.0, 2.0]], '
        '[[2.0, 1.0, 0.0]], [[0.0, 0.0, 0.0]]]), dim=2), fg.asarray([[1, 2]]), fg.asarray([3]), '
        'fg.asarray([2])).item(), 4)',
        '1.1703',
        {
            'log_probs': '(T, N, C) log-probabilities, or (T, C).',
            'targets': '(N, S) label sequences, or their concatenation (1-d).',
            'input_lengths': "each sample's input length.",
            'target_lengths': "each sample's target length.",
            'blank': 'the blank label.',
            'reduction': "``'mean'`` (each loss divided by its target's length, then the mean), ``'sum'`` or "
                         "``'none'``.",
            'zero_infinity': 'infinite losses (impossible alignments) and their gradients become zero.',
        }),
    'linear_cross_entropy': (
        'round(fg.nn.functional.linear_cross_entropy(fg.asarray([[1.0, 2.0]]), fg.asarray([[1.0, 0.0], [0.0, 1.0]]), '
        'fg.asarray([1])).item(), 4)',
        '0.3133',
        {
            'input': '(N, in) or (in,) features.',
            'linear_weight': '(classes, in): the logits are ``input @ linear_weight.T``.',
            'target': 'class indices.',
            'linear_bias': "the logits' bias (or ``None``).",
            'weight': 'a weight per class.',
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
            'ignore_index': 'a target index that contributes nothing.',
            'label_smoothing': 'the share of the target spread over all classes.',
            'options': "PyTorch's backend options (accepted, unused).",
        }),
    'lp_pool3d': (
        'fg.nn.functional.lp_pool3d(fg.asarray([[[[[3.0, 4.0]]]]]), 2, (1, 1, 2)).tolist()',
        '[[[[[5.0]]]]]',
        {
            'input': '(N, C, D, H, W) or (C, D, H, W).',
            'norm_type': 'the power ``p`` of the norm.',
            'kernel_size': "the window's size (an int or a triple).",
            'stride': 'the step between windows (the kernel size by default).',
            'ceil_mode': 'a last partial window where the input does not divide evenly.',
        }),
    'max_unpool1d': (
        'fg.nn.functional.max_unpool1d(fg.asarray([[[5.0, 3.0]]]), fg.asarray([[[1, 3]]]), 2).tolist()',
        '[[[0.0, 5.0, 0.0, 3.0]]]',
        {
            'input': "(N, C, L) or (C, L): ``max_pool1d``'s values.",
            'indices': "where each came from (``max_pool1d(..., return_indices=True)``).",
            'kernel_size': "the pooling window's size.",
            'stride': "the pooling's stride (the kernel size by default).",
            'padding': "the pooling's padding.",
            'output_size': 'the size out, where the pooling was not exact.',
        }),
    'max_unpool2d': (
        'fg.nn.functional.max_unpool2d(fg.asarray([[[[5.0]]]]), fg.asarray([[[[2]]]]), 2).tolist()',
        '[[[[0.0, 0.0], [5.0, 0.0]]]]',
        {
            'x': "(N, C, H, W) or (C, H, W): ``max_pool2d``'s values.",
            'indices': "where each came from, a flat index into each plane.",
            'kernel_size': "the pooling window's size.",
            'stride': "the pooling's stride (the kernel size by default).",
            'padding': "the pooling's padding.",
            'output_size': 'the size out, where the pooling was not exact.',
        }),
    'max_unpool3d': (
        'fg.nn.functional.max_unpool3d(fg.asarray([[[[[5.0]]]]]), fg.asarray([[[[[7]]]]]), 2).tolist()',
        '[[[[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 5.0]]]]]',
        {
            'x': "(N, C, D, H, W) or (C, D, H, W): ``max_pool3d``'s values.",
            'indices': "where each came from, a flat index into each volume.",
            'kernel_size': "the pooling window's size.",
            'stride': "the pooling's stride (the kernel size by default).",
            'padding': "the pooling's padding.",
            'output_size': 'the size out, where the pooling was not exact.',
        }),
    'triplet_margin_with_distance_loss': (
        'fg.nn.functional.triplet_margin_with_distance_loss(fg.asarray([[0.0, 0.0]]), fg.asarray([[3.0, 4.0]]), '
        'fg.asarray([[1.0, 0.0]]), distance_function=lambda a, b: (a - b).abs().sum(-1)).item()',
        '7.0',
        {
            'anchor': '(N, D) or (D,).',
            'positive': "examples like the anchor's.",
            'negative': "examples unlike the anchor's.",
            'distance_function': 'a function of two batches giving their distances (``pairwise_distance`` by default).',
            'margin': 'how much farther the negative should be.',
            'swap': "use the positive-negative distance where it is smaller (the distance swap).",
            'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
        }),
    'upsample': (
        'fg.nn.functional.upsample(fg.asarray([[[1.0, 2.0]]]), scale_factor=2).tolist()',
        '[[[1.0, 1.0, 2.0, 2.0]]]',
        {
            'x': '(N, C, ...) with 1 to 3 spatial axes.',
            'size': 'the spatial size out.',
            'scale_factor': 'or the factor each spatial size is multiplied by.',
            'mode': "as ``interpolate``'s (``'nearest'`` by default).",
            'align_corners': "for the linear modes: the corners' pixels line up (PyTorch's).",
        }),
    'fractional_max_pool2d': (
        'fg.nn.functional.fractional_max_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2, output_size=2, '
        '_random_samples=fg.asarray([[[0.5, 0.5]]])).tolist()',
        '[[[[5.0, 7.0], [13.0, 15.0]]]]',
        {
            'input': '(N, C, H, W) or (C, H, W).',
            'kernel_size': "the window's size.",
            'output_size': 'the size out (or give ``output_ratio``).',
            'output_ratio': "the size out as a fraction of the input's.",
            'return_indices': "also return where each maximum came from (for ``max_unpool2d``).",
            '_random_samples': "(N, C, 2) uniforms placing the windows (PyTorch's; drawn from the global "
                               "generator by default).",
        }),
    'fractional_max_pool3d': (
        'fg.nn.functional.fractional_max_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), 1, output_size=1, '
        '_random_samples=fg.asarray([[[0.5, 0.5, 0.5]]])).tolist()',
        '[[[[[7.0]]]]]',
        {
            'input': '(N, C, T, H, W) or (C, T, H, W).',
            'kernel_size': "the window's size.",
            'output_size': 'the size out (or give ``output_ratio``).',
            'output_ratio': "the size out as a fraction of the input's.",
            'return_indices': "also return where each maximum came from (for ``max_unpool3d``).",
            '_random_samples': "(N, C, 3) uniforms placing the windows (PyTorch's; drawn from the global "
                               "generator by default).",
        }),
}

# What the usual constructor parameters mean, for every module that takes them.
COMMON = {
    'num_features': 'the number of channels ``C``.',
    'eps': 'added to the variance.',
    'momentum': "the running statistics' update factor (``None``: a cumulative average).",
    'affine': 'a learned per-channel scale and shift.',
    'track_running_stats': 'keep running statistics for evaluation.',
    'dtype': "the parameters' dtype.",
    'device': 'where the parameters live.',
    'in_channels': "the input's channels.",
    'out_channels': "the output's channels.",
    'kernel_size': "the kernel's size (an int or a tuple).",
    'stride': 'the step between windows.',
    'padding': "zeros added on each side (or ``'same'`` / ``'valid'``).",
    'dilation': "the spacing of the kernel's taps.",
    'groups': 'the channels split into this many independent groups.',
    'bias': 'add a learned bias.',
    'padding_mode': "``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.",
    'input_size': "the features of each step's input.",
    'hidden_size': 'the features of the hidden state.',
    'num_layers': 'stacked layers.',
    'batch_first': 'inputs and outputs are ``(batch, sequence, features)`` (else sequence first).',
    'dropout': 'the dropout probability between layers (or of the attention weights).',
    'bidirectional': 'run each layer both ways and concatenate.',
    'proj_size': "project the hidden state to this size (LSTM's).",
    'nonlinearity': "``'tanh'`` or ``'relu'``.",
    'embed_dim': "the model's width.",
    'num_heads': 'parallel heads (dividing ``embed_dim``).',
    'add_bias_kv': 'learned bias rows appended to the keys and values.',
    'add_zero_attn': 'a row of zeros appended to the keys and values.',
    'kdim': "the keys' features (``embed_dim`` by default).",
    'vdim': "the values' features (``embed_dim`` by default).",
    'd_model': "the model's width.",
    'nhead': 'attention heads.',
    'dim_feedforward': "the feed-forward block's width.",
    'activation': "the feed-forward activation (``'relu'``, ``'gelu'`` or a function).",
    'layer_norm_eps': "the layer norms' epsilon.",
    'norm_first': 'normalize before each block (pre-norm) instead of after.',
    'reduction': "``'mean'``, ``'sum'`` or ``'none'``.",
    'size_average': "PyTorch's deprecated form of ``reduction``.",
    'reduce': "PyTorch's deprecated form of ``reduction``.",
}


def module_doc(cls: Any) -> str:
    """``cls``'s docstring: its own text, then its constructor's parameters (where it names
    them: the activations' pass theirs on to the functional form) and its example."""
    call, shown, extra = MODULES[cls.__name__]
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    named = not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
    args = [(p.name, extra.get(p.name) or COMMON[p.name]) for p in params] if named else []
    return sections(cls.__doc__ or "", args, [f">>> {call}", shown])


def functional_doc(name: str, fn: Any) -> str:
    """``fn``'s docstring: its own text, then its parameters and its example (``FUNCTIONAL``)."""
    call, shown, described = FUNCTIONAL[name]
    args = [(p, described[p]) for p in inspect.signature(fn).parameters]
    return sections(fn.__doc__ or "", args, [f">>> {call}", shown])
