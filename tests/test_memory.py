"""fg.memory counts live buffer bytes per device: views add nothing, freed
arrays give their bytes back, and the peak is tracked."""

from __future__ import annotations

import gc

import funcgrad as fg


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
    assert fg.memory.reserved("cpu") == 0
    fg.memory.empty_cache("cpu")


def test_eager_loop_keeps_memory_flat() -> None:
    x = fg.ones((64, 64))
    gc.collect()
    before = fg.memory.allocated()
    for _ in range(200):
        y = fg.tanh(x @ x * 0.01 + 1.0).sum()
    del y
    gc.collect()
    assert fg.memory.allocated() == before
