"""Function transforms: interpreters over the primitives (see core.py)."""

from __future__ import annotations

from . import replay as _backward_plans  # noqa: F401  (plugs backward plans into reverse mode)
from .api import grad, hessian, jacfwd, jacrev, jvp, stop_gradient, value_and_grad, vjp
from .checkpoint import checkpoint, checkpoint_policies, saved_residuals
from .compiled import compile, jit
from .control_flow import cond, fori_loop, scan, switch, while_loop
from .core import Interpreter, Tracer
from .custom import custom_jvp, custom_vjp
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .inference import inference_mode
from .ir import Program, trace
from .vmap import vmap

__all__ = ["Interpreter", "Program", "Tracer", "trace", "compile", "jit", "checkpoint", "checkpoint_policies",
           "saved_residuals", "custom_jvp", "custom_vjp", "enable_grad", "is_grad_enabled", "grad", "hessian",
           "jacfwd", "jacrev", "jvp", "no_grad", "stop_gradient", "value_and_grad", "vjp", "vmap", "cond", "switch",
           "while_loop", "fori_loop", "scan", "inference_mode"]
