"""``fg.debug.print`` and ``fg.debug.callback``: Python that runs when the program runs.

Inside ``fg.compile`` (or any trace) a plain ``print`` runs once, while tracing, and sees
abstract values. ``fg.debug.callback(fn, *args)`` instead binds a primitive whose
evaluation calls ``fn`` with the concrete arrays, every time the program runs, eagerly or
compiled. It has no result and no derivative; the passes keep it (``effectful``) even
though no output reads it. Under a derivative transform it sees the primal values.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from ..array import ArrayBase
from ..errors import ArgumentTypeError
from ..primitives.batching import to_front
from ..primitives.core import Primitive, bind

__all__ = ["callback", "print", "debug_callback_p"]


def _impl(*args: Any, fn: Callable[..., Any]) -> tuple[()]:
    fn(*args)
    return ()


debug_callback_p = Primitive("debug_callback", lambda *avals, fn: (), impl=_impl, multiple_results=True,
                             differentiable=False, effectful=True)
# under vmap the callback sees the whole batch, batch axis first (as jax.debug.callback does)
debug_callback_p.batch = lambda args, dims, *, fn: (bind(debug_callback_p, *map(to_front, args, dims), fn=fn), ())


def callback(fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn(*args)`` with concrete values whenever the surrounding program runs.

    Example:
        >>> seen = []
        >>> f = fg.compile(lambda x: (fg.debug.callback(lambda v: seen.append(v.tolist()), x), x + 1.0)[1])
        >>> f(fg.asarray([1.0])).tolist(), seen
        ([2.0], [[1.0]])
    """
    if not callable(fn):
        raise ArgumentTypeError(f"fg.debug.callback: fn must be callable, got {type(fn).__name__} {fn!r}")
    if any(isinstance(a, ArrayBase) for a in args):
        bind(debug_callback_p, *args, fn=fn)
    else:  # nothing traced: nothing to wait for
        fn(*args)


def print(fmt: str, *args: Any) -> None:  # noqa: A001 - fg.debug.print, as jax.debug.print
    """``print(fmt.format(*args))`` with the arrays' values when the program runs.

    Example:
        >>> f = fg.compile(lambda x: (fg.debug.print("x = {}", x), x * 2.0)[1])
        >>> f(fg.asarray([1.0, 2.0])).tolist()
        x = [1. 2.]
        [2.0, 4.0]
    """
    if not isinstance(fmt, str):
        raise ArgumentTypeError(f"fg.debug.print: fmt must be a format string, got {type(fmt).__name__} {fmt!r}; "
                                "write fg.debug.print('{}', x)")
    callback(lambda *values: builtins.print(fmt.format(*values)), *args)
