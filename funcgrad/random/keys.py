"""``fg.random``: explicit, splittable random keys (JAX's ``jax.random``).

A key is a pair of uint32 words; every draw is a pure function of its key (Threefry-2x32,
``primitives/random.py``), so the same key gives the same numbers on every device, in
any order, under ``vmap`` and ``compile``. ``split`` and ``fold_in`` make new keys;
using one key twice gives the same numbers twice (JAX's sharp bit: split first).

``key``, ``split``, ``fold_in``, ``bits`` and ``uniform`` give exactly the bits
``jax.random`` gives for the same seed (its default, partitionable Threefry); ``normal``
and the distributions built on it follow the same keys but compute their values their
own way (Box-Muller, where JAX inverts the error function).

Keys come in two forms, as in JAX: ``fg.random.key(seed)`` is a typed ``Key`` (not an
array: arithmetic on it is an error), and ``fg.random.PRNGKey(seed)`` the raw uint32[2]
array legacy JAX code passes around. Every function takes either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ops
from .. import tree as _tree
from ..array import ArrayBase
from ..dtypes import DType, as_dtype, float32, float64, int64, uint32, uint64
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..primitives import lax
from ..primitives.checks import as_int, as_shape, normalize_axis
from ..primitives.core import bind
from ..primitives.random import threefry2x32_p

__all__ = ["Key", "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform", "normal",
           "truncated_normal", "randint", "bernoulli", "categorical", "gumbel", "permutation", "choice"]


class Key:
    """Random keys of shape ``shape``: a uint32 array of shape ``(*shape, 2)`` inside. A
    pytree node (its data is the leaf), so keys pass through ``vmap``, ``compile`` and
    ``grad`` like arrays; but a key is not a number: arithmetic on it raises."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data

    @property
    def shape(self) -> tuple[int, ...]:
        """The length of each axis."""
        return tuple(self.data.shape[:-1])

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a single key")
        return self.shape[0]

    def __getitem__(self, index: Any) -> Key:
        if not self.shape:
            raise ShapeError("fg.random: a single key cannot be indexed (split it into several first)")
        index = index if isinstance(index, tuple) else (index,)
        return Key(self.data[(*index, slice(None))])

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def to(self, device: Any) -> Key:
        """The keys on ``device``: draws from them run there (the same numbers)."""
        return Key(self.data.to(device))

    @property
    def device(self) -> Any:
        """The device."""
        return self.data.device

    def __repr__(self) -> str:
        return f"Key(shape={self.shape}, data={self.data.tolist() if isinstance(self.data, ArrayBase) else '...'})"

    def _not_a_number(self, *args: Any) -> Any:
        raise ArgumentTypeError("fg.random: a key is not a number; draw numbers from it (fg.random.uniform(key, ...)) "
                                "or read its bits with fg.random.key_data(key)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _not_a_number
    __floordiv__ = __mod__ = __pow__ = __neg__ = __xor__ = __and__ = __or__ = __lt__ = __le__ = _not_a_number
    __gt__ = __ge__ = __array__ = __float__ = __int__ = __bool__ = _not_a_number


_tree.register(Key, lambda k: ((k.data,), None), lambda _, children: Key(children[0]))


# ---- keys ----------------------------------------------------------------------------------

def _seed_words(seed: int) -> tuple[int, int]:
    """JAX's seeding: the high and low 32 bits of the seed; a seed that fits in an int32
    has no high word (JAX's default 32-bit mode shifts it out)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError(f"fg.random.key: the seed must be a Python int, got {seed!r} ({type(seed).__name__})")
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ArgumentValueError(f"fg.random.key: the seed {seed} does not fit in 64 bits")
    high = 0 if -(2 ** 31) <= seed < 2 ** 31 else (seed >> 32) & 0xFFFFFFFF
    return high, seed & 0xFFFFFFFF


def key(seed: int) -> Key:
    """A typed key from an integer seed (``jax.random.key``)."""
    return Key(ops.asarray(np.array(_seed_words(seed), np.uint32)))


def PRNGKey(seed: int) -> Any:  # noqa: N802 - JAX's name
    """A raw key: the uint32[2] array ``jax.random.PRNGKey`` gives."""
    return ops.asarray(np.array(_seed_words(seed), np.uint32))


def key_data(keys: Any) -> Any:
    """The uint32 words of ``keys``: shape ``(*keys.shape, 2)``."""
    return _words(keys, "key_data")


def wrap_key_data(data: Any) -> Key:
    """Typed keys from uint32 words of shape ``(..., 2)``."""
    return Key(_words(data, "wrap_key_data"))


def _words(k: Any, op: str) -> Any:
    data = k.data if isinstance(k, Key) else k
    if not isinstance(data, ArrayBase):
        raise ArgumentTypeError(f"fg.random.{op}: expected a key (fg.random.key(seed)), got {type(k).__name__}")
    if data.dtype is not uint32 or not data.shape or data.shape[-1] != 2:
        raise ArgumentTypeError(f"fg.random.{op}: expected a key, got an array of shape {tuple(data.shape)} and dtype "
                                f"{data.dtype}; make keys with fg.random.key(seed)")
    return data


def _single(k: Any, op: str) -> tuple[Any, Any]:
    """The two words of one key."""
    data = _words(k, op)
    if data.shape != (2,):
        raise ShapeError(f"fg.random.{op}: expected a single key, got keys of shape {tuple(data.shape[:-1])}; "
                         "draw from each with fg.vmap")
    return data[0], data[1]


def _like(k: Any, data: Any) -> Any:
    return Key(data) if isinstance(k, Key) else data


def _threefry(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    return bind(threefry2x32_p, k1, k2, x1, x2)


def _counters(n: int, like: Any) -> tuple[Any, Any]:
    """The 64-bit counters 0 .. n-1 as (high, low) uint32 words (JAX's ``iota_2x32_shape``)."""
    if n >= 2 ** 32:
        raise ShapeError(f"fg.random: {n} values from one key is more than 2**32")
    return lax.zeros(like, (), uint32), lax.iota(like, n, uint32)  # (the high words, all 0, broadcast)


def split(k: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (a shape is allowed) from one: ``keys[i]`` is ``fold_in(k, i)``."""
    shape = as_shape("fg.random.split", num)
    k1, k2 = _single(k, "split")
    n = math.prod(shape)
    high, low = _counters(n, k1)
    y1, y2 = _threefry(k1, k2, high, low)
    return _like(k, lax.reshape(ops.stack([y1, y2], axis=1), (*shape, 2)))


def fold_in(k: Any, data: Any) -> Any:
    """A new key from ``k`` and an integer (a step number, a rank): ``split`` without the others."""
    k1, k2 = _single(k, "fold_in")
    if isinstance(data, ArrayBase):
        word = lax.convert(data, uint32)
    else:
        value = as_int("fg.random.fold_in", data, "data")
        if value >= 1 << 32:
            raise ArgumentValueError(f"fg.random.fold_in: data must be below 2**32 (a uint32, as in JAX), got {value}")
        word = ops.asarray(np.uint32(value), device=k1.device)
    if word.shape != ():
        raise ShapeError(f"fg.random.fold_in: data must be a scalar, got shape {tuple(word.shape)}")
    y1, y2 = _threefry(k1, k2, lax.zeros(k1, (), uint32), word)
    return _like(k, ops.stack([y1, y2]))


def draw_shape(shape: Any, op: str, where: str = "fg.random.") -> tuple[int, ...]:
    return () if shape is None else as_shape(f"{where}{op}", shape)


def _float_dtype(dtype: Any, op: str) -> DType:
    d = as_dtype(dtype, op=f"fg.random.{op}")
    if d not in (float32, float64):
        raise DTypeError(f"fg.random.{op}: dtype must be float32 or float64, got {d}")
    return d


def bits(k: Any, shape: Any = (), dtype: Any = uint32) -> Any:
    """Uniform random bits: uint32 (or uint64) values of ``shape``, as ``jax.random.bits``."""
    shape, d = draw_shape(shape, "bits"), as_dtype(dtype, op="fg.random.bits")
    if d not in (uint32, uint64):
        raise DTypeError(f"fg.random.bits: dtype must be uint32 or uint64, got {d}")
    return lax.reshape(_bits(k, math.prod(shape), d, "bits"), shape)


def _bits(k: Any, n: int, dtype: DType, op: str) -> Any:
    k1, k2 = _single(k, op)
    high, low = _counters(n, k1)
    y1, y2 = _threefry(k1, k2, high, low)
    if dtype is uint32:
        return y1 ^ y2
    return (lax.convert(y1, uint64) << 32) | lax.convert(y2, uint64)


def _unit(words: Any, dtype: DType) -> Any:
    """[0, 1) from random words: the top mantissa's worth of bits over 2**mantissa (exactly
    JAX's bitcast of them under 1.0, minus 1)."""
    mantissa = 23 if dtype is float32 else 52
    return lax.convert(words >> (words.dtype.itemsize * 8 - mantissa), dtype) * (2.0 ** -mantissa)


def uniform(k: Any, shape: Any = (), dtype: Any = float32, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform values in ``[minval, maxval)`` (bit for bit ``jax.random.uniform``)."""
    shape, d = draw_shape(shape, "uniform"), _float_dtype(dtype, "uniform")
    unit = _unit(_bits(k, math.prod(shape), uint32 if d is float32 else uint64, "uniform"), d)
    device = _words(k, "uniform").device
    lo, hi = (ops.asarray(v, dtype=d, device=device) if not isinstance(v, ArrayBase) else v.astype(d)
              for v in (minval, maxval))
    if d is float32:  # unit * (hi - lo) + lo rounded once, as XLA's fused multiply-add does
        scaled = lax.convert(lax.convert(unit, float64) * lax.convert(hi - lo, float64) + lax.convert(lo, float64),
                             float32)
    else:
        scaled = unit * (hi - lo) + lo
    return ops.maximum(lo, lax.reshape(scaled, shape))


def normal(k: Any, shape: Any = (), dtype: Any = float32) -> Any:
    """Standard normal values (Box-Muller on uniform pairs: each Threefry call gives two words,
    one pair of normals)."""
    shape, d = draw_shape(shape, "normal"), _float_dtype(dtype, "normal")
    n = math.prod(shape)
    pairs = (n + 1) // 2
    k1, k2 = _single(k, "normal")
    if d is float32:
        high, low = _counters(pairs, k1)
        w1, w2 = _threefry(k1, k2, high, low)
    else:  # 64-bit words: two counters per pair
        words = _bits(k, 2 * pairs, uint64, "normal")
        w1, w2 = words[:pairs], words[pairs:]
    radius = ops.sqrt(-2.0 * ops.log1p(-_unit(w1, d)))  # 1 - u in (0, 1]: the log is finite
    angle = (2 * math.pi) * _unit(w2, d)
    both = ops.concatenate([radius * ops.cos(angle), radius * ops.sin(angle)])
    return lax.reshape(both[:n] if 2 * pairs != n else both, shape)


def truncated_normal(k: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = float32) -> Any:
    """Normal values conditioned on ``[lower, upper]``, by inverting the normal CDF."""
    d = _float_dtype(dtype, "truncated_normal")
    device = _words(k, "truncated_normal").device
    lo, hi = (v.astype(d) if isinstance(v, ArrayBase) else ops.asarray(v, dtype=d, device=device)
              for v in (lower, upper))
    shape = (ops.broadcast_shapes(tuple(lo.shape), tuple(hi.shape)) if shape is None
             else draw_shape(shape, "truncated_normal"))
    sqrt2 = math.sqrt(2.0)
    a, b = ops.erf(lo / sqrt2), ops.erf(hi / sqrt2)
    u = uniform(k, shape, d, minval=a, maxval=b)
    tiny = float(np.finfo(d.np).tiny)
    out = sqrt2 * _erfinv(ops.clip(u, -1.0 + tiny, 1.0 - tiny))
    return ops.clip(out, lo, hi)


def _erfinv(y: Any) -> Any:
    """The inverse error function: Giles' single-precision polynomial, refined by two Newton
    steps (so float64 is accurate too)."""
    w = -ops.log1p(-y * y)
    central = w < 5.0
    wc, wt = w - 2.5, ops.sqrt(ops.maximum(w, 5.0)) - 3.0
    pc = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        pc = pc * wc + c
    pt = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        pt = pt * wt + c
    x = ops.where(central, pc, pt) * y
    for _ in range(2):
        x = x - (ops.erf(x) - y) / ((2.0 / math.sqrt(math.pi)) * ops.exp(-x * x))
    return x


def randint(k: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = int64) -> Any:
    """Integers in ``[minval, maxval)``."""
    shape, d = draw_shape(shape, "randint"), as_dtype(dtype, op="fg.random.randint")
    if d.kind not in "iu":
        raise DTypeError(f"fg.random.randint: dtype must be an integer type, got {d}")
    device = _words(k, "randint").device
    lo, hi = (v.astype(int64) if isinstance(v, ArrayBase) else ops.asarray(v, dtype=int64, device=device)
              for v in (minval, maxval))
    span = lax.convert(ops.maximum(hi - lo, 1), uint64)
    words = _bits(k, math.prod(shape), uint64, "randint")
    return lax.reshape(lax.convert(lax.convert(words % span, int64) + lo, d), shape)


def bernoulli(k: Any, p: Any = 0.5, shape: Any = None) -> Any:
    """``True`` with probability ``p``: a uniform value below ``p``, from both words of each
    Threefry evaluation (half the work of ``uniform``'s JAX-exact bits)."""
    p = ops.asarray(p, dtype=float32, device=_words(k, "bernoulli").device) if not isinstance(p, ArrayBase) else p
    shape = tuple(p.shape) if shape is None else draw_shape(shape, "bernoulli")
    d = p.dtype if p.dtype.kind == "f" else float32
    return lax.reshape(_unit(_words_for(k, math.prod(shape), "bernoulli"), d), shape) < p


def _words_for(k: Any, n: int, op: str) -> Any:
    """``n`` random uint32 words: both outputs of ``(n + 1) // 2`` Threefry evaluations."""
    k1, k2 = _single(k, op)
    high, low = _counters((n + 1) // 2, k1)
    y1, y2 = _threefry(k1, k2, high, low)
    both = ops.concatenate([y1, y2])
    return both[:n] if n % 2 else both


def gumbel(k: Any, shape: Any = (), dtype: Any = float32) -> Any:
    """Standard Gumbel values: ``-log(-log(u))``."""
    d = _float_dtype(dtype, "gumbel")
    tiny = float(np.finfo(d.np).tiny)
    return -ops.log(-ops.log(uniform(k, shape, d, minval=tiny, maxval=1.0)))


def categorical(k: Any, logits: Any, axis: int = -1, shape: Any = None) -> Any:
    """Class indices drawn with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max).
    ``shape``: the result's shape, which the logits' other axes broadcast to."""
    logits = ops.asarray(logits) if not isinstance(logits, ArrayBase) else logits
    logits = ops.moveaxis(logits, axis, -1)
    batch = tuple(logits.shape[:-1])
    shape = batch if shape is None else draw_shape(shape, "categorical")
    if ops.broadcast_shapes(batch, shape) != shape:
        raise ShapeError(f"fg.random.categorical: shape {shape} is not a broadcast of the logits' batch shape {batch}")
    noise = gumbel(k, (*shape, logits.shape[-1]), logits.dtype if logits.dtype.kind == "f" else float32)
    return ops.argmax(noise + logits, axis=-1)


def permutation(k: Any, x: Any, axis: int = 0) -> Any:
    """A random permutation of ``range(x)`` (an int), or of ``x`` along ``axis``."""
    if isinstance(x, (int, np.integer, float, bool, str)) or x is None:
        n, values = as_int("fg.random.permutation", x, "x (a count)"), None
    else:
        values = ops.asarray(x) if not isinstance(x, ArrayBase) else x
        if values.ndim == 0:
            raise ShapeError("fg.random.permutation: x must be an int or an array of at least one axis, got a 0-d "
                             "array")
        n = values.shape[normalize_axis("fg.random.permutation", axis, values.ndim)]
    order = ops.argsort(bits(k, (n,)), stable=True)
    return order if values is None else ops.take(values, order, axis=axis)


def choice(k: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0) -> Any:
    """Values drawn from ``a`` (an int: ``range(a)``) along ``axis``, uniformly or with
    probabilities ``p``, with or without replacement."""
    shape = draw_shape(shape, "choice")
    if isinstance(a, (int, np.integer, float, bool, str)) or a is None:
        values, n = None, as_int("fg.random.choice", a, "a (a count)")
    else:
        values = ops.asarray(a) if not isinstance(a, ArrayBase) else a
        if values.ndim == 0:
            raise ShapeError("fg.random.choice: a must be an int or an array of at least one axis, got a 0-d array")
        n = values.shape[normalize_axis("fg.random.choice", axis, values.ndim)]
    count = math.prod(shape)
    if n == 0 and count > 0:
        raise ArgumentValueError(f"fg.random.choice: cannot draw {count} values from an empty population")
    if not replace and count > n:
        raise ArgumentValueError(f"fg.random.choice: {count} values without replacement from {n}")
    if p is None:
        picked = randint(k, (count,), 0, n) if replace else permutation(k, n)[:count]
    else:
        p = ops.asarray(p) if not isinstance(p, ArrayBase) else p
        if p.shape != (n,):
            raise ShapeError(f"fg.random.choice: p must have shape ({n},), one probability per value, got shape "
                             f"{tuple(p.shape)}")
        with np.errstate(divide="ignore"):  # a zero probability is a logit of -inf, never drawn
            logits = ops.log(p)
        if replace:
            picked = categorical(k, logits, shape=(count,))
        else:  # Gumbel top-k: the count largest of log p + Gumbel noise
            picked = ops.argsort(logits + gumbel(k, (n,), logits.dtype), descending=True, stable=True)[:count]
    picked = lax.reshape(picked, shape)
    return picked if values is None else ops.take(values, lax.reshape(picked, (count,)), axis=axis).reshape(
        (*values.shape[:axis], *shape, *values.shape[axis + 1:]))

