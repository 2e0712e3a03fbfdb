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
    """Base class of every error funcgrad raises on purpose.

    Example:
        >>> try:
        ...     fg.ones((2, 3)) + fg.ones((4,))
        ... except fg.FuncgradError as e:
        ...     print(type(e).__name__, isinstance(e, ValueError))
        ShapeError True
    """


class ShapeError(FuncgradError, ValueError):
    """Shapes that do not fit the operation (broadcasting, reshape size, bad axis).

    Example:
        >>> try:
        ...     fg.ones((2, 3)) + fg.ones((4,))
        ... except fg.ShapeError as e:
        ...     print(e)
        add: shapes (2, 3) and (4,) do not broadcast (axis -1: 3 vs 4)
    """


class ViewError(FuncgradError, ValueError):
    """A view was requested where the strides make one impossible.

    Example:
        >>> try:
        ...     fg.ones((2, 3)).T.view(-1)
        ... except fg.ViewError as e:
        ...     print(str(e)[:71])
        view: cannot view an array of shape (3, 2) with strides (1, 3) as shape
    """


class DeviceMismatchError(FuncgradError, ValueError):
    """Arrays on different devices met in one operation; nothing moves implicitly.

    Example:
        >>> issubclass(fg.DeviceMismatchError, ValueError)
        True
    """


class DTypeError(FuncgradError, TypeError):
    """A dtype the operation does not accept (or one funcgrad does not support).

    Example:
        >>> try:
        ...     fg.finfo(fg.int32)
        ... except fg.DTypeError as e:
        ...     print(e)
        finfo: int32 is not a floating dtype; use iinfo
    """


class ConcretizationError(FuncgradError, TypeError):
    """A Python value (bool, int, float) was asked of an abstract, traced array.

    Example:
        >>> try:
        ...     fg.compile(lambda x: x * 2.0 if x.sum() > 0 else x)(fg.ones(2))
        ... except fg.ConcretizationError as e:
        ...     print(str(e)[:44])
        bool() needs a concrete value, but this is a
    """


class TracerLeakError(FuncgradError, RuntimeError):
    """A tracer was used after the transform that created it had finished.

    Example:
        >>> kept = []
        >>> _ = fg.grad(lambda x: (kept.append(x), (x * x).sum())[1])(fg.ones(2))
        >>> try:
        ...     kept[0] + 1.0
        ... except fg.TracerLeakError as e:
        ...     print(str(e)[:59])
        a tracer of shape (2,) and dtype float32 created by fg.grad
    """


class RetraceError(FuncgradError, RuntimeError):
    """A compiled function met a new signature while ``fg.config.no_retrace`` is set.

    Example:
        >>> f = fg.compile(lambda x: x + 1.0)
        >>> _ = f(fg.ones(2))
        >>> fg.config.no_retrace = True
        >>> try:
        ...     f(fg.ones(3))
        ... except fg.RetraceError as e:
        ...     print(e)
        fg.compile(<lambda>) would trace again (fg.config.no_retrace is set): leaf 0: f32[2] -> f32[3]
        >>> fg.config.no_retrace = False
    """


class UnknownAttributeError(FuncgradError, AttributeError):
    """An attribute funcgrad's object does not have, with what it does have (``hasattr`` is
    ``False``, as for any ``AttributeError``).

    Example:
        >>> try:
        ...     fg.ones(2).at[0].increment(1.0)
        ... except fg.UnknownAttributeError as e:
        ...     print(str(e)[:57])
        x.at[...] has no method 'increment'; its methods are get,
        >>> hasattr(fg.ones(2).at[0], "increment")
        False
    """


class WriteGuardError(FuncgradError, RuntimeError):
    """A compiled or lowered program wrote into memory it does not own: an input that was not
    donated, or a constant (raised only while ``fg.config.write_guard`` is on).

    Example:
        >>> issubclass(fg.WriteGuardError, RuntimeError)
        True
    """


class DonatedArrayError(FuncgradError, RuntimeError):
    """An array was used after it was donated to a compiled call (``donate_argnums``).

    Example:
        >>> double = fg.compile(lambda x: x * 2.0, donate_argnums=0)
        >>> x = fg.ones(2)
        >>> y = double(x)
        >>> try:
        ...     x + 1.0
        ... except fg.DonatedArrayError as e:
        ...     print(str(e)[:49])
        this array was donated to a compiled call (donate
    """


class GraphFreedError(FuncgradError, RuntimeError):
    """``backward`` walked a graph whose saved values were already freed.

    Example:
        >>> w = fg.ones(2, requires_grad=True)
        >>> y = (w * w).sum()
        >>> y.backward()
        >>> try:
        ...     y.backward()
        ... except fg.GraphFreedError as e:
        ...     print(str(e)[:45])
        backward through <SumBackward> a second time:
    """


class DistributedError(FuncgradError, RuntimeError):
    """A collective that cannot run as asked: no process group, a rank that left, arguments
    the ranks disagree on, or a result thrown away where PyTorch would have written in place.

    Example:
        >>> def average_gradient(g):
        ...     fg.distributed.all_reduce(g, "mean")  # (PyTorch's habit: its result thrown away)
        ...     return g
        >>> try:  # (outside a process group: "no process group"; in one: "returns its result")
        ...     average_gradient(fg.ones(2))
        ... except fg.DistributedError as e:
        ...     print(type(e).__name__)
        DistributedError
    """


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective waited longer than the group's ``timeout`` for the other ranks (one of
    them failed, or is stuck before the same call).

    Example:
        >>> issubclass(fg.DistributedTimeoutError, (fg.DistributedError, TimeoutError))
        True
    """


class FormatError(FuncgradError, ValueError):
    """A file ``fg.load`` refuses: not a funcgrad file (a pickle or torch file, which funcgrad
    never loads), or a malformed or hostile one.

    Example:
        >>> import io
        >>> try:
        ...     fg.load(io.BytesIO(b"not a file"))
        ... except fg.FormatError as e:
        ...     print(str(e).split(': ', 1)[1])
        header length 7594793423135338350 exceeds the file; not a safetensors file
    """


class LinAlgError(FuncgradError, ValueError):
    """A linear-algebra operation whose input has no answer: a singular matrix for ``solve``
    or ``inv``, one that is not positive definite for ``cholesky``. (A ``ValueError``, as
    NumPy's ``LinAlgError``.)

    Example:
        >>> try:
        ...     fg.linalg.inv(fg.zeros((2, 2)))
        ... except fg.LinAlgError as e:
        ...     print(e)
        linalg.inv: linalg_solve(f32[2,2], f32[2,2]): singular matrix
    """


class ArgumentTypeError(FuncgradError, TypeError):
    """An argument of the wrong type: a float or string where a size, an axis or a count
    goes, a function where a module goes.

    Example:
        >>> try:
        ...     fg.ones(2.5)
        ... except fg.ArgumentTypeError as e:
        ...     print(e)
        ones: a shape must be an int or a sequence of ints, got 2.5 (float)
    """


class ArgumentValueError(FuncgradError, ValueError):
    """An argument whose value is out of range: a negative size or count, a zero stride, a
    negative learning rate, an empty list where one array is needed.

    Example:
        >>> try:
        ...     fg.device("tpu")
        ... except fg.ArgumentValueError as e:
        ...     print(e)
        device: unknown device 'tpu'; expected 'cpu', 'gpu', 'gpu:N' or 'cuda'
    """


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
    """A primitive's fact names a primitive or a field that does not exist (raised at import).

    Example:
        >>> issubclass(fg.RegistryError, fg.FuncgradError)
        True
    """


class DeviceUnavailableError(FuncgradError, RuntimeError):
    """The requested device cannot be used here (no CuPy, or no GPU).

    Example:
        >>> issubclass(fg.DeviceUnavailableError, RuntimeError)
        True
    """
