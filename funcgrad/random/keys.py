"""``fg.random``'s keys, bits and uniform values (JAX's ``jax.random``).

A key is a pair of uint32 words; every draw is a pure function of its key (Threefry-2x32,
``primitives/random.py``), so the same key gives the same numbers on every device, in
any order, under ``vmap`` and ``compile``. ``split`` and ``fold_in`` make new keys;
using one key twice gives the same numbers twice (JAX's sharp bit: split first).

``key``, ``split``, ``fold_in``, ``bits`` and ``uniform`` give exactly the bits
``jax.random`` gives for the same seed (its partitionable Threefry), in JAX's default
mode and, with ``fg.config.enable_x64``, in its 64-bit mode; ``distributions.py`` turns
them into the other draws as JAX does.

Keys come in two forms, as in JAX: ``fg.random.key(seed)`` is a typed ``Key`` (not an
array: arithmetic on it is an error), and ``fg.random.PRNGKey(seed)`` the raw uint32[2]
array legacy JAX code passes around. Every function takes either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import dtypes as _dt
from .. import ops
from .. import tree as _tree
from ..array import ArrayBase
from ..config import config
from ..dtypes import DType, as_dtype, bfloat16, float16, float32, float64, int32, int64, uint8, uint16, uint32, uint64
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..primitives import lax
from ..primitives.checks import as_int, as_shape
from ..primitives.core import bind
from ..primitives.random import threefry2x32_p
from . import xla_math

__all__ = ["Key", "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform"]


class Key:
    """Random keys of shape ``shape``: a uint32 array of shape ``(*shape, 2)`` inside. A
    pytree node (its data is the leaf), so keys pass through ``vmap``, ``compile`` and
    ``grad`` like arrays; but a key is not a number: arithmetic on it raises.

    Example:
        >>> k = fg.random.key(0)
        >>> k, isinstance(k, fg.random.Key), fg.random.split(k).shape
        (Key(shape=(), data=[0, 0]), True, (2,))
    """

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
    """JAX's seeding: the seed as an int64, its low 32 bits the second word; the first word
    is its high 32 bits in 64-bit mode, and 0 in JAX's default mode."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError(f"fg.random.key: the seed must be a Python int, got {seed!r} ({type(seed).__name__})")
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 63:
        raise ArgumentValueError(f"fg.random.key: the seed {seed} does not fit in an int64")
    return ((seed >> 32) & 0xFFFFFFFF if _x64() else 0), seed & 0xFFFFFFFF


def key(seed: int) -> Key:
    """A typed key from an integer seed (``jax.random.key``): JAX's two words for every seed,
    negative and 2**32 or more included (its x64 rule in 64-bit mode).

    Args:
        seed: a Python or NumPy integer.

    Returns:
        A ``Key`` of shape ``()``; ``key_data`` gives its uint32 words.

    Example:
        >>> fg.random.key_data(fg.random.key(0)).tolist()
        [0, 0]
    """
    return Key(ops.asarray(np.array(_seed_words(seed), np.uint32)))


def PRNGKey(seed: int) -> Any:  # noqa: N802 - JAX's name
    """A raw key: the uint32[2] array ``jax.random.PRNGKey`` gives."""
    return ops.asarray(np.array(_seed_words(seed), np.uint32))


def key_data(keys: Any) -> Any:
    """The uint32 words of ``keys``: shape ``(*keys.shape, 2)``."""
    return words_of(keys, "key_data")


def wrap_key_data(data: Any) -> Key:
    """Typed keys from uint32 words of shape ``(..., 2)``."""
    return Key(words_of(data, "wrap_key_data"))


def words_of(k: Any, op: str) -> Any:
    data = k.data if isinstance(k, Key) else k
    if not isinstance(data, ArrayBase):
        raise ArgumentTypeError(f"fg.random.{op}: expected a key (fg.random.key(seed)), got {type(k).__name__}")
    if data.dtype is not uint32 or not data.shape or data.shape[-1] != 2:
        raise ArgumentTypeError(f"fg.random.{op}: expected a key, got an array of shape {tuple(data.shape)} and dtype "
                                f"{data.dtype}; make keys with fg.random.key(seed)")
    return data


def _single(k: Any, op: str) -> tuple[Any, Any]:
    """The two words of one key."""
    data = words_of(k, op)
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
    """New keys from one, bit for bit ``jax.random.split`` (Threefry-2x32 of a counter).

    Args:
        k: a key (typed, or JAX's raw uint32[2] form).
        num: how many keys, or a shape of them.

    Returns:
        Keys of shape ``num`` (raw keys gain a trailing axis of 2 words).

    Example:
        >>> first, second = fg.random.split(fg.random.key(0))
        >>> fg.random.key_data(first).tolist()   # jax.random.split(jax.random.key(0))[0]
        [1797259609, 2579123966]
    """
    shape = as_shape("fg.random.split", num)
    k1, k2 = _single(k, "split")
    n = math.prod(shape)
    high, low = _counters(n, k1)
    y1, y2 = _threefry(k1, k2, high, low)
    return _like(k, lax.reshape(ops.stack([y1, y2], axis=1), (*shape, 2)))


def fold_in(k: Any, data: Any) -> Any:
    """A new key from ``k`` and an integer (a step number, a rank), as ``jax.random.fold_in``.

    Args:
        k: a key.
        data: an integer below 2**32, or a uint32-convertible array.

    Returns:
        A key of ``k``'s kind.

    Example:
        >>> fg.random.key_data(fg.random.fold_in(fg.random.key(0), 7)).tolist()
        [2716826189, 292468403]
    """
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


# ---- JAX's configuration: its dtypes in 32-bit mode, or in 64-bit mode (fg.config.enable_x64) ----

def _x64() -> bool:
    return config.enable_x64


def int_default() -> DType:
    return int64 if _x64() else int32


def float_dtype(dtype: Any, op: str) -> DType:
    d = _dt.default_float if dtype is None else as_dtype(dtype, op=f"fg.random.{op}")
    if d not in (float16, bfloat16, float32, float64):
        raise DTypeError(f"fg.random.{op}: dtype must be a floating dtype (float16, bfloat16, float32, float64), "
                         f"got {d}")
    return d


def float_array(v: Any, d: DType, device: Any) -> Any:
    return v.astype(d) if isinstance(v, ArrayBase) else ops.asarray(v, dtype=d, device=device)


UINT = {8: uint8, 16: uint16, 32: uint32, 64: uint64}


# ---- bits and uniform values -------------------------------------------------------------------

def bits(k: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform random bits, as ``jax.random.bits``.

    Args:
        k: a key.
        shape: the result's shape.
        dtype: uint8 to uint64 (uint32 by default, uint64 in 64-bit mode).

    Returns:
        Unsigned integers of ``shape``.

    Example:
        >>> fg.random.bits(fg.random.key(0), (3,)).tolist()
        [4070199207, 4202968722, 1427181096]
    """
    shape = draw_shape(shape, "bits")
    d = (uint64 if _x64() else uint32) if dtype is None else as_dtype(dtype, op="fg.random.bits")
    if d.kind != "u":
        raise DTypeError(f"fg.random.bits: dtype must be an unsigned integer type, got {d}")
    return random_bits(k, d.itemsize * 8, shape, "bits")


def random_bits(k: Any, width: int, shape: tuple[int, ...], op: str) -> Any:
    """JAX's partitionable Threefry bits: element ``i`` from the counter ``i``; its two
    output words joined (64 bits), xor-ed (32), or xor-ed and cut to the low 8 or 16."""
    k1, k2 = _single(k, op)
    high, low = _counters(math.prod(shape), k1)
    y1, y2 = _threefry(k1, k2, high, low)
    if width == 64:
        words = (lax.convert(y1, uint64) << 32) | lax.convert(y2, uint64)
    else:
        words = y1 ^ y2
        if width < 32:
            words = lax.convert(words, UINT[width])
    return lax.reshape(words, shape)


def uniform(k: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform values in ``[minval, maxval)``, bit for bit ``jax.random.uniform``: random
    mantissa bits under an exponent of 1, minus 1, scaled (bfloat16 from 8 random bits, as
    JAX).

    Args:
        k: a key.
        shape: the result's shape.
        dtype: any float dtype (float32 by default, float64 in 64-bit mode).
        minval: the lower bound (a number or an array broadcasting to ``shape``).
        maxval: the upper bound.

    Returns:
        Floats of ``shape``.

    Example:
        >>> fg.random.uniform(fg.random.key(0), (3,)).tolist()
        [0.9476670026779175, 0.9785798788070679, 0.33229148387908936]
    """
    shape, d = draw_shape(shape, "uniform"), float_dtype(dtype, "uniform")
    info = ml_dtypes.finfo(d.np)
    width = d.itemsize * 8
    random = 8 if info.nmant < 8 else width
    unit = lax.convert(lax.convert(random_bits(k, random, shape, "uniform") >> (random - info.nmant), float64)
                       * 2.0 ** -info.nmant, d)  # (exact: a multiple of 2**-nmant below 1)
    device = words_of(k, "uniform").device
    lo, hi = float_array(minval, d, device), float_array(maxval, d, device)
    return ops.maximum(lo, xla_math.fma(unit, hi - lo, lo))
