"""Matrix products and ``fg.linalg`` (norm, solve, inv, cholesky, and array API names)."""

from __future__ import annotations

import builtins
from typing import Any

from .. import dtypes as _dt
from ..array import Array, ArrayBase
from ..errors import ArgumentTypeError, ArgumentValueError, LinAlgError, ShapeError
from ..primitives.checks import normalize_axes
from ..primitives.core import bind, fmt_shape
from ..primitives.decompositions import svd_p
from ..primitives.elementwise import conj_p
from ..primitives.linalg import cholesky_p, einsum_p, matmul_p, solve_p
from .creation import eye
from .elementwise import abs, as_operand, cast_to, multiply, power, promote, square
from .reduce import count_nonzero, max, min, root_of_squares, sum
from .shape import broadcast_to, expand_dims, matrix_transpose, moveaxis, reshape

__all__ = ["matmul", "dot", "vdot", "vecdot", "inner", "outer", "einsum", "tensordot", "norm", "vector_norm",
           "matrix_norm", "solve", "inv", "cholesky", "matrix_transpose"]


def _float_pair(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    return promote(op, (a, b), floating=True)  # type: ignore[return-value]


_PRECISIONS = {None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "fastest"}


def _accumulating(op: str, operands: tuple[Any, ...], precision: Any, preferred_element_type: Any) -> tuple[Any, ...]:
    """JAX's ``precision=`` and ``preferred_element_type=``: the precision is accepted (a
    product is computed in its operands' full precision here, ``"highest"`` on every
    setting), and a preferred element type is the dtype the product accumulates and
    returns in (int8 operands summed in int32, say)."""
    names = precision if isinstance(precision, (tuple, list)) else (precision,)
    for name in names:
        if getattr(name, "name", name) not in _PRECISIONS and str(name).lower() not in _PRECISIONS:
            raise ArgumentValueError(f"{op}: precision must be None, one of {sorted(p for p in _PRECISIONS if p)} "
                                     f"or a pair of them, got {precision!r}")
    if preferred_element_type is None:
        return operands
    d = _dt.as_dtype(preferred_element_type, op=op)
    return tuple(as_operand(x).astype(d) for x in operands)


def matmul(a: Any, b: Any, /, *, axes: Any = None, axis: Any = None, keepdims: bool = False, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """``a @ b`` with NumPy's rules: 1-D operands are vectors, leading axes broadcast as
    batches.

    Args:
        a: the left operand.
        b: the right operand.
        axes: NumPy's generalized-ufunc argument: per operand and for the result, the axes
            that hold its matrix (one axis for a vector), as ``[(i, j), (k, l), (m, n)]``.
        axis: NumPy's argument; a product has no single shared axis, so, as in NumPy, it is
            an error to give it.
        keepdims: likewise NumPy's, and an error when true.
        precision: JAX's argument (``"highest"`` or ``lax.Precision.HIGHEST`` accumulate in a
            wider type).
        preferred_element_type: JAX's argument: the type the product accumulates and
            returns in.

    Returns:
        The product.

    Example:
        >>> (fg.ones((4, 2, 3)) @ fg.ones((3, 5))).shape
        (4, 2, 5)
    """
    if axes is not None or axis is not None or keepdims:
        return _matmul_on_axes(a, b, axes, axis, keepdims, precision, preferred_element_type)
    if precision is not None or preferred_element_type is not None:
        a, b = _accumulating("matmul", (a, b), precision, preferred_element_type)
    if a.__class__ is Array and b.__class__ is Array and a._dtype is b._dtype and a._dtype is not _dt.bfloat16:
        return bind(matmul_p, a, b)
    if isinstance(a, ArrayBase) and isinstance(b, ArrayBase) and a.dtype is b.dtype and a.dtype is not _dt.bfloat16:
        # tracers: the same check through the public attributes
        return bind(matmul_p, a, b)
    a, b = promote("matmul", (as_operand(a), as_operand(b)))
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands need at least one dimension, got shapes {fmt_shape(tuple(a.shape))} and "
                         f"{fmt_shape(tuple(b.shape))} (use * to scale by a scalar)")
    if a.dtype is _dt.bfloat16:
        wide = bind(matmul_p, a.astype(_dt.float32), b.astype(_dt.float32))
        return wide.astype(_dt.bfloat16)
    return bind(matmul_p, a, b)


def _core_axes(op: str, entry: Any, count: int, ndim: int, which: str) -> tuple[int, ...]:
    """One entry of a generalized ufunc's ``axes``: ``count`` distinct axes of an array of
    ``ndim`` (an int where ``count`` is 1)."""
    picked = (entry,) if isinstance(entry, int) and not isinstance(entry, bool) else tuple(entry)
    if len(picked) != count or not all(isinstance(i, int) and not isinstance(i, bool) for i in picked):
        raise ArgumentValueError(f"{op}: axes entry {entry!r} for {which} must name {count} axis(es)")
    normalize_axes(op, picked, ndim)  # (checked: in range, no repeats)
    return tuple(i % ndim for i in picked)  # (in the order given: the matrix's rows, then its columns)


def _matmul_on_axes(a: Any, b: Any, axes: Any, axis: Any, keepdims: bool, precision: Any,
                    preferred_element_type: Any) -> Any:
    """``np.matmul(a, b, axes=...)``: each operand's matrix axes moved last, the product,
    and its matrix axes moved where the result's entry puts them."""
    if axis is not None:
        raise ArgumentTypeError("matmul: axis can only be used with a single shared core dimension, not with the "
                                "three of its signature (n?,k),(k,m?)->(n?,m?); use axes")
    if keepdims:
        raise ArgumentTypeError("matmul: keepdims is not supported: its result keeps its matrix axes")
    a, b = as_operand(a), as_operand(b)
    if not isinstance(axes, (list, tuple)) or len(axes) not in (2, 3):
        raise ArgumentValueError(f"matmul: axes must be a list of 2 or 3 entries (the operands', then the "
                                 f"result's), got {axes!r}")
    cores = [builtins.min(x.ndim, 2) for x in (a, b)]
    moved = [moveaxis(x, _core_axes("matmul", entry, c, x.ndim, f"operand {i}"), tuple(range(-c, 0)))
             for i, (x, entry, c) in enumerate(zip((a, b), axes, cores))]
    out = matmul(*moved, precision=precision, preferred_element_type=preferred_element_type)
    core = (a.ndim > 1) + (b.ndim > 1)
    if len(axes) == 2:
        if core:
            raise ArgumentValueError("matmul: axes needs a third entry for the result's matrix axes")
        return out
    return moveaxis(out, tuple(range(-core, 0)), _core_axes("matmul", axes[2], core, out.ndim, "the result"))


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``np.dot``: scalars multiply, 1-D/2-D are matmul, N-D contracts a's last axis with b's second-to-last."""
    a, b = _accumulating("dot", (as_operand(a), as_operand(b)), precision, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def vdot(a: Any, b: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``np.vdot``: the dot product of the flattened arrays, the first conjugated."""
    a, b = _accumulating("vdot", (as_operand(a), as_operand(b)), precision, preferred_element_type)
    if a.dtype.kind == "c":
        a = bind(conj_p, a)
    return dot(reshape(a, (-1,)), reshape(b, (-1,)))


def inner(a: Any, b: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    a, b = _accumulating("inner", (as_operand(a), as_operand(b)), precision, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def vecdot(x1: Any, x2: Any, /, *, axis: int | None = None, axes: Any = None, keepdims: bool = False) -> Any:
    """Array API ``vecdot``: ``sum(conj(x1) * x2)`` along ``axis`` (-1 by default;
    broadcasting the rest). NumPy's ``axes=[i, j]`` names each operand's axis instead (the
    rest broadcast as they stand once it is moved last), and ``keepdims`` keeps the summed
    axis, of size one: at ``axis``, or last under ``axes``."""
    x1, x2 = promote("vecdot", (as_operand(x1), as_operand(x2)))
    if axes is not None:
        if axis is not None:
            raise ArgumentTypeError("vecdot: give axis or axes, not both")
        if not isinstance(axes, (list, tuple)) or len(axes) not in (2, 3) or (len(axes) == 3 and tuple(axes[2])):
            raise ArgumentValueError(f"vecdot: axes must be [axis of x1, axis of x2] (and () for the result), "
                                     f"got {axes!r}")
        x1, x2 = (moveaxis(x, _core_axes("vecdot", entry, 1, x.ndim, f"operand {i}"), -1)
                  for i, (x, entry) in enumerate(zip((x1, x2), axes)))
        out = vecdot(x1, x2)
        return expand_dims(out, -1) if keepdims else out
    axis = -1 if axis is None else axis
    for x in (x1, x2):
        if not -x.ndim <= axis < x.ndim:
            raise ShapeError(f"vecdot: axis {axis} is out of range for shapes {fmt_shape(tuple(x1.shape))} and "
                             f"{fmt_shape(tuple(x2.shape))}")
    if x1.shape[axis] != x2.shape[axis]:
        raise ShapeError(f"vecdot: the contracted axis {axis} has sizes {x1.shape[axis]} and {x2.shape[axis]} "
                         f"(shapes {fmt_shape(tuple(x1.shape))} and {fmt_shape(tuple(x2.shape))}); they must be equal")
    if x1.dtype.kind == "c":
        x1 = bind(conj_p, x1)
    return sum(multiply(x1, x2), axis, keepdims=keepdims, dtype=x1.dtype)


def outer(a: Any, b: Any) -> Any:
    """Outer product of the flattened inputs: a broadcast multiply, no matmul."""
    return multiply(expand_dims(reshape(a, (-1,)), 1), reshape(b, (-1,)))


def einsum(subscripts: Any, /, *operands: Any, precision: Any = None, preferred_element_type: Any = None,
           optimize: Any = None, out: Any = None) -> Any:
    """A sum of products named by subscripts, as ``np.einsum``.

    Args:
        subscripts: the subscripts (explicit ``->`` or implicit output, ``...`` supported);
            or, in NumPy's sublist form, the first operand: ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
        *operands: the arrays.
        precision: JAX's argument, as ``matmul``'s.
        preferred_element_type: JAX's argument, as ``matmul``'s.
        optimize: accepted (one contraction is computed as a whole).
        out: must be ``None`` (arrays are immutable).

    Returns:
        The contraction.

    Example:
        >>> fg.einsum("ij,jk->ik", fg.ones((2, 3)), fg.ones((3, 4))).shape
        (2, 4)
    """
    if out is not None:
        raise ArgumentValueError("einsum: out= would write into an array; funcgrad arrays are immutable, so use "
                                 "the result")
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists(subscripts, operands)
    ops = promote("einsum", _accumulating("einsum", operands, precision, preferred_element_type))
    return bind(einsum_p, *ops, subscripts=subscripts)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublists(first: Any, rest: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """NumPy's sublist form of ``einsum`` (operands each followed by a list of axis numbers,
    ``...`` allowed, then optionally the output's list) as subscripts and operands."""
    items = (first, *rest)
    operands, lists = list(items[0::2]), list(items[1::2])
    output = None
    if len(operands) > len(lists):  # (an odd count: the last item is the output's list)
        output = operands.pop()
        if isinstance(output, ArrayBase) or not isinstance(output, (list, tuple)):
            raise ArgumentTypeError("einsum: in the sublist form each operand is followed by a list of axis numbers")

    def letters(sublist: Any) -> str:
        if not isinstance(sublist, (list, tuple)):
            raise ArgumentTypeError(f"einsum: expected a list of axis numbers after each operand, got {sublist!r}")
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and not isinstance(s, bool) and 0 <= s < len(_LETTERS):
                out.append(_LETTERS[s])
            else:
                raise ArgumentValueError(f"einsum: axis numbers must be ints in [0, {len(_LETTERS)}), got {s!r}")
        return "".join(out)

    subscripts = ",".join(letters(sub) for sub in lists)
    if output is not None:
        subscripts += "->" + letters(output)
    return subscripts, tuple(operands)


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``np.tensordot``, as one einsum."""
    a, b = _accumulating("tensordot", (a, b), precision, preferred_element_type)
    a, b = promote("tensordot", (a, b))
    if isinstance(axes, int):
        if axes > builtins.min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: axes={axes} is more than the dimensions of shapes "
                             f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
        a_axes = list(builtins.range(a.ndim - axes, a.ndim))
        b_axes = list(builtins.range(axes))
    else:
        a_axes, b_axes = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                          [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
        a_axes = [x % a.ndim for x in a_axes]
        b_axes = [x % b.ndim for x in b_axes]
    if len(a_axes) != len(b_axes):
        raise ShapeError(f"tensordot: {len(a_axes)} axes of a against {len(b_axes)} axes of b")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    a_sub = [next(letters) for _ in builtins.range(a.ndim)]
    b_sub = [next(letters) for _ in builtins.range(b.ndim)]
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: axis {i} of {fmt_shape(a.shape)} and axis {j} of {fmt_shape(b.shape)} differ")
        b_sub[j] = a_sub[i]
    out = [c for i, c in enumerate(a_sub) if i not in a_axes] + [c for j, c in enumerate(b_sub) if j not in b_axes]
    return bind(einsum_p, a, b, subscripts=f"{''.join(a_sub)},{''.join(b_sub)}->{''.join(out)}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """Array API ``vector_norm``: a p-norm over ``axis`` (all axes by default)."""
    x = as_operand(x)
    if x.dtype.kind == "c":  # the norm of the moduli
        x = abs(x)
    if x.dtype.kind != "f":
        x = cast_to(x, _dt.default_float)
    ax = normalize_axes("vector_norm", axis, x.ndim)
    if ord == 2:  # (derivative 0 at a zero vector, as PyTorch's and autograd's)
        return root_of_squares(sum(square(x), ax, keepdims=keepdims))
    if ord == 1:
        return sum(abs(x), ax, keepdims=keepdims)
    if ord == float("inf"):
        return max(abs(x), ax, keepdims=keepdims)
    if ord == -float("inf"):
        return min(abs(x), ax, keepdims=keepdims)
    if ord == 0:
        return count_nonzero(x, ax, keepdims=keepdims).astype(x.dtype)
    return power(sum(power(abs(x), ord), ax, keepdims=keepdims), 1.0 / ord)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Array API ``matrix_norm`` over the last two axes: ``'fro'``, ``'nuc'``, 1, -1, 2, -2,
    inf, -inf (``'nuc'`` and ±2 from the singular values)."""
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: needs at least 2 dimensions, got {fmt_shape(x.shape)}")
    r, c = x.ndim - 2, x.ndim - 1
    if ord == "fro":
        return vector_norm(x, axis=(r, c), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        if x.dtype.kind not in "fc":
            x = cast_to(x, _dt.default_float)
        s = bind(svd_p, x, full_matrices=False)[1]
        out = sum(s, -1) if ord == "nuc" else (max if ord == 2 else min)(s, -1)
        return reshape(out, (*x.shape[:-2], 1, 1)) if keepdims else out
    if ord in (1, -1):
        col = sum(abs(x), r, keepdims=True)
        out = (max if ord == 1 else min)(col, c, keepdims=True)
    elif ord in (float("inf"), -float("inf")):
        row = sum(abs(x), c, keepdims=True)
        out = (max if ord > 0 else min)(row, r, keepdims=True)
    else:
        raise ValueError(f"matrix_norm: unsupported ord {ord!r} (use 'fro', 'nuc', 1, -1, 2, -2, inf or -inf)")
    return out if keepdims else reshape(out, tuple(x.shape[:-2]))


def norm(x: Any, /, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm``: 2-norm of the flattened array by default; vector norm for one
    axis (or a 1-D input); matrix norm for two axes (or a 2-D input with ``ord`` set)."""
    x = as_operand(x)
    if axis is None and ord is None:
        return vector_norm(x, axis=None, keepdims=keepdims)
    axes = normalize_axes("norm", axis, x.ndim) if axis is not None else tuple(builtins.range(x.ndim))
    if len(axes) == 1:
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        moved = moveaxis(x, axes, (-2, -1))
        out = matrix_norm(moved, keepdims=False, ord="fro" if ord is None else ord)
        if keepdims:
            for a in axes:
                out = expand_dims(out, a)
        return out
    raise ShapeError(f"norm: axis must name one or two axes, got {axis!r}")


def solve(a: Any, b: Any) -> Any:
    """``x`` with ``a @ x = b``, as ``np.linalg.solve`` (NumPy 2's rules: ``b`` is a vector
    only when it is 1-D, else a batch of matrices).

    Args:
        a: square matrices, (..., n, n).
        b: (n,), or (..., n, k).

    Returns:
        The solution, ``b``'s shape.

    Example:
        >>> a = fg.asarray([[2.0, 1.0], [1.0, 3.0]])
        >>> [round(v, 6) for v in fg.linalg.solve(a, fg.asarray([3.0, 5.0])).tolist()]
        [0.8, 1.4]
    """
    a, b = _float_pair("linalg.solve", a, b)
    return bind(solve_p, a, b)


def inv(a: Any, /) -> Any:
    """``a``'s inverse, as ``solve(a, I)``: one primitive fewer, and its derivatives are
    ``solve``'s (NumPy's ``inv`` is a solve against the identity too)."""
    a = as_operand(a)
    if a.dtype.kind not in "fc":
        a = cast_to(a, _dt.default_float)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.inv: expected square matrices (..., n, n), got shape {fmt_shape(tuple(a.shape))}")
    identity = broadcast_to(eye(a.shape[-1], dtype=a.dtype, device=a.device), tuple(a.shape))
    try:
        return bind(solve_p, a, identity)
    except LinAlgError as exc:
        raise LinAlgError(f"linalg.inv: {exc}") from exc


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Lower-triangular ``L`` with ``a = L @ L.mH`` for a symmetric (Hermitian) positive-definite
    ``a``, read from its lower triangle as NumPy does; ``upper=True`` gives ``L.mH``."""
    a = as_operand(a)
    if a.dtype.kind not in "fc":
        a = cast_to(a, _dt.default_float)
    out = bind(cholesky_p, a)
    return out.mH if upper else out
