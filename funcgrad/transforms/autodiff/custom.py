"""User-defined derivative rules: ``fg.custom_vjp`` and ``fg.custom_jvp`` (JAX's API).

Each wraps the function in a call-like primitive, so the rule survives tracing
(``fg.trace`` records one equation) and composes with the other transforms.
Arguments listed in ``nondiff_argnums`` must be static Python values (they are
hashed into the primitive's parameters); arrays always go in as regular arguments.

* ``custom_vjp``: ``f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (out, residuals)`` and
  ``bwd(residuals, g) -> one cotangent per argument`` (``bwd(*nondiff, res, g)`` with
  static arguments). Forward mode through it is an error, as in JAX.
* ``custom_jvp``: ``f.defjvp(rule)`` with ``rule(primals, tangents) -> (out, tangent_out)``.
  Reverse mode uses the same rule: its tangent map is linear, so the VJP of that
  map is its transpose (no separate rule needed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ... import tree as _tree
from ...config import config
from ...errors import DTypeError, ShapeError
from ...ops import zeros, zeros_like
from ...primitives.ad import VJPRule
from ...primitives.batching import axis_size, to_front
from ...primitives.checks import broadcast_shapes
from ...primitives.core import Primitive, bind, fmt_shape
from ..core import require_argnums, require_callable
from ..ir import make_program
from ..vmap import vmap
from .api import as_array, vjp

__all__ = ["custom_vjp", "custom_jvp"]


def _split(args: tuple[Any, ...], nondiff: tuple[int, ...]) -> tuple[tuple[Any, ...], list[Any]]:
    static = tuple(args[i] for i in nondiff)
    for i, s in zip(nondiff, static):
        try:
            hash(s)
        except TypeError:
            raise TypeError(f"custom rule: argument {i} is in nondiff_argnums, so it must be a hashable static value "
                            f"(got {type(s).__name__}); pass arrays as regular arguments") from None
    dynamic = [a for i, a in enumerate(args) if i not in nondiff]
    return static, dynamic


def _merge(static: tuple[Any, ...], dynamic: Sequence[Any], nondiff: tuple[int, ...]) -> list[Any]:
    out, s, d = [], iter(static), iter(dynamic)
    for i in range(len(static) + len(dynamic)):
        out.append(next(s) if i in nondiff else next(d))
    return out


def check_cotangent(where: str, index: int, ct: Any, aval: Any) -> None:
    """A user rule's cotangent for input ``index`` must have that input's dtype and its shape
    (or one that sums to it by broadcasting): anything else would be a wrong gradient."""
    if ct is None or aval is None or not hasattr(ct, "shape") or getattr(aval, "dtype", None) is None:
        return
    shape, want = tuple(ct.shape), tuple(aval.shape)
    try:
        sums_to_input = broadcast_shapes(where, want, shape) == shape
    except ShapeError:
        sums_to_input = False
    if not sums_to_input:
        raise ShapeError(f"{where} returned a cotangent of shape {fmt_shape(shape)} for input {index} of shape "
                         f"{fmt_shape(want)}")
    if aval.dtype.kind in "fc" and ct.dtype is not aval.dtype:
        raise DTypeError(f"{where} returned a {ct.dtype} cotangent for input {index} of dtype {aval.dtype} "
                         f"(shape {fmt_shape(want)}); cast it with .astype({aval.dtype})")


class _Call:
    """Hashable, printable bundle of the user's callables and static data for the params."""

    def __init__(self, fun: Callable[..., Any], rule: Any, static: tuple[Any, ...], nondiff: tuple[int, ...],
                 in_tree: Any, out_tree: Any, out_avals: list[Any], in_avals: list[Any] | None = None) -> None:
        self.fun, self.rule, self.static, self.nondiff = fun, rule, static, nondiff
        self.in_tree, self.out_tree, self.out_avals = in_tree, out_tree, out_avals
        self.in_avals = in_avals
        self.__name__ = getattr(fun, "__name__", "fun")

    def __repr__(self) -> str:
        return f"<{self.__name__}>"

    def call(self, flat: Sequence[Any]) -> list[Any]:
        args = _merge(self.static, _tree.unflatten(self.in_tree, list(flat)), self.nondiff)
        out = self.fun(*args)
        out_flat, tree = _tree.flatten(out)
        if tree != self.out_tree:
            raise TypeError(f"{self.__name__}: output structure changed from {self.out_tree!r} to {tree!r}")
        return out_flat


def _abstract(*avals: Any, call: _Call) -> tuple[Any, ...]:
    return tuple(call.out_avals)


def _impl(*flat: Any, call: _Call) -> tuple[Any, ...]:
    return tuple(call.call(flat))


custom_vjp_p = Primitive("custom_vjp_call", _abstract, impl=_impl, multiple_results=True)
custom_jvp_p = Primitive("custom_jvp_call", _abstract, impl=_impl, multiple_results=True)


def _prepare(fun: Callable[..., Any], rule: Any, nondiff: tuple[int, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call's bundle and its flat array arguments. The function's output structure and
    types come from tracing it once per structure, types and static arguments of its inputs
    (and 64-bit mode): the call checks its output against them, and a rule called every step
    (FSDP's gathered parameters) is not traced again each time."""
    static, dynamic = _split(args, nondiff)
    flat, in_tree = _tree.flatten(tuple(dynamic))
    flat = [as_array(x) for x in flat]
    in_avals = [x.aval for x in flat]
    key = (static, in_tree, tuple(in_avals), config.enable_x64)
    call = rule._calls.get(key)
    if call is None:
        def probe(*d: Any) -> Any:
            return fun(*_merge(static, d, nondiff))

        program, _ = make_program(probe, in_avals, in_tree)  # output structure and types
        call = _Call(fun, rule, static, nondiff, in_tree, program.out_tree, program.out_avals, in_avals)
        if len(rule._calls) >= _CALLS_KEPT:
            rule._calls.clear()
        rule._calls[key] = call
    return call, flat


_CALLS_KEPT = 64  # traced input signatures a custom rule keeps


class _CustomRule:
    """What custom_vjp and custom_jvp share: the wrapped function, static arguments, and
    the call that binds the call-like primitive once the rule is defined."""

    primitive: Primitive
    kind = ""
    define = ""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        require_callable(type(self).__name__, fun)
        require_argnums(type(self).__name__, nondiff_argnums, "nondiff_argnums")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff = tuple(nondiff_argnums)
        self._calls: dict[Any, _Call] = {}  # (static arguments, input structure and types) -> the call

    def _defined(self) -> bool:
        raise NotImplementedError

    def __call__(self, *args: Any) -> Any:
        if not self._defined():
            raise TypeError(f"{self.kind} {self.fun.__name__}: call {self.define} before using it")
        call, flat = _prepare(self.fun, self, self.nondiff, args)
        outs = bind(self.primitive, *flat, call=call)
        return _tree.unflatten(call.out_tree, list(outs))


class custom_vjp(_CustomRule):
    """A function with its own reverse-mode rule: ``f = fg.custom_vjp(f); f.defvjp(fwd, bwd)``,
    ``fwd(*args) -> (out, residuals)`` and ``bwd(residuals, g) -> one cotangent per argument``.

    Args:
        fun: the function.
        nondiff_argnums: positional arguments that are not differentiated (passed to
            ``bwd`` first).

    Example:
        >>> f = fg.custom_vjp(lambda x: x * 2.0)
        >>> _ = f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g * 10.0,))
        >>> fg.grad(f)(fg.asarray(1.0)).item()
        10.0
    """

    primitive = custom_vjp_p
    kind, define = "custom_vjp", "defvjp(fwd, bwd)"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> custom_vjp:
        """Define the reverse-mode rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g)``."""
        self.fwd, self.bwd = fwd, bwd
        return self

    def _defined(self) -> bool:
        return self.fwd is not None


class _CustomVJPRule(VJPRule):
    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        call: _Call = params["call"]
        rule: custom_vjp = call.rule
        args = _merge(call.static, _tree.unflatten(call.in_tree, list(primals)), call.nondiff)
        result = rule.fwd(*args)  # type: ignore[misc]
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"custom_vjp {call.__name__}: fwd must return (output, residuals)")
        out, residuals = result
        out_flat, tree = _tree.flatten(out)
        if tree != call.out_tree:
            raise TypeError(f"custom_vjp {call.__name__}: fwd's output structure {tree!r} differs from the "
                            f"function's {call.out_tree!r}")
        return tuple(out_flat), residuals

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        call: _Call = params["call"]
        cts = [zeros(a.shape, a.dtype, device=a.device) if c is None else c for c, a in zip(g, call.out_avals)]
        result = call.rule.bwd(*call.static, residuals, _tree.unflatten(call.out_tree, cts))
        if not isinstance(result, tuple):
            raise TypeError(f"custom_vjp {call.__name__}: bwd must return a tuple with one cotangent per "
                            "differentiable argument")
        n_dynamic = len(call.in_tree.children)
        if len(result) != n_dynamic:
            raise TypeError(f"custom_vjp {call.__name__}: bwd returned {len(result)} cotangents for "
                            f"{n_dynamic} argument(s)")
        flat: list[Any] = []
        for sub, ct in zip(call.in_tree.children, result):
            leaves = _tree.leaves(ct) if ct is not None else [None] * sub.num_leaves
            flat.extend(leaves)
        for i, (ct, aval) in enumerate(zip(flat, call.in_avals or ())):
            check_cotangent(f"custom_vjp {call.__name__}: bwd", i, ct, aval)
        return tuple(flat)


def _no_forward_mode(primals: Any, tangents: Any, **params: Any) -> Any:
    raise TypeError(f"can't apply forward-mode differentiation (jvp, jacfwd, hessian) to the custom_vjp function "
                    f"{params['call'].__name__}: it only defines a reverse-mode rule. Use fg.custom_jvp, or jacrev.")


custom_vjp_p.vjp = _CustomVJPRule()
custom_vjp_p.jvp = _no_forward_mode


class custom_jvp(_CustomRule):
    """A function with its own forward-mode rule: ``f = fg.custom_jvp(f); f.defjvp(rule)``,
    ``rule(primals, tangents) -> (out, tangent_out)``; reverse mode transposes it.

    Args:
        fun: the function.
        nondiff_argnums: positional arguments that are not differentiated.

    Example:
        >>> f = fg.custom_jvp(lambda x: x * 2.0)
        >>> _ = f.defjvp(lambda p, t: (p[0] * 2.0, t[0] * 10.0))
        >>> fg.grad(f)(fg.asarray(1.0)).item()
        10.0
    """

    primitive = custom_jvp_p
    kind, define = "custom_jvp", "defjvp(rule)"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.rule: Callable[..., Any] | None = None

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Define the forward-mode rule: ``rule(primals, tangents) -> (out, tangent_out)``."""
        self.rule = rule
        return rule

    def _defined(self) -> bool:
        return self.rule is not None


def _custom_jvp_tangents(call: _Call, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    p_args = _tree.unflatten(call.in_tree, list(primals))
    t_args = _tree.unflatten(call.in_tree, list(tangents))
    rule = call.rule.rule
    if call.nondiff:
        out, t_out = rule(*call.static, tuple(p_args), tuple(t_args))
    else:
        out, t_out = rule(tuple(p_args), tuple(t_args))
    return _tree.leaves(out), _tree.leaves(t_out)


def _custom_jvp_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...], **params: Any) -> tuple[Any, Any]:
    call: _Call = params["call"]
    tangents = tuple(zeros_like(p) if t is None else t for p, t in zip(primals, tangents))
    out, t_out = _custom_jvp_tangents(call, primals, tangents)
    return tuple(out), tuple(t_out)


class _CustomJVPTranspose(VJPRule):
    """Reverse mode for custom_jvp: the VJP of the rule's (linear) tangent map."""

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        outs = bind(custom_jvp_p, *primals, **params)
        return outs, primals

    def bwd(self, primals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        call: _Call = params["call"]
        cts = tuple(zeros(a.shape, a.dtype, device=a.device) if c is None else c for c, a in zip(g, call.out_avals))
        zero_tangents = [zeros_like(p) for p in primals]
        _, lin_vjp = vjp(lambda *ts: tuple(_custom_jvp_tangents(call, primals, ts)[1]), *zero_tangents)
        return tuple(lin_vjp(cts))


custom_jvp_p.jvp = _custom_jvp_rule
custom_jvp_p.vjp = _CustomJVPTranspose()


# ---- batching: the rule of the batched function is the batched rule (every argument is
# given a batch axis first: an unbatched one is broadcast, and reverse mode sums its
# cotangent back through that broadcast)

def _batched_args(args: tuple[Any, ...], dims: tuple[Any, ...]) -> list[Any]:
    n = axis_size(args, dims)
    return [to_front(a, d, n) for a, d in zip(args, dims)]


def _custom_vjp_batch(args: tuple[Any, ...], dims: tuple[Any, ...], *, call: _Call) -> tuple[Any, Any]:
    rule: custom_vjp = call.rule

    def fwd(*flat: Any) -> Any:
        out, residuals = rule.fwd(*_merge(call.static, _tree.unflatten(call.in_tree, list(flat)), call.nondiff))  # type: ignore[misc]
        return tuple(_tree.leaves(out)), residuals

    def bwd(residuals: Any, g: Any) -> Any:
        cts = _CustomVJPRule().bwd(residuals, g, {"call": call})
        return tuple(cts)

    batched = custom_vjp(vmap(lambda *flat: tuple(call.call(flat))))
    batched.defvjp(vmap(fwd), vmap(bwd))
    outs = batched(*_batched_args(args, dims))
    return outs, (0,) * len(outs)


def _custom_jvp_batch(args: tuple[Any, ...], dims: tuple[Any, ...], *, call: _Call) -> tuple[Any, Any]:
    batched = custom_jvp(vmap(lambda *flat: tuple(call.call(flat))))
    batched.defjvp(vmap(lambda primals, tangents: tuple(
        tuple(part) for part in _custom_jvp_tangents(call, primals, tangents))))
    outs = batched(*_batched_args(args, dims))
    return outs, (0,) * len(outs)


custom_vjp_p.batch = _custom_vjp_batch
custom_jvp_p.batch = _custom_jvp_batch
