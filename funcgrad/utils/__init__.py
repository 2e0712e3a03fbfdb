"""``fg.utils``: data loading (``fg.utils.data``), as ``torch.utils``."""

from __future__ import annotations

from . import data

__all__ = ["data"]
