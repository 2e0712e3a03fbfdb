"""``fg.shard_map`` over a mesh of ranks: each process runs the function on its block, and
``fg.lax`` collectives over a mesh axis go across that axis's ranks (JAX's ``shard_map``,
one rank per process, as PyTorch's process groups run).

* ``make_mesh((2, 2), ("data", "model"))``: the process group's ranks as an array of that
  shape, row-major; each axis gets a process group of the ranks along it (MPI's
  ``Comm.Split``, or over NCCL a communicator of its own), made while every rank calls
  ``make_mesh``.
* ``PartitionSpec`` (``P``): per dimension of an array, the mesh axis (or axes) it is split
  over, or ``None``. An axis a spec leaves out is one the array is *replicated* over.
* ``shard_map(f, mesh=, in_specs=, out_specs=)`` takes each rank's blocks and returns its
  blocks: ``f`` runs on them with the mesh's axes bound, so collectives find their ranks.

Derivatives are JAX's: the function is one program whose every output counts once. An
input replicated over an axis gets the sum of the cotangents of its copies on that axis's
ranks (the transpose of ``pvary``), and an output replicated over an axis (``P()``: the
same on every rank) passes each rank an equal share of its cotangent, so the collectives'
own rules (``psum``'s transpose is ``psum``) add the shares back up. On a mesh of one rank
``shard_map`` is the plain call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from . import tree as _tree
from .backends import process_group
from .errors import ArgumentTypeError, ArgumentValueError, ShapeError
from .primitives import axes as _axes
from .primitives.core import bind
from .transforms import custom_vjp
from .transforms.autodiff.api import as_array

__all__ = ["Mesh", "PartitionSpec", "P", "make_mesh", "shard_map"]


class PartitionSpec(tuple):  # type: ignore[type-arg]
    """Per dimension of an array: the mesh axis it is split over (a name), several (a
    tuple of names, the first the major), or ``None`` (not split). Dimensions past the
    spec's length are not split."""

    def __new__(cls, *entries: Any) -> PartitionSpec:
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return f"P({', '.join(map(repr, self))})"

    def names(self) -> tuple[Any, ...]:
        """Every mesh axis the spec splits over."""
        return tuple(n for e in self if e is not None for n in (e if isinstance(e, tuple) else (e,)))


P = PartitionSpec


class Mesh:
    """The ranks of the process group as an array with named axes (``make_mesh``)."""

    def __init__(self, ranks: np.ndarray, axis_names: tuple[Any, ...], groups: dict[Any, Any]) -> None:
        self.devices = ranks
        self.axis_names = axis_names
        self.shape = dict(zip(axis_names, ranks.shape))
        self._groups = groups

    @property
    def size(self) -> int:
        return int(self.devices.size)

    def group(self, name: Any) -> Any:
        """The process group of the ranks along axis ``name`` that share this rank's other
        coordinates (``None`` on a mesh of one rank)."""
        return self._groups.get(name)

    def __repr__(self) -> str:
        return f"Mesh({', '.join(f'{n!r}: {s}' for n, s in self.shape.items())})"


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[Any]) -> Mesh:
    """The process group's ranks as a mesh with named axes (JAX's ``jax.make_mesh``).

    Rank ``r`` sits at the row-major position ``r``. Every rank must call it, in the same
    order as the other collectives. Without a process group the mesh has one rank.

    Args:
        axis_shapes: the size of each axis; their product is the number of ranks.
        axis_names: a distinct name (any hashable) for each axis.

    Returns:
        The ``fg.sharding.Mesh``.

    Example:
        >>> fg.make_mesh((1,), ("data",))
        Mesh('data': 1)
    """
    shape, names = tuple(int(s) for s in axis_shapes), tuple(axis_names)
    if len(shape) != len(names) or len(set(names)) != len(names) or any(s < 1 for s in shape):
        raise ArgumentValueError(f"fg.make_mesh: axis shapes {shape} and names {names} must pair up one to one, "
                                 "with distinct names and sizes of at least 1")
    world = process_group.joined()
    size, rank = (world.size, world.rank) if world is not None else (1, 0)
    if math.prod(shape) != size:
        raise ArgumentValueError(f"fg.make_mesh: a mesh of shape {shape} has {math.prod(shape)} ranks, but the "
                                 f"process group has {size}")
    ranks = np.arange(size).reshape(shape)
    groups: dict[Any, Any] = {}
    if size > 1:
        where = np.unravel_index(rank, shape)
        for k, name in enumerate(names):
            others = tuple(c for j, c in enumerate(where) if j != k)
            color = int(np.ravel_multi_index(others, shape[:k] + shape[k + 1:])) if others else 0
            groups[name] = world.split(color, int(where[k]))
    return Mesh(ranks, names, groups)


def _prefix(what: str, specs: Any, tree_value: Any) -> list[PartitionSpec]:
    """One spec per leaf of ``tree_value``: ``specs`` matches a prefix of its structure."""
    try:
        found = _tree.broadcast_prefix(tuple(specs) if type(specs) is list else specs, tree_value)
    except ValueError as exc:
        raise ArgumentValueError(f"fg.shard_map: {what} {exc}") from None
    wrong = next((s for s in found if not isinstance(s, PartitionSpec)), P())
    if not isinstance(wrong, PartitionSpec):
        raise ArgumentTypeError(f"fg.shard_map: {what} must be PartitionSpecs (P(...)), got {wrong!r}")
    return found


def _check_spec(what: str, spec: PartitionSpec, mesh: Mesh, ndim: int) -> None:
    names = spec.names()
    unknown = [n for n in names if n not in mesh.shape]
    if unknown or len(set(names)) != len(names):
        problem = f"axes not in the mesh {unknown!r}" if unknown else "an axis twice"
        raise ArgumentValueError(f"fg.shard_map: {what} {spec!r} names {problem} ({mesh!r})")
    if len(spec) > ndim:
        raise ShapeError(f"fg.shard_map: {what} {spec!r} has {len(spec)} entries for an array of {ndim} dimension(s)")


def _axis_params(mesh: Mesh, name: Any) -> dict[str, Any]:
    group = mesh.group(name)
    named = {"axis_name": name, "size": mesh.shape[name]}
    return named if group is None else {**named, "group": group}


def _summed_over(axes: list[dict[str, Any]]) -> Callable[[Any], Any]:
    """Identity forward; the cotangent summed over ``axes``' ranks backward: the copies of a
    replicated input are one value, and each copy's use adds to its gradient."""
    @custom_vjp
    def copies(x: Any) -> Any:
        return x

    def fwd(x: Any) -> tuple[Any, None]:
        return x, None

    def bwd(_: None, g: Any) -> tuple[Any]:
        for axis in axes:
            g = bind(_axes.psum_p, g, **axis)
        return (g,)

    copies.defvjp(fwd, bwd)
    return copies  # type: ignore[no-any-return]


@functools.cache
def shared_over(count: int) -> Callable[[Any], Any]:
    """Identity forward; each rank an equal share of the cotangent backward: a value the
    same on ``count`` ranks is one value, counted once (``shard_map``'s replicated results;
    FSDP's gathered parameters, whose gradient is the mean over ranks). One function per
    count, made once: each new one would be traced again at its first call."""
    @custom_vjp
    def once(y: Any) -> Any:
        return y

    once.defvjp(lambda y: (y, None), lambda _, g: (g / count,))
    return once  # type: ignore[no-any-return]


@contextmanager
def _bound(mesh: Mesh) -> Iterator[None]:
    with ExitStack() as stack:
        for name in mesh.axis_names:
            stack.enter_context(_axes.binding(name, mesh.shape[name], mesh.group(name)))
        yield


def shard_map(f: Callable[..., Any], *, mesh: Mesh, in_specs: Any, out_specs: Any,
              check_vma: bool = True) -> Callable[..., Any]:
    """``f`` on each rank's blocks of its arguments, with ``mesh``'s axes bound for the
    ``fg.lax`` collectives inside it (JAX's ``shard_map``).

    Each process passes its own blocks and gets its own blocks back. The gradient of a
    replicated input is summed over the ranks that used it, as in JAX; on a mesh of one
    rank the call is the plain one.

    Args:
        f: the function of the blocks.
        mesh: the ``fg.sharding.Mesh`` (``fg.make_mesh``).
        in_specs: a ``PartitionSpec`` per argument (a pytree prefix), naming the mesh axes
            that split each dimension; axes it does not name replicate the argument.
        out_specs: the same for the outputs.
        check_vma: accepted for JAX's signature; replication is not checked.

    Returns:
        The mapped function.

    Example:
        >>> from funcgrad.sharding import PartitionSpec as P
        >>> mesh = fg.make_mesh((1,), ("data",))
        >>> f = fg.shard_map(lambda w, x: fg.lax.psum((w * x).sum(), "data"), mesh=mesh,
        ...                  in_specs=(P(), P("data")), out_specs=P())
        >>> f(fg.asarray([0.5, -1.0, 2.0]), fg.arange(3.0)).item()
        3.0
    """
    if not isinstance(mesh, Mesh):
        raise ArgumentTypeError(f"fg.shard_map: mesh must be an fg.sharding.Mesh (fg.make_mesh), got "
                                f"{type(mesh).__name__}")
    name = getattr(f, "__name__", "function")

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        specs = _prefix("in_specs", in_specs, args)
        leaves, tree = _tree.flatten(args)
        inputs = []
        for k, (x, spec) in enumerate(zip(leaves, specs)):
            x = as_array(x)
            _check_spec(f"in_specs[{k}]", spec, mesh, x.ndim)
            replicated = [n for n in mesh.axis_names if n not in spec.names() and mesh.shape[n] > 1]
            inputs.append(_summed_over([_axis_params(mesh, n) for n in replicated])(x) if replicated else x)
        with _bound(mesh):
            out = f(*_tree.unflatten(tree, inputs))
        out_leaves, out_tree = _tree.flatten(out)
        results = []
        for k, (y, spec) in enumerate(zip(out_leaves, _prefix("out_specs", out_specs, out))):
            y = as_array(y)
            _check_spec(f"out_specs[{k}] of {name}", spec, mesh, y.ndim)
            count = math.prod(mesh.shape[n] for n in mesh.axis_names if n not in spec.names())
            results.append(shared_over(count)(y) if count > 1 else y)
        return _tree.unflatten(out_tree, results)

    return mapped
