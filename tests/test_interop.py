"""NumPy, DLPack and array API interop; Python protocol methods."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg


def test_numpy_is_a_read_only_view_of_the_same_memory() -> None:
    x = fg.arange(6.0).reshape(2, 3)
    v = x.numpy()
    assert not v.flags.writeable and np.shares_memory(v, x.numpy())
    t = x.T.numpy()
    assert t.strides == (4, 12) and np.shares_memory(t, v)


def test_from_numpy_is_zero_copy_and_array_copies() -> None:
    a = np.arange(6, dtype=np.float32)
    assert np.shares_memory(fg.from_numpy(a).numpy(), a)
    assert not np.shares_memory(fg.array(a).numpy(), a)
    assert not np.shares_memory(fg.asarray(a).numpy(), a)  # asarray copies NumPy input: immutability holds
    assert np.shares_memory(fg.asarray(a, copy=False).numpy(), a)
    strided = a[::-2]
    x = fg.from_numpy(strided)
    assert x.stride() == (-2,) and np.shares_memory(x.numpy(), a) and x.tolist() == strided.tolist()
    assert x.buffer.size == 5 and x.storage_offset() == 4


def test_array_protocol_and_numpy_functions() -> None:
    x = fg.array([[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(x).dtype == np.float32
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert float(np.sum(x)) == 10.0
    assert np.array(x, copy=True).flags.writeable


def test_dlpack_round_trip_with_numpy() -> None:
    x = fg.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(x)
    assert np.shares_memory(a, x.numpy()) and a.tolist() == x.tolist()
    assert x.__dlpack_device__() == (1, 0)
    y = fg.from_dlpack(np.arange(4.0))
    assert y.dtype is fg.float64 and y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_dlpack_with_torch() -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = fg.from_dlpack(t)
    assert x.shape == (2, 3) and x.tolist() == t.tolist()
    back = torch.from_dlpack(x)
    assert back.tolist() == t.tolist()


def test_python_protocol() -> None:
    x = fg.array([[1.0, 2.0], [3.0, 4.0]])
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.0, 2.0], [3.0, 4.0]]
    assert fg.array(2.5).item() == 2.5 and float(fg.array([3.0])) == 3.0 and int(fg.array(7)) == 7
    assert [10, 20, 30][fg.array(1)] == 20
    assert bool(fg.array([1.0])) and not bool(fg.array(0))
    assert f"{fg.array(1.23456):.2f}" == "1.23"
    assert repr(fg.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32, device=cpu)"
    assert x.astype(fg.int32).dtype is fg.int32 and x.astype("float32", copy=False) is x
    assert x.to("cpu") is x and x.to(fg.float64).dtype is fg.float64
    twin = fg.array([[1.0, 2.0], [3.0, 4.0]])
    keys = {x: "x", twin: "twin"}  # hashable by identity, as torch.Tensor: equal values stay distinct keys
    assert keys[x] == "x" and keys[twin] == "twin" and len(keys) == 2
    assert fg.array(2.5, dtype=fg.bfloat16).item() == 2.5 and fg.ones(2, fg.float16).tolist() == [1.0, 1.0]


def test_copies_and_pickles_of_arrays_parameters_modules_and_optimizers() -> None:
    """``copy``, ``deepcopy`` and ``pickle`` (EMA copies, best-model snapshots, worker
    processes); ``fg.load`` still never unpickles (test_serialization)."""
    import copy
    import pickle

    x = fg.asarray(np.arange(6.0).reshape(2, 3)).astype(fg.bfloat16)
    assert copy.copy(x) is x  # an immutable value: its copy is itself
    for twin in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert twin is not x and twin.dtype is fg.bfloat16 and twin.tolist() == x.tolist()
        assert not np.shares_memory(twin.numpy(), x.numpy())
    leaf = fg.asarray([1.0, 2.0], requires_grad=True)
    (leaf * 3).sum().backward()
    deep = copy.deepcopy(leaf)
    assert deep.requires_grad and deep.is_leaf and deep.grad.tolist() == [3.0, 3.0]
    assert pickle.loads(pickle.dumps(leaf)).requires_grad

    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    opt = fg.optim.Adam(model.parameters(), lr=0.1)
    model(fg.ones((2, 3))).sum().backward()
    opt.step()
    snapshot = copy.deepcopy(model)
    restored = pickle.loads(pickle.dumps(model))
    for other in (snapshot, restored):
        for (name, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
            assert isinstance(b, fg.nn.Parameter) and b is not a and b.tolist() == a.tolist(), name
    opt.step()  # the copies keep their values
    assert snapshot[0].weight.tolist() != model[0].weight.tolist()
    assert snapshot[0].weight.grad is not None  # deepcopy keeps .grad, as PyTorch's does
    twin_opt = copy.deepcopy(opt)
    assert twin_opt.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    with pytest.raises(TypeError, match="cannot be pickled"):
        fg.grad(lambda v: pickle.dumps(v) and v.sum())(fg.ones(2))


def test_numpy_functions_compute_in_numpy() -> None:
    """The policy: NumPy's functions and ufuncs on funcgrad arrays compute on their values and
    return NumPy arrays (``fg.*`` keeps arrays in funcgrad); ``round()`` works on one value."""
    a = np.arange(6.0).reshape(2, 3)
    x = fg.asarray(a)
    for f in (np.mean, np.std, np.var, np.sum, np.max, np.exp, np.cumsum, np.sort, np.linalg.norm,
              lambda v: np.concatenate([v, v]), lambda v: np.dot(v, v.T), lambda v: np.where(v > 2, v, 0),
              lambda v: np.mean(v, axis=0, keepdims=True), lambda v: np.percentile(v, 50)):
        got, want = f(x), f(a)
        assert not isinstance(got, fg.Array)
        np.testing.assert_allclose(got, want)
    assert round(fg.asarray(2.6)) == 3 and round(fg.asarray(2.567), 2).item() == pytest.approx(2.57)
    with pytest.raises(TypeError, match="fg.round"):
        round(x)


def test_array_namespace() -> None:
    x = fg.ones(3)
    xp = x.__array_namespace__()
    assert xp is fg and fg.__array_api_version__ == "2023.12"
    for name in ["permute_dims", "matrix_transpose", "concat", "astype", "asarray", "isdtype", "finfo", "iinfo",
                 "result_type", "can_cast", "acos", "atan2", "bitwise_left_shift", "vecdot", "unstack",
                 "cumulative_sum", "take_along_axis", "meshgrid", "broadcast_arrays", "newaxis", "e", "pi", "inf",
                 "nan", "bool", "int8", "uint8", "float64", "from_dlpack", "__array_namespace_info__"]:
        assert hasattr(fg, name), name
    info = fg.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] is fg.float32 and "float32" in info.dtypes()
    with pytest.raises(ValueError, match="2023.12"):
        x.__array_namespace__(api_version="1999.01")


def test_public_namespace_holds_no_implementation_names() -> None:
    """``from funcgrad import *`` gives the functions and the public subpackages, not the
    modules that implement them or their own imports (``sys``, ``annotations``)."""
    import types

    space: dict[str, object] = {}
    exec("from funcgrad import *", space)  # noqa: S102 - the statement under test
    modules = sorted(n for n, v in space.items() if isinstance(v, types.ModuleType))
    assert modules == ["accelerator", "amp", "cuda", "debug", "distributed", "example_libraries", "fft", "lax",
                       "linalg", "memory", "misc", "nn", "optim", "profiler", "random", "scipy", "sharding", "testing",
                       "tree", "utils"]
    assert "annotations" not in space and "sys" not in fg.__dict__
    assert {"add", "grad", "no_grad", "linalg", "autograd", "broadcast_shapes", "save"} <= set(space)
    assert all(hasattr(fg, n) for n in fg.__all__)


def test_array_api_generic_code() -> None:
    """Code written against the standard, with no funcgrad names, runs on funcgrad arrays."""

    def softmax(x):  # the standard only: x.__array_namespace__()
        xp = x.__array_namespace__()
        e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)

    out = softmax(fg.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(out.numpy().sum(), 1.0, rtol=1e-6)
    compat = pytest.importorskip("array_api_compat")
    assert compat.array_namespace(out) is fg


def test_dlpack_bfloat16_and_tensors_that_require_grad() -> None:
    """bfloat16 (which NumPy's DLPack reader lacks) from PyTorch and JAX, bit for bit, and a
    tensor with requires_grad=True comes in detached."""
    torch = pytest.importorskip("torch")
    t = torch.linspace(-3, 3, 7, dtype=torch.bfloat16)
    for x in (fg.from_dlpack(t), fg.asarray(t)):
        assert x.dtype is fg.bfloat16
        assert x.numpy().view(np.int16).tolist() == t.view(torch.int16).tolist()
    w = torch.arange(3.0, requires_grad=True)
    got = fg.from_dlpack(w)
    assert got.tolist() == [0.0, 1.0, 2.0] and not got.requires_grad
    assert fg.asarray(w * 2).tolist() == [0.0, 2.0, 4.0]
    jnp = pytest.importorskip("jax.numpy")
    j = jnp.arange(4, dtype=jnp.bfloat16) / 3
    assert fg.from_dlpack(j).numpy().tobytes() == np.asarray(j).tobytes()


def test_objects_with_a_dtype_keep_it() -> None:
    """Python floats become float32; a pandas frame, a NumPy scalar or array keeps float64."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    assert fg.asarray(frame).dtype is fg.float64 and fg.asarray(frame).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert fg.asarray(frame["a"]).dtype is fg.float64 and fg.asarray(pd.Series([1, 2])).dtype is fg.int64
    assert fg.asarray(np.float64(1.5)).dtype is fg.float64 and fg.asarray([1.5]).dtype is fg.float32
    assert fg.asarray(frame.astype("float32")).dtype is fg.float32


def test_jax_reads_funcgrad_arrays() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x = fg.arange(6.0).reshape(2, 3)
    assert np.array_equal(np.asarray(jnp.asarray(x)), x.numpy())
    assert jnp.asarray(fg.ones(2, fg.bfloat16)).dtype == jnp.bfloat16


def test_bfloat16_dlpack_export_names_the_way_out() -> None:
    torch = pytest.importorskip("torch")
    x = fg.asarray([1.5, -2.0]).astype(fg.bfloat16)
    with pytest.raises(BufferError, match="bfloat16.*view"):
        torch.from_dlpack(x)
    t = torch.from_numpy(x.numpy().view(np.int16)).view(torch.bfloat16)
    assert t.float().tolist() == [1.5, -2.0]


def test_fg_cuda_ports_torch_cuda_questions() -> None:
    from funcgrad.backends.cupy_backend import gpu_count

    assert fg.cuda.is_available() == (gpu_count() > 0) and fg.cuda.device_count() == gpu_count()
    assert fg.cuda.current_device() == 0
    fg.cuda.manual_seed(3)
    a = fg.rand(3)
    fg.manual_seed(3)
    assert fg.rand(3).tolist() == a.tolist()
    if not fg.cuda.is_available():
        with pytest.raises(fg.DeviceUnavailableError, match="needs CuPy"):
            fg.cuda.synchronize()


_SKLEARN_SCRIPT = r"""
import numpy as np, sklearn, funcgrad as fg
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import KernelCenterer, LabelBinarizer
from sklearn import metrics

X, y = load_digits(return_X_y=True)
X = X[:400].astype(np.float64)
y = y[:400]
yf = y.astype(np.float64)
runs = {
    "PCA full": lambda a, t: PCA(5, svd_solver="full").fit(a).transform(a),
    "PCA randomized": lambda a, t: PCA(5, svd_solver="randomized", random_state=0).fit(a).transform(a),
    "RidgeCV": lambda a, t: RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(a, t).predict(a),
    "KernelCenterer": lambda a, t: KernelCenterer().fit_transform(a @ a.T),
    "LabelBinarizer": lambda a, t: LabelBinarizer().fit_transform(t),
    "accuracy_score": lambda a, t: metrics.accuracy_score(t, t[::-1]),
    "mean_squared_error": lambda a, t: metrics.mean_squared_error(a[:, 10], a[:, 20]),
    "euclidean_distances": lambda a, t: metrics.pairwise.euclidean_distances(a[:30], a[:20]),
    "confusion_matrix": lambda a, t: metrics.confusion_matrix(t, t[::-1]),
}
for name, run in runs.items():
    target = yf if name == "RidgeCV" else y
    want = run(X, target)
    with sklearn.config_context(array_api_dispatch=True):
        got = run(fg.asarray(X), fg.asarray(target))
    assert isinstance(got, (fg.Array, float, int)) or np.isscalar(got), (name, type(got))
    got = got.numpy() if isinstance(got, fg.Array) else got
    if name.startswith("PCA"):  # components are defined up to sign
        got, want = np.abs(got), np.abs(want)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-7, atol=1e-7,
                               err_msg=name)
for name, est, args in [("Ridge", Ridge(solver="svd"), (X, yf)), ("LDA", LinearDiscriminantAnalysis(), (X, y))]:
    with sklearn.config_context(array_api_dispatch=True):
        try:
            est.fit(*[fg.asarray(a) for a in args])
        except TypeError as exc:
            assert "immutable" in str(exc) and "x.at[index].set" in str(exc), (name, exc)
        else:
            raise AssertionError(f"{name} no longer assigns items: add it to the list that runs")
print("sklearn ok")
"""


def test_scikit_learn_array_api_dispatch_on_funcgrad_arrays() -> None:
    """Estimators and metrics that never write into an array give their NumPy results on
    funcgrad arrays; Ridge(solver="svd") and LDA write into arrays, and get funcgrad's
    immutability error. (In a subprocess: SCIPY_ARRAY_API must be set before SciPy loads.)"""
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    import os
    import subprocess
    import sys

    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    done = subprocess.run([sys.executable, "-c", _SKLEARN_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "sklearn ok" in done.stdout, done.stderr[-3000:]
