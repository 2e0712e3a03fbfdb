"""``fg.nn.init``: PyTorch's initialisers. Each re-points the parameter (under no_grad)
and returns it; values come from the global generator (``fg.manual_seed``)."""

from __future__ import annotations

import math
from typing import Any

from ..random_state import generator

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def _set(param: Any, values: Any) -> Any:
    from ..ops import asarray

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
    return _set(param, generator().uniform(a, b, tuple(param.shape)))


def normal_(param: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    return _set(param, generator().normal(mean, std, tuple(param.shape)))


def constant_(param: Any, val: float) -> Any:
    import numpy as np

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


def kaiming_uniform_(param: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    fan_in, fan_out = _fans(param)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(param, -bound, bound)


def kaiming_normal_(param: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    fan_in, fan_out = _fans(param)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(param, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
