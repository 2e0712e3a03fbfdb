"""PyTorch-style random numbers: ``fg.Generator``, ``fg.manual_seed`` and ``fg.rand``,
``fg.randn``, ``fg.randint``, ``fg.randperm``, ``fg.normal``, ``fg.bernoulli``,
``fg.multinomial``, ``fg.rand_like``, ``fg.randn_like``.

A generator is a key that splits on every draw: the draw uses one half, the generator
keeps the other. So the numbers are ``fg.random``'s (Threefry), reproducible from the
seed, and the default generator's key can be threaded through a compiled program as an
input and an output (``random_state``): a compiled function that calls ``fg.rand`` or a
``Dropout`` in training mode draws fresh numbers on every call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..array import Array, ArrayBase
from ..backends import random_state as random_state
from ..dtypes import as_dtype, int64
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..primitives.checks import as_int
from . import distributions as _draws
from . import keys as _keys

__all__ = ["Generator", "default_generator", "manual_seed", "rand", "randn", "randint", "randperm", "normal",
           "bernoulli", "multinomial", "rand_like", "randn_like"]


class Generator:
    """``torch.Generator``: ``manual_seed(seed)``, ``initial_seed()``, ``get_state()`` /
    ``set_state(state)``; pass it as ``generator=`` to the draws."""

    def __init__(self, device: Any = None, seed: int = 0) -> None:
        self._seed = seed
        self.key = _keys.PRNGKey(seed)

    @property
    def key(self) -> Any:
        """The current key (the next draw splits it)."""
        return self._key

    @key.setter
    def key(self, value: Any) -> None:
        self._key = value

    def manual_seed(self, seed: int) -> Generator:
        """Seed the generator; returns it."""
        self._seed = int(seed)
        self.key = _keys.PRNGKey(seed)
        return self

    def initial_seed(self) -> int:
        """The seed it was given."""
        return self._seed

    def get_state(self) -> Any:
        """The generator's state (its key)."""
        return self.key

    def set_state(self, state: Any) -> Generator:
        """Restore a state get_state() gave."""
        self.key = _keys.key_data(state)
        return self

    def next_key(self) -> Any:
        """A fresh key for one draw (the generator moves on); inside ``fg.vmap``, one per
        member or the same for all, as its ``randomness`` says."""
        self.key, sub = _keys.split(self.key)
        return _per_member(sub)

    def __repr__(self) -> str:
        return f"<fg.Generator seed={self._seed}>"


class _DefaultGenerator(Generator):
    """The global generator: its key lives in ``random_state``, where ``fg.compile`` finds it."""

    @property
    def key(self) -> Any:
        return random_state.default_key()

    @key.setter
    def key(self, value: Any) -> None:
        random_state.set_default_key(value)


default_generator = _DefaultGenerator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generators: ``fg.random``'s default one (``fg.rand``, ``Dropout``) and
    the one ``nn.init`` draws from. Returns the default generator (as PyTorch does)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentTypeError(f"manual_seed: the seed must be an int, got {seed!r}")
    if not -(1 << 63) <= seed < 1 << 64:
        raise ArgumentValueError(f"manual_seed: the seed must be in [-2**63, 2**64) (PyTorch's range), got {seed}")
    seed %= 1 << 64  # a negative seed, as PyTorch maps it
    random_state.manual_seed(seed)
    return default_generator.manual_seed(seed)


def _size(size: tuple[Any, ...], op: str) -> tuple[int, ...]:
    """PyTorch's sizes: ``rand(2, 3)`` or ``rand((2, 3))``."""
    return _keys.draw_shape(size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size, op, "")


def _key(generator: Generator | None) -> Any:
    """The key of one draw from ``generator`` (the default one unless given)."""
    if generator is not None and not isinstance(generator, Generator):
        raise ArgumentTypeError(f"generator must be an fg.Generator, got {type(generator).__name__} {generator!r}")
    return (generator if generator is not None else default_generator).next_key()


def _per_member(key: Any) -> Any:
    """A draw's key inside ``fg.vmap``, as each vmap's ``randomness`` says: ``"error"``
    refuses the draw, ``"same"`` gives every member the same numbers, ``"different"`` gives
    each member its own (the key split once per member), as ``torch.func.vmap`` does."""
    for name, randomness, size, box, mapped in random_state.vmap_draws():
        if mapped(key):  # the generator's key already differs per member (the user mapped over keys)
            continue
        if randomness == "error":
            raise ArgumentValueError(
                f"fg.vmap({name}): a draw from a random generator (fg.rand, fg.randn, Dropout, ...) inside vmap; "
                "say whether the members draw different numbers or the same: fg.vmap(f, randomness='different') "
                "or randomness='same' (as torch.func.vmap), or draw from explicit keys with fg.random")
        if randomness == "different":
            key = box(_keys.split(key, size))
    return key


def _finish(x: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    if dtype is not None:
        x = x.astype(as_dtype(dtype))
    if device is not None:
        x = x.to(device)
    return x.requires_grad_() if requires_grad else x


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Any:
    """Uniform values in [0, 1) (``torch.rand``)."""
    d = as_dtype(dtype) if dtype is not None else _dt.default_float
    return _finish(_keys.uniform(_key(generator), _size(size, "rand"), d), None, device, requires_grad)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """Standard normal values (``torch.randn``)."""
    d = as_dtype(dtype) if dtype is not None else _dt.default_float
    return _finish(_draws.normal(_key(generator), _size(size, "randn"), d), None, device, requires_grad)


def randint(low: int, high: int | None = None, size: Any = (), *, generator: Generator | None = None,
            dtype: Any = None, device: Any = None) -> Any:
    """Integers in ``[low, high)`` (``torch.randint(high, size)`` or ``(low, high, size)``)."""
    if isinstance(high, (tuple, list)) and size == ():  # torch.randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ArgumentValueError(f"randint: high ({high}) must be greater than low ({low})")
    out = _draws.randint(_key(generator), _size((size,), "randint"),
                        low, high, int64)
    return _finish(out, dtype, device, False)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None) -> Any:
    """A random permutation of ``range(n)`` (``torch.randperm``)."""
    return _finish(_draws.permutation(_key(generator), int(n)), dtype, device, False)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None) -> Any:
    """Normal values of mean ``mean`` and standard deviation ``std`` (arrays broadcast; with
    numbers, ``size`` gives the shape), as ``torch.normal``."""
    arrays = [v for v in (mean, std) if isinstance(v, ArrayBase)]
    if size is None:
        if not arrays:
            raise ArgumentValueError("normal: give size when mean and std are numbers")
        shape = ops.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    else:
        shape = _size((size,) if not isinstance(size, (tuple, list)) else (size,), "normal")
    dtype = arrays[0].dtype if arrays and arrays[0].dtype.kind == "f" else _dt.default_float
    _require("normal", std, lambda v: v >= 0, "std must be at least 0")
    return _draws.normal(_key(generator), shape, dtype) * std + mean


def bernoulli(p: Any, *, generator: Generator | None = None) -> Any:
    """0 or 1 with probability ``p`` per element, in ``p``'s dtype (``torch.bernoulli``)."""
    p = p if isinstance(p, ArrayBase) else ops.asarray(p, dtype=_dt.default_float)
    _require("bernoulli", p, lambda v: (v >= 0) & (v <= 1), "p must be in [0, 1]")
    return _draws.bernoulli(_key(generator), p, tuple(p.shape)).astype(p.dtype)


def multinomial(probs: Any, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Any:
    """Indices drawn with weights ``probs`` (one row, or a batch of rows), as
    ``torch.multinomial``: with replacement from the categorical distribution, without it
    by Gumbel top-k."""
    probs = probs if isinstance(probs, ArrayBase) else ops.asarray(probs, dtype=_dt.default_float)
    if probs.ndim not in (1, 2):
        raise ShapeError(f"multinomial: probs must be 1-D or 2-D, got shape {tuple(probs.shape)}")
    n = probs.shape[-1]
    num_samples = as_int("multinomial", num_samples, "num_samples", minimum=1)
    _require("multinomial", probs, lambda v: (v >= 0) & np.isfinite(v), "probs must be finite and at least 0")
    _require("multinomial", probs, lambda v: np.sum(v, axis=-1) > 0, "every row of probs must have a positive sum")
    if not replacement and num_samples > n:
        raise ArgumentValueError(f"multinomial: {num_samples} samples without replacement from {n} categories")
    with np.errstate(divide="ignore"):  # a zero weight is a logit of -inf, never drawn
        logits = ops.log(probs / ops.sum(probs, axis=-1, keepdims=True))
    key = _key(generator)
    if replacement:
        return _draws.categorical(key, logits[..., None, :], shape=(*probs.shape[:-1], num_samples))
    noisy = logits + _draws.gumbel(key, tuple(probs.shape), logits.dtype)
    return ops.argsort(noisy, axis=-1, descending=True, stable=True)[..., :num_samples]


def _require(op: str, value: Any, holds: Any, what: str) -> None:
    """``ArgumentValueError`` unless ``holds`` is true of every element of ``value`` (a number
    or a concrete array; traced values have none to check, as in PyTorch's compiled code)."""
    if isinstance(value, (int, float)) or value.__class__ is Array:
        values = np.asarray(value.numpy() if value.__class__ is Array else value)
        if values.size and not np.all(holds(values)):
            raise ArgumentValueError(f"{op}: {what}, got {value!r}")


def rand_like(x: Any, *, generator: Generator | None = None, dtype: Any = None) -> Any:
    """Uniform values in [0, 1) of ``x``'s shape, dtype and device."""
    return rand(*x.shape, generator=generator, dtype=dtype or x.dtype, device=x.device)


def randn_like(x: Any, *, generator: Generator | None = None, dtype: Any = None) -> Any:
    """Standard normal values of ``x``'s shape, dtype and device."""
    return randn(*x.shape, generator=generator, dtype=dtype or x.dtype, device=x.device)
