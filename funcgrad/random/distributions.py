"""``jax.random``'s distributions, computed as JAX computes them from the same keys.

Each draw transforms ``keys.uniform`` values or ``keys.bits`` the way ``jax.random`` does
(its algorithms, its key splits, its dtypes in either of JAX's modes), with the logarithms
and the inverse error function as XLA computes them (``xla_math``), so the numbers are
JAX's bit for bit; ``docs/random.md`` lists the exceptions measured.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..array import ArrayBase
from ..dtypes import DType, as_dtype, float32, int32, int64
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..ops import decompositions as _decompositions
from ..primitives import lax
from ..primitives.checks import as_int, normalize_axis
from ..transforms import vmap, while_loop
from . import xla_math
from .keys import UINT, Key, draw_shape, float_array, float_dtype, int_default, random_bits, split, uniform, words_of

__all__ = ["normal", "truncated_normal", "exponential", "gumbel", "laplace", "logistic", "cauchy", "bernoulli",
           "rademacher", "randint", "permutation", "choice", "categorical", "gamma", "loggamma", "beta", "dirichlet",
           "t", "poisson", "multivariate_normal", "orthogonal"]


# ---- transforms of uniform values, as jax.random computes them ---------------------------------

def normal(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal values: ``sqrt(2) * erfinv(u)`` for ``u`` uniform in ``(-1, 1)``, as
    ``jax.random.normal``, bit for bit (``docs/random.md``).

    Args:
        k: a key.
        shape: the result's shape.
        dtype: any float dtype (float32 by default, float64 in 64-bit mode).

    Returns:
        Floats of ``shape``.

    Example:
        >>> fg.random.normal(fg.random.key(0), (3,)).tolist()
        [1.622642159461975, 2.0252647399902344, -0.4335944354534149]
    """
    shape, d = draw_shape(shape, "normal"), float_dtype(dtype, "normal")
    lo = -1.0 + float(ml_dtypes.finfo(d.np).epsneg)  # (the float after -1)
    u = uniform(k, shape, d, minval=lo, maxval=1.0)
    return xla_math.erfinv(u) * ops.asarray(np.sqrt(2.0), dtype=d, device=u.device)


def truncated_normal(k: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Normal values conditioned on ``(lower, upper)``, by inverting the normal CDF between
    them, as ``jax.random.truncated_normal``."""
    d = float_dtype(dtype, "truncated_normal")
    device = words_of(k, "truncated_normal").device
    lo, hi = float_array(lower, d, device), float_array(upper, d, device)
    shape = (ops.broadcast_shapes(tuple(lo.shape), tuple(hi.shape)) if shape is None
             else draw_shape(shape, "truncated_normal"))
    sqrt2 = ops.asarray(np.sqrt(2.0), dtype=d, device=device)
    u = uniform(k, shape, d, minval=ops.erf(lo / sqrt2), maxval=ops.erf(hi / sqrt2))
    out = sqrt2 * xla_math.erfinv(u)
    return ops.clip(out, ops.nextafter(lo, ops.asarray(np.inf, dtype=d, device=device)),
                    ops.nextafter(hi, ops.asarray(-np.inf, dtype=d, device=device)))


def exponential(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard exponential values, ``-log1p(-u)`` (``jax.random.exponential``)."""
    return -xla_math.log1p(-uniform(k, shape, float_dtype(dtype, "exponential")))


def gumbel(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Gumbel values, ``-log(-log(u))`` for ``u`` in ``[tiny, 1)`` (``jax.random.gumbel``)."""
    d = float_dtype(dtype, "gumbel")
    return -xla_math.log(-xla_math.log(uniform(k, shape, d, minval=float(ml_dtypes.finfo(d.np).tiny), maxval=1.0)))


def laplace(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Laplace values, ``sign(u) * log1p(-|u|)`` for ``u`` in ``(-1, 1)``."""
    d = float_dtype(dtype, "laplace")
    u = uniform(k, shape, d, minval=-1.0 + float(ml_dtypes.finfo(d.np).epsneg), maxval=1.0)
    return ops.sign(u) * xla_math.log1p(-ops.abs(u))


def logistic(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard logistic values, ``log(u) - log1p(-u)``."""
    d = float_dtype(dtype, "logistic")
    u = uniform(k, shape, d, minval=float(ml_dtypes.finfo(d.np).tiny), maxval=1.0)
    return xla_math.log(u) - xla_math.log1p(-u)


def cauchy(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Cauchy values, ``tan(pi * (u - 1/2))``."""
    d = float_dtype(dtype, "cauchy")
    u = uniform(k, shape, d, minval=float(ml_dtypes.finfo(d.np).eps), maxval=1.0)
    return xla_math.tan(ops.asarray(np.pi, dtype=d, device=u.device) * (u - 0.5))


def bernoulli(k: Any, p: Any = 0.5, shape: Any = None) -> Any:
    """``True`` with probability ``p``: a uniform value in ``p``'s dtype below ``p``, as
    ``jax.random.bernoulli``.

    Args:
        k: a key.
        p: the probability (a number, or an array broadcasting to ``shape``).
        shape: the result's shape (``p``'s by default).

    Returns:
        Booleans of ``shape``.

    Example:
        >>> fg.random.bernoulli(fg.random.key(0), 0.5, (8,)).tolist()
        [False, False, True, True, False, True, True, False]
    """
    device = words_of(k, "bernoulli").device
    p = p if isinstance(p, ArrayBase) else ops.asarray(p, dtype=_dt.default_float, device=device)
    if p.dtype.kind != "f":
        p = p.astype(_dt.default_float)
    shape = tuple(p.shape) if shape is None else draw_shape(shape, "bernoulli")
    return uniform(k, shape, p.dtype) < p


def rademacher(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """-1 or 1 with equal probability (``jax.random.rademacher``; int32 by default)."""
    d = int_default() if dtype is None else as_dtype(dtype, op="fg.random.rademacher")
    return (2 * bernoulli(k, 0.5, shape).astype(d) - 1).astype(d)


# ---- integers, permutations, choices ----------------------------------------------------------

def randint(k: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)``, as ``jax.random.randint``: twice the dtype's bits of
    randomness reduced modulo the span.

    Args:
        k: a key.
        shape: the result's shape.
        minval: the lowest value (a number or an array broadcasting to ``shape``).
        maxval: one more than the highest value.
        dtype: an integer dtype (int32 by default, int64 in 64-bit mode).

    Returns:
        Integers of ``shape``.

    Example:
        >>> fg.random.randint(fg.random.key(0), (5,), 0, 10).tolist()
        [9, 0, 2, 3, 1]
    """
    shape = draw_shape(shape, "randint")
    d = int_default() if dtype is None else as_dtype(dtype, op="fg.random.randint")
    if d.kind not in "iu":
        raise DTypeError(f"fg.random.randint: dtype must be an integer type, got {d}")
    device = words_of(k, "randint").device
    lo, hi = (v.astype(int64) if isinstance(v, ArrayBase) else ops.asarray(v, dtype=int64, device=device)
              for v in (minval, maxval))
    info = np.iinfo(d.np)
    if info.bits < 32:  # (JAX draws 8- and 16-bit integers as int32s in their range, then casts)
        lo = ops.clip(lax.convert(lo, int32), int(info.min), int(info.max))
        hi = ops.clip(lax.convert(hi, int32), int(info.min), int(info.max) + 1)
        return lax.convert(randint(k, shape, lo, hi, int32), d)
    too_high = hi > int(info.max)  # (randint(k, s, 0, 2**32, uint32): the span is one more than uint32 holds)
    lo, hi = (lax.convert(ops.clip(v, int(info.min), int(info.max)), d) for v in (lo, hi))
    width = info.bits
    unsigned = UINT[width]
    k1, k2 = _pair(k, "randint")
    upper, lower = random_bits(k1, width, shape, "randint"), random_bits(k2, width, shape, "randint")
    span = lax.convert(hi - lo, unsigned)
    span = ops.where(hi <= lo, ops.ones_like(span), span)
    span = ops.where(too_high & (hi > lo), span + lax.convert(ops.asarray(1), unsigned), span)
    multiplier = _rem(ops.asarray(2 ** (width // 2), dtype=unsigned, device=device), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(_rem(upper, span) * multiplier + _rem(lower, span), span)
    return ops.broadcast_to(lo, shape) + lax.convert(offset, d)


def _rem(a: Any, b: Any) -> Any:
    """XLA's unsigned remainder: ``a % 0`` is ``a`` (NumPy's is 0)."""
    zero = b == 0
    return ops.where(zero, a, a % ops.where(zero, ops.ones_like(b), b))


def _pair(k: Any, op: str) -> tuple[Any, Any]:
    """``split(k)``'s two keys, as raw words."""
    both = split(words_of(k, op) if not isinstance(k, Key) else k.data)
    return both[0], both[1]


def permutation(k: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation, as ``jax.random.permutation``.

    Args:
        k: a key.
        x: an int (a permutation of ``range(x)``) or an array to shuffle along ``axis``.
        axis: the axis of ``x`` to shuffle.
        independent: shuffle each vector along ``axis`` on its own.

    Returns:
        The permuted integers or array.

    Example:
        >>> fg.random.permutation(fg.random.key(0), 5).tolist()
        [0, 1, 4, 3, 2]
    """
    values, n, axis = _population("permutation", "x", x, axis)
    if values is None:
        return _shuffle(k, ops.arange(n, dtype=int_default(), device=words_of(k, "permutation").device), 0)
    if independent or values.ndim == 1:
        return _shuffle(k, values, axis)
    order = _shuffle(k, ops.arange(values.shape[axis], dtype=int_default(), device=values.device), 0)
    return ops.take(values, order, axis=axis)


def _population(op: str, name: str, x: Any, axis: int) -> tuple[Any, int, int]:
    """What ``permutation`` and ``choice`` draw from: a count (``range(x)``: no values) or an
    array of at least one axis, and its length along ``axis``: ``(values, n, axis)``."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return None, as_int(f"fg.random.{op}", x, f"{name} (a count)"), axis
    if isinstance(x, (float, bool, str)) or x is None:
        raise ArgumentTypeError(f"fg.random.{op}: {name} must be an int or an array, got {type(x).__name__}")
    values = ops.asarray(x) if not isinstance(x, ArrayBase) else x
    if values.ndim == 0:
        raise ShapeError(f"fg.random.{op}: {name} must be an int or an array of at least one axis, got a 0-d array")
    axis = normalize_axis(f"fg.random.{op}", axis, values.ndim)
    return values, values.shape[axis], axis


def _shuffle(k: Any, x: Any, axis: int) -> Any:
    """JAX's shuffle: sort by fresh random 32-bit keys, as many rounds as make ties unlikely
    (3 log(size) / log(2**32 - 1)), each round from the next split of the key."""
    rounds = math.ceil(3 * math.log(max(1, math.prod(x.shape))) / math.log(2 ** 32 - 1))
    k = words_of(k, "permutation") if not isinstance(k, Key) else k.data
    for _ in range(rounds):
        k, sub = _pair(k, "permutation")
        order = ops.argsort(random_bits(sub, 32, tuple(x.shape), "permutation"), axis=axis, stable=True)
        x = ops.take_along_axis(x, order, axis=axis)
    return x


def choice(k: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0) -> Any:
    """Values drawn from ``a`` along ``axis``, as ``jax.random.choice``.

    Args:
        k: a key.
        a: an int (``range(a)``) or an array to draw from.
        shape: how many draws, as a shape.
        replace: draw with replacement.
        p: the probabilities of ``a``'s entries (uniform if not given).
        axis: the axis of ``a`` to draw along.

    Returns:
        The drawn values.

    Example:
        >>> fg.random.choice(fg.random.key(0), 5, (3,), replace=False).tolist()
        [0, 1, 4]
    """
    shape = draw_shape(shape, "choice")
    values, n, axis = _population("choice", "a", a, axis)
    count = math.prod(shape)
    if count == 0:
        return ops.zeros(shape, dtype=int_default() if values is None else values.dtype)
    if n <= 0:
        raise ArgumentValueError(f"fg.random.choice: cannot draw {count} values from an empty population")
    if not replace and count > n:
        raise ArgumentValueError(f"fg.random.choice: {count} values without replacement from {n}")
    if p is None:
        if replace:
            picked = randint(k, shape, 0, n)
        else:
            whole = permutation(k, n if values is None else values, axis)
            first = ops.take(whole, ops.arange(count), axis=0 if values is None else axis)
            if values is None:
                return lax.reshape(first, shape)
            return first.reshape((*values.shape[:axis], *shape, *values.shape[axis + 1:]))
    else:
        p = ops.asarray(p) if not isinstance(p, ArrayBase) else p
        p = p if p.dtype.kind == "f" else p.astype(_dt.default_float)
        if p.shape != (n,):
            raise ShapeError(f"fg.random.choice: p must have shape ({n},), one probability per value, got shape "
                             f"{tuple(p.shape)}")
        if replace:
            total = ops.cumsum(p)
            r = total[-1] * (1 - uniform(k, shape, p.dtype))
            picked = ops.searchsorted(total, r).astype(int_default())
        else:  # Gumbel top-k: the count largest of log p + Gumbel noise
            with np.errstate(divide="ignore"):  # a zero probability is a logit of -inf, never drawn
                noisy = gumbel(k, (n,), p.dtype) + ops.log(p)
            picked = lax.reshape(ops.argsort(noisy, descending=True, stable=True)[:count].astype(int_default()),
                                 shape)
    if values is None:
        return lax.reshape(picked, shape)
    taken = ops.take(values, lax.reshape(picked, (count,)), axis=axis)
    return taken.reshape((*values.shape[:axis], *shape, *values.shape[axis + 1:]))


def categorical(k: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True) -> Any:
    """Class indices drawn with probabilities ``softmax(logits)`` along ``axis``: Gumbel-max,
    or Gumbel top-k without replacement, as ``jax.random.categorical``.

    Args:
        k: a key.
        logits: unnormalized log-probabilities.
        axis: the axis of the classes.
        shape: the result's shape, ending in the logits' other axes (a broadcast of them).
        replace: draw with replacement.

    Returns:
        Integer class indices.

    Example:
        >>> logits = fg.log(fg.asarray([0.1, 0.2, 0.7]))
        >>> fg.random.categorical(fg.random.key(0), logits, shape=(6,)).tolist()
        [1, 2, 2, 1, 2, 2]
    """
    logits = ops.asarray(logits) if not isinstance(logits, ArrayBase) else logits
    if logits.dtype.kind != "f":
        logits = logits.astype(_dt.default_float)
    if logits.ndim == 0:
        raise ShapeError("fg.random.categorical: logits must have at least one axis (the categories), got a 0-d array")
    axis = normalize_axis("fg.random.categorical", axis, logits.ndim) - logits.ndim  # (negative, as JAX's)
    batch = tuple(logits.shape[:logits.ndim + axis]) + tuple(logits.shape[logits.ndim + axis + 1:])
    shape = batch if shape is None else draw_shape(shape, "categorical")
    if len(shape) < len(batch) or ops.broadcast_shapes(shape[len(shape) - len(batch):], batch) != \
            shape[len(shape) - len(batch):]:
        raise ShapeError(f"fg.random.categorical: shape {shape} does not end in a broadcast of the logits' other "
                         f"axes {batch}")
    prefix = shape[:len(shape) - len(batch)]
    if replace:
        inner = list(shape[len(shape) - len(batch):])
        inner.insert(axis % logits.ndim, logits.shape[axis])
        noise = gumbel(k, (*prefix, *inner), logits.dtype)
        expanded = lax.reshape(logits, (1,) * len(prefix) + tuple(logits.shape)) if prefix else logits
        return ops.argmax(noise + expanded, axis=axis).astype(int_default())
    count = math.prod(prefix)
    if count > logits.shape[axis]:
        raise ArgumentValueError(f"fg.random.categorical: {count} samples without replacement from "
                                 f"{logits.shape[axis]} categories")
    noisy = ops.moveaxis(logits + gumbel(k, tuple(logits.shape), logits.dtype), axis, -1)
    top = ops.argsort(noisy, axis=-1, descending=True, stable=True)[..., :count].astype(int32)  # (top_k's)
    return lax.reshape(ops.moveaxis(top, -1, 0), shape)


# ---- gamma and what is built on it ------------------------------------------------------------

def gamma(k: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Gamma values of shape ``a`` (scale 1), as ``jax.random.gamma``: Marsaglia and Tsang's
    rejection, one key per value (``split(k, size)``), boosted below ``a = 1``."""
    return _gamma(k, a, shape, dtype, "gamma", log_space=False)


def loggamma(k: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """The logarithms of gamma values, accurate where ``a`` is small and the values underflow."""
    return _gamma(k, a, shape, dtype, "loggamma", log_space=True)


def _gamma(k: Any, a: Any, shape: Any, dtype: Any, op: str, log_space: bool) -> Any:
    d = float_dtype(dtype, op)
    a = float_array(a, d, words_of(k, op).device)
    shape = tuple(a.shape) if shape is None else draw_shape(shape, op)
    a = ops.broadcast_to(a, shape)
    n = math.prod(shape)
    if n == 0:
        return ops.zeros(shape, dtype=d)
    keys = split(words_of(k, op) if not isinstance(k, Key) else k.data, n)
    one = _gamma_one_log if log_space else _gamma_one
    return lax.reshape(vmap(one)(keys, lax.reshape(a, (n,))), shape)


def _gamma_one(k: Any, alpha: Any) -> Any:
    d, v, boost, subkey = _marsaglia_tsang(k, alpha)
    u = 1.0 - uniform(subkey, (), alpha.dtype)
    return (d * v) * ops.where(boost, ops.ones_like(alpha), ops.pow(u, 1.0 / alpha))


def _gamma_one_log(k: Any, alpha: Any) -> Any:
    d, v, boost, subkey = _marsaglia_tsang(k, alpha)
    log_u = -exponential(subkey, (), alpha.dtype)
    log_boost = ops.where(boost | (log_u == 0.0), ops.zeros_like(alpha), log_u * (1.0 / alpha))
    return (xla_math.log(d) + xla_math.log(v)) + log_boost


def _marsaglia_tsang(k: Any, alpha: Any) -> tuple[Any, Any, Any, Any]:
    """``d * v`` is a gamma(max(alpha, alpha + 1)) value; also whether ``alpha >= 1`` (no
    boost needed) and the key the boost draws from. The loops follow JAX's key splits."""
    boost = alpha >= 1.0
    alpha = ops.where(boost, alpha, alpha + 1.0)
    d = alpha - 1.0 / 3.0
    c = (1.0 / 3.0) / ops.sqrt(d)
    zero, one = ops.zeros_like(alpha), ops.ones_like(alpha)

    def rejected(state: Any) -> Any:
        _, x, v, u = state
        squeeze = u >= xla_math.fma(-0.0331 * one, x * x, one)
        return squeeze & (xla_math.log(u) >= xla_math.fma(d, (1.0 - v) + xla_math.log(v), x * 0.5))

    def propose(state: Any) -> Any:
        kk = state[0]
        parts = split(kk, 3)
        kk, x_key, u_key = parts[0], parts[1], parts[2]

        def resample(inner: Any) -> Any:
            ik = split(inner[0])
            x = normal(ik[1], (), alpha.dtype)
            return ik[0], x, xla_math.fma(x, c, one)

        _, x, v = while_loop(lambda inner: inner[2] <= 0.0, resample, (x_key, zero, -one))
        return kk, x * x, (v * v) * v, uniform(u_key, (), alpha.dtype)

    halves = split(k)
    _, _, v, _ = while_loop(rejected, propose, (halves[0], zero, one, one + 1.0))
    return d, v, boost, halves[1]


def beta(k: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Beta values, from two log-gamma values (``jax.random.beta``)."""
    d = float_dtype(dtype, "beta")
    device = words_of(k, "beta").device
    a, b = float_array(a, d, device), float_array(b, d, device)
    shape = ops.broadcast_shapes(tuple(a.shape), tuple(b.shape)) if shape is None else draw_shape(shape, "beta")
    halves = _split_words(k, "beta")
    log_a = loggamma(halves[0], ops.broadcast_to(a, shape), shape, d)
    log_b = loggamma(halves[1], ops.broadcast_to(b, shape), shape, d)
    top = ops.maximum(log_a, log_b)
    scaled_a, scaled_b = xla_math.exp(log_a - top), xla_math.exp(log_b - top)
    return scaled_a / (scaled_a + scaled_b)


def dirichlet(k: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Dirichlet values along the last axis of ``alpha``: a softmax of log-gamma values."""
    d = float_dtype(dtype, "dirichlet")
    alpha = float_array(alpha, d, words_of(k, "dirichlet").device)
    if alpha.ndim < 1:
        raise ShapeError("fg.random.dirichlet: alpha must have at least one axis (the categories)")
    shape = tuple(alpha.shape[:-1]) if shape is None else draw_shape(shape, "dirichlet")
    logs = loggamma(k, alpha, (*shape, alpha.shape[-1]), d)
    shifted = xla_math.exp(logs - ops.max(logs, axis=-1, keepdims=True))
    return shifted * (1.0 / ops.sum(shifted, axis=-1, keepdims=True))  # (XLA's division by a broadcast sum)


def t(k: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Student's t values with ``df`` degrees of freedom: a normal over a gamma's root."""
    d = float_dtype(dtype, "t")
    df = float_array(df, d, words_of(k, "t").device)
    shape = tuple(df.shape) if shape is None else draw_shape(shape, "t")
    halves = _split_words(k, "t")
    n = normal(halves[0], shape, d)
    half = df / 2.0
    return n * ops.sqrt(half / gamma(halves[1], half, shape, d))


def _split_words(k: Any, op: str) -> Any:
    return split(words_of(k, op) if not isinstance(k, Key) else k.data)


def poisson(k: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Poisson counts with rate ``lam``, as ``jax.random.poisson``: Knuth's products of
    uniforms below a rate of 10, Hörmann's transformed rejection above (int32 by default)."""
    d = int_default() if dtype is None else as_dtype(dtype, op="fg.random.poisson")
    if d.kind not in "iu":
        raise DTypeError(f"fg.random.poisson: dtype must be an integer type, got {d}")
    lam = float_array(lam, _dt.default_float, words_of(k, "poisson").device) if not isinstance(lam, ArrayBase) \
        or lam.dtype.kind != "f" else lam
    shape = tuple(lam.shape) if shape is None else draw_shape(shape, "poisson")
    lam = ops.broadcast_to(lam, shape)
    knuth = ops.isnan(lam) | (lam < 10.0)
    small = _poisson_knuth(k, ops.where(knuth, lam, ops.zeros_like(lam)), shape, d)
    large = _poisson_rejection(k, ops.where(knuth, ops.full_like(lam, 1e5), lam), shape, d)
    out = ops.where(knuth, small, large)
    return ops.where(lam == 0.0, ops.zeros_like(out), out)


def _poisson_knuth(k: Any, lam: Any, shape: tuple[int, ...], d: DType) -> Any:
    def more(state: Any) -> Any:
        return ops.any(state[3] > -lam)

    def step(state: Any) -> Any:
        i, count, kk, log_prod = state
        parts = split(kk)
        count = ops.where(log_prod > -lam, count + 1, count)
        return i + 1, count, parts[0], log_prod + xla_math.log(uniform(parts[1], shape, float32))

    start = (ops.asarray(0), ops.zeros(shape, dtype=d), words_of(k, "poisson") if not isinstance(k, Key) else k.data,
             ops.zeros(shape, dtype=float32))
    return (while_loop(more, step, start)[1] - 1).astype(d)


def _poisson_rejection(k: Any, lam: Any, shape: tuple[int, ...], d: DType) -> Any:
    log_lam = xla_math.log(lam)
    b = 0.931 + 2.53 * ops.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def more(state: Any) -> Any:
        return ops.any(~state[2])

    def step(state: Any) -> Any:
        i, out, accepted, kk = state
        parts = split(kk, 3)
        u = uniform(parts[1], shape, lam.dtype) - 0.5
        v = uniform(parts[2], shape, lam.dtype)
        u_shifted = 0.5 - ops.abs(u)
        count = ops.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = xla_math.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        bound = -lam + count * log_lam - xla_math.lgamma(count + 1)
        accept = ((u_shifted >= 0.07) & (v <= v_r)) | (~((count < 0) | ((u_shifted < 0.013) & (v > u_shifted)))
                                                      & (s <= bound))
        return i + 1, ops.where(accept, count, out), accepted | accept, parts[0]

    start = (ops.asarray(0), ops.full(shape, -1.0, dtype=lam.dtype), ops.zeros(shape, dtype=bool),
             words_of(k, "poisson") if not isinstance(k, Key) else k.data)
    return while_loop(more, step, start)[1].astype(d)


def multivariate_normal(k: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:
    """Normal vectors of mean ``mean`` (``(..., n)``) and covariance ``cov`` (``(..., n, n)``),
    as ``jax.random.multivariate_normal``: a factor of ``cov`` (``method``: "cholesky",
    "eigh" or "svd") times standard normals."""
    device = words_of(k, "multivariate_normal").device
    mean, cov = (v if isinstance(v, ArrayBase) else ops.asarray(v, device=device) for v in (mean, cov))
    if dtype is None:  # (JAX's: the parameters' own dtype)
        both = _dt.result_type(mean.dtype, cov.dtype)
        dtype = both if both.kind == "f" else None
    d = float_dtype(dtype, "multivariate_normal")
    mean, cov = mean.astype(d), cov.astype(d)
    if mean.ndim < 1 or cov.ndim < 2 or tuple(cov.shape[-2:]) != (mean.shape[-1], mean.shape[-1]):
        raise ShapeError(f"fg.random.multivariate_normal: mean must be (..., n) and cov (..., n, n), got "
                         f"{tuple(mean.shape)} and {tuple(cov.shape)}")
    if method not in ("cholesky", "eigh", "svd"):
        raise ArgumentValueError(f"fg.random.multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', "
                                 f"got {method!r}")
    shape = (ops.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2])) if shape is None
             else draw_shape(shape, "multivariate_normal"))
    if method == "svd":
        u, s, _ = _decompositions.svd(cov)
        factor = u * ops.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = _decompositions.eigh(cov)
        factor = v * ops.sqrt(w[..., None, :])
    else:
        factor = ops.linalg.cholesky(cov)
    z = normal(k, (*shape, mean.shape[-1]), d)
    return mean + ops.einsum("...ij,...j->...i", factor, z)


def orthogonal(k: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None) -> Any:
    """Random ``n`` by ``m`` (square by default) matrices with orthonormal columns or rows,
    Haar-distributed: the ``Q`` of a normal matrix's QR, signs fixed by ``R``'s diagonal."""
    d = float_dtype(dtype, "orthogonal")
    n = as_int("fg.random.orthogonal", n, "n", minimum=0)
    m = n if m is None else as_int("fg.random.orthogonal", m, "m", minimum=0)
    shape = draw_shape(shape, "orthogonal")
    z = normal(k, (*shape, max(n, m), min(n, m)), d)
    q, r = _decompositions.qr(z)
    x = q * ops.expand_dims(ops.sign(ops.diagonal(r, axis1=-2, axis2=-1)), -2)
    return ops.swapaxes(x, -1, -2) if n < m else x
