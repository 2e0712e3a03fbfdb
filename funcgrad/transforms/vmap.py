"""``vmap``: a function of one example, mapped over a batch axis (JAX's semantics).

The batching interpreter: a ``BatchTracer`` carries a value with one more axis than the
function sees (``bdim``: where that axis is). Each primitive applied to it runs its
``batch`` rule (``primitives.batching``), which binds primitives on the whole batch below
this interpreter, so the function runs once, not once per member, and composes with every
other transform: ``vmap(grad(f))`` gives per-example gradients, ``grad(vmap(f))`` the
gradient of a batched function, ``compile(vmap(f))`` one program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from .. import ops
from .. import tree as _tree
from ..array import Array, ArrayBase, evaluate
from ..backends import random_state as random_state
from ..dtypes import PYTHON_SCALARS as _SCALARS
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..primitives import lax
from ..primitives.axes import bind_axis, unbind_axis
from ..primitives.batching import lined_up
from ..primitives.checks import as_int
from ..primitives.core import ShapedArray, bind, current_interpreter
from .core import Interpreter, Tracer, check_tracer, user_transform

__all__ = ["vmap", "BatchInterpreter", "BatchTracer"]

_set_interpreter = current_interpreter.set
_reset_interpreter = current_interpreter.reset

# The axis name of the batch whose rule is running: a rule that maps a sub-program with
# ``vmap`` (a compiled call's, a scan's) maps the same batch, so that vmap takes the name
# and collectives inside the sub-program still find their axis. Cleared inside it.
_RULE_AXIS: ContextVar[Any] = ContextVar("funcgrad_rule_axis", default=None)


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, interp: BatchInterpreter, val: Any, bdim: int) -> None:
        self._interp = interp
        self.val = val
        self.bdim = bdim

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self.shape, self.val.dtype, self.val.device)

    # read straight from the value: the ops layer asks for these on every operation
    @property
    def shape(self) -> tuple[int, ...]:
        shape = tuple(self.val.shape)
        return shape[:self.bdim] + shape[self.bdim + 1:]

    @property
    def dtype(self) -> Any:
        return self.val.dtype

    @property
    def device(self) -> Any:
        return self.val.device

    @property
    def ndim(self) -> int:
        return len(self.val.shape) - 1


class BatchInterpreter(Interpreter):
    name = "vmap"
    only_own_tracers = True  # (a collective is its own operation: ``lax.psum`` binds it, never the ops layer)

    def __init__(self, axis_size: int, axis_name: Any = None) -> None:
        super().__init__()
        self.axis_size = axis_size
        self.axis_name = axis_name  # what collectives over this batch call it (None: none can)

    def box(self, x: Any) -> BatchTracer:
        """``x``, whose leading axis has one entry per member, as this batch's value."""
        return BatchTracer(self, x, 0)

    def owns(self, x: Any) -> bool:
        """Whether ``x`` differs between this batch's members (is its tracer)."""
        return isinstance(x, BatchTracer) and x._interp is self

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        if len(args) == 2 and self.plain_is_eager and getattr(prim.batch, "elementwise", False):
            # (the hottest case, written out first: an elementwise operation of this batch's
            # batch-first array and a plain array of lower rank, a number, or another
            # batch-first array of its rank, evaluated now; ranks read from the raw data)
            a, b = args
            if a.__class__ is BatchTracer and a._interp is self and a.bdim == 0 and a.val.__class__ is Array:
                av = a.val
                if b.__class__ is Array and b._data.ndim < av._data.ndim or b.__class__ in _SCALARS:
                    return BatchTracer(self, evaluate(prim, (av, b), params), 0)
                if b.__class__ is BatchTracer and b._interp is self and b.bdim == 0 and b.val.__class__ is Array \
                        and b.val._data.ndim == av._data.ndim:
                    return BatchTracer(self, evaluate(prim, (av, b.val), params), 0)
        vals: Any = None  # (built once an operand is mapped: an operation of unmapped ones passes through)
        dims: Any = ()
        if len(args) == 1:  # (one operand, or two: the usual operations, without the loop below)
            (a,) = args
            if a.__class__ is BatchTracer and a._interp is self:
                vals, dims = (a.val,), (a.bdim,)
            elif isinstance(a, Tracer):
                check_tracer(self, a)
        elif len(args) == 2:
            a, b = args
            a_mapped = a.__class__ is BatchTracer and a._interp is self
            b_mapped = b.__class__ is BatchTracer and b._interp is self
            if a_mapped or b_mapped:
                if not a_mapped and isinstance(a, Tracer) or not b_mapped and isinstance(b, Tracer):
                    check_tracer(self, a if not a_mapped else b)
                vals = (a.val if a_mapped else a, b.val if b_mapped else b)
                dims = (a.bdim if a_mapped else None, b.bdim if b_mapped else None)
            else:
                for x in args:
                    if isinstance(x, Tracer):
                        check_tracer(self, x)
        else:
            mapped = [a.__class__ is BatchTracer and a._interp is self for a in args]
            for a, m in zip(args, mapped):
                if not m and isinstance(a, Tracer):
                    check_tracer(self, a)
            if any(mapped):
                vals = tuple(a.val if m else a for a, m in zip(args, mapped))
                dims = tuple(a.bdim if m else None for a, m in zip(args, mapped))
        if vals is not None and self.plain_is_eager and getattr(prim.batch, "elementwise", False) and \
                (vals[0].__class__ is Array or vals[0].__class__ in _SCALARS) and \
                (len(vals) == 1 or vals[1].__class__ is Array or vals[1].__class__ in _SCALARS):
            d = lined_up(vals, dims)  # (an elementwise operation of arrays that line up: evaluated now)
            if d is not None:
                return BatchTracer(self, evaluate(prim, vals, params), d)
        if prim.axis_batch is not None and self.axis_name is not None and params["axis_name"] == self.axis_name \
                and params["size"] == self.axis_size and "group" not in params:
            # (a group, or another size, says the name is a mesh axis fg.shard_map binds inside this batch)
            if vals is None:  # (``psum(1.0, "i")``: no operand differs between members)
                vals, dims = args, (None,) * len(args)
            token = _set_interpreter(self.parent)  # (its ``axis_batch`` rule, whether or not an operand is mapped)
            try:
                out, out_dim = prim.axis_batch(vals, dims, **params)
            finally:
                _reset_interpreter(token)
            return out if out_dim is None else BatchTracer(self, out, out_dim)
        token = _set_interpreter(self.parent)
        try:
            if vals is None:
                return bind(prim, *args, **params)
            if prim.batch is None:
                raise NotImplementedError(f"fg.vmap: primitive {prim.name!r} has no batching rule")
            if self.axis_name is None or prim.impl is None:  # (only a call-like primitive's rule maps a sub-program)
                out, out_dims = prim.batch(vals, dims, **params)
            else:
                named = _RULE_AXIS.set(self.axis_name)
                try:
                    out, out_dims = prim.batch(vals, dims, **params)
                finally:
                    _RULE_AXIS.reset(named)
        finally:
            _reset_interpreter(token)
        if prim.multiple_results:
            return tuple(o if d is None else BatchTracer(self, o, d) for o, d in zip(out, out_dims))
        return out if out_dims is None else BatchTracer(self, out, out_dims)


def vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, randomness: str = "error") -> Callable[..., Any]:
    """``f`` mapped over an axis of its arguments (JAX's ``vmap``): one call computes what a
    loop over the batch would, as whole-array operations.

    Args:
        f: the function.
        in_axes: an int, ``None`` (not mapped) or a tuple with one entry per positional
            argument, each an int, ``None`` or a pytree matching (a prefix of) that argument.
            Keyword arguments are mapped over their axis 0. Negative axes count from the end.
        out_axes: where the batch axis goes in each output (the same forms, matching the output).
        axis_name: any hashable (usually a string): the name collectives inside ``f`` use for
            this batch (``fg.lax.psum(x, "i")`` sums ``x`` over the members,
            ``fg.lax.axis_index("i")`` is each member's position); nested vmaps bind one name
            each, the innermost winning.
        axis_size: the batch size, needed only when no argument is mapped.
        randomness: ``torch.func.vmap``'s choice for a draw from a random generator
            (``fg.rand``, ``Dropout``) inside ``f``: ``"error"`` (refused, naming the choice),
            ``"different"`` (each member draws its own numbers) or ``"same"``. Draws from
            explicit keys (``fg.random``) follow their keys, as in JAX.

    Returns:
        The batched function.

    Example:
        >>> fg.vmap(lambda row: fg.sum(row * row))(fg.ones((3, 2))).tolist()
        [2.0, 2.0, 2.0]
    """
    if not callable(f):
        raise ArgumentTypeError(f"fg.vmap: expected a function, got {type(f).__name__}")
    name = getattr(f, "__name__", "function")
    _check_spec(name, "in_axes", in_axes)
    _check_spec(name, "out_axes", out_axes)
    if axis_size is not None:
        axis_size = as_int(f"fg.vmap({name})", axis_size, "axis_size")
    if randomness not in ("error", "different", "same"):
        raise ArgumentValueError(f"fg.vmap({name}): randomness must be 'error', 'different' or 'same', got "
                                 f"{randomness!r}")

    @functools.wraps(f)
    def batched(*args: Any, **kwargs: Any) -> Any:
        rule_axis = _RULE_AXIS.get()
        if rule_axis is None:  # (no rule is mapping a sub-program: the usual call)
            return run(axis_name, args, kwargs)
        token = _RULE_AXIS.set(None)
        try:
            return run(axis_name if axis_name is not None else rule_axis, args, kwargs)
        finally:
            _RULE_AXIS.reset(token)

    def run(axis_name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        leaves: list[Any]
        axes: list[Any]
        if len(args) == 1 and not kwargs and in_axes.__class__ is int and isinstance(args[0], ArrayBase) \
                and 0 <= in_axes < args[0].ndim and axis_size is None:  # (one array over one axis: the usual call)
            leaves, axes, tree = [args[0]], [in_axes], None
        elif not kwargs and in_axes.__class__ is int and all(isinstance(a, ArrayBase) for a in args):
            leaves, tree = list(args), None  # (arrays over one axis: no tree to walk)
            axes = [_normalize(name, "in_axes", in_axes, x.ndim) for x in leaves]
        else:
            axes = _arg_axes(name, in_axes, args) + [0] * len(_tree.leaves(kwargs))
            leaves, tree = _tree.flatten((args, kwargs))
            leaves = [_batched_operand(name, x) if ax is not None else x for x, ax in zip(leaves, axes)]
            axes = [_normalize(name, "in_axes", ax, x.ndim) if ax is not None else None for x, ax in zip(leaves, axes)]
        n = leaves[0].shape[axes[0]] if len(leaves) == 1 and axis_size is None and axes[0] is not None else \
            _batch_size(name, leaves, axes, args, kwargs, axis_size)
        interp = BatchInterpreter(n, axis_name)
        token = _set_interpreter(interp)  # (tokens, not context managers: every call pays for these)
        bound = bind_axis(axis_name, n) if axis_name is not None else None
        draws = random_state.enter_vmap(name, randomness, n, interp)
        try:
            boxed = [BatchTracer(interp, x, ax) if ax is not None else x for x, ax in zip(leaves, axes)]  # type: ignore[arg-type]
            call_args, call_kwargs = (boxed, {}) if tree is None else _tree.unflatten(tree, boxed)
            out = f(*call_args, **call_kwargs)
            if out.__class__ is BatchTracer and out._interp is interp and out_axes == out.bdim:
                return out.val  # (one array, its batch axis where it goes: the usual result)
            if out_axes.__class__ is int and isinstance(out, ArrayBase):  # (one array: no tree to walk)
                return _unbox(name, interp, out, out_axes, n)  # type: ignore[arg-type]
            out_leaves, out_tree = _tree.flatten(out)
            targets = _prefix_axes(name, "out_axes", out_axes, out)
            results = [_unbox(name, interp, o, ax, n) for o, ax in zip(out_leaves, targets)]  # type: ignore[arg-type]
        finally:
            random_state.exit_vmap(draws)
            if bound is not None:
                unbind_axis(bound)
            _reset_interpreter(token)
            interp.active = False
        return _tree.unflatten(out_tree, results)

    return user_transform("vmap", batched)


def _check_spec(name: str, what: str, spec: Any) -> None:
    """``in_axes``/``out_axes``: ints and ``None`` in tuples, lists and dicts, checked where
    ``vmap`` is applied."""
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return
    if isinstance(spec, (tuple, list)):
        for s in spec:
            _check_spec(name, what, s)
        return
    if isinstance(spec, dict):
        for s in spec.values():
            _check_spec(name, what, s)
        return
    raise ArgumentTypeError(f"fg.vmap({name}): {what} entries must be ints or None (in tuples, lists or dicts), "
                            f"got {type(spec).__name__} {spec!r}")


def _batched_operand(name: str, x: Any) -> Any:
    if isinstance(x, ArrayBase):
        return x
    if hasattr(x, "shape") or isinstance(x, (list, tuple)):
        return ops.asarray(x)
    raise ArgumentTypeError(f"fg.vmap({name}): a mapped argument must be an array, got {type(x).__name__} {x!r} "
                            "(give it in_axes None to pass it to every member unchanged)")


def _normalize(name: str, what: str, ax: Any, ndim: int) -> int:
    if isinstance(ax, bool) or not isinstance(ax, int):
        raise ArgumentTypeError(f"fg.vmap({name}): {what} entries must be ints or None, got {ax!r}")
    if not -ndim <= ax < ndim:
        raise ShapeError(f"fg.vmap({name}): {what} axis {ax} is out of range for an argument with {ndim} "
                         f"dimension(s)")
    return ax % ndim


def _arg_axes(name: str, in_axes: Any, args: tuple[Any, ...]) -> list[Any]:
    """One axis (or None) per leaf of ``args``."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple):
        if len(in_axes) != len(args):
            raise ArgumentValueError(f"fg.vmap({name}): in_axes has {len(in_axes)} entries for {len(args)} "
                                     f"positional argument(s)")
        return [ax for a, spec in zip(args, in_axes) for ax in _prefix_axes(name, "in_axes", spec, a)]
    return _prefix_axes(name, "in_axes", in_axes, args)


def _prefix_axes(name: str, what: str, spec: Any, tree: Any) -> list[Any]:
    """``spec`` (an int, None, or a pytree whose leaves are those, matching a prefix of
    ``tree``) as one entry per leaf of ``tree``."""
    try:
        return _tree.broadcast_prefix(spec, tree)
    except ValueError as exc:
        raise ArgumentValueError(f"fg.vmap({name}): {what} {exc}") from None


def _batch_size(name: str, leaves: list[Any], axes: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                axis_size: int | None) -> int:
    sizes = {x.shape[ax] for x, ax in zip(leaves, axes) if ax is not None}
    if len(sizes) > 1:
        raise ShapeError(f"fg.vmap({name}): mapped arguments have different sizes along their mapped axes: "
                         + "; ".join(_describe_sizes(leaves, axes, args, kwargs)))
    if sizes:
        n = sizes.pop()
        if axis_size is not None and axis_size != n:
            raise ShapeError(f"fg.vmap({name}): axis_size={axis_size} but the mapped arguments have size {n}")
        return n
    if axis_size is None:
        raise ArgumentValueError(f"fg.vmap({name}): no argument is mapped (every in_axes is None); give "
                                 "axis_size to say how many members there are")
    return axis_size


def _describe_sizes(leaves: list[Any], axes: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    names = [f"argument {i}" for i, a in enumerate(args) for _ in _tree.leaves(a)]
    names += [f"keyword argument {k!r}" for k in sorted(kwargs) for _ in _tree.leaves(kwargs[k])]
    return [f"{label} has size {x.shape[ax]} along axis {ax} (shape {tuple(x.shape)})"
            for label, x, ax in zip(names, leaves, axes) if ax is not None]


def _unbox(name: str, interp: BatchInterpreter, out: Any, ax: Any, n: int) -> Any:
    if out.__class__ is BatchTracer and out._interp is interp and ax == out.bdim:  # (already where it goes)
        return out.val
    if isinstance(out, BatchTracer) and out._interp is interp:
        if ax is None:
            raise ArgumentValueError(f"fg.vmap({name}): out_axes is None for an output that depends on the "
                                     "mapped arguments (it differs between members); give it an axis")
        ax = _normalize(name, "out_axes", ax, out.ndim + 1)
        return out.val if out.bdim == ax else lax.moveaxis(out.val, (out.bdim,), (ax,))
    if ax is None:
        return out
    # the same for every member (a Python number too, as in JAX): repeated along the new axis
    out = ops.asarray(out) if isinstance(out, (bool, int, float, complex)) else _batched_operand(name, out)
    ax = _normalize(name, "out_axes", ax, out.ndim + 1)
    repeated = lax.broadcast_to(out, (n, *out.shape))
    return repeated if ax == 0 else lax.moveaxis(repeated, (0,), (ax,))
