"""The primitive registry: every operation funcgrad can run.

One module per family; importing a module registers its primitives (this package imports
them all). ``registry()`` enumerates them, the transforms' call-like primitives included
once those are loaded (the tests iterate it).
"""

from __future__ import annotations

from collections.abc import Iterator

from . import collective, decompositions, elementwise, fft, index, linalg, random, reduce, shape  # noqa: F401  (registers them)
from .core import _REGISTRY, ANY, FRESH, OPERAND, Layout, Primitive, ShapedArray, aval_of, bind, current_interpreter

__all__ = ["ANY", "FRESH", "OPERAND", "Layout", "Primitive", "ShapedArray", "aval_of", "bind", "current_interpreter",
           "registry", "registry_lookup"]


def registry() -> Iterator[Primitive]:
    """Every registered primitive, in registration order."""
    return iter(list(_REGISTRY.values()))


def registry_lookup(name: str) -> Primitive:
    """The registered primitive called ``name``."""
    return _REGISTRY[name]
