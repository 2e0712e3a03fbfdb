"""Helpers for writing derivative rules next to their primitives.

Rules are one-liners per input, as in HIPS autograd's ``defvjp``:

* ``defjvp(prim, rule_x, rule_y, ...)``: ``rule(t, ans, *args, **params)`` is the
  output tangent contributed by input ``t`` (linear in ``t``); ``None`` marks an
  input with no derivative. The contributions are added up.
* ``defvjp(prim, rule_x, ..., saves=...)``: ``rule(g, ans, *args, **params)`` is
  the cotangent of one input. ``saves`` declares what the backward pass keeps:
  ``"ans"``, ``"args"``, ``"both"`` or ``"none"``. An input that is not kept reaches the
  rule as its ``ShapedArray`` (shape and dtype still known), so the tape holds
  exactly what the rule needs, as PyTorch's saved tensors do.

Rules return cotangents in the *output's* broadcast shape: the autodiff
interpreter sums them back to each input's shape in one place.
Rules compute with ``primitives/lax.py``'s wrappers (one per primitive, no promotion) and
their operands' arithmetic operators, which bind primitives again, so one rule serves
every transform: whichever interpreter is current when it runs records its binds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .core import Primitive, ShapedArray, aval_of, bind

__all__ = ["add_optional", "defjvp", "defvjp", "defelementwise", "deflinear", "JVPFromRules", "InputsVJP", "VJPRule",
           "VJPFromRules"]


def add_optional(a: Any, b: Any) -> Any:
    """``a + b``, where ``None`` is a zero (a tangent or cotangent no term contributed)."""
    return b if a is None else a if b is None else a + b


class JVPFromRules:
    """``prim.jvp``: ``(primals, tangents, **params) -> (ans, tangent or None)``."""

    def __init__(self, prim: Primitive, rules: tuple[Callable[..., Any] | None, ...],
                 each: Callable[..., Any] | None = None) -> None:
        self.prim, self.rules, self.each = prim, rules, each

    def rule(self, i: int) -> Callable[..., Any] | None:
        if self.each is not None:
            return lambda *a, **p: self.each(i, *a, **p)  # type: ignore[misc]
        return self.rules[i] if i < len(self.rules) else None

    def __call__(self, primals: tuple[Any, ...], tangents: tuple[Any, ...], **params: Any) -> tuple[Any, Any]:
        ans = bind(self.prim, *primals, **params)
        out = None
        for i, t in enumerate(tangents):
            rule = None if t is None else self.rule(i)
            if rule is None:
                continue
            out = add_optional(out, rule(t, ans, *primals, **params))
        return ans, out


class VJPRule:
    """What every primitive's reverse-mode rule (``prim.vjp``) provides; reverse mode calls
    nothing else. ``fwd`` computes the outputs and what the backward pass keeps; ``bwd`` maps
    those residuals and the outputs' cotangents to one cotangent (or ``None``) per input;
    ``residuals`` gives what ``fwd`` would keep when the outputs are already known (a
    checkpoint policy saved them). ``needs``: per input, whether a cotangent is asked for.
    ``plannable``: ``bwd`` binds primitives alone, from a tuple of residuals (arrays,
    shapes, Python scalars) and the parameters, so a backward plan may trace it once and
    replay it (``transforms/compiler/plans.py``); rules that run user code are not."""

    plannable = False

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        raise NotImplementedError

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        raise NotImplementedError

    def residuals(self, primals: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        """By default the forward pass runs again for its residuals (a call-like primitive's
        rules keep values only its forward pass makes); rules that keep inputs and outputs
        pick them instead."""
        return self.fwd(primals, params)[1]


_NOTHING = [(None, (None,) * n) for n in range(8)]  # what a rule that reads nothing keeps, by arity


class InputsVJP(VJPRule):
    """A rule whose backward pass reads the primitive's inputs alone (a fused backward
    pass's rules, which differentiate its composite): ``fwd`` binds ``prim`` and keeps its
    inputs; a subclass writes ``bwd``."""

    plannable = True
    prim: Primitive

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        return bind(self.prim, *primals, **params), tuple(primals)

    def residuals(self, primals: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        return tuple(primals)


class VJPFromRules(VJPRule):
    """``prim.vjp``: ``fwd(primals, params) -> (ans, residuals)`` and
    ``bwd(residuals, g, params, needs) -> one cotangent (or None) per input``."""

    plannable = True

    def __init__(self, prim: Primitive, rules: tuple[Callable[..., Any] | None, ...], saves: Any,
                 each: Callable[..., Any] | None = None) -> None:
        if not (saves in ("ans", "args", "both", "none", "nothing") or isinstance(saves, tuple)):
            raise ValueError(f"defvjp({prim.name}): saves must be 'ans', 'args', 'both', 'none', 'nothing' or a tuple")
        self.prim, self.rules, self.each = prim, rules, each
        self.keep_ans = saves in ("ans", "both") or (isinstance(saves, tuple) and "ans" in saves)
        self.keep_args = saves in ("args", "both")
        self.keep_some = tuple(i for i in saves if isinstance(i, int)) if isinstance(saves, tuple) else ()
        self.keep_nothing = saves == "nothing"  # the rules read neither values nor shapes (add, sub)

    def fwd(self, primals: tuple[Any, ...], params: dict[str, Any], needs: Any = None) -> tuple[Any, Any]:
        ans = bind(self.prim, *primals, **params)
        return ans, self.residuals(primals, params, ans)

    def residuals(self, primals: tuple[Any, ...], params: dict[str, Any], ans: Any) -> Any:
        """What the backward pass keeps, given the inputs and the output."""
        if self.keep_nothing:
            n = len(primals)
            return _NOTHING[n] if n < len(_NOTHING) else (None, (None,) * n)
        if self.keep_args:
            args = primals
        elif not self.keep_some:  # aval_of, inline for concrete arrays: this runs once per recorded operation
            args = tuple([ShapedArray(d.shape, p._dtype, p._device) if (d := getattr(p, "_data", None)) is not None
                          else aval_of(p) for p in primals])
        else:
            keep = self.keep_some
            args = tuple(p if i in keep else aval_of(p) for i, p in enumerate(primals))
        return (ans if self.keep_ans else None, args)

    def bwd(self, residuals: Any, g: Any, params: dict[str, Any], needs: Any = None) -> tuple[Any, ...]:
        ans, args = residuals
        out: list[Any] = []
        for i in range(len(args)):
            if needs is not None and not needs[i]:
                out.append(None)
                continue
            if self.each is not None:
                out.append(self.each(i, g, ans, *args, **params))
            else:
                rule = self.rules[i] if i < len(self.rules) else None
                out.append(None if rule is None else rule(g, ans, *args, **params))
        return tuple(out)


def defjvp(prim: Primitive, *rules: Callable[..., Any] | None, each: Callable[..., Any] | None = None) -> None:
    """Per-input tangent rules, or ``each(i, t, ans, *args, **params)`` for variadic primitives."""
    prim.jvp = JVPFromRules(prim, rules, each)


def defvjp(prim: Primitive, *rules: Callable[..., Any] | None, saves: Any = "both",
           each: Callable[..., Any] | None = None) -> None:
    """Per-input cotangent rules, or ``each(i, g, ans, *args, **params)`` for variadic primitives.
    ``saves``: ``"ans"``, ``"args"``, ``"both"``, ``"none"`` (the inputs' shapes and dtypes
    only), ``"nothing"`` (the rules read no input: they get ``None`` for each), or a tuple
    of input positions (and ``"ans"``)."""
    prim.vjp = VJPFromRules(prim, rules, saves, each)


def defelementwise(prim: Primitive, *rules: Callable[..., Any] | None, saves: Any = "both") -> None:
    """An elementwise primitive's Jacobian is diagonal, so each rule, ``rule(t, ans, *args)``
    (``t`` times the partial), is both its tangent contribution and its cotangent."""
    defjvp(prim, *rules)
    defvjp(prim, *rules, saves=saves)


def deflinear(prim: Primitive, *vjp_rules: Callable[..., Any] | None, each: Callable[..., Any] | None = None) -> None:
    """A primitive linear in its (first) array input: its JVP applies the primitive to the
    tangent, and its VJP rules need only shapes (nothing is saved)."""
    defjvp(prim, lambda t, ans, x, *rest, **params: bind(prim, t, *rest, **params))
    defvjp(prim, *vjp_rules, saves="none", each=each)
