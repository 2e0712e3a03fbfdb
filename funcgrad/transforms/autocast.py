"""``fg.autocast``: mixed precision as a user interpreter (``docs/mixed-precision.md``).

Inside the block each primitive whose ``Primitive.autocast`` is ``"lower"`` or ``"float32"`` has its
floating inputs cast (float32, float16 and bfloat16 ones; float64 is never cast) to the
autocast dtype (``"lower"``) or to float32 (``"float32"``) before it runs; the casts are
ordinary ``convert_element_type`` operations, so derivatives flow back through them and
reach float32 parameters in float32, and a compiled function traced inside the block
records them in its program. The settings of the innermost block rule (an inner
``autocast(enabled=False)`` turns casting off).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Any

from .. import dtypes as _dt
from ..array import ArrayBase
from ..errors import ArgumentValueError
from ..primitives import registry
from ..primitives.elementwise import convert_element_type_p
from .core import Interpreter

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "autocast_policy"]

# the innermost block's (enabled, device kind, dtype)
_STATE: contextvars.ContextVar[tuple[bool, str, Any] | None] = contextvars.ContextVar("funcgrad_autocast", default=None)
_CASTABLE = (_dt.float16, _dt.bfloat16, _dt.float32)
_LOW = (_dt.float16, _dt.bfloat16)
_KINDS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}


class autocast(Interpreter):
    """``with fg.autocast("cpu", dtype=fg.bfloat16):`` (also a decorator; PyTorch's
    ``torch.autocast``): products in the low dtype, reductions and exp/log in float32,
    everything else as its inputs are (each primitive's ``autocast`` fact says which).

    Args:
        device_type: ``"cpu"``, or ``"cuda"``/``"gpu"``.
        dtype: the low dtype (``bfloat16``, the default on the CPU, or ``float16``).
        enabled: ``False`` turns it off inside the block.
        cache_enabled: accepted for PyTorch's calls.

    Example:
        >>> x, w = fg.ones((2, 3)), fg.ones((3, 4))
        >>> with fg.autocast("cpu", dtype=fg.bfloat16):
        ...     y = x @ w
        ...     total = fg.exp(y).sum()
        >>> y.dtype, total.dtype
        (bfloat16, float32)
    """

    name = "autocast"

    def __init__(self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True,
                 cache_enabled: Any = None) -> None:
        super().__init__()
        if device_type not in _KINDS:
            raise ArgumentValueError(f"autocast: device_type must be 'cpu' or 'gpu' ('cuda'), got {device_type!r}")
        self.device_kind = _KINDS[device_type]
        low = _dt.as_dtype(dtype, op="autocast") if dtype is not None else (
            _dt.bfloat16 if self.device_kind == "cpu" else _dt.float16)
        if low not in (_dt.bfloat16, _dt.float16):
            raise ArgumentValueError(f"autocast: dtype must be fg.bfloat16 or fg.float16, got {low}")
        self.fast_dtype, self.enabled = low, bool(enabled)
        self._tokens: list[Any] = []

    def __call__(self, fn: Any) -> Any:
        """As a decorator: ``fn`` runs inside this autocast block."""
        settings = (self.device_kind, self.fast_dtype, self.enabled)

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            kind, low, on = settings
            with autocast("cpu" if kind == "cpu" else "gpu", low, on):
                return fn(*args, **kwargs)

        return wrapped

    def __enter__(self) -> autocast:
        self._tokens.append(_STATE.set((self.enabled, self.device_kind, self.fast_dtype)))
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _STATE.reset(self._tokens.pop())

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Cast the floating inputs as the policy says, then run ``prim`` below."""
        policy = prim.autocast
        state = _STATE.get()
        if state is None or not state[0] or policy is None:
            return super().process(prim, args, params)
        if policy == "widen":  # elementwise: computed in float32, rounded back to the inputs' dtype
            return self._widened(prim, args, params, state[1])
        if policy == "float32":
            return super().process(prim, tuple(self._cast(a, _dt.float32, state[1]) for a in args), params)
        # "lower": inputs rounded to the low dtype, the product accumulated in float32 and
        # rounded to the low dtype, as bfloat16/float16 matrix units compute (NumPy has no
        # fast low-precision products; float32 holds every bfloat16 and float16 exactly)
        low = state[2]
        if not any(isinstance(a, ArrayBase) and a.dtype in _CASTABLE for a in args):
            return super().process(prim, args, params)
        rounded = tuple(self._cast(self._cast(a, low, state[1]), _dt.float32, state[1]) for a in args)
        return self._cast(super().process(prim, rounded, params), low, state[1])

    def _widened(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any], kind: str) -> Any:
        """An elementwise primitive on low-precision arrays, computed in float32 and rounded
        back: the value NumPy's bfloat16 and float16 loops give (they compute in float32
        too), at the speed of its float32 SIMD loops instead of ml_dtypes' scalar ones."""
        low = next((a.dtype for a in args if isinstance(a, ArrayBase) and a.dtype in _LOW), None)
        if low is None:
            return super().process(prim, args, params)
        out = super().process(prim, tuple(self._cast(a, _dt.float32, kind) for a in args), params)
        return self._cast(out, low, kind) if out.dtype is _dt.float32 else out

    def _cast(self, a: Any, target: Any, kind: str) -> Any:
        if not isinstance(a, ArrayBase) or a.dtype is target or a.dtype not in _CASTABLE:
            return a
        if getattr(a.device, "kind", "cpu") != kind and not (kind == "gpu" and a.device.kind != "cpu"):
            return a
        return super().process(convert_element_type_p, (a,), {"new_dtype": target})


def autocast_policy() -> dict[str, str]:
    """Each primitive ``autocast`` casts, by name: ``"lower"`` or ``"float32"`` (its
    ``Primitive.autocast``; elementwise ones, ``"widen"``, run as their inputs are)."""
    return {p.name: p.autocast for p in registry() if p.autocast in ("lower", "float32")}


def autocast_state() -> tuple[str, Any] | None:
    """The innermost enabled ``autocast`` block's (device kind, dtype), or ``None``: what a
    compiled function traced now must reproduce (its cache keys on it)."""
    state = _STATE.get()
    return (state[1], state[2]) if state is not None and state[0] else None


def autocast_like(state: tuple[str, Any] | None) -> Any:
    """An ``autocast`` block with the settings ``autocast_state`` returned (none: a no-op block)."""
    if state is None:
        return contextlib.nullcontext()
    return autocast("cpu" if state[0] == "cpu" else "gpu", state[1])


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    """Whether an ``autocast`` block for ``device_type`` casts now.

    Example:
        >>> with fg.autocast("cpu"):
        ...     inside = fg.amp.is_autocast_enabled("cpu")
        >>> inside, fg.amp.is_autocast_enabled("cpu")
        (True, False)
    """
    state = _STATE.get()
    return bool(state is not None and state[0] and state[1] == _KINDS.get(device_type, device_type))


def get_autocast_dtype(device_type: str = "cpu") -> Any:
    """The low dtype the innermost ``autocast`` block for ``device_type`` uses (bfloat16 on the CPU by default).

    Example:
        >>> with fg.autocast("cpu"):
        ...     fg.amp.get_autocast_dtype("cpu")
        bfloat16
    """
    state = _STATE.get()
    if state is not None and state[1] == _KINDS.get(device_type, device_type):
        return state[2]
    return _dt.bfloat16 if _KINDS.get(device_type, device_type) == "cpu" else _dt.float16
