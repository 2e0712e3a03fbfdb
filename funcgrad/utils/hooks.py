"""``fg.utils.hooks``: what registering a hook returns, as ``torch.utils.hooks``."""

from __future__ import annotations

from ..nn.module import RemovableHandle

__all__ = ["RemovableHandle"]
