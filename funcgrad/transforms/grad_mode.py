"""Grad modes: ``no_grad``'s scope and the tape's off switch, which every recorder reads.

``no_grad`` records the interpreter that was current when it started: derivative
interpreters active then see what is computed inside as constants, and those started
inside still differentiate. The tape is off inside ``no_grad``, inside a rule's own forward
computation, and in a backward pass without ``create_graph``.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any

__all__ = ["GradMode", "TAPE_OFF", "is_grad_enabled", "no_grad_active", "no_grad_scope"]

_NO_GRAD: contextvars.ContextVar[Any] = contextvars.ContextVar("funcgrad_no_grad", default=None)
_EAGER = object()  # no_grad entered with no interpreter active


def no_grad_scope() -> Any:
    return _NO_GRAD


# The tape is off inside a rule's own forward computation and in a backward pass without
# create_graph; no_grad turns it off too. ``is_grad_enabled`` says whether it records now.
TAPE_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_tape_off", default=False)
_NEVER_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_vjp_off", default=False)


class GradMode:
    """A context manager that is also a decorator, with or without parentheses, on functions
    and methods alike (``no_grad``, ``enable_grad``): subclasses define the scope's
    ``__enter__`` and ``__exit__``."""

    def __init__(self, fn: Any = None) -> None:
        self._fn = fn
        self._tokens: list[Any] = []
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:  # @fg.no_grad() used as a decorator factory
            (fn,) = args
            return type(self)(fn)
        with type(self)():  # type: ignore[attr-defined]  # (its subclasses are context managers)
            return self._fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """As a decorator on a method: bound to the instance, as a function would be."""
        return self if obj is None else functools.partial(self.__call__, obj)


def is_grad_enabled() -> bool:
    """Whether the tape records now (not inside ``no_grad`` or a rule's own computation)."""
    return not TAPE_OFF.get() and _NO_GRAD.get() is None


def no_grad_active(interp: Any) -> bool:
    """Whether ``interp`` runs under a ``no_grad`` block that started inside it."""
    entry = _NO_GRAD.get()
    if entry is None or entry is _EAGER:
        return False
    return bool(entry.encloses(interp))
