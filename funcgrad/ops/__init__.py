"""The ``fg.*`` array functions (NumPy names and semantics), built from primitives."""

from __future__ import annotations

import sys

from .. import array as _array
from .creation import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .reductions import *  # noqa: F403
from .shaping import *  # noqa: F403
from .shaping import _broadcast_shapes as broadcast_shapes  # noqa: F401

_array._o = sys.modules[__name__]
# The forward operators call the functions directly: one Python frame less on the eager hot path.
_array.ArrayBase.__add__ = add  # type: ignore[assignment]  # noqa: F405
_array.ArrayBase.__sub__ = subtract  # type: ignore[assignment]  # noqa: F405
_array.ArrayBase.__mul__ = multiply  # type: ignore[assignment]  # noqa: F405
_array.ArrayBase.__truediv__ = divide  # type: ignore[assignment]  # noqa: F405
_array.ArrayBase.__matmul__ = matmul  # type: ignore[assignment]  # noqa: F405
