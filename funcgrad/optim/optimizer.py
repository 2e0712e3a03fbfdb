"""``Optimizer``: param groups, per-parameter state, ``step``/``zero_grad``/``state_dict``.

Updates follow PyTorch's documented rules. Every rule ends the same way: the new
value is ``p + alpha * direction`` (``update`` returns the three). The step
re-points each ``Parameter`` at that new array, so earlier values and views of a
parameter never change; or, when nothing but the parameter can reach its current
buffer, it adds into that buffer (``_unshared``): no one can tell the difference, and
the step then costs what NumPy's ``p -= lr * g`` does. ``step(grads)`` also accepts
gradients from the functional path: a dict keyed by parameter name (when the
optimizer was built from ``named_parameters()``) or a sequence in parameter order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import ops
from .. import tree as _tree
from ..array import Array, wrap_kernel_output
from ..backends.device import CPU
from ..errors import ArgumentTypeError, ArgumentValueError, ConcretizationError, DTypeError, ShapeError
from ..nn.parameter import CHANGED_WHILE_COMPILING, Parameter, compiling
from ..primitives.core import fmt_shape
from ..transforms.grad_mode import enable_grad, no_grad

__all__ = ["Optimizer", "axpy"]


def _value(x: Any) -> Any:
    """A plain array over ``x``'s current buffer: no history, and the eager fast paths
    apply (a Parameter's class would skip them). Made directly, not through bind, since
    this is bookkeeping inside an optimizer step (under no_grad) rather than an operation."""
    if type(x) is Array and x._autograd is None:
        return x
    if not isinstance(x, Array):
        return ops.asarray(x)
    return Array._alias(x)


def axpy(alpha: float, x: Any, y: Any) -> Any:
    """``y + alpha * x`` as one new array (BLAS's axpy): the last line of an update rule.
    Written as two operations it allocates twice; here the scaled copy is the result, and
    ``y`` is added into it. (``y - lr * g`` and ``y + (-lr) * g`` round identically.)"""
    if not (x.__class__ is Array and y.__class__ is Array and x._dtype is y._dtype
            and x._device is y._device and x._data.shape == y._data.shape):
        return y + alpha * x
    xp = y._device.backend.xp
    out = xp.multiply(x._data, xp.asarray(alpha, dtype=x._data.dtype))
    out += y._data
    return wrap_kernel_output(out, y._device)


def _reference_counts(p: Parameter) -> tuple[int, int, int] | None:
    """How many references reach ``p``'s buffer object, its memory and its flat view, for a
    parameter over a whole buffer it was assigned from a kernel's output; ``None`` for any
    other arrangement (a view into a larger buffer, memory shared with a NumPy array)."""
    buf, data = p._buf, p._data
    if buf is None or buf._raw_owner is not data or data.base is not None:
        return None
    flat = buf._flat
    if flat is None or flat.base is not data:
        return None
    return sys.getrefcount(buf), sys.getrefcount(data), sys.getrefcount(flat)


_CLEAN: list[tuple[int, int, int] | None] = []


def _unshared(p: Parameter) -> bool:
    """True when nothing but ``p`` can reach its current memory: no other array (an alias,
    a view, a value the tape saved, a state_dict) and no NumPy or CuPy view of it. Every
    one of those holds a reference to the buffer, to its memory or to its flat view, so
    the counts equal a freshly assigned parameter's exactly when there is none. (The
    counts of a fresh parameter are measured, not assumed: they are the interpreter's.)"""
    if not _CLEAN:
        probe = Parameter(wrap_kernel_output(np.zeros(2, np.float32), CPU))
        _CLEAN.append(_reference_counts(probe))
    counts = _reference_counts(p)
    return counts is not None and counts == _CLEAN[0]


def _add_scaled_into(p: Parameter, alpha: float, x: Any) -> bool:
    """``p += alpha * x`` in ``p``'s own buffer (bit-identical to ``axpy``); False (nothing
    done) when the dtypes, devices or shapes differ."""
    if not (x.__class__ is Array and x._dtype is p._dtype and x._device is p._device
            and x._data.shape == p._data.shape):
        return False
    xp = p._device.backend.xp
    p._data += xp.multiply(x._data, xp.asarray(alpha, dtype=x._data.dtype))
    return True


class Optimizer:
    """The base of the PyTorch-style optimizers: parameter groups, ``zero_grad``, ``step``, ``state_dict``;
    a new optimizer defines its update rule (see docs/optim.md).

    Example:
        >>> w = fg.nn.Parameter(fg.asarray([1.0, -1.0]))
        >>> opt = fg.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w.tolist(), isinstance(opt, fg.optim.Optimizer)
        ([0.800000011920929, -0.800000011920929], True)
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: dict[Parameter, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        self._names: dict[str, Parameter] = {}
        name = type(self).__name__
        if isinstance(params, (Parameter, dict)) or not hasattr(params, "__iter__") or hasattr(params, "parameters"):
            hint = " (pass model.parameters())" if hasattr(params, "parameters") else ""
            raise ArgumentTypeError(f"{name}: params must be an iterable of Parameters or of parameter-group dicts, "
                                    f"got {type(params).__name__}{hint}")
        groups = list(params)
        if not groups:
            raise ArgumentValueError(f"{name}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a parameter group (its own hyperparameters; the defaults fill the rest)."""
        if not isinstance(group, dict) or "params" not in group:
            raise ArgumentTypeError(f"{type(self).__name__}: a parameter group is a dict with a 'params' entry, got "
                                    f"{type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        plain = []
        for p in params:
            if isinstance(p, tuple) and len(p) == 2:  # (name, parameter) from named_parameters()
                self._names[p[0]] = p[1]
                p = p[1]
            if not isinstance(p, Parameter):
                raise ArgumentTypeError(f"{type(self).__name__} can only optimize fg.nn.Parameter objects, got "
                                f"{type(p).__name__} (wrap arrays with fg.nn.Parameter(x))")
            plain.append(p)
        if not plain:
            raise ArgumentValueError(f"{type(self).__name__}: got an empty parameter list")
        full = dict(self.defaults)
        full.update({k: v for k, v in group.items() if k != "params"})
        full["params"] = plain
        self.param_groups.append(full)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (set them to None)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else ops.zeros_like(p.grad)

    def _grads(self, grads: Any) -> dict[int, Any]:
        """Gradients passed to ``step`` (the functional path), by parameter id."""
        params = [p for g in self.param_groups for p in g["params"]]
        if isinstance(grads, dict) and self._names and set(grads) <= set(self._names):
            pairs = [(k, self._names[k], v) for k, v in grads.items()]
        else:
            leaves = _tree.leaves(grads)
            if len(leaves) != len(params):
                raise ValueError(f"{type(self).__name__}.step: {len(leaves)} gradients for {len(params)} parameters "
                                 "(pass a dict keyed by name when built from named_parameters(), or one per "
                                 "parameter)")
            pairs = [(f"parameter {i}", p, g) for i, (p, g) in enumerate(zip(params, leaves))]
        for name, p, g in pairs:  # a gradient of another shape or dtype would silently change the parameter
            if g is None:
                continue
            if tuple(getattr(g, "shape", ())) != tuple(p.shape):
                got = fmt_shape(tuple(getattr(g, "shape", ())))
                raise ShapeError(f"{type(self).__name__}.step: the gradient for {name} has shape {got}, the "
                                 f"parameter {fmt_shape(tuple(p.shape))}")
            if getattr(g, "dtype", None) is not p.dtype:
                raise DTypeError(f"{type(self).__name__}.step: the gradient for {name} has dtype "
                                 f"{getattr(g, 'dtype', type(g).__name__)}, the parameter {p.dtype}")
        return {id(p): g for _, p, g in pairs}

    def step(self, grads: Any = None, closure: Callable[[], Any] | None = None) -> Any:
        """One update. Gradients come from ``p.grad`` (after ``backward``) or from ``grads``."""
        if compiling():  # (the in-place update paths would change the parameters once, while tracing)
            raise ConcretizationError(CHANGED_WHILE_COMPILING)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        by_id = None if grads is None else self._grads(grads)
        state = self.state
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if by_id is None:  # after backward(): each parameter's .grad
                        meta = p._autograd
                        g = None if meta is None else meta.grad
                    else:
                        g = by_id.get(id(p))
                    if g is None:
                        continue
                    s = state.get(p)
                    if s is None:
                        s = state[p] = {}
                    value = Array._alias(p)
                    rule = self.update(value, _value(g), s, group)
                    if not isinstance(rule, tuple):  # a rule that returns the new value itself
                        del value
                        p._assign(rule)
                        continue
                    base, alpha, direction = rule
                    del rule  # (the tuple would keep a reference to p's value)
                    if base is value:
                        del value, base  # the rule kept no reference to p's value (else it is not unshared)
                        if _unshared(p) and _add_scaled_into(p, alpha, direction):
                            continue
                        base = _value(p)
                    p._assign(axpy(alpha, direction, base))
        return loss

    def update(self, p: Any, g: Any, state: dict[str, Any], group: dict[str, Any]) -> Any:
        """The update rule a new optimizer defines: parameter ``p``'s new value from its
        gradient ``g``, its ``state`` dict (fill it; ``state_dict`` saves it) and its ``group``'s
        hyperparameters. Runs under ``no_grad``; return the new value, or ``(base, alpha,
        direction)`` meaning ``base + alpha * direction`` (``base`` is ``p`` unless the rule
        changed it first), which the step can add into ``p``'s buffer when nothing else sees it."""
        raise NotImplementedError(f"{type(self).__name__}: an optimizer defines update(p, g, state, group) "
                                  "(see docs/optim.md), or overrides step()")

    # -- checkpointing (PyTorch's format: parameters by position) -------------------
    def state_dict(self) -> dict[str, Any]:
        """The state as a dict of plain values (what load_state_dict takes back)."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state from state_dict()'s dict."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ArgumentValueError(f"{type(self).__name__}.load_state_dict: expected the dict state_dict() returns "
                                     "(with 'state' and 'param_groups'), got "
                                     + (f"keys {sorted(map(str, state_dict))}" if isinstance(state_dict, dict)
                                        else type(state_dict).__name__))
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ArgumentValueError(f"{type(self).__name__}.load_state_dict: the saved param groups do not match this "
                             "optimizer's (group count or sizes differ)")
        params = [p for g in self.param_groups for p in g["params"]]
        for i in state_dict["state"]:
            if not (isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(params)):
                raise ArgumentValueError(f"{type(self).__name__}.load_state_dict: the state names parameter {i!r}, "
                                         f"but this optimizer has parameters 0 to {len(params) - 1}")
        for saved, group in zip(groups, self.param_groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {params[int(i)]: dict(s) for i, s in state_dict["state"].items()}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines + [")"])
