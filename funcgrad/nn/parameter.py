"""``Parameter``: the one mutable holder in funcgrad.

A Parameter is an ``Array`` (every operation accepts it) that an optimizer can
re-point at a new buffer (``_assign``). Arrays stay immutable: an earlier value
of a parameter, and every view of it, keeps the buffer it had.
"""

from __future__ import annotations

from typing import Any

from ..array import Array
from ..errors import ConcretizationError, DTypeError
from ..ops import asarray, broadcast_to, zeros
from ..primitives.core import current_interpreter
from ..transforms import is_grad_enabled
from ..transforms.autodiff.tape import AutogradMeta

__all__ = ["Parameter"]


CHANGED_WHILE_COMPILING = (
    "a Parameter was changed (an optimizer step, say) while fg.compile traced a function: the change would happen "
    "once, while tracing, and never when the compiled function runs. Return the new values instead: "
    "fg.optim.sgd(...).update(grads, state, params) gives them, as pure functions; or step the optimizer outside "
    "the compiled function.")


def compiling() -> bool:
    """Whether an ``fg.compile`` trace is in the interpreter stack."""
    interp = current_interpreter.get()
    while interp is not None:
        if getattr(interp, "transform", None) == "compile":
            return True
        interp = getattr(interp, "parent", None)
    return False


class Parameter(Array):
    """``fg.nn.Parameter(data, requires_grad=True)``: shares ``data``'s buffer.

    Example:
        >>> p = fg.nn.Parameter(fg.ones(2))
        >>> p.requires_grad, isinstance(p, fg.Array)
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        source = zeros((0,)) if data is None else asarray(data)
        if not isinstance(source, Array):
            raise TypeError(f"Parameter: expected an array, got {type(source).__name__}")
        p = object.__new__(cls)
        p._autograd = None
        p._assign(source)
        if requires_grad:
            if p._dtype.kind not in "fc":
                raise DTypeError(f"Parameter: only floating-point and complex parameters can require grad, got "
                                 f"{p._dtype}")
            p._autograd = AutogradMeta(True)
        return p

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        pass

    def _assign(self, value: Array) -> None:
        """Re-point at ``value``'s buffer (shapes may not change; the dtype/device may, via Module.to)."""
        if not isinstance(value, Array):
            raise ConcretizationError(
                "a Parameter was given a traced value: it was changed (an optimizer step, say) inside a transformed "
                "function such as fg.compile, where values are abstract. Return the new values instead: "
                "fg.optim.sgd(...).update(grads, state, params) gives them, as pure functions.")
        if compiling():  # a concrete value while a compiled function traces: it would change once, now
            raise ConcretizationError(CHANGED_WHILE_COMPILING)
        self._data = value._data
        self._dtype = value._dtype
        self._device = value._device
        self._buf = value.buffer
        self._layout = value._layout_obj()

    # -- PyTorch's ways of changing a parameter by hand, re-pointing it (the old value stays) --
    @property
    def data(self) -> Array:
        """The value without derivative history (PyTorch's ``p.data``): a view, no copy."""
        return self.detach()

    @data.setter
    def data(self, value: Any) -> None:
        """``p.data = value``: the parameter now holds ``value`` (PyTorch's way to reset a weight)."""
        self._assign(asarray(value).detach())

    def copy_(self, src: Any) -> Parameter:
        """The parameter now holds ``src``'s values, in its own dtype and shape."""
        self._assign(broadcast_to(asarray(src).detach().astype(self._dtype), tuple(self.shape)))
        return self

    def zero_(self) -> Parameter:
        """The parameter now holds zeros."""
        return self.copy_(zeros(tuple(self.shape), self._dtype, device=self._device))

    def _in_place(self, op: str, value: Any) -> Parameter:
        if self.requires_grad and is_grad_enabled():
            raise RuntimeError(f"p {op} ...: changing a Parameter that requires grad in place is only allowed under "
                               f"fg.no_grad() (as in PyTorch): `with fg.no_grad(): p {op} lr * p.grad` (or use an "
                               "optimizer, or p.copy_(value))")
        self._assign(value.detach().astype(self._dtype))
        return self

    def __iadd__(self, other: Any) -> Parameter:
        return self._in_place("+=", self + other)

    def __isub__(self, other: Any) -> Parameter:
        return self._in_place("-=", self - other)

    def __imul__(self, other: Any) -> Parameter:
        return self._in_place("*=", self * other)

    def __itruediv__(self, other: Any) -> Parameter:
        return self._in_place("/=", self / other)

    def __del__(self) -> None:  # the buffer is always owned by a Buffer here
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self) -> Any:
        """Pickled as its value and ``requires_grad`` (modules and optimizers pickle with it)."""
        return Parameter, (self.detach(), bool(self.requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        """A new Parameter with its own memory, the same values and a copy of its ``.grad``
        (``copy.deepcopy(model)`` for EMA weights or a best-model snapshot)."""
        out = Parameter(self.detach().__deepcopy__({}), requires_grad=bool(self.requires_grad))
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        return out

    def __copy__(self) -> Parameter:
        """Another Parameter holding the same value (it can be re-pointed on its own)."""
        return Parameter(self.detach(), requires_grad=bool(self.requires_grad))
