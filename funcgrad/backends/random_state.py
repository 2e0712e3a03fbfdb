"""The global random state that PyTorch-style code uses (``fg.manual_seed``).

Two pieces: PyTorch's CPU generator (``TorchGenerator``), which ``nn.init`` draws from
eagerly, so layers start from PyTorch's weights for the same seed, and the key of
``fg.random``'s default generator (``fg.rand``, ``Dropout``). The key lives here, below
the arrays and the transforms, so that ``fg.compile`` can pass it into a program and take
the new key out (``transforms/compiler/jit.py``): a compiled function that draws from the
default generator draws fresh numbers on every call. (Functional code passes keys.)
"""

from __future__ import annotations

import math
from contextvars import ContextVar, Token
from typing import Any

import numpy as np

from . import torch_math

__all__ = ["TorchGenerator", "manual_seed", "generator", "default_key", "set_default_key", "vmap_draws", "enter_vmap",
           "exit_vmap"]

TORCH_DEFAULT_SEED = 67280421310721  # what PyTorch's CPU generator starts from, unseeded


class TorchGenerator:
    """PyTorch's CPU generator: mt19937 seeded as ``torch.manual_seed`` seeds it, and
    PyTorch's CPU transforms of its words, element by element in C order, so that each draw
    gives PyTorch's numbers bit for bit. A float32 draw takes the low 24 bits of one word, a
    float64 draw 53 bits of two (the first high); ``uniform`` scales and shifts with one
    rounding, as PyTorch's kernel's fused multiply-add; ``normal`` is PyTorch's Box-Muller
    (``normal_fill`` from 16 values on, with the C library's ``log``, ``cos`` and ``sin`` as
    PyTorch calls them, in a native loop where a compiler can build one; else NumPy's, equal
    up to their last bit); ``bernoulli`` compares a float64 uniform with ``p``; ``permutation``
    is ``randperm``'s swaps. ``get_state`` is PyTorch's byte layout of the state, so states
    pass between the two."""

    def __init__(self, seed: int = TORCH_DEFAULT_SEED) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        """The state ``torch.manual_seed(seed)`` gives (mt19937 from the seed's low 32 bits)."""
        key = np.empty(624, np.uint32)
        x = int(seed) & 0xFFFFFFFF
        key[0] = x
        for i in range(1, 624):
            x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
            key[i] = x
        self.seed = int(seed) % (1 << 64)
        self._bits = np.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
        self._next_normal: float | None = None

    def get_state(self) -> np.ndarray:
        """The state as ``torch.get_rng_state()`` lays it out: 5056 bytes (the seed, mt19937's
        624 words and position, the cached normal value)."""
        state = self._bits.state["state"]
        pos = int(state["pos"])
        out = np.zeros(_STATE_BYTES, np.uint8)
        head = np.array([self.seed % (1 << 64)], np.uint64).view(np.uint8)
        out[0:8] = head
        out[8:16] = np.array([625 - pos, 1], np.int32).view(np.uint8)  # (left, seeded)
        out[16:24] = np.array([pos % 624], np.uint64).view(np.uint8)  # (next)
        out[24:24 + 624 * 8] = state["key"].astype(np.uint64).view(np.uint8)
        if self._next_normal is not None:
            out[5024:5032] = np.array([self._next_normal], np.float64).view(np.uint8)
            out[5040:5044] = np.array([1], np.int32).view(np.uint8)
        return out

    def set_state(self, state: Any) -> None:
        """Restore a state ``get_state`` (or ``torch.get_rng_state()``) gave."""
        data = np.ascontiguousarray(np.asarray(state)).reshape(-1)
        if data.dtype != np.uint8 or data.size != _STATE_BYTES:
            raise ValueError(f"set_state: a generator state is {_STATE_BYTES} uint8 values (PyTorch's CPU generator "
                             f"state), got {data.size} of {data.dtype}")
        left = int(data[8:12].view(np.int32)[0])
        if not 1 <= left <= 625:
            raise ValueError(f"set_state: the state's position ({left} words left) is out of range")
        self.seed = int(data[0:8].view(np.uint64)[0])
        key = data[24:24 + 624 * 8].view(np.uint64).astype(np.uint32)
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 625 - left}}
        valid = int(data[5040:5044].view(np.int32)[0])
        self._next_normal = float(data[5024:5032].view(np.float64)[0]) if valid else None

    def words(self, n: int) -> np.ndarray:
        """``n`` 32-bit words (as uint64), as ``random()`` draws them."""
        return self._bits.random_raw(n)  # type: ignore[no-any-return]

    def key_data(self) -> np.ndarray:
        """Two words as an ``fg.random`` key's data: the key a draw takes where the stream
        cannot be run (inside ``fg.compile``)."""
        return self.words(2).astype(np.uint32)  # type: ignore[no-any-return]

    def words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words, as ``random64()`` draws them (two words, the first high)."""
        words = self.words(2 * n)
        return (words[0::2] << np.uint64(32)) | words[1::2]  # type: ignore[no-any-return]

    def unit(self, n: int, dtype: Any) -> np.ndarray:
        """``n`` uniforms in [0, 1) as PyTorch draws them for ``dtype``, as float64."""
        dtype = np.dtype(dtype)
        if dtype == np.float64:
            return (self.words64(n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        return (self.words(n) & np.uint64((1 << 24) - 1)).astype(np.float64) * 2.0 ** -24  # (16-bit: float32's)

    def uniform(self, a: float, b: float, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        """PyTorch's ``uniform_(a, b)`` of a new array of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        x = self.unit(n, dtype)
        if dtype == np.float64:
            return torch_math.scale_shift(x, float(b) - float(a), float(a), dtype).reshape(shape)
        low = np.float32(a)
        span = np.float32(np.float32(b) - low)
        out = torch_math.scale_shift(x, float(span), float(low), np.float32)
        if dtype == np.float32:
            return out.reshape(shape)
        out = out.astype(dtype)  # (16-bit: float32's, rounded; one that rounds up to b becomes a, as PyTorch's)
        out[out == np.asarray(b, dtype)] = np.asarray(a, dtype)
        return out.reshape(shape)

    def randint(self, low: int, high: int, shape: tuple[int, ...]) -> np.ndarray:
        """``torch.randint(low, high, shape)``: a word (two, from a range of 2**32 on) modulo
        the range, plus ``low``, as int64."""
        span, n = high - low, math.prod(shape)
        words = self.words64(n) if span >= 1 << 32 else self.words(n)
        return ((words % np.uint64(span)).astype(np.int64) + np.int64(low)).reshape(shape)

    def random_int64(self) -> int:
        """``torch.empty((), dtype=torch.int64).random_()``: a 64-bit word modulo 2**63 (the
        seeds a ``DataLoader`` and its sampler take)."""
        return int(self.words64(1)[0]) % (1 << 63)

    def bernoulli(self, p: float, shape: tuple[int, ...]) -> np.ndarray:
        """``bernoulli_(p)`` with a number ``p``: a float64 uniform below ``p``, as bools."""
        return (self.unit(math.prod(shape), np.float64) < p).reshape(shape)  # type: ignore[no-any-return]

    def exponential(self, rate: float, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        """``exponential_(rate)``: ``-log1p(-u) / rate`` of float64 uniforms, in ``dtype``."""
        u = self.unit(math.prod(shape), np.float64)
        return (-1.0 / rate * np.log1p(-u)).astype(dtype).reshape(shape)  # type: ignore[no-any-return]

    def normal(self, mean: float, std: float, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        """PyTorch's ``normal_(mean, std)``: 16 at a time from 16 uniforms (the last 16 drawn
        again when 16 does not divide the size; for 16-bit dtypes, a last whole block whose
        values end the array); fewer than 16, one pair at a time in double."""
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if n < 16:
            values = np.array([self._one_normal() for _ in range(n)], np.float64)
            return torch_math.scale_shift(values, float(std), float(mean), np.float64).astype(dtype).reshape(shape)
        work = np.dtype(np.float64 if dtype == np.float64 else np.float32)
        if dtype.itemsize == 2 and n % 16:  # (16-bit: whole blocks of 16, the last block's values at the end)
            data = self.unit(-(-n // 16) * 16, dtype).astype(work)
            torch_math.normal_fill(data, mean, std)
            return np.concatenate([data[:n - 16], data[-16:]]).astype(dtype).reshape(shape)
        data = self.unit(n, dtype).astype(work)
        blocks = n // 16
        torch_math.normal_fill(data[:blocks * 16], mean, std)
        if n % 16:
            tail = self.unit(16, dtype).astype(work)
            torch_math.normal_fill(tail, mean, std)
            data[n - 16:] = tail
        return data.astype(dtype).reshape(shape)

    def _one_normal(self) -> float:
        """A standard normal as PyTorch's ``normal_distribution<double>``: a pair from two
        uniforms, the second kept for the next call."""
        if self._next_normal is not None:
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = self.unit(2, np.float64)
        radius, theta = math.sqrt(-2.0 * math.log1p(-u2)), 2.0 * math.pi * u1
        self._next_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def permutation(self, n: int) -> np.ndarray:
        """``torch.randperm(n)``'s order: a swap per position, with the word modulo what is left."""
        order = np.arange(n, dtype=np.int64)
        torch_math.permutation_swaps(order, self.words(max(n - 1, 0)))
        return order


_STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState): what torch.get_rng_state() returns

_GENERATOR = TorchGenerator()


def manual_seed(seed: int) -> None:
    """Reseed the global generator (nn initialisers): PyTorch's state for ``seed``."""
    _GENERATOR.manual_seed(seed)


def generator() -> TorchGenerator:
    return _GENERATOR


_DEFAULT_KEY: list[Any] = [None]  # fg.random's default generator's key (an array once fg.random is loaded)


def default_key() -> Any:
    return _DEFAULT_KEY[0]


def set_default_key(key: Any) -> None:
    _DEFAULT_KEY[0] = key


# The ``fg.vmap`` calls around the code now running, outermost first, each as
# ``(name, randomness, size, batch)``: how a draw from a generator (``fg.rand``, ``Dropout``)
# behaves inside them (``torch.func.vmap``'s ``randomness``); ``batch.box(x)`` makes a value
# with one entry per member (a leading axis) that vmap's batched value, and
# ``batch.owns(x)`` says whether ``x`` already differs between that vmap's members (a key the
# user mapped over, as ``functional_call(..., rng=keys)`` under vmap passes).
_VMAP_DRAWS: ContextVar[tuple[Any, ...]] = ContextVar("funcgrad_vmap_draws", default=())


def vmap_draws() -> tuple[Any, ...]:
    return _VMAP_DRAWS.get()


def enter_vmap(name: str, randomness: str, size: int, batch: Any) -> Token[tuple[Any, ...]]:
    """Called by ``fg.vmap`` around the mapped function; ``exit_vmap(token)`` after."""
    return _VMAP_DRAWS.set((*_VMAP_DRAWS.get(), (name, randomness, size, batch)))


exit_vmap = _VMAP_DRAWS.reset
