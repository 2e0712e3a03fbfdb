"""``fg.save`` / ``fg.load``: arrays, state dicts and optimizer state as safetensors files.

A file is a `safetensors <https://huggingface.co/docs/safetensors>`_ file, so the
``safetensors`` package, PyTorch, JAX and Hugging Face tools read what ``fg.save`` writes,
and ``fg.load`` reads any safetensors file:

    u64 little-endian                 header length H
    H bytes of UTF-8 JSON             {name: {"dtype": "F32", "shape": [...], "data_offsets": [b, e]},
                                       ..., "__metadata__": {str: str}}
    data                              raw little-endian array bytes, one block per array

What safetensors cannot hold (nesting, tuples, int keys, numbers, strings, ``None``) goes in
``__metadata__["funcgrad"]``: a JSON tree in which each array appears as ``{"__array__":
name}`` (a NumPy array as ``{"__ndarray__": name}``: it loads back as one), beside
``{"__tuple__": [...]}``, ``{"__dict__": [[key, value], ...]}`` (keys keep their type) and
floats JSON cannot spell (``{"__float__": "nan"}``). A flat dict of arrays (a state dict)
keeps its keys as the array names. ``__metadata__["funcgrad.crc32"]`` is the CRC-32 of the
data section, checked as the blocks are read, and
``__metadata__["funcgrad.tree_crc32"]`` that of the tree's text. A file with no tree (written by
another tool) loads as a dict of its arrays, name to array.

Loading parses JSON and copies bytes: it runs no code, whatever the file holds. A file is
checked whole before anything is allocated: the array blocks must tile the data section
exactly (no overlap, no gap, nothing past its end), so loading allocates at most the file's
size for arrays, read block by block straight from the file, and the Python objects of the
header and tree are bounded from their text before they are parsed, so any file costs at most
four times its size and 1 MiB to load (``untrusted.Budget``). Every malformed header (bad shapes, huge
numbers, deep nesting, duplicate keys, unknown dtypes) raises ``FormatError``.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zlib
from typing import Any

import numpy as np

from . import dtypes as _dt
from .array import Array, ArrayBase
from .errors import ArgumentTypeError, FormatError
from .ops import asarray
from .untrusted import (
    COST_DICT_ENTRY,
    COST_LIST,
    COST_OBJECT,
    COST_TUPLE_SLOT,
    MAX_NUMBER_CHARS,
    Budget,
    number_cost,
    structure_cost,
    text_bytes,
)

__all__ = ["save", "load", "FormatError"]

_MAX_HEADER = 100_000_000  # the safetensors package's own limit
MAX_DEPTH = 100  # containers nest at most this deep (a state dict uses 3 or 4 levels)
MAX_NDIM = 64
_TREE, _CRC, _TREE_CRC = "funcgrad", "funcgrad.crc32", "funcgrad.tree_crc32"

#: safetensors dtype codes, both ways (all little-endian).
_CODES = {_dt.bool_: "BOOL", _dt.int8: "I8", _dt.uint8: "U8", _dt.int16: "I16", _dt.uint16: "U16",
          _dt.int32: "I32", _dt.uint32: "U32", _dt.int64: "I64", _dt.uint64: "U64", _dt.float16: "F16",
          _dt.bfloat16: "BF16", _dt.float32: "F32", _dt.float64: "F64"}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


# ---- saving ------------------------------------------------------------------------------

class _Writer:
    """Walks the object tree once: encodes it as JSON and collects each array's block
    under a unique name (its path in the tree, ``model.0.weight``)."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}
        self.blobs: list[bytes] = []
        self.offset = 0

    def name(self, path: list[str]) -> str:
        base = ".".join(path) or "array"
        name, n = base, 1
        while name in self.entries or name == "__metadata__":
            name, n = f"{base}#{n}", n + 1
        return name

    def encode(self, obj: Any, path: list[str]) -> Any:
        if isinstance(obj, ArrayBase):
            if not isinstance(obj, Array):
                raise TypeError("fg.save: cannot save a traced array; save concrete values")
            data = np.ascontiguousarray(obj._host()).astype(obj.dtype.np.newbyteorder("<"), copy=False).tobytes()
            name = self.name(path)
            self.entries[name] = {"dtype": _CODES[obj.dtype], "shape": list(obj.shape),
                                  "data_offsets": [self.offset, self.offset + len(data)]}
            self.blobs.append(data)
            self.offset += len(data)
            return {"__array__": name}
        if isinstance(obj, np.ndarray):  # (kept apart, so that it loads back as a NumPy array)
            if obj.dtype.kind in "OUSV":
                raise TypeError(f"fg.save: cannot save a NumPy array of {obj.dtype} (numbers only)")
            return {"__ndarray__": self.encode(asarray(obj), path)["__array__"]}
        if obj is None or isinstance(obj, (bool, str, int)):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"__float__": repr(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(x, [*path, str(i)]) for i, x in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(x, [*path, str(i)]) for i, x in enumerate(obj)]
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int, bool)) and k is not None:
                    raise TypeError(f"fg.save: dict keys must be str or int, got {type(k).__name__}")
                items.append([k, self.encode(v, [*path, str(k)])])
            return {"__dict__": items}
        raise TypeError(f"fg.save: cannot save a {type(obj).__name__} (arrays, numbers, strings, None, lists, "
                        "tuples and dicts only; save module.state_dict() / optimizer.state_dict())")


def save(obj: Any, f: Any = None, *, arr: Any = None, allow_pickle: bool = True) -> None:
    """Write ``obj`` (arrays and nested containers of them) to ``f`` as a safetensors file:
    a path, or a binary file object (``io.BytesIO``, an open file), as ``torch.save`` takes.

    NumPy's call, the file first and one array second (``fg.save(path, x)`` or
    ``fg.save(path, arr=x)``), writes NumPy's ``.npy`` format as ``np.save`` does (``.npy``
    added to a path without it), which ``np.load`` and ``fg.load`` read. ``allow_pickle`` is
    accepted for it; funcgrad arrays hold numbers, so nothing is pickled either way.

    Example:
        >>> import io
        >>> buffer = io.BytesIO()
        >>> fg.save({"w": fg.ones(2), "steps": [fg.asarray(3)]}, buffer)
        >>> _ = buffer.seek(0)
        >>> fg.load(buffer)["w"].tolist()
        [1.0, 1.0]
    """
    if arr is not None or (f is not None and _is_file(obj) and not _is_file(f)):
        if arr is not None and f is not None:
            raise ArgumentTypeError("fg.save: give the array as the second argument or as arr=, not both")
        value = f if arr is None else arr
        host = value.numpy() if isinstance(value, ArrayBase) else np.asarray(value)
        if host.dtype.hasobject:
            raise ArgumentTypeError(f"fg.save: {type(value).__name__} holds Python objects; funcgrad saves numbers")
        np.save(obj, host, allow_pickle=False)
        return
    if f is None:
        raise ArgumentTypeError("fg.save: missing the file: fg.save(obj, f) (PyTorch's order) or fg.save(file, arr) "
                                "(NumPy's)")
    writer = _Writer()
    tree = writer.encode(obj, [])
    crc = 0
    for b in writer.blobs:
        crc = zlib.crc32(b, crc)
    text = json.dumps(tree, separators=(",", ":"))
    meta = {"format": "pt", _TREE: text, _CRC: str(crc), _TREE_CRC: str(zlib.crc32(text.encode()))}
    header = json.dumps({"__metadata__": meta, **writer.entries}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # the data section starts 8-byte aligned, as safetensors writes it
    if _target("fg.save", f, "write"):
        _write(f, header, writer.blobs)
        return
    with open(f, "wb") as out:
        _write(out, header, writer.blobs)


def _write(out: Any, header: bytes, blobs: list[bytes]) -> None:
    out.write(struct.pack("<Q", len(header)))
    out.write(header)
    for b in blobs:
        out.write(b)


# ---- loading -----------------------------------------------------------------------------

def _refuse(where: str, what: str) -> FormatError:
    return FormatError(f"fg.load({where}): {what}")


def _parse_json(text: str, where: str, budget: Budget, what: str, hook: Any = None) -> Any:
    """``text`` parsed, refusing what a valid file never holds (duplicate keys, numbers longer
    than any offset, NaN/Infinity literals, deep nesting) and what would cost more than the
    budget: its structure is charged before parsing, each number as it is parsed. ``hook``
    turns each object's key-value pairs into what it stands for."""
    budget.charge(structure_cost(text), what)

    def pairs(items: list[tuple[str, Any]]) -> Any:
        out = dict(items)
        if len(out) != len(items):
            raise _refuse(where, "malformed header (a duplicate JSON key)")
        return out if hook is None else hook(out)

    def number(kind: Any) -> Any:
        def parse(text: str) -> Any:
            if len(text) > MAX_NUMBER_CHARS:
                raise _refuse(where, f"malformed header (a {len(text)}-character number)")
            value = kind(text)
            budget.charge(number_cost(value), what)
            return value
        return parse

    def constant(name: str) -> Any:
        raise _refuse(where, f"malformed header (the non-JSON constant {name})")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=number(int), parse_float=number(float),
                          parse_constant=constant)
    except FormatError:
        raise
    except RecursionError:
        raise _refuse(where, f"malformed header (nested deeper than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise _refuse(where, f"malformed header ({exc})") from None


def _is_int(x: Any) -> bool:
    return type(x) is int  # bool, float and str are refused, not converted


def _entry(name: str, value: Any, where: str) -> tuple[str, _dt.DType, tuple[int, ...], int, int]:
    """A validated tensor entry: (name, dtype, shape, begin, end)."""
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data_offsets"}:
        raise _refuse(where, f"malformed tensor entry {name[:80]!r}: {str(value)[:200]}")
    code, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    dtype = _DTYPES.get(code) if isinstance(code, str) else None
    if dtype is None:
        raise _refuse(where, f"tensor {name[:80]!r}: unknown dtype {str(code)[:40]!r} (funcgrad reads "
                             f"{', '.join(_DTYPES)})")
    if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
        raise _refuse(where, f"tensor {name[:80]!r}: the shape {str(shape)[:100]} is not a list of integers")
    if len(shape) > MAX_NDIM:
        raise _refuse(where, f"tensor {name[:80]!r}: {len(shape)} dimensions (at most {MAX_NDIM})")
    if any(d < 0 for d in shape):
        raise _refuse(where, f"tensor {name[:80]!r}: negative dimension in shape {shape}")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]):
        raise _refuse(where, f"tensor {name[:80]!r}: data_offsets {str(offsets)[:100]} must be two non-negative "
                             "integers [begin, end], begin <= end")
    if math.prod(d for d in shape if d) >= 1 << 62:
        raise _refuse(where, f"tensor {name[:80]!r}: the shape {str(shape)[:100]} is too large for any array")
    nbytes = offsets[1] - offsets[0]
    if math.prod(shape) * dtype.itemsize != nbytes:
        raise _refuse(where, f"tensor {name[:80]!r}: {nbytes} bytes do not hold shape {tuple(shape)} of {dtype}")
    return name, dtype, tuple(shape), offsets[0], offsets[1]


def _tree_hook(arrays: dict[str, Any], where: str, budget: Budget) -> Any:
    """The parser's hook for the funcgrad tree: each tagged object becomes what it stands for
    (a tuple, a dict with keys of any JSON scalar type, a non-finite float, an array), so the
    tree is built once, as it is parsed; any other object is refused."""

    def build(node: dict[str, Any]) -> Any:
        if len(node) != 1:
            raise _refuse(where, "malformed funcgrad tree: tagged objects have exactly one key")
        (tag, value), = node.items()
        if tag == "__tuple__" and isinstance(value, list):
            budget.charge(COST_TUPLE_SLOT * len(value) + COST_LIST, "the funcgrad tree")
            return tuple(value)
        if tag == "__dict__" and isinstance(value, list):
            budget.charge(COST_DICT_ENTRY * len(value) + COST_OBJECT, "the funcgrad tree")
            out = {}
            for item in value:
                if not (isinstance(item, list) and len(item) == 2
                        and (item[0] is None or type(item[0]) in (str, int, bool))):
                    raise _refuse(where, "malformed funcgrad tree: bad dict entry")
                out[item[0]] = item[1]
            return out
        if tag == "__float__" and value in ("nan", "inf", "-inf"):
            return float(value)
        if tag in ("__array__", "__ndarray__"):
            if not isinstance(value, str) or value not in arrays:
                raise _refuse(where, f"the funcgrad tree names a tensor the header lacks: {str(value)[:80]!r}")
            return arrays[value] if tag == "__array__" else np.array(arrays[value].numpy())
        raise _refuse(where, f"malformed funcgrad tree: unknown tag {str(tag)[:40]!r}")

    return build


def _depth(node: Any, where: str, depth: int = 0) -> None:
    """Refuse containers nested deeper than ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        raise _refuse(where, f"malformed header (nested deeper than {MAX_DEPTH} levels)")
    if isinstance(node, (list, tuple)):
        for x in node:
            _depth(x, where, depth + 1)
    elif isinstance(node, dict):
        for x in node.values():
            _depth(x, where, depth + 1)


def _check_tiling(entries: list[Any], data_len: int, where: str) -> None:
    """The blocks must tile the data section: in offset order, each starts where the last
    ended, and the last ends at the file's end. So no two arrays share bytes (1,000
    entries over one 4 MiB block would ask for 4 GiB) and no byte is left unexplained."""
    end = 0
    for name, _, shape, begin, stop in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin != end:
            what = "overlaps the one before it" if begin < end else "leaves a gap before it"
            raise _refuse(where, f"the block of tensor {name[:80]!r} at byte {begin} (shape {shape}) {what}")
        end = stop
        if end > data_len:
            raise _refuse(where, f"the block of tensor {name[:80]!r} at byte {begin} (shape {shape}) points "
                                 f"outside the file (its data section has {data_len} bytes)")
    if end != data_len:
        raise _refuse(where, f"{data_len - end} bytes after the last array block are not described by the header")


def _read_arrays(stream: Any, entries: list[Any], crc: int | None, where: str) -> dict[str, np.ndarray]:
    """Each block read straight into its own array, in file order: the arrays are all that is
    allocated, and they add up to the data section's size. ``crc`` (the CRC-32 funcgrad
    records in the metadata) catches corrupted bytes."""
    arrays: dict[str, np.ndarray] = {}
    running = 0
    for name, dtype, shape, begin, stop in sorted(entries, key=lambda e: (e[3], e[4])):
        host = np.empty(shape, dtype=dtype.np.newbyteorder("<"))
        raw = memoryview(host.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
        if stop > begin and stream.readinto(raw) != stop - begin:
            raise _refuse(where, "truncated data section")
        running = zlib.crc32(raw, running)
        arrays[name] = host if host.dtype.isnative else host.astype(dtype.np)
    if crc is not None and running != crc:
        raise _refuse(where, "the data section is corrupted (its CRC-32 does not match the header's)")
    return arrays


def load(f: Any, *, device: Any = None, map_location: Any = None, weights_only: bool = True,
         mmap: bool | None = None, mmap_mode: str | None = None, allow_pickle: bool = False,
         fix_imports: bool = True, encoding: str = "ASCII", max_header_size: int = 10000) -> Any:
    """Read a safetensors file (what ``fg.save`` wrote, or any other), or a NumPy ``.npy``
    file (as an array), from a path or a binary file object. Never unpickles: a pickle or
    torch file is refused with a clear error, and so is every malformed or hostile file
    (``FormatError``), before anything is allocated.
    ``map_location`` is ``device``'s PyTorch name (a device or its name). ``weights_only``
    and ``mmap`` are accepted for PyTorch's calls: funcgrad reads arrays, numbers and
    containers only, whatever ``weights_only`` says (``False`` does not make it unpickle),
    and reads the file into memory. NumPy's ``mmap_mode``, ``allow_pickle``,
    ``fix_imports`` and ``encoding`` are accepted likewise (they concern pickles and maps,
    which funcgrad does not make); ``max_header_size`` bounds a ``.npy`` header, as NumPy's.

    Returns:
        What was saved: an array, or the containers of arrays and numbers.

    Example:
        >>> import io
        >>> buffer = io.BytesIO()
        >>> fg.save({"w": fg.ones(2), "step": 3}, buffer)
        >>> state = fg.load(io.BytesIO(buffer.getvalue()))
        >>> state["w"].tolist(), state["step"]
        ([1.0, 1.0], 3)
    """
    if not isinstance(weights_only, bool):
        raise ArgumentTypeError(f"fg.load: weights_only must be a bool, got {weights_only!r}")
    if map_location is not None:
        if device is not None and device != map_location:
            raise TypeError(f"fg.load: device={device!r} and map_location={map_location!r} disagree; give one")
        if callable(map_location) or isinstance(map_location, dict):
            raise TypeError("fg.load: map_location takes a device or its name ('cpu', 'gpu'), not a "
                            f"{type(map_location).__name__}")
        device = map_location
    if _target("fg.load", f, "read"):
        stream = f if f.seekable() else io.BytesIO(f.read())
        return _load(stream, repr(f), device, max_header_size)
    with open(f, "rb") as stream:
        return _load(stream, repr(str(f)), device, max_header_size)


def _is_file(f: Any) -> bool:
    """A path or a binary file object: what ``fg.save`` writes to."""
    return isinstance(f, (str, bytes, os.PathLike)) or (hasattr(f, "write") and not isinstance(f, ArrayBase))


_NPY_MAGIC = b"\x93NUMPY"


def _load_npy(stream: Any, where: str, size: int, device: Any, max_header_size: int) -> Any:
    """A ``.npy`` file as an array: its header read with NumPy's parser (bounded by
    ``max_header_size``), its shape and dtype checked against the bytes the file holds before
    anything is allocated, object dtypes (pickles) refused."""
    start = stream.tell()
    try:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(stream, max_header_size=max_header_size)
    except (ValueError, SyntaxError, TypeError) as exc:
        raise _refuse(where, f"malformed .npy header ({exc})") from None
    if dtype.hasobject:
        raise _refuse(where, "a .npy file of Python objects (a pickle); funcgrad never unpickles")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes != size - (stream.tell() - start):
        raise _refuse(where, f"a .npy header for {nbytes} bytes of data where the file holds "
                             f"{size - (stream.tell() - start)}")
    data = np.frombuffer(stream.read(nbytes), dtype)
    host = data.reshape(shape[::-1]).T if fortran else data.reshape(shape)
    return asarray(np.ascontiguousarray(host).astype(dtype.newbyteorder("="), copy=False), device=device)


def _target(op: str, f: Any, method: str) -> bool:
    """Whether ``f`` is a file object (else a path). An int is refused, as PyTorch refuses it,
    rather than taken for a file descriptor that would be written and closed; so is a file
    opened in text mode, and anything else that is neither."""
    if hasattr(f, method):
        if isinstance(f, io.TextIOBase) or "b" not in getattr(f, "mode", "b"):
            raise ArgumentTypeError(f"{op}: the file is open in text mode; open it in binary mode "
                                    f"(open(path, '{'rb' if method == 'read' else 'wb'}'))")
        return True
    if isinstance(f, (str, bytes, os.PathLike)):
        return False
    raise ArgumentTypeError(f"{op}: expected a path (str or os.PathLike) or a binary file object, got "
                            f"{type(f).__name__} {f!r}")


def _load(stream: Any, where: str, device: Any, max_header_size: int = 10000) -> Any:
    start = stream.tell()
    size = stream.seek(0, os.SEEK_END) - start
    stream.seek(start)
    raw_len = stream.read(8)
    if raw_len[:6] == _NPY_MAGIC:
        stream.seek(start)
        return _load_npy(stream, where, size, device, max_header_size)
    header_len = struct.unpack("<Q", raw_len)[0] if len(raw_len) == 8 else None
    if header_len is None or header_len > min(_MAX_HEADER, size - 8):
        if raw_len[:1] == b"\x80" or raw_len[:2] == b"PK":
            kind = "a pickle" if raw_len[:1] == b"\x80" else "a zip archive (a torch.save file?)"
            raise _refuse(where, f"{kind}; funcgrad reads safetensors files and never unpickles (loading an "
                                 "untrusted pickle can run code)")
        if header_len is None:
            raise _refuse(where, "truncated header")
        raise _refuse(where, f"header length {header_len} exceeds the file; not a safetensors file")
    budget = Budget(size, lambda what: _refuse(where, what), advice="; keep long lists of numbers in arrays")
    text = budget.read_text(stream, header_len)
    header = _parse_json(text, where, budget, "the header")
    budget.refund(text_bytes(text))
    del text
    if not isinstance(header, dict):
        raise _refuse(where, "malformed header (not a JSON object)")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _refuse(where, "malformed header (__metadata__ must map strings to strings)")
    entries = [_entry(name, value, where) for name, value in header.items()]
    crc = meta.get(_CRC)
    if crc is not None:
        if not (crc.isdigit() and len(crc) <= 10 and int(crc) < 1 << 32):
            raise _refuse(where, f"malformed header ({_CRC} {crc[:40]!r})")
        crc = int(crc)
    tree_text = meta.pop(_TREE, None)
    if tree_text is not None and _TREE_CRC in meta:
        encoded = text_bytes(tree_text)
        budget.charge(encoded, "the funcgrad tree")
        if meta[_TREE_CRC] != str(zlib.crc32(tree_text.encode())):
            raise _refuse(where, f"damaged header (the {_TREE} structure does not match its {_TREE_CRC})")
        budget.refund(encoded)
    _check_tiling(entries, size - 8 - header_len, where)
    budget.charge(size - 8 - header_len, "the arrays")
    arrays = {name: asarray(host, device=device, copy=False) if device is None else asarray(host, device=device)
              for name, host in _read_arrays(stream, entries, crc, where).items()}
    if tree_text is None:
        if _CRC in meta or _TREE_CRC in meta:  # (fg.save always writes its tree: this one lost it)
            raise _refuse(where, f"damaged header (funcgrad's checksums without its {_TREE!r} structure)")
        return {name: arrays[name] for name in header}
    tree = _parse_json(tree_text, where, budget, "the funcgrad tree", hook=_tree_hook(arrays, where, budget))
    _depth(tree, where)
    if _TREE_CRC in meta and crc is None:  # (fg.save writes both checksums: without this one the data went unchecked)
        raise _refuse(where, f"damaged header (its {_TREE_CRC} without the data section's {_CRC})")
    return tree
