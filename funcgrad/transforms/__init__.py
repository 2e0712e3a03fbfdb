"""Function transforms: interpreters over the primitives (see core.py)."""

from __future__ import annotations

from .api import grad, hessian, jacfwd, jacrev, jvp, no_grad, stop_gradient, value_and_grad, vjp
from .core import Interpreter, Tracer

__all__ = ["Interpreter", "Tracer", "grad", "hessian", "jacfwd", "jacrev", "jvp", "no_grad", "stop_gradient",
           "value_and_grad", "vjp"]
