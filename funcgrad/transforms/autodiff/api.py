"""The user-facing derivative transforms (JAX names and semantics).

``vjp`` and ``jvp`` are the two primitives of the API; ``grad``,
``value_and_grad``, ``jacrev``, ``jacfwd`` and ``hessian`` are built on them.
All accept and return pytrees.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ... import ops
from ... import tree as _tree
from ...array import ArrayBase
from ...errors import ArgumentTypeError, DTypeError, ShapeError
from ...primitives.core import bind, fmt_shape
from ...primitives.shape import stop_gradient_p
from ..core import new_interpreter, require_argnums, require_callable, user_transform
from ..grad_mode import is_grad_enabled, no_grad
from ..vmap import vmap
from .interpreters import JVPInterpreter, JVPTracer, VJPInterpreter, VJPTracer, backprop, check_differentiable

__all__ = ["vjp", "jvp", "grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "stop_gradient", "no_grad"]


def as_array(x: Any) -> Any:
    if isinstance(x, ArrayBase):
        return x
    return ops.asarray(x)


def _differentiated(x: Any) -> Any:
    """An argument the transform differentiates. While the tape records, a requires_grad
    array keeps its history, so the transform's results have history too (as
    ``torch.func`` composes with autograd): a rule that calls ``fg.vjp`` inside a
    ``create_graph=True`` backward pass gives a differentiable cotangent. Otherwise it is
    detached (a view), which only saves the tape's bookkeeping."""
    x = as_array(x)
    return x.detach() if getattr(x, "_autograd", None) is not None and not is_grad_enabled() else x


def _split_aux(out: Any, has_aux: bool, fn_name: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        length = f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""
        raise TypeError(f"{fn_name}: has_aux=True requires the function to return a pair (output, aux), "
                        f"got {type(out).__name__}{length}")
    return out[0], out[1]


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Reverse mode: ``f``'s output at ``primals`` and a function pulling cotangents back.

    Args:
        f: the function, of arrays and pytrees of arrays.
        *primals: the point, one value per positional argument of ``f``.
        has_aux: ``f`` returns ``(out, aux)``; ``aux`` is passed through undifferentiated.

    Returns:
        ``(out, f_vjp)``, or ``(out, f_vjp, aux)``: ``f_vjp(cotangent)`` (a cotangent shaped
        as ``out``) returns one cotangent per primal, and may be called any number of times.

    Example:
        >>> out, f_vjp = fg.vjp(lambda x: x * x, fg.asarray([1.0, 2.0]))
        >>> f_vjp(fg.ones(2))[0].tolist()
        [2.0, 4.0]
    """
    require_callable("vjp", f)
    return _vjp(f, primals, has_aux)


def record(f: Callable[..., Any], primals: tuple[Any, ...], has_aux: bool, argnums: tuple[int, ...] | None,
            fn_name: str) -> tuple[Any, ...]:
    """Run ``f`` on ``primals`` under a new VJP interpreter, recording its graph. Returns
    ``(out, aux, interp, flat, in_tree, leaves)``: ``f``'s output (tracers where it depends
    on the primals), its aux output, the interpreter, the flattened primals and their
    structure, and the graph's leaf node per primal (``None`` for an integer one). With
    ``argnums`` (the argument number of each primal: ``grad``'s callers), every leaf must
    also be floating point, checked in the same pass over the leaves."""
    flat, in_tree = _tree.flatten(primals)
    flat = [_differentiated(x) for x in flat]
    if argnums is not None:
        leaves = iter(flat)
        for n, sub in zip(argnums, in_tree.children):
            for _ in range(sub.num_leaves):
                check_differentiable(next(leaves), f"grad: argument {n}")
    interp = VJPInterpreter()
    with new_interpreter(interp):
        tracers = [interp.leaf(x, i) if x.dtype.kind in "fc" else x for i, x in enumerate(flat)]
        out = f(*_tree.unflatten(in_tree, tracers))
        out, aux = _split_aux(out, has_aux, fn_name)
    return out, aux, interp, flat, in_tree, [t.node if isinstance(t, VJPTracer) else None for t in tracers]


def _cotangents(seeds: list[Any], leaves: list[Any], flat: list[Any], in_tree: Any, release: bool = False) -> Any:
    """The primals' cotangents (zeros where none arrives), as a tree like the primals.
    ``release``: the graph is walked only this once (``grad``), so it frees as it goes."""
    tracked = [n for n in leaves if n is not None]
    it = iter(backprop(seeds, tracked, release) if seeds else [None] * len(tracked))
    cts = [(next(it) if n is not None else None) for n in leaves]
    return _tree.unflatten(in_tree, [ops.zeros_like(x) if c is None else c for c, x in zip(cts, flat)])


def _vjp(f: Callable[..., Any], primals: tuple[Any, ...], has_aux: bool) -> Any:
    out, aux, interp, flat, in_tree, leaves = record(f, primals, has_aux, None, "vjp")
    out_flat, out_tree = _tree.flatten(out)
    roots = [(o.node, o.index) if isinstance(o, VJPTracer) and o._interp is interp else None for o in out_flat]
    out_primals = [o.primal if isinstance(o, VJPTracer) and o._interp is interp else o for o in out_flat]

    def f_vjp(cotangent: Any) -> tuple[Any, ...]:
        ct_flat, ct_tree = _tree.flatten(cotangent)
        if ct_tree != out_tree:
            raise ValueError(f"vjp: the cotangent has structure {ct_tree!r}, the output {out_tree!r}")
        seeds = []
        for r, o, c in zip(roots, out_primals, ct_flat):
            c = as_array(c)
            if tuple(c.shape) != tuple(o.shape):
                raise ShapeError(f"vjp: cotangent of shape {fmt_shape(tuple(c.shape))} for an output of shape "
                                 f"{fmt_shape(tuple(o.shape))}")
            if r is not None:
                seeds.append((r[0], r[1], c.astype(o.dtype, copy=False)))
        return _cotangents(seeds, leaves, flat, in_tree)  # type: ignore[no-any-return]

    result = _tree.unflatten(out_tree, out_primals)
    return (result, f_vjp, _strip(aux, interp)) if has_aux else (result, f_vjp)


def _strip(aux: Any, interp: Any) -> Any:
    """Aux outputs are returned as values, without derivative tracking."""
    return _tree.map(lambda a: a.primal if isinstance(a, (VJPTracer, JVPTracer)) and a._interp is interp else a, aux)


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> Any:
    """Forward mode: the directional derivative of ``f`` at ``primals`` along ``tangents``.

    Args:
        f: the function.
        primals: a tuple or list, one value per positional argument of ``f``.
        tangents: the direction, shaped as ``primals``.
        has_aux: ``f`` returns ``(out, aux)``.

    Returns:
        ``(out, tangent_out)``, or ``(out, tangent_out, aux)``.

    Example:
        >>> fg.jvp(lambda x: x * x, (fg.asarray(3.0),), (fg.asarray(1.0),))[1].item()
        6.0
    """
    require_callable("jvp", f)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists (one entry per argument)")
    flat, in_tree = _tree.flatten(tuple(primals))
    t_flat, t_tree = _tree.flatten(tuple(tangents))
    if in_tree != t_tree:
        raise ValueError(f"jvp: tangents have structure {t_tree!r}, primals {in_tree!r}")
    flat = [_differentiated(x) for x in flat]
    t_flat = [as_array(t) for t in t_flat]
    for x, t in zip(flat, t_flat):
        if tuple(x.shape) != tuple(t.shape) or (x.dtype.kind in "fc" and t.dtype is not x.dtype):
            raise ShapeError(f"jvp: tangent {t.aval.str_short() if hasattr(t, 'aval') else t} does not match "
                             f"primal {x.aval.str_short() if hasattr(x, 'aval') else x} (same shape and dtype needed)")
    interp = JVPInterpreter()
    with new_interpreter(interp):
        tracers = [JVPTracer(interp, x, t) if x.dtype.kind in "fc" else x for x, t in zip(flat, t_flat)]
        out = f(*_tree.unflatten(in_tree, tracers))
        out, aux = _split_aux(out, has_aux, "jvp")
    out_flat, out_tree = _tree.flatten(out)
    primals_out, tangents_out = [], []
    for o in out_flat:
        if isinstance(o, JVPTracer) and o._interp is interp:
            primals_out.append(o.primal)
            tangents_out.append(o.tangent)
        else:
            o = as_array(o)
            primals_out.append(o)
            tangents_out.append(ops.zeros_like(o))
    result = (_tree.unflatten(out_tree, primals_out), _tree.unflatten(out_tree, tangents_out))
    return result + (_strip(aux, interp),) if has_aux else result


def _argnums(argnums: Any, nargs: int, fn_name: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise TypeError(f"{fn_name}: argnums={argnums!r} is out of range: the function was called with "
                            f"{nargs} positional argument(s)")
    return tuple(n % nargs for n in nums)


def with_args(f: Callable[..., Any], args: tuple[Any, ...], nums: tuple[int, ...], **kwargs: Any) -> Any:
    """``f`` as a function of ``args[nums]`` alone (the other arguments fixed)."""

    def partial_f(*diff_args: Any) -> Any:
        full = list(args)
        for n, a in zip(nums, diff_args):
            full[n] = a
        return f(*full, **kwargs)

    return partial_f


def value_and_grad(f: Callable[..., Any], argnums: Any = 0, has_aux: bool = False,
                   holomorphic: bool = False, *, argnum: Any = None) -> Callable[..., Any]:
    """``f``'s value and its gradient, in one pass.

    Args:
        f: a function with one output element (a scalar, or any shape of size 1).
        argnums: the positional argument (an int) or arguments (a tuple) to differentiate.
        has_aux: ``f`` returns ``(out, aux)``; the result is then ``((out, aux), grad)``.
        holomorphic: differentiate a complex output of complex arguments, giving f'(z). A
            real output of complex arguments gives dL/dx - i dL/dy (JAX's convention:
            conjugate it for a descent direction).
        argnum: autograd's name for ``argnums``.

    Returns:
        A function of ``f``'s arguments returning ``(value, gradient)``; the gradient has the
        structure of the differentiated argument (a tuple of them for a tuple ``argnums``).

    Example:
        >>> value, g = fg.value_and_grad(lambda x: fg.sum(x * x))(fg.asarray([1.0, 2.0]))
        >>> value.item(), g.tolist()
        (5.0, [2.0, 4.0])
    """
    require_callable("value_and_grad", f)
    argnums = _one_argnums("value_and_grad", argnums, argnum)
    require_argnums("value_and_grad", argnums)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "grad")
        out, aux, interp, flat, in_tree, leaves = record(with_args(f, args, nums, **kwargs),
                                                          tuple(args[n] for n in nums), has_aux, nums, "grad")
        traced = isinstance(out, VJPTracer) and out._interp is interp
        value = out.primal if traced else out
        if isinstance(value, (bool, int, float)):
            raise ArgumentTypeError(f"grad: the function returned a Python {type(value).__name__} ({value!r}), not a "
                                    "funcgrad array, so its result does not depend on the arguments through fg.* "
                                    "operations (compute it with fg.* functions; a constant's gradient is zero)")
        if not isinstance(value, ArrayBase) or value.size != 1:  # (one element of any shape, as
            # PyTorch's backward() and autograd's grad take it; JAX asks for shape ())
            shape = fmt_shape(tuple(value.shape)) if isinstance(value, ArrayBase) else type(value).__name__
            raise ShapeError(
                f"grad: the function must return a scalar (one element), but it returned shape {shape}. "
                "For a non-scalar output use fg.vjp (a cotangent per output), fg.jacrev (the full Jacobian), "
                "or reduce it first, e.g. return loss.sum().")
        if holomorphic:
            _check_holomorphic(value, flat)
        elif value.dtype.kind == "c":
            raise DTypeError(f"grad: the function returned dtype {value.dtype}; grad needs a real-valued output. For a "
                             "holomorphic function pass holomorphic=True; for a non-holomorphic one with complex "
                             "outputs use fg.vjp")
        elif value.dtype.kind != "f":
            raise DTypeError(f"grad: the function returned dtype {value.dtype}; a floating-point scalar is needed")
        # the seed: d out / d out = 1 (vjp's cotangent, without its checks: the output is one scalar)
        seeds = [(out.node, out.index, ops.ones_like(value))] if traced else []
        del out  # the graph lives in the seeds now, and is freed as the backward pass walks it
        grads = _cotangents(seeds, leaves, flat, in_tree, release=True)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((value, _strip(aux, interp)), g) if has_aux else (value, g)

    return user_transform("value_and_grad", wrapper)


def _check_holomorphic(value: Any, flat: list[Any]) -> None:
    if value.dtype.kind != "c":
        raise DTypeError(f"grad with holomorphic=True needs a complex output, but the function returned {value.dtype}")
    for x in flat:
        if x.dtype.kind != "c":
            raise DTypeError(f"grad with holomorphic=True needs complex arguments, but one is {x.dtype}")


def _one_argnums(op: str, argnums: Any, argnum: Any) -> Any:
    """``argnums``, or autograd's ``argnum`` in its place (not both)."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise ArgumentTypeError(f"{op}: give argnums or autograd's argnum, not both")
    return argnum


def grad(f: Callable[..., Any], argnums: Any = 0, has_aux: bool = False,
         holomorphic: bool = False, *, argnum: Any = None) -> Callable[..., Any]:
    """The gradient of ``f``, a function with one output element.

    Args:
        f: the function.
        argnums: the positional argument (an int) or arguments (a tuple) to differentiate.
        has_aux: ``f`` returns ``(out, aux)``; the result is then ``(grad, aux)``.
        holomorphic: as in ``value_and_grad``.
        argnum: autograd's name for ``argnums``.

    Returns:
        A function of ``f``'s arguments returning the gradient, shaped as the argument.

    Example:
        >>> fg.grad(lambda x: fg.sum(fg.sin(x)))(fg.zeros(2)).tolist()
        [1.0, 1.0]
    """
    require_callable("grad", f)
    argnums = _one_argnums("grad", argnums, argnum)
    require_argnums("grad", argnums)
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        (value_aux, g) = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g

    return user_transform("grad", wrapper)


def _std_basis(x: Any) -> Any:
    n = x.size
    return ops.reshape(ops.eye(n, dtype=x.dtype, device=x.device), (n,) + tuple(x.shape))


def jacrev(f: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """The Jacobian by reverse mode: the VJP of every output element at once (``vmap`` over
    the rows of the identity); best for few outputs.

    Args:
        f: the function.
        argnums: the positional argument or arguments to differentiate.

    Returns:
        A function returning the Jacobian, of shape ``out.shape + arg.shape`` (pytrees:
        outputs outside, arguments inside).

    Example:
        >>> fg.jacrev(lambda x: x * x)(fg.asarray([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    require_callable("jacrev", f)
    require_argnums("jacrev", argnums)

    def wrapper(*args: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacrev")
        args = tuple(as_array(a) if n in nums and isinstance(a, (int, float, complex)) else a
                     for n, a in enumerate(args))  # (a number differentiated: a 0-d array)
        diff = tuple(args[n] for n in nums)
        out, f_vjp = vjp(with_args(f, args, nums), *diff)
        out_flat, out_tree = _tree.flatten(out)
        in_flat, in_tree = _tree.flatten(diff)
        blocks = []
        for i, o in enumerate(out_flat):
            if o.size == 0:
                per_in = [_empty(o, x) for x in in_flat]
            else:
                def pull(seed: Any, i: int = i) -> list[Any]:
                    seeds = [_zeros(q) for q in out_flat]
                    seeds[i] = seed
                    return _tree.leaves(f_vjp(_tree.unflatten(out_tree, seeds)))

                rows = vmap(pull)(_std_basis(o))  # per input: (o.size, *x.shape)
                per_in = [ops.reshape(r, tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, in_flat)]
            blocks.append(_tree.unflatten(in_tree, per_in))
        blocks = [b[0] if isinstance(argnums, int) else b for b in blocks]
        return _tree.unflatten(out_tree, blocks)

    return user_transform("jacrev", wrapper)


def _zeros(x: Any) -> Any:
    return ops.zeros_like(x)


def _empty(o: Any, x: Any) -> Any:
    return ops.zeros(tuple(o.shape) + tuple(x.shape), x.dtype, device=x.device)


def jacfwd(f: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """The Jacobian by forward mode: the JVP along every input element at once (``vmap``
    over the identity's rows); best for few inputs.

    Args:
        f: the function.
        argnums: the positional argument or arguments to differentiate.

    Returns:
        A function returning the Jacobian, of shape ``out.shape + arg.shape``.

    Example:
        >>> fg.jacfwd(lambda x: x * x)(fg.asarray([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    require_callable("jacfwd", f)
    require_argnums("jacfwd", argnums)

    def wrapper(*args: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacfwd")
        diff = tuple(args[n] for n in nums)
        in_flat, in_tree = _tree.flatten(diff)
        in_flat = [as_array(x) for x in in_flat]
        for n, x in zip(nums, in_flat):
            check_differentiable(x, f"jacfwd: argument {n}")
        partial_f = with_args(f, args, nums)
        primals = _tree.unflatten(in_tree, in_flat)
        columns: list[Any] = []  # per input leaf: per output leaf, (x.size, *o.shape), or None if x is empty
        out = None
        for j, x in enumerate(in_flat):
            if x.size == 0:
                columns.append(None)
                continue

            def push(t: Any, j: int = j) -> tuple[Any, list[Any]]:
                tangents = [_zeros(q) for q in in_flat]
                tangents[j] = t
                out, t_out = jvp(partial_f, primals, _tree.unflatten(in_tree, tangents))
                return out, _tree.leaves(t_out)

            outs, cols = vmap(push)(_std_basis(x))  # (a rule may batch the primal output too: take one)
            out = _tree.map(lambda o: o[0], outs)
            columns.append(cols)
        out_flat, out_tree = _tree.flatten(partial_f(*diff) if out is None else out)
        blocks = []
        for i, o in enumerate(out_flat):
            per_in = [_empty(o, x) if cols is None else
                      ops.reshape(ops.moveaxis(cols[i], 0, -1), tuple(o.shape) + tuple(x.shape))
                      for x, cols in zip(in_flat, columns)]
            tree_in = _tree.unflatten(in_tree, per_in)
            blocks.append(tree_in[0] if isinstance(argnums, int) else tree_in)
        return _tree.unflatten(out_tree, blocks)

    return user_transform("jacfwd", wrapper)


def hessian(f: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """Second derivatives, ``jacfwd(jacrev(f))``.

    Args:
        f: the function, with one output element.
        argnums: the positional argument or arguments to differentiate.

    Returns:
        A function returning the Hessian, of shape ``arg.shape + arg.shape``.

    Example:
        >>> fg.hessian(lambda x: fg.sum(x ** 3))(fg.asarray([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    require_callable("hessian", f)
    require_argnums("hessian", argnums)
    return user_transform("hessian", jacfwd(jacrev(f, argnums), argnums))


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant to every enclosing derivative (JAX's ``lax.stop_gradient``,
    PyTorch's ``detach``).

    Args:
        x: an array, a number, or a pytree of them.

    Returns:
        The same values (a view: no copy), through which no derivative flows.

    Example:
        >>> fg.grad(lambda x: x * fg.stop_gradient(x))(3.0).item()
        3.0
    """

    def leaf(a: Any) -> Any:
        if isinstance(a, ArrayBase):
            return bind(stop_gradient_p, as_array(a))
        if a is None or isinstance(a, (bool, int, float, complex)):
            return a
        raise ArgumentTypeError(f"fg.stop_gradient: expected arrays, numbers or pytrees of them, got "
                                f"{type(a).__name__} {a!r}")

    return _tree.map(leaf, x)
