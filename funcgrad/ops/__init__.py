"""The ``fg.*`` array functions (NumPy names and semantics), built from primitives."""

from __future__ import annotations

import sys
import types

from ..array import provide
from ..errors import named_errors
from .creation import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .numpy_compat import *  # noqa: F403
from .reductions import *  # noqa: F403
from .shaping import *  # noqa: F403
from .shaping import _broadcast_shapes as broadcast_shapes  # noqa: F401
from . import creation as _creation, elementwise as _elementwise, indexing as _indexing  # noqa: E402
from . import linalg as _linalg, numpy_compat as _numpy_compat, reductions as _reductions  # noqa: E402
from . import shaping as _shaping  # noqa: E402

# What ``from funcgrad.ops import *`` (and so ``fg``) takes: the functions, not this
# package's imports or its submodules' names.
__all__ = [*_creation.__all__, *_elementwise.__all__, *_indexing.__all__, *_linalg.__all__, *_reductions.__all__,
           *_shaping.__all__, *_numpy_compat.__all__, "broadcast_shapes"]

_module = sys.modules[__name__]
# Arrays' operators and methods call the functions themselves: no wrapper on their hot path.
_unchecked = types.SimpleNamespace(**{_name: getattr(_module, _name) for _name in __all__})
provide(ops=_unchecked)

# fg.* functions outside the elementwise ones name themselves in the errors of bad arguments
# (the elementwise functions check their arguments inline: user code calls them per element
# of its computation).
for _name in __all__:
    _fn = getattr(_module, _name)
    if callable(_fn) and not isinstance(_fn, type) and _name not in _elementwise.__all__:
        setattr(_module, _name, named_errors(_name, _fn))
