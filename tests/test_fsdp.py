"""Fully sharded data parallel (``funcgrad.distributed.fsdp``): two ranks under ``mpiexec``
against one process on the concatenated batches (Adam, float64, with and without
``reshard_after_forward``), mixed precision against the same policy on one rank, the
compiled step, the parameters freed between forward and backward, gradient clipping over shards, the full state dict both ways; the same
over NCCL on the stand-in GPU; the blocks' assignment and padding as a property; a world of one as the model itself."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.distributed.fsdp import block_of, block_size, full_state_dict, fully_shard

from .test_distributed import NCCL_PRELUDE, assert_ranks_ok, run_ranks

# The model, the data and the one-process reference both scripts train against.
MODEL = r"""
from funcgrad.distributed.fsdp import (MixedPrecisionPolicy, clip_grad_norm_, full_state_dict, fully_shard,
                                       load_full_state_dict)


def make():
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Linear(5, 7, dtype=fg.float64), fg.nn.Tanh(), fg.nn.Linear(7, 3, dtype=fg.float64))


def shard(model, **options):
    for layer in model:
        if isinstance(layer, fg.nn.Linear):
            fully_shard(layer, **options)
    return fully_shard(model, **options)


rng = np.random.default_rng(0)
data = [(rng.standard_normal((8, 5)), rng.standard_normal((8, 3))) for _ in range(12)]
ref = make()
ropt = fg.optim.Adam(ref.parameters(), lr=0.01)
for x, y in data:
    ropt.zero_grad()
    ((ref(fg.asarray(x)) - fg.asarray(y)) ** 2).mean().backward()
    ropt.step()
"""

SCRIPT = r"""
import gc, json, os
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
per_rank = 8 // n
""" + MODEL + r"""

def mine(a):
    return fg.asarray(a[per_rank * r:per_rank * (r + 1)])


want = ref.state_dict()
total = sum(p.size for p in ref.parameters())
for reshard in (True, False):
    model = shard(make(), reshard_after_forward=reshard)
    assert type(model).__name__ == "FSDPSequential"
    assert sum(p.size for p in model.parameters()) <= (0.6 if n == 2 else 1) * total  # (1/2 of each, and padding)
    opt = fg.optim.Adam(model.parameters(), lr=0.01)
    for x, y in data:
        opt.zero_grad()
        ((model(mine(x)) - mine(y)) ** 2).mean().backward()
        opt.step()
    full = full_state_dict(model)
    assert set(full) == set(want)
    for k in want:
        assert np.allclose(full[k].numpy(), want[k].numpy(), rtol=1e-9, atol=1e-12), (k, reshard)
    fresh = shard(make())
    load_full_state_dict(fresh, full)
    assert all(np.array_equal(full_state_dict(fresh)[k].numpy(), full[k].numpy()) for k in full)

# resharding after forward: between forward and backward a rank holds its blocks and the
# activations, not the whole parameters; the backward pass gathers them again, to the same gradients
big = lambda: fg.nn.Sequential(fg.nn.Linear(300, 300, dtype=fg.float64), fg.nn.Tanh(),
                               fg.nn.Linear(300, 1, dtype=fg.float64))
xb = fg.asarray(rng.standard_normal((2, 300)))
grads = {}
for reshard in (True, False):
    fg.manual_seed(1)
    model = shard(big(), reshard_after_forward=reshard)
    stats = xb.device.stats
    gc.collect()  # (the last model's modules and states refer to each other)
    before = stats.allocated
    loss = (model(xb) ** 2).sum()
    held = stats.allocated - before
    whole = 300 * 300 * 8
    assert (held > whole) if n == 2 and not reshard else (held < whole / 4), (reshard, held, whole)  # (one rank gathers nothing)
    loss.backward()
    grads[reshard] = [p.grad.numpy() for p in model.parameters()]
    del loss
assert all(np.array_equal(a, b) for a, b in zip(grads[True], grads[False]))

# gradient clipping over shards: the norm of the whole gradient
model, ref = shard(make()), make()
x, y = data[0]
((model(mine(x)) - mine(y)) ** 2).mean().backward()
((ref(fg.asarray(x)) - fg.asarray(y)) ** 2).mean().backward()
norm = clip_grad_norm_(model, 0.1)
want_norm = np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in ref.parameters()))
assert np.isclose(norm.item(), want_norm, rtol=1e-10), (norm.item(), want_norm)
norm_after = np.sqrt(dist.all_reduce(fg.asarray(sum(float((p.grad.numpy() ** 2).sum()) for p in model.parameters()))).item())
assert np.isclose(norm_after, 0.1, rtol=1e-5), norm_after

# the compiled step: the same as the eager one
eager, compiled_model = shard(make()), shard(make())
compiled = fg.compile(compiled_model)
opts = [fg.optim.Adam(m.parameters(), lr=0.01) for m in (eager, compiled_model)]
for x, y in data[:4]:
    for f, opt in zip((eager, compiled), opts):
        opt.zero_grad()
        ((f(mine(x)) - mine(y)) ** 2).mean().backward()
        opt.step()
a, b = full_state_dict(eager), full_state_dict(compiled_model)
assert all(np.allclose(a[k].numpy(), b[k].numpy(), rtol=1e-12, atol=1e-14) for k in a)

# mixed precision: parameters gathered in bfloat16, gradients reduced in float32
policy = MixedPrecisionPolicy(param_dtype=fg.bfloat16, reduce_dtype=fg.float32)
model = shard(make(), mp_policy=policy)
opt = fg.optim.Adam(model.parameters(), lr=0.01)
for x, y in data[:3]:
    opt.zero_grad()
    out = model(mine(x))
    assert out.dtype == fg.bfloat16
    ((out.astype(fg.float64) - mine(y)) ** 2).mean().backward()
    assert all(p.grad.dtype == fg.float64 for p in model.parameters())
    opt.step()
with open(os.path.join(os.environ["FG_RESULTS"], f"mp{n}-rank{r}.json"), "w") as f:
    json.dump({k: v.numpy().tolist() for k, v in full_state_dict(model).items()}, f)
print(f"rank {r}: ok")
"""


# The same training over NCCL on the stand-in GPU: the parameters' broadcast, gathers and
# reduce-scatters on GPU buffers, the state dict both ways and clipping over shards.
NCCL_SCRIPT = NCCL_PRELUDE + MODEL + r"""
model = shard(make().to("gpu"))
assert all(p.device.kind == "gpu" for p in model.parameters())
opt = fg.optim.Adam(model.parameters(), lr=0.01)
mine = lambda a: fg.asarray(a[4 * r:4 * r + 4]).to("gpu")
for x, y in data:
    opt.zero_grad()
    ((model(mine(x)) - mine(y)) ** 2).mean().backward()
    opt.step()
full, want = full_state_dict(model), ref.state_dict()
for k in want:
    assert full[k].device.kind == "gpu" and np.allclose(full[k].cpu().numpy(), want[k].numpy(), rtol=1e-9, atol=1e-12), k
fresh = shard(make().to("gpu"))
load_full_state_dict(fresh, want)  # (a state dict on the CPU)
assert all(np.array_equal(full_state_dict(fresh)[k].cpu().numpy(), want[k].numpy()) for k in want)
x, y = data[0]
((fresh(mine(x)) - mine(y)) ** 2).mean().backward()
norm = clip_grad_norm_(fresh, 1e-3)
assert norm.device.kind == "gpu" and norm.item() > 1e-3
assert {"broadcast", "allGather", "reduceScatter", "allReduce"} <= set(CALLS), CALLS
print(f"rank {r}: ok")
"""


def test_over_nccl_on_the_standin_gpu() -> None:
    """FSDP with NCCL's process group (stand-in NCCL, stand-in GPU) trains as one process does."""
    assert_ranks_ok(run_ranks(NCCL_SCRIPT))


def test_two_ranks_equal_one_process_on_the_concatenated_batches(tmp_path) -> None:
    assert_ranks_ok(run_ranks(SCRIPT, env={"FG_RESULTS": str(tmp_path)}))
    assert_ranks_ok(run_ranks(SCRIPT, n=1, env={"FG_RESULTS": str(tmp_path)}), n=1)
    two = [json.loads((tmp_path / f"mp2-rank{r}.json").read_text()) for r in (0, 1)]
    one = json.loads((tmp_path / "mp1-rank0.json").read_text())
    for k in one:  # the same policy on one rank: bfloat16 products, float32 sums in another order
        np.testing.assert_array_equal(two[0][k], two[1][k])
        np.testing.assert_allclose(two[0][k], one[k], rtol=1e-2, atol=1e-3, err_msg=k)


@given(st.integers(0, 40), st.integers(1, 6))
def test_each_rank_holds_one_padded_block(numel: int, ranks: int) -> None:
    whole = fg.arange(float(numel))
    blocks = [block_of(whole, ranks, r) for r in range(ranks)]
    size = block_size(numel, ranks)
    assert all(b.shape == (size,) for b in blocks) and size * ranks >= numel and (size - 1) * ranks < max(numel, 1)
    joined = np.concatenate([b.numpy() for b in blocks])
    np.testing.assert_array_equal(joined[:numel], whole.numpy())
    assert not joined[numel:].any()  # (the padding is zeros)


def test_a_world_of_one_is_the_model() -> None:
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(3, 2, dtype=fg.float64))
    want = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    fully_shard(model[0])
    fully_shard(model)
    x = fg.asarray(np.ones((4, 3)))
    model(x).sum().backward()
    assert [p.shape for p in model.parameters()] == [(6,), (2,)]
    assert model[0].weight.shape == (6,)  # (the block, outside forward)
    np.testing.assert_allclose(list(model.parameters())[0].grad.numpy(), np.full(6, 4.0))
    got = full_state_dict(model)
    assert all(np.array_equal(got[k].numpy(), want[k]) for k in want)
