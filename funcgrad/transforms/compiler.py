"""The compiler pipeline: a traced ``Program``, its passes, and its lowered function.

``compile_program`` is the one way a program is made fast: ``PASSES`` rewrite it
(``passes.py``), then ``lower`` turns it into one Python function of kernel calls. A
``ProgramCache`` keeps what a client compiled under the client's own key, and drops the
least recently used entry when full. Its clients: backward plans (``replay.py``, keyed
by a graph's structure) and ``fg.compile`` (``compiled.py``, keyed by its arguments'
abstract values).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from .ir import Program
from .lower import Lowered, lower
from .passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, simplify

__all__ = ["PASSES", "optimize", "compile_program", "ProgramCache"]

PASSES: tuple[Callable[[Program], Program], ...] = (simplify, fold_constants, simplify,
                                                     eliminate_common_subexpressions, eliminate_dead_code)


def optimize(program: Program) -> Program:
    """``program`` through every pass."""
    for rewrite in PASSES:
        program = rewrite(program)
    return program


def compile_program(program: Program, name: str = "a lowered program") -> Lowered:
    """``program`` through every pass, then lowered (``name``: what it is, in errors)."""
    return lower(optimize(program), name=name)


class ProgramCache:
    """A bounded map from a client's key to what it compiled (``None``: nothing could be),
    least recently used out first."""

    MISSING = object()

    def __init__(self, name: str, max_entries: int) -> None:
        self.name = name
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        """The entry for ``key`` (now the most recently used), or ``MISSING``. A key that
        cannot be hashed raises ``TypeError``."""
        entry = self._entries.get(key, self.MISSING)
        if entry is not self.MISSING:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, entry: Any) -> Any:
        self._entries[key] = entry
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def values(self) -> list[Any]:
        return list(self._entries.values())

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<ProgramCache {self.name!r}: {len(self)} of {self.max_entries}>"
