"""Checks the layers share (PyTorch's rules where NumPy's would differ)."""

from __future__ import annotations

from typing import Any

from ..array import Array
from ..errors import DTypeError
from ..transforms.autocast import is_autocast_enabled


def same_dtype(op: str, x: Any, weight: Any, bias: Any = None) -> Any:
    """PyTorch's rule for layers: the input has the weight's dtype. NumPy's promotion would
    turn a float32 model fed float64 (or integer) data into a float64 computation, at twice
    the cost, without a word; PyTorch refuses, and so does funcgrad, naming both fixes.
    Inside ``fg.autocast`` low-precision activations meet float32 weights by design: the
    input is then cast to the weight's dtype (and autocast casts the product down).
    Returns the input."""
    dtype = x.dtype
    if (weight is None or weight.dtype is dtype) and (bias is None or bias.dtype is dtype):  # the common case, first
        return x
    if weight is not None and is_autocast_enabled(x.device.kind if x.device.kind == "cpu" else "gpu") and \
            dtype.kind == "f" and weight.dtype.kind == "f":
        return x.astype(weight.dtype)
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and getattr(p, "dtype", dtype) != dtype:
            raise DTypeError(f"{op}: the input is {dtype} but the {name} is {p.dtype}; cast the input "
                             f"(x.astype(fg.{p.dtype})) or the module (model.to(fg.{dtype}))")
    return x


def outside(op: str, indices: Any, size: int, what: str, of: str, allowed: int | None = None) -> Any:
    """Checks that integer ``indices`` lie in ``[0, size)`` (or equal ``allowed``), as
    PyTorch's indexing losses and layers require: a negative index is an error, not a
    count from the end. Concrete indices on the CPU are read there (for free), and a bad
    one raises ``IndexError``; the result is then ``None``. Elsewhere (traced, or on a
    GPU, where reading them would wait for a device-to-host copy every step) it returns
    the boolean mask of the bad positions, for the caller to make NaN instead."""
    if isinstance(indices, Array) and indices.device.kind == "cpu":
        host = indices._host()
        wrong = (host < 0) | (host >= size)
        if allowed is not None:
            wrong &= host != allowed
        if wrong.any():
            extra = f" (and is not ignore_index={allowed})" if allowed is not None else ""
            raise IndexError(f"{op}: {what} {host[wrong][0]} is out of range for {size} {of}{extra}")
        return None
    wrong = (indices < 0) | (indices >= size)
    return wrong if allowed is None else wrong & (indices != allowed)
