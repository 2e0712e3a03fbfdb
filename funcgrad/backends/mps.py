"""``fg.backends.mps``: PyTorch's ``torch.backends.mps`` queries, which ported scripts ask
before choosing a device (``torch.backends.mps.is_available()``). funcgrad has no Metal
backend: both answer False, as PyTorch's do on a machine without Apple's GPU."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether Apple's Metal GPU can be used: never by funcgrad."""
    return False


def is_built() -> bool:
    """Whether this build supports Metal: funcgrad does not."""
    return False
