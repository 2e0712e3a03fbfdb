"""fg.save / fg.load: bit-exact round trips, and no code runs whatever a file holds."""

from __future__ import annotations

import json
import os
import pickle
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg


def test_state_dicts_and_optimizer_state_round_trip(tmp_path) -> None:
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    opt = fg.optim.Adam(model.parameters(), lr=0.01)
    model(fg.ones((2, 3))).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.safetensors"
    fg.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    back = fg.load(path)
    assert back["epoch"] == 3 and list(back["model"]) == list(model.state_dict())
    fresh = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    fresh.load_state_dict(back["model"])
    np.testing.assert_array_equal(fresh(fg.ones((1, 3))).numpy(), model(fg.ones((1, 3))).numpy())
    opt2 = fg.optim.Adam(fresh.parameters(), lr=0.01)
    opt2.load_state_dict(back["optim"])
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    assert back["optim"]["state"][0]["step"] == 1


@given(st.sampled_from(["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int64", "bool"]),
       st.lists(st.floats(-1e4, 1e4, width=16), min_size=0, max_size=12))
def test_bit_exact_for_every_dtype(dtype, values) -> None:
    import tempfile

    x = fg.asarray(np.array(values, dtype=np.float64)).astype(dtype)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.safetensors")
        fg.save([x, x[::-1]], path)
        a, b = fg.load(path)
    assert a.dtype is x.dtype and b.dtype is x.dtype
    assert a.numpy().tobytes() == x.numpy().tobytes()
    assert b.numpy().tobytes() == np.ascontiguousarray(x.numpy()[::-1]).tobytes()  # views saved as their values


def test_special_values_and_containers(tmp_path) -> None:
    obj = {"nan": float("nan"), "inf": float("inf"), 1: (1, [2, None]), "s": "text", "bf": fg.ones(2, fg.bfloat16)}
    fg.save(obj, tmp_path / "o.safetensors")
    back = fg.load(tmp_path / "o.safetensors")
    assert np.isnan(back["nan"]) and back["inf"] == float("inf") and back[1] == (1, [2, None])
    assert back["bf"].numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="cannot save"):
        fg.save({"f": lambda: 1}, tmp_path / "bad.safetensors")


class _Evil:
    def __reduce__(self):
        return (open, (str(_Evil.target), "w"))


def test_pickle_payloads_are_refused_and_run_nothing(tmp_path) -> None:
    _Evil.target = tmp_path / "pwned"
    payload = tmp_path / "evil.safetensors"
    payload.write_bytes(pickle.dumps(_Evil()))
    with pytest.raises(fg.FormatError, match="a pickle.*safetensors.*never unpickles"):
        fg.load(payload)
    assert not _Evil.target.exists()
    zipped = tmp_path / "torch.pt"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 20)
    with pytest.raises(fg.FormatError, match="zip archive"):
        fg.load(zipped)


def _write(path, header: bytes, data: bytes = b"", length: int | None = None) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header) if length is None else length) + header + data)


def _t(shape, begin, end, dtype="F32"):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def _header(tensors: dict | None = None, tree=None, **meta) -> bytes:
    """A safetensors header: the tensors, and metadata with a funcgrad tree when given."""
    if tree is not None:
        meta["funcgrad"] = json.dumps(tree)
    return json.dumps({"__metadata__": meta, **(tensors or {})}).encode()


def test_malformed_files(tmp_path) -> None:
    p = tmp_path / "m.safetensors"
    cases = [
        (b"not json", None, "malformed header"),
        (b"[1, 2]", None, "not a JSON object"),
        (_header(tree={"__code__": "os.system"}), None, "unknown tag"),
        (_header(tree={"__array__": "w"}), None, "names a tensor the header lacks"),
        (_header({"w": _t([4], 0, 16)}), None, "outside the file"),
        (_header({"w": _t([1], 0, 8, dtype="object")}), None, "unknown dtype"),
        (json.dumps({"__metadata__": {"a": 1}}).encode(), None, "strings to strings"),
        (b"{}", 10 ** 12, "exceeds the file"),
    ]
    for header, length, message in cases:
        _write(p, header, length=length)
        with pytest.raises(fg.FormatError, match=message):
            fg.load(p)
    p.write_bytes(b"\x01")
    with pytest.raises(fg.FormatError, match="truncated"):
        fg.load(p)
    assert issubclass(fg.FormatError, ValueError)


HOSTILE = {
    "shared bytes": (_header({f"w{i}": _t([1024], 0, 4096) for i in range(1000)}), b"\0" * 4096, "overlaps"),
    "overlap": (_header({"a": _t([2], 0, 8), "b": _t([2], 4, 12)}), b"\0" * 12, "overlaps"),
    "gap": (_header({"a": _t([1], 0, 4), "b": _t([1], 8, 12)}), b"\0" * 12, "gap"),
    "past the end": (_header({"a": _t([4], 0, 16)}), b"\0" * 8, "outside the file"),
    "unexplained tail": (_header({"a": _t([1], 0, 4)}), b"\0" * 8, "not described"),
    "overflowing shape": (_header({"a": _t([2 ** 40, 2 ** 40], 0, 0)}), b"", "too large"),
    "zero times huge": (_header({"a": _t([0, 2 ** 70], 0, 0)}), b"", "too large|malformed"),
    "65 dimensions": (_header({"a": _t([1] * 65, 0, 4)}), b"\0" * 4, "dimensions"),
    "string shape": (_header({"a": _t(["12"], 0, 48)}), b"\0" * 48, "list of integers"),
    "string dimension": (_header({"a": _t("12", 0, 48)}), b"\0" * 48, "list of integers"),
    "float dimension": (_header({"a": _t([1.5], 0, 4)}), b"\0" * 4, "list of integers"),
    "bool dimension": (_header({"a": _t([True], 0, 4)}), b"\0" * 4, "list of integers"),
    "float offset": (_header({"a": _t([1], 0.0, 4)}), b"\0" * 4, "non-negative integers"),
    "negative offset": (_header({"a": _t([1], -4, 0)}), b"\0" * 4, "non-negative integers"),
    "reversed offsets": (_header({"a": _t([1], 4, 0)}), b"\0" * 4, "begin <= end"),
    "huge offset": (_header({"a": _t([1], 10 ** 18, 10 ** 18 + 4)}), b"\0" * 4, "gap|outside the file"),
    "numpy dtype name": (_header({"a": _t([1], 0, 4, dtype="float32")}), b"\0" * 4, "unknown dtype"),
    "float8 dtype": (_header({"a": _t([1], 0, 1, dtype="F8_E4M3")}), b"\0", "unknown dtype 'F8_E4M3'"),
    "corrupted data": (_header({"a": _t([1], 0, 4)}, **{"funcgrad.crc32": "123"}), b"\0" * 4, "corrupted"),
    "bad crc": (_header({"a": _t([1], 0, 4)}, **{"funcgrad.crc32": "-1"}), b"\0" * 4, "crc32"),
    "infinite offset": (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,Infinity]}}', b"\0" * 4,
                        "non-JSON constant"),
    "5000-digit number": (b'{"a":' + b"9" * 5000 + b"}", b"", "5000-character"),
    "5000-digit float": (b'{"a":0.' + b"1" * 5000 + b"}", b"", "character number"),
    "deep nesting": (b'{"a":' + b"[" * 100000 + b"]" * 100000 + b"}", b"", "nested deeper|more than a file of its size may cost"),
    "deep tree": (_header(tree=json.loads("[" * 150 + "]" * 150)), b"", "nested deeper"),
    "deep tree text": (json.dumps({"__metadata__": {"funcgrad": "[" * 100000 + "]" * 100000}}).encode(), b"",
                       "nested deeper|more than a file of its size may cost"),
    "duplicate keys": (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":1}', b"\0" * 4, "duplicate"),
    "extra entry key": (_header({"a": {**_t([1], 0, 4), "x": 1}}), b"\0" * 4, "malformed tensor entry"),
    "not UTF-8": (b"\xff\xfe", b"", "malformed header"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_are_refused_before_allocating(case, tmp_path) -> None:
    import tracemalloc

    header, data, message = HOSTILE[case]
    path = tmp_path / "h.safetensors"
    _write(path, header, data)
    tracemalloc.start()
    try:
        with pytest.raises(fg.FormatError, match=message):
            fg.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < os.path.getsize(path) * 40 + (1 << 20), peak  # parsing the header, no array of the asked size
    with pytest.raises(fg.FormatError, match=message):  # a file object, too
        with open(path, "rb") as f:
            fg.load(f)


def test_format_error_is_a_funcgrad_error_and_a_value_error() -> None:
    assert issubclass(fg.FormatError, fg.FuncgradError) and issubclass(fg.FormatError, ValueError)


def test_save_and_load_take_binary_file_objects(tmp_path) -> None:
    import io

    obj = {"w": fg.arange(6.0).reshape(2, 3), "empty": fg.zeros((0, 4)), "b": fg.ones(2, fg.bfloat16), "n": 3}
    buf = io.BytesIO()
    fg.save(obj, buf)
    buf.seek(0)
    back = fg.load(buf)
    assert back["w"].tolist() == obj["w"].tolist() and back["empty"].shape == (0, 4) and back["n"] == 3
    assert back["b"].dtype is fg.bfloat16
    with open(tmp_path / "f.safetensors", "wb") as f:
        fg.save(obj, f)
    with open(tmp_path / "f.safetensors", "rb") as f:
        assert fg.load(f)["w"].tolist() == obj["w"].tolist()


def _valid_file(arrays: list[np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    fg.save({"xs": [fg.asarray(a) for a in arrays], "meta": (1, "text", None, float("nan"))}, buf)
    return buf.getvalue()


@given(data=st.data())
def test_mutated_files_load_correctly_or_raise_format_error(data) -> None:
    """Fuzz: flip bytes anywhere, or rewrite one header field with a hostile value; fg.load
    returns the saved value or raises FormatError, and allocates at most about the file's size."""
    import io
    import tracemalloc

    arrays = [np.arange(data.draw(st.integers(0, 40)), dtype=np.float32) * 0.5,
              np.ones((data.draw(st.integers(0, 3)), 2), np.int64)]
    raw = bytearray(_valid_file(arrays))
    (hlen,) = struct.unpack("<Q", raw[:8])
    if data.draw(st.booleans()):  # byte flips
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
    else:  # one header field replaced
        header = json.loads(bytes(raw[8:8 + hlen]))
        entry = header[f"xs.{data.draw(st.integers(0, 1))}"]
        field = data.draw(st.sampled_from(sorted(entry)))
        entry[field] = data.draw(st.one_of(
            st.integers(-2, 2 ** 64), st.floats(allow_nan=False), st.text(max_size=3), st.booleans(), st.none(),
            st.lists(st.integers(-1, 2 ** 40), max_size=70)))
        blob = json.dumps(header).encode()
        raw = bytearray(struct.pack("<Q", len(blob)) + blob + bytes(raw[8 + hlen:]))
    tracemalloc.start()
    try:
        try:
            back = fg.load(io.BytesIO(bytes(raw)))
        except fg.FormatError:
            back = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(raw) * 40 + (1 << 20), peak
    if back is not None:  # the data section's CRC holds: the arrays' bytes are the saved ones
        for got, want in zip(back["xs"], arrays):
            assert got.numpy().dtype == want.dtype
            assert got.numpy().tobytes() == want.tobytes()


def test_loading_allocates_at_most_the_files_size(tmp_path) -> None:
    """A valid file: the arrays are read straight into place, so loading allocates about the
    data's size (plus the parsed header); the issue's hostile file, 1,000 entries over one
    4 MiB block (asking for 4 GiB), is refused with almost nothing allocated."""
    import tracemalloc

    arrays = {f"w{i}": fg.asarray(np.random.default_rng(i).standard_normal((256, 512)).astype(np.float32))
              for i in range(8)}  # 4 MiB of values
    path = tmp_path / "big.safetensors"
    fg.save(arrays, path)
    size = os.path.getsize(path)
    tracemalloc.start()
    try:
        back = fg.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= size + (256 << 10), (peak, size)
    assert all(np.array_equal(back[k].numpy(), arrays[k].numpy()) for k in arrays)

    hostile = tmp_path / "hostile.safetensors"
    _write(hostile, _header({f"w{i}": _t([1 << 20], 0, 4 << 20) for i in range(1000)}), b"\0" * (4 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(fg.FormatError, match="overlaps"):
            fg.load(hostile)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1 << 20, peak


def test_files_are_safetensors_both_ways(tmp_path) -> None:
    """The safetensors package reads what fg.save writes (a state dict keeps its names), and
    fg.load reads what safetensors writes (a dict of its arrays, with its dtypes)."""
    st_numpy = pytest.importorskip("safetensors.numpy")
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    path = tmp_path / "model.safetensors"
    fg.save(model.state_dict(), path)
    read = st_numpy.load_file(str(path))
    assert sorted(read) == sorted(model.state_dict())
    for k, v in model.state_dict().items():
        assert read[k].dtype == v.numpy().dtype and np.array_equal(read[k], v.numpy())

    theirs = {"f64": np.linspace(0, 1, 7), "i8": np.arange(-3, 3, dtype=np.int8), "u16": np.arange(4, dtype=np.uint16),
              "b": np.array([True, False]), "bf16": np.arange(3).astype(ml_dtypes.bfloat16), "e": np.zeros((0, 2))}
    other = tmp_path / "theirs.safetensors"
    st_numpy.save_file(theirs, str(other), metadata={"note": "written elsewhere"})
    back = fg.load(other)
    assert sorted(back) == sorted(theirs)
    for k, v in theirs.items():
        assert back[k].numpy().dtype == v.dtype and back[k].numpy().tobytes() == v.tobytes()


def test_torch_reads_and_writes_the_files(tmp_path) -> None:
    """bfloat16 and nested optimizer state through safetensors.torch, and a PyTorch model's
    state dict loads into the same funcgrad model."""
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    x = fg.asarray(np.arange(5.0)).astype(fg.bfloat16)
    fg.save({"x": x, "nested": {"k": (1, 2)}}, tmp_path / "a.safetensors")
    t = st_torch.load_file(str(tmp_path / "a.safetensors"))["x"]
    assert t.dtype == torch.bfloat16 and t.float().tolist() == [0, 1, 2, 3, 4]
    assert fg.load(tmp_path / "a.safetensors")["nested"] == {"k": (1, 2)}

    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    st_torch.save_file(tm.state_dict(), str(tmp_path / "torch.safetensors"))
    fm = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    fm.load_state_dict(fg.load(tmp_path / "torch.safetensors"))
    inp = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    # (float32 sums in another order: an output near 0 differs by a few ulps of the terms, not of itself)
    np.testing.assert_allclose(fm(fg.asarray(inp)).numpy(), tm(torch.from_numpy(inp)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_map_location_is_device(tmp_path) -> None:
    fg.save({"w": fg.ones(2)}, tmp_path / "m.safetensors")
    assert fg.load(tmp_path / "m.safetensors", map_location="cpu")["w"].device == fg.load(
        tmp_path / "m.safetensors")["w"].device
    with pytest.raises(TypeError, match="map_location takes a device"):
        fg.load(tmp_path / "m.safetensors", map_location=lambda s, loc: s)
    with pytest.raises(TypeError, match="disagree"):
        fg.load(tmp_path / "m.safetensors", device="cpu", map_location="gpu")


def test_names_stay_unique_and_readable() -> None:
    """Paths name the arrays (model.0.weight); a clash gets a suffix instead of losing an array."""
    import io

    st_numpy = pytest.importorskip("safetensors.numpy")
    buf = io.BytesIO()
    obj = {"a": {"b": fg.ones(1)}, "a.b": fg.zeros(1), 0: [fg.ones(2)], "0": fg.zeros(3), "__metadata__": fg.ones(4)}
    fg.save(obj, buf)
    names = sorted(st_numpy.load(buf.getvalue()))
    assert names == ["0", "0.0", "__metadata__#1", "a.b", "a.b#1"], names
    buf.seek(0)
    back = fg.load(buf)
    assert back["a.b"].tolist() == [0.0] and back["a"]["b"].tolist() == [1.0] and back[0][0].shape == (2,)


def test_a_header_of_millions_of_empty_containers_is_refused_cheaply(tmp_path) -> None:
    """3 bytes of ``[],`` become an 80-byte list: a header that would parse into more than
    four times the file's size is refused before it is parsed."""
    import tracemalloc
    import zlib

    text = "[" + ",".join(["[]"] * 1_000_000) + "]"
    meta = {"format": "pt", "funcgrad": text, "funcgrad.tree_crc32": str(zlib.crc32(text.encode()))}
    header = json.dumps({"__metadata__": meta}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "bomb.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    tracemalloc.start()
    try:
        with pytest.raises(fg.FormatError, match="more than a file of its size may cost"):
            fg.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 4 * path.stat().st_size + (1 << 20), peak


_PATTERNS = {  # one element of a long list, of each kind the funcgrad tree holds
    "large int": lambda i: 100000 + i, "small int": lambda i: 1, "float": lambda i: 0.5 + i,
    "nan": lambda i: float("nan"), "string": lambda i: f"ab{i}", "empty string": lambda i: "",
    "non-ASCII string": lambda i: "\U0001f600", "empty list": lambda i: [], "list": lambda i: [i],
    "empty tuple": lambda i: (), "tuple": lambda i: (i, None), "empty dict": lambda i: {},
    "dict": lambda i: {i: True, "k": i}, "none": lambda i: None, "array": lambda i: fg.zeros(0),
}


@pytest.mark.parametrize("kind", sorted(_PATTERNS))
@pytest.mark.parametrize(("n", "with_data"), [(40_000, False), (40_000, True)])
def test_loading_costs_at_most_four_times_the_file_and_a_mebibyte(kind, n, with_data, tmp_path) -> None:
    """The bound holds for every file, not on average: a long list of any one kind of value
    (where Python objects cost most against their text) either loads within 4 x the file's
    size + 1 MiB, measured, or is refused having allocated no more than that."""
    import tracemalloc

    make = _PATTERNS[kind]
    n = n // 10 if kind == "array" else n  # (each array is a header entry as well: 10 times the work)
    obj = {"items": [make(i) for i in range(n)]}
    if with_data:
        obj["data"] = fg.zeros(1 << 18)  # 1 MiB of array: room for a larger tree
    path = tmp_path / "f.safetensors"
    fg.save(obj, path)
    del obj
    budget = 4 * path.stat().st_size + (1 << 20)
    tracemalloc.start()
    try:
        try:
            back = fg.load(path)
        except fg.FormatError as exc:
            assert "may cost to load" in str(exc), exc
            back = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= budget, (peak, budget)
    if back is not None:
        assert len(back["items"]) == n and repr(back["items"][-1]) == repr(_PATTERNS[kind](n - 1)) or kind == "array"


def test_a_long_list_of_small_numbers_loads(tmp_path) -> None:
    """What a legitimate header holds loads: 100,000 small ints in a 195 KiB file."""
    fg.save({"steps": [1] * 100_000}, tmp_path / "f.safetensors")
    assert fg.load(tmp_path / "f.safetensors")["steps"] == [1] * 100_000


@given(st.recursive(st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 63) | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
                    | st.dictionaries(st.integers(-3, 3) | st.text(max_size=3), inner, max_size=3), max_leaves=30))
def test_any_tree_loads_back_as_saved(tree) -> None:
    import io

    buf = io.BytesIO()
    fg.save({"t": tree}, buf)
    buf.seek(0)
    assert repr(fg.load(buf)["t"]) == repr({"t": tree}["t"])


def test_numpy_arrays_round_trip_as_numpy_arrays_and_torchs_keywords_are_accepted(tmp_path) -> None:
    """``fg.save`` of NumPy arrays (a ported script's ``torch.save`` of them) loads them back as
    NumPy arrays, bit for bit; ``weights_only`` and ``mmap`` are accepted, and never unpickle."""
    import io

    rng = np.random.default_rng(0)
    obj = {"x": rng.standard_normal((3, 2)), "ids": np.arange(5, dtype=np.int32), "w": fg.ones(2),
           "nested": [np.float16([1.5, -2.0]), {"k": np.array(True)}]}
    buffer = io.BytesIO()
    fg.save(obj, buffer)
    for weights_only in (True, False):
        buffer.seek(0)
        back = fg.load(buffer, weights_only=weights_only, mmap=None)
        assert isinstance(back["x"], np.ndarray) and back["x"].tobytes() == obj["x"].tobytes()
        assert back["ids"].dtype == np.int32 and back["nested"][0].dtype == np.float16
        assert back["nested"][1]["k"].dtype == np.bool_ and isinstance(back["w"], fg.Array)
    with pytest.raises(TypeError, match="NumPy array of <U4"):
        fg.save(np.array(["text"]), io.BytesIO())
    with pytest.raises(fg.ArgumentTypeError, match="weights_only must be a bool"):
        fg.load(buffer, weights_only="yes")


def test_a_header_missing_one_of_funcgrads_checksums_is_refused() -> None:
    """fg.save writes its structure and both checksums together: a header that lost one of
    them (here the data CRC's key, one byte flipped) is refused, so a corrupted data byte
    cannot load unchecked; with all three gone it is any tool's file, a dict of arrays."""
    import io

    raw = bytearray(_valid_file([np.zeros(0, np.float32), np.ones((1, 2), np.int64)]))
    (hlen,) = struct.unpack("<Q", raw[:8])
    text = bytes(raw[8:8 + hlen])
    at = 8 + text.index(b'"funcgrad.crc32"') + 1
    damaged = bytearray(raw)
    damaged[at] = ord(" ")          # the key no longer names the CRC
    damaged[-16] = 0                # and a data byte changed
    with pytest.raises(fg.FormatError, match="damaged header"):
        fg.load(io.BytesIO(bytes(damaged)))
    header = json.loads(text)
    meta = header.pop("__metadata__")
    header["__metadata__"] = {"format": meta["format"]}
    blob = json.dumps(header).encode()
    plain = fg.load(io.BytesIO(struct.pack("<Q", len(blob)) + blob + bytes(raw[8 + hlen:])))
    assert sorted(plain) == ["xs.0", "xs.1"] and plain["xs.1"].numpy().tolist() == [[1, 1]]
