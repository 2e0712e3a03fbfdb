"""The API reference's sections for ``fg.nn``'s layers and losses whose docstrings carry a
summary alone: Google-style ``Args`` (the constructor's parameters) and a runnable
``Example``. The examples' values were checked against PyTorch's modules when written
(the losses and the activations with a parameter, to the digits shown); the others show
shapes or values that follow from the definition. ``tests/test_docstrings.py`` runs them."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["MODULES", "module_doc"]

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
    doc = inspect.cleandoc(cls.__doc__ or "")
    if params and not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        args = "\n".join(f"    {p.name}: {extra.get(p.name) or COMMON[p.name]}" for p in params)
        doc += f"\n\nArgs:\n{args}"
    return f"{doc}\n\nExample:\n    >>> {call}\n    {shown}\n"
