"""The API reference's sections for the ``fg.random`` functions whose docstrings carry a
summary alone: Google-style ``Args`` and a runnable ``Example``. Every example prints
``jax.random``'s own values for the same key (checked against JAX 0.10 when written, to the
digits shown); ``tests/test_docstrings.py`` runs them."""

from __future__ import annotations

import inspect
from typing import Any

from ..ops.reference_docs import sections

__all__ = ["RANDOM", "random_doc"]

# Each function's example call, what it prints, and what each of its parameters means.
RANDOM: dict[str, tuple[str, str, dict[str, str]]] = {
    'exponential': (
        'fg.random.exponential(fg.random.key(0), (3,)).round(4).tolist()',
        '[2.9500999450683594, 3.843400001525879, 0.40389999747276306]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'laplace': (
        'fg.random.laplace(fg.random.key(0), (3,)).round(4).tolist()',
        '[-2.256999969482422, -3.1503000259399414, 0.40860000252723694]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'logistic': (
        'fg.random.logistic(fg.random.key(0), (3,)).round(4).tolist()',
        '[2.896399974822998, 3.8217999935150146, -0.6977999806404114]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'cauchy': (
        'fg.random.cauchy(fg.random.key(0), (3,)).round(4).tolist()',
        '[6.027500152587891, 14.837900161743164, -0.5817000269889832]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'gumbel': (
        'fg.random.gumbel(fg.random.key(0), (3,)).round(4).tolist()',
        '[2.9233999252319336, 3.8326001167297363, -0.09690000116825104]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'rademacher': (
        'fg.random.rademacher(fg.random.key(0), (6,)).tolist()',
        '[-1, -1, 1, 1, -1, 1]',
        {
            'k': 'a key (``fg.random.key``).',
            'shape': "the result's shape (``()`` by default).",
            'dtype': 'an int dtype (int32 by default).',
        }),
    'truncated_normal': (
        'fg.random.truncated_normal(fg.random.key(0), -1.0, 1.0, (3,)).round(4).tolist()',
        '[0.8618999719619751, 0.9412999749183655, -0.29100000858306885]',
        {
            'k': 'a key (``fg.random.key``).',
            'lower': 'the lower bound (broadcast against ``shape``).',
            'upper': 'the upper bound.',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'gamma': (
        'fg.random.gamma(fg.random.key(0), 2.0, (3,)).round(4).tolist()',
        '[1.5898000001907349, 1.7598999738693237, 1.128999948501587]',
        {
            'k': 'a key (``fg.random.key``).',
            'a': 'the shape parameter, above 0 (broadcast against ``shape``).',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'loggamma': (
        'fg.random.loggamma(fg.random.key(0), 2.0, (3,)).round(4).tolist()',
        '[0.4636000096797943, 0.5652999877929688, 0.12129999697208405]',
        {
            'k': 'a key (``fg.random.key``).',
            'a': 'the shape parameter, above 0 (broadcast against ``shape``).',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'beta': (
        'fg.random.beta(fg.random.key(0), 2.0, 3.0, (3,)).round(4).tolist()',
        '[0.2363000065088272, 0.49050000309944153, 0.6837999820709229]',
        {
            'k': 'a key (``fg.random.key``).',
            'a': 'the first shape parameter, above 0.',
            'b': 'the second.',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'dirichlet': (
        'fg.random.dirichlet(fg.random.key(0), fg.asarray([1.0, 2.0, 3.0])).round(4).tolist()',
        '[0.14229999482631683, 0.4049000144004822, 0.4528000056743622]',
        {
            'k': 'a key (``fg.random.key``).',
            'alpha': 'the concentrations, last axis the categories.',
            'shape': "the batch shape (``alpha``'s leading shape by default); the categories are added after it.",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    't': (
        'fg.random.t(fg.random.key(0), 3.0, (3,)).round(4).tolist()',
        '[0.6901999711990356, -3.239300012588501, -1.6744999885559082]',
        {
            'k': 'a key (``fg.random.key``).',
            'df': 'the degrees of freedom, above 0.',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
        }),
    'poisson': (
        'fg.random.poisson(fg.random.key(0), 3.0, (6,)).tolist()',
        '[0, 0, 4, 4, 1, 2]',
        {
            'k': 'a key (``fg.random.key``).',
            'lam': 'the rate, at least 0 (broadcast against ``shape``).',
            'shape': "the result's shape (the parameters' broadcast shape by default).",
            'dtype': 'an int dtype (int32 by default).',
        }),
    'multivariate_normal': (
        ('fg.random.multivariate_normal(fg.random.key(0), fg.zeros(2), fg.asarray([[1.0, 0.5], [0.5, '
         '1.0]])).round(4).tolist()'),
        '[1.6225999593734741, 2.5652999877929688]',
        {
            'k': 'a key (``fg.random.key``).',
            'mean': 'the means, ``(..., n)``.',
            'cov': 'the covariances, ``(..., n, n)``.',
            'shape': "the batch shape (the parameters' broadcast batch shape by default); ``n`` is added after it.",
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
            'method': "``'cholesky'``, ``'eigh'`` or ``'svd'``: how ``cov`` is factored.",
        }),
    'orthogonal': (
        'fg.random.orthogonal(fg.random.key(0), 2).round(4).tolist()',
        '[[0.9660999774932861, 0.2581999897956848], [-0.2581999897956848, 0.9660999774932861]]',
        {
            'k': 'a key (``fg.random.key``).',
            'n': 'the rows.',
            'shape': 'a batch shape in front.',
            'dtype': 'a float dtype (float32 by default, float64 in 64-bit mode).',
            'm': 'the columns (``n`` by default).',
        }),
    'key_data': (
        'fg.random.key_data(fg.random.key(0)).tolist()',
        '[0, 0]',
        {
            'keys': 'typed keys (``fg.random.key``).',
        }),
    'wrap_key_data': (
        'fg.random.bits(fg.random.wrap_key_data(fg.asarray([0, 42], dtype=fg.uint32)), (2,)).tolist()',
        '[2098992034, 2919706841]',
        {
            'data': 'uint32 words, last axis of size 2.',
        }),
    'PRNGKey': (
        'fg.random.PRNGKey(42).tolist()',
        '[0, 42]',
        {
            'seed': 'an int.',
        }),
}


def random_doc(name: str, fn: Any) -> str:
    """``fn``'s docstring: its own text, then its parameters and its example (``RANDOM``)."""
    call, shown, described = RANDOM[name]
    args = [(p, described[p]) for p in inspect.signature(fn).parameters]
    return sections(fn.__doc__ or "", args, [f">>> {call}", shown])
