"""``fg.utils.data``: datasets, samplers and ``DataLoader`` with PyTorch's semantics.

A dataset gives samples by index (``Dataset``) or by iteration (``IterableDataset``); a
sampler gives the order of indices; ``DataLoader`` groups them into batches and collates
each batch into funcgrad arrays (``default_collate``). Shuffling draws from an
``fg.Generator`` (the default one unless ``generator=`` is given), so ``fg.manual_seed``
makes the order reproducible. With ``num_workers > 0`` worker processes fetch and collate
batches, in order: forked on Linux, as PyTorch's are (so scripts need no ``__main__``
guard), and spawned elsewhere (the dataset pickled into them). A worker that dies raises
at once.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from .. import ops
from ..array import ArrayBase
from ..backends import process_group
from ..errors import ArgumentTypeError, ArgumentValueError
from ..primitives.checks import as_int
from ..random.generator import Generator, manual_seed, multinomial, random_seed, randperm
from ..random.generator import randint as _randint

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedSampler", "DataLoader", "default_collate", "default_convert", "get_worker_info"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i`` and ``len(dataset)`` their number.

    Example:
        >>> class Squares(fg.utils.data.Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return i * i
        >>> [Squares()[i] for i in range(4)], len(Squares())
        ([0, 1, 4, 9], 4)
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iterating it (a stream): ``DataLoader`` batches what it yields.

    Example:
        >>> class Count(fg.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(5))
        >>> [b.tolist() for b in fg.utils.data.DataLoader(Count(), batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def __getitem__(self, index: int) -> Any:
        raise TypeError("an IterableDataset is read by iterating it, not by index")


class TensorDataset(Dataset):
    """Samples ``(a[i], b[i], ...)`` from arrays of one length (their first axis).

    Example:
        >>> ds = fg.utils.data.TensorDataset(fg.arange(4), fg.arange(4) * 10)
        >>> len(ds), [v.item() for v in ds[2]]
        (4, [2, 20])
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ArgumentValueError("TensorDataset: give at least one array")
        self.tensors = tuple(t if isinstance(t, ArrayBase) else ops.asarray(t) for t in tensors)
        lengths = {t.shape[0] for t in self.tensors}
        if len(lengths) != 1:
            raise ArgumentValueError(f"TensorDataset: arrays of different lengths {[t.shape[0] for t in self.tensors]}")

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Example:
        >>> ds = fg.utils.data.TensorDataset(fg.arange(4))
        >>> [s[0].item() for s in fg.utils.data.Subset(ds, [3, 1])]
        [3, 1]
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after another.

    Example:
        >>> ds = fg.utils.data.TensorDataset(fg.arange(4))
        >>> both = fg.utils.data.ConcatDataset([ds, ds])
        >>> len(both), both[5][0].item()
        (8, 1)
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset: index {index} is out of range for {len(self)} samples")
        k = next(i for i, end in enumerate(self.cumulative_sizes) if index < end)
        return self.datasets[k][index - (self.cumulative_sizes[k - 1] if k else 0)]


def random_split(dataset: Dataset, lengths: Sequence[float], generator: Generator | None = None) -> list[Subset]:
    """Non-overlapping random subsets of the given lengths (or fractions of the whole, the
    remainder spread one by one from the first, as PyTorch does).

    Example:
        >>> a, b = fg.utils.data.random_split(range(10), [7, 3], generator=fg.Generator().manual_seed(0))
        >>> list(a.indices), list(b.indices)  # (torch.utils.data.random_split's, from the same seed)
        ([4, 1, 7, 5, 3, 9, 0], [8, 6, 2])
    """
    n = len(dataset)
    if all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1.0) and sum(lengths) != n:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        sizes = [int(f) for f in lengths]
    if sum(sizes) != n:
        raise ArgumentValueError(f"random_split: lengths {list(lengths)} do not add up to the {n} samples")
    order = randperm(n, generator=generator).tolist()
    bounds = list(itertools.accumulate(sizes))
    return [Subset(dataset, order[end - size:end]) for size, end in zip(sizes, bounds)]


class Sampler:
    """An order of dataset indices (iterate it).

    Example:
        >>> class Backwards(fg.utils.data.Sampler):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(self.n - 1, -1, -1))
        ...     def __len__(self):
        ...         return self.n
        >>> [b.tolist() for b in fg.utils.data.DataLoader(range(4), batch_size=2, sampler=Backwards(4))]
        [[3, 2], [1, 0]]
    """

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len - 1``.

    Example:
        >>> list(fg.utils.data.SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch (or ``num_samples`` draws with replacement).

    Example:
        >>> list(fg.utils.data.RandomSampler(range(5), generator=fg.Generator().manual_seed(0)))  # (PyTorch's order)
        [4, 0, 1, 3, 2]
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples <= 0):
            raise ArgumentValueError(f"RandomSampler: num_samples must be a positive int, got {num_samples!r}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        """PyTorch's order: without a generator of its own, a new one seeded from the global
        generator when the pass starts; whole permutations, then part of one more."""
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else Generator().manual_seed(random_seed())
        if self.replacement:
            yield from _randint(0, n, (self.num_samples,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch.

    Example:
        >>> list(fg.utils.data.SubsetRandomSampler([10, 20, 30], generator=fg.Generator().manual_seed(0)))
        [30, 10, 20]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        yield from (self.indices[i] for i in randperm(len(self.indices), generator=self.generator).tolist())

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Example:
        >>> g = fg.Generator().manual_seed(0)
        >>> list(fg.utils.data.WeightedRandomSampler([1.0, 1.0, 0.0], 6, generator=g))  # (PyTorch's draws)
        [1, 1, 0, 1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        self.weights = ops.asarray(np.asarray(weights, np.float64))
        self.num_samples, self.replacement, self.generator = int(num_samples), replacement, generator

    def __iter__(self) -> Iterator[int]:
        return iter(multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist())

    def __len__(self) -> int:
        return self.num_samples


class DistributedSampler(Sampler):
    """PyTorch's ``DistributedSampler``: rank ``rank``'s share of the dataset's indices, every
    rank the same number (padded by repeating the first indices, or cut with ``drop_last``),
    shuffled by ``seed + epoch`` (call ``set_epoch`` each epoch) identically on every rank.

    Example:
        >>> S = fg.utils.data
        >>> [list(S.DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
        [[0, 2, 4], [1, 3, 0]]
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:  # PyTorch's defaults: the process group's
            group = process_group.joined()
            if group is None:
                raise ArgumentValueError("DistributedSampler: no process group to take the world size and rank from; "
                                         "call fg.distributed.init_process_group() first, or pass num_replicas= "
                                         "and rank=")
            num_replicas = group.size if num_replicas is None else num_replicas
            rank = group.rank if rank is None else rank
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or num_replicas < 1:
            raise ArgumentValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ArgumentValueError(f"DistributedSampler: invalid rank {rank!r}, rank should be in the interval "
                                     f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = bool(shuffle), int(seed), bool(drop_last), 0
        n = len(dataset)
        if self.drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = randperm(n, generator=Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next pass shuffles for (the same order on every rank)."""
        self.epoch = int(epoch)


class BatchSampler(Sampler):
    """Batches of ``batch_size`` indices from ``sampler`` (the last one shorter unless ``drop_last``).

    Example:
        >>> S = fg.utils.data
        >>> list(S.BatchSampler(range(5), 2, drop_last=False)), list(S.BatchSampler(range(5), 2, drop_last=True))
        ([[0, 1], [2, 3], [4]], [[0, 1], [2, 3]])
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ArgumentValueError(f"BatchSampler: batch_size must be a positive int, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def default_collate(batch: Sequence[Any]) -> Any:
    """A list of samples as one batch: arrays and numbers stacked into funcgrad arrays along a
    new first axis; tuples, lists and dicts collated field by field; strings kept as lists.

    Example:
        >>> import numpy as np
        >>> labels, images = fg.utils.data.default_collate([(1, np.array([1.0, 2.0])), (2, np.array([3.0, 4.0]))])
        >>> labels.tolist(), images.tolist()
        ([1, 2], [[1.0, 2.0], [3.0, 4.0]])
    """
    first = batch[0]
    if isinstance(first, ArrayBase):
        return ops.stack(list(batch))
    if isinstance(first, np.ndarray) or isinstance(first, (np.generic, bool, int, float)):
        return ops.asarray(np.stack([np.asarray(b) for b in batch]))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(first, (tuple, list)):
        lengths = {len(b) for b in batch}
        if len(lengths) != 1:
            raise ArgumentValueError("default_collate: samples of different lengths in one batch")
        return [default_collate(list(field)) for field in zip(*batch)] if isinstance(first, list) else \
            tuple(default_collate(list(field)) for field in zip(*batch))
    raise ArgumentTypeError(f"default_collate: cannot batch samples of type {type(first).__name__}; "
                            "pass collate_fn=")


def default_convert(sample: Any) -> Any:
    """One sample as ``DataLoader(batch_size=None)`` yields it (PyTorch's ``default_convert``):
    NumPy arrays become funcgrad arrays, copied as ``fg.asarray`` copies (so a later write
    to the dataset's NumPy array never reaches a sample already handed out); tuples, lists
    and dicts are converted field by field; anything else is left as it is.

    Example:
        >>> import numpy as np
        >>> fg.utils.data.default_convert({"a": np.array([1.0, 2.0])})
        {'a': Array([1., 2.], dtype=float64, device=cpu)}
    """
    if isinstance(sample, np.ndarray):
        return ops.asarray(sample)
    if isinstance(sample, dict):
        return {k: default_convert(v) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):  # a namedtuple
        return type(sample)(*(default_convert(v) for v in sample))
    if isinstance(sample, (tuple, list)):
        return type(sample)(default_convert(v) for v in sample)
    return sample


class _WorkerInfo:
    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset


_WORKER: list[Any] = [None]  # in a worker process: (dataset, collate_fn, info)


def get_worker_info() -> _WorkerInfo | None:
    """In a ``DataLoader`` worker process, its id, the number of workers, its seed and its copy
    of the dataset; ``None`` in the main process.

    Example:
        >>> fg.utils.data.get_worker_info() is None  # (the main process)
        True
    """
    return _WORKER[0][2] if _WORKER[0] is not None else None


def _worker_context() -> Any:
    """How workers start: forked where the platform forks (Linux, as PyTorch's workers are),
    so a script without an ``if __name__ == "__main__"`` guard works and the dataset is not
    pickled; spawned elsewhere (macOS and Windows, whose fork is unsafe or absent)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _start_worker(dataset: Any, collate_fn: Any, num_workers: int, seed: int, init: Any) -> None:
    identity = multiprocessing.current_process()._identity
    worker_id = identity[0] - 1 if identity else 0
    info = _WorkerInfo(worker_id % num_workers, num_workers, seed + worker_id, dataset)
    _WORKER[0] = (dataset, collate_fn, info)
    manual_seed(seed + worker_id)
    if init is not None:
        init(info.id)


def _fetch(indices: list[int]) -> Any:
    dataset, collate_fn, _ = _WORKER[0]
    return collate_fn([dataset[i] for i in indices])


class DataLoader:
    """Batches of a dataset, PyTorch's ``DataLoader``: ``batch_size``, ``shuffle``,
    ``sampler``/``batch_sampler``, ``drop_last``, ``collate_fn``, ``generator``,
    ``num_workers`` (worker processes), ``persistent_workers``, ``worker_init_fn``.
    (``pin_memory`` is accepted and does nothing: there is no pinned host memory here.)

    Example:
        >>> ds = fg.utils.data.TensorDataset(fg.arange(4), fg.arange(4) * 10)
        >>> [(x.tolist(), y.tolist()) for x, y in fg.utils.data.DataLoader(ds, batch_size=2)]
        [([0, 1], [0, 10]), ([2, 3], [20, 30])]
        >>> g = fg.Generator().manual_seed(0)
        >>> [b.tolist() for b in fg.utils.data.DataLoader(range(6), batch_size=2, shuffle=True, generator=g)]
        [[5, 1], [0, 3], [2, 4]]
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool = False, sampler: Any = None,
                 batch_sampler: Any = None, num_workers: int = 0, collate_fn: Callable[..., Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False) -> None:
        if not (hasattr(dataset, "__getitem__") or hasattr(dataset, "__iter__")):
            raise ArgumentTypeError(f"DataLoader: dataset must be indexable (a Dataset, a list) or iterable (an "
                                    f"IterableDataset), got {type(dataset).__name__} {dataset!r}")
        if batch_size is not None:
            batch_size = as_int("DataLoader", batch_size, "batch_size", minimum=1)
        num_workers = as_int("DataLoader", num_workers, "num_workers", minimum=None)
        if num_workers < 0:
            raise ArgumentValueError(f"DataLoader: num_workers must be at least 0, got {num_workers}")
        if persistent_workers and num_workers == 0:
            raise ArgumentValueError("DataLoader: persistent_workers needs num_workers > 0")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ArgumentValueError("DataLoader: batch_sampler excludes batch_size, shuffle, sampler and drop_last")
        if sampler is not None and shuffle:
            raise ArgumentValueError("DataLoader: give sampler or shuffle=True, not both")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.persistent_workers, self.timeout = num_workers, persistent_workers, timeout
        self.worker_init_fn, self.generator = worker_init_fn, generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None else default_convert)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ArgumentValueError("DataLoader: an IterableDataset takes no shuffle, sampler or batch_sampler")
            self.sampler = self.batch_sampler = None
        else:
            self.sampler = sampler if sampler is not None else (
                RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset))
            self.batch_sampler = batch_sampler if batch_sampler is not None else (
                BatchSampler(self.sampler, batch_size, drop_last) if batch_size is not None else None)
        self._pool: ProcessPoolExecutor | None = None

    def __len__(self) -> int:
        if self._iterable:
            raise TypeError("len() of a DataLoader over an IterableDataset")
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)  # type: ignore

    def __iter__(self) -> Iterator[Any]:
        # each pass takes the workers' base seed first, as PyTorch's iterators do; the
        # sampler draws when the first batch is asked for
        base_seed = random_seed(self.generator)
        if self._iterable:
            return self._iterate_stream()
        batches = iter(self.batch_sampler) if self.batch_sampler is not None else ([i] for i in self.sampler)  # type: ignore[union-attr]
        if self.num_workers == 0:
            return (self.collate_fn([self.dataset[i] for i in batch]) if self.batch_sampler is not None
                    else self.collate_fn(self.dataset[batch[0]]) for batch in batches)
        return self._iterate_workers(batches, base_seed)

    def _iterate_stream(self) -> Iterator[Any]:
        items = iter(self.dataset)
        if self.batch_size is None:
            yield from (self.collate_fn(x) for x in items)
            return
        while True:
            batch = list(itertools.islice(items, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def _iterate_workers(self, batches: Iterator[list[int]], seed: int) -> Iterator[Any]:
        pool = self._pool
        if pool is None:
            pool = ProcessPoolExecutor(self.num_workers, mp_context=_worker_context(),
                                       initializer=_start_worker,
                                       initargs=(self.dataset, self.collate_fn, self.num_workers, seed,
                                                 self.worker_init_fn))
        try:
            yield from pool.map(_fetch, batches, timeout=self.timeout or None)
        except BrokenProcessPool as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            pool = None
            self._pool = None
            raise RuntimeError(f"DataLoader: a worker process exited unexpectedly ({exc}); run with num_workers=0 to "
                               "see the error in this process") from None
        finally:
            if pool is not None and self.persistent_workers:
                self._pool = pool
            elif pool is not None:
                pool.shutdown()

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False)  # type: ignore[union-attr]
