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
    path = tmp_path / "ckpt.fg"
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
        path = os.path.join(d, "a.fg")
        fg.save([x, x[::-1]], path)
        a, b = fg.load(path)
    assert a.dtype is x.dtype and b.dtype is x.dtype
    assert a.numpy().tobytes() == x.numpy().tobytes()
    assert b.numpy().tobytes() == np.ascontiguousarray(x.numpy()[::-1]).tobytes()  # views saved as their values


def test_special_values_and_containers(tmp_path) -> None:
    obj = {"nan": float("nan"), "inf": float("inf"), 1: (1, [2, None]), "s": "text", "bf": fg.ones(2, fg.bfloat16)}
    fg.save(obj, tmp_path / "o.fg")
    back = fg.load(tmp_path / "o.fg")
    assert np.isnan(back["nan"]) and back["inf"] == float("inf") and back[1] == (1, [2, None])
    assert back["bf"].numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="cannot save"):
        fg.save({"f": lambda: 1}, tmp_path / "bad.fg")


class _Evil:
    def __reduce__(self):
        return (open, (str(_Evil.target), "w"))


def test_pickle_payloads_are_refused_and_run_nothing(tmp_path) -> None:
    _Evil.target = tmp_path / "pwned"
    payload = tmp_path / "evil.fg"
    payload.write_bytes(pickle.dumps(_Evil()))
    with pytest.raises(fg.FormatError, match="a pickle.*never unpickles"):
        fg.load(payload)
    assert not _Evil.target.exists()
    zipped = tmp_path / "torch.pt"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 20)
    with pytest.raises(fg.FormatError, match="zip archive"):
        fg.load(zipped)


def _write(path, header: bytes, data: bytes = b"", length: int | None = None) -> None:
    with open(path, "wb") as f:
        f.write(b"FUNCGRAD\n" + struct.pack("<Q", len(header) if length is None else length) + header + data)


def test_malformed_files(tmp_path) -> None:
    p = tmp_path / "m.fg"
    cases = [
        (b"not json", None, "malformed header"),
        (json.dumps({"format": "other"}).encode(), None, "no funcgrad tree"),
        (json.dumps({"format": "funcgrad", "version": 9, "tree": 1}).encode(), None, "unsupported format version"),
        (json.dumps({"format": "funcgrad", "version": 1, "tree": {"__code__": "os.system"}}).encode(), None,
         "unknown tag"),
        (json.dumps({"format": "funcgrad", "version": 1, "tree": {"__array__": {
            "dtype": "float32", "shape": [4], "offset": 0, "nbytes": 16}}}).encode(), None, "outside the file"),
        (json.dumps({"format": "funcgrad", "version": 1, "tree": {"__array__": {
            "dtype": "object", "shape": [1], "offset": 0, "nbytes": 8}}}).encode(), None, "malformed array"),
        (b"{}", 10 ** 12, "exceeds the file"),
    ]
    for header, length, message in cases:
        _write(p, header, length=length)
        with pytest.raises(fg.FormatError, match=message):
            fg.load(p)
    p.write_bytes(b"FUNCGRAD\n\x01")
    with pytest.raises(fg.FormatError, match="truncated"):
        fg.load(p)
    assert issubclass(fg.FormatError, ValueError)


def _header(tree, **extra) -> bytes:
    return json.dumps({"format": "funcgrad", "version": 1, "tree": tree, **extra}).encode()


def _arr(shape, offset, nbytes, dtype="float32"):
    return {"__array__": {"dtype": dtype, "shape": shape, "offset": offset, "nbytes": nbytes}}


HOSTILE = {
    "shared bytes": (_header([_arr([1024], 0, 4096)] * 1000), b"\0" * 4096, "overlaps"),
    "overlap": (_header([_arr([2], 0, 8), _arr([2], 4, 8)]), b"\0" * 12, "overlaps"),
    "gap": (_header([_arr([1], 0, 4), _arr([1], 8, 4)]), b"\0" * 12, "gap"),
    "past the end": (_header([_arr([4], 0, 16)]), b"\0" * 8, "outside the file"),
    "unexplained tail": (_header([_arr([1], 0, 4)]), b"\0" * 8, "not described"),
    "overflowing shape": (_header([_arr([2 ** 40, 2 ** 40], 0, 0)]), b"", "too large"),
    "zero times huge": (_header([_arr([0, 2 ** 70], 0, 0)]), b"", "too large|malformed"),
    "65 dimensions": (_header([_arr([1] * 65, 0, 4)]), b"\0" * 4, "dimensions"),
    "string shape": (_header([_arr(["12"], 0, 48)]), b"\0" * 48, "list of integers"),
    "string dimension": (_header([_arr("12", 0, 48)]), b"\0" * 48, "list of integers"),
    "float dimension": (_header([_arr([1.5], 0, 4)]), b"\0" * 4, "list of integers"),
    "bool dimension": (_header([_arr([True], 0, 4)]), b"\0" * 4, "list of integers"),
    "float offset": (_header([_arr([1], 0.0, 4)]), b"\0" * 4, "non-negative integers"),
    "negative offset": (_header([_arr([1], -4, 4)]), b"\0" * 4, "non-negative integers"),
    "huge offset": (_header([_arr([1], 10 ** 18, 4)]), b"\0" * 4, "gap|outside the file"),
    "short dtype name": (_header([_arr([1], 0, 4, dtype="f4")]), b"\0" * 4, "unknown dtype"),
    "corrupted data": (_header([_arr([1], 0, 4)], crc32=123), b"\0" * 4, "corrupted"),
    "infinite offset": (b'{"format":"funcgrad","version":1,"tree":{"__array__":{"dtype":"float32","shape":[1],'
                        b'"offset":Infinity,"nbytes":4}}}', b"\0" * 4, "non-JSON constant"),
    "5000-digit number": (b'{"format":"funcgrad","version":1,"tree":' + b"9" * 5000 + b"}", b"", "5000-character"),
    "5000-digit float": (b'{"format":"funcgrad","version":1,"tree":0.' + b"1" * 5000 + b"}", b"", "character number"),
    "deep nesting": (b'{"format":"funcgrad","version":1,"tree":' + b"[" * 100000 + b"]" * 100000 + b"}", b"",
                     "nested deeper"),
    "deep but parseable nesting": (_header(json.loads("[" * 150 + "]" * 150)), b"", "nested deeper"),
    "duplicate keys": (b'{"format":"funcgrad","version":1,"version":1,"tree":1}', b"", "duplicate"),
    "bool version": (_header(1, version=True), b"", "version"),
    "float version": (json.dumps({"format": "funcgrad", "version": 1.0, "tree": 1}).encode(), b"", "version"),
    "string version": (json.dumps({"format": "funcgrad", "version": "1", "tree": 1}).encode(), b"", "version"),
    "unknown dtype": (_header([_arr([1], 0, 8, dtype="object")]), b"\0" * 8, "unknown dtype"),
    "extra entry key": (_header([{"__array__": {"dtype": "float32", "shape": [1], "offset": 0, "nbytes": 4,
                                                "x": 1}}]), b"\0" * 4, "malformed array entry"),
    "not UTF-8": (b"\xff\xfe", b"", "malformed header"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_are_refused_before_allocating(case, tmp_path) -> None:
    import tracemalloc

    header, data, message = HOSTILE[case]
    path = tmp_path / "h.fg"
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
    with open(tmp_path / "f.fg", "wb") as f:
        fg.save(obj, f)
    with open(tmp_path / "f.fg", "rb") as f:
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
    (hlen,) = struct.unpack("<Q", raw[9:17])
    if data.draw(st.booleans()):  # byte flips
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
    else:  # one header field replaced
        header = json.loads(bytes(raw[17:17 + hlen]))
        entry = header["tree"]["__dict__"][0][1][data.draw(st.integers(0, 1))]["__array__"]
        field = data.draw(st.sampled_from(sorted(entry)))
        entry[field] = data.draw(st.one_of(
            st.integers(-2, 2 ** 64), st.floats(allow_nan=False), st.text(max_size=3), st.booleans(), st.none(),
            st.lists(st.integers(-1, 2 ** 40), max_size=70)))
        blob = json.dumps(header).encode()
        raw = bytearray(b"FUNCGRAD\n" + struct.pack("<Q", len(blob)) + blob + bytes(raw[17 + hlen:]))
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
    path = tmp_path / "big.fg"
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

    hostile = tmp_path / "hostile.fg"
    _write(hostile, _header([_arr([1 << 20], 0, 4 << 20)] * 1000), b"\0" * (4 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(fg.FormatError, match="overlaps"):
            fg.load(hostile)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1 << 20, peak
