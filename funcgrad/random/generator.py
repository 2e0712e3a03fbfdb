"""PyTorch-style random numbers: ``fg.Generator``, ``fg.manual_seed`` and ``fg.rand``,
``fg.randn``, ``fg.randint``, ``fg.randperm``, ``fg.normal``, ``fg.bernoulli``,
``fg.multinomial``, ``fg.rand_like``, ``fg.randn_like``, ``fg.get_rng_state`` and
``fg.set_rng_state``.

A generator is PyTorch's CPU generator (``random_state.TorchGenerator``: mt19937 and
PyTorch's transforms), so after the same seed every draw gives PyTorch's numbers, and a
ported script starts from the same weights, masks and data order. Inside ``fg.compile`` a
program cannot run mt19937: there the default generator's draws come from a key that the
compiled function takes as an input, made from two words of the generator on each call
(fresh numbers per call, ``fg.random``'s Threefry, as ``torch.compile`` draws other numbers
than eager PyTorch). ``functional_call(..., rng=key)`` sets that key too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..array import Array, ArrayBase
from ..backends import random_state as random_state
from ..dtypes import as_dtype, int64
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..ops.reference_docs import sections
from ..primitives.checks import as_int
from . import distributions as _draws
from . import keys as _keys

__all__ = ["Generator", "default_generator", "manual_seed", "initial_seed", "seed", "get_rng_state", "set_rng_state",
           "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like",
           "bernoulli_mask", "uniform_draw", "random_seed"]


class Generator:
    """``torch.Generator`` on the CPU: ``manual_seed(seed)``, ``seed()``, ``initial_seed()``,
    ``get_state()`` / ``set_state(state)``; pass it as ``generator=`` to the draws. Unseeded,
    it starts from PyTorch's default seed, as ``torch.Generator()`` does.

    Example:
        >>> g = fg.Generator().manual_seed(0)
        >>> fg.rand(2, generator=g).tolist()  # torch.rand(2, generator=torch.Generator().manual_seed(0))
        [0.49625658988952637, 0.7682217955589294]
    """

    def __init__(self, device: Any = None, seed: int | None = None) -> None:
        self.engine = random_state.TorchGenerator()
        if seed is not None:
            self.manual_seed(seed)

    @property
    def key(self) -> Any:
        """The key draws take instead of the engine's words (the default generator's, under
        ``fg.compile`` or ``functional_call(rng=)``), or None."""
        return None

    def manual_seed(self, seed: int) -> Generator:
        """Seed the generator as ``torch.Generator.manual_seed`` does; returns it."""
        self.engine.manual_seed(_checked_seed(seed))
        return self

    def seed(self) -> int:
        """Seed the generator from the operating system's entropy; returns the seed."""
        value = int.from_bytes(os.urandom(8), "little")
        self.engine.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed it was last given."""
        return self.engine.seed

    def get_state(self) -> Any:
        """The state as a uint8 array in PyTorch's layout (``torch.Generator.get_state``)."""
        return ops.asarray(self.engine.get_state())

    def set_state(self, state: Any) -> Generator:
        """Restore a state ``get_state()`` (or PyTorch's) gave; returns the generator."""
        data = state.numpy() if isinstance(state, ArrayBase) else np.asarray(state)
        try:
            self.engine.set_state(data)
        except ValueError as exc:
            raise ArgumentValueError(f"Generator.{exc}") from None
        return self

    def next_key(self) -> Any:
        """A fresh ``fg.random`` key for one draw: the generator's key split where it has one
        (inside ``fg.vmap``, one per member or the same for all, as its ``randomness``
        says), else made of two of its words."""
        if self.key is None:
            return ops.asarray(self.engine.key_data())
        self.key, sub = _keys.split(self.key)  # type: ignore[misc]
        return _per_member(sub)

    def __repr__(self) -> str:
        return f"<fg.Generator initial_seed={self.engine.seed}>"


class _DefaultGenerator(Generator):
    """The global generator: its engine is the one ``nn.init`` draws from, and its key (set
    while ``fg.compile`` traces, or by ``functional_call(rng=)``) lives in ``random_state``,
    where ``fg.compile`` finds it."""

    def __init__(self) -> None:
        self.engine = random_state.generator()

    @property
    def key(self) -> Any:
        return random_state.default_key()

    @key.setter
    def key(self, value: Any) -> None:
        random_state.set_default_key(value)


default_generator = _DefaultGenerator()


def _checked_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError(f"manual_seed: the seed must be an int, got {seed!r}")
    seed = int(seed)
    if not -(1 << 63) <= seed < 1 << 64:
        raise ArgumentValueError(f"manual_seed: the seed must be in [-2**63, 2**64) (PyTorch's range), got {seed}")
    return seed % (1 << 64)  # a negative seed, as PyTorch maps it


def manual_seed(seed: int) -> Generator:
    """Seed the global generator (``fg.rand``, ``Dropout``, ``nn.init``, ``DataLoader``) as
    ``torch.manual_seed`` seeds PyTorch's: the same draws follow, bit for bit.

    Args:
        seed: an integer (any below 2**64; negative ones as PyTorch takes them).

    Returns:
        The global generator (as PyTorch returns it).

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.rand(3).tolist()   # torch.manual_seed(0); torch.rand(3)
        [0.49625658988952637, 0.7682217955589294, 0.08847743272781372]
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the global generator from the operating system's entropy (``torch.seed``).

    Returns:
        The seed chosen (``fg.initial_seed()`` reports it afterwards).

    Example:
        >>> s = fg.seed()
        >>> fg.initial_seed() == s
        True
    """
    return default_generator.seed()


def initial_seed() -> int:
    """The global generator's seed (``torch.initial_seed``).

    Returns:
        The seed of the last ``fg.manual_seed`` (or ``fg.seed``), a Python int.

    Example:
        >>> _ = fg.manual_seed(5)
        >>> fg.initial_seed()
        5
    """
    return default_generator.initial_seed()


def random_seed(generator: Generator | None = None) -> int:
    """``torch.empty((), dtype=torch.int64).random_(generator=)``: a 64-bit word modulo 2**63
    (the seeds a ``DataLoader`` pass and a ``RandomSampler`` take)."""
    return _source(generator).engine.random_int64()


def get_rng_state() -> Any:
    """The global generator's state, a uint8 array in PyTorch's layout (``torch.get_rng_state``).

    Returns:
        A uint8 array of 5056 bytes (PyTorch's CPU generator state: they pass between the two).

    Example:
        >>> _ = fg.manual_seed(3)
        >>> state = fg.get_rng_state()
        >>> first = fg.rand(2).tolist()
        >>> fg.set_rng_state(state)
        >>> fg.rand(2).tolist() == first, state.shape
        (True, (5056,))
    """
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the global generator's state (``torch.set_rng_state``; PyTorch's states load too).

    Args:
        new_state: what ``get_rng_state`` (or ``torch.get_rng_state``) returned.

    Example:
        >>> state = fg.get_rng_state()
        >>> first = fg.randn(3).tolist()
        >>> fg.set_rng_state(state)
        >>> fg.randn(3).tolist() == first
        True
    """
    default_generator.set_state(new_state)


def _size(size: tuple[Any, ...], op: str) -> tuple[int, ...]:
    """PyTorch's sizes: ``rand(2, 3)`` or ``rand((2, 3))``."""
    return _keys.draw_shape(size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size, op, "")


def _source(generator: Generator | None) -> Generator:
    """The generator a draw takes its numbers from (the default one unless given)."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise ArgumentTypeError(f"generator must be an fg.Generator, got {type(generator).__name__} {generator!r}")
    return generator


def _draw(op: str, generator: Generator | None, shape: tuple[int, ...],
          from_engine: Callable[[Any, tuple[int, ...]], Any], from_key: Callable[[Any, tuple[int, ...]], Any],
          device: Any = None) -> Any:
    """One draw of ``shape``: ``from_engine(engine, shape)`` (PyTorch's numbers, a NumPy
    array), or ``from_key(key, shape)`` where the generator has a key; on ``device`` where
    given (the device of the arrays it will meet). Inside ``fg.vmap`` with
    ``randomness="different"`` the engine draws for every member at once, the members' axes
    first (as ``torch.func.vmap`` draws), each handed to its vmap as its batch."""
    source = _source(generator)
    if source.key is not None:
        x = from_key(source.next_key(), shape)
        return x if device is None or x.device is device else x.to(device)
    return _engine_draw(op, source, shape, from_engine, device)


def _engine_draw(op: str, source: Generator, shape: tuple[int, ...],
                 from_engine: Callable[[Any, tuple[int, ...]], Any], device: Any = None) -> Any:
    """``_draw``'s engine half (the engine's numbers moved to ``device`` where given)."""
    sizes, boxes = [], []
    for name, randomness, size, batch in random_state.vmap_draws():
        if randomness == "error":
            raise _vmap_draw_error(name)
        if randomness == "different":
            sizes.append(size)
            boxes.append(batch.box)
    full = (*sizes, *shape)
    if math.prod(full) > _MAX_DRAW:
        raise ArgumentValueError(f"{op}: a draw of shape {full} is {math.prod(full)} values, more than any array "
                                 f"can hold ({_MAX_DRAW})")
    x = ops.asarray(from_engine(source.engine, full), device=device)
    for box in boxes:
        x = box(x)
    return x


_MAX_DRAW = np.iinfo(np.intp).max // 8  # (values: their bytes must fit an address)


def _vmap_draw_error(name: str) -> ArgumentValueError:
    return ArgumentValueError(
        f"fg.vmap({name}): a draw from a random generator (fg.rand, fg.randn, Dropout, ...) inside vmap; "
        "say whether the members draw different numbers or the same: fg.vmap(f, randomness='different') "
        "or randomness='same' (as torch.func.vmap), or draw from explicit keys with fg.random")


def _per_member(key: Any) -> Any:
    """A draw's key inside ``fg.vmap``, as each vmap's ``randomness`` says: ``"error"``
    refuses the draw, ``"same"`` gives every member the same numbers, ``"different"`` gives
    each member its own (the key split once per member), as ``torch.func.vmap`` does."""
    for name, randomness, size, batch in random_state.vmap_draws():
        if batch.owns(key):  # the generator's key already differs per member (the user mapped over keys)
            continue
        if randomness == "error":
            raise _vmap_draw_error(name)
        if randomness == "different":
            key = batch.box(_keys.split(key, size))
    return key


def _finish(x: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    if dtype is not None:
        x = x.astype(as_dtype(dtype))
    if device is not None:
        x = x.to(device)
    return x.requires_grad_() if requires_grad else x


def _float(dtype: Any) -> Any:
    return as_dtype(dtype) if dtype is not None else _dt.default_float


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Any:
    """Uniform values in [0, 1), as ``torch.rand`` draws them after the same seed.

    Args:
        *size: the shape, as integers or one tuple.
        generator: an ``fg.Generator`` (the global one by default).
        dtype: a float dtype (float32 by default).
        device: where the result lives.
        requires_grad: make it a leaf of the tape.

    Returns:
        Floats of ``size``.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.rand(3).tolist()
        [0.49625658988952637, 0.7682217955589294, 0.08847743272781372]
    """
    d = _float(dtype)
    x = _draw("rand", generator, _size(size, "rand"), lambda e, s: e.uniform(0.0, 1.0, s, d.np),
              lambda k, s: _keys.uniform(k, s, d))
    return _finish(x, None, device, requires_grad)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """Standard normal values, as ``torch.randn`` draws them after the same seed; the
    arguments are ``fg.rand``'s.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.randn(3).tolist()   # torch.manual_seed(0); torch.randn(3)
        [1.5409960746765137, -0.293428897857666, -2.1787893772125244]
    """
    d = _float(dtype)
    x = _draw("randn", generator, _size(size, "randn"), lambda e, s: e.normal(0.0, 1.0, s, d.np),
              lambda k, s: _draws.normal(k, s, d))
    return _finish(x, None, device, requires_grad)


def randint(low: int, high: int | None = None, size: Any = (), *, generator: Generator | None = None,
            dtype: Any = None, device: Any = None) -> Any:
    """Integers in ``[low, high)``, as ``torch.randint`` draws them after the same seed.

    Args:
        low: the lowest value (or ``high``, as ``torch.randint(high, size)``).
        high: one more than the highest value.
        size: the shape.
        generator: an ``fg.Generator`` (the global one by default).
        dtype: the result's dtype (int64 by default).
        device: where the result lives.

    Returns:
        Integers of ``size``.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.randint(0, 10, (5,)).tolist()
        [4, 9, 3, 0, 3]
    """
    if isinstance(high, (tuple, list)) and size == ():  # torch.randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = as_int("randint", low, "low", minimum=None), as_int("randint", high, "high", minimum=None)
    if high <= low:
        raise ArgumentValueError(f"randint: high ({high}) must be greater than low ({low})")
    if low < -(1 << 63) or high > 1 << 63:
        raise ArgumentValueError(f"randint: the range [{low}, {high}) must lie in int64's, as PyTorch's does")
    out = _draw("randint", generator, _size((size,), "randint"), lambda e, s: e.randint(low, high, s),
                lambda k, s: _draws.randint(k, s, low, high, int64))
    return _finish(out, dtype, device, False)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None) -> Any:
    """A random permutation of ``range(n)``, as ``torch.randperm`` draws it after the same seed.

    Args:
        n: how many integers.
        generator: an ``fg.Generator`` (the global one by default).
        dtype: the result's dtype (int64 by default).
        device: where the result lives.

    Returns:
        The permuted integers.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.randperm(5).tolist()
        [4, 0, 1, 3, 2]
    """
    n = as_int("randperm", n, "n", minimum=0)

    def from_engine(engine: Any, shape: tuple[int, ...]) -> np.ndarray:
        return np.stack([engine.permutation(n) for _ in range(math.prod(shape[:-1]))]).reshape(shape)

    out = _draw("randperm", generator, (n,), from_engine, lambda k, s: _draws.permutation(k, n))
    return _finish(out, dtype, device, False)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Normal values of mean ``mean`` and standard deviation ``std`` (arrays broadcast; with
    numbers, ``size`` gives the shape), as ``torch.normal``: with numbers, ``normal_(mean,
    std)``; with an array ``mean`` and a number ``std``, ``normal_(0, std)`` plus ``mean``;
    else standard values times ``std`` plus ``mean``.

    Args:
        mean: the mean, a number or an array.
        std: the standard deviation, a number or an array.
        size: the shape, where ``mean`` and ``std`` are both numbers.
        generator: a ``fg.Generator`` (the global one by default).
        dtype: the result's dtype (the default float dtype by default).
        device: where the result lives.
        requires_grad: record operations on it for ``.backward()``.

    Returns:
        An array of ``size``, or of the broadcast shape of ``mean`` and ``std``.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.normal(fg.asarray([0.0, 10.0], dtype=fg.float64), 0.5).round(4).tolist()  # torch's after its seed 0
        [0.7705, 9.8533]
    """
    arrays = [v for v in (mean, std) if isinstance(v, ArrayBase)]
    if size is None:
        if not arrays:
            raise ArgumentValueError("normal: give size when mean and std are numbers")
        shape = ops.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    else:
        shape = _size((size,) if not isinstance(size, (tuple, list)) else (size,), "normal")
    d = as_dtype(dtype) if dtype is not None else \
        arrays[0].dtype if arrays and arrays[0].dtype.kind == "f" else _dt.default_float
    _require("normal", std, lambda v: v >= 0, "std must be at least 0")
    scaled = not isinstance(std, ArrayBase)  # (the engine's normal_ takes a number std itself)
    added = isinstance(mean, ArrayBase) or not scaled  # (else normal_ takes the number mean too)
    center = 0.0 if added else mean
    x = _draw("normal", generator, shape, lambda e, s: e.normal(center, std if scaled else 1.0, s, d.np),
              lambda k, s: _draws.normal(k, s, d) * (std if scaled else 1.0) + center,
              arrays[0].device if arrays else None)
    if not scaled:
        x = x * std
    return _finish(x + mean if added else x, None, device, requires_grad)


def bernoulli(p: Any, *, generator: Generator | None = None) -> Any:
    """0 or 1 with probability ``p`` per element, in ``p``'s dtype (``torch.bernoulli``: a
    uniform in float64 for float64 ``p``, else in float32, below ``p``).

    Args:
        p: the probabilities, in [0, 1] (an array, or values ``asarray`` takes).
        generator: a ``fg.Generator`` (the global one by default).

    Returns:
        An array of ``p``'s shape and dtype.

    Example:
        >>> _ = fg.manual_seed(0)
        >>> fg.bernoulli(fg.asarray([0.2, 0.5, 0.9, 0.5], dtype=fg.float64)).tolist()  # torch's after its seed 0
        [0.0, 0.0, 1.0, 0.0]
    """
    p = p if isinstance(p, ArrayBase) else ops.asarray(p, dtype=_dt.default_float)
    _require("bernoulli", p, lambda v: (v >= 0) & (v <= 1), "p must be in [0, 1]")
    source = _source(generator)
    if source.key is not None:
        return _draws.bernoulli(source.next_key(), p, tuple(p.shape)).astype(p.dtype)
    work = np.float64 if p.dtype == np.float64 else np.float32
    u = _engine_draw("bernoulli", source, tuple(p.shape),
                     lambda e, s: e.unit(math.prod(s), work).astype(work).reshape(s), p.device)
    return (u < p.astype(work)).astype(p.dtype)


def bernoulli_mask(p: float, shape: tuple[int, ...], generator: Generator | None = None) -> Any:
    """``empty(shape).bernoulli_(p)`` as bools (dropout's mask): a float64 uniform below
    ``p``, from the default generator (its key under ``fg.compile``)."""
    return _draw("dropout", generator, shape, lambda e, s: e.bernoulli(p, s), lambda k, s: _draws.bernoulli(k, p, s))


def uniform_draw(count: int, low: float, high: float) -> Any:
    """``count`` float64 values of ``uniform_real_distribution<double>(low, high)`` from the
    default generator's engine, as PyTorch's CPU kernels draw one value at a time."""
    u = default_generator.engine.unit(count, np.float64)
    return u * (float(high) - float(low)) + float(low)


def multinomial(probs: Any, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Any:
    """Indices drawn with weights ``probs`` (one row, or a batch of rows), as
    ``torch.multinomial``: without replacement (or one sample) the largest ``probs / q`` for
    exponential ``q``; with replacement, each uniform's place in the normalized cumulative
    weights.

    Args:
        probs: non-negative weights (they need not sum to 1), one row or a batch of rows.
        num_samples: how many indices a row draws.
        replacement: draw with replacement; without, ``num_samples`` is at most a row's length.
        generator: a ``fg.Generator`` (the global one by default).

    Returns:
        An int64 array of shape ``(num_samples,)``, or ``(rows, num_samples)``.

    Example:
        >>> _ = fg.manual_seed(1)
        >>> fg.multinomial(fg.asarray([0.2, 0.3, 0.5]), 6, replacement=True).tolist()  # torch's after its seed 1
        [0, 1, 1, 0, 2, 0]
    """
    probs = probs if isinstance(probs, ArrayBase) else ops.asarray(probs, dtype=_dt.default_float)
    if probs.ndim not in (1, 2):
        raise ShapeError(f"multinomial: probs must be 1-D or 2-D, got shape {tuple(probs.shape)}")
    n = probs.shape[-1]
    num_samples = as_int("multinomial", num_samples, "num_samples", minimum=1)
    _require("multinomial", probs, lambda v: (v >= 0) & np.isfinite(v), "probs must be finite and at least 0")
    _require("multinomial", probs, lambda v: np.sum(v, axis=-1) > 0, "every row of probs must have a positive sum")
    if not replacement and num_samples > n:
        raise ArgumentValueError(f"multinomial: {num_samples} samples without replacement from {n} categories")
    source = _source(generator)
    if source.key is not None:
        return _multinomial_from_key(probs, num_samples, replacement, source.next_key())
    rows = tuple(probs.shape[:-1])
    if not replacement or num_samples == 1:
        q = _engine_draw("multinomial", source, tuple(probs.shape), lambda e, s: e.exponential(1.0, s, probs.dtype.np),
                         probs.device)
        ranked = probs / q
        if num_samples == 1:
            return ops.argmax(ranked, axis=-1, keepdims=True)
        return ops.argsort(ranked, axis=-1, descending=True, stable=True)[..., :num_samples]
    cumulative = ops.cumsum(probs, axis=-1)
    last = ops.ones((*rows, 1), probs.dtype, device=probs.device)
    cumulative = ops.concatenate([(cumulative / cumulative[..., -1:])[..., :-1], last], axis=-1)
    u = _engine_draw("multinomial", source, (*rows, num_samples),
                     lambda e, s: e.unit(math.prod(s), np.float64).reshape(s), probs.device)
    below = cumulative.astype(_dt.float64)[..., None, :] < u[..., :, None]  # (its first bucket at least u)
    return ops.sum(below.astype(int64), axis=-1)


def _multinomial_from_key(probs: Any, num_samples: int, replacement: bool, key: Any) -> Any:
    """``multinomial`` from a key (under ``fg.compile``): with replacement from the
    categorical distribution, without it by Gumbel top-k."""
    with np.errstate(divide="ignore"):  # a zero weight is a logit of -inf, never drawn
        logits = ops.log(probs / ops.sum(probs, axis=-1, keepdims=True))
    if replacement:
        return _draws.categorical(key, logits[..., None, :], shape=(*probs.shape[:-1], num_samples))
    noisy = logits + _draws.gumbel(key, tuple(probs.shape), logits.dtype)
    return ops.argsort(noisy, axis=-1, descending=True, stable=True)[..., :num_samples]


def _require(op: str, value: Any, holds: Any, what: str) -> None:
    """``ArgumentValueError`` unless ``holds`` is true of every element of ``value`` (a number
    or a concrete array; traced values have none to check, as in PyTorch's compiled code)."""
    if isinstance(value, (int, float)) or value.__class__ is Array:
        values = np.asarray(value._host() if value.__class__ is Array else value)
        if values.size and not np.all(holds(values)):
            raise ArgumentValueError(f"{op}: {what}, got {value!r}")


def rand_like(x: Any, *, generator: Generator | None = None, dtype: Any = None) -> Any:
    """Uniform values in [0, 1) of ``x``'s shape, dtype and device (``torch.rand_like``)."""
    return rand(*x.shape, generator=generator, dtype=dtype or x.dtype, device=x.device)


def randn_like(x: Any, *, generator: Generator | None = None, dtype: Any = None) -> Any:
    """Standard normal values of ``x``'s shape, dtype and device (``torch.randn_like``)."""
    return randn(*x.shape, generator=generator, dtype=dtype or x.dtype, device=x.device)


# The two ``*_like`` draws' reference sections: the same parameters, each its own example
# (torch's values after its seed 0).
for _fn, _shown in ((rand_like, "[0.9701, 0.7078, 0.4594]"), (randn_like, "[1.541, -0.2934, -2.1788]")):
    _fn.__doc__ = sections(
        _fn.__doc__ or "",
        [("x", "the array whose shape, dtype and device the result takes."),
         ("generator", "a ``fg.Generator`` (the global one by default)."), ("dtype", "another dtype for the result.")],
        [">>> _ = fg.manual_seed(0)",
         f">>> fg.{_fn.__name__}(fg.zeros(3, dtype=fg.float64)).round(4).tolist()  # torch's after its seed 0", _shown],
        "A new array like ``x``.")
del _fn, _shown
