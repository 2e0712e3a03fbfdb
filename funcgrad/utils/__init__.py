"""``fg.utils``: data loading (``fg.utils.data``) and hook handles (``fg.utils.hooks``), as
``torch.utils``."""

from __future__ import annotations

from . import data, hooks

__all__ = ["data", "hooks"]
