"""PyTorch's device modules answered in funcgrad's terms, so code written for them ports
unchanged: ``fg.cuda`` (``torch.cuda``) and ``fg.accelerator`` (``torch.accelerator``).
Each is also importable under its top-level name (``import funcgrad.cuda``), as PyTorch
spells it. (``fg.misc``, HIPS autograd's ``autograd.misc``, keeps its own package: its
examples import it by path, ``from funcgrad.misc.flatten import flatten``, and type
checkers such as mypy follow a path only to a real package, not to a ``sys.modules`` alias.)"""

from __future__ import annotations

import sys

from . import accelerator, cuda

__all__ = ["accelerator", "cuda"]

for _module in (accelerator, cuda):
    sys.modules[_module.__name__.replace("funcgrad.compat.", "funcgrad.", 1)] = _module
