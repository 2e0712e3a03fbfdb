"""The one hook through which an observer (``fg.profiler.profile``) sees work that does not
go through ``bind``: the kernel calls of generated code and the steps of a backward pass.

Primitives are observed as every transform sees them, by an interpreter's ``process``.
A lowered program calls its kernels directly, and a backward walk runs its rules step by
step, so while an observer is set (a context variable: per thread and task, restored by
its token) those two ask it to run each call:

* ``observer.kernel(label, kernel, *args, **kwargs)``: one kernel call of a lowered
  program (``label``: the primitive's name, or the fused loop's);
* ``observer.step(name)``: a context manager around one backward step (``MulBackward``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["observer"]

observer: ContextVar[Any] = ContextVar("funcgrad_observer", default=None)
