"""funcgrad's GPU code paths, run without a GPU.

A stand-in device of kind "gpu" computes with NumPy seen through a module that is not
``numpy``. So every ``xp is np`` shortcut takes its GPU branch, every primitive runs its
GPU kernel, and every device-kind check (indices read on the host or not) takes its GPU
side. A stand-in ``cupyx`` supplies the scatter and ``erf`` functions those kernels import.

This checks funcgrad's own logic on those paths in CI, where no GPU is lent:
- every registry primitive on hypothesis-drawn inputs;
- the NaN policies that replace host checks;
- the tests of ``tests/test_gpu.py`` themselves.

CuPy's own behaviour is for ``tests/test_gpu.py`` on a real device.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.backends import ArrayModuleBackend, Device
from funcgrad.primitives.core import ShapedArray
from funcgrad.primitives.elementwise import polygamma_series

from . import test_gpu
from .primitive_cases import CASES, assert_matches
from .test_layers_numerics import LAYERS

device_module = sys.modules["funcgrad.backends.device"]  # (the package exports the function ``device``)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=object).astype(x.dtype)


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.frompyfunc(math.erfc, 1, 1)(x), dtype=object).astype(x.dtype)


# The C functions the fused kernels call (``elementwise.C_EXPR``), as NumPy computes them.
_C_FUNCTIONS = {
    **{name: getattr(np, name) for name in ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "sin",
                                            "cos", "tan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc",
                                            "hypot", "copysign")},
    "fabs": np.abs, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "pow": np.power, "atan2": np.arctan2, "erf": _erf,
    "erfc": _erfc,
    "rsqrt": lambda x: 1 / np.sqrt(x), "fg_max": np.maximum, "fg_min": np.minimum, "fg_reciprocal": np.reciprocal,
    "fg_relu": lambda x: np.maximum(x, x.dtype.type(0)), "fg_sigmoid": lambda x: 1 / (1 + np.exp(-x)), "fg_tanh": np.tanh, "fg_exp": np.exp,
    "fg_gelu": lambda x: 0.5 * x * _erfc(-x * math.sqrt(0.5)),
    "fg_gelu_grad": lambda x: 0.5 * _erfc(-x * math.sqrt(0.5)) + x * (np.exp(-0.5 * (x * x)) / math.sqrt(2 * math.pi)),
}
_C_STATEMENT = re.compile(r"^(?:(float|double) )?(\w+) = (.+);$")


class _StandinElementwiseKernel:
    """CuPy's ``ElementwiseKernel`` for the fused kernels' C: each statement (``float v0 = x0
    * c1;``, ``y0 = v0;``) run as NumPy over whole arrays, so the generated logic is checked
    here and CuPy's compiler on a real GPU (``tests/test_gpu.py``)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str, preamble: str = "") -> None:
        assert re.fullmatch(r"\w+", name) and "fg_max" in preamble
        self.ins = [p.split() for p in in_params.split(", ")]
        self.outs = [p.split() for p in out_params.split(", ")]
        self.statements = [_C_STATEMENT.match(line).groups() for line in operation.splitlines()]  # type: ignore[union-attr]

    def __call__(self, *args: object) -> object:
        assert len(args) == len(self.ins)
        env = {name: np.asarray(a, dtype) for (dtype, name), a in zip(self.ins, args)}
        for ctype, name, expr in self.statements:
            value = eval(expr, {"__builtins__": {}, **_C_FUNCTIONS}, env)  # noqa: S307 - the lowering's own text
            env[name] = np.asarray(value, {"float": np.float32, "double": np.float64}[ctype]) if ctype else value
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        outs = [np.broadcast_to(np.asarray(env[name], dtype), shape).copy() for dtype, name in self.outs]
        return outs[0] if len(outs) == 1 else tuple(outs)


class _StandinReductionKernel:
    """CuPy's ``ReductionKernel`` for the fused sums: the preamble's device function (the
    run's statements, ``return vK;``) run as NumPy over whole arrays, then summed over the
    call's axes."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
                 identity: str, name: str, preamble: str = "") -> None:
        assert (reduce_expr, post_map_expr, identity) == ("a + b", "y0 = a", "0") and map_expr.startswith(name)
        self.ins = [p.split() for p in in_params.split(", ")]
        ((self.out_dtype, _),) = [p.split() for p in out_params.split(", ")]
        body = preamble.split(f"{name}_map(")[1].split("{", 1)[1].rsplit("}", 1)[0]
        lines = [line.strip() for line in body.strip().splitlines()]
        self.statements = [_C_STATEMENT.match(line).groups() for line in lines[:-1]]  # type: ignore[union-attr]
        self.result = re.fullmatch(r"return (\w+);", lines[-1]).group(1)  # type: ignore[union-attr]

    def __call__(self, *args: object, axis: tuple[int, ...], keepdims: bool) -> object:
        env = {name: np.asarray(a, dtype) for (dtype, name), a in zip(self.ins, args)}
        for ctype, name, expr in self.statements:
            value = eval(expr, {"__builtins__": {}, **_C_FUNCTIONS}, env)  # noqa: S307 - the lowering's own text
            env[name] = np.asarray(value, {"float": np.float32, "double": np.float64}[ctype]) if ctype else value
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        mapped = np.broadcast_to(np.asarray(env[self.result]), shape)
        return np.asarray(mapped.sum(axis=axis, keepdims=keepdims), self.out_dtype)


class _NumpyStandin(types.ModuleType):
    """NumPy under another name (``xp is np`` is False), with CuPy's ``asnumpy``,
    ``ElementwiseKernel`` and ``ReductionKernel``."""

    ElementwiseKernel = _StandinElementwiseKernel
    ReductionKernel = _StandinReductionKernel

    def __init__(self) -> None:
        super().__init__("cupy_standin")

    def __getattr__(self, name: str) -> object:
        return getattr(np, name)

    @staticmethod
    def asnumpy(a: object) -> np.ndarray:
        return np.asarray(a)


class _StandinBackend(ArrayModuleBackend):
    def __init__(self, dev: Device) -> None:
        super().__init__(dev, _NumpyStandin())

    def from_other_gpu(self, arr: np.ndarray) -> np.ndarray:
        return arr.copy()

    def reserved(self) -> int:  # CuPy's pool keeps what it allocated; here, what is live
        return self.device.stats.allocated

    def empty_cache(self) -> None:
        pass


def _cupyx() -> dict[str, types.ModuleType]:
    cupyx = types.ModuleType("cupyx")
    for mode, ufunc in (("add", np.add), ("max", np.maximum), ("min", np.minimum)):
        setattr(cupyx, f"scatter_{mode}", ufunc.at)
    scipy = types.ModuleType("cupyx.scipy")
    special = types.ModuleType("cupyx.scipy.special")
    special.erf, special.erfc = _erf, _erfc  # type: ignore[attr-defined]
    special.gammaln = lambda x: np.asarray(np.frompyfunc(math.lgamma, 1, 1)(x), dtype=object).astype(x.dtype)  # type: ignore[attr-defined]
    special.digamma = lambda x: polygamma_series(np.asarray(x, np.float64), 0).astype(x.dtype)  # type: ignore[attr-defined]
    special.polygamma = lambda n, x: polygamma_series(np.asarray(x, np.float64), int(n)).astype(x.dtype)  # type: ignore[attr-defined]
    cupyx.scipy, scipy.special = scipy, special  # type: ignore[attr-defined]
    return {"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special}


STANDIN = Device("gpu", 0)
STANDIN._backend = _StandinBackend(STANDIN)


@pytest.fixture(autouse=True)
def standin_gpu(monkeypatch: pytest.MonkeyPatch) -> Device:
    """``fg.device("gpu")`` is the stand-in for the test's duration (CuPy is never imported)."""
    if ("gpu", 0) in device_module._DEVICES and device_module._DEVICES["gpu", 0] is not STANDIN:
        pytest.skip("a real GPU is present: tests/test_gpu.py covers it")
    monkeypatch.setitem(device_module._DEVICES, ("gpu", 0), STANDIN)
    for name, module in _cupyx().items():
        monkeypatch.setitem(sys.modules, name, module)
    return STANDIN


def _on_gpu(a: object) -> object:
    if isinstance(a, np.ndarray):
        return fg.from_numpy(np.ascontiguousarray(a)).to(STANDIN) if a.ndim else fg.asarray(a).to(STANDIN)
    return a


@pytest.mark.parametrize("prim", sorted(fg.registry(), key=lambda p: p.name), ids=lambda p: p.name)
@given(data=st.data())
def test_every_primitive_on_the_gpu_path_matches_numpy(prim: fg.Primitive, data: st.DataObject) -> None:
    case = CASES[prim.name](data.draw)
    out = fg.bind(prim, *[_on_gpu(a) for a in case.args], **case.params)
    if prim.multiple_results and not out:  # an effect alone (debug_callback): check what it was handed
        assert_matches(case, case.extra["seen"][-1], prim.name)
        return
    if prim.multiple_results:
        out = out[0]
    assert out.device is STANDIN
    assert_matches(case, out.to("cpu").numpy(), prim.name)


def _gpu_suite() -> list[object]:
    """Every test of tests/test_gpu.py, with its parameters (one ``parametrize`` each at most)."""
    cases = []
    for name in sorted(n for n in dir(test_gpu) if n.startswith("test_")):
        fn = getattr(test_gpu, name)
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if not marks:
            cases.append(pytest.param(fn, {}, id=name))
            continue
        (argname, values), ids = marks[0].args, marks[0].kwargs.get("ids")
        assert len(marks) == 1 and "," not in argname, f"{name}: extend _gpu_suite for this parametrization"
        for i, value in enumerate(values):
            cases.append(pytest.param(fn, {argname: value}, id=f"{name}[{ids[i] if ids else i}]"))
    return cases


@pytest.mark.parametrize("test,kwargs", _gpu_suite())
def test_the_gpu_suite_passes_on_the_standin(test: object, kwargs: dict[str, object], tmp_path: object) -> None:
    if "tmp_path" in inspect.signature(test).parameters:  # type: ignore[arg-type]
        kwargs = {**kwargs, "tmp_path": tmp_path}
    test(**kwargs)  # type: ignore[operator]


def test_no_host_reads_of_indices_on_the_gpu_path() -> None:
    """Where the CPU raises for a bad index (it reads the indices for free), the GPU path
    cannot without a device-to-host copy per call: the affected rows come out NaN."""
    F = fg.nn.functional
    weight = fg.ones((4, 2)).to("gpu")
    rows = F.embedding(fg.array([0, 7, -1, 3]).to("gpu"), weight).to("cpu").numpy()
    assert np.isnan(rows[1]).all() and np.isnan(rows[2]).all() and (rows[[0, 3]] == 1).all()
    logp = fg.zeros((3, 4)).to("gpu")
    losses = F.nll_loss(logp, fg.array([1, 5, -100]).to("gpu"), reduction="none").to("cpu").numpy()
    assert losses[0] == 0 and np.isnan(losses[1]) and losses[2] == 0
    x = fg.ones((1, 2, 2, 2)).to("gpu")
    back = F.max_unpool2d(x, fg.array([[[[0, 1], [2, 3]], [[0, 1], [2, 99]]]]).to("gpu"), 2).to("cpu").numpy()
    assert np.isfinite(back[0, 0]).all() and np.isnan(back[0, 1]).all()
    with pytest.raises(IndexError):  # the same on the CPU raises
        F.embedding(fg.array([0, 7]), fg.ones((4, 2)))


class _SelfAttention(fg.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = fg.nn.MultiheadAttention(4, 2)

    def forward(self, x: fg.Array) -> fg.Array:
        return self.mha(x, x, x)[0]


EXTRA_LAYERS = [
    ("embedding_options", lambda: fg.nn.Embedding(5, 3, max_norm=1.0, scale_grad_by_freq=True, padding_idx=0), None),
    ("multihead_attention", _SelfAttention, (3, 2, 4)),
    ("dropout_eval_batchnorm", lambda: fg.nn.Sequential(fg.nn.Dropout(0.5), fg.nn.BatchNorm1d(3)).eval(), (4, 3)),
]


@pytest.mark.parametrize("name,make,shape", LAYERS + EXTRA_LAYERS, ids=[n for n, _, _ in LAYERS + EXTRA_LAYERS])
def test_layers_on_the_gpu_path_match_the_cpu(name: str, make: object, shape: object) -> None:
    """Every layer, moved with ``model.to("gpu")``: the same outputs, input gradients and
    parameter gradients as on the CPU (constants a layer makes must land on its input's
    device, and no index is read on the host)."""
    results = []
    for device in ("cpu", "gpu"):
        fg.manual_seed(0)
        model = make().to(fg.float64).to(device)  # type: ignore[operator]
        if shape is None:  # an embedding: integer indices in, no input gradient
            x = fg.array([[0, 2, 2], [4, 1, 2]]).to(device)
        else:
            x = fg.asarray(np.random.default_rng(0).standard_normal(shape)).to(device).requires_grad_()
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
        (out * fg.sin(out)).sum().backward()
        grads = [p.grad.to("cpu").numpy() for p in model.parameters()]
        results.append((out.detach().to("cpu").numpy(), None if shape is None else x.grad.to("cpu").numpy(),
                        grads, [p.detach().to("cpu").numpy() for p in model.parameters()]))
    (cpu_out, cpu_dx, cpu_grads, cpu_params), (gpu_out, gpu_dx, gpu_grads, gpu_params) = results
    np.testing.assert_allclose(gpu_out, cpu_out, rtol=1e-12, atol=1e-12)
    if cpu_dx is not None:
        np.testing.assert_allclose(gpu_dx, cpu_dx, rtol=1e-12, atol=1e-12)
    for a, b in zip(gpu_grads + gpu_params, cpu_grads + cpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_transfers_keep_every_shape_and_scalars_follow_the_device() -> None:
    """A 0-d array stays 0-d both ways (np.ascontiguousarray once made it (1,)), and
    ``where(mask, 1.0, 0.0)`` makes its scalars on the mask's device."""
    for shape in [(), (0,), (3,), (2, 0, 3)]:
        x = fg.zeros(shape)
        assert x.to("gpu").shape == shape and x.to("gpu").to("cpu").shape == shape
    mask = fg.array([True, False]).to("gpu")
    picked = fg.where(mask, 1.0, 0.0)
    assert picked.device is STANDIN and picked.to("cpu").tolist() == [1.0, 0.0]


def test_a_compiled_function_runs_on_the_gpu_path() -> None:
    """LoweredFunction programs on a GPU device: kernels resolved by its backend, runs of
    elementwise equations fused into one kernel whose C is in the lowered text, the results
    and gradients of eager evaluation."""
    x = fg.asarray(np.linspace(-1, 1, 50_000)).to(STANDIN)

    def f(v):
        return (fg.tanh(v * 2.0) * v + fg.exp(-v)).sum()

    compiled = fg.compile(f)
    source = compiled.lower(x).source
    assert "fused into one GPU reduction kernel: mul tanh mul neg exp add reduce_sum" in source
    assert "double v1 = fg_tanh(v0);" in source
    np.testing.assert_allclose(compiled(x).to("cpu").item(), f(x).to("cpu").item(), rtol=1e-12)
    g = fg.compile(fg.grad(f))(x)
    assert g.device is STANDIN
    np.testing.assert_allclose(g.to("cpu").numpy(), fg.grad(f)(x).to("cpu").numpy(), rtol=1e-12)


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1), (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_gpu_run_and_its_sum_are_one_reduction_kernel(axes, keepdims) -> None:
    """A run ending in the sum of its last value, nothing else of it read later: one
    ``ReductionKernel`` (the run a device function of one element), the eager sum's values;
    when a value of the run is read again, an elementwise kernel and a separate sum."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 5, 6)), rng.standard_normal((4, 5, 6))
    x, y = fg.asarray(a).to(STANDIN), fg.asarray(b).to(STANDIN)

    def f(u, v):
        return (fg.exp(u * 0.5) * v + 1.0).sum(axes, keepdims=keepdims)

    compiled = fg.compile(f)
    assert "fused into one GPU reduction kernel: mul exp mul add reduce_sum" in compiled.lower(x, y).source
    got = compiled(x, y)
    assert got.device is STANDIN
    np.testing.assert_allclose(got.to("cpu").numpy(), f(fg.asarray(a), fg.asarray(b)).numpy(), rtol=1e-12)

    def g(u, v):
        w = fg.exp(u * 0.5) * v
        return (w + 1.0).sum(axes), w

    source = fg.compile(g).lower(x, y).source
    assert "GPU reduction kernel" not in source and "fused into one GPU kernel" in source


def _fused_on_gpus(p: fg.Primitive) -> bool:
    """A primitive a fused GPU kernel computes: one or two float operands, a float result."""
    if p.c_expr is None or "{2}" in p.c_expr or "{out}" in p.c_expr:
        return False
    arity = 2 if "{1}" in p.c_expr else 1
    x = ShapedArray((2,), fg.float32, fg.device("cpu"))
    try:
        return p.abstract_eval(*(x,) * arity).dtype == fg.float32
    except fg.errors.DTypeError:  # (logical_and: bool operands)
        return False


_FUSED = sorted((p for p in fg.registry() if _fused_on_gpus(p)), key=lambda p: p.name)


@pytest.mark.parametrize("prim", _FUSED, ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_fused_gpu_expression_computes_its_primitive(prim: fg.Primitive, dtype: str) -> None:
    """Each primitive's C expression, in a fused kernel with a literal and a 0-d input, gives
    its eager CPU result."""
    low, high = (prim.domain.low, prim.domain.high) if prim.domain else (-2.0, 2.0)
    rng = np.random.default_rng(0)
    x, y = (fg.asarray(rng.uniform(low, high, 64).astype(dtype)) for _ in range(2))
    scale = fg.asarray(np.asarray(1.0, dtype))
    arity = 2 if "{1}" in prim.c_expr else 1

    def f(x, y, scale):
        out = fg.bind(prim, *(x, y)[:arity])
        return out * scale + 0.0 * x, out

    compiled = fg.compile(f)
    on_gpu = [a.to(STANDIN) for a in (x, y, scale)]
    assert f"fused into one GPU kernel: {prim.name} mul mul add" in compiled.lower(*on_gpu).source
    for got, want in zip(compiled(*on_gpu), f(x, y, scale)):
        assert got.device is STANDIN and got.dtype == want.dtype
        np.testing.assert_allclose(got.to("cpu").numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_fg_cuda_answers_for_the_gpu_device() -> None:
    """fg.cuda's memory counters and synchronize act on device("gpu") (here the stand-in)."""
    fg.cuda.reset_peak_memory_stats()
    before = fg.cuda.memory_allocated()
    x = fg.ones((256, 256)).to("gpu")
    assert fg.cuda.memory_allocated() >= before + x.nbytes
    assert fg.cuda.max_memory_allocated() >= fg.cuda.memory_allocated()
    fg.cuda.synchronize()
    del x
    assert fg.cuda.memory_allocated() == before


def test_an_exported_program_loads_and_runs_on_the_gpu(tmp_path, standin_gpu) -> None:
    """load_exported(path, device="gpu"): the constants on the device, the program run there."""
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(6, 8), fg.nn.Tanh(), fg.nn.Linear(8, 3))
    x = fg.randn(4, 6)
    fg.export(lambda v: fg.nn.functional.softmax(model(v), dim=-1), x).save(tmp_path / "m.fgx")
    loaded = fg.load_exported(tmp_path / "m.fgx", device="gpu")
    assert all(c.device.kind == "gpu" for c in loaded.program.consts)
    out = loaded(x.to("gpu"))
    assert out.device.kind == "gpu"
    np.testing.assert_allclose(out.to("cpu").numpy(), fg.nn.functional.softmax(model(x), dim=-1).detach().numpy(),
                               rtol=1e-5)


class _Recorder(fg.nn.Module):
    """Linear -> tanh -> linear that notes the device each call ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = fg.nn.Linear(4, 8), fg.nn.Linear(8, 3)
        self.seen: list[object] = []

    def forward(self, x: fg.Array, scale: float = 1.0) -> tuple[fg.Array, fg.Array]:
        self.seen.append(x.device)
        h = fg.tanh(self.a(x))
        return self.b(h) * scale, (h * h).sum()


def test_data_parallel_over_two_standin_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """DataParallel splits the batch over two devices, gathers the outputs on the first, and
    backward sums both devices' gradients into the parameters: equal to one device running
    the whole batch (outputs, a 0-d output stacked per device, gradients)."""
    second = Device("gpu", 1)
    second._backend = _StandinBackend(second)
    monkeypatch.setitem(device_module._DEVICES, ("gpu", 1), second)
    rng = np.random.default_rng(0)
    x = fg.asarray(rng.normal(size=(7, 4)))
    fg.manual_seed(0)
    model = _Recorder().double().to("gpu")
    fg.manual_seed(0)
    reference = _Recorder().double().to("gpu")

    dp = fg.nn.DataParallel(model, device_ids=[0, 1])
    out, energies = dp(x, scale=2.0)
    assert out.device is STANDIN and out.shape == (7, 3) and model.seen == [STANDIN, second]
    assert energies.shape == (2,)  # one 0-d output per device, stacked (PyTorch gathers scalars so)
    want, energy = reference(x.to("gpu"), scale=2.0)
    np.testing.assert_allclose(out.cpu().numpy(), want.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(energies.sum().item(), energy.item(), rtol=1e-12)
    ((out**2).sum() + energies.sum()).backward()
    ((want**2).sum() + energy).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad.device is STANDIN
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-10, atol=1e-12)

    with pytest.raises(fg.DeviceMismatchError, match=r"must be on gpu.*call module.to"):
        fg.nn.DataParallel(_Recorder(), device_ids=[0, 1])(x)
    cpu_only = fg.nn.DataParallel(reference, device_ids=[])  # no GPU: the module itself
    assert cpu_only(x.to("gpu"))[0].shape == (7, 3)
