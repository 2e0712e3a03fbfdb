"""A primitive is one record: defined in one place, it works through every transform and
subsystem, and no module outside ``primitives/`` knows a primitive by its name."""

from __future__ import annotations

import ast
import os
import pathlib
from typing import Any

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.primitives import core, lax
from funcgrad.primitives.ad import defelementwise
from funcgrad.primitives.batching import defbroadcasting
from funcgrad.primitives.checks import elementwise

ROOT = pathlib.Path(__file__).resolve().parent.parent / "funcgrad"


def _onnx(g: Any, ins: list[str], out: str, eqn: Any) -> None:
    """Softplus"""
    g.node("Softplus", ins, [out])


@pytest.fixture()
def softplus():
    """``softplus`` defined in one place, as ``docs/primitives.md`` shows; the registry is
    restored afterwards (the registry test expects a case for every primitive)."""
    registered = dict(core.REGISTRY)
    prim = fg.Primitive("softplus_one_place", lambda x: elementwise("softplus_one_place", x, kinds="f"),
                        kernel=lambda xp, x: xp.logaddexp(0, x), autocast="float32",
                        flops=lambda args, out: 4 * out.size, torch_name="Softplus", onnx=_onnx,
                        arity=(1, 1))
    defelementwise(prim, lambda t, ans, x: t * lax.sigmoid(x), saves="args")
    defbroadcasting(prim)
    try:
        yield prim
    finally:
        core.REGISTRY.clear()
        core.REGISTRY.update(registered)


def _reference(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0, x)


def test_a_primitive_defined_in_one_place_works_everywhere(softplus, tmp_path) -> None:
    f = lambda v: fg.bind(softplus, v)  # noqa: E731
    data = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    x = fg.asarray(data)
    sigmoid = 1 / (1 + np.exp(-data))
    # eager, grad (against finite differences and the closed form), jvp
    assert np.allclose(f(x).numpy(), _reference(data))
    g = fg.grad(lambda v: f(v).sum())(x).numpy()
    eps = 1e-6
    assert np.allclose(g, (_reference(data + eps) - _reference(data - eps)) / (2 * eps), atol=1e-6)
    assert np.allclose(g, sigmoid)
    _, tangent = fg.jvp(f, (x,), (fg.ones_like(x),))
    assert np.allclose(tangent.numpy(), sigmoid)
    # vmap against a loop, compile against eager (inputs unchanged), compiled grad
    batch = fg.asarray(np.stack([data, -data]))
    assert np.allclose(fg.vmap(f)(batch).numpy(), np.stack([f(fg.asarray(r)).numpy() for r in (data, -data)]))
    before = x.numpy().copy()
    assert np.array_equal(fg.compile(f)(x).numpy(), f(x).numpy())
    assert np.array_equal(x.numpy(), before)
    assert np.allclose(fg.compile(fg.grad(lambda v: f(v).sum()))(x).numpy(), sigmoid)
    # the tape: its node carries PyTorch's name, backward gives the same gradient
    w = fg.tensor(data, requires_grad=True)
    y = f(w)
    assert y.grad_fn.name == "SoftplusBackward"
    y.sum().backward()
    assert np.allclose(w.grad.numpy(), sigmoid)
    # autocast: run in float32 from bfloat16 inputs
    with fg.autocast("cpu", dtype=fg.bfloat16):
        assert f(x.astype(fg.bfloat16)).dtype == fg.float32
    # the profiler: an event named after it, with its FLOPs
    with fg.profiler.profile() as prof:
        f(x)
    (event,) = [e for e in prof.events() if e.name == "softplus_one_place"]
    assert event.flops == 4 * data.size
    # export: saved, loaded, run
    exported = fg.export(f, x)
    path = tmp_path / "softplus.fgx"
    exported.save(path)
    assert np.allclose(fg.load_exported(path)(x).numpy(), _reference(data))
    # ONNX, run by onnxruntime where installed
    onnx_path = tmp_path / "softplus.onnx"
    try:
        exported.to_onnx(onnx_path)
    except ImportError:
        pytest.skip("the onnx extra is not installed")
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"input_0": data})
    assert np.allclose(got, _reference(data), atol=1e-6)


def test_a_primitive_without_an_onnx_form_is_refused_by_name(softplus, tmp_path) -> None:
    softplus.onnx = None
    exported = fg.export(lambda v: fg.bind(softplus, v), fg.ones(3))
    pytest.importorskip("onnx")
    with pytest.raises(TypeError, match="softplus_one_place"):
        exported.to_onnx(tmp_path / "x.onnx")


def test_a_table_naming_no_primitive_fails_at_import() -> None:
    with pytest.raises(fg.RegistryError, match="softplus"):
        core.annotate("onnx", {"softplus": "Softplus"})
    with pytest.raises(fg.RegistryError, match="no field"):
        core.annotate("onnx_form", {"add": "Add"})
    fg.primitives.check_registry()  # the transforms' primitives too, once loaded


def _primitive_name_comparisons(tree: ast.AST, names: set[str]) -> list[str]:
    """Where a primitive's ``.name`` is compared with a string that is a primitive's name, or
    is the key of a table."""
    found = []

    def strings(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(strings(e) for e in node.elts)) if node.elts else set()
        return set()

    def is_name(node: ast.AST) -> bool:  # ``prim.name``, ``eqn.prim.name``, ``self.prim.name``
        return isinstance(node, ast.Attribute) and node.attr == "name" and "prim" in ast.unparse(node.value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_name(s) for s in sides) and any(strings(s) & names for s in sides):
                found.append(f"line {node.lineno}")
        if isinstance(node, ast.Subscript) and is_name(node.slice):
            found.append(f"line {node.lineno} (a table keyed by name)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
                node.args and is_name(node.args[0]):
            found.append(f"line {node.lineno} (a table keyed by name)")
    return found


def test_no_module_outside_primitives_knows_a_primitive_by_name() -> None:
    names = {p.name for p in fg.registry()}
    offenders = {}
    for path in ROOT.rglob("*.py"):
        if "primitives" in path.relative_to(ROOT).parts:
            continue
        found = _primitive_name_comparisons(ast.parse(path.read_text()), names)
        if found:
            offenders[os.fspath(path.relative_to(ROOT))] = found
    assert not offenders, offenders


def test_the_name_check_finds_what_it_looks_for() -> None:
    code = "if eqn.prim.name in ('matmul', 'einsum'): pass\nx = TABLE[prim.name]\ny = T.get(self.prim.name)\n"
    assert len(_primitive_name_comparisons(ast.parse(code), {"matmul"})) == 3
