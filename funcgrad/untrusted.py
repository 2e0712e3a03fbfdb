"""Reading an untrusted JSON header within a memory budget (``fg.load``, ``fg.load_exported``).

A file's header is JSON, and a few bytes of JSON can become many bytes of Python objects
(``[],`` is a 56-byte list). So whatever a file holds, loading it may cost at most four times
its size and 1 MiB: ``Budget`` holds what is left, and every piece of work is charged before
it allocates. Two ways to charge:

- ``structure_cost(text)`` bounds what ``json.loads`` will allocate for ``text`` from its
  counts of brackets, commas, colons and strings, before parsing (``fg.load``'s header).
- ``Reader`` parses JSON one value at a time, charging each object as it makes it, so a
  caller can turn a long array into its own compact objects element by element and let the
  parsed JSON go (``load_exported``'s equations).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from .errors import FormatError

#: What parsing may allocate, in bytes, as an upper bound (CPython 3.11 on a 64-bit machine,
#: measured with ``tracemalloc``; ``tests/test_serialization.py`` checks the bound on
#: adversarial headers): a value's slot in its list, with the list's growth; a string
#: object's fixed part (its characters are charged one byte each, four when the text is not
#: ASCII); a list; an object with its key-value pairs; a number that is not one of CPython's
#: shared small ints; and, as parsed lists become tuples and dicts, a tuple's slot and a
#: dict's entry.
COST_VALUE, COST_STRING, COST_LIST, COST_OBJECT, COST_ITEM, COST_NUMBER = 10, 64, 100, 160, 64, 40
COST_TUPLE_SLOT, COST_DICT_ENTRY = 8, 100

_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')  # (possessive: no backtracking state)
_STRUCTURE = re.compile(r"[\[{,:]")
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
MAX_NUMBER_CHARS = 40  # the longest number a header may spell (offsets fit in 20 digits)


class Budget:
    """What loading may still allocate: four times the file's size and 1 MiB at first.
    ``charge`` raises ``FormatError`` (through ``refuse``, with ``advice`` after the reason)
    for the first piece of work that would go past it."""

    def __init__(self, size: int, refuse: Callable[[str], FormatError], advice: str = "") -> None:
        self.total = self.left = 4 * size + (1 << 20)
        self.refuse, self.advice = refuse, advice

    def charge(self, nbytes: int, what: str) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise self.refuse(f"{what} would take {(self.total - self.left) / 2**20:.1f} MiB, more than a file "
                              f"of its size may cost to load (4 x its size + 1 MiB, {self.total / 2**20:.1f} MiB)"
                              f"{self.advice}")

    def refund(self, nbytes: int) -> None:
        self.left += nbytes

    def read_text(self, stream: Any, n: int) -> str:
        """``n`` bytes of UTF-8 header from ``stream`` as text: the bytes charged while they
        live, the text (charged, and left so: refund ``text_bytes(text)`` once it goes)."""
        self.charge(n, "the header")
        raw = stream.read(n)
        self.charge(n * (1 if raw.isascii() else 4), "the header")
        try:
            text: str = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.refuse(f"malformed header ({exc})") from None
        self.refund(n)
        return text


def text_bytes(text: str) -> int:
    """What a str of ``text``'s length may take (1 byte per character for ASCII, up to 4)."""
    return len(text) * (1 if text.isascii() else 4)


def number_cost(value: int | float) -> int:
    """A parsed number's object (CPython shares the ints from -5 to 256)."""
    return 0 if type(value) is int and -5 <= value <= 256 else COST_NUMBER


def structure_cost(text: str) -> int:
    """An upper bound on what ``json.loads(text)`` allocates besides its numbers (charge
    those with ``number_cost`` as they are parsed). Brackets, commas and colons inside strings
    are not structure: they are counted string by string and taken off, in place."""
    counts = {c: text.count(c) for c in "[{,:"}
    strings = characters = 0
    for match in _STRING.finditer(text):
        start, end = match.span()
        strings, characters = strings + 1, characters + end - start - 2
        if _STRUCTURE.search(text, start + 1, end - 1):
            for c in counts:
                counts[c] -= text.count(c, start + 1, end - 1)
    values = counts[","] + counts["["] + counts["{"] + 1
    return (characters * (1 if text.isascii() else 4) + values * COST_VALUE + strings * COST_STRING
            + counts["["] * COST_LIST + counts["{"] * COST_OBJECT + counts[":"] * COST_ITEM)


class Reader:
    """JSON read one value at a time from ``text``, each object charged to ``budget`` as it is
    made. ``value()`` parses the next whole value; ``members()`` and ``elements()`` walk an
    object's keys or an array's positions, leaving each value to the caller, so a long array
    never exists as parsed JSON. Refuses what a valid header never holds (duplicate keys,
    numbers longer than ``MAX_NUMBER_CHARS``, NaN/Infinity, nesting deeper than ``max_depth``)."""

    def __init__(self, text: str, budget: Budget, what: str, max_depth: int = 64) -> None:
        self.text, self.pos, self.budget, self.what = text, 0, budget, what
        self.depth, self.max_depth = 0, max_depth

    def fail(self, why: str) -> FormatError:
        return self.budget.refuse(f"malformed header ({why} at character {self.pos})")

    def peek(self) -> str:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.pos >= len(self.text):
            raise self.fail("the text ends early")
        return self.text[self.pos]

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise self.fail(f"expected {c!r}")
        self.pos += 1

    def end(self) -> None:
        """Nothing but white space may follow the last value."""
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.pos != len(self.text):
            raise self.fail("extra data")

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.fail(f"nested deeper than {self.max_depth} levels")

    def members(self) -> Iterator[str]:
        """An object's keys, in order; the caller reads each key's value before the next."""
        self._enter()
        self.expect("{")
        seen: set[str] = set()
        if self.peek() == "}":
            self.pos += 1
        else:
            while True:
                key = self.string()
                if key in seen:
                    raise self.fail(f"a duplicate key {key[:40]!r}")
                seen.add(key)
                self.expect(":")
                yield key
                if self.peek() == "}":
                    self.pos += 1
                    break
                self.expect(",")
        self.depth -= 1

    def elements(self) -> Iterator[int]:
        """An array's positions; the caller reads each element before the next."""
        self._enter()
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
        else:
            i = 0
            while True:
                yield i
                i += 1
                if self.peek() == "]":
                    self.pos += 1
                    break
                self.expect(",")
        self.depth -= 1

    def string(self) -> str:
        if self.peek() != '"':
            raise self.fail("expected a string")
        try:
            s, self.pos = json.decoder.scanstring(self.text, self.pos + 1)  # type: ignore[attr-defined]
        except ValueError as exc:
            raise self.fail(str(exc)) from None
        self.budget.charge(COST_STRING + text_bytes(s), self.what)
        return s  # type: ignore[no-any-return]

    def value(self) -> Any:
        """The next whole value, as ``json.loads`` gives it."""
        c = self.peek()
        if c == "{":
            self.budget.charge(COST_OBJECT, self.what)
            out = {}
            for key in self.members():
                self.budget.charge(COST_ITEM, self.what)
                out[key] = self.value()
            return out
        if c == "[":
            self.budget.charge(COST_LIST, self.what)
            items = []
            for _ in self.elements():
                self.budget.charge(COST_VALUE, self.what)
                items.append(self.value())
            return items
        if c == '"':
            return self.string()
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return value
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a value")
        if match.end() - self.pos > MAX_NUMBER_CHARS:
            raise self.fail(f"a {match.end() - self.pos}-character number")
        self.pos = match.end()
        number = float(match.group()) if match.group(1) or match.group(2) else int(match.group())
        self.budget.charge(number_cost(number), self.what)
        return number
