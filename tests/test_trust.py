"""Wrong values, write routes and raw errors an adversarial probe found, each pinned by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.primitives.ad import VJPRule

# ---- derivatives at the edges -----------------------------------------------------------------


def test_second_derivative_of_sinc_at_zero_is_its_limit() -> None:
    assert fg.grad(fg.sinc)(0.0).item() == 0.0
    np.testing.assert_allclose(fg.grad(fg.grad(fg.sinc))(fg.asarray(0.0, dtype=fg.float64)).item(),
                               -math.pi ** 2 / 3, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(fg.grad(fg.grad(fg.grad(fg.sinc))))(fg.asarray(0.0, dtype=fg.float64)).item(),
                               math.pi ** 4 / 5, rtol=1e-12)
    x = np.array([-1.5, -0.25, 0.0, 0.5, 2.0])
    np.testing.assert_allclose(fg.sinc(fg.asarray(x)).numpy(), np.sinc(x), rtol=1e-12, atol=1e-15)


def test_second_derivative_of_sinc_equals_jax(jax64) -> None:
    jnp = jax64.numpy
    for x in (0.0, 0.3, -1.7):
        want = jax64.grad(jax64.grad(jnp.sinc))(x)
        np.testing.assert_allclose(fg.grad(fg.grad(fg.sinc))(fg.asarray(x, dtype=fg.float64)).item(), float(want),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("power", [lambda x: x ** 0.0, lambda x: fg.power(x, 0.0),
                                   lambda x: fg.power(x, fg.asarray(0.0, dtype=fg.float64))])
def test_the_derivative_of_x_to_the_zero_is_zero_at_zero(power) -> None:
    zero = fg.asarray(0.0, dtype=fg.float64)
    assert fg.grad(power)(zero).item() == 0.0
    assert fg.grad(fg.grad(power))(zero).item() == 0.0
    assert fg.jvp(power, (zero,), (fg.asarray(1.0, dtype=fg.float64),))[1].item() == 0.0
    x = fg.asarray(0.0, dtype=fg.float64, requires_grad=True)
    power(x).backward()
    assert x.grad.item() == 0.0


def test_the_derivative_of_a_power_elsewhere_is_unchanged() -> None:
    for y in (2.5, -1.0, 0.5):
        np.testing.assert_allclose(fg.grad(lambda x, y=y: fg.power(x, fg.asarray(y, dtype=fg.float64)))(
            fg.asarray(2.0, dtype=fg.float64)).item(), y * 2.0 ** (y - 1), rtol=1e-12)


# ---- reverse-mode rules: one typed protocol -----------------------------------------------------

def test_every_reverse_mode_rule_is_a_vjp_rule() -> None:
    import funcgrad.transforms  # noqa: F401  (registers the call-like primitives)

    for prim in fg.primitives.registry():
        if prim.vjp is not None:
            assert isinstance(prim.vjp, VJPRule), prim.name


def test_checkpoint_everything_saveable_over_call_like_primitives() -> None:
    @fg.custom_vjp
    def double(x):
        return x * 2.0

    double.defvjp(lambda x: (x * 2.0, x), lambda r, g: (g * 3.0,))  # a deliberately different rule
    inner = fg.compile(lambda v: fg.sin(v))
    x = fg.ones(3)
    for f, want in ((lambda v: double(v).sum(), np.full(3, 3.0)), (lambda v: inner(v).sum(), np.cos(np.ones(3))),
                    (lambda v: fg.cond(v.sum() > 0, lambda u: u * u, lambda u: u, v).sum(), np.full(3, 2.0))):
        got = fg.grad(lambda v, f=f: fg.checkpoint(f, "everything")(v))(x)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


# ---- stateful training inside fg.compile -------------------------------------------------------

def test_backward_inside_compile_raises_concretization_error() -> None:
    model = fg.nn.Linear(3, 2)

    def step(x):
        loss = model(x).sum()
        loss.backward()
        return loss

    with pytest.raises(fg.ConcretizationError, match=r"backward\(\) on a traced value of fg.compile"):
        fg.compile(step)(fg.ones((4, 3)))


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_an_optimizer_step_inside_compile_raises_concretization_error(name) -> None:
    model = fg.nn.Linear(3, 2)
    opt = getattr(fg.optim, name)(model.parameters(), lr=0.1)
    model(fg.ones((4, 3))).sum().backward()  # gradients exist: the step would run, once, while tracing
    before = model.weight.numpy().copy()

    def step(x):
        opt.step()
        return model(x).sum()

    with pytest.raises(fg.ConcretizationError, match="fg.compile"):
        fg.compile(step)(fg.ones((4, 3)))
    assert np.array_equal(model.weight.numpy(), before)


# ---- immutability --------------------------------------------------------------------------------

def _writable_aliases(value, x) -> bool:
    return isinstance(value, np.ndarray) and value.flags.writeable and np.shares_memory(value, x.numpy())


def test_no_public_attribute_hands_out_writable_memory() -> None:
    x = fg.asarray([1.0, 2.0, 3.0])
    for obj in (x, x.buffer):
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if callable(value) and name in ("numpy", "tolist", "__array__", "cpu", "detach", "contiguous"):
                value = value()
            assert not _writable_aliases(value, x), f"{type(obj).__name__}.{name}"
    assert not hasattr(x.buffer, "raw_flat") and not hasattr(x.buffer, "raw_owner")
    with pytest.raises(ValueError):
        x.buffer.flat[0] = 5.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_an_unbatched_loader_copies_numpy_samples() -> None:
    class Rows(fg.utils.data.Dataset):
        def __init__(self):
            self.a = np.arange(6.0).reshape(3, 2)

        def __getitem__(self, i):
            return self.a[i], {"row": self.a[i]}

        def __len__(self):
            return 3

    data = Rows()
    first, fields = next(iter(fg.utils.data.DataLoader(data, batch_size=None)))
    data.a[0, 0] = 99.0
    assert first.tolist() == [0.0, 1.0] and fields["row"].tolist() == [0.0, 1.0]


# ---- every bad input the probe listed gets a typed error ------------------------------------------

def _bad_calls():
    key = fg.random.key(0)
    x, v = fg.ones((3, 4)), fg.ones(3)
    model = fg.nn.Linear(2, 2)
    opt = fg.optim.SGD(model.parameters(), lr=0.1)
    lr = fg.optim.lr_scheduler
    return {
        "boolean mask of the wrong length": (lambda: x[fg.asarray([True, False])], IndexError),
        "choice from nothing": (lambda: fg.random.choice(key, 0, (3,)), fg.ArgumentValueError),
        "choice with p of the wrong length": (lambda: fg.random.choice(key, 3, (2,), p=fg.asarray([0.5, 0.5])),
                                              fg.ShapeError),
        "narrow past the end": (lambda: x.narrow(0, 2, 5), IndexError),
        "rot90 about one axis": (lambda: fg.rot90(x, axes=(0, 0)), fg.ArgumentValueError),
        "rand of a float size": (lambda: fg.rand(2.5), fg.ArgumentTypeError),
        "normal of a float shape": (lambda: fg.random.normal(key, (2.5,)), fg.ArgumentTypeError),
        "normal with a negative std": (lambda: fg.normal(0.0, -1.0, (2,)), fg.ArgumentValueError),
        "multinomial of negative weights": (lambda: fg.multinomial(fg.asarray([-1.0, 2.0]), 1), fg.ArgumentValueError),
        "bernoulli of 1.5": (lambda: fg.bernoulli(fg.asarray([1.5])), fg.ArgumentValueError),
        "fold_in of -1": (lambda: fg.random.fold_in(key, -1), fg.ArgumentValueError),
        "fold_in of 2**40": (lambda: fg.random.fold_in(key, 2 ** 40), fg.ArgumentValueError),
        "fori_loop to 2.5": (lambda: fg.fori_loop(0, 2.5, lambda i, c: c, v), fg.ArgumentTypeError),
        "fori_loop to 'a'": (lambda: fg.fori_loop(0, "a", lambda i, c: c, v), fg.ArgumentTypeError),
        "cond on a (1,) predicate": (lambda: fg.cond(fg.asarray([True]), lambda a: a, lambda a: -a, v),
                                     fg.ArgumentTypeError),
        "cond on 'yes', compiled": (lambda: fg.compile(lambda a: fg.cond("yes", lambda b: b, lambda b: -b, a))(v),
                                    fg.ArgumentTypeError),
        "binary_cross_entropy outside [0, 1]": (
            lambda: fg.nn.functional.binary_cross_entropy(fg.asarray([1.5]), fg.asarray([1.0])), fg.ArgumentValueError),
        "Module.to(int32)": (lambda: fg.nn.Linear(2, 2).to(fg.int32), fg.ArgumentTypeError),
        "register_buffer(5, x)": (lambda: fg.nn.Module().register_buffer(5, v), fg.ArgumentTypeError),
        "register_parameter of a plain array": (lambda: fg.nn.Module().register_parameter("w", v),
                                                fg.ArgumentTypeError),
        "grad(5)": (lambda: fg.grad(5), fg.ArgumentTypeError),
        "checkpoint(5)": (lambda: fg.checkpoint(5), fg.ArgumentTypeError),
        "custom_vjp(5)": (lambda: fg.custom_vjp(5), fg.ArgumentTypeError),
        "stop_gradient('a')": (lambda: fg.stop_gradient("a"), fg.ArgumentTypeError),
        "vmap in_axes=(0.5,)": (lambda: fg.vmap(lambda a: a, in_axes=(0.5,))(v), fg.ArgumentTypeError),
        "vmap out_axes='a'": (lambda: fg.vmap(lambda a: a, out_axes="a")(v), fg.ArgumentTypeError),
        "vmap axis_size=-1": (lambda: fg.vmap(lambda a: a, axis_size=-1), fg.ArgumentValueError),
        "x.at[0].frobnicate": (lambda: x.at[0].frobnicate, fg.UnknownAttributeError),
        "StepLR(5, 1)": (lambda: lr.StepLR(5, 1), fg.ArgumentTypeError),
        "debug.print(5)": (lambda: fg.debug.print(5), fg.ArgumentTypeError),
        "Conv2d(3, 4, 0)": (lambda: fg.nn.Conv2d(3, 4, 0), fg.ArgumentValueError),
        "Conv1d(0, 4, 3)": (lambda: fg.nn.Conv1d(0, 4, 3), fg.ArgumentValueError),
        "StepLR(opt, step_size=0)": (lambda: lr.StepLR(opt, step_size=0), fg.ArgumentValueError),
        "random.split(key, 2.5)": (lambda: fg.random.split(key, 2.5), fg.ArgumentTypeError),
        "grad(f, argnums=1.5)": (lambda: fg.grad(lambda a: a.sum(), argnums=1.5), fg.ArgumentTypeError),
        "compile(f, donate_argnums=1.5)": (lambda: fg.compile(lambda a: a, donate_argnums=1.5), fg.ArgumentTypeError),
        "x.size(5)": (lambda: x.size(5), fg.ShapeError),
        "random.permutation(key, 2.5)": (lambda: fg.random.permutation(key, 2.5), fg.ArgumentTypeError),
        "scan(length=-1)": (lambda: fg.scan(lambda c, _: (c, c), v, None, length=-1), fg.ArgumentValueError),
        "an eager scan whose carry changes structure": (
            lambda: fg.scan(lambda c, xi: ((c, c), c), v, fg.ones((2, 3))), fg.ShapeError),
        "an eager scan whose step returns one value": (lambda: fg.scan(lambda c, xi: c, v, fg.ones((2, 3))),
                                                       fg.ArgumentTypeError),
        "SGD(lr='a')": (lambda: fg.optim.SGD(model.parameters(), lr="a"), fg.ArgumentTypeError),
        "optim.adam(lr='a')": (lambda: fg.optim.adam(lr="a"), fg.ArgumentTypeError),
        "SGD.load_state_dict({})": (lambda: opt.load_state_dict({}), fg.ArgumentValueError),
        "SGD(model)": (lambda: fg.optim.SGD(model), fg.ArgumentTypeError),
        "LambdaLR(opt, 5)": (lambda: lr.LambdaLR(opt, 5), fg.ArgumentTypeError),
        "checkpoint(policy=5)": (lambda: fg.checkpoint(lambda a: a, policy=5), fg.ArgumentTypeError),
        "OneCycleLR without total_steps": (lambda: lr.OneCycleLR(opt, max_lr=0.1), fg.ArgumentValueError),
        "Module.load_state_dict(5)": (lambda: model.load_state_dict(5), fg.ArgumentTypeError),
        "DataLoader(5)": (lambda: fg.utils.data.DataLoader(5), fg.ArgumentTypeError),
        "fg.save to an int": (lambda: fg.save({"w": v}, 5), fg.ArgumentTypeError),
        "fg.load of an int": (lambda: fg.load(5), fg.ArgumentTypeError),
    }


@pytest.mark.parametrize("name", list(_bad_calls()))
def test_a_bad_call_gets_a_typed_error(name) -> None:
    call, error = _bad_calls()[name]
    with pytest.raises(error):
        call()


def test_a_text_mode_file_is_refused_by_name(tmp_path) -> None:
    path = tmp_path / "w.safetensors"
    fg.save({"w": fg.ones(2)}, path)
    with open(path) as text, pytest.raises(fg.ArgumentTypeError, match="fg.load: the file is open in text mode"):
        fg.load(text)
    with open(path, "rb") as binary:
        assert fg.load(binary)["w"].tolist() == [1.0, 1.0]


def test_vmap_broadcasts_a_constant_and_maps_over_an_empty_batch() -> None:
    assert fg.vmap(lambda a: 1.0)(fg.ones(3)).tolist() == [1.0, 1.0, 1.0]
    values, indices = fg.vmap(lambda a: fg.topk(a, 2))(fg.ones((0, 3)))
    assert values.shape == (0, 2) and indices.shape == (0, 2) and indices.dtype == fg.int64
    assert fg.vmap(lambda a: fg.topk(a, 1)[0])(fg.asarray([[1.0, 3.0, 2.0], [5.0, 4.0, 6.0]])).tolist() == [[3.0],
                                                                                                              [6.0]]


# ---- modules under fg.compile: settings are guarded ------------------------------------------------

def test_a_compiled_module_traces_again_when_a_setting_changes() -> None:
    model = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.Dropout(0.0))
    compiled = fg.compile(model)
    x = fg.ones((2, 4))
    kept = compiled(x)
    assert np.allclose(kept.numpy(), model(x).numpy())
    model[1].p = 1.0  # a changed Dropout.p is read: everything is dropped now
    assert compiled(x).tolist() == [[0.0] * 4] * 2 and compiled.cache_size() == 2
    model.eval()
    assert np.allclose(compiled(x).numpy(), kept.numpy()) and compiled.cache_size() == 3
    compiled(x)
    assert compiled.cache_size() == 3  # nothing changed: no new trace


# ---- vmap of random draws: torch.func.vmap's randomness ---------------------------------------------

def test_vmap_refuses_a_generator_draw_unless_told() -> None:
    x = fg.ones((3, 64))
    drop = lambda a: fg.nn.functional.dropout(a, 0.5, training=True)  # noqa: E731
    with pytest.raises(fg.ArgumentValueError, match="randomness='different'"):
        fg.vmap(drop)(x)
    with pytest.raises(fg.ArgumentValueError, match="randomness must be"):
        fg.vmap(drop, randomness="sometimes")
    same = fg.vmap(drop, randomness="same")(x).numpy()
    assert (same == same[0]).all()
    different = fg.vmap(drop, randomness="different")(x).numpy()
    assert not (different == different[0]).all()
    assert set(np.unique(different)) <= {0.0, 2.0}
    rows = fg.vmap(fg.vmap(lambda a: fg.rand(2), randomness="different"), randomness="different")(fg.ones((2, 3)))
    assert len({tuple(r) for r in rows.numpy().reshape(6, 2).tolist()}) == 6
    key = fg.random.key(0)  # explicit keys follow their keys, as in JAX: no error, the same numbers
    assert (fg.vmap(lambda a: fg.random.normal(key, (2,)))(x).numpy() == fg.random.normal(key, (2,)).numpy()).all()


def test_vmap_different_draws_under_compile_change_per_call() -> None:
    f = fg.compile(fg.vmap(lambda a: a + fg.rand(1), randomness="different"))
    first, second = f(fg.zeros((3, 1))).numpy(), f(fg.zeros((3, 1))).numpy()
    assert len(set(first.ravel().tolist())) == 3 and not np.array_equal(first, second)


# ---- Python numbers passed to fg.compile are traced, weakly typed (jax.jit's rule) -----------------

def test_a_python_number_argument_does_not_trace_again() -> None:
    step = fg.compile(lambda i, w: w * (1.0 + 0.1 * i))
    w = fg.asarray([1.0, 2.0], dtype=fg.float64)
    for i in range(20):
        np.testing.assert_array_equal(step(i, w).numpy(), (w * (1.0 + 0.1 * i)).numpy())
    assert step._traces == 1
    scale = fg.compile(lambda a, s: a * s)
    x = fg.asarray([1.0, 2.0])
    assert scale(x, 2.0).dtype == fg.float32 and scale(x, 3.0).tolist() == [3.0, 6.0]  # weak: x's dtype
    assert scale(fg.asarray([1, 2], dtype=fg.int32), 3).dtype == fg.int32
    assert scale._traces == 2  # (a float and an int: two weak types, as in JAX)


def test_signed_zero_and_nan_arguments_are_values_not_signatures() -> None:
    divide = fg.compile(lambda a, s: a / s)
    x = fg.asarray([1.0, 2.0])
    assert divide(x, 0.0).tolist() == [math.inf, math.inf]
    assert divide(x, -0.0).tolist() == [-math.inf, -math.inf]  # (one trace for both: the sign is a value)
    add = fg.compile(lambda a, s: a + s)
    add(x, math.nan), add(x, math.nan)
    assert add._traces == 1 and divide._traces == 1


def test_static_python_numbers_are_still_literals() -> None:
    f = fg.compile(lambda a, n: a.reshape(n, -1), static_argnums=1)
    assert f(fg.ones(6), 2).shape == (2, 3) and f(fg.ones(6), 3).shape == (3, 2)
    g = fg.compile(lambda a, n: a.reshape(n, -1))
    with pytest.raises(fg.ConcretizationError):
        g(fg.ones(6), 2)


# ---- det's gradient is the cofactor matrix, at singular matrices too --------------------------------

def test_the_gradient_of_det_at_a_singular_matrix_is_the_adjugate() -> None:
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    got = fg.grad(fg.linalg.det)(fg.asarray(singular)).numpy()
    adjugate_t = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])  # the cofactors, by hand
    np.testing.assert_allclose(got, adjugate_t, atol=1e-12)
    x = fg.asarray(singular, requires_grad=True)
    fg.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), adjugate_t, atol=1e-12)
    with pytest.raises(fg.LinAlgError, match="singular"):  # a second derivative needs the inverse
        fg.hessian(fg.linalg.det)(fg.asarray(singular))


def test_det_and_its_derivatives_equal_jax(jax64) -> None:
    rng = np.random.default_rng(0)
    jdet = jax64.numpy.linalg.det
    for a in (rng.standard_normal((3, 3)), rng.standard_normal((2, 4, 4)), np.array([[1.0, 2.0], [2.0, 4.0]])):
        np.testing.assert_allclose(fg.linalg.det(fg.asarray(a)).numpy(), np.linalg.det(a), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(fg.grad(lambda m: fg.linalg.det(m).sum())(fg.asarray(a)).numpy(),
                                   jax64.grad(lambda m: jdet(m).sum())(a), rtol=1e-10, atol=1e-12)
    a = rng.standard_normal((3, 3))
    np.testing.assert_allclose(fg.hessian(fg.linalg.det)(fg.asarray(a)).numpy(), jax64.hessian(jdet)(a), rtol=1e-9,
                               atol=1e-12)


def test_lists_and_tuples_of_arrays_are_keyed_by_their_structure() -> None:
    """A call on lists or tuples of arrays (a model's parameters) finds its program without
    flattening a pytree; a list and a tuple, or lists of other lengths, are other signatures,
    and an array that requires grad still reaches the tape."""
    scaled = fg.compile(lambda ps, x: [p * x for p in ps])
    a, b, x = fg.asarray([1.0, 2.0]), fg.asarray([3.0, 4.0]), fg.asarray([2.0, 0.5])
    assert [v.tolist() for v in scaled([a, b], x)] == [[2.0, 1.0], [6.0, 2.0]]
    assert [v.tolist() for v in scaled([a, b], x)] == [[2.0, 1.0], [6.0, 2.0]] and scaled._traces == 1
    assert [v.tolist() for v in scaled((a, b), x)] == [[2.0, 1.0], [6.0, 2.0]] and scaled._traces == 2
    assert [v.tolist() for v in scaled([a], x)] == [[2.0, 1.0]] and scaled._traces == 3
    assert [v.tolist() for v in scaled([a, b, a], x)][2] == [2.0, 1.0] and scaled._traces == 4
    w = fg.asarray([1.0, -1.0], requires_grad=True)
    sum(v.sum() for v in scaled([w, b], x)).backward()
    assert w.grad.tolist() == [2.0, 0.5] and scaled._traces == 4
