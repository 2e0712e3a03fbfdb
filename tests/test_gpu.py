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


def test_cross_entropy_and_a_training_step_match_cpu() -> None:
    """The labels never leave the device: ignored rows are masked there, and an
    out-of-range label makes its row NaN instead of a host check. One SGD step of a small
    model gives the CPU's parameters; an array with history refuses to move."""
    F = fg.nn.functional
    rng = np.random.default_rng(1)
    z = rng.standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 3, -100, 1, 2, 0])
    g_cpu = fg.grad(lambda v: F.cross_entropy(v, fg.asarray(y)))(fg.asarray(z))
    g_gpu = fg.grad(lambda v: F.cross_entropy(v, fg.asarray(y).to("gpu")))(fg.asarray(z).to("gpu"))
    np.testing.assert_allclose(g_gpu.to("cpu").numpy(), g_cpu.numpy(), rtol=1e-5, atol=1e-6)
    bad = y.copy()
    bad[1] = 9
    rows = F.cross_entropy(fg.asarray(z).to("gpu"), fg.asarray(bad).to("gpu"), reduction="none").to("cpu").numpy()
    assert np.isnan(rows[1]) and rows[2] == 0 and np.isfinite(rows[[0, 3, 4, 5]]).all()
    leaf = fg.asarray(z, requires_grad=True)
    (leaf.to("gpu") * 2).sum().backward()  # the move is recorded: the gradient comes back
    assert leaf.grad.device == leaf.device and np.all(leaf.grad.numpy() == 2)

    def step(device: str) -> list[np.ndarray]:
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 4)).to(device)
        opt = fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(model(fg.asarray(z).to(device)), fg.asarray(y).to(device)).backward()
            opt.step()
        return [p.detach().to("cpu").numpy() for p in model.parameters()]

    for a, b in zip(step("gpu"), step("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_max_pool_indices_and_unpool_match_cpu() -> None:
    """The indices are computed on the device (no host reads); a bad index there makes its
    channel NaN instead of reading the indices back every call."""
    F = fg.nn.functional
    x = fg.asarray(np.round(np.random.default_rng(1).standard_normal((2, 3, 7, 6)) * 2).astype(np.float32))
    for device in ("cpu", "gpu"):
        out, idx = F.max_pool2d(x.to(device), 3, 2, 1, return_indices=True)
        back = F.max_unpool2d(out, idx, 3, 2, 1, output_size=(7, 6))
        if device == "cpu":
            ref = (out.tolist(), idx.tolist(), back.tolist())
        else:
            assert (out.tolist(), idx.tolist(), back.tolist()) == ref
    bad = F.max_unpool2d(out, idx.at[0, 1, 0, 0].set(1000), 3, 2, 1, output_size=(7, 6)).to("cpu").numpy()
    assert np.isnan(bad[0, 1]).all() and not np.isnan(bad[0, 0]).any()


@pytest.mark.parametrize("make", [
    lambda ps: fg.optim.Adam(ps, lr=0.1, amsgrad=True, weight_decay=0.1), lambda ps: fg.optim.AdamW(ps, lr=0.1),
    lambda ps: fg.optim.RMSprop(ps, lr=0.1, momentum=0.5, centered=True),
    lambda ps: fg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)],
    ids=["adam", "adamw", "rmsprop", "sgd"])
def test_optimizers_schedulers_and_checkpoints_match_cpu(make, tmp_path) -> None:
    """Optimizer state lives on the parameters' device; clipping, a scheduler and a
    save/load round trip of the state dict (loaded back onto the GPU) change nothing."""
    F = fg.nn.functional
    rng = np.random.default_rng(2)
    z, y = rng.standard_normal((5, 4)), np.array([0, 3, 1, 1, 2])

    def train(device: str) -> list[np.ndarray]:
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(4, 6), fg.nn.Tanh(), fg.nn.Linear(6, 4)).to(fg.float64).to(device)
        opt = make(model.parameters())
        sched = fg.optim.lr_scheduler.StepLR(opt, 1, 0.5)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(fg.asarray(z).to(device)), fg.asarray(y).to(device)).backward()
            fg.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            sched.step()
        fg.save(model.state_dict(), tmp_path / f"{device}.fg")
        model.load_state_dict(fg.load(tmp_path / f"{device}.fg", device=device))
        assert all(p.device is fg.device(device) for p in model.parameters())
        return [p.detach().to("cpu").numpy() for p in model.parameters()]

    for a, b in zip(train("gpu"), train("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_compiled_programs_fuse_elementwise_runs_into_one_kernel() -> None:
    """``fg.compile`` on the GPU: GELU and its gradient each become one generated
    ``ElementwiseKernel`` (its C in the lowered text) and match the CPU."""
    a = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    x, g = fg.asarray(a), fg.asarray(a).to("gpu")

    def gelu(v):
        return 0.5 * v * (1 + fg.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))

    for f in (gelu, fg.grad(lambda v: gelu(v).sum())):
        compiled = fg.compile(f)
        assert compiled.lower(g).source.count("fused into one GPU kernel") == 1
        np.testing.assert_allclose(compiled(g).to("cpu").numpy(), f(x).numpy(), rtol=1e-5, atol=1e-6)


def test_a_run_and_its_sum_are_one_reduction_kernel() -> None:
    """A run ending in the sum of its last value becomes one generated ``ReductionKernel``
    on the GPU, equal to the CPU's sum within rounding."""
    a = np.random.default_rng(2).standard_normal((64, 300))
    x, g = fg.asarray(a), fg.asarray(a).to("gpu")
    for axes in ((0,), (1,), (0, 1)):
        f = fg.compile(lambda v, axes=axes: (fg.exp(v * 0.5) * v + 1.0).sum(axes))
        assert "fused into one GPU reduction kernel" in f.lower(g).source
        np.testing.assert_allclose(f(g).to("cpu").numpy(), f(x).numpy(), rtol=1e-12)


def test_random_draws_give_the_same_numbers_on_the_gpu() -> None:
    """Threefry on the device: the same bits as on the CPU for the same key, so the same
    draws (the transcendental functions of ``normal`` to within rounding)."""
    key = fg.random.key(11)
    on_gpu = key.to("gpu")
    assert fg.random.bits(on_gpu, (6,)).to("cpu").tolist() == fg.random.bits(key, (6,)).tolist()
    assert fg.random.uniform(on_gpu, (6,)).to("cpu").tolist() == fg.random.uniform(key, (6,)).tolist()
    np.testing.assert_allclose(fg.random.normal(on_gpu, (6,)).to("cpu").numpy(), fg.random.normal(key, (6,)).numpy(),
                               rtol=1e-6, atol=1e-6)
    x = fg.ones(8).to("gpu")
    dropped = fg.nn.functional.dropout(x, 0.5)
    assert dropped.device is x.device


def test_layers_that_read_values_on_the_host_take_gpu_arrays() -> None:
    """rrelu's slopes, ctc_loss's lengths and targets and the adaptive softmax's target check
    read values on the host: GPU arrays give the CPU's results (the same draws after the
    same seed)."""
    F = fg.nn.functional
    x = fg.asarray(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
    fg.manual_seed(3)
    want = F.rrelu(x, training=True)
    fg.manual_seed(3)
    got = F.rrelu(x.to("gpu"), training=True)
    assert got.device.kind == "gpu"
    np.testing.assert_allclose(got.to("cpu").numpy(), want.numpy(), rtol=1e-6)

    log_probs = F.log_softmax(fg.asarray(np.random.default_rng(2).standard_normal((12, 2, 5))), dim=2)
    targets, lengths, target_lengths = fg.asarray([[1, 2, 2], [3, 1, 0]]), fg.asarray([12, 10]), fg.asarray([3, 2])
    want = F.ctc_loss(log_probs, targets, lengths, target_lengths)
    got = F.ctc_loss(*(v.to("gpu") for v in (log_probs, targets, lengths, target_lengths)))
    np.testing.assert_allclose(got.to("cpu").numpy(), want.numpy(), rtol=1e-9)

    fg.manual_seed(0)
    softmax = fg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
    target = fg.asarray([0, 5, 9, 3])
    want = softmax(x, target).loss
    softmax.to("gpu")
    np.testing.assert_allclose(softmax(x.to("gpu"), target.to("gpu")).loss.to("cpu").numpy(), want.numpy(), rtol=1e-5)


def test_draws_shaped_by_gpu_arrays_land_on_the_gpu() -> None:
    """normal with an array mean or std, bernoulli and multinomial draw PyTorch's numbers
    from the CPU generator and place them on their arrays' device: the CPU's values."""
    draws = [lambda on: fg.normal(fg.zeros(5).to(on), 1.0), lambda on: fg.normal(0.5, fg.ones(5).to(on)),
             lambda on: fg.bernoulli(fg.full((6,), 0.5).to(on)),
             lambda on: fg.multinomial(fg.asarray([0.2, 0.5, 0.3]).to(on), 2),
             lambda on: fg.multinomial(fg.asarray([0.2, 0.5, 0.3]).to(on), 4, replacement=True)]
    for draw in draws:
        fg.manual_seed(1)
        want = draw("cpu")
        fg.manual_seed(1)
        got = draw("gpu")
        assert got.device.kind == "gpu"
        np.testing.assert_allclose(got.to("cpu").numpy(), want.numpy(), rtol=1e-6)


def test_new_layers_on_the_gpu_match_the_cpu() -> None:
    """Layers that draw or keep statistics, built and run on the GPU after the same seed:
    the CPU's parameters and outputs."""
    nn = fg.nn
    x = fg.asarray(np.random.default_rng(4).standard_normal((2, 3, 9, 9)).astype(np.float32))
    makers = [lambda on: nn.FractionalMaxPool2d(2, output_size=(5, 4)),
              lambda on: nn.InstanceNorm2d(3, affine=True, track_running_stats=True, device=on),
              lambda on: nn.Conv2d(3, 2, 3, device=on)]
    for make in makers:
        outs = []
        for on in ("cpu", "gpu"):
            fg.manual_seed(7)
            layer = make(on)
            outs.append(layer(x.to(on)))
            outs.append(layer(x.to(on)))  # (a second call: new windows, updated statistics)
        for want, got in zip(outs[:2], outs[2:]):
            assert got.device.kind == "gpu"
            np.testing.assert_allclose(got.to("cpu").numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    fg.manual_seed(2)
    bag = nn.EmbeddingBag(10, 3, mode="max")
    want = bag(fg.asarray([[1, 2], [4, 9]]))
    bag.to("gpu")
    np.testing.assert_allclose(bag(fg.asarray([[1, 2], [4, 9]]).to("gpu")).to("cpu").numpy(), want.numpy())


def test_compiled_draws_on_the_gpu() -> None:
    """A compiled function that draws (dropout) takes its fresh key on its arrays' device:
    masks on the GPU, new ones each call."""
    drop = fg.compile(lambda v: fg.nn.functional.dropout(v, 0.5))
    x = fg.ones(64).to("gpu")
    first, second = drop(x), drop(x)
    assert first.device.kind == second.device.kind == "gpu"
    assert set(first.to("cpu").tolist()) <= {0.0, 2.0}
    assert first.to("cpu").tolist() != second.to("cpu").tolist()
