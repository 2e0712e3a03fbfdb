"""``fg.vmap``: every primitive's batching rule against a loop over the members, the
``in_axes``/``out_axes`` forms, composition with the other transforms, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg

from .primitive_cases import CASES, is_float

PRIMITIVES = sorted(fg.registry(), key=lambda p: p.name)
RNG = np.random.default_rng(0)


def _arr(*shape: int) -> fg.Array:
    return fg.asarray(RNG.standard_normal(shape))


def _member(a: np.ndarray, k: int) -> np.ndarray:
    """Member ``k`` of a batch built from one drawn argument: floats scaled (which keeps
    their signs, and a positive-definite matrix positive definite), everything else as drawn
    (indices stay in range)."""
    if is_float(a.dtype):
        return (a.astype(np.float64) * (1.0 - 0.2 * k)).astype(a.dtype)
    return a


def _outputs(out: object) -> list[np.ndarray]:
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
@given(data=st.data())
def test_every_primitive_batches_as_a_loop_over_members(prim: fg.Primitive, data: st.DataObject) -> None:
    """``vmap`` of a primitive over random axes of a random subset of its array arguments
    equals the primitive on each member, stacked. A primitive without a batching rule fails."""
    assert prim.batch is not None, f"primitive {prim.name!r} has no batching rule"
    case = CASES[prim.name](data.draw)
    size = data.draw(st.integers(1, 3), label="batch size")
    positions = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray)]
    mapped = data.draw(st.lists(st.booleans(), min_size=len(positions), max_size=len(positions)), label="mapped")
    if not any(mapped):
        mapped[data.draw(st.integers(0, len(positions) - 1))] = True
    axes = {i: data.draw(st.integers(-case.args[i].ndim - 1, case.args[i].ndim), label=f"axis of {i}")
            for i, m in zip(positions, mapped) if m}

    def member_args(k: int) -> list[object]:
        return [fg.asarray(_member(a, k)) if i in axes else (fg.asarray(a) if isinstance(a, np.ndarray) else a)
                for i, a in enumerate(case.args)]

    def f(*arrays: object) -> object:
        args = list(case.args)
        for i, a in zip(positions, arrays):
            args[i] = a
        return fg.bind(prim, *args, **case.params)

    batched = [fg.asarray(np.stack([_member(case.args[i], k) for k in range(size)], axis=axes[i]))
               if i in axes else fg.asarray(case.args[i]) for i in positions]
    in_axes = tuple(axes.get(i) for i in positions)
    got = fg.vmap(f, in_axes=in_axes)(*batched)
    if prim.multiple_results and not got:  # an effect alone (debug_callback): it saw the whole batch
        seen = case.extra["seen"][-1]
        first = positions.index(next(iter(axes)))
        np.testing.assert_array_equal(seen, np.moveaxis(batched[first].numpy(), axes[positions[first]], 0))
        return
    loop = [_outputs(f(*[member_args(k)[i] for i in positions])) for k in range(size)]
    for j, g in enumerate(_outputs(got)):
        want = np.stack([run[j] for run in loop])
        assert g.shape == want.shape and g.dtype == want.dtype, (prim.name, g.shape, want.shape, g.dtype)
        if is_float(g.dtype) or g.dtype.kind == "c":  # (a batched kernel may round differently in the last bit)
            wide = np.complex128 if g.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(g.astype(wide), want.astype(wide), rtol=case.rtol * 10,
                                       atol=case.rtol * 10, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (a division by a zero drawn: inf, the same in both)
@given(data=st.data())
def test_elementwise_operations_evaluated_at_once_equal_a_loop(data: st.DataObject) -> None:
    """The operations vmap evaluates without its batching rule (a batch-first value with a
    plain array that broadcasts against one member, a number, or another batch-first value,
    in either order; ``process``'s first case and ``lined_up``): each member's result, bit
    for bit, and the operands unchanged."""
    member = data.draw(st.lists(st.integers(1, 3), max_size=3).map(tuple), label="member shape")
    n = data.draw(st.integers(1, 3), label="batch size")
    op = data.draw(st.sampled_from([fg.add, fg.subtract, fg.multiply, fg.divide, fg.maximum]), label="op")
    kind = data.draw(st.sampled_from(["plain", "number", "mapped"]), label="other operand")
    first = data.draw(st.booleans(), label="batch operand first")
    xs = RNG.standard_normal((n, *member)).astype(np.float32)
    if kind == "plain":  # (a trailing part of the member's shape, down to a 0-d array)
        other = fg.asarray(RNG.standard_normal(member[data.draw(st.integers(0, len(member))):]).astype(np.float32))
    elif kind == "number":
        other = data.draw(st.floats(-3, 3, allow_nan=False, width=32), label="number")
    else:
        other = fg.asarray(RNG.standard_normal((n, *member)).astype(np.float32))
    kept = (xs.copy(), other.numpy().copy() if kind != "number" else other)

    def f(x, y):
        return op(x, y) if first else op(y, x)

    got = fg.vmap(f, in_axes=(0, 0 if kind == "mapped" else None))(fg.asarray(xs), other)
    pick = (lambda k: other[k]) if kind == "mapped" else (lambda k: other)
    want = np.stack([f(fg.asarray(xs[k]), pick(k)).numpy() for k in range(n)])
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(xs, kept[0])
    if kind != "number":
        np.testing.assert_array_equal(other.numpy(), kept[1])


def test_indexing_with_index_arrays_apart_and_batched_indices() -> None:
    """NumPy puts the broadcast shape of index arrays that a slice separates first: the batch
    axis then lands after it. Batched indices index each member with its own."""
    x, u = _arr(2, 3, 4, 5), _arr(2, 3, 4)
    i, j = fg.asarray(np.array([0, 2, 1])), fg.asarray(np.array([1, 0, 3]))
    cases = [(lambda v: v[i, :, j], (x,)), (lambda v: v.at[i, :, j].add(1.0), (x,)),
             (lambda v, w: v.at[i, :, j].set(w), (x, u)), (lambda v, k: v[k, 1:], (x, fg.stack([i, i[::-1]])))]
    for f, args in cases:
        want = np.stack([f(*(a[k] for a in args)).numpy() for k in range(2)])
        np.testing.assert_allclose(fg.vmap(f)(*args).numpy(), want)


# ---- the API ------------------------------------------------------------------------------

def test_in_axes_and_out_axes_forms() -> None:
    x, y = _arr(3, 4), _arr(4, 3)
    dot = lambda a, b: (a * b).sum()  # noqa: E731
    np.testing.assert_allclose(fg.vmap(dot, in_axes=(0, 1))(x, y).numpy(), (x.numpy() * y.numpy().T).sum(1))
    np.testing.assert_allclose(fg.vmap(dot, in_axes=(-2, -1))(x, y).numpy(), (x.numpy() * y.numpy().T).sum(1))
    w = _arr(4)
    np.testing.assert_allclose(fg.vmap(dot, in_axes=(0, None))(x, w).numpy(), x.numpy() @ w.numpy())
    tree = {"a": x, "b": (w, x)}
    out = fg.vmap(lambda t: t["a"] * t["b"][0] + t["b"][1], in_axes=({"a": 0, "b": (None, 0)},))(tree)
    np.testing.assert_allclose(out.numpy(), x.numpy() * w.numpy() + x.numpy())
    out = fg.vmap(lambda a, *, scale: a * scale)(x, scale=fg.asarray(np.arange(3.0)))  # keywords: axis 0
    np.testing.assert_allclose(out.numpy(), x.numpy() * np.arange(3.0)[:, None])
    both = fg.vmap(lambda a: (a.sum(), a * 2.0), out_axes=(0, 1))(x)
    np.testing.assert_allclose(both[1].numpy(), (x.numpy() * 2).T)
    same = fg.vmap(lambda a: (a.sum(), w), out_axes=(0, None))(x)
    assert same[1] is w
    repeated = fg.vmap(lambda a: w, axis_size=2)(None if False else x[:2])
    np.testing.assert_allclose(repeated.numpy(), np.stack([w.numpy()] * 2))
    np.testing.assert_allclose(fg.vmap(lambda: w * 2.0, axis_size=3)().numpy(), np.stack([w.numpy() * 2] * 3))


def test_nested_vmap_is_a_matrix_of_results() -> None:
    x, y = _arr(3, 5), _arr(4, 5)
    pairwise = fg.vmap(fg.vmap(lambda a, b: (a - b).sum() ** 2, in_axes=(None, 0)), in_axes=(0, None))
    want = ((x.numpy()[:, None] - y.numpy()[None]).sum(-1)) ** 2
    np.testing.assert_allclose(pairwise(x, y).numpy(), want, rtol=1e-12)


# ---- composition --------------------------------------------------------------------------

def _mlp(params: dict, x: fg.Array, y: fg.Array) -> fg.Array:
    h = fg.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    return fg.nn.functional.cross_entropy(logits[None], y[None])


def _params() -> dict:
    return {"w1": _arr(6, 8) * 0.3, "b1": _arr(8) * 0.1, "w2": _arr(8, 3) * 0.3}


def test_per_example_gradients_equal_a_loop() -> None:
    params, xs, ys = _params(), _arr(5, 6), fg.asarray(np.array([0, 2, 1, 1, 0]))
    got = fg.vmap(fg.grad(_mlp), in_axes=(None, 0, 0))(params, xs, ys)
    for k in range(5):
        want = fg.grad(_mlp)(params, xs[k], ys[k])
        for name in params:
            np.testing.assert_allclose(got[name][k].numpy(), want[name].numpy(), rtol=1e-10, atol=1e-12)
    compiled = fg.compile(fg.vmap(fg.grad(_mlp), in_axes=(None, 0, 0)))(params, xs, ys)
    for name in params:
        np.testing.assert_allclose(compiled[name].numpy(), got[name].numpy(), rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_and_vmap_of_jvp() -> None:
    x, w = _arr(4, 3), _arr(3)
    f = lambda w, x: fg.sin(x @ w)  # noqa: E731
    g = fg.grad(lambda w: fg.vmap(f, in_axes=(None, 0))(w, x).sum())(w)
    np.testing.assert_allclose(g.numpy(), (np.cos(x.numpy() @ w.numpy())[:, None] * x.numpy()).sum(0), rtol=1e-12)
    tangents = fg.vmap(lambda t: fg.jvp(lambda v: f(v, x), (w,), (t,))[1])(fg.eye(3, dtype=fg.float64))
    np.testing.assert_allclose(tangents.numpy(), fg.jacfwd(lambda v: f(v, x))(w).numpy().T, rtol=1e-12)


def test_jacobians_and_hessians_are_batched() -> None:
    x = _arr(4)
    f = lambda v: fg.tanh(v) * v.sum()  # noqa: E731
    jr, jf = fg.jacrev(f)(x), fg.jacfwd(f)(x)
    t, s = np.tanh(x.numpy()), x.numpy().sum()
    want = np.diag((1 - t ** 2) * s) + t[:, None]
    np.testing.assert_allclose(jr.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(jf.numpy(), want, rtol=1e-12)
    h = fg.hessian(lambda v: (fg.sin(v) * v).sum())(x)
    v = x.numpy()
    np.testing.assert_allclose(h.numpy(), np.diag(2 * np.cos(v) - v * np.sin(v)), rtol=1e-12, atol=1e-14)


def test_vmap_of_compiled_checkpointed_and_custom_functions() -> None:
    x = _arr(5, 3)
    f = lambda v: (fg.sin(v) * v).sum()  # noqa: E731
    want = [f(x[k]).item() for k in range(5)]
    compiled = fg.compile(f)
    np.testing.assert_allclose(fg.vmap(compiled)(x).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(fg.checkpoint(f))(x).numpy(), want, rtol=1e-12)
    grads = fg.vmap(fg.grad(fg.checkpoint(f)))(x).numpy()
    np.testing.assert_allclose(grads, np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy()), rtol=1e-12)
    np.testing.assert_allclose(fg.grad(lambda v: fg.vmap(fg.checkpoint(f))(v).sum())(x).numpy(), grads, rtol=1e-12)

    @fg.custom_vjp
    def clipped(v):
        return v * 2.0

    clipped.defvjp(lambda v: (v * 2.0, None), lambda res, g: (fg.clip(g, -1.0, 1.0),))
    out = fg.grad(lambda v: (fg.vmap(clipped)(v) * 3.0).sum())(x)
    np.testing.assert_allclose(out.numpy(), np.ones((5, 3)))  # the rule's clipped cotangent, not 6
    np.testing.assert_allclose(fg.vmap(fg.grad(lambda v: (clipped(v) * 3.0).sum()))(x).numpy(), np.ones((5, 3)))


def test_a_model_ensemble_through_functional_call() -> None:
    """``vmap`` over stacked parameters (``torch.func.stack_module_state`` + ``vmap``)."""
    fg.manual_seed(0)
    models = [fg.nn.Linear(3, 2) for _ in range(4)]
    stacked = {name: fg.stack([dict(m.named_parameters())[name] for m in models]) for name, _ in
               models[0].named_parameters()}
    x = _arr(6, 3).astype(fg.float32)
    out = fg.vmap(lambda p: fg.nn.functional_call(models[0], p, x))(stacked)
    for k, m in enumerate(models):
        np.testing.assert_allclose(out[k].numpy(), m(x).detach().numpy(), rtol=1e-6)


def test_the_tape_records_through_vmap() -> None:
    w = fg.asarray(RNG.standard_normal(3), requires_grad=True)
    x = _arr(4, 3)
    fg.vmap(lambda v: (v * w).sum() ** 2)(x).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), (2 * (x.numpy() @ w.detach().numpy())[:, None] * x.numpy()).sum(0))


# ---- errors -------------------------------------------------------------------------------

def test_vmap_errors_name_the_arguments() -> None:
    x, y = _arr(3, 2), _arr(4, 2)
    with pytest.raises(fg.ShapeError, match=r"argument 0 has size 3 .*argument 1 has size 4"):
        fg.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(fg.ArgumentValueError, match="out_axes is None"):
        fg.vmap(lambda a: a * 2.0, out_axes=None)(x)
    with pytest.raises(fg.ArgumentValueError, match="in_axes has 1 entries for 2"):
        fg.vmap(lambda a, b: a + b, in_axes=(0,))(x, x)
    with pytest.raises(fg.ArgumentValueError, match="does not match"):
        fg.vmap(lambda t: t[0], in_axes=((0, 0, 0),))((x, x))
    with pytest.raises(fg.ShapeError, match="in_axes axis 2 is out of range"):
        fg.vmap(lambda a: a, in_axes=2)(x)
    with pytest.raises(fg.ArgumentValueError, match="axis_size"):
        fg.vmap(lambda a: a, in_axes=None)(x)
    with pytest.raises(fg.ArgumentTypeError, match="must be an array"):
        fg.vmap(lambda a: a)(2.0)
    with pytest.raises(fg.ConcretizationError):
        fg.vmap(lambda a: a if a.sum() > 0 else -a)(x)
    leaked = []
    fg.vmap(lambda a: leaked.append(a) or a)(x)
    with pytest.raises(fg.TracerLeakError, match="vmap"):
        leaked[0] + 1.0
