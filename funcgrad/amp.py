"""``fg.amp``: automatic mixed precision, PyTorch's ``torch.amp`` (``docs/mixed-precision.md``).

``autocast`` runs products in bfloat16 or float16 (``transforms.autocast``). ``GradScaler``
keeps float16 gradients from underflowing: the loss is multiplied by a large scale before
``backward``, the gradients are divided by it before the step, a step whose gradients hold
an inf or NaN is skipped, and the scale shrinks after such a step and grows after
``growth_interval`` clean ones. bfloat16 has float32's exponent range and needs no scaler.
"""

from __future__ import annotations

import math
from typing import Any

from . import ops
from .errors import ArgumentValueError
from .transforms.autocast import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]


class GradScaler:
    """PyTorch's ``torch.amp.GradScaler``: ``scaler.scale(loss).backward()``,
    ``scaler.step(optimizer)``, ``scaler.update()``, with PyTorch's defaults.

    Example:
        >>> w = fg.nn.Parameter(fg.ones(2))
        >>> opt = fg.optim.SGD([w], lr=0.1)
        >>> scaler = fg.amp.GradScaler()
        >>> scaler.scale((w * w).sum()).backward()
        >>> w.grad.tolist()  # (scaled by 2 ** 16)
        [131072.0, 131072.0]
        >>> scaler.step(opt)  # (unscaled first)
        >>> scaler.update()
        >>> w.tolist()
        [0.800000011920929, 0.800000011920929]
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ArgumentValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ArgumentValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if growth_interval < 1:
            raise ArgumentValueError(f"GradScaler: growth_interval must be a positive int, got {growth_interval}")
        self.device, self._enabled = device, bool(enabled)
        self._scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}  # "unscaled", "found_inf", "stepped"

    def is_enabled(self) -> bool:
        """Whether the scaler scales (a disabled one passes everything through)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with inf or NaN gradients."""
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row make the scale grow."""
        return self._growth_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (an array, or nested lists and tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False,
                                                              "stepped": False})

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, once per step (before
        gradient clipping, say), and note whether any holds an inf or NaN."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stepped"]:
            raise RuntimeError("unscale_() is being called after step().")
        inv, found = 1.0 / self._scale, False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad * inv
                found = found or not bool(ops.all(ops.isfinite(g)))
                p.grad = g.astype(p.grad.dtype)
        state.update(unscaled=True, found_inf=found)

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(...)`` unless the (unscaled) gradients hold an inf or NaN; returns
        what the step returns, or ``None`` when it was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if state["stepped"]:
            raise RuntimeError("step() has already been called since the last update().")
        if not state["unscaled"]:
            self.unscale_(optimizer)
        state["stepped"] = True
        return None if state["found_inf"] else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Shrink the scale after a step with inf or NaN gradients, grow it after
        ``growth_interval`` clean ones (or set ``new_scale``); start the next step."""
        if not self._enabled:
            return
        if new_scale is None and not self._per_optimizer:
            raise RuntimeError("No inf checks were recorded prior to update(): call scaler.step(optimizer) first.")
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(s["found_inf"] for s in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._per_optimizer:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                self._scale = grown if math.isfinite(grown) else self._scale
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (PyTorch's too)."""
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
