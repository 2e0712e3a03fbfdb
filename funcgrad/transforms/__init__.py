"""Function transforms: interpreters over the primitives (see core.py)."""

from __future__ import annotations

from .autodiff.api import grad, hessian, jacfwd, jacrev, jvp, stop_gradient, value_and_grad, vjp
from .autodiff.checkpoint import checkpoint, checkpoint_policies, saved_residuals
from .autodiff.custom import custom_jvp, custom_vjp
from .autodiff.inference import inference_mode
from .compiler import plans as _backward_plans  # noqa: F401  (plugs backward plans into reverse mode)
from .compiler.jit import compile, jit
from .control_flow import cond, fori_loop, scan, switch, while_loop
from .core import Interpreter, Tracer
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .ir import Program, make_jaxpr, trace
from .vmap import vmap

__all__ = ["Interpreter", "Program", "Tracer", "trace", "make_jaxpr", "compile", "jit", "checkpoint",
           "checkpoint_policies",
           "saved_residuals", "custom_jvp", "custom_vjp", "enable_grad", "is_grad_enabled", "grad", "hessian",
           "jacfwd", "jacrev", "jvp", "no_grad", "stop_gradient", "value_and_grad", "vjp", "vmap", "cond", "switch",
           "while_loop", "fori_loop", "scan", "inference_mode"]
