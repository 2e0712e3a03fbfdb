"""``fg.backends.cudnn``: PyTorch's ``torch.backends.cudnn`` switches, which ported training
scripts set (``fg.backends.cudnn.benchmark = True``).

funcgrad runs no cuDNN: its GPU kernels are CuPy's and its own, chosen the same way on
every call, so there is nothing to benchmark and the results do not depend on a search.
The switches are kept, so scripts that set or read them run unchanged, and they change
nothing: ``benchmark`` (PyTorch: time convolution algorithms and keep the fastest),
``deterministic`` (PyTorch: only deterministic algorithms; funcgrad's are),
``enabled`` and ``allow_tf32`` (funcgrad computes float32 in float32).
"""

from __future__ import annotations

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "is_available", "version"]

benchmark = False
deterministic = False
enabled = True
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: never by funcgrad."""
    return False


def version() -> None:
    """The cuDNN version: ``None``, as PyTorch gives without cuDNN."""
    return None
