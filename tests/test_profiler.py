"""fg.profiler: events per primitive, backward steps named after their nodes, user ranges,
PyTorch's table, the Chrome trace's schema, memory and FLOPs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.transforms.observe import observer

from .backends import assert_as_eager, compile_backend

nn = fg.nn


def test_eager_primitives_are_events_with_shapes_flops_and_memory() -> None:
    x = fg.asarray(np.ones((8, 16), np.float32))
    w = fg.asarray(np.ones((16, 4), np.float32))
    with fg.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        y = fg.tanh(x @ w).sum()
    events = prof.events()
    assert [e.name for e in events] == [eqn.prim.name for eqn in fg.trace(lambda a: fg.tanh(a @ w).sum())(x).eqns]
    product = events[0]
    assert product.input_shapes == [[8, 16], [16, 4]] and product.flops == 2 * 8 * 4 * 16
    assert product.allocated == 8 * 4 * 4 and all(e.duration_ns >= 0 for e in events)
    assert y.item() == pytest.approx(32 * np.tanh(16.0))


def test_backward_steps_are_ranges_named_after_their_nodes() -> None:
    w = fg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with fg.profiler.profile() as prof:
        with fg.profiler.record_function("step"):
            loss = (w * w).sum()
            loss.backward()
    (step,) = [e for e in prof.events() if e.name == "step"]
    names = [e.name for e in prof.events()]
    assert "MulBackward" in names and "SumBackward" in names and step.kind == "user"
    mul_backward = next(e for e in prof.events() if e.name == "MulBackward")
    assert mul_backward.kind == "backward" and mul_backward.children and all(
        c.kind == "primitive" for c in mul_backward.children)
    assert 0 <= mul_backward.self_ns <= mul_backward.duration_ns <= step.duration_ns
    assert observer.get() is None  # restored: nothing is timed after the block
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_the_table_is_pytorchs() -> None:
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    x = fg.randn(4, 32)
    with fg.profiler.profile(record_shapes=True) as prof:
        for _ in range(3):
            model(x).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=4)
    lines = table.splitlines()
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert column in lines[1]
    assert len([ln for ln in lines if ln and not ln.startswith("-")]) == 1 + 4 + 1  # header, 4 rows, total
    assert lines[-1].startswith("Self CPU time total:")
    rows = {r.key: r for r in prof.key_averages()}
    # (6 forward, and the second layer's input cotangent, a linear of the weight's transpose, 3 times)
    assert rows["linear"].count == 9 and rows["LinearBackward"].count == 6 and rows["relu"].count == 3
    linear = rows["linear"]  # (PyTorch's names for the totals, in microseconds)
    assert linear.self_cpu_time_total == linear.self_ns / 1e3 and linear.cpu_time_total == linear.total_ns / 1e3
    assert linear.cpu_time == linear.cpu_time_total / 9 and linear.self_cpu_memory_usage == linear.allocated
    grouped = prof.key_averages(group_by_input_shape=True)
    assert len([r for r in grouped if r.key == "linear"]) == 3  # two layers, and the cotangent's
    assert "Input Shapes" in grouped.table(row_limit=3)
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="nonsense")


def test_chrome_trace_schema(tmp_path) -> None:
    x = fg.ones((3, 3))
    with fg.profiler.profile(record_shapes=True) as prof:
        with fg.profiler.record_function("outer"):
            fg.exp(x) @ x
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    assert isinstance(trace["traceEvents"], list) and len(trace["traceEvents"]) == 3
    for event in trace["traceEvents"]:
        assert event["ph"] == "X" and isinstance(event["name"], str)
        assert isinstance(event["ts"], float) and isinstance(event["dur"], float) and event["dur"] >= 0
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int) and isinstance(event["args"], dict)
    outer = next(e for e in trace["traceEvents"] if e["name"] == "outer")
    inner = [e for e in trace["traceEvents"] if e["name"] != "outer"]
    assert all(outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3 for e in inner)


@pytest.mark.parametrize(("backend", "kernels"), [("numpy", ["exp", "add"]), ("c", ["native: exp add"])])
def test_compiled_calls_ranges_outside_and_nothing_after(backend: str, kernels: list[str]) -> None:
    with compile_backend(backend):
        f = fg.compile(lambda v: fg.exp(v) + 1)
        x = fg.ones(4)
        f(x)
    with fg.profiler.record_function("not profiling"):  # no profile: nothing happens
        fg.exp(x)
    with fg.profiler.profile() as prof:
        out = f(x)
    assert [(e.kind, e.name) for e in prof.events()] == [*(("kernel", k) for k in kernels),
                                                         ("primitive", "compiled_call[<lambda>]")]
    call = prof.events()[-1]
    assert [c.name for c in call.children] == kernels and call.self_ns >= 0
    np.testing.assert_allclose(out.numpy(), np.exp(1.0) + 1, rtol=1e-6)
    fg.exp(x)
    assert len(prof.events()) == len(kernels) + 1
    assert observer.get() is None  # restored


@pytest.mark.parametrize(("backend", "kind"), [("numpy", "fused"), ("c", "native")])
def test_a_fused_group_is_one_kernel_event(backend: str, kind: str) -> None:
    f = lambda v: fg.tanh(v * 0.5 + 1.0) * v - fg.exp(-v)  # noqa: E731
    x = fg.randn(1000, 1000)
    with compile_backend(backend):
        compiled = fg.compile(f)
        compiled(x)
    with fg.profiler.profile() as prof:
        got = compiled(x)
    kernels = [e.name for e in prof.events() if e.kind == "kernel"]
    assert kernels == [f"{kind}: mul add tanh mul neg exp sub"]
    with compile_backend(backend):
        assert_as_eager(got.numpy(), f(x).numpy())


def _user_function(v):
    return fg.exp(v) * 2


def test_with_stack_records_the_calling_code(tmp_path) -> None:
    with fg.profiler.profile(with_stack=True) as prof:
        _user_function(fg.ones(3))
    for event in prof.events():
        assert "test_profiler.py" in event.stack[0] and "(_user_function)" in event.stack[0]
        assert all("/funcgrad/" not in frame.split("test")[0] or "tests" in frame for frame in event.stack)
    prof.export_chrome_trace(tmp_path / "t.json")
    assert "_user_function" in json.loads((tmp_path / "t.json").read_text())["traceEvents"][0]["args"]["Call stack"]
