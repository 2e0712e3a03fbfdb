"""The compiler pipeline: a traced ``Program``, its passes, and its lowered function.

``compile_program`` is the one way a program is made fast: ``PASSES`` rewrite it
(``passes.py``), then ``lower`` turns it into one Python function of kernel calls. What is
compiled is kept in ``ir.ProgramCache``s, the one cache policy (bounded, least recently
used out first): a client's own (backward plans, ``plans.py``, keyed by a graph's
structure; ``fg.compile``, ``jit.py``, keyed by its arguments' abstract values), or
on the program itself for its derived forms (``Program.derived``: its lowerings, its split
VJP, its batched forms).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Program
from .lower import LoweredFunction, lower
from .passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, join_siblings, simplify

__all__ = ["PASSES", "optimize", "compile_program"]

PASSES: tuple[Callable[[Program], Program], ...] = (simplify, fold_constants, simplify,
                                                     eliminate_common_subexpressions, eliminate_dead_code,
                                                     join_siblings)


def optimize(program: Program) -> Program:
    """``program`` through every pass."""
    for rewrite in PASSES:
        program = rewrite(program)
    return program


def compile_program(program: Program, name: str = "a lowered program") -> LoweredFunction:
    """``program`` through every pass, then lowered (``name``: what it is, in errors)."""
    return lower(optimize(program), name=name)

