"""The typed errors funcgrad raises.

Each subclasses the built-in exception a Python user would already catch, so
``except ValueError`` keeps working, while ``except fg.ShapeError`` lets callers
tell a broadcasting mistake from any other bad value.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "ConcretizationError",
    "DTypeError",
    "DeviceMismatchError",
    "DistributedError",
    "DistributedTimeoutError",
    "DonatedArrayError",
    "FormatError",
    "FuncgradError",
    "GraphFreedError",
    "LinAlgError",
    "RegistryError",
    "RetraceError",
    "ShapeError",
    "TracerLeakError",
    "UnknownAttributeError",
    "ViewError",
    "WriteGuardError",
    "named_errors",
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


class RetraceError(FuncgradError, RuntimeError):
    """A compiled function met a new signature while ``fg.config.no_retrace`` is set."""


class UnknownAttributeError(FuncgradError, AttributeError):
    """An attribute funcgrad's object does not have, with what it does have (``hasattr`` is
    ``False``, as for any ``AttributeError``)."""


class WriteGuardError(FuncgradError, RuntimeError):
    """A compiled or lowered program wrote into memory it does not own: an input that was not
    donated, or a constant (raised only while ``fg.config.write_guard`` is on)."""


class DonatedArrayError(FuncgradError, RuntimeError):
    """An array was used after it was donated to a compiled call (``donate_argnums``)."""


class GraphFreedError(FuncgradError, RuntimeError):
    """``backward`` walked a graph whose saved values were already freed."""


class DistributedError(FuncgradError, RuntimeError):
    """A collective that cannot run as asked: no process group, a rank that left, arguments
    the ranks disagree on, or a result thrown away where PyTorch would have written in place."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective waited longer than the group's ``timeout`` for the other ranks (one of
    them failed, or is stuck before the same call)."""


class FormatError(FuncgradError, ValueError):
    """A file ``fg.load`` refuses: not a funcgrad file (a pickle or torch file, which funcgrad
    never loads), or a malformed or hostile one."""


class LinAlgError(FuncgradError, ValueError):
    """A linear-algebra operation whose input has no answer: a singular matrix for ``solve``
    or ``inv``, one that is not positive definite for ``cholesky``. (A ``ValueError``, as
    NumPy's ``LinAlgError``.)"""


class ArgumentTypeError(FuncgradError, TypeError):
    """An argument of the wrong type: a float or string where a size, an axis or a count
    goes, a function where a module goes."""


class ArgumentValueError(FuncgradError, ValueError):
    """An argument whose value is out of range: a negative size or count, a zero stride, a
    negative learning rate, an empty list where one array is needed."""


def named_errors(name: str, fn: Any, *, array_input: bool = False) -> Any:
    """``fn``, whose unexpected built-in errors (a NumPy ``TypeError`` for a float size, an
    ``AttributeError`` for a number where an array goes) become typed funcgrad errors that
    name the operation; funcgrad's own errors pass unchanged. Public functions are wrapped
    once, at import, so a bad argument anywhere in them gets a readable error. With
    ``array_input``, the first argument must be an array (as PyTorch's functions require a
    Tensor): a number or a list is refused up front."""

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if array_input and args and not hasattr(args[0], "__array_namespace__"):
            raise ArgumentTypeError(f"{name}: the input must be an array, got {type(args[0]).__name__} "
                                    f"({str(args[0])[:40]}); convert it with fg.asarray")
        try:
            return fn(*args, **kwargs)
        except FuncgradError:
            raise
        except (TypeError, AttributeError) as exc:
            raise ArgumentTypeError(_named(name, exc)) from exc
        except IndexError as exc:
            if isinstance(exc, ValueError):  # NumPy's AxisError: an axis out of range
                raise ShapeError(_named(name, exc)) from exc
            raise IndexError(_named(name, exc)) from exc
        except (ValueError, ArithmeticError, KeyError) as exc:
            raise ArgumentValueError(_named(name, exc)) from exc

    return checked


def _named(name: str, exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text if text.startswith(f"{name}:") or text.startswith(f"{name}(") else f"{name}: {text}"


class RegistryError(FuncgradError, RuntimeError):
    """A primitive's fact names a primitive or a field that does not exist (raised at import)."""


class DeviceUnavailableError(FuncgradError, RuntimeError):
    """The requested device cannot be used here (no CuPy, or no GPU)."""
