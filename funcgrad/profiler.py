"""``fg.profiler``: where the time goes, PyTorch's ``torch.profiler`` (``docs/profiler.md``).

``profile`` is a user interpreter (``docs/interpreters.md``): every primitive bound inside
its block is an event with its wall time, and optionally its input shapes, the change in
its device's allocated bytes while it ran, and an estimate of its floating-point operations
(products: ``matmul``, ``linear``, ``einsum``). The tape's backward steps are ranges named
after their nodes (``MulBackward``) holding the events of their rules, a compiled
function's call is an event (``compiled_call[name]``) holding one event per kernel its
generated code called (a fused group of elementwise operations is one kernel), and
``record_function("name")`` adds ranges of your own; ``with_stack=True`` records the
calling code's frames per event. ``key_averages().table()`` prints
PyTorch's table, ``export_chrome_trace(path)`` writes the Trace Event JSON that Perfetto
and ``chrome://tracing`` open. Outside a ``profile`` block nothing is timed or checked.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .array import ArrayBase
from .transforms.core import Interpreter
from .transforms.observe import observer

__all__ = ["profile", "record_function", "ProfilerActivity", "Event", "EventList"]

_ACTIVE: contextvars.ContextVar[profile | None] = contextvars.ContextVar("funcgrad_profiler", default=None)


class ProfilerActivity:
    """PyTorch's activity names, accepted by ``profile(activities=...)``.

    Example:
        >>> with fg.profiler.profile(activities=[fg.profiler.ProfilerActivity.CPU]) as prof:
        ...     y = fg.ones(3) * 2.0
        >>> [e.name for e in prof.events()]
        ['mul']
    """

    CPU = "cpu"
    CUDA = "cuda"


@dataclass
class Event:
    """One timed thing: a primitive, a backward step or a ``record_function`` range.

    Example:
        >>> with fg.profiler.profile(record_shapes=True) as prof:
        ...     y = fg.ones((2, 3)).sum()
        >>> event = prof.events()[0]
        >>> event.name, event.input_shapes, event.end_ns >= event.start_ns
        ('reduce_sum', [[2, 3]], True)
    """

    name: str
    start_ns: int
    end_ns: int
    kind: str = "primitive"  # "primitive", "backward" or "user"
    input_shapes: list[Any] = field(default_factory=list)
    allocated: int = 0  # the change in the device's allocated bytes while it ran (profile_memory)
    flops: int = 0
    stack: list[str] = field(default_factory=list)  # the user's frames, innermost first (with_stack)
    thread: int = 0
    children: list[Event] = field(default_factory=list)

    @property
    def duration_ns(self) -> int:
        """The wall time, in nanoseconds."""
        return self.end_ns - self.start_ns

    @property
    def self_ns(self) -> int:
        """The wall time not spent in the events it contains."""
        return self.duration_ns - sum(c.duration_ns for c in self.children)


class profile(Interpreter):
    """``with fg.profiler.profile(record_shapes=True) as prof:`` records what runs inside;
    ``prof.key_averages().table(...)``, ``prof.export_chrome_trace(path)``, ``prof.events()``.

    Example:
        >>> with fg.profiler.profile() as prof:
        ...     y = fg.ones(3) + fg.ones(3)
        >>> [e.name for e in prof.events()]
        ['add']
    """

    name = "profile"

    def __init__(self, activities: Any = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, **unused: Any) -> None:
        super().__init__()
        self.record_shapes, self.profile_memory = bool(record_shapes), bool(profile_memory)
        self.with_stack, self.with_flops = bool(with_stack), bool(with_flops)
        self._events: list[Event] = []
        self._open: list[Event] = []  # the ranges now running, innermost last
        self._tokens: list[Any] = []

    # -- recording ---------------------------------------------------------------------
    def __enter__(self) -> profile:
        self._tokens.append((_ACTIVE.set(self), observer.set(self)))
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        active, observing = self._tokens.pop()
        observer.reset(observing)
        _ACTIVE.reset(active)

    def _close(self, event: Event) -> None:
        (self._open[-1].children if self._open else self._events).append(event)

    @contextlib.contextmanager
    def _range(self, name: str, kind: str) -> Iterator[Event]:
        event = Event(name, time.perf_counter_ns(), 0, kind, thread=threading.get_ident())
        self._open.append(event)
        try:
            yield event
        finally:
            event.end_ns = time.perf_counter_ns()
            self._open.pop()
            self._close(event)

    def step(self, name: str) -> Any:
        """One backward step, timed (``transforms.observe``)."""
        return self._range(name, "backward")

    def kernel(self, name: str, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        """One kernel call of a compiled program, timed (an event inside its ``compiled_call``;
        ``transforms.observe``)."""
        with self._range(name, "kernel") as event:
            if self.record_shapes:
                event.input_shapes = [list(a.shape) if hasattr(a, "shape") else [] for a in args]
            return kernel(*args, **kwargs)

    def process(self, prim: Any, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        """Run ``prim`` below, timing it (and counting bytes, shapes and FLOPs if asked)."""
        stats = _stats(args) if self.profile_memory else None
        before = stats.allocated if stats is not None else 0
        with self._range(prim.describe(params), "primitive") as event:
            out = super().process(prim, args, params)
        if stats is not None:
            event.allocated = stats.allocated - before
        if self.record_shapes:
            event.input_shapes = [list(a.shape) if isinstance(a, ArrayBase) else [] for a in args]
        if prim.flops is not None and isinstance(out, ArrayBase):  # (products are always counted)
            event.flops = prim.flops(args, out)
        if self.with_stack:
            event.stack = _user_stack(2)
        return out

    # -- reading ------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every event, in the order they finished, nested ranges flattened after their children."""
        flat: list[Event] = []

        def add(e: Event) -> None:
            for c in e.children:
                add(c)
            flat.append(e)

        for e in self._events:
            add(e)
        return EventList(flat)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events summed by name (and input shapes, if grouped so): a table's rows."""
        return self.events().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the Trace Event JSON (complete events, microseconds) that Perfetto and
        ``chrome://tracing`` load."""
        trace = {"traceEvents": [
            {"name": e.name, "cat": e.kind, "ph": "X", "ts": e.start_ns / 1e3, "dur": e.duration_ns / 1e3,
             "pid": os.getpid(), "tid": e.thread,
             "args": {**({"Input Dims": e.input_shapes} if e.input_shapes else {}),
                      **({"Call stack": ";".join(e.stack)} if e.stack else {}),
                      **({"flops": e.flops} if e.flops else {}),
                      **({"bytes allocated": e.allocated} if self.profile_memory else {})}}
            for e in self.events()], "displayTimeUnit": "ms"}
        with open(path, "w") as f:
            json.dump(trace, f)


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _user_stack(skip: int, limit: int = 8) -> list[str]:
    """The calling code's frames (``file:line(function)``), innermost first, funcgrad's own left out."""
    frames: list[str] = []
    frame = sys._getframe(skip)
    while frame is not None and len(frames) < limit:
        path = frame.f_code.co_filename
        if not os.path.abspath(path).startswith(_PACKAGE):
            frames.append(f"{path}:{frame.f_lineno}({frame.f_code.co_name})")
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def _stats(args: tuple[Any, ...]) -> Any:
    for a in args:
        device = getattr(a, "device", None)
        if device is not None and hasattr(device, "stats"):
            return device.stats
    return None


@dataclass
class _Row:
    key: str
    input_shapes: str
    count: int = 0
    total_ns: int = 0
    self_ns: int = 0
    allocated: int = 0
    flops: int = 0

    # PyTorch's names for a row's totals, in microseconds as there
    @property
    def self_cpu_time_total(self) -> float:
        return self.self_ns / 1e3

    @property
    def cpu_time_total(self) -> float:
        return self.total_ns / 1e3

    @property
    def cpu_time(self) -> float:
        """The average per call."""
        return self.total_ns / 1e3 / max(self.count, 1)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.allocated


class EventList(list):  # type: ignore[type-arg]
    """A list of events (or of ``key_averages`` rows), with PyTorch's ``table``.

    Example:
        >>> with fg.profiler.profile() as prof:
        ...     y = fg.ones(3) + fg.ones(3)
        >>> events = prof.events()
        >>> isinstance(events, fg.profiler.EventList), len(events)
        (True, 1)
    """

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events summed by name (and input shapes)."""
        rows: dict[tuple[str, str], _Row] = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else ""
            row = rows.setdefault((e.name, shapes), _Row(e.name, shapes))
            row.count += 1
            row.total_ns += e.duration_ns
            row.self_ns += e.self_ns
            row.allocated += e.allocated
            row.flops += e.flops
        return EventList(rows.values())

    def table(self, sort_by: str = "self_cpu_time_total", row_limit: int = 100, max_name_column_width: int = 55,
              **unused: Any) -> str:
        """PyTorch's profiler table: name, self and total time (and their shares), average,
        calls, and input shapes, bytes and FLOPs where recorded."""
        rows = list(self) if self and isinstance(self[0], _Row) else list(self.key_averages())
        keys = {"self_cpu_time_total": lambda r: r.self_ns, "cpu_time_total": lambda r: r.total_ns,
                "cpu_time": lambda r: r.total_ns / r.count, "count": lambda r: r.count,
                "self_cpu_memory_usage": lambda r: r.allocated, "flops": lambda r: r.flops}
        if sort_by not in keys:
            raise ValueError(f"table: sort_by must be one of {sorted(keys)}, got {sort_by!r}")
        rows.sort(key=keys[sort_by], reverse=True)
        total_self = sum(r.self_ns for r in rows) or 1
        show_shapes = any(r.input_shapes for r in rows)
        show_mem, show_flops = any(r.allocated for r in rows), any(r.flops for r in rows)
        width = min(max_name_column_width, max([4] + [len(r.key) for r in rows]))
        header = [f"{'Name':<{width}}", "Self CPU %", "  Self CPU", "CPU total %", " CPU total", "CPU time avg",
                  "# of Calls"]
        if show_mem:
            header.append("   CPU Mem")
        if show_flops:
            header.append(" Total MFLOPs")
        if show_shapes:
            header.append("Input Shapes")
        line = "-" * (sum(len(h) for h in header) + 2 * len(header))
        out = [line, "  ".join(header), line]
        for r in rows[:row_limit]:
            cells = [f"{r.key[:width]:<{width}}", f"{100 * r.self_ns / total_self:9.2f}%", f"{_fmt(r.self_ns):>10}",
                     f"{100 * r.total_ns / total_self:10.2f}%", f"{_fmt(r.total_ns):>10}",
                     f"{_fmt(r.total_ns // max(r.count, 1)):>12}", f"{r.count:>10}"]
            if show_mem:
                cells.append(f"{_bytes(r.allocated):>10}")
            if show_flops:
                cells.append(f"{r.flops / 1e6:>13.3f}")
            if show_shapes:
                cells.append(r.input_shapes)
            out.append("  ".join(cells))
        out += [line, f"Self CPU time total: {_fmt(total_self)}"]
        return "\n".join(out)


def _fmt(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.3f}s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e3:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 2 ** 30), ("Mb", 2 ** 20), ("Kb", 2 ** 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


@contextlib.contextmanager
def record_function(name: str) -> Iterator[None]:
    """A range of your own in the active profile (``with record_function("forward"): ...``);
    nothing when no profile is recording.

    Example:
        >>> with fg.profiler.profile() as prof:
        ...     with fg.profiler.record_function("mine"):
        ...         y = fg.ones(3) + fg.ones(3)
        >>> sorted(e.name for e in prof.events())
        ['add', 'mine']
    """
    prof = _ACTIVE.get()
    if prof is None:
        yield
        return
    with prof._range(name, "user"):
        yield
