"""``fg.save`` / ``fg.load``: arrays, state dicts and optimizer state, without pickle.

The format (documented in docs/nn.md):

    b"FUNCGRAD\\n"                    9-byte magic
    u64 little-endian                 header length H
    H bytes of UTF-8 JSON             the object tree
    data                              raw array bytes, one block per array

The JSON tree holds ``null``, booleans, numbers, strings, lists, and tagged objects:
``{"__array__": {"dtype", "shape", "offset", "nbytes"}}``, ``{"__tuple__": [...]}``,
``{"__dict__": [[key, value], ...]}`` (keys keep their type) and floats that JSON
cannot spell (``{"__float__": "nan"}``). Loading parses JSON and copies bytes: it
runs no code, whatever the file holds. Views are saved as their values; bfloat16
and float16 round-trip bit-exactly.

The header also holds the data section's CRC-32 (``crc32``), checked as the blocks are
read. A file is checked whole before anything is allocated: the array blocks must tile the
data section exactly (no overlap, no gap, nothing past its end), so loading allocates at
most the file's size for arrays, read block by block straight from the file. Every
malformed header (bad shapes, huge numbers, deep nesting, duplicate keys, a non-integer
version) raises ``FormatError``.
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
from .errors import FormatError
from .ops import asarray

__all__ = ["save", "load", "FormatError"]

MAGIC = b"FUNCGRAD\n"
_PREFIX = len(MAGIC) + 8
_MAX_HEADER = 1 << 30
MAX_DEPTH = 100  # containers nest at most this deep (a state dict uses 3 or 4 levels)
MAX_NDIM = 64
_MAX_NUMBER_CHARS = 40  # the longest number a header may spell (offsets fit in 20 digits)


def _encode(obj: Any, blobs: list[bytes], offset: list[int]) -> Any:
    if isinstance(obj, ArrayBase):
        if not isinstance(obj, Array):
            raise TypeError("fg.save: cannot save a traced array; save concrete values")
        host = np.ascontiguousarray(obj._host())
        data = host.tobytes()
        entry = {"dtype": obj.dtype.name, "shape": list(obj.shape), "offset": offset[0], "nbytes": len(data)}
        blobs.append(data)
        offset[0] += len(data)
        return {"__array__": entry}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if isinstance(obj, np.generic):
        return _encode(obj.item(), blobs, offset)
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(x, blobs, offset) for x in obj]}
    if isinstance(obj, list):
        return [_encode(x, blobs, offset) for x in obj]
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, bool)) and k is not None:
                raise TypeError(f"fg.save: dict keys must be str or int, got {type(k).__name__}")
            items.append([k, _encode(v, blobs, offset)])
        return {"__dict__": items}
    raise TypeError(f"fg.save: cannot save a {type(obj).__name__} (arrays, numbers, strings, None, lists, tuples "
                    "and dicts only; save module.state_dict() / optimizer.state_dict())")


def save(obj: Any, f: Any) -> None:
    """Write ``obj`` (arrays and nested containers of them) to ``f``: a path, or a binary file
    object (``io.BytesIO``, an open file), as ``torch.save`` takes."""
    blobs: list[bytes] = []
    tree = _encode(obj, blobs, [0])
    crc = 0
    for b in blobs:
        crc = zlib.crc32(b, crc)
    header = json.dumps({"format": "funcgrad", "version": 1, "crc32": crc, "tree": tree},
                        separators=(",", ":")).encode()
    if hasattr(f, "write"):
        _write(f, header, blobs)
        return
    with open(f, "wb") as out:
        _write(out, header, blobs)


def _write(out: Any, header: bytes, blobs: list[bytes]) -> None:
    out.write(MAGIC)
    out.write(struct.pack("<Q", len(header)))
    out.write(header)
    for b in blobs:
        out.write(b)


# ---- loading ---------------------------------------------------------------------------

def _refuse(where: str, what: str) -> FormatError:
    return FormatError(f"fg.load({where}): {what}")


def _parse_header(raw: bytes, where: str) -> Any:
    """The header's JSON, refusing what a valid file never holds: duplicate keys, numbers
    longer than any offset, NaN/Infinity literals, and nesting deeper than ``MAX_DEPTH``."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            raise _refuse(where, "malformed header (a duplicate JSON key)")
        return out

    def number(kind: Any) -> Any:
        def parse(text: str) -> Any:
            if len(text) > _MAX_NUMBER_CHARS:
                raise _refuse(where, f"malformed header (a {len(text)}-character number)")
            return kind(text)
        return parse

    def constant(name: str) -> Any:
        raise _refuse(where, f"malformed header (the non-JSON constant {name})")

    try:
        text = raw.decode("utf-8")
        return json.loads(text, object_pairs_hook=pairs, parse_int=number(int), parse_float=number(float),
                          parse_constant=constant)
    except FormatError:
        raise
    except RecursionError:
        raise _refuse(where, f"malformed header (nested deeper than {MAX_DEPTH} levels)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _refuse(where, f"malformed header ({exc})") from None


def _is_int(x: Any) -> bool:
    return type(x) is int  # bool, float and str are refused, not converted


def _entry(value: Any, where: str) -> tuple[_dt.DType, tuple[int, ...], int, int]:
    """A validated array entry: (dtype, shape, offset, nbytes)."""
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "offset", "nbytes"}:
        raise _refuse(where, f"malformed array entry {str(value)[:200]}")
    dtype_name, shape, offset, nbytes = value["dtype"], value["shape"], value["offset"], value["nbytes"]
    try:
        dtype = _dt.as_dtype(dtype_name) if isinstance(dtype_name, str) else None
    except Exception:
        dtype = None
    if dtype is None or dtype.name != dtype_name:  # only the names fg.save writes ("float32", not "f4")
        raise _refuse(where, f"malformed array entry: unknown dtype {str(dtype_name)[:40]!r}")
    if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
        raise _refuse(where, f"malformed array entry: the shape {str(shape)[:100]} is not a list of integers")
    if len(shape) > MAX_NDIM:
        raise _refuse(where, f"malformed array entry: {len(shape)} dimensions (at most {MAX_NDIM})")
    if any(d < 0 for d in shape):
        raise _refuse(where, f"malformed array entry: negative dimension in shape {shape}")
    if not (_is_int(offset) and _is_int(nbytes)) or offset < 0 or nbytes < 0:
        raise _refuse(where, f"malformed array entry: offset {offset!r} and nbytes {nbytes!r} must be "
                             "non-negative integers")
    if math.prod(d for d in shape if d) >= 1 << 62:
        raise _refuse(where, f"malformed array entry: the shape {str(shape)[:100]} is too large for any array")
    count = math.prod(shape)
    if count * dtype.itemsize != nbytes:
        raise _refuse(where, f"array entry: {nbytes} bytes do not hold shape {tuple(shape)} of {dtype}")
    return dtype, tuple(shape), offset, nbytes


def _collect(node: Any, entries: list[Any], where: str, depth: int = 0) -> None:
    """Validate the tree's structure and collect its array entries (no allocation)."""
    if depth > MAX_DEPTH:
        raise _refuse(where, f"malformed header (nested deeper than {MAX_DEPTH} levels)")
    if isinstance(node, list):
        for x in node:
            _collect(x, entries, where, depth + 1)
        return
    if not isinstance(node, dict):
        if node is None or isinstance(node, (bool, int, float, str)):
            return
        raise _refuse(where, f"unexpected value in header: {type(node).__name__}")
    if len(node) != 1:
        raise _refuse(where, "malformed header: tagged objects have exactly one key")
    (tag, value), = node.items()
    if tag == "__tuple__" and isinstance(value, list):
        _collect(value, entries, where, depth + 1)
    elif tag == "__dict__" and isinstance(value, list):
        for item in value:
            if not (isinstance(item, list) and len(item) == 2
                    and (item[0] is None or isinstance(item[0], (str, int, bool)))):
                raise _refuse(where, "malformed header: bad dict entry")
            _collect(item[1], entries, where, depth + 1)
    elif tag == "__float__" and value in ("nan", "inf", "-inf"):
        return
    elif tag == "__array__":
        entries.append(_entry(value, where))
    else:
        raise _refuse(where, f"malformed header: unknown tag {str(tag)[:40]!r}")


def _check_tiling(entries: list[Any], data_len: int, where: str) -> None:
    """The blocks must tile the data section: in offset order, each starts where the last
    ended, and the last ends at the file's end. So no two arrays share bytes (1,000
    entries over one 4 MiB block would ask for 4 GiB) and no byte is left unexplained."""
    end = 0
    for _, shape, offset, nbytes in sorted(entries, key=lambda e: (e[2], e[3])):
        if offset != end:
            what = "overlaps the one before it" if offset < end else "leaves a gap before it"
            raise _refuse(where, f"the array block at byte {offset} (shape {shape}) {what}")
        end = offset + nbytes
        if end > data_len:
            raise _refuse(where, f"the array block at byte {offset} (shape {shape}) points outside the file "
                                 f"(its data section has {data_len} bytes)")
    if end != data_len:
        raise _refuse(where, f"{data_len - end} bytes after the last array block are not described by the header")


def _read_arrays(stream: Any, entries: list[Any], crc: Any, where: str) -> dict[int, np.ndarray]:
    """Each block read straight into its own array, in file order: the arrays are all that is
    allocated, and they add up to the data section's size. ``crc`` (the header's CRC-32 of
    the data section, when it has one) catches corrupted bytes."""
    arrays: dict[int, np.ndarray] = {}
    running = 0
    for dtype, shape, offset, nbytes in sorted(entries, key=lambda e: (e[2], e[3])):
        host = np.empty(shape, dtype=dtype.np)
        raw = memoryview(host.reshape(-1).view(np.uint8))
        if nbytes and stream.readinto(raw) != nbytes:
            raise _refuse(where, "truncated data section")
        if nbytes:
            running = zlib.crc32(raw, running)
            arrays[offset] = host
    if crc is not None and running != crc:
        raise _refuse(where, "the data section is corrupted (its CRC-32 does not match the header's)")
    return arrays


def _decode(node: Any, arrays: dict[int, np.ndarray], device: Any) -> Any:
    """Build the object tree (already validated by ``_collect``)."""
    if isinstance(node, list):
        return [_decode(x, arrays, device) for x in node]
    if not isinstance(node, dict):
        return node
    (tag, value), = node.items()
    if tag == "__tuple__":
        return tuple(_decode(x, arrays, device) for x in value)
    if tag == "__dict__":
        return {k: _decode(v, arrays, device) for k, v in value}
    if tag == "__float__":
        return float(value)

    host = arrays[value["offset"]] if value["nbytes"] else np.empty(value["shape"], _dt.as_dtype(value["dtype"]).np)
    return asarray(host, device=device, copy=False) if device is None else asarray(host, device=device)


def load(f: Any, *, device: Any = None) -> Any:
    """Read what ``fg.save`` wrote, from a path or a binary file object (``io.BytesIO``, an
    open file). Never unpickles: a pickle or torch file is refused with a clear error, and
    so is every malformed or hostile file (``FormatError``), before anything is allocated."""
    if hasattr(f, "read"):
        stream = f if f.seekable() else io.BytesIO(f.read())
        return _load(stream, repr(f), device)
    with open(f, "rb") as stream:
        return _load(stream, repr(str(f)), device)


def _load(stream: Any, where: str, device: Any) -> Any:
    start = stream.tell()
    size = stream.seek(0, os.SEEK_END) - start
    stream.seek(start)
    head = stream.read(len(MAGIC))
    if head != MAGIC:
        kind = ("a pickle" if head[:1] == b"\x80" else "a zip archive (a torch.save file?)" if head[:2] == b"PK"
                else "not a funcgrad file")
        raise _refuse(where, f"{kind}; funcgrad only reads files written by fg.save and never unpickles (loading an "
                             "untrusted pickle can run code)")
    raw_len = stream.read(8)
    if len(raw_len) != 8:
        raise _refuse(where, "truncated header")
    (header_len,) = struct.unpack("<Q", raw_len)
    if header_len > min(_MAX_HEADER, size - _PREFIX):
        raise _refuse(where, f"header length {header_len} exceeds the file")
    header = _parse_header(stream.read(header_len), where)
    if not isinstance(header, dict) or header.get("format") != "funcgrad" or "tree" not in header:
        raise _refuse(where, "malformed header (no funcgrad tree)")
    version = header.get("version")
    if not _is_int(version) or version != 1:
        raise _refuse(where, f"unsupported format version {str(version)[:40]!r} (this funcgrad reads version 1)")
    crc = header.get("crc32")
    if crc is not None and not (_is_int(crc) and 0 <= crc < 1 << 32):
        raise _refuse(where, f"malformed header (crc32 {str(crc)[:40]!r})")
    entries: list[Any] = []
    _collect(header["tree"], entries, where)
    _check_tiling(entries, size - _PREFIX - header_len, where)
    return _decode(header["tree"], _read_arrays(stream, entries, crc, where), device)
