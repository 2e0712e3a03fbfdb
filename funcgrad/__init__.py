"""funcgrad: array programs and their derivatives.

Immutable arrays over shared strided buffers, one registry of primitives with
NumPy (CPU) and CuPy (GPU) kernels, and (in later layers) JAX-style transforms
and a PyTorch-style tape. This module is the public namespace ``fg`` only.
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
import sys as _sys
from types import SimpleNamespace as _NS
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import dtypes as _dtypes
from .array import Array, ArrayBase
from .backends import Buffer, Device, DeviceUnavailableError, device, devices
from .backends import memory
from .dtypes import (DType, bfloat16, can_cast, complex64, complex128, finfo, float16, float32, float64,
                     get_default_dtype, iinfo, int8, int16, int32, int64, isdtype, result_type, set_default_dtype,
                     uint8, uint16, uint32, uint64)
from .dtypes import bool_ as bool  # noqa: A001  (the array API spells it fg.bool)
from .errors import (ArgumentTypeError, ArgumentValueError, ConcretizationError, DeviceMismatchError,
                     DistributedError, DistributedTimeoutError,
                     DonatedArrayError, DTypeError, FormatError, FuncgradError, GraphFreedError, LinAlgError,
                     RegistryError, RetraceError, ShapeError, TracerLeakError, UnknownAttributeError, ViewError,
                     WriteGuardError)
from .ops import *  # noqa: F403

if _TYPE_CHECKING:  # the same names, in the form type checkers follow (``ops.__all__`` is assembled)
    from .ops.creation import *  # noqa: F403
    from .ops.elementwise import *  # noqa: F403
    from .ops.index import *  # noqa: F403
    from .ops.linalg import *  # noqa: F403
    from .ops.numpy_compat import *  # noqa: F403
    from .ops.reduce import *  # noqa: F403
    from .ops.sets import *  # noqa: F403
    from .ops.shape import *  # noqa: F403
from .ops.numpy_compat import shape  # (not among ops' exports: there the name is the module ops/shape.py)
from .primitives import Primitive, ShapedArray, bind, registry
from .primitives import registry_lookup
from . import example_libraries, nn, optim, testing, tree
from .serialization import load, save
from .config import config
from .transforms import (Interpreter, Program, Tracer, checkpoint, checkpoint_policies, compile, custom_jvp, custom_vjp,
                         enable_grad, grad, hessian, is_grad_enabled, jacfwd, jacrev, jit, jvp, make_jaxpr, no_grad,
                         saved_residuals, stop_gradient, value_and_grad, vjp, vmap)
from .transforms import trace as _trace_program
from .transforms import cond, fori_loop, inference_mode, scan, switch, while_loop
from . import random  # noqa: E402
from . import utils  # noqa: E402
from . import amp, distributed, lax, misc, profiler, scipy, sharding  # noqa: E402
from .sharding import make_mesh, shard_map  # noqa: E402
from .compat import accelerator, cuda  # noqa: E402
from .amp import autocast  # noqa: E402
from .export import Exported, export, load_exported  # noqa: E402
from .random.generator import (Generator, bernoulli, get_rng_state, initial_seed, manual_seed,  # noqa: E402
                               multinomial, normal, rand, rand_like, randint, randn, randn_like, randperm, seed,
                               set_rng_state)

from .backends.cc import settle_blas_threads as _settle_blas_threads  # noqa: E402

_settle_blas_threads()  # (NumPy's BLAS threads sleep soon after a product: cc.BLAS_THREAD_TIMEOUT)

__version__ = "0.1.0"
__array_api_version__ = "2023.12"

bool_ = bool


def tensor(data: object, dtype: object = None, device: object = None,
           requires_grad: _builtins.bool = False) -> Array:
    """``torch.tensor``: a new array holding ``data`` (``fg.array``).

    Args:
        data: a number, nested sequences, a NumPy array or an array.
        dtype: the result's dtype (inferred by default: int64 for Python ints, the default
            float dtype for Python floats).
        device: where the array lives.
        requires_grad: record operations on it for ``.backward()``.

    Returns:
        A new array.

    Example:
        >>> fg.tensor([1, 2]).dtype, fg.tensor([1.5], requires_grad=True).requires_grad
        (int64, True)
    """
    return array(data, dtype=dtype, device=device, requires_grad=requires_grad)  # noqa: F405


def as_tensor(data: object, dtype: object = None, device: object = None) -> Array:
    """``torch.as_tensor``: ``data`` as an array (``fg.asarray``: an array comes back as itself,
    other data is copied, since a funcgrad array's values never change).

    Args:
        data: a number, nested sequences, a NumPy array or an array.
        dtype: the result's dtype (``data``'s, or inferred, by default).
        device: where the array lives.

    Returns:
        ``data`` itself where it is already an array of that dtype and device, else a new array.

    Example:
        >>> x = fg.ones(2)
        >>> fg.as_tensor(x) is x, fg.as_tensor([1.0, 2.0]).dtype
        (True, float32)
    """
    return asarray(data, dtype=dtype, device=device)  # noqa: F405


def trace(f_or_x: _Any, *args: _Any, **kwargs: _Any) -> _Any:
    """``f``'s program (the IR, JAX's ``make_jaxpr``), or NumPy's sum along a diagonal.

    A function and an array cannot be mistaken for each other, so the name keeps both
    meanings.

    Args:
        f_or_x: a function (then ``fg.trace(f)`` returns a function of ``f``'s arguments
            giving its ``Program`` at their shapes and dtypes), or an array.
        *args: for an array, NumPy's ``offset``, ``axis1`` and ``axis2``.
        **kwargs: for an array, those and ``dtype``.

    Returns:
        The tracing function, or the sums along the diagonal.

    Example:
        >>> print(fg.trace(lambda x, y: fg.exp(x) + y)(fg.ones(2), fg.ones(2)))
        { lambda a:f32[2]; b:f32[2]; let
            c:f32[2] = exp a
            d:f32[2] = add c b
          in (d,) }
        >>> fg.trace(fg.eye(3)).item()
        3.0
    """
    if callable(f_or_x) and not isinstance(f_or_x, ArrayBase):
        return _trace_program(f_or_x, *args, **kwargs)
    offset, axis1, axis2 = (list(args) + [0, 0, 1][len(args):])[:3]
    x = diagonal(f_or_x, kwargs.pop("offset", offset), kwargs.pop("axis1", axis1), kwargs.pop("axis2", axis2))
    return sum(x, axis=-1, dtype=kwargs.pop("dtype", None), **kwargs)


Tensor = Array  # PyTorch's name for the array type (``isinstance(h, torch.Tensor)``)

# PyTorch's dtype names (attributes only: ``from funcgrad import *`` must not shadow Python's float and int)
long, int, float, double, half = int64, int32, float32, float64, float16  # noqa: A001
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

from . import linalg  # noqa: E402

from .ops import fft  # noqa: E402

from .transforms import debug  # noqa: E402
from .transforms.autodiff import function as _function  # noqa: E402
from .transforms.autodiff import tape as _tape  # noqa: E402

autograd = _NS(grad=_tape.grad, backward=_tape.backward, Function=_function.Function,
               FunctionCtx=_function.FunctionCtx, enable_grad=enable_grad, no_grad=no_grad,
               is_grad_enabled=is_grad_enabled, graph=_NS(saved_tensors_hooks=_tape.saved_tensors_hooks))
"""``fg.autograd``: the PyTorch-style tape's functions (``grad``, ``backward``, ``Function``,
``graph.saved_tensors_hooks``)."""


def __array_namespace_info__() -> _NS:
    """Array API 2023.12 inspection: capabilities, devices and dtypes of this namespace."""
    # the standard's dtypes (float16 and bfloat16 are extensions it does not list)
    numeric = {d.name: d for d in _dtypes.all_dtypes if d.name not in ("float16", "bfloat16")}

    def dtypes(*, device: object = None, kind: object = None) -> dict[str, DType]:
        if kind is None:
            return dict(numeric)
        return {n: d for n, d in numeric.items() if isdtype(d, kind)}

    return _NS(
        capabilities=lambda: {"boolean indexing": True, "data-dependent shapes": True},
        default_device=lambda: device("cpu"),
        default_dtypes=lambda *, device=None: {"real floating": _dtypes.default_float, "integral": int64,
                                               "indexing": int64, "complex floating": _dtypes.default_complex},
        dtypes=dtypes,
        devices=devices,
    )


# The public names: everything above but the implementation's subpackages (reachable as
# attributes, e.g. ``fg.transforms.replay``, but not part of ``from funcgrad import *``).
_INTERNAL = {"backends", "compat", "dtypes", "errors", "ops", "primitives", "serialization", "untrusted",
             "onnx", "transforms", "long", "int", "float", "double", "half"}

# ``from __future__ import annotations`` binds the name ``annotations`` in every module that
# uses it; it is no part of any namespace (``fg.annotations``, ``fg.random.annotations``).
for _module in list(_sys.modules.values()):
    if getattr(_module, "__name__", "").startswith("funcgrad") and \
            getattr(vars(_module).get("annotations"), "compiler_flag", None) is not None:
        del vars(_module)["annotations"]
del _module
__all__ = [n for n in dir() if not n.startswith("_") and n not in _INTERNAL]
