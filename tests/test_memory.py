"""fg.memory counts live buffer bytes per device: views add nothing, freed
arrays give their bytes back, and the peak is tracked."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.backends import heap
from funcgrad.testing import peak_memory


def test_allocation_views_and_release() -> None:
    gc.collect()
    base = fg.memory.allocated()
    x = fg.zeros((256, 256))  # 256 KiB of float32
    assert fg.memory.allocated() - base == 256 * 256 * 4
    views = [x.T, x[::2], x.reshape(-1), fg.broadcast_to(x, (2, 256, 256)), x.T.T]
    assert fg.memory.allocated() - base == 256 * 256 * 4
    y = x + 1.0
    assert fg.memory.allocated() - base == 2 * 256 * 256 * 4
    del x, views, y
    gc.collect()
    assert fg.memory.allocated() == base


def test_views_keep_their_buffer_alive() -> None:
    gc.collect()
    base = fg.memory.allocated()
    v = fg.ones((100, 100))[0]
    assert fg.memory.allocated() - base == 100 * 100 * 4
    del v
    gc.collect()
    assert fg.memory.allocated() == base


def test_peak_tracking() -> None:
    gc.collect()
    fg.memory.reset_peak()
    start = fg.memory.max_allocated()
    t = fg.ones((1000,), fg.float64) * 2.0
    del t
    gc.collect()
    assert fg.memory.max_allocated() - start >= 2 * 8000
    fg.memory.reset_peak()
    assert fg.memory.max_allocated() == fg.memory.allocated()


def _resident() -> int:
    """The process's resident memory in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(fg.config.cpu_heap_cache <= 0 or not heap.keep_freed(fg.config.cpu_heap_cache)
                    or not os.path.exists("/proc/self/statm"), reason="the C library is not glibc on Linux")
def test_cpu_heap_keeps_freed_memory_until_emptied() -> None:
    """Freed large arrays stay resident for the next ones (no page faults), and
    ``empty_cache("cpu")`` hands them back. Measured as resident memory: the heap's free
    count (``reserved``) also counts free chunks whose pages went back to the kernel."""
    assert heap.keep_freed(fg.config.cpu_heap_cache)  # (the switch's setting, whatever ran before)
    fragments = [np.ones(1 << 20) for _ in range(12)]
    pinned = np.ones(1 << 10)  # free chunks below the heap's top, as a long run leaves them
    del fragments
    fg.memory.empty_cache("cpu")
    before = _resident()
    blocks = [np.ones(1 << 20) for _ in range(8)]  # 8 MiB each: above glibc's default mmap threshold
    del blocks
    kept = _resident() - before
    assert kept >= 32 << 20, f"the heap kept {kept} bytes of 64 MiB freed"
    fg.memory.empty_cache("cpu")
    assert _resident() < before + (32 << 20)
    del pinned


def test_cpu_heap_cache_switch() -> None:
    kept = fg.config.cpu_heap_cache
    try:
        fg.config.update("cpu_heap_cache", 0)
        assert fg.config.cpu_heap_cache == 0
    finally:
        fg.config.cpu_heap_cache = kept
    with pytest.raises(ValueError, match="cpu_heap_cache"):
        fg.config.cpu_heap_cache = -1
    for text in ("1G", "-5"):
        with pytest.raises(ValueError, match=r"FUNCGRAD_CPU_HEAP_CACHE='.*' is not a byte count"):
            _config_read_with(text)


def _config_read_with(text: str) -> None:
    """A fresh ``fg.config`` read with ``FUNCGRAD_CPU_HEAP_CACHE=text`` (nothing follows it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUNCGRAD_CPU_HEAP_CACHE", text)
        type(fg.config)()


def test_eager_loop_keeps_memory_flat() -> None:
    x = fg.ones((64, 64))
    gc.collect()
    before = fg.memory.allocated()
    for _ in range(200):
        y = fg.tanh(x @ x * 0.01 + 1.0).sum()
    del y
    gc.collect()
    assert fg.memory.allocated() == before


# ---- the peak of a whole gradient computation --------------------------------------------

DEPTH, WIDTH, BATCH = 16, 256, 128  # large enough that Python objects are noise beside the arrays


def _mlp():
    import numpy as np

    rng = np.random.default_rng(0)
    ws = [fg.asarray((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)) for _ in range(DEPTH)]
    return ws, fg.asarray(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))


def _loss(ws, v, group):
    def layers(chunk, h):
        for w in chunk:
            h = fg.tanh(h @ w)
        return h

    if group is None:
        return layers(ws, v).sum()
    for i in range(0, DEPTH, group):
        v = fg.checkpoint(lambda u, c=ws[i:i + group]: layers(c, u))(v)
    return v.sum()


def _runs(ws, x, group):
    def by_grad():
        return fg.grad(lambda v: _loss(ws, v, group))(x)

    def by_tape():
        v = x.detach().requires_grad_()
        _loss(ws, v, group).backward()
        return v.grad

    def by_vjp_of_weights():
        return fg.grad(lambda w: _loss(w, x, group))(ws)

    return {"grad": by_grad, "tape": by_tape, "weights": by_vjp_of_weights}


def test_checkpointing_lowers_the_peak_of_the_whole_gradient() -> None:
    """sqrt(L) segments of a 16-layer MLP: the peak of the gradient computation (forward and
    backward, which is what must fit in memory) is at most 0.6x that without checkpointing,
    through fg.grad and through the tape."""
    ws, x = _mlp()
    plain, segmented = _runs(ws, x, None), _runs(ws, x, 4)
    for how in ("grad", "tape"):
        without, _ = peak_memory(plain[how])
        with_ckpt, _ = peak_memory(segmented[how])
        assert with_ckpt <= 0.6 * without, (how, with_ckpt, without)


def test_reported_peak_agrees_with_tracemalloc() -> None:
    """fg.memory.max_allocated is the real high-water mark: within 10% of tracemalloc's (NumPy
    reports its buffers to it) for eager code, replayed backward plans (whose peak is worked
    out from the program) and checkpointed segments."""
    ws, x = _mlp()
    for group in (None, 4):
        for how, run in _runs(ws, x, group).items():
            peak, traced = peak_memory(run)
            assert abs(peak - traced) <= 0.1 * traced, (group, how, peak, traced)
