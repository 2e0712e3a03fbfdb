"""``fg.lax`` collectives over the named axes ``fg.vmap(axis_name=)`` binds: values against
NumPy's formulas and ``jax.vmap`` (when JAX is installed), reverse mode with JAX's
semantics (each member's gradient is of every member's loss), nesting, tuples of names,
``compile`` and ``scan`` inside and outside, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

L = fg.lax
RNG = np.random.default_rng(0)


def _jax():
    try:
        import jax
    except ImportError:
        return None
    return jax


# name: (fg.lax call, jax.lax call, per-member shape, NumPy's result for a batch X (members first))
CASES = {
    "psum": (lambda v: L.psum(v, "i"), lambda lax, v: lax.psum(v, "i"), (2, 3),
             lambda X: np.broadcast_to(X.sum(0), X.shape)),
    "pmean": (lambda v: L.pmean(v, "i"), lambda lax, v: lax.pmean(v, "i"), (2, 3),
              lambda X: np.broadcast_to(X.mean(0), X.shape)),
    "pmax": (lambda v: L.pmax(v, "i"), lambda lax, v: lax.pmax(v, "i"), (3,),
             lambda X: np.broadcast_to(X.max(0), X.shape)),
    "pmin": (lambda v: L.pmin(v, "i"), lambda lax, v: lax.pmin(v, "i"), (3,),
             lambda X: np.broadcast_to(X.min(0), X.shape)),
    "all_gather": (lambda v: L.all_gather(v, "i"), lambda lax, v: lax.all_gather(v, "i"), (2,),
                   lambda X: np.broadcast_to(X, (X.shape[0], *X.shape))),
    "all_gather axis 1": (lambda v: L.all_gather(v, "i", axis=1), lambda lax, v: lax.all_gather(v, "i", axis=1),
                          (2, 3), lambda X: np.broadcast_to(np.moveaxis(X, 0, 1), (X.shape[0], 2, X.shape[0], 3))),
    "all_gather tiled": (lambda v: L.all_gather(v, "i", tiled=True), lambda lax, v: lax.all_gather(v, "i", tiled=True),
                         (2,), lambda X: np.broadcast_to(X.reshape(-1), (X.shape[0], X.size))),
    "psum_scatter": (lambda v: L.psum_scatter(v, "i"), lambda lax, v: lax.psum_scatter(v, "i"), (4, 2),
                     lambda X: X.sum(0)),
    "psum_scatter tiled": (lambda v: L.psum_scatter(v, "i", tiled=True),
                           lambda lax, v: lax.psum_scatter(v, "i", tiled=True), (8,),
                           lambda X: X.sum(0).reshape(4, 2)),
    "ppermute": (lambda v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                 lambda lax, v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), (2,),
                 lambda X: X[[3, 0, 1, 2]]),
    "all_to_all": (lambda v: L.all_to_all(v, "i", 0, 0), lambda lax, v: lax.all_to_all(v, "i", 0, 0), (4, 3),
                   lambda X: np.swapaxes(X, 0, 1)),
    "all_to_all 1 0": (lambda v: L.all_to_all(v, "i", 1, 0), lambda lax, v: lax.all_to_all(v, "i", 1, 0), (2, 4),
                       lambda X: np.transpose(X, (2, 0, 1))),
    "all_to_all tiled": (lambda v: L.all_to_all(v, "i", 0, 0, tiled=True),
                         lambda lax, v: lax.all_to_all(v, "i", 0, 0, tiled=True), (8,),
                         lambda X: np.swapaxes(X.reshape(4, 4, 2), 0, 1).reshape(4, 8)),
    "axis_index": (lambda v: L.axis_index("i") * v, lambda lax, v: lax.axis_index("i") * v, (2,),
                   lambda X: np.arange(4)[:, None] * X),
}
MEMBERS = 4


@pytest.mark.parametrize("name", sorted(CASES))
def test_collectives_act_across_the_batch(name: str) -> None:
    ours, theirs, shape, numpy = CASES[name]
    X = RNG.standard_normal((MEMBERS, *shape))
    got = fg.vmap(ours, axis_name="i")(fg.asarray(X)).numpy()
    np.testing.assert_allclose(got, numpy(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fg.compile(fg.vmap(ours, axis_name="i"))(fg.asarray(X)).numpy(), numpy(X), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(fg.vmap(fg.compile(ours), axis_name="i")(fg.asarray(X)).numpy(), numpy(X),
                               rtol=1e-12, atol=1e-14)
    jax = _jax()
    if jax is not None:
        want = jax.vmap(lambda v: theirs(jax.lax, v), axis_name="i")(X.astype(np.float32))
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6)


# the collectives JAX differentiates, as a loss each member computes
LOSSES = {name: case for name, case in CASES.items() if name not in ("pmax", "pmin")}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_each_members_gradient_is_of_every_members_loss(name: str) -> None:
    """``vmap(grad(loss))``: member i's gradient is d(sum over j of loss_j)/dx_i, as JAX's
    transposes give (psum's is psum, all_gather's psum_scatter...): the gradient of the
    batched loss's sum, ``grad(vmap(loss))``, which differentiates the rewritten batch."""
    ours, theirs, shape, _ = LOSSES[name]
    X = RNG.standard_normal((MEMBERS, *shape))
    W = RNG.standard_normal(np.asarray(CASES[name][3](X)).shape[1:])

    def loss(v):
        return (ours(v) * fg.asarray(W) + ours(v) ** 2).sum()

    per_member = fg.vmap(fg.grad(loss), axis_name="i")(fg.asarray(X)).numpy()
    total = fg.grad(lambda x: fg.vmap(loss, axis_name="i")(x).sum())(fg.asarray(X)).numpy()
    np.testing.assert_allclose(per_member, total, rtol=1e-10, atol=1e-12)
    jax = _jax()
    if jax is not None and not name.startswith("all_to_all"):  # (jax 0.10.2's transpose of it under vmap fails)
        jnp = jax.numpy

        def jax_loss(v):
            return (theirs(jax.lax, v) * W.astype(np.float32) + theirs(jax.lax, v) ** 2).sum()

        want = jax.vmap(jax.grad(jax_loss), axis_name="i")(jnp.asarray(X, np.float32))
        np.testing.assert_allclose(per_member, np.asarray(want), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("reduce", ["pmax", "pmin"])
def test_extremes_pass_the_holders_tangent(reduce: str) -> None:
    """JAX has no rule for pmax/pmin; funcgrad's passes the tangent to the member holding the
    extreme (ties share it), checked against finite differences both ways round."""
    op = getattr(L, reduce)
    X = fg.asarray(RNG.standard_normal((MEMBERS, 3)))
    batched = lambda x: (fg.vmap(lambda v: op(v, "i") * v, axis_name="i")(x) ** 2).sum()  # noqa: E731
    check_grads(batched, (X,), order=2)
    per_member = fg.vmap(fg.grad(lambda v: ((op(v, "i") * v) ** 2).sum()), axis_name="i")(X)
    np.testing.assert_allclose(per_member.numpy(), fg.grad(batched)(X).numpy(), rtol=1e-10)
    tie = fg.vmap(fg.grad(lambda v: op(v, "i").sum()), axis_name="i")(fg.asarray([1.0, 1.0, 0.5, 0.5]))
    # every member's loss is the extreme: four of them, shared by the two holders
    assert tie.tolist() == ([2.0, 2.0, 0.0, 0.0] if reduce == "pmax" else [0.0, 0.0, 2.0, 2.0])


@pytest.mark.parametrize("name", ["psum", "all_gather", "psum_scatter tiled", "ppermute", "all_to_all 1 0"])
def test_collective_derivatives_to_second_order(name: str) -> None:
    ours = CASES[name][0]
    X = fg.asarray(RNG.standard_normal((MEMBERS, *CASES[name][2])))
    check_grads(lambda x: (fg.vmap(lambda v: fg.sin(ours(v)) * v.sum(), axis_name="i")(x)).sum(), (X,), order=2)
    check_grads(lambda x: fg.vmap(fg.grad(lambda v: (fg.sin(ours(v)) * v.sum()).sum()), axis_name="i")(x).sum(),
                (X,), order=1)


def test_values_the_same_in_every_member_and_nested_names() -> None:
    x = fg.arange(3.0)
    assert fg.vmap(lambda v, w: L.psum(w, "i"), in_axes=(0, None), axis_name="i")(x, fg.asarray(2.0)).tolist() == \
        [6.0] * 3
    assert fg.vmap(lambda v: L.psum(1, "i"), axis_name="i")(x).tolist() == [3] * 3
    assert fg.vmap(lambda v: L.axis_size("i") + 0 * v, axis_name="i")(x).tolist() == [3.0] * 3
    grid = fg.arange(6.0).reshape(2, 3)
    both = fg.vmap(fg.vmap(lambda v: L.psum(v, ("i", "j")), axis_name="j"), axis_name="i")(grid)
    assert both.tolist() == [[15.0] * 3] * 2
    outer = fg.vmap(fg.vmap(lambda v: L.psum(v, "i"), axis_name="j"), axis_name="i")(grid)
    assert outer.tolist() == [[3.0, 5.0, 7.0]] * 2
    index = fg.vmap(fg.vmap(lambda v: L.axis_index(("i", "j")), axis_name="j"), axis_name="i")(grid)
    assert index.tolist() == [[0, 1, 2], [3, 4, 5]] and index.dtype == fg.int32
    gathered = fg.vmap(fg.vmap(lambda v: L.all_gather(v, ("i", "j")), axis_name="j"), axis_name="i")(grid)
    assert gathered.shape == (2, 3, 6) and gathered[1, 2].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    shadow = fg.vmap(fg.vmap(lambda v: L.psum(v, "i"), axis_name="i"), axis_name="i")(grid)  # the innermost wins
    assert shadow.tolist() == [[3.0] * 3, [12.0] * 3]
    tree = fg.vmap(lambda v: L.psum({"a": v, "b": (v * 2,)}, "i"), axis_name="i")(x)
    assert tree["a"].tolist() == [3.0] * 3 and tree["b"][0].tolist() == [6.0] * 3


def test_named_axes_inside_compiled_code_and_control_flow() -> None:
    x = fg.arange(3.0)
    body = lambda c, t: (c + L.psum(t, "i"), L.axis_index("i") * t)  # noqa: E731
    scanned = fg.vmap(lambda v: fg.scan(body, 0.0 * v, fg.stack([v, v * 2.0])), axis_name="i")(x)
    assert scanned[0].tolist() == [9.0] * 3 and scanned[1].tolist() == [[0.0, 0.0], [1.0, 2.0], [4.0, 8.0]]
    for f in (fg.vmap(fg.compile(lambda v: L.pmean(v, "i") * v), axis_name="i"),
              fg.compile(fg.vmap(lambda v: L.pmean(v, "i") * v, axis_name="i"))):
        assert f(x).tolist() == [0.0, 1.0, 2.0]
    picked = fg.vmap(lambda v: fg.cond(L.axis_index("i") > 0, lambda a: L.psum(a, "i"), lambda a: -a, v),
                     axis_name="i")(x)
    assert picked.tolist() == [-0.0, 3.0, 3.0]
    grads = fg.vmap(fg.grad(fg.checkpoint(lambda v: L.psum(fg.sin(v), "i") ** 2)), axis_name="i")(x)
    np.testing.assert_allclose(grads.numpy(), 6 * np.sin(x.numpy()).sum() * np.cos(x.numpy()), rtol=1e-12)


def test_unbound_names_and_bad_collectives_are_refused() -> None:
    x = fg.arange(4.0)
    with pytest.raises(L.UnboundAxisError, match=r"fg.lax.psum: unbound axis name 'j' \(the axes bound here: 'i'\)"):
        fg.vmap(lambda v: L.psum(v, "j"), axis_name="i")(x)
    with pytest.raises(NameError, match="unbound axis name 'i' .*none"):
        L.axis_index("i")
    with pytest.raises(L.UnboundAxisError):
        fg.compile(lambda v: L.pmean(v, "i"))(x)
    with pytest.raises(fg.ShapeError, match=r"psum_scatter: axis 0 of shape \(3,\) has size 3, which is not the size "
                                            r"4 of axis 'i'"):
        fg.vmap(lambda v: L.psum_scatter(v[:3], "i"), axis_name="i")(fg.ones((4, 4)))
    with pytest.raises(fg.ShapeError, match="all_to_all: split axis 0 of shape .* is not a multiple of the size 4"):
        fg.vmap(lambda v: L.all_to_all(v[:3], "i", 0, 0, tiled=True), axis_name="i")(fg.ones((4, 4)))
    with pytest.raises(fg.ArgumentValueError, match=r"ppermute: member 4 of perm \[\(0, 4\)\] is not in axis 'i'"):
        fg.vmap(lambda v: L.ppermute(v, "i", [(0, 4)]), axis_name="i")(x)
    with pytest.raises(fg.ArgumentValueError, match="names a member twice"):
        fg.vmap(lambda v: L.ppermute(v, "i", [(0, 1), (2, 1)]), axis_name="i")(x)
    with pytest.raises(fg.ArgumentValueError, match="ppermute: takes one axis name"):
        fg.vmap(fg.vmap(lambda v: L.ppermute(v, ("i", "j"), []), axis_name="j"), axis_name="i")(fg.ones((2, 2)))


def test_a_partial_permutation_sends_zeros() -> None:
    got = fg.vmap(lambda v: L.ppermute(v, "i", [(0, 1), (1, 2)]), axis_name="i")(fg.asarray([1.0, 2.0, 3.0]))
    assert got.tolist() == [0.0, 1.0, 2.0]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_gather_and_scatter_are_each_others_transpose(members: int, block: int, seed: int) -> None:
    """<all_gather(x), y> summed over members equals <x, psum_scatter(y)> summed: the pair
    the reverse-mode rules rely on, for any axis size and block."""
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((members, block)), rng.standard_normal((members, members * block))
    gathered = fg.vmap(lambda v: L.all_gather(v, "i", tiled=True), axis_name="i")(fg.asarray(X)).numpy()
    scattered = fg.vmap(lambda v: L.psum_scatter(v, "i", tiled=True), axis_name="i")(fg.asarray(Y)).numpy()
    np.testing.assert_allclose((gathered * Y).sum(), (X * scattered).sum(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scattered, np.broadcast_to(Y.sum(0), Y.shape).reshape(members, members, block)[0],
                               rtol=1e-12)


def test_lax_names() -> None:
    x = fg.asarray([-1.0, 0.5, 2.0])
    assert L.select(x > 0, x, -x).tolist() == [1.0, 0.5, 2.0]
    assert L.clamp(0.0, x, 1.0).tolist() == [0.0, 0.5, 1.0]
    assert L.integer_pow(x, 2).tolist() == [1.0, 0.25, 4.0]
    assert L.convert_element_type(x, fg.int32).dtype == fg.int32
    assert L.broadcast(x, (2,)).shape == (2, 3) and L.iota(fg.int32, 3).tolist() == [0, 1, 2]
    assert L.concatenate([x, x], 0).shape == (6,) and L.full((2,), 3.0).tolist() == [3.0, 3.0]
    assert L.map(lambda v: v * 2.0, x).tolist() == [-2.0, 1.0, 4.0]
    assert L.fori_loop(0, 3, lambda i, c: c + i, 0) == 3 and L.logistic(fg.asarray(0.0)).item() == 0.5
