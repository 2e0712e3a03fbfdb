"""The primitive registry: every operation funcgrad can run.

One module per family; importing a module registers its primitives.
``registry()`` enumerates them all (the tests iterate it).
"""

from __future__ import annotations

from .core import Layout, Primitive, ShapedArray, aval_of, bind, current_interpreter, registry

__all__ = ["Layout", "Primitive", "ShapedArray", "aval_of", "bind", "current_interpreter", "registry", "load_all"]


def load_all() -> None:
    from . import elementwise, index, linalg, reduce, shape  # noqa: F401
