"""Pytrees (JAX semantics): nested containers whose leaves are arrays.

Tuples, lists, dicts (keys flattened in sorted order), ``None`` (a node with
no children), namedtuples and registered classes are nodes; everything else is
a leaf. ``register(cls, flatten, unflatten)`` adds a node type:
``flatten(x) -> (children, aux)`` and ``unflatten(aux, children) -> x``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["TreeDef", "flatten", "unflatten", "leaves", "structure", "map", "register", "register_dataclass",
           "all_leaves", "broadcast_prefix"]

_REGISTRY: dict[type, tuple[Callable[[Any], tuple[Iterable[Any], Any]], Callable[[Any, list[Any]], Any]]] = {
    tuple: (lambda t: (t, None), lambda _, c: tuple(c)),
    list: (lambda t: (t, None), lambda _, c: list(c)),
    dict: (lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))), lambda keys, c: dict(zip(keys, c))),
    type(None): (lambda _: ((), None), lambda _, c: None),
}


class TreeDef:
    """The structure of a pytree: node types and aux data, without the leaves."""

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type: type | None, aux: Any, children: tuple[TreeDef, ...]) -> None:
        self.node_type = node_type  # None: a leaf
        self.aux = aux
        self.children = children
        self.num_leaves: int = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash: int | None = None  # computed once: compiled functions hash a structure per call

    def _key(self) -> tuple[Any, ...]:
        return (self.node_type, self.aux, self.children)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, TreeDef) and hash(self) == hash(other)
                                 and self._key() == other._key())

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.node_type, _hashable(self.aux), self.children))
        return self._hash

    def __repr__(self) -> str:
        if self.node_type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        name = self.node_type.__name__
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is type(None):
            return "None"
        return f"{name}({inner})"

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """The pytree of this structure with ``leaves`` in its places."""
        return unflatten(self, leaves)


def _hashable(aux: Any) -> Any:
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


_LEAF = TreeDef(None, None, ())


def _node(x: Any) -> Any:
    t = type(x)
    entry = _REGISTRY.get(t)
    if entry is not None:
        return entry
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return (lambda n: (tuple(n), None), lambda _, c, t=t: t(*c))
    return None


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeDef]:
    """``(leaves, treedef)``; ``is_leaf`` can stop the descent early."""
    out: list[Any] = []
    return out, _walk(tree, out, is_leaf)


# Module-level recursion, not nested closures: a recursive closure refers to itself, a
# reference cycle that would keep every leaf (and a whole autodiff graph) alive until the
# garbage collector runs.
def _walk(x: Any, out: list[Any], is_leaf: Callable[[Any], bool] | None) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        out.append(x)
        return _LEAF
    entry = _node(x)
    if entry is None:
        out.append(x)
        return _LEAF
    children, aux = entry[0](x)
    return _treedef(type(x), aux, tuple([_walk(c, out, is_leaf) for c in children]))


_INTERNED: dict[Any, TreeDef] = {}


def _treedef(node_type: type, aux: Any, children: tuple[TreeDef, ...]) -> TreeDef:
    """One ``TreeDef`` object per structure, so comparing two structures (a compiled
    function does, on every call) is an identity check. Children are interned first, so
    they are keyed by identity; an unhashable ``aux`` gets a structure of its own."""
    key = (node_type, aux, tuple([id(c) for c in children]))
    try:
        td = _INTERNED.get(key)
    except TypeError:
        return TreeDef(node_type, aux, children)
    if td is None:
        if len(_INTERNED) > 100_000:  # (bounded: structures built once and never again are let go)
            _INTERNED.clear()
        td = _INTERNED[key] = TreeDef(node_type, aux, children)
    return td


def unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of ``treedef``'s structure from ``leaves`` (JAX argument order)."""
    it = iter(leaves)
    try:
        out = _build(treedef, it)
    except StopIteration:
        raise ValueError(f"tree.unflatten: too few leaves for structure {treedef!r}") from None
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"tree.unflatten: too many leaves for structure {treedef!r}")
    return out


def _build(td: TreeDef, it: Any) -> Any:
    if td.node_type is None:
        return next(it)
    children = [_build(c, it) for c in td.children]
    entry = _REGISTRY.get(td.node_type)
    if entry is None:  # namedtuple
        return td.node_type(*children)
    return entry[1](td.aux, children)


_SENTINEL = object()


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of a pytree, in order."""
    return flatten(tree, is_leaf)[0]


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The structure of a pytree (its TreeDef)."""
    return flatten(tree, is_leaf)[1]


def all_leaves(iterable: Iterable[Any]) -> bool:
    """Whether every item is a leaf (no containers)."""
    return all(structure(x) == _LEAF for x in iterable)


def broadcast_prefix(prefix: Any, tree: Any) -> list[Any]:
    """One entry per leaf of ``tree``: ``prefix``'s structure is a prefix of ``tree``'s, and
    each of its leaves (``None`` among them) stands for the whole subtree of ``tree`` at its
    place, as ``vmap``'s ``in_axes`` and ``shard_map``'s ``in_specs`` do. ``ValueError``
    naming the first place where the structures part."""
    out: list[Any] = []
    _broadcast(prefix, tree, out)
    return out


def _broadcast(prefix: Any, tree: Any, out: list[Any]) -> None:
    entry = None if prefix is None else _node(prefix)
    if entry is None:
        out.extend([prefix] * len(leaves(tree)))
        return
    node = _node(tree) if type(tree) is type(prefix) else None
    p_children, p_aux = entry[0](prefix)
    children, aux = node[0](tree) if node is not None else ((), None)
    p_children, children = list(p_children), list(children)
    if node is None or aux != p_aux or len(children) != len(p_children):
        raise ValueError(f"{prefix!r} does not match the structure of {structure(tree)}")
    for p, c in zip(p_children, children):
        _broadcast(p, c, out)


def map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leafwise; ``rest`` trees must have ``tree``'s structure."""
    flat, treedef = flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_flat, r_def = flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree.map: structures differ: {treedef!r} vs {r_def!r}")
        others.append(r_flat)
    return unflatten(treedef, [f(*xs) for xs in zip(flat, *others)])


def register(cls: type, flatten_fn: Callable[[Any], tuple[Iterable[Any], Any]],
             unflatten_fn: Callable[[Any, list[Any]], Any]) -> type:
    """Make ``cls`` a pytree node: ``flatten_fn(x) -> (children, aux)``,
    ``unflatten_fn(aux, children) -> x`` (aux must be hashable and comparable)."""
    _REGISTRY[cls] = (lambda x: tuple(flatten_fn(x)), unflatten_fn)  # type: ignore[assignment]
    return cls


def register_dataclass(cls: type | None = None, *, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None) -> Any:
    """Register a dataclass: ``data_fields`` are children (default: every field not in
    ``meta_fields``); ``meta_fields`` are static aux data (hashed, not traced).
    Usable as ``@fg.tree.register_dataclass`` or with explicit field lists."""

    def apply(klass: type) -> type:
        names = [f.name for f in dataclasses.fields(klass)]
        meta = tuple(meta_fields or ())
        data = tuple(data_fields) if data_fields is not None else tuple(n for n in names if n not in meta)

        def flat(x: Any) -> tuple[list[Any], tuple[Any, ...]]:
            return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

        def unflat(aux: tuple[Any, ...], children: list[Any]) -> Any:
            obj: Any = object.__new__(klass)
            for n, v in zip(data, children):
                object.__setattr__(obj, n, v)
            for n, v in zip(meta, aux):
                object.__setattr__(obj, n, v)
            return obj

        return register(klass, flat, unflat)

    return apply(cls) if cls is not None else apply
