"""``fg.utils.data``: datasets, samplers and ``DataLoader`` against slicing by hand, PyTorch's
semantics (lengths, splits, the last batch), reproducible shuffles, and worker processes."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)

X = fg.asarray(np.arange(40.0, dtype=np.float32).reshape(20, 2))
Y = fg.arange(20)


class Squares(Dataset):
    """A map-style dataset defined at module level (worker processes import it)."""

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> dict:
        info = get_worker_info()
        return {"x": np.float32(i), "y": i * i, "worker": -1 if info is None else info.id}


class Countdown(IterableDataset):
    def __iter__(self):
        return iter(range(7, 0, -1))


def test_batches_are_the_slices_in_order() -> None:
    batches = list(DataLoader(TensorDataset(X, Y), batch_size=6))
    assert [len(b[1]) for b in batches] == [6, 6, 6, 2]
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), X.numpy())
    assert len(DataLoader(TensorDataset(X, Y), batch_size=6, drop_last=True)) == 3
    assert len(DataLoader(TensorDataset(X, Y), batch_size=6)) == 4


def test_shuffles_are_permutations_reproducible_from_the_seed() -> None:
    loader = DataLoader(TensorDataset(X, Y), batch_size=5, shuffle=True)
    fg.manual_seed(3)
    first = np.concatenate([yb.numpy() for _, yb in loader])
    second = np.concatenate([yb.numpy() for _, yb in loader])
    assert sorted(first.tolist()) == list(range(20)) and first.tolist() != second.tolist()  # a new order each epoch
    fg.manual_seed(3)
    assert np.concatenate([yb.numpy() for _, yb in loader]).tolist() == first.tolist()
    g1, g2 = fg.Generator().manual_seed(1), fg.Generator().manual_seed(1)
    a = [yb.tolist() for _, yb in DataLoader(TensorDataset(X, Y), batch_size=5, shuffle=True, generator=g1)]
    b = [yb.tolist() for _, yb in DataLoader(TensorDataset(X, Y), batch_size=5, shuffle=True, generator=g2)]
    assert a == b


def test_datasets_and_samplers() -> None:
    ds = TensorDataset(X, Y)
    assert len(Subset(ds, [3, 1])) == 2 and Subset(ds, [3, 1])[1][1].item() == 1
    both = ConcatDataset([ds, Subset(ds, [0])])
    assert len(both) == 21 and both[20][1].item() == 0 and (ds + ds)[25][1].item() == 5
    parts = random_split(ds, [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [10, 6, 4]
    assert sorted(i for p in parts for i in p.indices) == list(range(20))
    assert [len(p) for p in random_split(ds, [15, 5])] == [15, 5]
    with pytest.raises(fg.ArgumentValueError, match="add up"):
        random_split(ds, [10, 5])
    assert list(SequentialSampler(ds)) == list(range(20))
    assert sorted(RandomSampler(ds)) == list(range(20)) and len(list(RandomSampler(ds, True, 50))) == 50
    assert sorted(SubsetRandomSampler([4, 7, 9])) == [4, 7, 9]
    drawn = list(WeightedRandomSampler([0.0, 1.0, 0.0], 30))
    assert drawn == [1] * 30
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(BatchSampler(range(7), 3, drop_last=True)) == 2
    loader = DataLoader(ds, batch_sampler=BatchSampler(range(4), 2, False))
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3]]


def test_collate_and_streams() -> None:
    batch = default_collate([{"a": (np.ones(2), 1.5), "s": "x"}, {"a": (np.zeros(2), 2.5), "s": "y"}])
    assert batch["a"][0].shape == (2, 2) and batch["a"][1].tolist() == [1.5, 2.5] and batch["s"] == ["x", "y"]
    assert [b.tolist() for b in DataLoader(Countdown(), batch_size=3)] == [[7, 6, 5], [4, 3, 2], [1]]
    assert [b.tolist() for b in DataLoader(Countdown(), batch_size=3, drop_last=True)] == [[7, 6, 5], [4, 3, 2]]
    assert [x for x in DataLoader(Squares(), batch_size=None)][2]["y"] == 4  # batch_size=None: samples
    with pytest.raises(fg.ArgumentValueError, match="sampler or shuffle"):
        DataLoader(Squares(), shuffle=True, sampler=SequentialSampler(Squares()))
    with pytest.raises(fg.ArgumentTypeError, match="collate_fn"):
        default_collate([object(), object()])


def test_worker_processes_give_the_same_batches_in_order() -> None:
    plain = [b["y"].tolist() for b in DataLoader(Squares(), batch_size=3)]
    loader = DataLoader(Squares(), batch_size=3, num_workers=2, persistent_workers=True)
    for _ in range(2):  # two epochs on the same workers
        batches = list(loader)
        assert [b["y"].tolist() for b in batches] == plain
        assert all(w >= 0 for b in batches for w in b["worker"].tolist())  # fetched in workers


def test_matches_pytorch_lengths_and_splits() -> None:
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(20))
    for batch_size, drop_last in [(6, False), (6, True), (5, False), (7, True)]:
        assert len(DataLoader(TensorDataset(Y), batch_size=batch_size, drop_last=drop_last)) == len(
            torch.utils.data.DataLoader(tds, batch_size=batch_size, drop_last=drop_last))
    fractions = [0.45, 0.35, 0.2]
    assert [len(p) for p in random_split(TensorDataset(Y), fractions)] == [
        len(p) for p in torch.utils.data.random_split(tds, fractions)]


@pytest.mark.parametrize("n,replicas", [(10, 3), (7, 2), (2, 4), (12, 4), (1, 3)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_pytorch(n: int, replicas: int, drop_last: bool) -> None:
    """Without shuffling, every rank's indices equal PyTorch's (padding and drop_last); with
    it, the ranks together cover the (padded) dataset, the same order on every rank per
    epoch, a new order for a new epoch."""
    torch = pytest.importorskip("torch")
    from funcgrad.utils.data import DistributedSampler

    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    samplers = [DistributedSampler(data, replicas, r, seed=3, drop_last=drop_last) for r in range(replicas)]
    first = [list(s) for s in samplers]
    covered = sorted(i for part in first for i in part)
    assert set(covered) <= set(data) and len(covered) == samplers[0].total_size
    if not drop_last:
        assert set(covered) == set(data)
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first or n <= 2
    assert [list(s) for s in samplers] == [list(s) for s in samplers]  # (deterministic)


def test_distributed_sampler_arguments() -> None:
    import types

    from funcgrad.backends import process_group
    from funcgrad.utils.data import DistributedSampler

    saved = process_group.joined()
    try:
        process_group.leave()
        with pytest.raises(fg.ArgumentValueError, match="no process group.*or pass num_replicas= and rank="):
            DistributedSampler(range(4))
        process_group.join(types.SimpleNamespace(size=3, rank=1))  # PyTorch's defaults: the group's
        s = DistributedSampler(range(10), shuffle=False)
        assert (s.num_replicas, s.rank) == (3, 1) and list(s) == [1, 4, 7, 0]
        assert DistributedSampler(range(10), rank=2).rank == 2
    finally:
        process_group.leave()
        if saved is not None:
            process_group.join(saved)
    with pytest.raises(fg.ArgumentValueError, match=r"invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), 2, 2)
