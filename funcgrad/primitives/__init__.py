"""The primitive registry: every operation funcgrad can run.

One module per family; importing a module registers its primitives (this package imports
them all). ``registry()`` enumerates them, the transforms' call-like primitives included
once those are loaded (the tests iterate it).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import RegistryError
from . import (  # noqa: F401  (registers them)
    attention,
    axes,
    collective,
    convolution,
    cross_entropy,
    decompositions,
    elementwise,
    fft,
    index,
    lax,
    linalg,
    normalization,
    pooling,
    random,
    reduce,
    shape,
)
from .core import ANY, FRESH, OPERAND, REGISTRY, Layout, Primitive, ShapedArray, aval_of, bind, current_interpreter

__all__ = ["ANY", "FRESH", "OPERAND", "Layout", "Primitive", "ShapedArray", "aval_of", "bind", "current_interpreter",
           "registry", "registry_lookup", "check_registry"]


AUTOCAST_KINDS = (None, "lower", "float32", "widen")


def check_registry() -> None:
    """Every fact of every primitive well formed, and every primitive a table names registered;
    run at import (and again by the tests once the transforms' primitives exist)."""
    unknown = sorted(lax.NAMES - set(REGISTRY))
    if unknown:
        raise RegistryError(f"primitives.lax names no primitive called {', '.join(unknown)}")
    for prim in REGISTRY.values():
        problems = [field for field, ok in (
            ("autocast", prim.autocast in AUTOCAST_KINDS),
            ("onnx", prim.onnx is None or isinstance(prim.onnx, str) or callable(prim.onnx) and prim.onnx.__doc__),
            ("static_view", prim.static_view is None or prim.view is not None),
            ("c_expr", prim.c_expr is None or prim.kernel_spec is not None),
            ("tags", all(isinstance(t, str) for t in prim.tags)),
        ) if not ok]
        if problems:
            raise RegistryError(f"primitive {prim.name}: malformed {', '.join(problems)}")


check_registry()


def registry() -> Iterator[Primitive]:
    """Every registered primitive (funcgrad's and the user's own), in registration order.

    Returns:
        An iterator of ``Primitive`` records.

    Example:
        >>> names = [p.name for p in fg.registry()]
        >>> "matmul" in names and "attention" in names
        True
    """
    return iter(list(REGISTRY.values()))


def registry_lookup(name: str) -> Primitive:
    """The registered primitive called ``name``.

    Args:
        name: a primitive's name, as programs print it (``fg.make_jaxpr``).

    Returns:
        The ``Primitive``; ``fg.bind`` applies it.

    Example:
        >>> add = fg.registry_lookup("add")
        >>> fg.bind(add, fg.ones(2), fg.ones(2)).tolist()
        [2.0, 2.0]
    """
    return REGISTRY[name]
