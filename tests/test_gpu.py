"""GPU (CuPy) backend: the same operations on gpu as on cpu. Every test here
skips with a reason where CuPy or a GPU is missing."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg


def _gpu_available() -> str | None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy is not installed (pip install 'funcgrad[gpu]')"
    if not any(d.kind == "gpu" for d in fg.devices()):
        return "CuPy is installed but no GPU is visible"
    return None


_reason = _gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_reason is not None, reason=_reason or "")]


def test_round_trip_and_device_names() -> None:
    x = fg.arange(6.0).reshape(2, 3)
    g = x.to("gpu")
    assert g.device is fg.device("cuda") is fg.device("gpu:0")
    assert g.to("cpu").tolist() == x.tolist()
    assert g.buffer.device is g.device and g.T.buffer is g.buffer


def test_operations_match_cpu() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 5)).astype(np.float32)
    x = fg.asarray(a)
    g = x.to("gpu")
    checks = [
        lambda v: (v @ v.T).sum(0), lambda v: fg.tanh(v) * 2.0 + v ** 3, lambda v: v[1:, ::-2],
        lambda v: v[fg.array([0, 3, 3], device=v.device)], lambda v: v.at[0].add(1.0),
        lambda v: fg.logsumexp(v, 1), lambda v: fg.sort(v, axis=0), lambda v: fg.concatenate([v, v], 1),
        lambda v: fg.pad(v, 1), lambda v: fg.where(v > 0, v, 0.0), lambda v: v.reshape(5, 8).T.reshape(-1),
        lambda v: fg.einsum("ij,ij->i", v, v), lambda v: fg.erf(v), lambda v: fg.sigmoid(v).astype(fg.bfloat16),
    ]
    for f in checks:
        np.testing.assert_allclose(f(g).to("cpu").astype(fg.float32).numpy(),
                                   f(x).astype(fg.float32).numpy(), rtol=2e-2, atol=1e-5)


def test_mixing_devices_raises() -> None:
    with pytest.raises(fg.DeviceMismatchError, match="cpu.*gpu:0|gpu:0.*cpu"):
        fg.ones(3) + fg.ones(3).to("gpu")


def test_gpu_memory_counters() -> None:
    import gc

    gc.collect()
    base = fg.memory.allocated("gpu")
    x = fg.zeros((1024,), device="gpu")
    assert fg.memory.allocated("gpu") - base == 4096
    assert fg.memory.reserved("gpu") >= 4096
    del x
    gc.collect()
    assert fg.memory.allocated("gpu") == base
    fg.memory.empty_cache("gpu")


def test_numpy_conversion_needs_explicit_copy() -> None:
    g = fg.ones(3).to("gpu")
    with pytest.raises(TypeError, match="to\\('cpu'\\)"):
        g.numpy()
    with pytest.raises(TypeError):
        np.asarray(g)
