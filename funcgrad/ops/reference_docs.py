"""The API reference's sections for the ``fg.*`` functions whose docstrings are made here
rather than where they are defined: the elementwise functions (generated one per
primitive) and the array functions that carry a one-line summary. Each gets Google-style
``Args``, ``Returns`` and a runnable ``Example``; the examples' values were checked against
NumPy's and SciPy's functions when written, and ``tests/test_docstrings.py`` runs them."""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["ELEMENTWISE", "FUNCTIONS", "LINALG", "elementwise_doc", "function_doc", "linalg_doc", "sections"]

# Each elementwise function's example: the call and what it prints.
ELEMENTWISE = {
    'abs': ('fg.abs(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, 0.0, 2.5]'),
    'absolute': ('fg.absolute(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, 0.0, 2.5]'),
    'add': ('fg.add(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()', '[[-5.0, -11.0], [9.0, 3.0]]'),
        'subtract': ('fg.subtract(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                     '[[-9.0, -3.0], [5.0, 11.0]]'),
        'multiply': ('fg.multiply(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                     '[[-14.0, 28.0], [14.0, -28.0]]'),
        'divide': ('fg.divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                   '[[-3.5, 1.75], [3.5, -1.75]]'),
        'true_divide': ('fg.true_divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                        '[[-3.5, 1.75], [3.5, -1.75]]'),
        'floor_divide': ('fg.floor_divide(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                         '[[-4.0, 1.0], [3.0, -2.0]]'),
        'remainder': ('fg.remainder(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                      '[[1.0, -3.0], [1.0, -1.0]]'),
        'maximum': ('fg.maximum(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                    '[[2.0, -4.0], [7.0, 7.0]]'),
        'minimum': ('fg.minimum(fg.asarray([[-7.0], [7.0]]), fg.asarray([2.0, -4.0])).tolist()',
                    '[[-7.0, -7.0], [2.0, -4.0]]'),
    'arctan2': ('fg.arctan2(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[0.245, 0.6435]'),
    'atan2': ('fg.atan2(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[0.245, 0.6435]'),
    'hypot': ('fg.hypot(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[4.1231, 5.0]'),
    'copysign': ('fg.copysign(fg.asarray([1.0, 2.0]), fg.asarray([-1.0, 0.0])).tolist()', '[-1.0, 2.0]'),
    'logaddexp': ('fg.logaddexp(fg.asarray([1.0, 3.0], dtype=fg.float64), 4.0).round(4).tolist()', '[4.0486, 4.3133]'),
    'nextafter': ('(fg.nextafter(fg.asarray([1.0]), fg.asarray([2.0])) - 1.0).tolist()', '[1.1920928955078125e-07]'),
    'bitwise_and': ('fg.bitwise_and(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[0, 0]'),
    'bitwise_or': ('fg.bitwise_or(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[14, 11]'),
    'bitwise_xor': ('fg.bitwise_xor(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[14, 11]'),
    'bitwise_invert': ('fg.bitwise_invert(fg.asarray([0, 5])).tolist()', '[-1, -6]'),
    'bitwise_left_shift': ('fg.bitwise_left_shift(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[48, 20]'),
    'bitwise_right_shift': ('fg.bitwise_right_shift(fg.asarray([12, 10]), fg.asarray([2, 1])).tolist()', '[3, 5]'),
    'equal': ('fg.equal(fg.asarray([1, 2, 3]), 2).tolist()', '[False, True, False]'),
    'not_equal': ('fg.not_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[True, False, True]'),
    'less': ('fg.less(fg.asarray([1, 2, 3]), 2).tolist()', '[True, False, False]'),
    'less_equal': ('fg.less_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[True, True, False]'),
    'greater': ('fg.greater(fg.asarray([1, 2, 3]), 2).tolist()', '[False, False, True]'),
    'greater_equal': ('fg.greater_equal(fg.asarray([1, 2, 3]), 2).tolist()', '[False, True, True]'),
        'logical_and': ('fg.logical_and(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                        '[True, False, False]'),
        'logical_or': ('fg.logical_or(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                       '[True, True, False]'),
        'logical_xor': ('fg.logical_xor(fg.asarray([True, True, False]), fg.asarray([True, False, False])).tolist()',
                        '[False, True, False]'),
    'logical_not': ('fg.logical_not(fg.asarray([True, False])).tolist()', '[False, True]'),
    'isnan': ('fg.isnan(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[False, False, False, True]'),
    'isinf': ('fg.isinf(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[False, False, True, False]'),
    'isfinite': ('fg.isfinite(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[True, True, False, False]'),
    'signbit': ('fg.signbit(fg.asarray([-0.0, 1.0, fg.inf, fg.nan])).tolist()', '[True, False, False, False]'),
    'negative': ('fg.negative(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[1.5, -0.0, -2.5]'),
    'positive': ('fg.positive(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.5, 0.0, 2.5]'),
    'exp': ('fg.exp(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.6487, 2.7183]'),
    'exp2': ('fg.exp2(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.4142, 2.0]'),
    'expm1': ('fg.expm1(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.6487, 1.7183]'),
    'log': ('fg.log(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-0.6931, 0.0]'),
    'log2': ('fg.log2(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-1.0, 0.0]'),
    'log10': ('fg.log10(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[-0.301, 0.0]'),
    'log1p': ('fg.log1p(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4055, 0.6931]'),
    'sqrt': ('fg.sqrt(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.7071, 1.0]'),
    'rsqrt': ('fg.rsqrt(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.4142, 1.0]'),
    'sin': ('fg.sin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4794, 0.8415]'),
    'cos': ('fg.cos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.8776, 0.5403]'),
    'tan': ('fg.tan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5463, 1.5574]'),
    'arcsin': ('fg.arcsin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5236, 1.5708]'),
    'asin': ('fg.asin(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5236, 1.5708]'),
    'arccos': ('fg.arccos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.0472, 0.0]'),
    'acos': ('fg.acos(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.0472, 0.0]'),
    'arctan': ('fg.arctan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4636, 0.7854]'),
    'atan': ('fg.atan(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4636, 0.7854]'),
    'sinh': ('fg.sinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5211, 1.1752]'),
    'cosh': ('fg.cosh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[1.1276, 1.5431]'),
    'tanh': ('fg.tanh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4621, 0.7616]'),
    'arcsinh': ('fg.arcsinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4812, 0.8814]'),
    'asinh': ('fg.asinh(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.4812, 0.8814]'),
    'arccosh': ('fg.arccosh(fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()', '[0.0, 1.317]'),
    'acosh': ('fg.acosh(fg.asarray([1.0, 2.0], dtype=fg.float64)).round(4).tolist()', '[0.0, 1.317]'),
    'arctanh': ('fg.arctanh(fg.asarray([0.0, 0.5], dtype=fg.float64)).round(4).tolist()', '[0.0, 0.5493]'),
    'atanh': ('fg.atanh(fg.asarray([0.0, 0.5], dtype=fg.float64)).round(4).tolist()', '[0.0, 0.5493]'),
    'sigmoid': ('fg.sigmoid(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.6225, 0.7311]'),
    'erf': ('fg.erf(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5205, 0.8427]'),
    'lgamma': ('fg.lgamma(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[0.5724, 0.0]'),
    'reciprocal': ('fg.reciprocal(fg.asarray([0.5, 1.0], dtype=fg.float64)).round(4).tolist()', '[2.0, 1.0]'),
    'sign': ('fg.sign(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 1.0]'),
    'square': ('fg.square(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[2.25, 0.0, 6.25]'),
    'floor': ('fg.floor(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-2.0, 0.0, 2.0]'),
    'ceil': ('fg.ceil(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 3.0]'),
    'trunc': ('fg.trunc(fg.asarray([-1.5, 0.0, 2.5])).tolist()', '[-1.0, 0.0, 2.0]'),
    'integer_pow': ('fg.integer_pow(fg.asarray([1.0, 2.0, 3.0]), 3).tolist()', '[1.0, 8.0, 27.0]'),
}

_BOOLEAN = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
            "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "signbit"}

# Each array function's result, example call, what the example prints, and the descriptions
# of its parameters that ``COMMON`` does not give (or gives otherwise).
FUNCTIONS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    'reshape': (
        'A view of ``x`` where the strides allow one, else a copy.',
        'fg.reshape(fg.arange(6), (2, 3)).tolist()',
        '[[0, 1, 2], [3, 4, 5]]',
        {
            'shape': 'the new shape; one entry may be -1 (inferred).',
        }),
    'transpose': (
        'A view with the axes permuted.',
        'fg.transpose(fg.arange(6).reshape(2, 3)).tolist()',
        '[[0, 3], [1, 4], [2, 5]]',
        {
            'axes': 'the permutation (the axes reversed by default).',
        }),
    'squeeze': (
        'A view without those axes.',
        'fg.squeeze(fg.ones((1, 3, 1))).shape',
        '(3,)',
        {
            'axis': 'the size-1 axes to drop (all of them by default).',
        }),
    'expand_dims': (
        'A view with the new axis.',
        'fg.expand_dims(fg.ones(3), 0).shape',
        '(1, 3)',
        {
            'axis': 'where the new axis goes (an int or a tuple of them).',
        }),
    'broadcast_to': (
        'A read-only view of ``shape`` (no copy).',
        'fg.broadcast_to(fg.arange(3), (2, 3)).tolist()',
        '[[0, 1, 2], [0, 1, 2]]',
        {
            'shape': 'the shape to broadcast to.',
        }),
    'flatten': (
        '``x`` with those axes merged into one (a view where possible).',
        'fg.flatten(fg.ones((2, 3, 4)), 1).shape',
        '(2, 12)',
        {
            'start_dim': 'the first axis to merge.',
            'end_dim': 'the last axis to merge.',
        }),
    'ones': (
        'The new array.',
        'fg.ones((2, 2)).tolist()',
        '[[1.0, 1.0], [1.0, 1.0]]',
        {}),
    'full': (
        'The new array.',
        'fg.full((2, 2), 7).tolist()',
        '[[7, 7], [7, 7]]',
        {
            'fill_value': 'the value of every element.',
        }),
    'eye': (
        'The new matrix.',
        'fg.eye(2, 3, k=1).tolist()',
        '[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]',
        {
            'N': 'the number of rows.',
            'M': 'the number of columns (``N`` by default).',
            'k': 'the diagonal that holds the ones (0: the main one; positive: above it).',
        }),
    'ones_like': (
        'The new array.',
        'fg.ones_like(fg.arange(3)).tolist()',
        '[1, 1, 1]',
        {}),
    'zeros_like': (
        'The new array.',
        'fg.zeros_like(fg.arange(3.0)).tolist()',
        '[0.0, 0.0, 0.0]',
        {}),
    'full_like': (
        'The new array.',
        'fg.full_like(fg.arange(3), 5).tolist()',
        '[5, 5, 5]',
        {
            'fill_value': 'the value of every element.',
        }),
    'max': (
        'The maxima.',
        'fg.max(fg.asarray([[1, 5], [4, 2]]), axis=0).tolist()',
        '[4, 5]',
        {
            'initial': "a lower bound for every maximum (NumPy's; needed for an empty reduction).",
            'where': "a bool mask of the elements to include (NumPy's; needs ``initial``).",
        }),
    'min': (
        'The minima.',
        'fg.min(fg.asarray([[1, 5], [4, 2]]), axis=1).tolist()',
        '[1, 2]',
        {
            'initial': "an upper bound for every minimum (NumPy's; needed for an empty reduction).",
            'where': "a bool mask of the elements to include (NumPy's; needs ``initial``).",
        }),
    'argmax': (
        'int64 indices.',
        'fg.argmax(fg.asarray([[1, 5], [4, 2]]), axis=1).tolist()',
        '[1, 0]',
        {
            'axis': 'the axis to search along (the flattened array by default).',
        }),
    'argmin': (
        'int64 indices.',
        'fg.argmin(fg.asarray([[1, 5], [4, 2]]), axis=1).tolist()',
        '[0, 1]',
        {
            'axis': 'the axis to search along (the flattened array by default).',
        }),
    'prod': (
        'The products.',
        'fg.prod(fg.asarray([[1, 2], [3, 4]]), axis=1).tolist()',
        '[2, 12]',
        {
            'initial': "a factor every product starts from (NumPy's).",
            'where': "a bool mask of the elements to include (NumPy's).",
        }),
    'var': (
        'The variances.',
        'fg.var(fg.asarray([1.0, 2.0, 3.0, 4.0])).item()',
        '1.25',
        {
            'ddof': "NumPy's delta degrees of freedom: the sum of squares is divided by ``n - ddof``.",
            'correction': "the array API's name for ``ddof``.",
            'where': "a bool mask of the elements to include (NumPy's).",
            'mean': "the mean, if already computed (NumPy's).",
        }),
    'std': (
        'The standard deviations.',
        'fg.std(fg.asarray([1.0, 2.0, 3.0, 4.0], dtype=fg.float64), ddof=1).round(4).item()',
        '1.291',
        {
            'ddof': "NumPy's delta degrees of freedom: the sum of squares is divided by ``n - ddof``.",
            'correction': "the array API's name for ``ddof``.",
            'where': "a bool mask of the elements to include (NumPy's).",
            'mean': "the mean, if already computed (NumPy's).",
        }),
    'cumsum': (
        "The running sums, of ``x``'s shape (flattened when ``axis`` is ``None``).",
        'fg.cumsum(fg.asarray([[1, 2], [3, 4]]), axis=1).tolist()',
        '[[1, 3], [3, 7]]',
        {
            'axis': 'the axis to scan along (the flattened array by default, as NumPy).',
        }),
    'sort': (
        'The sorted values.',
        'fg.sort(fg.asarray([3, 1, 2])).tolist()',
        '[1, 2, 3]',
        {
            'axis': 'the axis to sort along (the last by default).',
            'kind': "NumPy's algorithm name; every kind sorts stably here.",
            'order': "NumPy's field order for structured arrays (funcgrad has none).",
            'descending': "sort from the largest (the array API's).",
            'stable': "accepted (the array API's); the sort is always stable.",
        }),
    'argsort': (
        'int64 indices that sort ``x``.',
        'fg.argsort(fg.asarray([3, 1, 2])).tolist()',
        '[1, 2, 0]',
        {
            'axis': 'the axis to sort along (the last by default).',
            'kind': "NumPy's algorithm name; every kind sorts stably here.",
            'order': "NumPy's field order for structured arrays (funcgrad has none).",
            'descending': "sort from the largest (the array API's).",
            'stable': "accepted (the array API's); the sort is always stable.",
        }),
    'clip': (
        'The clipped array.',
        'fg.clip(fg.asarray([-2.0, 0.5, 3.0]), 0.0, 1.0).tolist()',
        '[0.0, 0.5, 1.0]',
        {
            'min': 'the lower bound, a number or an array that broadcasts (``None``: none).',
            'max': 'the upper bound (``None``: none).',
            'a_min': "NumPy's name for ``min``.",
            'a_max': "NumPy's name for ``max``.",
        }),
    'take_along_axis': (
        "The picked values, of ``indices``' shape.",
        'fg.take_along_axis(fg.asarray([[10, 30, 20]]), fg.asarray([[1, 2]]), axis=1).tolist()',
        '[[30, 20]]',
        {
            'indices': "an integer array of ``x``'s rank.",
            'axis': 'the axis to pick along.',
        }),
    'split': (
        'A list of views.',
        '[p.tolist() for p in fg.split(fg.arange(6), 3)]',
        '[[0, 1], [2, 3], [4, 5]]',
        {
            'indices_or_sections': 'the number of equal sections, or the split points (a sequence of indices).',
            'axis': 'the axis to split.',
        }),
    'tile': (
        'The tiled array.',
        'fg.tile(fg.asarray([1, 2]), 2).tolist()',
        '[1, 2, 1, 2]',
        {
            'reps': 'how many times to repeat ``x`` along each axis.',
        }),
    'repeat': (
        'The repeated array.',
        'fg.repeat(fg.asarray([1, 2]), 2).tolist()',
        '[1, 1, 2, 2]',
        {
            'repeats': 'how many times to repeat each element (an int, or one per element).',
            'axis': 'the axis to repeat along (the flattened array when ``None``).',
        }),
    'flip': (
        'A view with those axes reversed.',
        'fg.flip(fg.arange(3)).tolist()',
        '[2, 1, 0]',
        {
            'axis': 'the axes to reverse (all by default).',
        }),
    'roll': (
        'The rotated array.',
        'fg.roll(fg.arange(5), 2).tolist()',
        '[3, 4, 0, 1, 2]',
        {
            'shift': 'how far to rotate (an int, or one per axis).',
            'axis': 'the axes to rotate along (the flattened array when ``None``).',
        }),
    'tril': (
        'The lower triangle.',
        'fg.tril(fg.ones((3, 3))).tolist()',
        '[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]',
        {
            'k': 'the diagonal (0: the main one; positive: above it).',
        }),
    'triu': (
        'The upper triangle.',
        'fg.triu(fg.ones((3, 3)), 1).tolist()',
        '[[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]',
        {
            'k': 'the diagonal (0: the main one; positive: above it).',
        }),
    'logsumexp': (
        'The reduced array.',
        'fg.logsumexp(fg.asarray([0.0, 0.0], dtype=fg.float64)).round(4).item()',
        '0.6931',
        {}),
    'norm': (
        'The norms.',
        'fg.norm(fg.asarray([3.0, 4.0])).item()',
        '5.0',
        {
            'ord': "NumPy's order of the norm (2-norm / Frobenius by default).",
            'axis': 'one axis (vector norms) or two (matrix norms); all by default.',
        }),
    'dot': (
        'The product.',
        'fg.dot(fg.asarray([[1, 2], [3, 4]]), fg.asarray([1, 1])).tolist()',
        '[3, 7]',
        {
            'a': 'an array or a number.',
            'b': 'another.',
            'precision': "accepted (JAX's); products are computed in the operands' dtype.",
            'preferred_element_type': "the result's dtype (JAX's).",
        }),
    'outer': (
        'The matrix ``a[i] * b[j]``.',
        'fg.outer(fg.asarray([1, 2]), fg.asarray([1, 10])).tolist()',
        '[[1, 10], [2, 20]]',
        {
            'a': 'an array (flattened).',
            'b': 'another (flattened).',
        }),
    'tensordot': (
        'The contraction.',
        'fg.tensordot(fg.ones((2, 3)), fg.ones((3, 4)), axes=1).shape',
        '(2, 4)',
        {
            'a': 'an array.',
            'b': 'another.',
            'axes': (
                'the number of trailing axes of ``a`` contracted with leading axes of ``b``, or '
                'two sequences of axes.'
            ),
            'precision': "accepted (JAX's).",
            'preferred_element_type': "the result's dtype (JAX's).",
        }),
    'diag': (
        'A matrix, or a diagonal.',
        'fg.diag(fg.asarray([1, 2])).tolist()',
        '[[1, 0], [0, 2]]',
        {
            'v': 'a 1-D array (the diagonal to place) or a 2-D one (to read a diagonal from).',
            'k': 'the diagonal (0: the main one; positive: above it).',
        }),
    'pad': (
        'The padded array.',
        'fg.pad(fg.asarray([1, 2]), (1, 2)).tolist()',
        '[0, 1, 2, 0, 0]',
        {
            'pad_width': 'how much to add before and after each axis, as NumPy takes it.',
            'mode': (
                "NumPy's mode: constant, edge, reflect, symmetric, wrap, linear_ramp, maximum, "
                'mean, median, minimum, empty.'
            ),
            'constant_values': "the value for ``mode='constant'``.",
        }),
    'topk': (
        "``(values, indices)``, as PyTorch's named tuple.",
        'fg.topk(fg.asarray([1, 5, 3]), 2).values.tolist()',
        '[5, 3]',
        {
            'k': 'how many entries.',
            'dim': 'the axis to search along.',
            'largest': 'the largest entries (else the smallest).',
            'sorted': "in order (always: accepted for PyTorch's signature).",
        }),
    'isclose': (
        'A bool array of the broadcast shape.',
        'fg.isclose(fg.asarray([1.0, 1.1]), 1.0).tolist()',
        '[True, False]',
        {
            'a': 'an array.',
            'b': 'another, broadcast against ``a``.',
            'rtol': 'the relative tolerance.',
            'atol': 'the absolute tolerance.',
            'equal_nan': 'whether NaN is close to NaN.',
        }),
    'allclose': (
        'A 0-d bool array.',
        'bool(fg.allclose(fg.asarray([1.0, 2.0]), fg.asarray([1.0, 2.0 + 1e-9])))',
        'True',
        {
            'a': 'an array.',
            'b': 'another, broadcast against ``a``.',
            'rtol': 'the relative tolerance.',
            'atol': 'the absolute tolerance.',
            'equal_nan': 'whether NaN is close to NaN.',
        }),
    'round': (
        'The rounded array.',
        'fg.round(fg.asarray([0.5, 1.5, 2.25], dtype=fg.float64), 1).tolist()',
        '[0.5, 1.5, 2.2]',
        {
            'decimals': 'the number of decimals to keep (negative: tens, hundreds...).',
        }),
    'cat': (
        'The joined array.',
        'fg.cat([fg.ones(2), fg.zeros(1)]).tolist()',
        '[1.0, 1.0, 0.0]',
        {
            'tensors': 'the arrays, equal in shape but along ``dim``.',
            'dim': 'the axis to join along.',
        }),
    'chunk': (
        'A list of views.',
        '[c.tolist() for c in fg.chunk(fg.arange(5), 2)]',
        '[[0, 1, 2], [3, 4]]',
        {
            'chunks': 'the number of pieces (at most).',
            'dim': 'the axis to cut.',
        }),
    'diff': (
        'The differences.',
        'fg.diff(fg.asarray([1, 4, 9, 16])).tolist()',
        '[3, 5, 7]',
        {
            'a': 'the array.',
            'n': 'how many times to take the difference.',
            'axis': 'the axis along which.',
            'prepend': 'values joined before ``a`` along ``axis`` first.',
            'append': 'values joined after.',
        }),
    'kron': (
        'The Kronecker product.',
        'fg.kron(fg.eye(2), fg.ones((1, 2))).tolist()',
        '[[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]',
        {
            'a': 'an array.',
            'b': 'another.',
        }),
    'moveaxis': (
        'A view with the axes moved.',
        'fg.moveaxis(fg.ones((2, 3, 4)), 0, -1).shape',
        '(3, 4, 2)',
        {
            'source': 'the axes to move.',
            'destination': 'where they go.',
        }),
    'swapaxes': (
        'A view with the two axes exchanged.',
        'fg.swapaxes(fg.ones((2, 3, 4)), 0, 2).shape',
        '(4, 3, 2)',
        {
            'axis1': 'one axis.',
            'axis2': 'the other.',
        }),
    'permute': (
        'A view with the axes permuted.',
        'fg.permute(fg.ones((2, 3, 4)), (2, 0, 1)).shape',
        '(4, 2, 3)',
        {
            'dims': 'the new order of the axes.',
        }),
    'ravel': (
        'A 1-D view where the strides allow one, else a copy.',
        'fg.ravel(fg.ones((2, 3))).shape',
        '(6,)',
        {}),
    'take': (
        'The gathered values.',
        'fg.take(fg.asarray([10, 20, 30]), fg.asarray([2, 0])).tolist()',
        '[30, 10]',
        {
            'indices': 'an integer array of positions.',
            'axis': 'the axis to gather along (the flattened array when ``None``).',
            'mode': "NumPy's out-of-bounds mode: only ``'raise'`` (the default) is taken.",
        }),
    'any': (
        'A bool array.',
        'fg.any(fg.asarray([[True, False], [False, False]]), axis=1).tolist()',
        '[True, False]',
        {
            'where': "a bool mask of the elements to include (NumPy's).",
        }),
    'all': (
        'A bool array.',
        'fg.all(fg.asarray([[True, False], [True, True]]), axis=1).tolist()',
        '[False, True]',
        {
            'where': "a bool mask of the elements to include (NumPy's).",
        }),
    'count_nonzero': (
        'int64 counts.',
        'fg.count_nonzero(fg.asarray([[0, 1], [2, 3]]), axis=1).tolist()',
        '[1, 2]',
        {}),
    'amax': (
        'The maxima.',
        'fg.amax(fg.asarray([[1, 5], [7, 2]]), axis=0).tolist()',
        '[7, 5]',
        {
            'initial': "a value the maximum starts from (NumPy's; needed where ``where`` leaves a row empty).",
            'where': "a bool mask of the elements to include (NumPy's).",
        }),
    'amin': (
        'The minima.',
        'fg.amin(fg.asarray([[1, 5], [7, 2]]), axis=1).tolist()',
        '[1, 2]',
        {
            'initial': "a value the minimum starts from (NumPy's; needed where ``where`` leaves a row empty).",
            'where': "a bool mask of the elements to include (NumPy's).",
        }),
    'angle': (
        'Real angles, in radians (degrees with ``deg``).',
        'fg.angle(fg.asarray([1j, -1.0 + 0j]), deg=True).tolist()',
        '[90.0, 180.0]',
        {
            'deg': 'return degrees instead of radians.',
        }),
    'append': (
        'A new array.',
        'fg.append(fg.asarray([1, 2]), fg.asarray([[3, 4]])).tolist()',
        '[1, 2, 3, 4]',
        {
            'arr': 'the array.',
            'values': 'what follows it (of a matching shape along ``axis``).',
            'axis': 'the axis to join along (both flattened by default).',
        }),
    'array_split': (
        'A list of views.',
        '[p.tolist() for p in fg.array_split(fg.arange(5), 3)]',
        '[[0, 1], [2, 3], [4]]',
        {
            'indices_or_sections': 'a number of parts (they may differ in size by one) or the indices to split at.',
            'axis': 'the axis to split.',
        }),
    'atleast_1d': (
        '``x`` itself, or a view with the new axes.',
        'fg.atleast_1d(fg.asarray(3.0)).shape',
        '(1,)',
        {}),
    'atleast_2d': (
        '``x`` itself, or a view with the new axes.',
        'fg.atleast_2d(fg.ones(3)).shape',
        '(1, 3)',
        {}),
    'atleast_3d': (
        '``x`` itself, or a view with the new axes.',
        'fg.atleast_3d(fg.ones((2, 3))).shape',
        '(2, 3, 1)',
        {}),
    'broadcast_arrays': (
        'A list of views of one shape.',
        '[a.shape for a in fg.broadcast_arrays(fg.ones((2, 1)), fg.ones(3))]',
        '[(2, 3), (2, 3)]',
        {
            'arrays': 'the arrays.',
        }),
    'broadcast_shapes': (
        'A tuple of ints.',
        'fg.broadcast_shapes((2, 1), (3,))',
        '(2, 3)',
        {
            'shapes': 'the shapes, tuples of ints.',
        }),
    'column_stack': (
        'A 2-D array.',
        'fg.column_stack([fg.asarray([1, 2]), fg.asarray([3, 4])]).tolist()',
        '[[1, 3], [2, 4]]',
        {
            'arrays': 'a sequence of arrays with the same number of rows.',
        }),
    'conj': (
        "An array of ``x``'s shape and dtype.",
        'fg.conj(fg.asarray([1 + 2j])).tolist()',
        '[(1-2j)]',
        {}),
    'conjugate': (
        "An array of ``x``'s shape and dtype.",
        'fg.conjugate(fg.asarray([1 + 2j])).tolist()',
        '[(1-2j)]',
        {}),
    'cross': (
        'The cross products.',
        'fg.cross(fg.asarray([1.0, 0.0, 0.0]), fg.asarray([0.0, 1.0, 0.0])).tolist()',
        '[0.0, 0.0, 1.0]',
        {
            'a': 'the first vectors.',
            'b': 'the second vectors (broadcast against ``a``).',
            'axisa': 'the axis of ``a`` that holds the vectors.',
            'axisb': 'that of ``b``.',
            'axisc': "where the result's vectors go.",
            'axis': 'one axis for all three (overrides the others).',
        }),
    'cumprod': (
        "An array of ``x``'s shape (flattened when ``axis`` is None).",
        'fg.cumprod(fg.asarray([1, 2, 3, 4])).tolist()',
        '[1, 2, 6, 24]',
        {
            'axis': 'the axis (the flattened array by default).',
        }),
    'cumulative_prod': (
        "An array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).",
        'fg.cumulative_prod(fg.asarray([1, 2, 3]), include_initial=True).tolist()',
        '[1, 1, 2, 6]',
        {
            'axis': 'the axis (needed for more than one axis).',
            'include_initial': 'start with the product of nothing, 1.',
        }),
    'cumulative_sum': (
        "An array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).",
        'fg.cumulative_sum(fg.asarray([1, 2, 3]), include_initial=True).tolist()',
        '[0, 1, 3, 6]',
        {
            'axis': 'the axis (needed for more than one axis).',
            'include_initial': 'start with the sum of nothing, 0.',
        }),
    'deg2rad': (
        "Floats of ``x``'s shape.",
        'fg.deg2rad(fg.asarray([180.0], dtype=fg.float64)).tolist()',
        '[3.141592653589793]',
        {}),
    'degrees': (
        "Floats of ``x``'s shape.",
        'fg.degrees(fg.asarray([3.141592653589793], dtype=fg.float64)).tolist()',
        '[180.0]',
        {}),
    'radians': (
        "Floats of ``x``'s shape.",
        'fg.radians(fg.asarray([90.0], dtype=fg.float64)).tolist()',
        '[1.5707963267948966]',
        {}),
    'rad2deg': (
        "Floats of ``x``'s shape.",
        'fg.rad2deg(fg.asarray([1.5707963267948966], dtype=fg.float64)).tolist()',
        '[90.0]',
        {}),
    'diagonal': (
        'A view.',
        'fg.diagonal(fg.arange(9).reshape(3, 3), 1).tolist()',
        '[1, 5]',
        {
            'offset': 'the diagonal: 0 the main one, above it positive, below negative.',
            'axis1': 'the axis of its rows.',
            'axis2': 'the axis of its columns.',
        }),
    'digamma': (
        "Floats of ``x``'s shape.",
        'fg.digamma(fg.asarray([1.0, 2.0], dtype=fg.float64)).round(6).tolist()',
        '[-0.577216, 0.422784]',
        {}),
    'polygamma': (
        "Floats of ``x``'s shape.",
        'fg.polygamma(1, fg.asarray([1.0], dtype=fg.float64)).round(6).tolist()',
        '[1.644934]',
        {
            'n': 'the order of the derivative, an int of at least 0 (0: the digamma function).',
        }),
    'dsplit': (
        'A list of views.',
        '[p.shape for p in fg.dsplit(fg.ones((1, 2, 4)), 2)]',
        '[(1, 2, 2), (1, 2, 2)]',
        {
            'a': 'an array of at least three axes.',
            'indices_or_sections': 'a number of equal parts or the indices to split at.',
        }),
    'hsplit': (
        'A list of views.',
        '[p.tolist() for p in fg.hsplit(fg.arange(4).reshape(2, 2), 2)]',
        '[[[0], [2]], [[1], [3]]]',
        {
            'a': 'the array.',
            'indices_or_sections': 'a number of equal parts or the indices to split at.',
        }),
    'vsplit': (
        'A list of views.',
        '[p.tolist() for p in fg.vsplit(fg.arange(4).reshape(2, 2), 2)]',
        '[[[0, 1]], [[2, 3]]]',
        {
            'a': 'an array of at least two axes.',
            'indices_or_sections': 'a number of equal parts or the indices to split at.',
        }),
    'dstack': (
        'A new array of at least three axes.',
        'fg.dstack([fg.ones((2, 2)), fg.zeros((2, 2))]).shape',
        '(2, 2, 2)',
        {
            'arrays': 'a sequence of arrays.',
        }),
    'hstack': (
        'A new array.',
        'fg.hstack([fg.asarray([1, 2]), fg.asarray([3])]).tolist()',
        '[1, 2, 3]',
        {
            'tup': 'a sequence of arrays.',
        }),
    'vstack': (
        'A new array.',
        'fg.vstack([fg.asarray([1, 2]), fg.asarray([3, 4])]).tolist()',
        '[[1, 2], [3, 4]]',
        {
            'tup': 'a sequence of arrays.',
        }),
    'row_stack': (
        'A new array.',
        'fg.row_stack([fg.asarray([1, 2]), fg.asarray([3, 4])]).tolist()',
        '[[1, 2], [3, 4]]',
        {
            'tup': 'a sequence of arrays.',
        }),
    'empty': (
        'Zeros of ``shape``.',
        'fg.empty((2, 3)).shape',
        '(2, 3)',
        {}),
    'empty_like': (
        "Zeros of ``x``'s shape.",
        'fg.empty_like(fg.ones((2, 3)), dtype=fg.int32).dtype',
        'int32',
        {
            'shape': "the shape instead of ``x``'s (NumPy's).",
        }),
    'fabs': (
        "Floats of ``x``'s shape.",
        'fg.fabs(fg.asarray([-1.5, 2.0])).tolist()',
        '[1.5, 2.0]',
        {}),
    'fmax': (
        'An array of the broadcast shape.',
        'fg.fmax(fg.asarray([1.0, float("nan")]), fg.asarray([float("nan"), 2.0])).tolist()',
        '[1.0, 2.0]',
        {
            'x1': 'an array.',
            'x2': 'another, broadcast against it.',
        }),
    'fmin': (
        'An array of the broadcast shape.',
        'fg.fmin(fg.asarray([1.0, float("nan")]), fg.asarray([float("nan"), 2.0])).tolist()',
        '[1.0, 2.0]',
        {
            'x1': 'an array.',
            'x2': 'another, broadcast against it.',
        }),
    'fmod': (
        'An array of the broadcast shape.',
        'fg.fmod(fg.asarray([-7.0, 7.0]), 3.0).tolist()',
        '[-1.0, 1.0]',
        {
            'x1': 'the dividends.',
            'x2': 'the divisors.',
        }),
    'mod': (
        'An array of the broadcast shape.',
        'fg.mod(fg.asarray([-7.0, 7.0]), 3.0).tolist()',
        '[2.0, 1.0]',
        {
            'x1': 'the dividends.',
            'x2': 'the divisors.',
        }),
    'logaddexp2': (
        'An array of the broadcast shape.',
        'fg.logaddexp2(fg.asarray([1.0, 3.0]), 3.0).tolist()',
        '[3.321928024291992, 4.0]',
        {
            'x1': 'an array.',
            'x2': 'another, broadcast against it.',
        }),
    'pow': (
        'An array of the broadcast shape.',
        'fg.pow(fg.asarray([1.0, 2.0, 3.0]), 2).tolist()',
        '[1.0, 4.0, 9.0]',
        {
            'y': 'the exponents (a Python int: repeated multiplication).',
        }),
    'power': (
        'An array of the broadcast shape.',
        'fg.power(fg.asarray([4.0, 9.0]), 0.5).tolist()',
        '[2.0, 3.0]',
        {
            'y': 'the exponents (a Python int: repeated multiplication).',
        }),
    'real': (
        "The real parts, of the parts' dtype.",
        'fg.real(fg.asarray([1 + 2j])).tolist()',
        '[1.0]',
        {}),
    'imag': (
        "The imaginary parts, of the parts' dtype.",
        'fg.imag(fg.asarray([1 + 2j])).tolist()',
        '[2.0]',
        {}),
    'sinc': (
        "Floats of ``x``'s shape.",
        'fg.sinc(fg.asarray([0.0, 0.5], dtype=fg.float64)).round(6).tolist()',
        '[1.0, 0.63662]',
        {}),
    'fliplr': (
        'A view.',
        'fg.fliplr(fg.arange(4).reshape(2, 2)).tolist()',
        '[[1, 0], [3, 2]]',
        {
            'm': 'an array of at least two axes.',
        }),
    'flipud': (
        'A view.',
        'fg.flipud(fg.arange(4).reshape(2, 2)).tolist()',
        '[[2, 3], [0, 1]]',
        {
            'm': 'an array of at least one axis.',
        }),
    'rot90': (
        'A view.',
        'fg.rot90(fg.arange(4).reshape(2, 2)).tolist()',
        '[[1, 3], [0, 2]]',
        {
            'm': 'an array of at least two axes.',
            'k': 'how many quarter turns (negative: the other way).',
            'axes': 'the plane to turn in.',
        }),
    'gradient': (
        'One array (one axis) or a list of them, one per axis.',
        'fg.gradient(fg.asarray([1.0, 2.0, 4.0, 7.0])).tolist()',
        '[1.0, 1.5, 2.5, 3.0]',
        {
            'f': 'the sampled values.',
            'varargs': 'the spacing: one number, one per axis, or coordinate arrays (1 by default).',
            'edge_order': 'the accuracy at the ends: 1 or 2.',
        }),
    'inner': (
        'The products.',
        'fg.inner(fg.asarray([1.0, 2.0]), fg.asarray([3.0, 4.0])).tolist()',
        '11.0',
        {
            'a': 'an array.',
            'b': 'another, with the same last axis.',
            'precision': "JAX's argument (accepted).",
            'preferred_element_type': "JAX's argument: the dtype to accumulate and return in.",
        }),
    'vdot': (
        'A 0-d array.',
        'fg.vdot(fg.asarray([1j, 2.0]), fg.asarray([1j, 3.0])).tolist()',
        '(7+0j)',
        {
            'a': 'an array (conjugated when complex).',
            'b': 'another of as many elements.',
            'precision': "JAX's argument (accepted).",
            'preferred_element_type': "JAX's argument: the dtype to accumulate and return in.",
        }),
    'vecdot': (
        'The products, without ``axis`` (of size one with ``keepdims``).',
        'fg.vecdot(fg.asarray([[1.0, 2.0], [3.0, 4.0]]), fg.asarray([1.0, 1.0])).tolist()',
        '[3.0, 7.0]',
        {
            'x1': 'the first vectors (conjugated when complex).',
            'x2': 'the second, broadcast against them.',
            'axis': 'the axis summed over (-1 by default).',
            'axes': "NumPy's form: ``[axis of x1, axis of x2]``.",
            'keepdims': 'keep the summed axis, of size 1.',
        }),
    'inv': (
        'The inverse matrices.',
        'fg.inv(fg.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()',
        '[[0.5, 0.0], [0.0, 0.25]]',
        {
            'a': 'a square matrix or a stack of them.',
        }),
    'matrix_norm': (
        'The norms (of shape ``x.shape[:-2]``).',
        'fg.matrix_norm(fg.asarray([[3.0, 0.0], [0.0, 4.0]])).tolist()',
        '5.0',
        {
            'ord': "``'fro'``, ``'nuc'``, 1, -1, 2, -2, inf or -inf, as NumPy's.",
        }),
    'vector_norm': (
        'The norms.',
        'fg.vector_norm(fg.asarray([3.0, 4.0])).tolist()',
        '5.0',
        {
            'ord': 'the p of the p-norm (inf, -inf and 0 too).',
        }),
    'matrix_transpose': (
        'A view.',
        'fg.matrix_transpose(fg.ones((5, 2, 3))).shape',
        '(5, 3, 2)',
        {}),
    'permute_dims': (
        'A view.',
        'fg.permute_dims(fg.ones((2, 3, 4)), (2, 0, 1)).shape',
        '(4, 2, 3)',
        {
            'axes': 'the new order of the axes.',
        }),
    'rollaxis': (
        'A view.',
        'fg.rollaxis(fg.ones((2, 3, 4)), 2).shape',
        '(4, 2, 3)',
        {
            'a': 'the array.',
            'axis': 'the axis to move.',
            'start': 'the position it moves in front of.',
        }),
    'meshgrid': (
        'A list of arrays, one per input.',
        '[g.tolist() for g in fg.meshgrid(fg.asarray([1, 2]), fg.asarray([3, 4, 5]))]',
        '[[[1, 2], [1, 2], [1, 2]], [[3, 3], [4, 4], [5, 5]]]',
        {
            'arrays': 'the 1-D coordinate arrays.',
            'indexing': "``'xy'`` (the first two axes swapped, NumPy's default) or ``'ij'``.",
            'sparse': 'keep each output of size 1 along the other axes.',
        }),
    'nan_to_num': (
        "An array of ``x``'s shape.",
        'fg.nan_to_num(fg.asarray([float("nan"), float("inf"), 1.0]), posinf=9.0).tolist()',
        '[0.0, 9.0, 1.0]',
        {
            'nan': 'what a NaN becomes.',
            'posinf': 'what +inf becomes (the largest finite value by default).',
            'neginf': 'what -inf becomes (the most negative finite value by default).',
        }),
    'nonzero': (
        'A tuple of int64 arrays, one per axis.',
        '[i.tolist() for i in fg.nonzero(fg.asarray([[0, 1], [2, 0]]))]',
        '[[0, 1], [1, 0]]',
        {}),
    'partition': (
        "An array of ``a``'s shape.",
        'fg.partition(fg.asarray([3, 1, 2, 5, 4]), 2)[2].item()',
        '3',
        {
            'a': 'the array.',
            'kth': 'the position (or positions) that gets its sorted value.',
            'axis': 'the axis to partition along.',
            'kind': "NumPy's (only ``'introselect'``).",
            'order': "NumPy's (structured arrays only: must be None).",
        }),
    'searchsorted': (
        "int64 indices of ``v``'s shape.",
        'fg.searchsorted(fg.asarray([1, 3, 5]), fg.asarray([0, 3, 6])).tolist()',
        '[0, 1, 3]',
        {
            'x1': 'a sorted 1-D array (or one sorted by ``sorter``).',
            'v': 'the values to place.',
            'side': "``'left'`` (the first place) or ``'right'`` (after equal values).",
            'sorter': 'indices that sort ``x1``.',
        }),
    'tri': (
        'An ``N`` x ``M`` array.',
        'fg.tri(3, k=-1).tolist()',
        '[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]',
        {
            'N': 'rows.',
            'M': 'columns (``N`` by default).',
            'k': 'the diagonal at and below which the ones go.',
        }),
    'unique': (
        'The sorted unique values; with any ``return_*``, a tuple of them and the asked-for arrays.',
        '[a.tolist() for a in fg.unique(fg.asarray([3, 1, 3, 2]), return_counts=True)]',
        '[[1, 2, 3], [1, 1, 2]]',
        {
            'ar': 'the array.',
            'return_index': 'also the first index of each value.',
            'return_inverse': 'also the indices into the result that rebuild ``ar``.',
            'return_counts': 'also how often each value occurs.',
            'axis': 'unique slices along this axis (the flattened array by default).',
            'equal_nan': 'count all NaNs as one value.',
            'sorted': "NumPy's (the values come out sorted either way).",
        }),
    'unique_values': (
        'A 1-D array.',
        'fg.unique_values(fg.asarray([3, 1, 3, 2])).tolist()',
        '[1, 2, 3]',
        {}),
    'unique_counts': (
        'A named tuple ``(values, counts)``.',
        'fg.unique_counts(fg.asarray([3, 1, 3])).counts.tolist()',
        '[1, 2]',
        {}),
    'unique_inverse': (
        "A named tuple ``(values, inverse_indices)``, the indices of ``x``'s shape.",
        'fg.unique_inverse(fg.asarray([3, 1, 3])).inverse_indices.tolist()',
        '[1, 0, 1]',
        {}),
    'unique_all': (
        'A named tuple ``(values, indices, inverse_indices, counts)``.',
        'fg.unique_all(fg.asarray([3, 1, 3])).indices.tolist()',
        '[1, 0]',
        {}),
    'unstack': (
        'A tuple of views.',
        '[a.tolist() for a in fg.unstack(fg.arange(4).reshape(2, 2), axis=1)]',
        '[[0, 2], [1, 3]]',
        {
            'axis': 'the axis to take the slices along.',
        }),
    'real_if_close': (
        'The real parts, or ``a`` as it is.',
        'fg.real_if_close(fg.asarray([1.0 + 1e-20j])).tolist()',
        '[1.0]',
        {
            'a': 'the array.',
            'tol': 'the tolerance, in machine epsilons of the dtype (or absolute when below 1).',
        }),
    'ndim': (
        'An int.',
        'fg.ndim(fg.ones((2, 3)))',
        '2',
        {
            'a': 'an array, a number or nested sequences.',
        }),
    'size': (
        'An int.',
        'fg.size(fg.ones((2, 3)), axis=1)',
        '3',
        {
            'a': 'an array, a number or nested sequences.',
            'axis': 'count along this axis only.',
        }),
    'cholesky': (
        'The lower factors (the upper ones with ``upper``).',
        'fg.cholesky(fg.asarray([[4.0, 2.0], [2.0, 5.0]])).tolist()',
        '[[2.0, 0.0], [1.0, 2.0]]',
        {
            'a': 'a symmetric (Hermitian) positive-definite matrix or a stack of them.',
            'upper': "the upper factor ``U`` with ``a = U.mH @ U`` (PyTorch's and SciPy's).",
        }),
    'astype': (
        'An array of ``dtype``; floats cast to integers round toward zero, as NumPy casts them.',
        'fg.astype(fg.asarray([1.7, -2.5]), fg.int32).tolist()',
        '[1, -2]',
        {
            'dtype': 'the dtype to cast to.',
            'copy': '``False``: return ``x`` itself when it already has ``dtype``.',
            'device': 'where the result lives (``x``\'s device by default).',
        }),
    'from_numpy': (
        "An array over ``a``'s memory, of its shape and dtype.",
        'fg.from_numpy(fg.arange(3.0).numpy()).tolist()',
        '[0.0, 1.0, 2.0]',
        {
            'a': 'a NumPy array.',
        }),
    'getitem': (
        'An array: a view for basic indices (ints, slices, ``None``, ``...``), a copy for advanced ones.',
        'fg.getitem(fg.arange(6).reshape(2, 3), (slice(None), 1)).tolist()',
        '[1, 4]',
        {
            'index': 'what ``x[...]`` takes: ints, slices, ``None``, ``...``, int or bool arrays, or a tuple of them.',
        }),
    'select': (
        "An array of the choices' broadcast shape and promoted dtype.",
        'fg.select([fg.arange(6) < 2, fg.arange(6) > 3], [fg.arange(6), fg.arange(6) * 10], default=-1).tolist()',
        '[0, 1, -1, -1, 40, 50]',
        {
            'condlist': 'bool arrays, one per choice; the first that holds picks.',
            'choicelist': 'the arrays to pick from, as many as conditions.',
            'default': 'where no condition holds.',
        }),
    'scatter': (
        "A new array of ``x``'s shape and dtype.",
        'fg.scatter(fg.zeros(4), fg.asarray([1, 1, 3]), 5.0, "add").tolist()',
        '[0.0, 10.0, 0.0, 5.0]',
        {
            'index': "what ``x[...]`` takes; repeated entries each apply, but for ``'set'``.",
            'values': "broadcast to the indexed positions' shape.",
            'mode': "``'set'``, ``'add'``, ``'multiply'``, ``'min'`` or ``'max'`` (JAX's ``.at[...]`` methods).",
        }),
}

# ``fg.linalg``'s own functions (the array API's and ``numpy.linalg``'s forms): each one's
# result, example call, what it prints, and what each parameter means (checked against
# ``numpy.linalg`` when written).
LINALG: dict[str, tuple[str, str, str, dict[str, str]]] = {
    'cross': (
        'The cross products.',
        'fg.linalg.cross(fg.asarray([1.0, 0.0, 0.0]), fg.asarray([0.0, 1.0, 0.0])).tolist()',
        '[0.0, 0.0, 1.0]',
        {
            'x1': 'the first vectors.',
            'x2': 'the second, broadcast against them.',
            'axis': 'the axis holding the vectors (of size 3).',
        }),
    'diagonal': (
        'A view.',
        'fg.linalg.diagonal(fg.arange(9).reshape(3, 3), offset=1).tolist()',
        '[1, 5]',
        {
            'x': 'a matrix or a stack of them.',
            'offset': 'the diagonal: 0 the main one, above it positive, below negative.',
        }),
    'eig': (
        'A named tuple ``(eigenvalues, eigenvectors)``, complex.',
        'fg.linalg.eig(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64)).eigenvalues.tolist()',
        '[(3+0j), (1+0j)]',
        {
            'x': 'a square matrix or a stack of them.',
        }),
    'eigvals': (
        'The eigenvalues, complex.',
        'fg.linalg.eigvals(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64)).tolist()',
        '[(3+0j), (1+0j)]',
        {
            'x': 'a square matrix or a stack of them.',
        }),
    'eigh': (
        'A named tuple ``(eigenvalues, eigenvectors)``, the values ascending.',
        'fg.linalg.eigh(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64)).eigenvalues.round(6).tolist()',
        '[1.0, 3.0]',
        {
            'x': 'a symmetric (Hermitian) matrix or a stack of them.',
            'UPLO': "NumPy's: read only the lower (``'L'``) or upper (``'U'``) triangle.",
            'symmetrize_input': 'use ``(x + x.mH) / 2`` (without ``UPLO``).',
        }),
    'eigvalsh': (
        'The eigenvalues, ascending.',
        'fg.linalg.eigvalsh(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64)).round(6).tolist()',
        '[1.0, 3.0]',
        {
            'x': 'a symmetric (Hermitian) matrix or a stack of them.',
            'UPLO': "NumPy's: read only the lower (``'L'``) or upper (``'U'``) triangle.",
        }),
    'matrix_power': (
        'The powers.',
        'fg.linalg.matrix_power(fg.asarray([[1, 1], [0, 1]]), 3).tolist()',
        '[[1, 3], [0, 1]]',
        {
            'x': 'a square matrix or a stack of them.',
            'n': 'the power, an int (negative: of the inverse).',
        }),
    'matrix_rank': (
        'The ranks, int64.',
        'fg.linalg.matrix_rank(fg.asarray([[1.0, 2.0], [2.0, 4.0]])).tolist()',
        '1',
        {
            'x': 'a matrix or a stack of them.',
            'tol': "NumPy's absolute threshold for a singular value.",
            'hermitian': 'the matrices are symmetric (Hermitian).',
            'rtol': 'the relative threshold.',
        }),
    'matrix_transpose': (
        'A view.',
        'fg.linalg.matrix_transpose(fg.ones((5, 2, 3))).shape',
        '(5, 3, 2)',
        {
            'x': 'a matrix or a stack of them.',
        }),
    'multi_dot': (
        'The product.',
        'fg.linalg.multi_dot([fg.ones((2, 3)), fg.ones((3, 4)), fg.ones(4)]).tolist()',
        '[12.0, 12.0]',
        {
            'arrays': 'the matrices, in order (the first and the last may be vectors).',
        }),
    'pinv': (
        'The pseudo-inverses.',
        'fg.linalg.pinv(fg.asarray([[1.0, 0.0], [0.0, 0.0]])).tolist()',
        '[[1.0, 0.0], [0.0, 0.0]]',
        {
            'x': 'a matrix or a stack of them.',
            'rcond': "NumPy's name for ``rtol``.",
            'hermitian': 'the matrices are symmetric (Hermitian).',
            'rtol': 'singular values below this times the largest count as zero.',
        }),
    'qr': (
        'A named tuple ``(Q, R)``.',
        'fg.linalg.qr(fg.asarray([[3.0, 0.0], [4.0, 5.0]], dtype=fg.float64)).R.round(6).tolist()',
        '[[-5.0, -4.0], [0.0, 3.0]]',
        {
            'x': 'a matrix or a stack of them.',
            'mode': "``'reduced'``, ``'complete'`` or ``'r'``.",
        }),
    'slogdet': (
        'A named tuple ``(sign, logabsdet)``.',
        '[round(v.item(), 6) for v in fg.linalg.slogdet(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64))]',
        '[1.0, 1.098612]',
        {
            'x': 'a square matrix or a stack of them.',
        }),
    'svd': (
        'A named tuple ``(U, S, Vh)`` (``S`` alone without ``compute_uv``).',
        'fg.linalg.svd(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64), compute_uv=False).round(6).tolist()',
        '[3.0, 1.0]',
        {
            'x': 'a matrix or a stack of them.',
            'full_matrices': '``U`` and ``Vh`` square (else reduced).',
            'compute_uv': 'also the vectors (else the values alone).',
            'hermitian': 'the matrices are symmetric (Hermitian).',
        }),
    'svdvals': (
        'The singular values, descending.',
        'fg.linalg.svdvals(fg.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=fg.float64)).round(6).tolist()',
        '[3.0, 1.0]',
        {
            'x': 'a matrix or a stack of them.',
        }),
    'trace': (
        'The sums.',
        'fg.linalg.trace(fg.arange(9).reshape(3, 3), offset=1).tolist()',
        '6',
        {
            'x': 'a matrix or a stack of them.',
            'offset': 'the diagonal: 0 the main one, above it positive, below negative.',
            'dtype': "the result's dtype.",
        }),
}


def linalg_doc(name: str, doc: str, parameters: list[str]) -> str:
    """An ``fg.linalg`` function's docstring: its own text, each parameter, its result and its
    example (``LINALG``)."""
    returns, call, shown, described = LINALG[name]
    return sections(doc, [(p, described[p]) for p in parameters], [f">>> {call}", shown], returns)

# What the usual parameters mean, for every function that takes them.
COMMON = {
    'x': 'the array.',
    'axis': 'an axis or a tuple of them (all by default).',
    'keepdims': 'keep the reduced axes, of size 1.',
    'dtype': "the result's dtype (inferred by default).",
    'device': 'where the array lives (the default device by default).',
    'requires_grad': "record operations on it for ``.backward()`` (PyTorch's).",
    'copy': "the array API's: ``True`` always copies, ``False`` never (raising where a view cannot be made).",
    'shape': 'the shape, a tuple of ints (or ints as separate arguments).',
    'size': "or the shape's sizes as separate ints (PyTorch's form).",
}


def sections(text: str, args: list[tuple[str, str]], example: list[str], returns: str | None = None) -> str:
    """A Google-style docstring: ``text``, then ``Args`` (each name with its description;
    none, no section), ``Returns`` where given, and the ``Example``'s doctest lines."""
    doc = inspect.cleandoc(text)
    if args:
        doc += "\n\nArgs:\n" + "\n".join(f"    {name}: {description}" for name, description in args)
    if returns is not None:
        doc += f"\n\nReturns:\n    {returns}"
    return doc + "\n\nExample:\n" + "".join(f"    {line}\n" for line in example)


def elementwise_doc(name: str, summary: str, fn: Any) -> str:
    """An elementwise function's docstring: its summary, its operands, its result and its
    example (``ELEMENTWISE``)."""
    binary = fn.__code__.co_argcount == 2 and name != "integer_pow"
    if binary:
        summary = re.sub(r"\bx2\b", "y", re.sub(r"\bx1\b", "x", summary))
        args = [("x", "an array or a Python number."),
                ("y", "another, broadcast against ``x``; the two promote to one dtype.")]
    elif name == "integer_pow":
        args = [("x", "an array."), ("y", "the exponent, a Python int.")]
    else:
        args = [("x", "an array or a Python number.")]
    kind = "A bool array" if name in _BOOLEAN else "An array"
    shape = "the operands' broadcast shape" if binary else "``x``'s shape"
    call, shown = ELEMENTWISE[name]
    return sections(summary, args, [f">>> {call}", shown], f"{kind} of {shape}.")


def function_doc(name: str, doc: str, parameters: list[tuple[str, bool]]) -> str:
    """An array function's docstring: its own text, then each parameter (``parameters``:
    name and whether it gathers the remaining positional arguments), its result and its
    example (``FUNCTIONS``)."""
    returns, call, shown, extra = FUNCTIONS[name]
    args = [(f"{'*' * star}{p}", extra.get(p) or COMMON[p]) for p, star in parameters]
    return sections(doc, args, [f">>> {call}", shown], returns)
