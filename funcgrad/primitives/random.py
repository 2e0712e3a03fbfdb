"""The random bits primitive: Threefry-2x32 (Salmon et al., "Parallel random numbers: as
easy as 1, 2, 3"), the counter-based generator ``jax.random`` uses.

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)``: a keyed bijection of pairs of uint32 words,
20 rounds of add, rotate and xor. The same key and counters give the same bits on every
device, in any order, under any transform: ``fg.random`` builds keys, splits and samples
from it, bit for bit as ``jax.random`` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..backends import cc
from ..dtypes import uint32
from ..errors import DTypeError
from .batching import logical_ndim, with_batch
from .checks import broadcast_shapes, common_device
from .core import Primitive, ShapedArray, bind

__all__ = ["threefry2x32_p"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # the key schedule's constant: k3 = k1 ^ k2 ^ it


def _threefry_rule(*words: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    for w in words:
        if not isinstance(w, ShapedArray) or w.dtype is not uint32:
            raise DTypeError(f"threefry2x32: every operand must be a uint32 array, got {words}")
    shape = broadcast_shapes("threefry2x32", *(w.shape for w in words))
    out = ShapedArray(shape, uint32, common_device("threefry2x32", words))
    return out, out


def _threefry(xp: Any, k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """Five groups of four rounds, the key injected between them; in place on two words.
    (uint32 arithmetic wraps around by design: NumPy's overflow warnings for 0-d operands
    are silenced.) Draws run as one native loop where a compiler can build it: even a key's
    split, two words, takes 4x less time than the NumPy passes."""
    words = (k1, k2, x1, x2)
    if cc.eager_native(xp):
        native = _native_threefry(words)
        if native is not None:
            return native
    with np.errstate(over="ignore"):
        return _rounds(xp, k1, k2, x1, x2)


def _native_threefry(words: tuple[Any, ...]) -> tuple[Any, Any] | None:
    """The same rounds as ``_rounds``, per element in C: the 100 NumPy passes over the
    counters become one loop (2.1 ms where they took 12.5, for 589,824 words). A word of one element
    is read at 0 for every element; others are broadcast to the result's shape first.
    None where no compiler can be used."""
    shape = np.broadcast_shapes(*(w.shape for w in words))
    single = tuple(w.size == 1 for w in words)
    try:
        address = _threefry_kernel(single)
    except cc.NativeBuildError:
        return None
    operands = [np.ascontiguousarray(w.reshape(1) if one else np.broadcast_to(w, shape))
                for w, one in zip(words, single)]
    a, b = np.empty(shape, np.uint32), np.empty(shape, np.uint32)
    cc.run(address, operands, [a, b], [a.size], per_element=64)
    return a, b


@functools.lru_cache(maxsize=16)
def _threefry_kernel(single: tuple[bool, ...]) -> int:
    return cc.loop_kernel(_threefry_source(single))


def _threefry_source(single: tuple[bool, ...]) -> str:
    names = ("k1", "k2", "x1", "x2")
    reads = [f"uint32_t {n} = w{k}[{'0' if one else 'i'}];" for k, (n, one) in enumerate(zip(names, single))]
    rounds = [f"uint32_t k3 = k1 ^ k2 ^ 0x{_PARITY:X}u;", "uint32_t a = x1 + k1, b = x2 + k2;"]
    ks = ("k1", "k2", "k3")
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            rounds.append(f"a += b; b = ((b << {r}) | (b >> {32 - r})) ^ a;")
        rounds.append(f"a += {ks[(group + 1) % 3]}; b += {ks[(group + 2) % 3]} + {group + 1}u;")
    body = "\n        ".join([*reads, *rounds, "y0[i] = a; y1[i] = b;"])
    return ("void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {\n"
            + "".join(f"    const uint32_t *restrict w{k} = (const uint32_t *)p[{k}];\n" for k in range(4))
            + "    uint32_t *restrict y0 = (uint32_t *)p[4], *restrict y1 = (uint32_t *)p[5];\n"
            + "    #pragma omp simd\n    for (int64_t i = lo; i < hi; i++) {\n        " + body + "\n    }\n}\n")


def _rounds(xp: Any, k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
    keys = (k1, k2, k1 ^ k2 ^ xp.uint32(_PARITY))
    a, b = xp.asarray(x1 + keys[0]), xp.asarray(x2 + keys[1])  # new arrays: the rounds work in place on them
    b = b if b.shape == shape else xp.broadcast_to(b, shape).copy()
    a = a if a.shape == shape else xp.broadcast_to(a, shape).copy()  # (often 0-d: the counters' high words)
    t = xp.empty_like(a)
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            xp.add(a, b, out=a)
            xp.left_shift(b, xp.uint32(r), out=t)  # b = rotate_left(b, r) ^ a
            xp.right_shift(b, xp.uint32(32 - r), out=b)
            xp.bitwise_or(b, t, out=b)
            xp.bitwise_xor(b, a, out=b)
        a += keys[(group + 1) % 3]
        b += keys[(group + 2) % 3] + xp.uint32(group + 1)
    return a, b


def _threefry_batch(args: Any, dims: Any) -> tuple[Any, tuple[int, int]]:
    rank = max(logical_ndim(a, d) for a, d in zip(args, dims))
    return bind(threefry2x32_p, *(with_batch(a, d, rank) for a, d in zip(args, dims))), (0, 0)


threefry2x32_p = Primitive("threefry2x32", _threefry_rule, kernel=_threefry, multiple_results=True,
                           differentiable=False)
threefry2x32_p.batch = _threefry_batch
