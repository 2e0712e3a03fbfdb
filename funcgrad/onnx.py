"""``Exported.to_onnx(path)``: an exported program as an ONNX model (the ``onnx`` extra).

Each primitive with an ONNX counterpart becomes one node or a few (``ONNX_OPS``, printed in
``docs/export.md``); a program holding any other primitive is refused with an error naming
it. Constants become initializers, Python scalars in equations become scalar initializers
of their operation's dtype. Opset 18: the reductions take their axes as an input.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import FuncgradError
from .transforms.ir import Program, Var

__all__ = ["to_onnx", "ONNX_OPS", "OnnxExportError"]

OPSET = 18


class OnnxExportError(FuncgradError, TypeError):
    """A program holds a primitive ONNX has no counterpart for (here)."""


_SIMPLE = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "neg": "Neg", "exp": "Exp", "log": "Log",
           "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu", "sqrt": "Sqrt", "abs": "Abs", "sin": "Sin",
           "cos": "Cos", "tan": "Tan", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
           "reciprocal": "Reciprocal", "pow": "Pow", "maximum": "Max", "minimum": "Min", "matmul": "MatMul",
           "select": "Where", "eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
           "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_not": "Not",
           "isnan": "IsNaN", "copy": "Identity", "stop_gradient": "Identity", "arcsin": "Asin", "arccos": "Acos",
           "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "softplus": "Softplus"}
_REDUCE = {"reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin",
           "reduce_prod": "ReduceProd", "logsumexp": "ReduceLogSumExp"}


class _Graph:
    """The ONNX graph being built: nodes, initializers, and a name per program value."""

    def __init__(self, onnx: Any) -> None:
        self.onnx, self.helper = onnx, onnx.helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def fresh(self, hint: str = "t") -> str:
        self.count += 1
        return f"{hint}{self.count}"

    def node(self, op: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> str:
        outputs = outputs or [self.fresh()]
        self.nodes.append(self.helper.make_node(op, inputs, outputs, **attrs))
        return outputs[0]

    def constant(self, value: Any, hint: str = "c") -> str:
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name


def _dtype_of(eqn: Any) -> np.dtype:
    """The dtype of a Python scalar in ``eqn``: its result's, or for a comparison (a bool
    result) its array operand's."""
    out = np.dtype(eqn.outputs[0].aval.dtype.np)
    if out != np.bool_:
        return out
    return next((np.dtype(a.aval.dtype.np) for a in eqn.inputs if isinstance(a, Var)), out)


def _axes(g: _Graph, axes: Any) -> str:
    return g.constant(np.asarray(list(axes), np.int64), "axes")


def _linear(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
    w_t = g.node("Transpose", [ins[1]], perm=[1, 0])
    if len(ins) == 3:
        g.node("Add", [g.node("MatMul", [ins[0], w_t]), ins[2]], [out])
    else:
        g.node("MatMul", [ins[0], w_t], [out])


def _reduce(op: str) -> Callable[[_Graph, list[str], str, Any], None]:
    def emit(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
        g.node(op, [ins[0], _axes(g, eqn.params["axes"])], [out], keepdims=int(eqn.params["keepdims"]))

    return emit


def _convert(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
    to = g.helper.np_dtype_to_tensor_dtype(np.dtype(eqn.params["new_dtype"].np))
    g.node("Cast", ins, [out], to=to)


def _integer_pow(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
    g.node("Pow", [ins[0], g.constant(np.asarray(eqn.params["y"], _dtype_of(eqn)))], [out])


def _pad(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
    if eqn.params["mode"] != "constant":
        raise OnnxExportError(f"to_onnx: pad in mode {eqn.params['mode']!r} (only 'constant' has an ONNX form here)")
    widths = eqn.params["pad_width"]
    pads = np.asarray([w[0] for w in widths] + [w[1] for w in widths], np.int64)
    value = np.asarray(eqn.params["value"], np.dtype(eqn.outputs[0].aval.dtype.np))
    g.node("Pad", [ins[0], g.constant(pads, "pads"), g.constant(value, "value")], [out], mode="constant")


def _windows(g: _Graph, ins: list[str], out: str, eqn: Any) -> None:
    """Every window offset as a strided Slice of the input, stacked on a new last axis and
    reshaped to the window axes (ONNX has no strided-view operation)."""
    p = eqn.params
    out_shape = eqn.outputs[0].aval.shape
    counts = [out_shape[a] for a in p["axes"]]
    taps = []
    for offsets in itertools.product(*(range(k) for k in p["sizes"])):
        starts = [o * d for o, d in zip(offsets, p["dilations"])]
        ends = [st + (c - 1) * s + 1 for st, c, s in zip(starts, counts, p["steps"])]
        bounds = [g.constant(np.asarray(v, np.int64)) for v in (starts, ends, p["axes"], p["steps"])]
        piece = g.node("Slice", [ins[0], *bounds])
        taps.append(g.node("Unsqueeze", [piece, _axes(g, [-1])]))
    stacked = g.node("Concat", taps, axis=-1)
    g.node("Reshape", [stacked, g.constant(np.asarray(out_shape, np.int64), "shape")], [out])


_SPECIAL: dict[str, Callable[[_Graph, list[str], str, Any], Any]] = {
    "pad": _pad,
    "windows": _windows,
    "linear": _linear,
    "convert_element_type": _convert,
    "integer_pow": _integer_pow,
    "square": lambda g, ins, out, eqn: g.node("Mul", [ins[0], ins[0]], [out]),
    "rsqrt": lambda g, ins, out, eqn: g.node("Reciprocal", [g.node("Sqrt", ins)], [out]),
    "ne": lambda g, ins, out, eqn: g.node("Not", [g.node("Equal", ins)], [out]),
    "reshape": lambda g, ins, out, eqn: g.node(
        "Reshape", [ins[0], g.constant(np.asarray(eqn.params["new_sizes"], np.int64), "shape")], [out]),
    "transpose": lambda g, ins, out, eqn: g.node("Transpose", ins, [out], perm=list(eqn.params["permutation"])),
    "broadcast_to": lambda g, ins, out, eqn: g.node(
        "Expand", [ins[0], g.constant(np.asarray(eqn.outputs[0].aval.shape, np.int64), "shape")], [out]),
    "expand_dims": lambda g, ins, out, eqn: g.node("Unsqueeze", [ins[0], _axes(g, eqn.params["dimensions"])],
                                                   [out]),
    "squeeze": lambda g, ins, out, eqn: g.node("Squeeze", [ins[0], _axes(g, eqn.params["dimensions"])], [out]),
    "concatenate": lambda g, ins, out, eqn: g.node("Concat", ins, [out], axis=int(eqn.params["axis"])),
    "einsum": lambda g, ins, out, eqn: g.node("Einsum", ins, [out], equation=eqn.params["subscripts"]),
    **{name: _reduce(op) for name, op in _REDUCE.items()},
}

ONNX_OPS: dict[str, str] = {**_SIMPLE, "linear": "MatMul + Add", "convert_element_type": "Cast",
                            "integer_pow": "Pow", "square": "Mul", "rsqrt": "Sqrt + Reciprocal", "ne": "Equal + Not",
                            "reshape": "Reshape", "transpose": "Transpose", "broadcast_to": "Expand",
                            "expand_dims": "Unsqueeze", "squeeze": "Squeeze", "concatenate": "Concat",
                            "einsum": "Einsum", "pad": "Pad (constant)", "windows": "Slice + Concat + Reshape",
                            **_REDUCE}


def to_onnx(program: Program, path: str | os.PathLike[str]) -> None:
    """Write ``program`` (an exported one: constants included) as an ONNX model at ``path``."""
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - the extra's absence is tested by skipping
        raise ImportError("to_onnx needs the onnx package: pip install 'funcgrad[onnx]'") from exc
    missing = sorted({e.prim.name for e in program.eqns} - set(ONNX_OPS))
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
        ins = [names[id(a)] if isinstance(a, Var) else g.constant(np.asarray(a.value, _dtype_of(eqn)), "lit")
               for a in eqn.inputs]
        out = g.fresh("v")
        names[id(eqn.outputs[0])] = out
        if eqn.prim.name in _SPECIAL:
            _SPECIAL[eqn.prim.name](g, ins, out, eqn)
        else:
            g.node(_SIMPLE[eqn.prim.name], ins, [out])
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
