"""Views: random chains of view operations on random shapes agree with NumPy
(values, element strides = byte strides / itemsize) and share one buffer."""

from __future__ import annotations

import ctypes

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import funcgrad as fg


def _step(draw, x: np.ndarray):  # returns (fg function, numpy function)
    kinds = ["transpose", "slice", "expand", "flip", "broadcast", "index", "swap"]
    if x.ndim:
        kinds += ["squeeze_int"]
    if x.ndim >= 2:
        kinds += ["diagonal", "mT"]
    if x.flags.c_contiguous:
        kinds += ["view"]
    kind = draw(st.sampled_from(kinds))
    nd = x.ndim
    if kind == "transpose":
        perm = tuple(draw(st.permutations(list(range(nd)))))
        return (lambda a: fg.transpose(a, perm)), (lambda a: np.transpose(a, perm))
    if kind == "slice":
        idx = tuple(slice(draw(st.none() | st.integers(-4, 4)), draw(st.none() | st.integers(-4, 4)),
                          draw(st.sampled_from([None, 1, 2, 3, -1, -2]))) for _ in range(nd))
        return (lambda a: a[idx]), (lambda a: a[idx])
    if kind == "expand":
        ax = draw(st.integers(0, nd))
        return (lambda a: fg.expand_dims(a, ax)), (lambda a: np.expand_dims(a, ax))
    if kind == "flip":
        ax = draw(st.none() | st.integers(0, max(nd - 1, 0))) if nd else None
        return (lambda a: fg.flip(a, ax)), (lambda a: np.flip(a, ax))
    if kind == "broadcast":
        shape = (draw(st.integers(1, 3)),) + tuple(d if d != 1 else draw(st.integers(1, 3)) for d in x.shape)
        return (lambda a: fg.broadcast_to(a, shape)), (lambda a: np.broadcast_to(a, shape))
    if kind == "index":
        idx = (Ellipsis, None) if draw(st.booleans()) else (None, Ellipsis)
        return (lambda a: a[idx]), (lambda a: a[idx])
    if kind == "swap" and nd >= 2:
        a1, a2 = draw(st.integers(0, nd - 1)), draw(st.integers(0, nd - 1))
        return (lambda a: fg.swapaxes(a, a1, a2)), (lambda a: np.swapaxes(a, a1, a2))
    if kind == "squeeze_int" and x.shape[0] > 0:
        i = draw(st.integers(-x.shape[0], x.shape[0] - 1))
        return (lambda a: a[i]), (lambda a: a[i])
    if kind == "diagonal":
        off = draw(st.integers(-2, 2))
        return (lambda a: fg.diagonal(a, off)), (lambda a: np.diagonal(a, off))
    if kind == "mT":
        return (lambda a: a.mT), (lambda a: np.swapaxes(a, -1, -2))
    if kind == "view" and x.size:
        shape = (-1,) + ((1,) if draw(st.booleans()) else ())
        return (lambda a: a.view(shape)), (lambda a: a.reshape(shape))
    return (lambda a: a), (lambda a: a)


@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_random_view_chains_match_numpy_and_share_the_buffer(data: st.DataObject, shape: tuple[int, ...]) -> None:
    base_np = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    base = fg.asarray(base_np)
    x, xn = base, base_np
    for _ in range(data.draw(st.integers(1, 6))):
        f, g = _step(data.draw, xn)
        x, xn = f(x), g(xn)
        assert x.shape == xn.shape
        assert x.buffer is base.buffer
        np.testing.assert_array_equal(x.numpy(), xn)
        if xn.size > 1:
            assert x.stride() == tuple(s // xn.itemsize for s in xn.strides) or any(d <= 1 for d in xn.shape)
        if isinstance(xn, np.ndarray) and xn.size and np.shares_memory(xn, base_np):
            byte_offset = xn.__array_interface__["data"][0] - base_np.__array_interface__["data"][0]
            assert x.storage_offset() == byte_offset // xn.itemsize


@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), data=st.data())
def test_reshape_is_a_view_exactly_when_numpy_can_view(shape: tuple[int, ...], data: st.DataObject) -> None:
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    perm = tuple(data.draw(st.permutations(list(range(len(shape))))))
    xn = base.transpose(perm)
    x = fg.from_numpy(base).transpose(perm)
    target = (-1,)
    try:
        view = xn.view()
        view.shape = target  # NumPy raises when no view exists
        can_view = True
    except AttributeError:
        can_view = False
    out = x.reshape(target)
    np.testing.assert_array_equal(out.numpy(), xn.reshape(target))
    assert (out.buffer is x.buffer) == can_view
    if not can_view:
        with pytest.raises(fg.ViewError, match="reshape"):
            x.view(target)


def test_spec_section_3_tour() -> None:
    x = fg.array([[1., 2., 3.], [4., 5., 6.]])
    assert (x.shape, x.dtype, x.device, x.ndim, x.size) == ((2, 3), fg.float32, fg.device("cpu"), 2, 6)
    assert x.stride() == (3, 1) and x.storage_offset() == 0
    assert x.is_contiguous() and repr(x.buffer) == "<Buffer cpu float32 6 elements>"
    y = x.T
    assert y.stride() == (1, 3) and y.buffer is x.buffer and not y.is_contiguous()
    with pytest.raises(fg.ViewError, match=r"reshape\(\)|contiguous"):
        y.view(6)
    assert y.reshape(6).buffer is not x.buffer
    assert x.reshape(3, 2).buffer is x.buffer
    assert x[1, ::2].tolist() == [4.0, 6.0] and x[1, ::2].storage_offset() == 3 and x[1, ::2].stride() == (2,)
    assert x[..., None].shape == (2, 3, 1) and x[::-1].stride() == (-3, 1) and x[::-1].storage_offset() == 3
    assert x[fg.array([0, 1, 1])].shape == (3, 3) and x[x > 2].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert fg.broadcast_to(x[0], (4, 3)).stride() == (0, 1)
    with pytest.raises(TypeError, match=r"at\["):
        x[0, 0] = 5
    assert x.at[0, 0].set(5.0).tolist() == [[5., 2., 3.], [4., 5., 6.]]
    assert x.at[:, 1].add(1.0).tolist() == [[1., 3., 3.], [4., 6., 6.]]
    assert x.tolist() == [[1., 2., 3.], [4., 5., 6.]]  # unchanged


def test_split_chunk_flip_diagonal_are_views() -> None:
    x = fg.arange(24.0).reshape(4, 6)
    for part in fg.split(x, 3, axis=1) + x.chunk(3) + [fg.flip(x), fg.diagonal(x), x.mT, x[1:, ::2]]:
        assert part.buffer is x.buffer
    assert [p.shape for p in x.chunk(3, dim=0)] == [(2, 6), (2, 6)]
    assert [p.shape for p in fg.split(x, [1, 4], axis=1)] == [(4, 1), (4, 3), (4, 2)]
    assert fg.flip(x).stride() == (-6, -1)


def test_contiguous_copies_only_when_needed() -> None:
    x = fg.ones((3, 4))
    assert x.contiguous() is x
    t = x.T.contiguous()
    assert t.is_contiguous() and t.buffer is not x.buffer and t.stride() == (3, 1)


def test_views_of_a_view_never_change_when_a_new_array_is_made() -> None:
    x = fg.arange(6.0)
    v = x[::2]
    y = x.at[0].set(100.0)
    assert v.tolist() == [0.0, 2.0, 4.0] and y[0].item() == 100.0


@settings(max_examples=150)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
def test_adjacent_pieces_of_one_memory_concatenate_as_a_view(data: st.DataObject, shape: tuple[int, ...]) -> None:
    """Pieces lying next to each other in one memory (a split, of a flipped or transposed
    array too) concatenate to a view of it; any other order is a copy. Values are NumPy's
    either way, eager and compiled, and the operands keep theirs."""
    axis = data.draw(st.integers(0, len(shape) - 1))
    base = np.arange(float(np.prod(shape))).reshape(shape)
    x = data.draw(st.sampled_from(["plain", "flip", "transpose"]))
    x = {"plain": fg.asarray(base), "flip": fg.flip(fg.asarray(base), axis),
         "transpose": fg.asarray(base.T).T}[x]
    cuts = sorted(data.draw(st.lists(st.integers(1, max(shape[axis] - 1, 1)), max_size=3, unique=True)))
    cuts = [c for c in cuts if c < shape[axis]]
    pieces = fg.split(x, cuts, axis=axis) if cuts else [x]
    order = data.draw(st.permutations(range(len(pieces))))
    chosen = [pieces[i] for i in order]
    want = np.concatenate([p.numpy() for p in chosen], axis)
    before, allocated = x.numpy().copy(), fg.memory.allocated("cpu")
    got = fg.concatenate(chosen, axis)
    np.testing.assert_array_equal(got.numpy(), want)
    in_order = list(order) == sorted(order)
    assert (got.buffer is x.buffer) == (in_order and len(pieces) > 1)
    assert fg.memory.allocated("cpu") - allocated == (0 if got.buffer is x.buffer else want.nbytes)  # (counted once)
    compiled = fg.compile(lambda *ps: fg.concatenate(ps, axis) * 2.0)(*chosen)
    np.testing.assert_array_equal(compiled.numpy(), want * 2.0)
    np.testing.assert_array_equal(x.numpy(), before)


def test_pieces_next_to_each_other_in_different_memories_are_copied() -> None:
    """Two allocations that happen to lie back to back are not one memory: a view of both
    would keep only the first alive."""
    from funcgrad.backends.base import joined_view

    whole = np.arange(8.0)
    at = whole.ctypes.data
    left, right = (np.ctypeslib.as_array(ctypes.cast(at + offset, ctypes.POINTER(ctypes.c_double)), (4,))
                   for offset in (0, 32))
    assert left.base is not None and joined_view([left, right], 0) is None  # (two owners, though adjacent)
    assert joined_view([whole[:4], whole[4:]], 0) is not None
    assert joined_view([whole[:4], whole[5:]], 0) is None  # (a gap)
    assert joined_view([whole[:0], whole[:4]], 0) is None  # (an empty piece)


@st.composite
def _basic_index(draw, shape: tuple[int, ...]) -> tuple:
    """Ints, slices and Nones (which consume no axis) for some leading axes, maybe an ``...``."""
    entries: list = []
    axis = 0
    while axis < len(shape) and draw(st.integers(0, 3)):
        n = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "none"] if n else ["slice", "none"]))
        if kind == "none":
            entries.append(None)
            continue
        if kind == "int":
            entries.append(draw(st.integers(-n, n - 1)) if draw(st.booleans()) else np.int64(draw(st.integers(0, n - 1))))
        else:
            entries.append(slice(draw(st.none() | st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)),
                                 draw(st.sampled_from([None, 1, 2, -1, -3]))))
        axis += 1
    if draw(st.booleans()):  # anywhere when it stands for no axes, else after the entries
        entries.insert(draw(st.integers(0, len(entries))) if axis == len(shape) else len(entries), Ellipsis)
    return tuple(entries)


@settings(max_examples=300)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_basic_indexing_fast_path_equals_the_view_primitives(data: st.DataObject, shape: tuple[int, ...]) -> None:
    """Plain arrays are indexed by the backend's own basic indexing (ops/index.py,
    ``_basic_view``); the result must be the array the slice/squeeze/expand_dims
    primitives make: values, shape, strides, offset and buffer."""
    from funcgrad.ops import index as indexing

    base = fg.asarray(np.arange(max(1, int(np.prod(shape))), dtype=np.float32)[:int(np.prod(shape))].reshape(shape))
    x = base.mT if base.ndim >= 2 and data.draw(st.booleans()) else base  # a strided input too
    x = x[::-1] if x.ndim and data.draw(st.booleans()) else x
    index = data.draw(_basic_index(tuple(x.shape)))
    fast = indexing._basic_view(x, index)
    assert fast is not None
    original, indexing._basic_view = indexing._basic_view, lambda x, index: None
    try:
        general = x[index]
    finally:
        indexing._basic_view = original
    assert fast.shape == general.shape and fast.buffer is general.buffer is base.buffer
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    np.testing.assert_array_equal(fast.numpy(), x.numpy()[index])
    if general.size:
        assert fast.storage_offset() == general.storage_offset()
        assert fast.stride() == general.stride() or any(d <= 1 for d in general.shape)
    np.testing.assert_array_equal(fast.mT.numpy() if fast.ndim >= 2 else fast.numpy(),
                                  general.mT.numpy() if general.ndim >= 2 else general.numpy())


def test_basic_indexing_errors_and_the_cases_it_leaves_to_the_general_path() -> None:
    x = fg.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 1 with size 3 \(array shape \(2, 3\)\)"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    assert x[1, 2].shape == () and x[1, 2].item() == 5.0  # a 0-d array, not a scalar
    x.requires_grad_(True)
    assert x[0, 1:].grad_fn is not None  # recorded by the tape, not a backend view
    c = fg.ones((2, 3))
    program = fg.trace(lambda a: a + c[:, 0])(fg.ones((2,)))
    assert "squeeze" in [e.prim.name for e in program.eqns]  # indexing under a transform is recorded


VIEW_PRIMITIVES = [p for p in fg.registry() if p.view is not None]


@pytest.mark.parametrize("prim", VIEW_PRIMITIVES, ids=lambda p: p.name)
@given(data=st.data())
def test_eager_views_by_the_backend_equal_the_layout_rule(prim, data: st.DataObject) -> None:
    """Eager views of plain arrays are made by the primitive's ``native`` call; the layout
    rule (which transforms use) must describe the same array: values, shape, offset,
    strides and buffer (or a copy, where reshape needs one)."""
    from funcgrad.array import Array

    from .primitive_cases import CASES

    case = CASES[prim.name](data.draw)
    a = np.asarray(case.args[0])
    if a.ndim >= 2 and data.draw(st.booleans()):  # the same shape, laid out transposed
        base = fg.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
        x = base.mT
    else:
        x = base = fg.asarray(a)
    got = fg.bind(prim, x, **case.params)
    layout = prim.view(x._layout_obj(), **case.params)
    if layout is None:  # reshape of elements in no viewable order: both copy
        assert got.buffer is not base.buffer
        expected = fg.bind(prim, x.contiguous(), **case.params)
    else:
        expected = Array._view_of(x, layout)
        assert got.buffer is base.buffer
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if got.size:
        assert got.storage_offset() == expected.storage_offset() or layout is None
        assert got.stride() == expected.stride() or any(d <= 1 for d in got.shape)


def test_eager_views_reject_what_the_layout_rule_rejects() -> None:
    """Backend calls can be lenient (Python slicing clamps, list.insert appends, a
    broadcast view's strides may fit); the eager views must still raise."""
    from funcgrad.primitives.shape import broadcast_to_p, expand_dims_p, slice_p, squeeze_p

    x = fg.arange(3.0)
    with pytest.raises(fg.ShapeError, match="cannot broadcast shape"):
        fg.bind(broadcast_to_p, x, shape=(2,))
    with pytest.raises(fg.ShapeError, match="fewer"):
        fg.bind(broadcast_to_p, fg.ones((2, 3)), shape=(3,))
    with pytest.raises(fg.ShapeError, match="out of range"):
        fg.bind(expand_dims_p, x, dimensions=(5,))
    with pytest.raises(IndexError, match="out of bounds"):
        fg.bind(slice_p, x, index=((1, 5, 1),))
    with pytest.raises(fg.ShapeError, match="not 1"):
        fg.bind(squeeze_p, x, dimensions=(0,))


def _writes():
    """Every route the review found that wrote into an array's memory."""
    import numpy as np

    def base_chain(a):
        n = a.numpy()
        while n is not None and isinstance(n, np.ndarray):
            n.setflags(write=True)
            n = n.base
    routes = {
        "np.from_dlpack": lambda a: np.from_dlpack(a).__setitem__(0, 42),
        "numpy().setflags": lambda a: (lambda n: (n.setflags(write=True), n.__setitem__(-1, -1)))(a.numpy()),
        "base chain": base_chain,
        "buffer.owner": lambda a: a.buffer.owner.__setitem__(0, 0),
        "buffer.flat": lambda a: a.buffer.flat.__setitem__(0, 0),
        "np.asarray": lambda a: np.asarray(a).__setitem__(0, 7),
        "dlpack capsule (NumPy's call)": lambda a: np.from_dlpack(
            type("P", (), {"__dlpack__": lambda s, **k: a.__dlpack__(**k),
                           "__dlpack_device__": lambda s: a.__dlpack_device__()})()).__setitem__(0, 3),
    }
    try:
        import torch

        routes["torch.from_dlpack"] = lambda a: torch.from_dlpack(a).add_(100)
    except ImportError:
        pass
    return routes


@pytest.mark.parametrize("route", sorted(_writes()))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_nothing_writes_into_an_arrays_memory(route, dtype) -> None:
    """Through any public attribute, NumPy view, .base chain or DLPack consumer, an array's
    memory and that of its views stay as they were (writes are refused, or land in a copy)."""
    x = fg.array([1.0, 2.0, 3.0, 4.0], dtype=getattr(fg, dtype))
    v = x[1:]
    for target in (x, v):
        try:
            _writes()[route](target)
        except (ValueError, TypeError, AttributeError, BufferError, RuntimeError):
            pass
        assert x.tolist() == [1.0, 2.0, 3.0, 4.0], route
        assert v.tolist() == [2.0, 3.0, 4.0], route
