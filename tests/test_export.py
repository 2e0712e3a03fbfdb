"""fg.export: programs that run without their source, in a pickle-free file that loading
checks field by field (fuzzed as fg.load is)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional


def _models():
    fg.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))
    attention = nn.MultiheadAttention(16, 2, batch_first=True)
    return {
        "mlp": (lambda x: F.log_softmax(mlp(x), dim=-1), (fg.randn(5, 64),)),
        "cnn": (lambda x: cnn(x), (fg.randn(2, 1, 8, 8),)),
        "attention": (lambda q: attention(q, q, q, need_weights=False)[0], (fg.randn(2, 6, 16),)),
        "causal attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                             (fg.randn(2, 3, 6, 4), fg.randn(2, 3, 7, 4), fg.randn(2, 3, 7, 5))),
        "control flow": (lambda v: fg.scan(lambda c, x: (c * 0.5 + x, fg.tanh(c)), v[0], v)[1]
                         + fg.cond(v.sum() > 0, lambda u: u * 2, lambda u: -u, v), (fg.randn(4, 3),)),
        "loops": (lambda v: fg.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, v))[1]
                  + fg.fori_loop(0, 3, lambda i, c: c * 2, v) + fg.switch(1, [fg.sin, fg.cos], v)
                  + fg.compile(lambda u: fg.exp(u) * 2)(v), (fg.randn(3),)),
        "pytree": (lambda d: {"s": d["a"].sum(), "t": (d["b"] @ d["b"].T, None)},
                   ({"a": fg.ones((2, 3)), "b": fg.randn(3, 2)},)),
    }


@pytest.mark.parametrize("name", sorted(_models()))
def test_exported_programs_round_trip_through_the_file(name: str, tmp_path) -> None:
    f, args = _models()[name]
    exported = fg.export(f, *args)
    path = tmp_path / "program.fgx"
    exported.save(path)
    loaded = fg.load_exported(path)
    want = f(*args)
    for got, ref in zip(fg.tree.leaves(loaded(*args)), fg.tree.leaves(want)):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)
    assert str(loaded) == str(exported)
    header = json.loads(path.read_bytes()[8:8 + struct.unpack("<Q", path.read_bytes()[:8])[0]])
    assert header["format"] == "funcgrad.exported" and header["version"] == 1


def test_a_new_process_runs_the_file_without_the_defining_module(tmp_path) -> None:
    module = tmp_path / "my_model_definition.py"
    module.write_text(textwrap.dedent("""
        import funcgrad as fg
        fg.manual_seed(3)
        net = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.Tanh(), fg.nn.Linear(8, 2))
        def predict(x):
            return fg.nn.functional.softmax(net(x), dim=-1)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import my_model_definition as definition
    finally:
        sys.path.remove(str(tmp_path))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    fg.export(definition.predict, fg.asarray(x)).save(tmp_path / "predict.fgx")
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "my_model_definition.py").unlink()  # the source is gone
    script = textwrap.dedent(f"""
        import sys, numpy as np, funcgrad as fg
        program = fg.load_exported({str(tmp_path / "predict.fgx")!r})
        out = program(fg.asarray(np.load({str(tmp_path / "x.npy")!r})))
        assert "my_model_definition" not in sys.modules
        np.save({str(tmp_path / "out.npy")!r}, out.numpy())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=str(tmp_path.parent))
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), definition.predict(fg.asarray(x)).numpy(), rtol=1e-6)


def test_what_cannot_be_exported_and_wrong_arguments() -> None:
    @fg.custom_vjp
    def f(x):
        return fg.sin(x)

    f.defvjp(lambda x: (fg.sin(x), x), lambda x, g: (g * fg.cos(x),))
    from funcgrad.export import ExportError

    with pytest.raises(ExportError, match="cannot record"):
        fg.export(f, fg.ones(3))
    exported = fg.export(lambda x: x * 2, fg.ones(3))
    with pytest.raises(TypeError, match=r"argument 0 is float32\[4\], expected f32\[3\]"):
        exported(fg.ones(4))


def _file(tmp_path) -> bytes:
    f, args = _models()["mlp"]
    fg.export(f, *args).save(tmp_path / "m.fgx")
    return (tmp_path / "m.fgx").read_bytes()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_mutated_files_load_correctly_or_raise_format_error(data, tmp_path_factory) -> None:
    """Fuzz: flip bytes anywhere, or rewrite one field of the program with a hostile value;
    load_exported returns a program that still runs, or raises FormatError, never anything
    else, and allocates about the file's size at most."""
    tmp = tmp_path_factory.mktemp("fuzz")
    raw = bytearray(_file(tmp))
    (hlen,) = struct.unpack("<Q", raw[:8])
    if data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    else:
        header = json.loads(bytes(raw[8:8 + hlen]))
        eqn = data.draw(st.sampled_from(header["program"]["eqns"]))
        target = data.draw(st.sampled_from(["prim", "inputs", "params", "outputs", "constants", "tree"]))
        hostile = data.draw(st.one_of(st.integers(-2, 2 ** 40), st.text(max_size=8), st.none(), st.booleans(),
                                      st.lists(st.integers(-1, 2 ** 20), max_size=5),
                                      st.sampled_from(["exp", "full", "iota", "compiled_call", "reshape"])))
        if target == "constants":
            header["constants"][0][data.draw(st.sampled_from(["dtype", "shape", "offsets"]))] = hostile
        elif target == "tree":
            header["in_tree"] = hostile
        elif target == "params" and eqn["params"]:
            eqn["params"][data.draw(st.sampled_from(sorted(eqn["params"])))] = hostile
        elif target in ("inputs", "outputs") and eqn[target]:
            eqn[target][0] = {"var": hostile} if target == "inputs" else {"shape": hostile, "dtype": "float32"}
        else:
            eqn["prim"] = hostile
        blob = json.dumps(header).encode()
        raw = bytearray(struct.pack("<Q", len(blob)) + blob + bytes(raw[8 + hlen:]))
    path = tmp / "mutated.fgx"
    path.write_bytes(bytes(raw))
    peak, loaded = _peak_of_loading(path)
    assert peak < len(raw) * 40 + (4 << 20), peak
    if loaded is not None:
        out = loaded(*[fg.zeros(a.shape, a.dtype) for a in loaded.in_avals])
        assert all(isinstance(o, fg.Array) for o in fg.tree.leaves(out))


def test_a_file_of_another_kind_is_refused(tmp_path) -> None:
    path = tmp_path / "weights.safetensors"
    fg.save({"w": fg.ones(3)}, path)
    with pytest.raises(fg.FormatError, match="not a funcgrad.exported file"):
        fg.load_exported(path)
    (tmp_path / "short").write_bytes(b"abc")
    with pytest.raises(fg.FormatError, match="too short"):
        fg.load_exported(tmp_path / "short")


@pytest.mark.parametrize("name", ["mlp", "cnn", "attention", "causal attention"])
def test_onnx_files_run_in_onnxruntime_and_agree(name: str, tmp_path) -> None:
    """The digits MLP and CNN, an attention block and a causal ``scaled_dot_product_attention``,
    as ONNX run by onnxruntime."""
    pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'funcgrad[onnx]')")
    ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'funcgrad[onnx]')")
    f, args = _models()[name]
    path = tmp_path / f"{name}.onnx"
    fg.export(f, *args).to_onnx(path)
    session = ort.InferenceSession(str(path))
    (out,) = session.run(None, {f"input_{i}": a.numpy() for i, a in enumerate(args)})
    np.testing.assert_allclose(out, f(*args).numpy(), rtol=1e-5, atol=1e-5)


def test_onnx_refuses_a_primitive_without_a_counterpart(tmp_path) -> None:
    pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'funcgrad[onnx]')")
    from funcgrad.onnx import OnnxExportError

    exported = fg.export(lambda v: fg.sort(v) + fg.cumsum(v, axis=0), fg.randn(4))
    with pytest.raises(OnnxExportError, match="no ONNX counterpart for cumsum, sort"):
        exported.to_onnx(tmp_path / "x.onnx")


def test_the_docs_list_the_onnx_table() -> None:
    import pathlib

    from funcgrad.onnx import onnx_ops

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "export.md").read_text()
    table = text.split("| primitive | ONNX |")[1]
    assert {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")} == set(onnx_ops())


def _loops_file(tmp_path) -> tuple[bytes, int]:
    def loops(x):
        c, ys = fg.scan(lambda c, v: (fg.tanh(c + v), c * 2.0), x[0], x)
        w = fg.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 1.5), (0, c))[1]
        return fg.tanh(w.sum(axis=0, keepdims=True)) + ys.sum()

    fg.export(loops, fg.ones((3, 2))).save(tmp_path / "loops.fgx")
    raw = (tmp_path / "loops.fgx").read_bytes()
    return raw, struct.unpack("<Q", raw[:8])[0]


HOSTILE_PARAMS = [("tanh", "var", 1), ("scan", "n_consts", -1), ("scan", "n_carry", 99), ("scan", "length", "x"),
                  ("while", "n_consts", -1), ("while", "n_consts", None), ("while", "cond", 5),
                  ("reduce_sum", "keepdims", None), ("reduce_sum", "keepdims", "x"), ("reduce_sum", "axes", 1.5),
                  ("add", "axis", 0)]


@pytest.mark.parametrize("prim,param,value", HOSTILE_PARAMS)
def test_a_hostile_parameter_is_refused_at_load(prim, param, value, tmp_path) -> None:
    """Each equation's parameters are checked against its primitive's declared ones (names,
    annotated types, the rule's ranges) when the file is read: a file that loads runs."""
    raw, hlen = _loops_file(tmp_path)
    header = json.loads(raw[8:8 + hlen])
    eqn = next(e for e in header["program"]["eqns"] if e["prim"] == prim)
    eqn["params"][param] = value
    blob = json.dumps(header).encode()
    (tmp_path / "hostile.fgx").write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + hlen:])
    with pytest.raises(fg.FormatError, match=prim):
        fg.load_exported(tmp_path / "hostile.fgx")


def test_an_impossible_input_shape_is_refused_at_load(tmp_path) -> None:
    raw, hlen = _loops_file(tmp_path)
    header = json.loads(raw[8:8 + hlen])
    header["program"]["invars"][0]["shape"] = [2 ** 64, 2]
    blob = json.dumps(header).encode()
    (tmp_path / "huge.fgx").write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + hlen:])
    with pytest.raises(fg.FormatError, match="too large"):
        fg.load_exported(tmp_path / "huge.fgx")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_mutated_parameter_loads_and_runs_or_is_refused(data, tmp_path_factory) -> None:
    """Fuzz the parameters of a program with loops: any hostile value, in any parameter (or a
    new one); the file is refused with FormatError, or it loads and runs."""
    tmp = tmp_path_factory.mktemp("params")
    raw, hlen = _loops_file(tmp)
    header = json.loads(raw[8:8 + hlen])
    eqn = data.draw(st.sampled_from(header["program"]["eqns"]))
    name = data.draw(st.sampled_from(sorted(eqn["params"]) + ["var", "axis", "n_consts", "keepdims"]))
    eqn["params"][name] = data.draw(st.one_of(st.integers(-2, 2 ** 40), st.none(), st.booleans(), st.text(max_size=3),
                                              st.floats(allow_nan=False), st.lists(st.integers(-1, 3), max_size=3),
                                              st.just({"int": -5})))
    blob = json.dumps(header).encode()
    (tmp / "m.fgx").write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + hlen:])
    try:
        loaded = fg.load_exported(tmp / "m.fgx")
    except fg.FormatError:
        return
    try:
        loaded(fg.ones((3, 2)))
    except fg.FuncgradError:
        pass  # a typed error from the run (a value the parameters allow but the data does not)


def _peak_of_loading(path):
    import tracemalloc

    tracemalloc.start()
    try:
        try:
            loaded = fg.load_exported(path)
        except fg.FormatError:
            loaded = None
        return tracemalloc.get_traced_memory()[1], loaded
    finally:
        tracemalloc.stop()


def test_loading_holds_the_constants_once(tmp_path) -> None:
    """A 16 MiB constant: the file is read once, into the constant's own array, so loading
    peaks at the file's size plus the header's parse (1 MiB), not two or three copies."""
    big = fg.asarray(np.arange(4 << 20, dtype=np.float32))
    fg.export(lambda x: x + big, fg.ones(4 << 20)).save(tmp_path / "big.fgx")
    size = (tmp_path / "big.fgx").stat().st_size
    peak, loaded = _peak_of_loading(tmp_path / "big.fgx")
    assert loaded is not None and peak <= size + (1 << 20), (peak, size)
    assert loaded(fg.zeros(4 << 20))[:3].tolist() == [0.0, 1.0, 2.0]


def test_constant_blocks_must_tile_the_data_section(tmp_path) -> None:
    """64 constants naming one block would read (and hold) it 64 times: refused, as are gaps."""
    w = fg.asarray(np.ones((512, 1024), np.float32))  # 2 MiB
    fg.export(lambda x: x @ w, fg.ones((2, 512))).save(tmp_path / "w.fgx")
    raw = (tmp_path / "w.fgx").read_bytes()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    for mutate in (lambda h: h["constants"].extend([dict(h["constants"][0]) for _ in range(63)]),
                   lambda h: h["constants"][0].update(offsets=[8, 8 + 4 * 512 * 1024])):
        h = json.loads(json.dumps(header))
        mutate(h)
        blob = json.dumps(h).encode()
        (tmp_path / "m.fgx").write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + hlen:])
        peak, loaded = _peak_of_loading(tmp_path / "m.fgx")
        assert loaded is None and peak <= len(raw) + (1 << 20), peak


@pytest.mark.parametrize("kind", ["sin", "distinct literals", "parameters", "nested"])
def test_loading_a_program_of_many_equations_costs_at_most_four_times_the_file(kind, tmp_path) -> None:
    """An equation costs about 100 bytes of file and 250-400 bytes as IR: the header is read
    one equation at a time, so the parsed JSON of the whole never exists, and loading stays
    within 4 x the file + 1 MiB (measured), however its equations are made."""
    n = 1_500

    def chain(x):
        for i in range(n):
            if kind == "sin":
                x = fg.sin(x)
            elif kind == "distinct literals":
                x = x * (1.0 + i / n)
            else:
                x = x.reshape(3, 2).T.reshape(6)
        return x

    f = chain if kind != "nested" else (lambda v: fg.scan(lambda c, x: (chain(c), x), v, fg.ones((2, 6)))[0])
    fg.export(f, fg.ones(6)).save(tmp_path / "long.fgx")
    size = (tmp_path / "long.fgx").stat().st_size
    peak, loaded = _peak_of_loading(tmp_path / "long.fgx")
    assert loaded is not None and peak <= 4 * size + (1 << 20), (peak, size)
    assert loaded(fg.arange(6.0)).tolist() == f(fg.arange(6.0)).tolist()


def test_a_hostile_equation_heavy_file_stays_within_the_bound(tmp_path) -> None:
    """A header of minimal equations, each keeping about three times its text as IR (a fresh
    variable and a distinct literal per 114 bytes): loading it, or refusing it, stays within
    4 x the file + 1 MiB (a whole parse of the JSON, as before streaming, took 13 x)."""
    n = 6_000
    eqns = [{"prim": "mul", "inputs": [{"var": i}, {"literal": 1.0 + i}], "params": {},
             "outputs": [{"shape": [], "dtype": "float32"}]} for i in range(n)]
    header = {"format": "funcgrad.exported", "version": 1, "crc32": 0,
              "program": {"invars": [{"shape": [], "dtype": "float32"}], "constvars": [], "eqns": eqns,
                          "outvars": [{"var": n}]},
              "constants": [], "in_tree": {"tuple": ["*"]}, "out_tree": "*"}
    blob = json.dumps(header, separators=(",", ":")).encode()
    (tmp_path / "h.fgx").write_bytes(struct.pack("<Q", len(blob)) + blob)
    size = (tmp_path / "h.fgx").stat().st_size
    peak, loaded = _peak_of_loading(tmp_path / "h.fgx")
    assert peak <= 4 * size + (1 << 20), (peak, size)
