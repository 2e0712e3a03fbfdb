"""The PyTorch-style tape: requires_grad, grad_fn, backward, autograd.grad, Function."""

from __future__ import annotations

import contextlib
import gc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg


def test_spec_section_6_example() -> None:
    x = fg.array([2.0], requires_grad=True)
    assert x.is_leaf and x.requires_grad and x.grad is None
    y = x ** 2 + 3 * x
    assert repr(y.grad_fn) == "<AddBackward>" and not y.is_leaf
    assert [(repr(f), i) for f, i in y.grad_fn.next_functions] == [("<PowBackward>", 0), ("<MulBackward>", 0)]
    assert repr(y.grad_fn.next_functions[0][0].next_functions[0][0]) == "<AccumulateGrad>"
    y.backward()
    assert x.grad.tolist() == [7.0] and x.grad.grad_fn is None and not x.grad.requires_grad
    with pytest.raises(fg.GraphFreedError, match="retain_graph=True"):
        y.backward()
    assert issubclass(fg.GraphFreedError, RuntimeError)
    assert "requires_grad=True" in repr(x) and "grad_fn=<AddBackward>" in repr(y)


def test_gradients_accumulate_and_retain_graph() -> None:
    x = fg.array([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    x.grad = None
    (x * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_of_non_scalar_needs_gradient() -> None:
    x = fg.array([1.0, 2.0], requires_grad=True)
    with pytest.raises(fg.ShapeError, match=r"shape \(2,\).*gradient="):
        (x * 2).backward()
    (x * 2).backward(gradient=fg.array([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        fg.ones(2).sum().backward()


def test_create_graph_gives_higher_derivatives() -> None:
    x = fg.array([2.0], requires_grad=True)
    (g,) = fg.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.tolist() == [12.0] and g.requires_grad
    (g2,) = fg.autograd.grad(g.sum(), x)
    assert g2.tolist() == [12.0]
    assert x.grad is None  # autograd.grad does not touch .grad


def test_retain_grad_and_hooks() -> None:
    x = fg.array([1.0, 2.0], requires_grad=True)
    z = x * x
    z.retain_grad()
    seen = []
    z.register_hook(lambda g: seen.append(g.tolist()))
    handle = x.register_hook(lambda g: g * 10)
    (z * 3.0).sum().backward()
    assert z.grad.tolist() == [3.0, 3.0] and seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [60.0, 120.0]
    handle.remove()
    x.grad = None
    (x * 1.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_no_grad_enable_grad_detach() -> None:
    x = fg.array([1.0], requires_grad=True)
    with fg.no_grad():
        y = x * 2
        with fg.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    d = x.detach()
    assert not d.requires_grad and d.buffer is x.buffer
    assert fg.is_grad_enabled()
    with fg.no_grad():
        assert not fg.is_grad_enabled()


def test_requires_grad_rules() -> None:
    with pytest.raises(fg.DTypeError, match="floating-point"):
        fg.array([1, 2], requires_grad=True)
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad_(False)
    x.requires_grad_(False)
    assert not (x * 2).requires_grad


def test_autograd_function() -> None:
    class Exp(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = fg.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            assert ctx.needs_input_grad == (True,)
            return g * y

    x = fg.array([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert repr(y.grad_fn) == "<ExpBackward>"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(fg.grad(lambda v: Exp.apply(v).sum())(fg.array([0.0, 1.0])).numpy(),
                               np.exp([0.0, 1.0]), rtol=1e-6)


class _TwoOutputs(fg.autograd.Function):
    """y = 2x and a mask-like m = x * 0 + 1 marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        y, m = x * 2.0, x * 0.0 + 1.0
        ctx.mark_non_differentiable(m)
        return y, m

    @staticmethod
    def backward(ctx, gy, gm):
        assert gm is not None  # materialized: zeros where nothing used m (or it carries none)
        return gy * 2.0 + gm * 0.0


def test_function_outputs_unused_get_zeros_and_marked_ones_no_gradient() -> None:
    """PyTorch's ctx: an output nothing used reaches backward as zeros (or None after
    set_materialize_grads(False)); mark_non_differentiable outputs carry no gradient, on
    the tape and under fg.grad alike."""
    x = fg.array([1.0, 2.0], requires_grad=True)
    y, m = _TwoOutputs.apply(x)
    assert y.requires_grad and not m.requires_grad
    (y.sum() + (m * x).sum()).backward()     # m is a constant: x's gradient is 2 + m = 3
    assert x.grad.tolist() == [3.0, 3.0]
    g = fg.grad(lambda v: (lambda y, m: y.sum() + (m * v).sum())(*_TwoOutputs.apply(v)))(fg.array([1.0, 2.0]))
    assert g.tolist() == [3.0, 3.0]

    class Lazy(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, ga, gb):
            assert gb is None
            return ga * 2.0

    x = fg.array([1.0, 2.0], requires_grad=True)
    Lazy.apply(x)[0].sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_tape_arrays_inside_functional_transforms() -> None:
    w = fg.ones(3, requires_grad=True)
    g = fg.grad(lambda v: (v * w).sum())(fg.array([1.0, 2.0, 3.0]))
    assert g.tolist() == [1.0, 1.0, 1.0]
    g = fg.grad(lambda v: fg.checkpoint(lambda u: fg.tanh(u * w))(v).sum())(fg.zeros(3))
    assert g.tolist() == [1.0, 1.0, 1.0]
    out = (w * fg.array([1.0, 2.0, 3.0])).sum()
    out.backward()
    assert w.grad.tolist() == [1.0, 2.0, 3.0]


def test_eager_training_loop_memory_is_flat() -> None:
    rng = np.random.default_rng(0)
    W = fg.asarray(rng.standard_normal((16, 4)).astype(np.float32), requires_grad=True)
    x = fg.asarray(rng.standard_normal((8, 16)).astype(np.float32))

    def step():
        nonlocal W
        loss = fg.tanh(x @ W).sum()
        loss.backward()
        with fg.no_grad():
            W = (W - 0.01 * W.grad).detach().requires_grad_()

    for _ in range(5):
        step()
    gc.collect()
    before = fg.memory.allocated()
    for _ in range(100):
        step()
    gc.collect()
    assert fg.memory.allocated() == before


@given(st.lists(st.floats(-2, 2), min_size=1, max_size=5), st.sampled_from(["tanh", "sin", "exp", "sigmoid"]))
def test_tape_gradients_equal_functional_gradients(values, op) -> None:
    data = np.array(values)
    f = lambda v: (getattr(fg, op)(v) * v).sum()  # noqa: E731
    x = fg.asarray(data, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), fg.grad(f)(fg.asarray(data)).numpy(), rtol=1e-12)


WHOLE_VIEWS = {
    "x[:]": lambda x: x[:], "x[...]": lambda x: x[...], "x[:, :]": lambda x: x[:, :],
    "x[0:n]": lambda x: x[0:x.shape[0]], "x.at[:].get()": lambda x: x.at[:].get(),
    "x.view(shape)": lambda x: x.view(x.shape), "x.view(-1)": lambda x: x.view(-1),
    "x.reshape(shape)": lambda x: x.reshape(x.shape), "x.astype(dtype)": lambda x: x.astype(x.dtype),
    "fg.asarray(x)": lambda x: fg.asarray(x), "broadcast_to(shape)": lambda x: fg.broadcast_to(x, x.shape),
    "transpose(identity)": lambda x: fg.transpose(x, (0, 1)), "squeeze()": lambda x: fg.squeeze(x),
}


@pytest.mark.parametrize("view", list(WHOLE_VIEWS))
def test_a_view_of_the_whole_array_keeps_its_history(view) -> None:
    """Indexing or reshaping that selects everything is still an operation on the tape:
    the gradient flows back through it (it used to come back detached, silently)."""
    x = fg.asarray(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = WHOLE_VIEWS[view](x)
    assert y.requires_grad
    (y * fg.asarray(np.arange(6.0).reshape(y.shape))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(2, 3))
    z = fg.asarray(np.arange(6.0).reshape(2, 3))
    assert not WHOLE_VIEWS[view](z).requires_grad  # and without history it stays a plain view


def test_moving_an_array_with_history_between_devices_is_recorded() -> None:
    """``x.to(device)`` is recorded on the tape (ToCopyBackward): the gradient moves back
    to the device the value came from, as in PyTorch (a second CPU device object stands in
    for a GPU here)."""
    from funcgrad.backends.device import Device

    other = Device("cpu", 7)
    x = fg.asarray(np.arange(3.0), requires_grad=True)
    y = (x * 2)._to_device(other)
    assert y.device is other and y.grad_fn.name == "ToCopyBackward" and not y.is_leaf
    (y * y).sum().backward()
    assert x.grad.device is x.device and x.grad.tolist() == [0.0, 8.0, 16.0]
    w = fg.nn.Parameter(fg.ones(2))  # a Parameter's move: its value now, with its edge
    (w._to_device(other) * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    with fg.no_grad():
        assert not x._to_device(other).requires_grad
    moved = x.detach()._to_device(other)  # no history: an ordinary copy
    assert moved.device is other and moved.tolist() == [0.0, 1.0, 2.0] and moved.grad_fn is None
    assert x.to("cpu") is x  # nothing to move
    # second order: the move of the cotangent is recorded too
    z = fg.asarray(np.array([1.5]), requires_grad=True)
    (g,) = fg.autograd.grad((z._to_device(other) ** 3).sum(), z, create_graph=True)
    (g2,) = fg.autograd.grad(g.sum(), z)
    assert g.tolist() == [3 * 1.5**2] and g2.tolist() == [6 * 1.5]


def test_programs_run_on_the_tape() -> None:
    """A traced program holding Parameters as constants records on the tape when it runs
    (what compile will rely on)."""
    m = fg.nn.Linear(3, 2)
    x = fg.ones((4, 3))
    prog = fg.trace(lambda v: m(v).sum())(x)
    out = prog(x)
    assert repr(out.grad_fn) == "<SumBackward>"
    out.backward()
    assert m.weight.grad.shape == (2, 3) and m.bias.grad.tolist() == [4.0, 4.0]


def _second_order_cases():
    """(name, funcgrad f, torch f or None, exact Hessian-vector product or None) for the
    routes whose first gradient once lost its history on the tape."""

    @fg.custom_jvp
    def cube(v):
        return v ** 3

    @cube.defjvp
    def _cube_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return v ** 3, 3.0 * v ** 2 * t

    @fg.custom_vjp
    def square_sin(v):
        return fg.sin(v) ** 2

    square_sin.defvjp(lambda v: (fg.sin(v) ** 2, v), lambda v, g: (g * 2.0 * fg.sin(v) * fg.cos(v),))

    class Cube(fg.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return v ** 3

        @staticmethod
        def backward(ctx, g):
            (v,) = ctx.saved_tensors
            return g * 3.0 * v ** 2

    return [
        ("cumprod", lambda a: (fg.cumprod(a) + a ** 3).sum(), lambda a, t: (t.cumprod(a, 0) + a ** 3).sum()),
        ("checkpoint", lambda a: fg.checkpoint(lambda v: fg.sin(v) * v)(a).sum(), lambda a, t: (t.sin(a) * a).sum()),
        ("custom_jvp", lambda a: (cube(a) * a).sum(), lambda a, t: (a ** 4).sum()),
        ("custom_vjp", lambda a: square_sin(a).sum(), lambda a, t: (t.sin(a) ** 2).sum()),
        ("autograd.Function", lambda a: (Cube.apply(a) * a).sum(), lambda a, t: (a ** 4).sum()),
    ]


@pytest.mark.parametrize("case", _second_order_cases(), ids=lambda c: c[0])
def test_second_order_through_user_rules_and_transforms(case) -> None:
    """create_graph=True twice through rules that compute with the transforms (cumprod),
    fg.checkpoint, custom rules and autograd.Function: the first gradient keeps its history,
    so the Hessian-vector product is exact (against fg.grad(fg.grad) and PyTorch in float64)."""
    name, f, torch_f = case
    values = [1.5, 2.0, 0.5]
    a = fg.array(values, dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(f(a), a, create_graph=True)
    assert g.grad_fn is not None, name
    (h,) = fg.autograd.grad(g.sum(), a)
    want = fg.grad(lambda v: fg.grad(f)(v).sum())(fg.array(values, dtype=fg.float64))
    np.testing.assert_allclose(h.numpy(), want.numpy(), rtol=1e-12)
    try:
        import torch
    except ImportError:
        return
    ta = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(torch_f(ta, torch), ta, create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), ta)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12)
    if name == "cumprod":
        assert h.tolist() == [12.5, 15.0, 6.5]


ZERO_DERIVATIVE = [("floor", lambda x, y: fg.floor(x)), ("ceil", lambda x, y: fg.ceil(x)),
                   ("round", lambda x, y: fg.round(x)), ("trunc", lambda x, y: fg.trunc(x)),
                   ("sign", lambda x, y: fg.sign(x)), ("floor_divide", lambda x, y: fg.floor_divide(x, y)),
                   ("nextafter", lambda x, y: fg.nextafter(x, y)), ("copysign", lambda x, y: fg.copysign(y, x)),
                   ("floor_then_mul", lambda x, y: fg.floor(x) * y)]


@pytest.mark.parametrize("plans", [True, False], ids=["plan", "rules"])
@pytest.mark.parametrize("name,f", ZERO_DERIVATIVE, ids=[n for n, _ in ZERO_DERIVATIVE])
def test_zero_derivative_results_have_history_and_zero_gradients(name, f, plans, monkeypatch) -> None:
    """As PyTorch: a float result of an input that requires grad has a grad_fn, even where
    the derivative is zero almost everywhere; backward gives zeros (not None, not an error),
    by the replayed plan and by the rules alike."""
    from funcgrad.transforms.compiler import plans as replay

    monkeypatch.setattr(replay, "ENABLED", plans)
    x = fg.array([1.5, -2.3, 0.7], dtype=fg.float64, requires_grad=True)
    y = fg.array([2.0, 3.0, -1.0], dtype=fg.float64)
    out = f(x, y)
    assert out.grad_fn is not None and out.requires_grad
    for _ in range(2):  # the second time a plan exists
        x.grad = None
        f(x, y).sum().backward()
        assert x.grad is not None and x.grad.tolist() == [0.0, 0.0, 0.0]
    (g,) = fg.autograd.grad(f(x, y).sum(), x)
    assert g.tolist() == [0.0, 0.0, 0.0]
    try:
        import torch
    except ImportError:
        return
    torch_f = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
               "sign": torch.sign}.get(name)
    if torch_f is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        torch_f(tx).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_integer_and_bool_results_have_no_history() -> None:
    x = fg.array([1.5, -2.3, 0.7], requires_grad=True)
    for out in (x > 0, fg.argmax(x), fg.isnan(x), fg.argsort(x), x.detach(), fg.stop_gradient(x)):
        assert out.grad_fn is None and not out.requires_grad


def _bad_rules(cotangent):
    """A custom_vjp and an autograd.Function whose backward returns ``cotangent(v)``."""

    @fg.custom_vjp
    def f(v):
        return fg.sin(v)

    f.defvjp(lambda v: (fg.sin(v), v), lambda v, g: (cotangent(v),))

    class Bad(fg.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return fg.sin(v)

        @staticmethod
        def backward(ctx, g):
            return cotangent(ctx.saved_tensors[0])

    return f, Bad


@pytest.mark.parametrize("cotangent,error,words", [
    (lambda v: fg.ones(5, dtype=v.dtype), fg.ShapeError, ["(5,)", "(3,)"]),
    (lambda v: fg.ones((2, 2), dtype=v.dtype), fg.ShapeError, ["(2, 2)", "(3,)"]),
    (lambda v: fg.ones(3, dtype=fg.float64), fg.DTypeError, ["float64", "float32"]),
])
def test_user_rules_with_wrong_cotangents_raise(cotangent, error, words) -> None:
    """A custom_vjp bwd or an autograd.Function.backward that returns a cotangent of another
    shape or dtype than its input raises a typed error naming the rule and both, on every
    route (fg.grad, the tape, Function inside fg.grad)."""
    f, Bad = _bad_rules(cotangent)
    x = fg.array([0.1, 0.2, 0.3])
    routes = [lambda: fg.grad(lambda v: f(v).sum())(x),
              lambda: fg.grad(lambda v: Bad.apply(v).sum())(x),
              lambda: Bad.apply(x.detach().requires_grad_()).sum().backward(),
              lambda: f(x.detach().requires_grad_()).sum().backward()]
    for route in routes:
        with pytest.raises(error) as info:
            route()
        for word in words:
            assert word in str(info.value)
    assert "Bad" in _message(routes[2]) and "f" in _message(routes[0])


def _message(route) -> str:
    try:
        route()
    except fg.FuncgradError as exc:
        return str(exc)
    return ""


def test_user_rules_may_return_broadcastable_cotangents() -> None:
    """A cotangent that sums to the input's shape by broadcasting is accepted (PyTorch's rule)."""
    f, Bad = _bad_rules(lambda v: fg.ones((2, 3), dtype=v.dtype))
    x = fg.array([0.1, 0.2, 0.3])
    assert fg.grad(lambda v: f(v).sum())(x).tolist() == [2.0, 2.0, 2.0]
    y = x.detach().requires_grad_()
    Bad.apply(y).sum().backward()
    assert y.grad.tolist() == [2.0, 2.0, 2.0]


def test_assigned_and_passed_gradients_are_checked() -> None:
    p = fg.nn.Parameter(fg.ones(3))
    with pytest.raises(fg.ShapeError, match=r"\(3,\).*\(4,\)"):
        p.grad = fg.ones(4)
    with pytest.raises(fg.DTypeError, match="float32.*float64"):
        p.grad = fg.ones(3, dtype=fg.float64)
    opt = fg.optim.SGD([p], lr=0.1)
    with pytest.raises(fg.DTypeError, match="SGD.step.*float64.*float32"):
        opt.step([fg.ones(3, dtype=fg.float64)])
    with pytest.raises(fg.ShapeError, match="SGD.step.*parameter 0"):
        opt.step([fg.ones(2)])
    assert p.dtype is fg.float32 and p.tolist() == [1.0, 1.0, 1.0]
    opt.step([fg.ones(3)])
    assert p.tolist() == pytest.approx([0.9, 0.9, 0.9])
    named = fg.optim.Adam(dict(w=p).items(), lr=0.1)
    with pytest.raises(fg.ShapeError, match="'w'|w"):
        named.step({"w": fg.ones((3, 1))})


class _NumpyDouble(fg.autograd.Function):
    """forward leaves funcgrad for NumPy, as PyTorch code may; a scale and a label ride along."""

    @staticmethod
    def forward(ctx, x, scale, label):
        ctx.scale = scale
        return fg.asarray(np.asarray(x) * scale), label

    @staticmethod
    def backward(ctx, g, _):
        return g * ctx.scale, None, None


def test_function_is_one_primitive_on_the_tape_and_in_programs() -> None:
    """autograd.Function binds one call-like primitive: forward runs on concrete arrays on the
    tape (NumPy inside is fine), non-array arguments and outputs pass through, fg.grad uses
    the same rule, and fg.trace records one equation."""
    x = fg.array([1.0, 2.0], requires_grad=True)
    y, label = _NumpyDouble.apply(x, 3.0, "tag")
    assert label == "tag" and repr(y.grad_fn) == "<_NumpyDoubleBackward>"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with fg.no_grad():
        assert _NumpyDouble.apply(x, 2.0, None)[0].grad_fn is None

    class Square(fg.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return v * v

        @staticmethod
        def backward(ctx, g):
            assert ctx.needs_input_grad == (True,)  # fg.grad's input needs one, though it is a plain array
            (v,) = ctx.saved_tensors
            return 2.0 * v * g

    assert fg.grad(lambda v: Square.apply(v).sum())(fg.array([1.0, 3.0])).tolist() == [2.0, 6.0]
    program = fg.trace(lambda v: Square.apply(v))(fg.array([1.0, 3.0]))
    assert [e.prim.name for e in program.eqns] == ["autograd_function_call"]


def test_user_code_returning_an_input_never_relabels_it() -> None:
    """A custom_vjp or Function whose output *is* an input: the output is a new array with the
    custom node as its grad_fn; the input keeps its own history (a leaf stays a leaf)."""
    @fg.custom_vjp
    def same(v):
        return v

    same.defvjp(lambda v: (v, None), lambda _, g: (2.0 * g,))

    class Same(fg.autograd.Function):
        @staticmethod
        def forward(ctx, v, c):
            return v, c

        @staticmethod
        def backward(ctx, g, gc):
            return 3.0 * g, None

    for apply, factor in ((lambda v, c: (same(v), c), 2.0), (Same.apply, 3.0)):
        x = fg.array([1.0, 2.0], requires_grad=True)
        c = fg.array([5.0, 5.0])
        y, c_out = apply(x, c)
        assert y is not x and x.is_leaf and x.grad_fn is None and not c.requires_grad
        (y * 1.0).sum().backward()
        assert x.grad.tolist() == [factor, factor]


# -- saved_tensors_hooks: what the tape saves, packed and unpacked ---------------------------

def _loss(x: fg.Array, w: fg.Array) -> fg.Array:
    return (fg.tanh(x @ w) * fg.sin(w).sum()).sum()


@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 1000))
def test_saved_tensors_hooks_that_move_values_out_give_the_same_gradients(n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    xs, ws = rng.standard_normal((n, k)), rng.standard_normal((k, 3))
    grads = []
    for hooked in (False, True):
        x, w = fg.asarray(xs).requires_grad_(), fg.asarray(ws).requires_grad_()
        packed: list[tuple[int, ...]] = []

        def pack(a: fg.Array, packed: list[tuple[int, ...]] = packed) -> np.ndarray:
            packed.append(a.shape)
            return a.numpy().copy()  # (kept outside funcgrad: a NumPy array)

        with fg.autograd.graph.saved_tensors_hooks(pack, fg.asarray) if hooked else contextlib.nullcontext():
            loss = _loss(x, w)
        assert bool(packed) == hooked
        loss.backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_saved_tensors_hooks_unpack_in_each_backward_and_the_innermost_apply() -> None:
    x = fg.asarray([0.5, -1.0, 2.0]).requires_grad_()
    log: list[str] = []
    outer = fg.autograd.graph.saved_tensors_hooks(lambda a: log.append("outer") or a, lambda a: a)
    inner = fg.autograd.graph.saved_tensors_hooks(lambda a: ("boxed", a), lambda p: log.append("unpack") or p[1])
    with outer, inner:
        y = fg.exp(x).sum()  # exp saves its result
    assert "outer" not in log
    y.backward(retain_graph=True)
    y.backward()
    assert log.count("unpack") == 2
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.numpy()))
    with pytest.raises(TypeError, match="saved_tensors_hooks"):
        fg.autograd.graph.saved_tensors_hooks(1, lambda a: a)
