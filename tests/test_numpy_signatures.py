"""NumPy's signatures: every function that NumPy (or ``numpy.linalg``) and funcgrad both
have accepts NumPy's keyword parameters by NumPy's names, walked with ``inspect.signature``.
What funcgrad leaves out on purpose is listed here and in arrays.md ("Decisions")."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import funcgrad as fg

# never: funcgrad arrays are immutable (out=), have no memory order or subclasses, and cast
# by the array API's rules
BY_DESIGN = {"out", "like", "order", "subok", "casting"}
# a ufunc's own keywords (np.exp(x, where=m, dtype=...)): funcgrad's elementwise functions
# take arrays alone, as the array API's
UFUNC_KEYWORDS = {"where", "dtype", "signature"}
# the NumPy parameters not taken yet, function by function (none now: the test below keeps
# an entry honest when one is added)
NOT_YET: dict[str, set[str]] = {}


def _shared() -> list[tuple[str, object, object]]:
    pairs = []
    for numpy_module, fg_module, prefix in ((np, fg, ""), (np.linalg, fg.linalg, "linalg.")):
        for name in sorted(dir(numpy_module)):
            ours = getattr(fg_module, name, None)
            theirs = getattr(numpy_module, name)
            if name.startswith("_") or ours is None or not callable(theirs) or isinstance(theirs, type):
                continue
            try:
                inspect.signature(theirs)
            except (TypeError, ValueError):
                continue
            pairs.append((prefix + name, theirs, ours))
    return pairs


SHARED = _shared()


def test_the_walk_covers_numpys_functions() -> None:
    assert len(SHARED) > 180  # (ufuncs, reductions, shapes, linalg...)


@pytest.mark.parametrize("name,theirs,ours", SHARED, ids=[p[0] for p in SHARED])
def test_numpy_keyword_parameters_are_accepted(name: str, theirs: object, ours: object) -> None:
    ufunc = isinstance(theirs, np.ufunc)
    wanted = inspect.signature(theirs).parameters  # type: ignore[arg-type]
    have = inspect.signature(ours).parameters  # type: ignore[arg-type]
    takes_any = any(p.kind is p.VAR_KEYWORD for p in have.values())
    missing = []
    for i, p in enumerate(wanted.values()):
        if i == 0 or p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue  # (the first argument is passed positionally, as the array API takes it)
        if p.name in BY_DESIGN or (ufunc and p.name in UFUNC_KEYWORDS) or p.name in NOT_YET.get(name, ()):
            continue
        if p.name in have:
            if have[p.name].kind is inspect.Parameter.POSITIONAL_ONLY:
                missing.append(f"{p.name} (positional-only here)")
        elif not takes_any:
            missing.append(p.name)
    assert not missing, f"fg.{name} does not take NumPy's {missing}"


def test_the_gaps_listed_are_still_gaps() -> None:
    """Each NOT_YET entry names a parameter that is really missing (a stale entry would hide
    nothing, and is removed when the parameter lands)."""
    shared = {name: (theirs, ours) for name, theirs, ours in SHARED}
    for name, params in NOT_YET.items():
        have = inspect.signature(shared[name][1]).parameters  # type: ignore[arg-type]
        assert not params & set(have), (name, params & set(have))


def test_numpys_keyword_forms_compute_numpys_values() -> None:
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    mask = x > 0
    assert fg.sum(x, axis=1, where=mask, initial=1.0).tolist() == np.sum(x, axis=1, where=mask, initial=1.0).tolist()
    assert fg.max(x, where=mask, initial=0.0).item() == np.max(x, where=mask, initial=0.0)
    np.testing.assert_allclose(fg.mean(x, axis=0, where=mask).numpy(), np.mean(x, axis=0, where=mask))
    np.testing.assert_allclose(fg.std(x, ddof=1, where=mask).numpy(), np.std(x, ddof=1, where=mask))
    assert fg.concatenate([x, x], axis=None, dtype=fg.float32).tolist() == np.concatenate([x, x], None, dtype=np.float32).tolist()
    assert fg.diff(x, axis=1, prepend=0).tolist() == np.diff(x, axis=1, prepend=0).tolist()
    assert fg.take(x, indices=[2, 0], axis=1).tolist() == np.take(x, indices=[2, 0], axis=1).tolist()
    assert fg.dot(x, b=x.T).tolist() == np.dot(x, b=x.T).tolist()
    assert [p.tolist() for p in fg.split(x, indices_or_sections=[1], axis=1)] == \
        [p.tolist() for p in np.split(x, indices_or_sections=[1], axis=1)]
    assert fg.searchsorted(np.arange(5), v=[1.5, 3]).tolist() == np.searchsorted(np.arange(5), v=[1.5, 3]).tolist()
    assert fg.eye(2, M=3, k=1).tolist() == np.eye(2, M=3, k=1).tolist()
    assert fg.zeros_like(x, shape=(4,)).shape == (4,)
    values, step = fg.linspace(0.0, 1.0, 5, retstep=True)
    assert step == 0.25 and values.tolist() == np.linspace(0.0, 1.0, 5).tolist()
    assert fg.sort(np.array([3, 1, 2]), kind="stable").tolist() == [1, 2, 3]
    with pytest.raises(fg.ArgumentValueError, match="needs initial="):
        fg.max(x, where=mask)
    with pytest.raises(fg.ArgumentValueError, match="structured"):
        fg.sort(x, order="f0")


def test_matmul_and_vecdot_take_numpys_generalized_ufunc_axes() -> None:
    """``axes=`` names each operand's matrix (or vector) axes and the result's, as NumPy's
    generalized ufuncs; ``axis``/``keepdims`` on a product are NumPy's TypeErrors."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 4, 3))
    for axes in ([(1, 2), (0, 1), (0, 1)], [(-2, -1), (0, 1), (-1, 0)], [(-1, -2), (1, 0), (-1, 0)]):
        np.testing.assert_allclose(fg.matmul(fg.asarray(a), fg.asarray(b), axes=axes).numpy(),
                                   np.matmul(a, b, axes=axes), rtol=1e-12)
    v = rng.standard_normal((4, 3, 2))
    np.testing.assert_allclose(fg.matmul(fg.ones(3, dtype=fg.float64), fg.asarray(v), axes=[(0,), (1, 2), (0,)]).numpy(),
                               np.matmul(np.ones(3), v, axes=[(0,), (1, 2), (0,)]), rtol=1e-12)
    for kw in ({"axis": 1}, {"keepdims": True}):
        with pytest.raises(TypeError, match="matmul"):
            fg.matmul(fg.ones((2, 3)), fg.ones((3, 2)), **kw)
    with pytest.raises(fg.ShapeError):
        fg.matmul(fg.ones((2, 3, 4)), fg.ones(4), axes=[(2, 0), 0, 1])
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for kw in ({"axes": [(0,), (0,), ()]}, {"axes": [0, 0]}, {"axis": 0, "keepdims": True},
               {"axes": [0, 0], "keepdims": True}, {"axis": -1, "keepdims": True}, {"axes": [1, 1]}):
        got, want = fg.vecdot(fg.asarray(x), fg.asarray(y), **kw).numpy(), np.vecdot(x, y, **kw)
        assert got.shape == want.shape, kw
        np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(TypeError, match="vecdot"):
        fg.vecdot(fg.asarray(x), fg.asarray(y), axis=0, axes=[0, 0])


def test_array_takes_ndmin_and_ndmax() -> None:
    assert fg.array([1, 2], ndmin=3).shape == np.array([1, 2], ndmin=3).shape == (1, 1, 2)
    assert fg.array(fg.ones((2, 2)), ndmin=1).shape == (2, 2)
    assert fg.array(fg.ones((2, 2, 2)), ndmax=1).shape == (2, 2, 2)  # (NumPy's: only nesting counts)
    with pytest.raises(fg.ArgumentValueError, match="ndmax=1"):
        fg.array([[1, 2]], ndmax=1)


def test_save_in_numpys_order_writes_npy_and_load_reads_it(tmp_path) -> None:
    """``fg.save(file, arr)`` is ``np.save``: a ``.npy`` file NumPy reads; ``fg.load`` reads
    ``.npy`` files (any byte order, Fortran order) and refuses object arrays and headers
    that promise more bytes than the file holds."""
    import io

    x = np.arange(6.0).reshape(2, 3)
    fg.save(str(tmp_path / "a"), fg.asarray(x))
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), x)
    back = fg.load(tmp_path / "a.npy")
    assert back.dtype == fg.float64 and back.tolist() == x.tolist()
    fg.save(tmp_path / "b.npy", arr=np.asfortranarray(x.astype(">f4")))
    assert fg.load(tmp_path / "b.npy").tolist() == x.tolist()
    np.save(tmp_path / "c.npy", np.array([{}], dtype=object), allow_pickle=True)
    with pytest.raises(fg.FormatError, match="never unpickles"):
        fg.load(tmp_path / "c.npy")
    raw = (tmp_path / "a.npy").read_bytes()
    for bad in (raw[:-3], raw[:20], raw.replace(b"(2, 3)", b"(9, 9)")):
        with pytest.raises(fg.FormatError):
            fg.load(io.BytesIO(bad))
    buffer = io.BytesIO()
    fg.save(fg.ones(3), buffer)  # (PyTorch's order: safetensors)
    assert buffer.getvalue()[:6] != b"\x93NUMPY" and fg.load(io.BytesIO(buffer.getvalue())).tolist() == [1.0] * 3
    with pytest.raises(fg.ArgumentTypeError, match="missing the file"):
        fg.save(fg.ones(2))
