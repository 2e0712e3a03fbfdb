"""``Exported.to_onnx(path)``: an exported program as an ONNX model (the ``onnx`` extra).

Each primitive with an ONNX form (``Primitive.onnx``; ``onnx_ops()``, printed in
``docs/export.md``) becomes one node or a few; a program holding any other primitive is refused with an error naming
it. Constants become initializers, Python scalars in equations become scalar initializers
of their operation's dtype. Opset 18: the reductions take their axes as an input.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .errors import FuncgradError
from .primitives import registry
from .transforms.ir import Program, Var

__all__ = ["to_onnx", "onnx_ops", "OnnxExportError"]

OPSET = 18


class OnnxExportError(FuncgradError, TypeError):
    """A program holds a primitive ONNX has no counterpart for (here)."""


class _Graph:
    """The ONNX graph being built: nodes, initializers, and a name per program value. A
    primitive's ``onnx`` lowering (``Primitive.onnx``) emits through these methods."""

    def __init__(self, onnx: Any) -> None:
        self.onnx, self.helper = onnx, onnx.helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def fresh(self, hint: str = "t") -> str:
        self.count += 1
        return f"{hint}{self.count}"

    def node(self, op: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> str:
        """One node; its (first) output's name."""
        outputs = outputs or [self.fresh()]
        self.nodes.append(self.helper.make_node(op, inputs, outputs, **attrs))
        return outputs[0]

    def constant(self, value: Any, hint: str = "c") -> str:
        """An initializer holding ``value``; its name."""
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def ints(self, values: Any, hint: str = "c") -> str:
        """An int64 initializer (shapes, axes, pads)."""
        return self.constant(np.asarray(list(values), np.int64), hint)

    def scalar(self, value: Any, eqn: Any) -> str:
        """A Python number of ``eqn`` as a scalar initializer of its operation's dtype."""
        return self.constant(np.asarray(value, _dtype_of(eqn)), "lit")

    def dtype_code(self, dtype: Any) -> int:
        """ONNX's code for a funcgrad dtype."""
        return int(self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np)))

    @staticmethod
    def refuse(reason: str) -> None:
        raise OnnxExportError(f"to_onnx: {reason}")


def _dtype_of(eqn: Any) -> np.dtype:
    """The dtype of a Python scalar in ``eqn``: its result's, or for a comparison (a bool
    result) its array operand's."""
    out = np.dtype(eqn.outputs[0].aval.dtype.np)
    if out != np.bool_:
        return out
    return next((np.dtype(a.aval.dtype.np) for a in eqn.inputs if isinstance(a, Var)), out)


def onnx_ops() -> dict[str, str]:
    """Each primitive with an ONNX form, by name: the ONNX operators it becomes."""
    return {p.name: p.onnx if isinstance(p.onnx, str) else p.onnx.__doc__.strip()
            for p in registry() if p.onnx is not None}


def to_onnx(program: Program, path: str | os.PathLike[str]) -> None:
    """Write ``program`` (an exported one: constants included) as an ONNX model at ``path``."""
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - the extra's absence is tested by skipping
        raise ImportError("to_onnx needs the onnx package: pip install 'funcgrad[onnx]'") from exc
    missing = sorted({e.prim.name for e in program.eqns if e.prim.onnx is None})
    if missing:
        raise OnnxExportError(f"to_onnx: no ONNX counterpart for {', '.join(missing)} (see docs/export.md for the "
                              "primitives that have one)")
    g = _Graph(onnx)
    names: dict[int, str] = {}
    inputs = []
    for i, v in enumerate(program.invars):
        names[id(v)] = f"input_{i}"
        inputs.append(onnx.helper.make_tensor_value_info(
            names[id(v)], onnx.helper.np_dtype_to_tensor_dtype(np.dtype(v.aval.dtype.np)), list(v.aval.shape)))
    for i, (v, c) in enumerate(zip(program.constvars, program.consts)):
        names[id(v)] = f"const_{i}"
        g.initializers.append(onnx.numpy_helper.from_array(np.asarray(c.numpy()), names[id(v)]))
    for eqn in program.eqns:
        ins = [names[id(a)] if isinstance(a, Var) else g.scalar(a.value, eqn) for a in eqn.inputs]
        out = g.fresh("v")
        names[id(eqn.outputs[0])] = out
        form = eqn.prim.onnx
        if isinstance(form, str):
            g.node(form, ins, [out])
        else:
            form(g, ins, out, eqn)
    outputs = []
    for i, a in enumerate(program.outvars):
        if not isinstance(a, Var):
            raise OnnxExportError("to_onnx: a program whose output is a Python constant")
        name = f"output_{i}"
        g.node("Identity", [names[id(a)]], [name])
        outputs.append(onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(a.aval.dtype.np)), list(a.aval.shape)))
    graph = onnx.helper.make_graph(g.nodes, "funcgrad_program", inputs, outputs, g.initializers)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)],
                                   producer_name="funcgrad")
    onnx.checker.check_model(model)
    onnx.save(model, os.fspath(path))
