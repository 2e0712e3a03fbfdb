"""Checks the layers share (PyTorch's rules where NumPy's would differ)."""

from __future__ import annotations

from typing import Any

from ..errors import DTypeError


def same_dtype(op: str, x: Any, weight: Any, bias: Any = None) -> None:
    """PyTorch's rule for layers: the input has the weight's dtype. NumPy's promotion would
    turn a float32 model fed float64 (or integer) data into a float64 computation, at twice
    the cost, without a word; PyTorch refuses, and so does funcgrad, naming both fixes."""
    dtype = x.dtype
    if weight.dtype is dtype and (bias is None or bias.dtype is dtype):  # the common case, first: layers are hot
        return
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and getattr(p, "dtype", dtype) != dtype:
            raise DTypeError(f"{op}: the input is {dtype} but the {name} is {p.dtype}; cast the input "
                             f"(x.astype(fg.{p.dtype})) or the module (model.to(fg.{dtype}))")
