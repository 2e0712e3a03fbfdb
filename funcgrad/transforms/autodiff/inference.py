"""``fg.inference_mode()``: ``no_grad`` for code that will never be differentiated, whose
results say so (PyTorch's inference mode).

It is a user interpreter (``docs/interpreters.md``): inside its block nothing is recorded,
and every array it makes is an *inference array* (``x.is_inference()``), whose autograd
metadata is the marker ``InferenceMeta``. Such an array refuses to enter the tape later:
an operation that would record it raises, as PyTorch's does, and so does
``requires_grad_()``. A copy (``x.clone()``) is an ordinary array. Outside the block the
cost is nothing: no check runs on any path but the tape's rare one.
"""

from __future__ import annotations

import functools
from typing import Any

from ...array import Array
from ..core import Interpreter
from ..grad_mode import no_grad
from .tape import AutogradMeta

__all__ = ["inference_mode", "InferenceMeta"]


class InferenceMeta(AutogradMeta):
    """The autograd metadata of an array made in inference mode: it never requires grad."""

    __slots__ = ()
    inference = True


_MARK = InferenceMeta(False)  # (shared: it never changes, requires_grad_ refuses it)


class inference_mode(Interpreter):
    """``with fg.inference_mode():`` (or ``@fg.inference_mode()``; ``torch.inference_mode``):
    no recording, and the arrays made inside can never be recorded by the tape later;
    ``mode=False`` does nothing (PyTorch's switch).

    Example:
        >>> w = fg.ones(3, requires_grad=True)
        >>> with fg.inference_mode():
        ...     y = w * 2.0
        >>> y.requires_grad, y.is_inference()
        (False, True)
    """

    name = "inference_mode"

    def __init__(self, mode: Any = True) -> None:
        super().__init__()
        self._fn = mode if callable(mode) else None  # (@fg.inference_mode without parentheses)
        self.mode = True if self._fn is not None else bool(mode)
        self._no_grad: list[no_grad] = []
        if self._fn is not None:
            functools.update_wrapper(self, self._fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:  # @fg.inference_mode() used as a decorator factory
            (fn,) = args
            return type(self)(fn)
        with type(self)():
            return self._fn(*args, **kwargs)

    def __enter__(self) -> inference_mode:
        if self.mode:
            guard = no_grad()
            guard.__enter__()
            self._no_grad.append(guard)
            super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.mode:
            super().__exit__(*exc)
            self._no_grad.pop().__exit__(*exc)

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Run ``prim`` below, then mark its array results as inference arrays."""
        out = super().process(prim, args, params)
        for o in (out if isinstance(out, tuple) else (out,)):
            if o.__class__ is Array and o._autograd is None:
                o._autograd = _MARK
        return out
