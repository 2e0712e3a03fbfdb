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
