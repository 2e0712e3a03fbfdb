"""Where each primitive's derivative is checked: a ``Domain`` per primitive.

Test metadata, kept beside the primitives so that a new primitive declares where its
rules hold (away from kinks and poles) in the same place as the rules themselves;
``fg.testing`` and the registry-wide gradient tests draw their inputs from it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Domain", "REAL", "POSITIVE", "NONZERO", "DISTINCT", "MATRIX"]


@dataclass(frozen=True)
class Domain:
    """Where a primitive's derivative is checked (``fg.testing`` and the test suite).

    Float inputs are drawn from ``[low, high]``, pushed at least ``margin`` away
    from the points in ``avoid`` (kinks and poles). ``kind`` adds structure:
    ``"distinct"`` (no ties, for max/min/sort), ``"spd"`` (symmetric positive
    definite, symmetrised inside the checked function), ``"matrix"`` (keep the
    well-conditioned matrices the case draws), ``"remainder"`` (away from the
    jumps of ``x % y``).
    """

    low: float = -2.0
    high: float = 2.0
    avoid: tuple[float, ...] = ()
    margin: float = 0.2
    kind: str = "values"


REAL = Domain()
POSITIVE = Domain(0.2, 3.0)
NONZERO = Domain(avoid=(0.0,))
DISTINCT = Domain(kind="distinct")
MATRIX = Domain(kind="matrix")
