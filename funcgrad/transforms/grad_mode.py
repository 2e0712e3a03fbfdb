"""Grad modes, all in one place: ``no_grad``, ``enable_grad`` and the two switches every
recorder reads (``fg.inference_mode`` is ``no_grad`` plus marking its results: ``autodiff/inference.py``).

* ``NO_GRAD_SCOPE``: where the innermost ``no_grad`` block started. ``no_grad`` records the
  interpreter that was current then: derivative interpreters active then see what is
  computed inside as constants, and those started inside still differentiate.
* ``TAPE_OFF``: the tape records nothing. It is set inside ``no_grad``, inside a rule's own
  forward computation (``autograd.Function``, the tape's ``enter_below``), and in a
  backward pass without ``create_graph``.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any

from ..primitives.core import current_interpreter

__all__ = ["GradMode", "NO_GRAD_SCOPE", "TAPE_OFF", "no_grad", "enable_grad", "is_grad_enabled", "no_grad_active"]

NO_GRAD_SCOPE: contextvars.ContextVar[Any] = contextvars.ContextVar("funcgrad_no_grad", default=None)
_EAGER = object()  # no_grad entered with no interpreter active
TAPE_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_tape_off", default=False)


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
    """Whether the tape records now (not inside ``no_grad`` or a rule's own computation),
    as ``torch.is_grad_enabled``.

    Returns:
        A Python bool.

    Example:
        >>> with fg.no_grad():
        ...     inside = fg.is_grad_enabled()
        >>> fg.is_grad_enabled(), inside
        (True, False)
    """
    return not TAPE_OFF.get() and NO_GRAD_SCOPE.get() is None


def no_grad_active(interp: Any) -> bool:
    """Whether ``interp`` runs under a ``no_grad`` block that started inside it."""
    entry = NO_GRAD_SCOPE.get()
    if entry is None or entry is _EAGER:
        return False
    return bool(entry.encloses(interp))


class no_grad(GradMode):
    """What is computed inside is a constant to every derivative taken around it (PyTorch's
    ``torch.no_grad``): the tape records nothing, and ``fg.grad`` of a function that uses
    the block sees its results as constants. Derivatives taken entirely inside still work.

    Use it as ``with fg.no_grad():``, as a decorator (``@fg.no_grad()``), or as
    ``fg.no_grad(f)``.

    Example:
        >>> x = fg.ones(3, requires_grad=True)
        >>> with fg.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self) -> no_grad:
        entry = current_interpreter.get()
        self._tokens.append((NO_GRAD_SCOPE.set(entry if entry is not None else _EAGER), TAPE_OFF.set(True)))
        return self

    def __exit__(self, *exc: Any) -> None:
        scope, off = self._tokens.pop()
        TAPE_OFF.reset(off)
        NO_GRAD_SCOPE.reset(scope)


class enable_grad(GradMode):
    """Derivatives are taken again inside a ``no_grad`` block (PyTorch's
    ``torch.enable_grad``); also a decorator.

    Example:
        >>> x = fg.ones(3, requires_grad=True)
        >>> with fg.no_grad():
        ...     with fg.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    def __enter__(self) -> enable_grad:
        self._tokens.append((NO_GRAD_SCOPE.set(None), TAPE_OFF.set(False)))
        return self

    def __exit__(self, *exc: Any) -> None:
        scope, off = self._tokens.pop()
        TAPE_OFF.reset(off)
        NO_GRAD_SCOPE.reset(scope)
