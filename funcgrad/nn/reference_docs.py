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
