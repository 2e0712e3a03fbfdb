"""The interpreter stack shared by every transform (the Autodidax design, with a
context variable instead of numbered levels).

* An ``Interpreter`` handles ``bind`` while it is current. Its ``process(prim,
  args, params)`` unpacks its own tracers, does its work by binding primitives
  again *below itself* (the parent interpreter made current), and boxes results in new
  tracers. Nesting works because every rule calls ``bind`` again.
* A ``Tracer`` is an array-like that belongs to one interpreter. It has every
  operator and method of ``Array`` (both inherit ``ArrayBase``), so user code
  cannot tell them apart, except where it asks for concrete values.
* When a transform returns, its interpreter is closed. Its tracers may have
  escaped (stored in a global, say); using one raises ``TracerLeakError``
  naming the transform that made it.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from ..array import Array, ArrayBase, Size, concrete_value
from ..errors import ArgumentTypeError, ConcretizationError, TracerLeakError
from ..ops import astype
from ..primitives.core import ShapedArray, current_interpreter, fmt_shape

__all__ = ["Interpreter", "Tracer", "new_interpreter", "concrete_value", "check_tracer", "user_transform",
           "require_callable", "require_argnums"]


def require_callable(transform: str, f: Any, what: str = "the function") -> None:
    """``ArgumentTypeError`` now, where the transform is applied, unless ``f`` can be called
    (rather than at its first call, far from the mistake)."""
    if not callable(f):
        raise ArgumentTypeError(f"fg.{transform}: {what} must be callable, got {type(f).__name__} {f!r}")


def require_argnums(transform: str, argnums: Any, name: str = "argnums") -> tuple[int, ...]:
    """An int or a sequence of ints (positions), checked where the transform is applied."""
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if isinstance(nums, (str, bytes)) or not hasattr(nums, "__iter__"):
        raise ArgumentTypeError(f"fg.{transform}: {name} must be an int or a sequence of ints, got {argnums!r}")
    nums = tuple(nums)
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ArgumentTypeError(f"fg.{transform}: {name} must be an int or a sequence of ints, got {argnums!r}")
    return nums


# The public transform the user called (``grad``, ``jacfwd``, ``checkpoint``...): the one
# errors name. Set by ``user_transform`` wrappers; a call made from inside funcgrad (jacfwd
# calling jvp) keeps the user's name.
USER_TRANSFORM: contextvars.ContextVar[str | None] = contextvars.ContextVar("funcgrad_user_transform", default=None)


def user_transform(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (what a public transform returns), naming ``name`` in the errors of the
    interpreters it starts, unless funcgrad itself calls it."""

    @functools.wraps(fn)
    def called(*args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__", "").startswith("funcgrad."):
            return fn(*args, **kwargs)
        token = USER_TRANSFORM.set(name)
        try:
            return fn(*args, **kwargs)
        finally:
            USER_TRANSFORM.reset(token)

    return called


class Interpreter:
    """Base of every interpreter: the transforms', and the user's (``fg.Interpreter``, as
    PyTorch's ``TorchDispatchMode``). ``parent`` is the interpreter that was current when
    this one started (``None``: eager evaluation); ``transform`` is the public transform
    the user called, which errors name.

    A user's interpreter overrides ``process`` and is used as a context manager: every
    primitive bound inside the ``with`` block (by ``fg.*`` functions, operators, modules,
    rules of the transforms below it) reaches ``process(prim, args, params)``, which must
    return what ``bind(prim, *args, **params)`` would (the same shapes, dtypes and
    devices). ``super().process(...)`` hands the primitive on to the interpreter below,
    eager evaluation at the bottom.

    Example:
        >>> class Count(fg.Interpreter):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.names = []
        ...     def process(self, prim, args, params):
        ...         self.names.append(prim.name)
        ...         return super().process(prim, args, params)
        >>> with Count() as seen:
        ...     y = fg.tanh(fg.ones(3) * 2.0).sum()
        >>> seen.names
        ['mul', 'tanh', 'reduce_sum']
    """

    name = "transform"
    # Whether this interpreter passes on, unchanged, every operation none of whose operands
    # is one of its tracers (vmap, jvp). ``plain_is_eager`` then says whether the operations
    # of plain arrays alone go straight to eager evaluation while it is current, as in JAX
    # an operation joins the innermost transform among its operands': the ops layer skips
    # ``bind`` for them. Nothing else may be below it for that (a user's interpreter, a trace).
    only_own_tracers = False
    plain_is_eager = False

    def __init__(self) -> None:
        self.parent = current_interpreter.get()
        self.plain_is_eager = self._plain_is_eager()
        self.active = True
        self.transform = USER_TRANSFORM.get() or self.name

    def _plain_is_eager(self) -> bool:
        return self.only_own_tracers and (self.parent is None or getattr(self.parent, "plain_is_eager", False))

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Run ``prim`` below this interpreter, unchanged (what a subclass's ``super()`` call does)."""
        token = current_interpreter.set(self.parent)
        try:
            return prim.bind(*args, **params)
        finally:
            current_interpreter.reset(token)

    def __enter__(self) -> Any:
        """Make this interpreter current: it sees every primitive bound in the block."""
        self.parent = current_interpreter.get()  # (whatever is current now, which may differ from __init__'s)
        self.plain_is_eager = self._plain_is_eager()
        self.active = True
        if "transform" not in self.__dict__:  # (a subclass whose __init__ did not call ours)
            self.transform = type(self).__name__
        self.__dict__.setdefault("_tokens", []).append(current_interpreter.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        current_interpreter.reset(self.__dict__["_tokens"].pop())
        self.active = bool(self.__dict__["_tokens"])

    def encloses(self, other: Interpreter | None) -> bool:
        """Whether ``other`` is this interpreter or one of its ancestors."""
        node: Interpreter | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False

    def __repr__(self) -> str:
        return f"<{self.name} interpreter>"


class new_interpreter:
    """Make ``interp`` current for the body; close it afterwards (its tracers become leaks).
    (A class, not a generator: every transform call enters one.)"""

    __slots__ = ("interp", "token")

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp

    def __enter__(self) -> Interpreter:
        self.token = current_interpreter.set(self.interp)
        return self.interp

    def __exit__(self, *exc: Any) -> None:
        current_interpreter.reset(self.token)
        self.interp.active = False


class Tracer(ArrayBase):
    """An abstract array owned by an interpreter: what a function sees of its arguments
    under ``grad``, ``vmap``, ``compile``... Subclasses define ``aval``.

    Example:
        >>> def f(x):
        ...     print(isinstance(x, fg.Tracer), x.aval)
        ...     return (x * 2.0).sum()
        >>> fg.grad(f)(fg.ones(2)).tolist()
        True ShapedArray(f32[2], cpu)
        [2.0, 2.0]
    """

    __slots__ = ("_interp",)
    _interp: Interpreter

    @property
    def aval(self) -> ShapedArray:
        """The abstract value (shape, dtype, device)."""
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]:
        """The length of each axis."""
        return self.aval.shape

    @property
    def dtype(self) -> Any:
        """The element type."""
        return self.aval.dtype

    @property
    def device(self) -> Any:
        """The device."""
        return self.aval.device

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.aval.shape)

    @property
    def weak(self) -> bool:  # type: ignore[override]
        """Whether it stands for a Python number (``ShapedArray.weak``)."""
        return self.aval.weak

    @property
    def size(self) -> int:
        """The number of elements."""
        return Size(self.shape)

    def _evaluate(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """``bind`` with no interpreter active: this tracer escaped its transform."""
        raise _leak(self)

    def _concrete(self, why: str) -> Any:
        """The concrete ``Array`` behind this tracer, or ``ConcretizationError``."""
        raise ConcretizationError(_concretization_message(self, why))

    def _value(self, why: str) -> Any:
        """``_concrete``, once the tracer is known not to have escaped its transform."""
        if not self._interp.active:
            raise _leak(self)
        return self._concrete(why)

    # Python conversions need concrete values
    def __bool__(self) -> bool:
        return bool(self._value("bool()"))

    def __float__(self) -> float:
        return float(self._value("float()"))

    def __int__(self) -> int:
        return int(self._value("int()"))

    def __index__(self) -> int:
        return self._value("an index").__index__()  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        value = self._value(f"formatting with {spec!r}")
        return format(value.item() if value.size == 1 else value.numpy(), spec)

    def item(self) -> Any:
        """The single value, as a Python scalar (needs a concrete value)."""
        return self._value("item()").item()

    def tolist(self) -> Any:
        """The values as nested Python lists (needs concrete values)."""
        return self._value("tolist()").tolist()

    def numpy(self) -> Any:
        """The values as a NumPy array (needs concrete values)."""
        return self._value("numpy()").numpy()

    def backward(self, *args: Any, **kwargs: Any) -> None:
        """The tape needs concrete values: under a transform this raises ``ConcretizationError``."""
        raise ConcretizationError(
            f"backward() on a traced value of fg.{self._interp.transform} ({self.aval.str_short()}): the tape "
            "records concrete arrays only. Inside a transformed function take gradients with fg.grad or "
            "fg.value_and_grad and return new parameters (fg.optim's pure update rules), or call backward() "
            "outside the transformed function")

    def __reduce__(self) -> Any:
        raise TypeError(f"a traced value of fg.{self._interp.transform} cannot be pickled or copied: it has no "
                        "values yet. Return it from the transformed function first.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._value("NumPy conversion").__array__(dtype, copy)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """The value in another dtype."""
        return astype(self, dtype, copy=copy)

    def to(self, target: Any, dtype: Any = None) -> Any:
        """The value on another device or in another dtype."""
        return Array.to(self, target, dtype)  # type: ignore[arg-type]

    def _to_device(self, dst: Any) -> Any:
        if dst is not self.device:
            raise ConcretizationError(f"moving a traced array between devices ({self.device} -> {dst}) "
                                      "is not supported inside a transform; move inputs before calling it")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.aval.str_short()}, {self._interp.name})"


def _user_line() -> str:
    for frame in inspect.stack()[2:]:
        if "/funcgrad/" not in frame.filename.replace("\\", "/"):
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def _concretization_message(tracer: Tracer, why: str) -> str:
    return (
        f"{why} needs a concrete value, but this is an abstract traced array of shape "
        f"{fmt_shape(tracer.shape)} and dtype {tracer.dtype} inside fg.{tracer._interp.transform} "
        f"(at {_user_line()}). Python control flow cannot depend on traced values: use fg.where(cond, a, b) "
        "for elementwise choices, or make the value a static (Python) argument "
        "(static_argnums=... once the function is compiled)."
    )


def check_tracer(interp: Interpreter, x: Tracer) -> None:
    """``x`` belongs to another interpreter: fine if that one encloses ``interp``
    (it is a constant here), a leak if it is closed or unrelated."""
    owner = x._interp
    if not owner.active or not interp.encloses(owner):
        raise _leak(x)


def _leak(x: Tracer) -> TracerLeakError:
    return TracerLeakError(
        f"a tracer of shape {fmt_shape(x.shape)} and dtype {x.dtype} created by fg.{x._interp.transform} was used "
        f"after that transform returned (or outside it): it escaped, e.g. through a global variable, a "
        "closure, or an attribute set inside the transformed function. Return values from the function "
        "instead of storing them."
    )


