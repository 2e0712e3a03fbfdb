"""``fg.config``: switches read where they apply.

* ``explain_cache_misses``: every time a compiled function traces again, a warning says
  which argument changed and how (``leaf 0: f32[32,784] -> f32[16,784]``). Also set by the
  environment variable ``FUNCGRAD_EXPLAIN_CACHE_MISSES=1``.
* ``no_retrace``: a compiled function that has traced once raises ``fg.RetraceError``
  (naming what changed) instead of tracing again, for loops whose signature must not change.
"""

from __future__ import annotations

import os

__all__ = ["config"]


class _Config:
    __slots__ = ("explain_cache_misses", "no_retrace")

    def __init__(self) -> None:
        self.explain_cache_misses = os.environ.get("FUNCGRAD_EXPLAIN_CACHE_MISSES", "") not in ("", "0")
        self.no_retrace = False

    def __repr__(self) -> str:
        return f"fg.config(explain_cache_misses={self.explain_cache_misses}, no_retrace={self.no_retrace})"


config = _Config()
