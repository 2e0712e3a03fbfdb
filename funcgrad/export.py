"""``fg.export``: a function as a program that runs without its Python source (``docs/export.md``).

``export(f, *example_args)`` traces ``f`` at the examples' shapes and dtypes (the trace of
``fg.trace``; closed-over arrays and module parameters become constants), runs the
compiler's passes, and returns an ``Exported``: call it, print it, ``.save(path)`` it.
``load_exported(path)`` reads the file back and runs it with nothing but funcgrad.

The file is never unpickled. Its layout is safetensors': 8 bytes of little-endian header
length, a JSON header, then the constants' raw bytes. The header holds the format's name
and version, the program (inputs' and outputs' shapes and dtypes, and each equation: the
primitive's registered name, its inputs as variable numbers or literal numbers, its
parameters as JSON values, and its outputs' shapes and dtypes), the constants' dtypes,
shapes and byte ranges with a CRC-32 of their bytes, and the argument and result structures (tuples, lists, dicts with
string keys, ``None``). Loading checks all of it: every name must be a registered
primitive, every variable defined before use, every byte range inside the file, and every
equation's shape rule must give the recorded result; anything else is ``FormatError``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import tree as _tree
from .array import Array, ArrayBase, wrap_kernel_output
from .backends.device import CPU
from .errors import ArgumentTypeError, FormatError, FuncgradError
from .onnx import to_onnx
from .ops import asarray
from .primitives import registry_lookup
from .primitives.core import ShapedArray
from .transforms.compiler.pipeline import optimize
from .transforms.ir import Eqn, Literal, Program, Var, make_program
from .untrusted import COST_LIST, COST_OBJECT, Budget, Reader, text_bytes

__all__ = ["export", "load_exported", "Exported", "ExportError", "FORMAT", "VERSION"]

FORMAT, VERSION = "funcgrad.exported", 1
_MAX_HEADER = 256 * 2 ** 20


class ExportError(FuncgradError, TypeError):
    """A function holds something an exported file cannot record (a Python callable).

    Example:
        >>> from funcgrad.export import ExportError
        >>> try:
        ...     fg.export(lambda x: fg.debug.callback(print, x) or x * 2.0, fg.ones(2))
        ... except ExportError as e:
        ...     print(str(e)[:47])
        export: the parameters of debug_callback (fn) h
    """


class Exported:
    """A traced, optimised program with its signature (what ``fg.export`` makes):
    ``exported(*args)`` runs it on arguments of the shapes and dtypes it was traced at;
    ``save`` writes it, ``to_onnx`` writes an ONNX model, ``to`` moves its constants.

    Example:
        >>> e = fg.export(lambda x: (x * x).sum(), fg.ones(3))
        >>> print(e)
        { lambda a:f32[3]; let
            b:f32[3] = mul a a
            c:f32[] = reduce_sum[axes=(0,) keepdims=False] b
          in (c,) }
        >>> e(fg.asarray([1.0, 2.0, 3.0])).item()
        14.0
    """

    def __init__(self, program: Program, in_tree: Any, out_tree: Any) -> None:
        self.program, self.in_tree, self.out_tree = program, in_tree, out_tree

    @property
    def in_avals(self) -> list[ShapedArray]:
        """The shapes and dtypes the arguments must have."""
        return self.program.in_avals

    def __call__(self, *args: Any) -> Any:
        flat, tree = _tree.flatten(args)
        if tree != self.in_tree:
            raise TypeError(f"exported program: arguments of structure {tree}, expected {self.in_tree}")
        for i, (x, aval) in enumerate(zip(flat, self.in_avals)):
            if not isinstance(x, ArrayBase):
                x = asarray(x)
            if tuple(x.shape) != aval.shape or x.dtype is not aval.dtype:
                raise TypeError(f"exported program: argument {i} is {x.dtype}{list(x.shape)}, expected "
                                f"{aval.str_short()} (export again for other shapes)")
        flat = [x if isinstance(x, ArrayBase) else asarray(x) for x in flat]
        return _tree.unflatten(self.out_tree, self.program.eval_flat(flat))

    def __str__(self) -> str:
        return str(self.program)

    __repr__ = __str__

    def to(self, device: Any) -> Exported:
        """The same program with its constants on ``device`` (its arguments must be there too)."""
        p = self.program
        moved = Program(p.invars, p.constvars, [c.to(device) for c in p.consts], p.eqns, p.outvars, p.in_tree,
                        p.out_tree)
        return Exported(moved, self.in_tree, self.out_tree)

    def to_onnx(self, path: str | os.PathLike[str]) -> None:
        """Write the program as an ONNX model (the ``onnx`` extra; primitives without an ONNX
        counterpart are refused by name)."""
        to_onnx(self.program, path)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the program in funcgrad's pickle-free export format."""
        data = bytearray()
        constants = []
        for c in self.program.consts:
            raw = np.array(c.numpy() if isinstance(c, Array) else c, order="C")  # (0-d stays 0-d)
            constants.append({"dtype": _dtype_name(raw.dtype), "shape": list(raw.shape),
                              "offsets": [len(data), len(data) + raw.nbytes]})
            data += raw.astype(raw.dtype.newbyteorder("<"), copy=False).tobytes()
        header = {"format": FORMAT, "version": VERSION, "crc32": zlib.crc32(bytes(data)),
                  "program": _encode_program(self.program, top=True),
                  "constants": constants, "in_tree": _encode_tree(self.in_tree),
                  "out_tree": _encode_tree(self.out_tree)}
        blob = json.dumps(header, allow_nan=False).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(blob)) + blob + bytes(data))


def export(f: Any, *example_args: Any) -> Exported:
    """``f`` traced at ``example_args``' shapes and dtypes and optimised, as an ``Exported``
    (``torch.export.export``, ``jax.export``): a program that runs without ``f``'s Python,
    saves to a file without pickling (``Exported.save``, ``fg.load_exported``) and writes
    an ONNX model (``Exported.to_onnx``).

    Args:
        f: the function, of arrays (and pytrees of them).
        *example_args: arguments of the shapes and dtypes the program takes.

    Returns:
        The ``Exported`` program.

    Example:
        >>> e = fg.export(lambda w, x: fg.tanh(x @ w), fg.ones((3, 2)), fg.ones((4, 3)))
        >>> e.in_avals
        [ShapedArray(f32[3,2], cpu), ShapedArray(f32[4,3], cpu)]
        >>> e(fg.ones((3, 2)), fg.ones((4, 3))).shape
        (4, 2)
    """
    flat, in_tree = _tree.flatten(example_args)
    flat = [x if isinstance(x, ArrayBase) else asarray(x) for x in flat]
    program, _ = make_program(f, [ShapedArray(tuple(x.shape), x.dtype, x.device) for x in flat], in_tree)
    program = optimize(program)
    _encode_program(program, top=True)  # (refuses what a file cannot hold, now rather than at save)
    return Exported(program, program.in_tree if program.in_tree is not None else in_tree, program.out_tree)


def load_exported(path: str | os.PathLike[str], device: Any = None) -> Exported:
    """Read a file ``Exported.save`` wrote, its constants onto ``device`` (the CPU by
    default); every part is checked, nothing is unpickled.

    Args:
        path: the file.
        device: where the program's constants go.

    Returns:
        The ``Exported`` program. A malformed or hostile file raises ``FormatError``.

    Example:
        >>> import os, tempfile
        >>> e = fg.export(lambda x: x * 2.0, fg.ones(3))
        >>> path = os.path.join(tempfile.mkdtemp(), "double.fgx")
        >>> e.save(path)
        >>> fg.load_exported(path)(fg.ones(3)).tolist()
        [2.0, 2.0, 2.0]
    """
    try:
        with open(path, "rb") as f:
            exported = _decode_file(f, os.fstat(f.fileno()).st_size)
    except FormatError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError, RecursionError,
            FuncgradError) as exc:
        raise FormatError(f"load_exported: {os.fspath(path)} is not a valid exported program ({exc})") from exc
    return exported if device is None else exported.to(device)


# ---- encoding ---------------------------------------------------------------------------

def _dtype_name(dt: Any) -> str:
    return str(_dt.as_dtype(dt).name)


def _aval(a: ShapedArray) -> dict[str, Any]:
    return {"shape": list(a.shape), "dtype": a.dtype.name, **({"weak": True} if a.weak else {})}


def _encode_value(v: Any, where: str) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": repr(v)} if not math.isfinite(v) else v
    if isinstance(v, (tuple, list)):
        return {"tuple" if isinstance(v, tuple) else "list": [_encode_value(x, where) for x in v]}
    if isinstance(v, _dt.DType):
        return {"dtype": v.name}
    if isinstance(v, Program):
        return {"program": _encode_program(v)}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"dict": {k: _encode_value(x, where) for k, x in v.items()}}
    raise ExportError(f"export: {where} holds a {type(v).__name__} ({v!r:.80}), which an exported file cannot "
                      "record; export a function made of fg.* operations (no custom rules or callbacks)")


def _encode_program(p: Program, top: bool = False) -> dict[str, Any]:
    ids: dict[int, int] = {}

    def define(v: Var) -> dict[str, Any]:
        ids[id(v)] = len(ids)
        return _aval(v.aval)

    def atom(a: Any, where: str) -> Any:
        if isinstance(a, Var):
            return {"var": ids[id(a)]}
        return {"literal": _encode_value(a.value, where)}

    out = {"invars": [define(v) for v in p.invars], "constvars": [define(v) for v in p.constvars]}
    if not top and p.consts:
        raise ExportError("export: a nested program holds constants of its own")
    eqns = []
    for eqn in p.eqns:
        where = f"the parameters of {eqn.prim.name}"
        eqns.append({"prim": eqn.prim.name, "inputs": [atom(a, where) for a in eqn.inputs],
                     "params": {k: _encode_value(v, f"{where} ({k})") for k, v in eqn.params.items()},
                     "outputs": [define(v) for v in eqn.outputs]})
    out["eqns"] = eqns
    out["outvars"] = [atom(a, "an output") for a in p.outvars]
    return out


def _encode_tree(t: Any) -> Any:
    if t is None:
        return None
    if t.node_type is None:
        return "*"
    if t.node_type in (tuple, list):
        return {t.node_type.__name__: [_encode_tree(c) for c in t.children]}
    if t.node_type is dict and all(isinstance(k, str) for k in t.aux):
        return {"dict": [[k, _encode_tree(c)] for k, c in zip(t.aux, t.children)]}
    if t.node_type is type(None):
        return {"none": []}
    raise ExportError(f"export: arguments and results must be arrays in tuples, lists and dicts with string keys; "
                      f"got a {t.node_type.__name__}")


# ---- decoding (every field checked) -----------------------------------------------------

def _decode_file(f: Any, size: int) -> Exported:
    """The file, read once, in order: the header, then each constant's bytes straight into its
    array. The header is parsed one equation at a time (``untrusted.Reader``), each equation
    checked and kept as compact IR while its JSON goes, and everything is charged to a budget
    of four times the file's size and 1 MiB; a program of few equations costs its constants'
    bytes and well under 1 MiB more. The constants' blocks must tile the data section: in
    order, each starting where the last ended, the last ending at the end of the file (no
    block is read twice, no byte is unaccounted for)."""
    if size < 8:
        raise FormatError("load_exported: the file is too short to hold a header")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > min(_MAX_HEADER, size - 8):
        raise FormatError(f"load_exported: the header length {n} runs past the end of the file")
    budget = Budget(size, lambda why: FormatError(f"load_exported: {why}"))
    text = budget.read_text(f, n)
    reader = Reader(text, budget, "the program")
    header: dict[str, Any] = {}
    for key in reader.members():
        if key == "program":
            _check_format(header, present=True)  # (before a program of another version is decoded)
            header[key] = _read_program(reader, _Kept(budget))
        else:
            header[key] = reader.value()
            _check_format(header)
    reader.end()
    budget.refund(text_bytes(text))
    del text, reader
    _check_format(header, present=True)
    body_size = size - 8 - n
    consts, crc, at = [], 0, 0
    for c in _expect(header["constants"], list):
        dtype = _dt.as_dtype(_expect(c["dtype"], str))
        shape = tuple(_expect(d, int) for d in _expect(c["shape"], list))
        start, end = (_expect(o, int) for o in _expect(c["offsets"], list))
        if any(d < 0 for d in shape) or start != at or not start <= end <= body_size or \
                end - start != math.prod(shape) * dtype.itemsize:
            raise FormatError(f"load_exported: constant bytes [{start}, {end}) do not fit {dtype}{list(shape)} "
                              f"where the data section's next block starts, at {at} of {body_size} bytes")
        array = np.empty(shape, dtype.np)
        if f.readinto(array.reshape(-1).view(np.uint8).data) != end - start:
            raise FormatError("load_exported: the file ends inside a constant")
        crc, at = zlib.crc32(array.reshape(-1).view(np.uint8).data, crc), end
        if sys.byteorder == "big":  # (the file is little-endian)
            array.byteswap(inplace=True)
        consts.append(wrap_kernel_output(array, CPU))  # (the array is the constant's own: no copy)
    if at != body_size:
        raise FormatError(f"load_exported: {body_size - at} bytes of the data section belong to no constant")
    if header.get("crc32") != crc:
        raise FormatError("load_exported: the constants' bytes do not match their checksum (a damaged file)")
    program = header["program"].with_consts(consts)
    in_tree, out_tree = _decode_tree(header["in_tree"]), _decode_tree(header["out_tree"])
    if in_tree is None or in_tree.num_leaves != len(program.invars) or out_tree is None or \
            out_tree.num_leaves != len(program.outvars):
        raise FormatError("load_exported: the argument or result structure does not match the program's inputs "
                          "and outputs")
    return Exported(program, in_tree, out_tree)


def _check_format(header: dict[str, Any], present: bool = False) -> None:
    """The format's name and version, where read so far (or, if ``present``, that they were)."""
    if ("format" in header or present) and header.get("format") != FORMAT:
        raise FormatError(f"load_exported: not a {FORMAT} file")
    if ("version" in header or present) and header.get("version") != VERSION:
        raise FormatError(f"load_exported: format version {header.get('version')!r}; this funcgrad reads {VERSION}")


def _expect(v: Any, kind: type) -> Any:
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise FormatError(f"load_exported: expected a {kind.__name__}, got {v!r:.60}")
    return v


class _Kept:
    """What a loaded program keeps, charged to the budget as it is made (``kept`` counts it,
    so the JSON it came from can be refunded), with one ``ShapedArray`` per distinct shape,
    dtype and weakness in a file (a program's variables share a handful) and one dict per
    distinct set of parameters."""

    COST = 200  # a ShapedArray, its shape tuple and this table's entry

    def __init__(self, budget: Budget) -> None:
        self.budget, self.kept = budget, 0
        self.seen: dict[Any, ShapedArray] = {}
        self.params: dict[Any, dict[str, Any]] = {}

    def keep(self, nbytes: int) -> None:
        self.budget.charge(nbytes, "the program")
        self.kept += nbytes

    @contextlib.contextmanager
    def parsing(self) -> Iterator[None]:
        """A stretch of JSON read and turned into IR: what the JSON cost is refunded at its
        end, what the IR keeps (``keep``) stays charged."""
        mark, before = self.budget.left, self.kept
        yield
        self.budget.refund(mark - self.budget.left - (self.kept - before))

    def shared(self, params: dict[str, Any]) -> dict[str, Any]:
        """One dict per distinct set of parameters (a program's reshapes share a few), kept
        once: no pass writes into an equation's parameters."""
        try:
            key = tuple((k, _typed(v)) for k, v in params.items())
            shared = self.params.get(key)
        except TypeError:  # (a list or a nested program: this equation's own)
            self.keep(_params_cost(params))
            return params
        if shared is None:
            self.keep(2 * _params_cost(params) + 200)  # (the dict, and its key in this table)
            shared = self.params[key] = params
        return shared

    def __call__(self, d: Any) -> ShapedArray:
        shape = tuple(_expect(x, int) for x in _expect(d["shape"], list))
        key = (shape, _expect(d["dtype"], str), _expect(d.get("weak", False), bool))
        aval = self.seen.get(key)
        if aval is None:
            if any(x < 0 for x in shape):
                raise FormatError(f"load_exported: a negative dimension in {list(shape)}")
            if math.prod(shape) >= 1 << 48:  # (no machine holds 2**48 elements: a file that says so is hostile)
                raise FormatError(f"load_exported: an array of shape {list(shape)} is too large to have been "
                                  "exported")
            self.keep(self.COST + 8 * len(shape))
            aval = self.seen[key] = ShapedArray(shape, _dt.as_dtype(key[1]), CPU, key[2])
        return aval


def _decode_value(v: Any, depth: int = 0) -> Any:
    if depth > 64:
        raise FormatError("load_exported: parameters nested too deeply")
    if v is None or isinstance(v, (bool, str, float)) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    if isinstance(v, dict) and len(v) == 1:
        ((kind, x),) = v.items()
        if kind == "int":
            return _expect(x, int)
        if kind == "float":
            return float(_expect(x, str))
        if kind in ("tuple", "list"):
            items = [_decode_value(y, depth + 1) for y in _expect(x, list)]
            return tuple(items) if kind == "tuple" else items
        if kind == "dtype":
            return _dt.as_dtype(_expect(x, str))
        if kind == "program":
            return _expect(x, _ReadProgram).with_consts([])
        if kind == "dict":
            return {_expect(k, str): _decode_value(y, depth + 1) for k, y in _expect(x, dict).items()}
    raise FormatError(f"load_exported: an unknown parameter value {v!r:.80}")


class _ReadProgram:
    """A program read from a file, waiting for its constants (read after the header)."""

    def __init__(self, invars: list[Var], constvars: list[Var], eqns: list[Eqn], outvars: list[Any]) -> None:
        self.invars, self.constvars, self.eqns, self.outvars = invars, constvars, eqns, outvars

    def with_consts(self, consts: list[Any]) -> Program:
        if len(self.constvars) != len(consts):
            raise FormatError(f"load_exported: {len(self.constvars)} constant variables for {len(consts)} constants")
        for v, c in zip(self.constvars, consts):
            if v.aval.shape != tuple(c.shape) or v.aval.dtype is not c.dtype:
                raise FormatError(f"load_exported: constant {c.dtype}{list(c.shape)} for a {v.aval.str_short()} "
                                  "variable")
        return Program(self.invars, self.constvars, consts, self.eqns, self.outvars)


#: What a decoded equation keeps, in bytes (CPython 3.11, 64-bit, measured with
#: ``tracemalloc``): the ``Eqn`` with its two lists, each slot of those, each output's
#: ``Var``, and each ``Literal`` with its number.
_EQN_COST, _SLOT_COST, _VAR_COST, _LITERAL_COST = 184, 8, 56, 96


def _read_program(reader: Reader, kept: _Kept) -> _ReadProgram:
    """A program's fields in the order ``Exported.save`` writes them (inputs, constants,
    equations, outputs), each equation decoded, checked and kept as IR before the next is
    read; a nested program (a ``cond`` branch, a ``scan`` body) is streamed the same way."""
    env: list[Var] = []
    parts: dict[str, Any] = {}
    order = ["invars", "constvars", "eqns", "outvars"]

    def define(a: Any) -> Var:
        kept.keep(_VAR_COST)
        v = Var(kept(a))
        env.append(v)
        return v

    def atom(a: Any) -> Any:
        if "var" in _expect(a, dict):
            i = _expect(a["var"], int)
            if not 0 <= i < len(env):
                raise FormatError(f"load_exported: variable {i} is used before it is defined")
            return env[i]
        value = _decode_value(a["literal"])
        if not isinstance(value, (bool, int, float, complex)):
            raise FormatError(f"load_exported: a literal must be a number, got {value!r:.60}")
        kept.keep(_LITERAL_COST)
        return Literal(value)

    for key in reader.members():
        if key not in order or order.index(key) != len(parts):
            raise FormatError(f"load_exported: a program's fields must be {', '.join(order)}, in order; got {key!r}")
        if key != "eqns":
            with kept.parsing():
                parts[key] = [atom(a) if key == "outvars" else define(a) for a in _expect(reader.value(), list)]
                kept.keep(64 + _SLOT_COST * len(parts[key]))
            continue
        eqns = parts[key] = []
        for _ in reader.elements():
            with kept.parsing():
                eqns.append(_read_equation(reader, kept, atom, define))
    if len(parts) != len(order):
        raise FormatError(f"load_exported: a program lacks {', '.join(order[len(parts):])}")
    return _ReadProgram(parts["invars"], parts["constvars"], parts["eqns"], parts["outvars"])


def _read_equation(reader: Reader, kept: _Kept, atom: Callable[[Any], Any], define: Callable[[Any], Var]) -> Eqn:
    """One equation of the program being read, decoded and checked against its primitive's
    shape rule."""
    fields: dict[str, Any] = {}
    for field in reader.members():
        if field == "params":
            reader.budget.charge(COST_OBJECT, "the program")
            fields[field] = {k: _read_parameter(reader, kept) for k in reader.members()}
        else:
            fields[field] = reader.value()
    name = _expect(fields["prim"], str)
    try:
        prim = registry_lookup(name)
    except KeyError:
        prim = None
    if prim is None or not prim.loadable:
        raise FormatError(f"load_exported: {name!r} is not a primitive this funcgrad can load")
    inputs = list(tuple(atom(a) for a in _expect(fields["inputs"], list)))  # (lists of their exact size)
    params = {_expect(k, str): _decode_value(v) for k, v in _expect(fields["params"], dict).items()}
    outputs = list(tuple(define(a) for a in _expect(fields["outputs"], list)))
    _check_shape_rule(prim, inputs, params, outputs)
    kept.keep(_EQN_COST + _SLOT_COST * (len(inputs) + len(outputs) + 1))
    return Eqn(prim, inputs, outputs, kept.shared(params))


def _read_parameter(reader: Reader, kept: _Kept) -> Any:
    """An encoded parameter value (``_encode_value``'s tags), a nested program streamed."""
    if reader.peek() != "{":
        return reader.value()
    reader.budget.charge(COST_OBJECT, "the program")
    tagged: dict[str, Any] = {}
    for kind in reader.members():
        if kind == "program":
            tagged[kind] = _read_program(reader, kept)
        elif kind == "dict":
            reader.budget.charge(COST_OBJECT, "the program")
            tagged[kind] = {k: _read_parameter(reader, kept) for k in reader.members()}
        elif kind in ("tuple", "list"):
            reader.budget.charge(COST_LIST, "the program")
            tagged[kind] = [_read_parameter(reader, kept) for _ in reader.elements()]
        else:
            tagged[kind] = reader.value()
    return tagged


def _typed(v: Any) -> Any:
    """A parameter value as a key that tells ``1``, ``1.0``, ``True`` and ``-0.0`` apart;
    ``TypeError`` for a list or a program (never shared)."""
    if isinstance(v, tuple):
        return tuple, tuple(_typed(x) for x in v)
    if isinstance(v, (list, Program)):
        raise TypeError("not shared")
    return type(v), v.hex() if isinstance(v, float) else v


def _params_cost(params: dict[str, Any]) -> int:
    """What an equation's parameters keep, bounded from above: nested programs were charged
    as they were read."""
    def cost(v: Any) -> int:
        if isinstance(v, (tuple, list)):
            return 64 + sum(8 + cost(x) for x in v)
        if isinstance(v, dict):
            return 240 + sum(100 + cost(x) for x in v.values())
        if isinstance(v, str):
            return 64 + text_bytes(v)
        return 40 if isinstance(v, (int, float)) else 0
    return 0 if not params else cost(params)


def _check_shape_rule(prim: Any, inputs: list[Any], params: dict[str, Any], outputs: list[Var]) -> None:
    """The primitive takes this many inputs, and its own shape rule gives the recorded results."""
    fewest, most = prim.arity
    if not fewest <= len(inputs) <= most:
        raise FormatError(f"load_exported: {prim.name} with {len(inputs)} inputs")
    avals = [a.aval if isinstance(a, Var) else a.value for a in inputs]
    _check_params(prim, params)
    try:
        got = prim.abstract_eval(*avals, **params)
    except FormatError:
        raise
    except Exception as exc:  # the primitive's own rule refuses these inputs or parameters
        raise FormatError(f"load_exported: {prim.name} refuses its recorded inputs or parameters: {exc}") from None
    got = list(got) if prim.multiple_results else [got]
    want = [v.aval for v in outputs]
    if len(got) != len(want) or any(g.shape != w.shape or g.dtype is not w.dtype for g, w in zip(got, want)):
        raise FormatError(f"load_exported: {prim.name} gives {[g.str_short() for g in got]} but the file records "
                          f"{[w.str_short() for w in want]}")


def _check_params(prim: Any, params: dict[str, Any]) -> None:
    """The parameters the primitive declares (``Primitive.check_params``): none missing, none
    unknown, each of its type. The shape rule checks the values' ranges itself."""
    try:
        prim.check_params(params)
    except ArgumentTypeError as exc:
        raise FormatError(f"load_exported: {exc}") from None


def _decode_tree(d: Any) -> Any:
    if d is None:
        return None
    return _tree.structure(_skeleton(d))


def _skeleton(d: Any, depth: int = 0) -> Any:
    """A pytree of this structure with placeholder leaves, for ``tree.structure``."""
    if depth > 64:
        raise FormatError("load_exported: a structure nested too deeply")
    if d == "*":
        return _LEAF
    ((kind, children),) = _expect(d, dict).items()
    if kind == "tuple":
        return tuple(_skeleton(c, depth + 1) for c in children)
    if kind == "list":
        return [_skeleton(c, depth + 1) for c in children]
    if kind == "dict":
        return {_expect(k, str): _skeleton(c, depth + 1) for k, c in children}
    if kind == "none":
        return None
    raise FormatError(f"load_exported: an unknown structure node {kind!r}")


class _Leaf:
    """A placeholder leaf."""


_LEAF = _Leaf()
