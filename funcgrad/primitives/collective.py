"""``all_reduce``: the collective as a primitive, so ``fg.grad``, ``fg.vmap`` and ``fg.compile``
see it (a compiled data-parallel step is one program with the reductions in it).

Derivatives treat the ranks as one program whose loss is the sum of every rank's: the
sum over ranks is linear, so its tangent is the sum of the tangents and its transpose is
the sum of the cotangents (PyTorch's ``torch.distributed.nn.functional.all_reduce``
differentiates the same way); ``mean`` scales both by 1/world. ``max`` and ``min`` pass
the tangent of the rank (or ranks, shared equally) that holds the extreme.
"""

from __future__ import annotations

from typing import Any

from ..backends import process_group
from ..errors import ArgumentValueError
from . import lax
from .ad import defjvp, defvjp
from .batching import defvectorized
from .checks import require_kind
from .core import ANY, Primitive, ShapedArray, bind

__all__ = ["all_reduce_p"]


def _all_reduce_rule(x: ShapedArray, *, op: str) -> ShapedArray:
    if op not in process_group.OPS:
        raise ArgumentValueError(f"all_reduce: op must be one of {list(process_group.OPS)}, got {op!r}")
    require_kind(f"all_reduce({op})", x.dtype, "biufc" if op in ("sum", "mean") else "biuf",
                 "a real array" if op in ("max", "min") else "an array")
    return ShapedArray(x.shape, x.dtype, x.device)


def _all_reduce_kernel(xp: Any, x: Any, *, op: str) -> Any:
    group = process_group.current()
    process_group.check_same(group, x, f"all_reduce({op})", f"op={op}")
    out = group.all_reduce(xp, x, op).wait()
    return out.reshape(x.shape)


all_reduce_p = Primitive("all_reduce", _all_reduce_rule, kernel=_all_reduce_kernel, effectful=True,
                         aliases=ANY)  # (one rank's result may be its input; a group may keep its buffers)


def _holders(ans: Any, x: Any) -> tuple[Any, Any]:
    """Where this rank holds the extreme, and how many ranks hold it there (ties share)."""
    holds = lax.eq(x, ans)
    return holds, bind(all_reduce_p, lax.convert(holds, x.dtype), op="sum")


def _all_reduce_jvp(t: Any, ans: Any, x: Any, *, op: str) -> Any:
    if op in ("sum", "mean"):
        return bind(all_reduce_p, t, op=op)
    holds, count = _holders(ans, x)
    return bind(all_reduce_p, lax.select(holds, t, 0.0), op="sum") / count


def _all_reduce_vjp(g: Any, ans: Any, x: Any, *, op: str) -> Any:
    if op in ("sum", "mean"):
        return bind(all_reduce_p, g, op=op)
    holds, count = _holders(ans, x)
    return lax.select(holds, bind(all_reduce_p, g, op="sum") / count, 0.0)


defjvp(all_reduce_p, _all_reduce_jvp)
defvjp(all_reduce_p, _all_reduce_vjp)
defvectorized(all_reduce_p)
