"""``check_grads``: derivatives against finite differences, and modes against each other.

For ``modes=("fwd",)``: the JVP along a random direction equals the central
difference ``(f(x + eps v) - f(x - eps v)) / 2 eps``. For ``("rev",)``: with a
random output cotangent ``u``, ``<v, J^T u>`` from the VJP equals ``<J v, u>``
from finite differences; with both modes, the dot-product test
``<J v, u> == <v, J^T u>`` also runs between the two exact derivatives.
``order=2`` repeats all of it on the derivative functions themselves.
Everything runs in float64 (complex128) by default. Complex values pair bilinearly,
``<a, b> = Re(sum(a * b))``, as JAX's cotangents do: a complex argument's cotangent is
checked along random complex directions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops
from .. import tree as _tree
from ..array import Array, ArrayBase
from ..dtypes import complex128, float64
from ..transforms.autodiff.api import jvp, vjp

__all__ = ["check_grads", "numerical_jvp"]


def _is_float(x: Any) -> bool:
    """Real or complex floating point: the values that carry derivatives."""
    return isinstance(x, ArrayBase) and x.dtype.kind in "fc"


def _to64(x: Any) -> Any:
    if isinstance(x, (float, complex)):
        return ops.asarray(x, float64 if isinstance(x, float) else complex128)
    if not _is_float(x):
        return x
    wide = complex128 if x.dtype.kind == "c" else float64
    return ops.astype(x, wide) if x.dtype is not wide else x


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    def draw(x: Any) -> Any:
        if not _is_float(x):
            return x
        value = rng.standard_normal(tuple(x.shape))
        if x.dtype.kind == "c":
            value = value + 1j * rng.standard_normal(tuple(x.shape))
        return ops.asarray(value, x.dtype, device=x.device)

    return _tree.map(draw, tree)


def _zero_nonfloat(tangents: Any, primals: Any) -> Any:
    return _tree.map(lambda t, p: t if _is_float(p) else ops.zeros_like(p), tangents, primals)


def _add_scaled(primals: Any, tangents: Any, scale: float) -> Any:
    return _tree.map(lambda p, t: p + scale * t if _is_float(p) else p, primals, tangents)


def _as_arrays(tree: Any) -> Any:
    """NumPy values among ``f``'s results as arrays (NumPy's functions of plain arrays, which
    the finite differences evaluate, return NumPy's)."""
    return _tree.map(lambda v: ops.asarray(v) if isinstance(v, (np.ndarray, np.generic, float, complex)) else v,
                     tree)


def numerical_jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], eps: float) -> Any:
    """Central difference of ``f`` at ``primals`` along ``tangents`` (non-float leaves fixed).

    Example:
        >>> x, t = fg.asarray([3.0], dtype=fg.float64), fg.asarray([1.0], dtype=fg.float64)
        >>> fg.testing.numerical_jvp(lambda v: v * v, (x,), (t,), 1e-6).round(6).tolist()
        [6.0]
    """
    plus = _as_arrays(f(*_add_scaled(tuple(primals), tuple(tangents), eps)))
    minus = _as_arrays(f(*_add_scaled(tuple(primals), tuple(tangents), -eps)))
    return _tree.map(lambda a, b: (a - b) / (2 * eps) if _is_float(a) else None, plus, minus)


def _leaves(tree: Any) -> list[Any]:
    """The leaves, a ``None`` (no derivative: an integer or bool output) kept in its place, so
    that two trees of one structure pair up leaf by leaf."""
    return _tree.leaves(tree, is_leaf=lambda v: v is None)


def _inner(a: Any, b: Any) -> float:
    total = 0.0
    for x, y in zip(_leaves(a), _leaves(b)):
        if _is_float(x) and _is_float(y):
            product = ops.sum(_to64(x) * _to64(y))
            total += float(ops.real(product) if product.dtype.kind == "c" else product)
    return total


def _close(name: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    for g, w in zip(_leaves(got), _leaves(want)):
        if g is None or w is None:
            continue
        g_np = np.asarray(g.numpy() if isinstance(g, Array) else g)
        w_np = np.asarray(w.numpy() if isinstance(w, Array) else w)
        wide = np.complex128 if "c" in (g_np.dtype.kind, w_np.dtype.kind) else np.float64
        g_np, w_np = g_np.astype(wide), w_np.astype(wide)
        np.testing.assert_allclose(g_np, w_np, atol=atol, rtol=rtol, err_msg=name)


def _scalar_close(name: str, got: float, want: float, atol: float, rtol: float) -> None:
    if not abs(got - want) <= atol + rtol * abs(want):
        raise AssertionError(f"{name}: {got!r} != {want!r} (atol={atol}, rtol={rtol})")


def check_grads(f: Callable[..., Any], args: Sequence[Any] | None = None, order: int = 2,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None, rtol: float | None = None,
                eps: float | None = None, seed: int = 0, dtype: Any = "float64") -> Any:
    """Check ``f``'s derivatives at ``args`` up to ``order``; raise ``AssertionError`` if any is wrong.

    Float arguments are cast to ``dtype`` (float64 by default); integer and bool
    arguments stay fixed. ``f`` takes positional arguments and returns a pytree. Without
    ``args``, autograd's form: ``check_grads(f, modes=["rev"])(*args)`` checks at the
    arguments of that call.

    Example:
        >>> fg.testing.check_grads(lambda x: fg.sin(x) * x, (fg.asarray([0.5, 1.0]),), order=2)  # (silent: all correct)
    """
    if args is None:
        return lambda *call_args: check_grads(f, call_args, order, modes, atol, rtol, eps, seed, dtype)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r}; use 'fwd' and/or 'rev'")
    low = dtype != "float64"
    atol = atol if atol is not None else (1e-2 if low else 1e-5)
    rtol = rtol if rtol is not None else (1e-2 if low else 1e-5)
    eps = eps if eps is not None else (1e-3 if low else 1e-5)
    rng = np.random.default_rng(seed)
    args = tuple(_to64(a) for a in args) if not low else tuple(args)
    _check(f, args, order, tuple(modes), atol, rtol, eps, rng)


def _check(f: Callable[..., Any], args: tuple[Any, ...], order: int, modes: tuple[str, ...], atol: float,
           rtol: float, eps: float, rng: np.random.Generator) -> None:
    tangents = _zero_nonfloat(_random_like(args, rng), args)
    out_ref = _as_arrays(f(*args))
    num = numerical_jvp(f, args, tangents, eps)
    jv = None
    if "fwd" in modes:
        out, jv = jvp(f, args, tangents)
        _close("jvp primal output", out, out_ref, atol, rtol)
        _close("jvp vs finite differences", jv, num, atol, rtol)
    if "rev" in modes:
        out, f_vjp = vjp(f, *args)
        _close("vjp primal output", out, out_ref, atol, rtol)
        ct = _random_like(out, rng)
        ct_in = f_vjp(ct)
        lhs = _inner(tangents, ct_in)
        _scalar_close("vjp vs finite differences: <v, J^T u> vs <J v, u>", lhs, _inner(num, ct), atol * 10, rtol * 10)
        if jv is not None:
            _scalar_close("dot-product test <J v, u> == <v, J^T u>", _inner(jv, ct), lhs, atol, rtol)
    if order > 1:
        if "fwd" in modes:
            def f_jvp(*flat: Any) -> Any:
                n = len(flat) // 2
                return jvp(f, flat[:n], flat[n:])[1]

            _check(f_jvp, args + tuple(tangents), order - 1, modes, atol, rtol, eps, rng)
        if "rev" in modes:
            out = f(*args)
            ct_fixed = _random_like(out, rng)

            def f_vjp2(*a: Any) -> Any:
                return vjp(f, *a)[1](ct_fixed)

            _check(f_vjp2, args, order - 1, modes, atol, rtol, eps, rng)
