"""The typed errors funcgrad raises.

Each subclasses the built-in exception a Python user would already catch, so
``except ValueError`` keeps working, while ``except fg.ShapeError`` lets callers
tell a broadcasting mistake from any other bad value.
"""

from __future__ import annotations

__all__ = [
    "ConcretizationError",
    "DTypeError",
    "DeviceMismatchError",
    "FormatError",
    "FuncgradError",
    "GraphFreedError",
    "ShapeError",
    "TracerLeakError",
    "ViewError",
]


class FuncgradError(Exception):
    """Base class of every error funcgrad raises on purpose."""


class ShapeError(FuncgradError, ValueError):
    """Shapes that do not fit the operation (broadcasting, reshape size, bad axis)."""


class ViewError(FuncgradError, ValueError):
    """A view was requested where the strides make one impossible."""


class DeviceMismatchError(FuncgradError, ValueError):
    """Arrays on different devices met in one operation; nothing moves implicitly."""


class DTypeError(FuncgradError, TypeError):
    """A dtype the operation does not accept (or one funcgrad does not support)."""


class ConcretizationError(FuncgradError, TypeError):
    """A Python value (bool, int, float) was asked of an abstract, traced array."""


class TracerLeakError(FuncgradError, RuntimeError):
    """A tracer was used after the transform that created it had finished."""


class GraphFreedError(FuncgradError, RuntimeError):
    """``backward`` walked a graph whose saved values were already freed."""


class FormatError(FuncgradError, ValueError):
    """A file ``fg.load`` refuses: not a funcgrad file (a pickle or torch file, which funcgrad
    never loads), or a malformed or hostile one."""
