"""``fg.nn.init``: PyTorch's initialisers. Each re-points the parameter (under no_grad)
and returns it; values come from the global generator (``fg.manual_seed``), which is
PyTorch's CPU generator: for the same seed, the same draws in the same order."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..backends.random_state import generator
from ..ops import asarray

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "dirac_", "orthogonal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def _set(param: Any, values: Any) -> Any:
    new = asarray(values.astype(param.dtype.np), device=param.device)
    if hasattr(param, "_assign"):
        param._assign(new)
        return param
    raise TypeError("nn.init functions update Parameters in place; got a plain (immutable) array")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(param: Any) -> tuple[int, int]:
    shape = tuple(param.shape)
    if len(shape) < 2:
        raise ValueError("fan in and fan out need at least 2 dimensions")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


def uniform_(param: Any, a: float = 0.0, b: float = 1.0) -> Any:
    """Values uniform in [a, b): PyTorch's, bit for bit, for the same seed."""
    return _set(param, generator().uniform(a, b, tuple(param.shape), param.dtype.np))


def normal_(param: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    """Normal(mean, std) values: PyTorch's for the same seed (float32 arrays of 16 or more
    elements within a few ulp: PyTorch's own vary with the CPU's vector units)."""
    return _set(param, generator().normal(mean, std, tuple(param.shape), param.dtype.np))


def constant_(param: Any, val: float) -> Any:
    return _set(param, np.full(tuple(param.shape), val))


def zeros_(param: Any) -> Any:
    return constant_(param, 0.0)


def ones_(param: Any) -> Any:
    return constant_(param, 1.0)


def xavier_uniform_(param: Any, gain: float = 1.0) -> Any:
    fan_in, fan_out = _fans(param)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(param, -bound, bound)


def xavier_normal_(param: Any, gain: float = 1.0) -> Any:
    fan_in, fan_out = _fans(param)
    return normal_(param, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _fan(param: Any, mode: str, op: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(param)
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(param: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    if param.size == 0:  # nothing to draw (PyTorch: a no-op), and no fan to divide by
        return param
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(param, mode, "kaiming_uniform_"))
    return uniform_(param, -bound, bound)


def kaiming_normal_(param: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    if param.size == 0:
        return param
    return normal_(param, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(param, mode, "kaiming_normal_")))


def trunc_normal_(param: Any, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Any:
    """Normal(mean, std) values cut to [a, b] (absolute bounds, not in units of std), drawn
    as PyTorch draws them, so the same seed gives PyTorch's values. Where [a, b] holds more
    than 0.3 of the distribution: normal values, the whole array drawn again and the ones
    outside [a, b] replaced, until none is. Elsewhere: uniform candidates in [a, b], each
    kept where the log of a uniform lies below its log density relative to the peak, the
    rejected ones drawn again (candidates, then acceptance uniforms, whole arrays each
    round). Each step rounds in the parameter's dtype, as PyTorch's in-place operations do."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    shape, dtype = tuple(param.shape), np.dtype(param.dtype.np)
    if math.prod(shape) == 0:
        return param
    rng = generator()
    work = np.dtype(np.float64 if dtype == np.float64 else np.float32)  # (16-bit steps: float32, rounded back)

    def cdf(z: float) -> float:
        return (1.0 + math.erf(z / math.sqrt(2.0))) / 2.0

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = float(np.asarray(a, dtype)), float(np.asarray(b, dtype))
        values = rng.normal(mean, std, shape, dtype)
        outside = (values < lo) | (values > hi)
        while outside.any():
            values = np.where(outside, rng.normal(mean, std, shape, dtype), values)
            outside = (values < lo) | (values > hi)
        return _set(param, values)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def step(v: np.ndarray, op: Any, c: float) -> np.ndarray:  # (one in-place step of PyTorch's)
        return op(v.astype(work), work.type(c)).astype(dtype)

    def log_density(v: np.ndarray) -> np.ndarray:
        z = step(step(v, np.subtract, mean), np.divide, std)
        square = (z.astype(work) * z).astype(dtype)
        return step(step(square, np.multiply, -0.5), np.subtract, log_peak)

    def rejected(bound: np.ndarray) -> np.ndarray:
        u = rng.uniform(0.0, 1.0, shape, dtype)
        with np.errstate(divide="ignore"):  # (16-bit: the float32 log correctly rounded, as PyTorch's there)
            log = np.log(u.astype(np.float64 if dtype.itemsize == 2 else work)).astype(work)
        return log.astype(dtype) > bound

    values = rng.uniform(a, b, shape, dtype)
    pending = rejected(log_density(values))
    while pending.any():
        candidates = rng.uniform(a, b, shape, dtype)
        values = np.where(pending, candidates, values)
        pending = np.where(pending, rejected(log_density(candidates)), pending)
    return _set(param, values)


def eye_(param: Any) -> Any:
    """The identity matrix (2-D parameters)."""
    if param.ndim != 2:
        raise ValueError(f"eye_: needs a 2-D parameter, got shape {tuple(param.shape)}")
    return _set(param, np.eye(*param.shape))


def dirac_(param: Any, groups: int = 1) -> Any:
    """The identity of a convolution (3-5-D weights): each output channel of a group
    passes on the input channel of its number, unchanged, through the kernel's centre."""
    shape = tuple(param.shape)
    if not 3 <= len(shape) <= 5 or shape[0] % groups:
        raise ValueError(f"dirac_: needs a 3-5-D weight whose first dimension divides into {groups} groups, "
                         f"got shape {shape}")
    out_per_group = shape[0] // groups
    values = np.zeros(shape)
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1.0
    return _set(param, values)


def orthogonal_(param: Any, gain: float = 1.0) -> Any:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one, as PyTorch:
    the parameter flattened to (rows, rest) has orthonormal rows or columns, times ``gain``."""
    if param.ndim < 2:
        raise ValueError(f"orthogonal_: needs at least 2 dimensions, got shape {tuple(param.shape)}")
    rows = param.shape[0]
    cols = param.size // rows
    flat = generator().normal(0.0, 1.0, (rows, cols), param.dtype.np).astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))  # a unique decomposition: Haar-distributed q
    if rows < cols:
        q = q.T
    return _set(param, gain * q.reshape(tuple(param.shape)))


def sparse_(param: Any, sparsity: float, std: float = 0.01) -> Any:
    """A 2-D parameter drawn from N(0, std), then in each column ``ceil(sparsity * rows)``
    entries, at random, set to zero (Martens 2010, as PyTorch's)."""
    if param.ndim != 2:
        raise ValueError(f"sparse_: only 2-D parameters, got shape {tuple(param.shape)}")
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"sparse_: sparsity must lie in [0, 1], got {sparsity}")
    rows, cols = param.shape
    rng = generator()
    values = rng.normal(0.0, std, (rows, cols), param.dtype.np)
    zeros = int(math.ceil(sparsity * rows))
    for c in range(cols):
        values[rng.permutation(rows)[:zeros], c] = 0.0
    return _set(param, values)



def _deprecated(method: Any) -> Any:
    """PyTorch's old names without the trailing underscore: they still work, with its FutureWarning."""
    old, new = method.__name__[:-1], method.__name__

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning, stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = old
    deprecated_init.__doc__ = f"Deprecated: ``nn.init.{new}`` (PyTorch's old name, kept with its warning)."
    return deprecated_init


uniform, normal, constant, eye, dirac = (_deprecated(m) for m in (uniform_, normal_, constant_, eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)
