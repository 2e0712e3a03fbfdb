"""Control flow (``fg.cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``): values
eagerly, traced and compiled; derivatives of the primitives (checked through ``fg.compile``,
which traces them, against finite differences to second order); batching; the tape."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)


def _arr(*shape: int) -> fg.Array:
    return fg.asarray(RNG.standard_normal(shape))


def _pick(x):
    return fg.cond(x.sum() > 0, lambda v: fg.sin(v) * v, lambda v: fg.exp(v * 0.5), x)


def _rnn(w, xs, h0):
    def step(h, x):
        h = fg.tanh(h @ w + x)
        return h, (h * h).sum()

    h, ys = fg.scan(step, h0, xs)
    return h.sum() + ys.sum()


def _rnn_loop(w, xs, h0):
    h, total = h0, 0.0
    for i in range(xs.shape[0]):
        h = fg.tanh(h @ w + xs[i])
        total = total + (h * h).sum()
    return h.sum() + total


# ---- values --------------------------------------------------------------------------------

def test_cond_and_switch_pick_a_branch_eagerly_traced_and_compiled() -> None:
    x = _arr(3)
    for v in (x, -x, fg.abs(x), -fg.abs(x)):
        want = (np.sin(v.numpy()) * v.numpy()) if v.numpy().sum() > 0 else np.exp(v.numpy() * 0.5)
        np.testing.assert_allclose(_pick(v).numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(fg.compile(_pick)(v).numpy(), want, rtol=1e-12)
    text = str(fg.trace(_pick)(x))
    assert "cond[branches=<2 programs below>]" in text and "sin" in text and "exp" in text
    branches = [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v]
    pick = fg.compile(lambda i, v: fg.switch(i, branches, v))
    for i, want in [(0, 4.0), (1, 6.0), (2, -3.0), (7, -3.0), (-1, 4.0)]:  # the index is clamped
        assert pick(fg.asarray(i), fg.asarray(3.0)).item() == want
        assert fg.switch(i, branches, fg.asarray(3.0)).item() == want
    pair = fg.compile(lambda p, t: fg.cond(p, lambda a: {"s": a[0] + a[1]}, lambda a: {"s": a[0] - a[1]}, t))
    assert pair(fg.asarray(False), (fg.asarray(5.0), fg.asarray(2.0)))["s"].item() == 3.0


def test_branches_must_agree_and_predicates_be_scalars() -> None:
    x = _arr(3)
    with pytest.raises(fg.ShapeError, match=r"false_fun: \* with f64\[3\]; true_fun: \* with f64\[\]"):
        fg.compile(lambda v: fg.cond(v.sum() > 0, lambda a: a.sum(), lambda a: a, v))(x)
    with pytest.raises(fg.ShapeError, match="branch 0 and branch 2"):
        fg.compile(lambda i, v: fg.switch(i, [lambda a: a, lambda a: a, lambda a: (a, a)], v))(fg.asarray(0), x)
    with pytest.raises(fg.ArgumentTypeError, match="scalar"):
        fg.compile(lambda v: fg.cond(v > 0, lambda a: a, lambda a: -a, v))(x)
    with pytest.raises(fg.ArgumentTypeError, match="non-empty"):
        fg.switch(0, [], x)
    with pytest.raises(fg.ShapeError, match="init and the carry f returns"):
        fg.compile(lambda v: fg.scan(lambda c, t: (c.sum(), t), v, v))(x)
    with pytest.raises(fg.ShapeError, match="disagree"):
        fg.scan(lambda c, t: (c, t), x[0], (x, _arr(4)))
    with pytest.raises(fg.ShapeError, match="init_val and body_fun's result"):
        fg.compile(lambda v: fg.while_loop(lambda c: c.sum() < 1.0, lambda c: c[:2], v))(x)


def test_scan_forms() -> None:
    w, xs, h0 = _arr(4, 4) * 0.5, _arr(6, 4), _arr(4)
    for fn in (_rnn, fg.compile(_rnn)):
        np.testing.assert_allclose(fn(w, xs, h0).item(), _rnn_loop(w, xs, h0).item(), rtol=1e-12)
    count = lambda c, _: (c + 1.0, c)  # noqa: E731
    for fn in (fg.scan, lambda *a, **k: fg.compile(lambda c: fg.scan(count, c, None, length=4, **k))(a[1])):
        final, seen = fn(count, fg.asarray(0.0), None, length=4) if fn is fg.scan else fn(None, fg.asarray(0.0))
        assert final.item() == 4.0 and seen.tolist() == [0.0, 1.0, 2.0, 3.0]
    rev = fg.compile(lambda x: fg.scan(lambda c, t: (c + t, c), fg.asarray(0.0), x, reverse=True))
    final, partial = rev(fg.asarray([1.0, 2.0, 4.0]))
    assert final.item() == 7.0 and partial.tolist() == [6.0, 4.0, 0.0]
    eager = fg.scan(lambda c, t: (c + t, c), fg.asarray(0.0), fg.asarray([1.0, 2.0, 4.0]), reverse=True)
    assert eager[1].tolist() == [6.0, 4.0, 0.0]
    tree = fg.compile(lambda d: fg.scan(lambda c, t: ({"a": c["a"] * t["x"]}, c["a"]), {"a": fg.asarray(1.0)}, d))
    final, ys = tree({"x": fg.asarray([2.0, 3.0])})
    assert final["a"].item() == 6.0 and ys.tolist() == [1.0, 2.0]


def test_loops() -> None:
    double = lambda i, v: v * 2.0 + i  # noqa: E731
    assert fg.fori_loop(0, 5, double, fg.asarray(1.0)).item() == 58.0
    assert fg.compile(lambda v: fg.fori_loop(0, 5, double, v))(fg.asarray(1.0)).item() == 58.0
    traced_bounds = fg.compile(lambda n, v: fg.fori_loop(0, n, lambda i, c: c * 2.0, v))
    assert traced_bounds(fg.asarray(3), fg.asarray(1.0)).item() == 8.0
    grow = lambda v: fg.while_loop(lambda c: c < 100.0, lambda c: c * v, v)  # noqa: E731
    for fn in (grow, fg.compile(grow)):
        assert fn(fg.asarray(3.0)).item() == 243.0
    assert "while[cond=<program below> body=<program below>" in str(fg.trace(grow)(fg.asarray(3.0)))


# ---- derivatives ---------------------------------------------------------------------------

CASES = {
    "cond": (lambda x: _pick(x).sum(), lambda: (_arr(3),)),
    "switch": (lambda x, i: fg.switch(i, [fg.sin, lambda v: v * v * v, fg.tanh], x).sum(),
               lambda: (_arr(3), fg.asarray(1))),
    "scan": (_rnn, lambda: (_arr(3, 3) * 0.5, _arr(4, 3), _arr(3))),
    "scan reversed with ys": (lambda x, c: fg.scan(lambda h, t: (h * t + 1.0, fg.sin(h * t)), c, x,
                                                   reverse=True)[1].sum(), lambda: (_arr(5), _arr())),
    "fori_loop": (lambda v: fg.fori_loop(0, 4, lambda i, c: fg.sin(c) * v + i, v), lambda: (_arr(),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_primitives_derivatives_to_second_order(name: str) -> None:
    f, args = CASES[name]
    check_grads(fg.compile(f), args(), order=2)
    check_grads(f, args(), order=2)  # eagerly: the Python itself


def test_while_loop_differentiates_forward_only() -> None:
    grow = lambda v: fg.while_loop(lambda c: c < 100.0, lambda c: c * v, v)  # noqa: E731
    check_grads(fg.compile(grow), (fg.asarray(3.0),), order=2, modes=("fwd",))
    with pytest.raises(TypeError, match="fori_loop"):
        fg.grad(fg.compile(grow))(fg.asarray(3.0))


def test_scan_gradients_equal_the_unrolled_loop() -> None:
    w, xs, h0 = _arr(4, 4) * 0.5, _arr(6, 4), _arr(4)
    want = fg.grad(_rnn_loop, (0, 1, 2))(w, xs, h0)
    for fn in (fg.grad(fg.compile(_rnn), (0, 1, 2)), fg.compile(fg.grad(_rnn, (0, 1, 2)))):
        for got, ref in zip(fn(w, xs, h0), want):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)


@given(st.integers(1, 6), st.booleans(), st.integers(0, 2**31 - 1))
def test_scan_equals_a_python_loop(length: int, reverse: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    xs, c0 = fg.asarray(rng.uniform(-1, 1, (length, 2))), fg.asarray(rng.uniform(-1, 1, 2))

    def step(c, x):
        return fg.sin(c) * x + c, (c * x).sum()

    def loop(c, xs):
        ys = [None] * length
        for i in (range(length - 1, -1, -1) if reverse else range(length)):
            c, ys[i] = step(c, xs[i])
        return c.sum() + fg.stack(ys).sum()

    scanned = fg.compile(lambda c, xs: (lambda r: r[0].sum() + r[1].sum())(fg.scan(step, c, xs, reverse=reverse)))
    np.testing.assert_allclose(scanned(c0, xs).item(), loop(c0, xs).item(), rtol=1e-12)
    for got, want in zip(fg.grad(scanned, (0, 1))(c0, xs), fg.grad(loop, (0, 1))(c0, xs)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


# ---- batching ------------------------------------------------------------------------------

def test_batched_predicates_take_each_members_branch() -> None:
    xs = fg.stack([_arr(3), -fg.abs(_arr(3)), fg.abs(_arr(3))])
    want = np.stack([_pick(xs[k]).numpy() for k in range(3)])
    np.testing.assert_allclose(fg.vmap(fg.compile(_pick))(xs).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(fg.compile(fg.vmap(_pick))(xs).numpy(), want, rtol=1e-12)
    per_example = fg.vmap(fg.grad(lambda v: fg.compile(_pick)(v).sum()))(xs)
    for k in range(3):
        np.testing.assert_allclose(per_example[k].numpy(), fg.grad(lambda v: _pick(v).sum())(xs[k]).numpy(),
                                   rtol=1e-12)
    grow = fg.compile(lambda v: fg.while_loop(lambda c: c < 100.0, lambda c: c * v, v))
    assert fg.vmap(grow)(fg.asarray([2.0, 3.0, 11.0])).tolist() == [128.0, 243.0, 121.0]


def test_batched_scans() -> None:
    ws, xs, h0 = fg.stack([_arr(3, 3), _arr(3, 3)]) * 0.5, _arr(5, 3), _arr(3)
    rnn = fg.compile(_rnn)
    got = fg.vmap(rnn, in_axes=(0, None, None))(ws, xs, h0)
    np.testing.assert_allclose(got.numpy(), [_rnn_loop(ws[k], xs, h0).item() for k in range(2)], rtol=1e-12)
    batched_xs = fg.stack([xs, -xs])
    got = fg.vmap(rnn, in_axes=(None, 0, None))(ws[0], batched_xs, h0)
    np.testing.assert_allclose(got.numpy(), [_rnn_loop(ws[0], batched_xs[k], h0).item() for k in range(2)],
                               rtol=1e-12)
    grads = fg.vmap(fg.grad(rnn), in_axes=(0, None, None))(ws, xs, h0)
    for k in range(2):
        np.testing.assert_allclose(grads[k].numpy(), fg.grad(_rnn_loop)(ws[k], xs, h0).numpy(), rtol=1e-10)


# ---- the tape ------------------------------------------------------------------------------

def test_the_tape_records_through_eager_control_flow() -> None:
    w = fg.asarray(RNG.standard_normal((3, 3)) * 0.5, requires_grad=True)
    xs, h0 = _arr(4, 3), _arr(3)
    _rnn(w, xs, h0).backward()
    np.testing.assert_allclose(w.grad.numpy(), fg.grad(_rnn_loop)(w.detach(), xs, h0).numpy(), rtol=1e-12)
    x = fg.asarray(RNG.standard_normal(3), requires_grad=True)
    _pick(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), fg.grad(lambda v: _pick(v).sum())(x.detach()).numpy())
    v = fg.asarray(1.5, requires_grad=True)
    fg.while_loop(lambda c: c < 10.0, lambda c: c * v, v).backward()  # eagerly a Python loop: the tape has it
    assert v.grad.item() == pytest.approx(6 * 1.5 ** 5)  # v ** 6 passes 10 first


def test_the_tapes_second_derivative_through_a_scan() -> None:
    """``create_graph`` through a scan: the backward pass is recorded, its saved carries and
    residuals computed again with history, so a second backward gives the unrolled loop's
    second derivative."""
    w0, xs, h0 = RNG.standard_normal((3, 3)) * 0.5, _arr(4, 3), _arr(3)
    w = fg.asarray(w0, requires_grad=True)
    (g,) = fg.autograd.grad(_rnn(w, xs, h0), [w], create_graph=True)
    (g * g).sum().backward()
    want = fg.grad(lambda v: (fg.grad(_rnn_loop)(v, xs, h0) ** 2).sum())(fg.asarray(w0))
    np.testing.assert_allclose(w.grad.numpy(), want.numpy(), rtol=1e-10)


# ---- how a scan runs -----------------------------------------------------------------------

def _scans(f, *args):
    return [e for e in fg.compile(f).lower(*args).program.eqns if e.prim.name == "scan"]


def test_the_backward_scan_reads_the_forward_steps_residuals() -> None:
    """The forward scan stacks what the body's rules read (tanh's output) beside the carries;
    the backward scan reads it and does not compute the step's matmul and tanh again (JAX's
    scan keeps its residuals so); the transposed weight is made once, before the loop."""
    from funcgrad.transforms.control_flow import _lowered

    w, xs, h0 = _arr(4, 4) * 0.5, _arr(6, 3, 4), _arr(3, 4)

    def loss(w, xs, h0):
        return fg.scan(lambda h, x: (fg.tanh(h @ w + x), None), h0, xs)[0].sum()

    def unrolled(w, xs, h0):
        for i in range(xs.shape[0]):
            h0 = fg.tanh(h0 @ w + xs[i])
        return h0.sum()

    forward, backward = _scans(fg.grad(loss, (0, 1, 2)), w, xs, h0)
    assert [a.shape for a in forward.params["body"].out_avals] == [(3, 4)] * 3  # carry, carry in, tanh
    before, _, each = _lowered(backward.params["body"], backward.params["n_consts"])
    assert "# transpose" in before.source and each.source.count("# transpose") == 1  # (the carry's, for w's)
    assert each.source.count("# matmul") == 2 and "tanh" not in each.source, each.source
    for got, want in zip(fg.compile(fg.grad(loss, (0, 1, 2)))(w, xs, h0), fg.grad(unrolled, (0, 1, 2))(w, xs, h0)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)


def test_an_effect_in_a_scan_body_runs_every_step() -> None:
    """Loop-invariant equations run once before the loop, but not an effect."""
    seen = []
    w = fg.asarray(2.0)

    def step(c, x):
        fg.debug.callback(lambda v: seen.append(float(v)), w)
        return c + x * w, None

    for f in (lambda w, xs: fg.scan(step, 0.0 * w, xs)[0], fg.compile(lambda w, xs: fg.scan(step, 0.0 * w, xs)[0])):
        seen.clear()
        assert f(w, fg.asarray([1.0, 2.0, 3.0])).item() == 12.0
        assert seen == [2.0, 2.0, 2.0]


def test_step_counts_beyond_int64_are_refused_not_run() -> None:
    """A scan's length or a fori_loop's bounds that no int64 index can count are refused up
    front, eagerly as under tracing, rather than looping (and stacking) for ever."""
    with pytest.raises(fg.ArgumentValueError, match=r"fg\.scan: length=100000000000000000000 does not fit"):
        fg.scan(lambda c, x: (c, x), fg.ones(3), None, length=10**20)
    with pytest.raises(fg.ArgumentValueError, match=r"fg\.fori_loop: upper=100000000000000000000 does not fit"):
        fg.fori_loop(0, 10**20, lambda i, c: c, fg.ones(3))
    with pytest.raises(fg.ArgumentValueError, match=r"fg\.fori_loop: lower=-100000000000000000000 does not fit"):
        fg.compile(lambda v: fg.fori_loop(-10**20, 0, lambda i, c: c, v))(fg.ones(3))
