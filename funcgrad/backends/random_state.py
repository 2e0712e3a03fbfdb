"""The global random state that PyTorch-style code uses (``fg.manual_seed``).

Two pieces: PyTorch's CPU generator (``TorchGenerator``), which ``nn.init`` draws from
eagerly, so layers start from PyTorch's weights for the same seed, and the key of
``fg.random``'s default generator (``fg.rand``, ``Dropout``). The key lives here, below
the arrays and the transforms, so that ``fg.compile`` can pass it into a program and take
the new key out (``transforms/compiler/jit.py``): a compiled function that draws from the
default generator draws fresh numbers on every call. (Functional code passes keys.)
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

import numpy as np

__all__ = ["TorchGenerator", "manual_seed", "generator", "default_key", "set_default_key", "vmap_draws", "enter_vmap",
           "exit_vmap"]

TORCH_DEFAULT_SEED = 67280421310721  # what PyTorch's CPU generator starts from, unseeded


def _fused(x: np.ndarray, y: Any, z: Any) -> np.ndarray:
    """``x * y + z`` rounded once, as a fused multiply-add (float64; NumPy has none): the
    exact product as a sum of two doubles (Veltkamp's split), then the sum of the three."""
    p = x * y
    c = 134217729.0 * x
    xh = c - (c - x)
    cy = 134217729.0 * np.float64(y)
    yh = cy - (cy - y)
    xl, yl = x - xh, y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    b = s - p
    return s + (((p - (s - b)) + (z - b)) + e)  # type: ignore[no-any-return]


class TorchGenerator:
    """PyTorch's CPU generator, for ``nn.init`` (and so every layer's default
    initialisation): mt19937 seeded as ``torch.manual_seed`` seeds it, and PyTorch's CPU
    transforms of its words, element by element in C order. ``uniform`` gives PyTorch's
    numbers bit for bit (float32: 24 bits of one word, scaled and shifted with one rounding,
    as its AVX2 kernel's fused multiply-add; float64: 53 bits of two words); ``normal`` is
    PyTorch's Box-Muller over those uniforms, equal up to the last bits of ``log``, ``sin``
    and ``cos`` (PyTorch's own vary with the CPU's vector units); ``permutation`` is
    ``randperm``'s swaps."""

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
        self._bits = np.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
        self._next_normal: float | None = None

    def get_state(self) -> Any:
        """The generator's state (restore it with ``set_state``)."""
        return self._bits.state, self._next_normal

    def set_state(self, state: Any) -> None:
        self._bits.state, self._next_normal = state

    def _words(self, n: int) -> np.ndarray:
        return self._bits.random_raw(n)  # type: ignore[no-any-return]  # (32-bit words, as uint64)

    def _unit(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``n`` uniforms in [0, 1) as PyTorch draws them for ``dtype``, as float64."""
        if dtype == np.float64:
            words = self._words(2 * n)
            bits = (words[0::2] << np.uint64(32)) | words[1::2]  # (the first word high)
            return (bits & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        digits = {np.dtype(np.float16): 11}.get(dtype, 8 if dtype.name == "bfloat16" else 24)
        return (self._words(n) & np.uint64((1 << digits) - 1)).astype(np.float64) * 2.0 ** -digits

    def uniform(self, a: float, b: float, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        """PyTorch's ``uniform_(a, b)`` of a new array of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape))
        x = self._unit(n, dtype)
        if dtype == np.float64:
            return _fused(x, float(b) - float(a), float(a)).reshape(shape)
        low = np.float32(a)
        span = np.float32(np.float32(b) - low)
        return (x * np.float64(span) + np.float64(low)).astype(dtype).reshape(shape)

    def normal(self, mean: float, std: float, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
        """PyTorch's ``normal_(mean, std)``: 16 at a time from 16 uniforms (the last 16 drawn
        again when 16 does not divide the size); fewer than 16, one pair at a time in double."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape))
        if n < 16:
            values = np.array([self._one_normal() * std + mean for _ in range(n)], np.float64)
            return values.astype(dtype).reshape(shape)
        work = np.float64 if dtype == np.float64 else np.float32
        data = self._unit(n, dtype).astype(work)
        blocks = n // 16
        data[:blocks * 16] = self._box_muller(data[:blocks * 16].reshape(blocks, 2, 8), mean, std, work).reshape(-1)
        if n % 16:
            tail = self._unit(16, dtype).astype(work)
            data[n - 16:] = self._box_muller(tail.reshape(1, 2, 8), mean, std, work).reshape(-1)
        return data.astype(dtype).reshape(shape)

    @staticmethod
    def _box_muller(u: np.ndarray, mean: float, std: float, work: Any) -> np.ndarray:
        radius = np.sqrt(work(-2.0) * np.log(work(1.0) - u[:, 0]))
        theta = (2.0 * np.pi * u[:, 1].astype(np.float64)).astype(work)
        return np.stack([radius * np.cos(theta) * work(std) + work(mean),
                         radius * np.sin(theta) * work(std) + work(mean)], axis=1)

    def _one_normal(self) -> float:
        """A standard normal as PyTorch's ``normal_distribution<double>``: a pair from two
        uniforms, the second kept for the next call."""
        if self._next_normal is not None:
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = self._unit(2, np.dtype(np.float64))
        radius, theta = np.sqrt(-2.0 * np.log1p(-u2)), 2.0 * np.pi * u1
        self._next_normal = float(radius * np.sin(theta))
        return float(radius * np.cos(theta))

    def permutation(self, n: int) -> np.ndarray:
        """``torch.randperm(n)``'s order: a swap per position, with the word modulo what is left."""
        order = np.arange(n)
        words = self._words(max(n - 1, 0))
        for i in range(n - 1):
            j = i + int(words[i]) % (n - i)
            order[i], order[j] = order[j], order[i]
        return order


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
# ``(name, randomness, size, box, mapped)``: how a draw from a generator (``fg.rand``,
# ``Dropout``) behaves inside them (``torch.func.vmap``'s ``randomness``); ``box``, which makes
# a value with one entry per member (a leading axis) that vmap's batched value; and
# ``mapped(x)``, whether ``x`` already differs between that vmap's members (a key the user
# mapped over, as ``functional_call(..., rng=keys)`` under vmap passes).
_VMAP_DRAWS: ContextVar[tuple[Any, ...]] = ContextVar("funcgrad_vmap_draws", default=())


def vmap_draws() -> tuple[Any, ...]:
    return _VMAP_DRAWS.get()


def enter_vmap(name: str, randomness: str, size: int, box: Any, mapped: Any) -> Token[tuple[Any, ...]]:
    """Called by ``fg.vmap`` around the mapped function; ``exit_vmap(token)`` after."""
    return _VMAP_DRAWS.set((*_VMAP_DRAWS.get(), (name, randomness, size, box, mapped)))


def exit_vmap(token: Token[tuple[Any, ...]]) -> None:
    _VMAP_DRAWS.reset(token)
