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
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

import numpy as np

from . import dtypes as _dt
from .array import Array, ArrayBase

__all__ = ["save", "load", "FormatError"]

MAGIC = b"FUNCGRAD\n"
_MAX_HEADER = 1 << 30


class FormatError(ValueError):
    """The file is not a valid funcgrad file (or is a pickle/torch file, which funcgrad never loads)."""


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


def save(obj: Any, path: Any) -> None:
    """Write ``obj`` (arrays and nested containers of them) to ``path``."""
    blobs: list[bytes] = []
    tree = _encode(obj, blobs, [0])
    header = json.dumps({"format": "funcgrad", "version": 1, "tree": tree}, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for b in blobs:
            f.write(b)


def _decode(node: Any, data: memoryview, device: Any) -> Any:
    if isinstance(node, list):
        return [_decode(x, data, device) for x in node]
    if not isinstance(node, dict):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        raise FormatError(f"unexpected value in header: {type(node).__name__}")
    if len(node) != 1:
        raise FormatError("malformed header: tagged objects have exactly one key")
    (tag, value), = node.items()
    if tag == "__tuple__" and isinstance(value, list):
        return tuple(_decode(x, data, device) for x in value)
    if tag == "__dict__" and isinstance(value, list):
        out = {}
        for item in value:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int, bool, type(None)))):
                raise FormatError("malformed header: bad dict entry")
            out[item[0]] = _decode(item[1], data, device)
        return out
    if tag == "__float__" and value in ("nan", "inf", "-inf"):
        return float(value)
    if tag == "__array__" and isinstance(value, dict):
        return _array(value, data, device)
    raise FormatError(f"malformed header: unknown tag {tag!r}")


def _array(entry: dict[str, Any], data: memoryview, device: Any) -> Array:
    from .ops import asarray

    try:
        dtype = _dt.as_dtype(entry["dtype"])
        shape = tuple(int(d) for d in entry["shape"])
        offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"malformed array entry {entry!r}: {exc}") from None
    if any(d < 0 for d in shape) or offset < 0 or offset + nbytes > len(data):
        raise FormatError(f"array entry {entry!r} points outside the file")
    count = int(np.prod(shape)) if shape else 1
    if count * dtype.itemsize != nbytes:
        raise FormatError(f"array entry {entry!r}: {nbytes} bytes do not hold shape {shape} of {dtype}")
    host = np.frombuffer(data[offset:offset + nbytes], dtype=dtype.np).reshape(shape).copy()
    return asarray(host, device=device, copy=False) if device is None else asarray(host, device=device)


def load(path: Any, *, device: Any = None) -> Any:
    """Read what ``fg.save`` wrote. Never unpickles: a pickle or torch file is refused with a clear error."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(len(MAGIC))
        if head != MAGIC:
            kind = ("a pickle" if head[:1] == b"\x80" else "a zip archive (a torch.save file?)" if head[:2] == b"PK"
                    else "not a funcgrad file")
            raise FormatError(f"fg.load({str(path)!r}): {kind}; funcgrad only reads files written by fg.save and "
                              "never unpickles (loading an untrusted pickle can run code)")
        raw_len = f.read(8)
        if len(raw_len) != 8:
            raise FormatError(f"fg.load({str(path)!r}): truncated header")
        (header_len,) = struct.unpack("<Q", raw_len)
        if header_len > min(_MAX_HEADER, size):
            raise FormatError(f"fg.load({str(path)!r}): header length {header_len} exceeds the file")
        try:
            header = json.loads(f.read(header_len).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(f"fg.load({str(path)!r}): malformed header ({exc})") from None
        if not isinstance(header, dict) or header.get("format") != "funcgrad" or "tree" not in header:
            raise FormatError(f"fg.load({str(path)!r}): malformed header (no funcgrad tree)")
        if header.get("version") != 1:
            raise FormatError(f"fg.load({str(path)!r}): unsupported format version {header.get('version')!r}")
        data = memoryview(f.read())
    return _decode(header["tree"], data, device)
