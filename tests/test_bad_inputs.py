"""Every bad input gets a funcgrad error (a ShapeError, DTypeError, ConcretizationError...,
each also a ValueError or TypeError) whose message names the operation and the offending
value, where PyTorch or NumPy would refuse it; and a hypothesis test throws random bad
arguments at the public functions."""

from __future__ import annotations

import inspect
import os
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn

X = fg.arange(6.0).reshape(2, 3)
S = fg.asarray(2.0)  # 0-d

# (label, call, error type, words the message must hold)
BAD = [
    ("zeros float size", lambda: fg.zeros((2.5,)), TypeError, ["zeros", "2.5"]),
    ("zeros string", lambda: fg.zeros("3"), TypeError, ["zeros", "'3'"]),
    ("ones float size", lambda: fg.ones(2.0), TypeError, ["ones", "2.0"]),
    ("full float size", lambda: fg.full((1.5, 2), 0.0), TypeError, ["full", "1.5"]),
    ("reshape string", lambda: X.reshape("6"), TypeError, ["reshape", "'6'"]),
    ("reshape floats", lambda: X.reshape((2.0, 3.0)), TypeError, ["reshape", "2.0"]),
    ("reshape None", lambda: fg.reshape(X, None), TypeError, ["reshape", "None"]),
    ("sum float axis", lambda: fg.sum(X, axis=1.0), TypeError, ["sum", "1.0"]),
    ("max float axis", lambda: X.max(axis=1.0), TypeError, ["max", "1.0"]),
    ("squeeze float axis", lambda: fg.squeeze(X, 1.0), TypeError, ["squeeze", "1.0"]),
    ("concatenate float axis", lambda: fg.concatenate([X, X], axis=1.0), TypeError, ["concatenate", "1.0"]),
    ("concatenate nothing", lambda: fg.concatenate([]), ValueError, ["concatenate", "at least one"]),
    ("squeeze 0-d axis", lambda: fg.squeeze(S, 0), fg.ShapeError, ["squeeze"]),
    ("split 0-d", lambda: fg.split(S, 2), fg.ShapeError, ["split", "0-d"]),
    ("unstack 0-d", lambda: fg.unstack(S), fg.ShapeError, ["unstack", "0-d"]),
    ("repeat wrong count", lambda: fg.repeat(X, [1, 2, 3], axis=0), fg.ShapeError, ["repeat", "3", "2"]),
    ("repeat negative", lambda: fg.repeat(X, -1), ValueError, ["repeat", "-1"]),
    ("tile negative", lambda: fg.tile(X, (-1, 2)), ValueError, ["tile", "-1"]),
    ("linspace negative num", lambda: fg.linspace(0, 1, -1), ValueError, ["linspace", "-1"]),
    ("linspace float num", lambda: fg.linspace(0, 1, 2.5), TypeError, ["linspace", "2.5"]),
    ("eye negative", lambda: fg.eye(-1), ValueError, ["eye", "-1"]),
    ("eye float", lambda: fg.eye(2.5), TypeError, ["eye", "2.5"]),
    ("full too big fill", lambda: fg.full((2,), 2 ** 70), fg.DTypeError, ["full", str(2 ** 70)]),
    ("arange huge", lambda: fg.arange(10 ** 20), ValueError, ["arange", str(10 ** 20)]),
    ("arange None", lambda: fg.arange(None), TypeError, ["arange", "None"]),
    ("pad string", lambda: fg.pad(X, "a"), TypeError, ["pad", "'a'"]),
    ("softmax 0-d dim", lambda: F.softmax(S, dim=1), fg.ShapeError, ["softmax", "dim"]),
    ("cross_entropy 0-d", lambda: F.cross_entropy(S, fg.asarray(0)), fg.ShapeError, ["cross_entropy", "()"]),
    ("max_pool2d kernel 0", lambda: F.max_pool2d(fg.ones((1, 1, 4, 4)), 0), ValueError, ["max_pool2d", "0"]),
    ("conv2d 3-d weight", lambda: F.conv2d(fg.ones((1, 1, 4, 4)), fg.ones((1, 3, 3))), fg.ShapeError,
     ["conv2d", "(1, 3, 3)"]),
    ("conv2d stride 0", lambda: F.conv2d(fg.ones((1, 1, 4, 4)), fg.ones((1, 1, 3, 3)), stride=0), ValueError,
     ["conv2d", "stride"]),
    ("batchnorm batch of one", lambda: nn.BatchNorm1d(3)(fg.ones((1, 3))), ValueError,
     ["BatchNorm1d", "more than 1 value"]),
    ("Sequential of a lambda", lambda: nn.Sequential(lambda v: v), TypeError, ["Sequential", "function"]),
    ("SGD negative lr", lambda: fg.optim.SGD([nn.Parameter(fg.ones(2))], lr=-1), ValueError, ["SGD", "lr", "-1"]),
    ("Adam beta", lambda: fg.optim.Adam([nn.Parameter(fg.ones(2))], betas=(1.5, 0.9)), ValueError,
     ["Adam", "beta", "1.5"]),
    ("Adam eps", lambda: fg.optim.Adam([nn.Parameter(fg.ones(2))], eps=-1e-8), ValueError, ["Adam", "eps"]),
    ("SGD momentum", lambda: fg.optim.SGD([nn.Parameter(fg.ones(2))], lr=0.1, momentum=-0.5), ValueError,
     ["SGD", "momentum"]),
    ("SGD weight decay", lambda: fg.optim.SGD([nn.Parameter(fg.ones(2))], lr=0.1, weight_decay=-1), ValueError,
     ["SGD", "weight_decay"]),
    ("solve singular", lambda: fg.linalg.solve(fg.zeros((2, 2)), fg.ones(2)), fg.LinAlgError, ["solve", "singular"]),
    ("inv singular", lambda: fg.linalg.inv(fg.zeros((2, 2))), fg.LinAlgError, ["inv", "singular"]),
    ("cholesky indefinite", lambda: fg.linalg.cholesky(-fg.eye(2)), fg.LinAlgError, ["cholesky", "positive"]),
]


@pytest.mark.parametrize("label,call,error,words", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs_raise_typed_errors(label, call, error, words) -> None:
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, fg.FuncgradError), (label, type(info.value), info.value)
    for word in words:
        assert word in str(info.value), (label, word, str(info.value))


def test_optimizer_state_with_a_bad_parameter_index() -> None:
    opt = fg.optim.SGD([nn.Parameter(fg.ones(2))], lr=0.1, momentum=0.9)
    state = opt.state_dict()
    state["state"] = {5: {"momentum_buffer": fg.ones(2)}}
    with pytest.raises(ValueError, match="load_state_dict.*5"):
        opt.load_state_dict(state)


def test_linear_with_no_inputs_works_as_in_pytorch() -> None:
    layer = nn.Linear(0, 2)
    assert layer(fg.ones((3, 0))).tolist() == [list(layer.bias.tolist())] * 3


def test_softmax_of_a_0d_array_is_one() -> None:
    assert F.softmax(S, dim=0).item() == 1.0 and F.softmax(S, dim=-1).item() == 1.0
    assert F.log_softmax(S, dim=0).item() == 0.0


def test_programs_refuse_inputs_of_other_types() -> None:
    program = fg.trace(lambda v: v * 2.0)(fg.ones(3))
    with pytest.raises(fg.ShapeError, match=r"Program: input 0 has shape \(4,\).*\(3,\)"):
        program(fg.ones(4))
    with pytest.raises(fg.DTypeError, match="Program: input 0 has dtype float64.*float32"):
        program(fg.ones(3, dtype=fg.float64))
    assert program(fg.ones(3)).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("transform,name", [
    (lambda f, x: fg.grad(f)(x), "grad"), (lambda f, x: fg.value_and_grad(f)(x), "value_and_grad"),
    (lambda f, x: fg.jacfwd(f)(x), "jacfwd"), (lambda f, x: fg.jacrev(f)(x), "jacrev"),
    (lambda f, x: fg.hessian(f)(x), "hessian"), (lambda f, x: fg.vjp(f, x), "vjp"),
    (lambda f, x: fg.jvp(f, (x,), (x,)), "jvp"), (lambda f, x: fg.trace(f)(x), "trace"),
    (lambda f, x: fg.grad(lambda v: fg.checkpoint(f)(v))(x), "checkpoint"),
])
def test_leaked_tracers_are_caught_on_every_use_and_name_the_users_transform(transform, name) -> None:
    leaked = []

    def f(v):
        leaked.append(v)
        return (v * v).sum()

    transform(f, fg.ones(3, dtype=fg.float64))
    tracer = leaked[-1]
    for use in (lambda: tracer.tolist(), lambda: tracer.numpy(), lambda: np.asarray(tracer), lambda: tracer + 1.0,
                lambda: float(tracer.sum()), lambda: tracer.item()):
        with pytest.raises(fg.TracerLeakError, match=rf"created by fg\.{name} "):
            use()


def test_formatting_a_traced_value_needs_a_concrete_one() -> None:
    with pytest.raises(fg.ConcretizationError, match="formatting"):
        fg.trace(lambda v: (f"{v.sum():.2f}", v)[1])(fg.ones(3))
    seen = []
    fg.grad(lambda v: (seen.append(f"{v.sum():.1f}"), v.sum())[1])(fg.ones(3))  # a concrete value inside grad
    assert seen == ["3.0"]


def test_grad_of_a_python_number_says_so() -> None:
    with pytest.raises(fg.ArgumentTypeError, match="returned a Python float"):
        fg.grad(lambda v: 3.0)(fg.ones(3))


def test_no_grad_and_enable_grad_decorate_methods() -> None:
    class Model:
        scale = 2.0

        @fg.no_grad()
        def generate(self, a):
            return a * self.scale

        @fg.no_grad
        def plain(self, a):
            return a * self.scale

        @fg.enable_grad()
        def train_step(self, a):
            return a * self.scale

    a = fg.ones(2, requires_grad=True)
    out = Model().generate(a)
    assert out.tolist() == [2.0, 2.0] and not out.requires_grad
    assert not Model().plain(a).requires_grad
    with fg.no_grad():
        assert Model().train_step(a).requires_grad
    assert Model.generate.__name__ == "generate"


# ---- random bad arguments ------------------------------------------------------------------

def _public_callables():
    import funcgrad.ops as ops

    out = [(f"fg.{n}", getattr(ops, n)) for n in ops.__all__ if callable(getattr(ops, n))
           and not isinstance(getattr(ops, n), type)]
    out += [(f"F.{n}", getattr(F, n)) for n in F.__all__ if callable(getattr(F, n))]
    return out


BAD_VALUES = st.one_of(
    st.sampled_from([2.5, -1, -3, "3", "a", None, (2.0, 3.0), (-1, 2), [1, "x"], 10 ** 20, 1.0, True, {}, object(),
                     (), [[1], [2, 3]], 0, 7, -7, float("nan"), b"x"]),
    st.integers(-5, 5),
)

_OWN_PREFIXES = ("funcgrad",)


@pytest.mark.parametrize("name,fn", _public_callables(), ids=[n for n, _ in _public_callables()])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_random_bad_arguments_get_funcgrad_errors(name, fn, data) -> None:
    """Throw random bad arguments (wrong types, negative and float sizes, out-of-range axes)
    at every public fg.* and fg.nn.functional function: any exception is a funcgrad error, or
    a built-in TypeError/ValueError/IndexError that funcgrad raised itself, naming the
    operation. (Python's own TypeError for a wrong number of arguments is the call's, not
    the operation's.)"""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return
    base = fg.arange(6.0).reshape(2, 3)
    args = [base] + [data.draw(BAD_VALUES) for _ in params[1:]]
    kwargs = {}
    if data.draw(st.booleans()):
        optional = [p.name for p in inspect.signature(fn).parameters.values()
                    if p.default is not p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if optional:
            kwargs[data.draw(st.sampled_from(optional))] = data.draw(BAD_VALUES)
    if params and data.draw(st.booleans()):
        args[0] = data.draw(BAD_VALUES)
    try:
        fn(*args, **kwargs)
    except fg.FuncgradError:
        pass
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError, ZeroDivisionError,
            RecursionError, MemoryError) as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        origin = tb.tb_frame.f_globals.get("__name__", "")
        short = name.split(".")[-1]
        raised_by_call = isinstance(exc, TypeError) and tb.tb_frame.f_code.co_name == "test_random_bad_arguments_get_funcgrad_errors"
        assert raised_by_call or (origin.startswith(_OWN_PREFIXES) and isinstance(exc, (TypeError, ValueError, IndexError))
                                  and short in str(exc)), (
            f"{name}{tuple(args)}{kwargs} raised {type(exc).__name__} from {origin}: {exc}")


def test_impossible_section_counts_are_refused_up_front() -> None:
    """array_split builds one Python object per piece: a count like 10**20 must be refused
    before it is attempted (a list of that many pieces would exhaust memory), and a
    count below 1 is an error as in NumPy, not a single piece."""
    x = fg.arange(3)
    with pytest.raises(fg.ArgumentValueError, match="array_split"):
        fg.array_split(x, 10 ** 20)
    with pytest.raises(fg.ArgumentValueError, match="split: 100000000000000000000 sections"):
        fg.hsplit(fg.zeros(0), 10 ** 20)  # an empty axis divides evenly into any count
    with pytest.raises(fg.ArgumentValueError, match="at least 1"):
        fg.array_split(x, -1)
    assert [a.tolist() for a in fg.array_split(x, 5)] == [[0], [1], [2], [], []]


# ---- random bad arguments to constructors, transforms and loaders ---------------------------

def _in_a_scratch_folder(fn, *args, **kwargs):
    """``fn`` run in an empty temporary folder (a random path argument names a file there)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            return fn(*args, **kwargs)
        finally:
            os.chdir(here)


def _scheduler(cls, model):
    def make(*args, **kwargs):
        return cls(fg.optim.SGD(model.parameters(), lr=0.1), *args, **kwargs)

    return make


def _constructors():
    """(name, callable, fixed leading arguments) for what the fg.* sweep above does not reach:
    nn layers, optimizers (over a model's parameters), schedulers (over an optimizer), keyed
    random functions, control flow, the transforms' own arguments, and save/load targets."""
    model = fg.nn.Linear(2, 2)
    out = []
    for n in fg.nn.__all__:
        obj = getattr(fg.nn, n)
        if isinstance(obj, type) and issubclass(obj, fg.nn.Module) and obj is not fg.nn.Module:
            out.append((f"nn.{n}", obj, ()))
    for n in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop"):
        out.append((f"optim.{n}", getattr(fg.optim, n), (list(model.parameters()),)))
        out.append((f"optim.{n.lower()}", getattr(fg.optim, n.lower()), ()))
    for n in fg.optim.lr_scheduler.__all__:
        cls = getattr(fg.optim.lr_scheduler, n)
        if n in ("LRScheduler", "SequentialLR", "ChainedScheduler"):
            continue
        out.append((f"lr_scheduler.{n}", _scheduler(cls, model), ()))
    key = fg.random.key(0)
    for n in ("normal", "uniform", "randint", "bernoulli", "categorical", "choice", "permutation", "split",
              "fold_in", "bits", "gumbel", "truncated_normal", "exponential", "gamma", "beta", "dirichlet",
              "multivariate_normal", "laplace", "poisson"):
        if hasattr(fg.random, n):
            out.append((f"random.{n}", getattr(fg.random, n), (key,)))
    for n in ("rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "manual_seed"):
        if hasattr(fg, n):
            out.append((f"fg.{n}", getattr(fg, n), ()))
    v = fg.ones(3)
    out += [("cond", lambda *a, **k: fg.cond(*a, **k), ()), ("switch", fg.switch, ()),
            ("while_loop", fg.while_loop, ()), ("fori_loop", fg.fori_loop, ()),
            ("scan", lambda *a, **k: fg.scan(lambda c, x: (c, x), v, *a, **k), ()),
            ("vmap", lambda *a, **k: fg.vmap(lambda x: x, *a, **k)(v), ()),
            ("compile", lambda *a, **k: fg.compile(lambda x: x, *a, **k)(v), ()),
            ("grad", lambda *a, **k: fg.grad(lambda x: x.sum(), *a, **k)(v), ()),
            ("checkpoint", lambda *a, **k: fg.checkpoint(lambda x: x, *a, **k)(v), ()),
            ("save", lambda *a, **k: _in_a_scratch_folder(fg.save, {"w": v}, *a, **k), ()),
            ("load", lambda *a, **k: _in_a_scratch_folder(fg.load, *a, **k), ()),
            ("DataLoader", fg.utils.data.DataLoader, ())]
    return out


_CONSTRUCTORS = _constructors()


@pytest.mark.parametrize("name,fn,fixed", _CONSTRUCTORS, ids=[n for n, _, _ in _CONSTRUCTORS])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_random_bad_arguments_to_constructors_and_transforms(name, fn, fixed, data, tmp_path_factory) -> None:
    """The same sweep over layers, optimizers, schedulers, keyed random functions, control
    flow, the transforms' arguments and save/load targets: every failure is a funcgrad error
    (or a built-in one funcgrad raised, naming the operation), never a raw one from deep inside."""
    try:
        signature = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        signature = []
    params = [p for p in signature if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    known = bool(params) or not any(p.kind is p.VAR_POSITIONAL for p in signature)
    n = max(len(params) - len(fixed), 0) if known else data.draw(st.integers(1, 3))
    args = [*fixed, *(data.draw(BAD_VALUES) for _ in range(n))]
    kwargs = {}
    optional = [p.name for p in signature
                if p.default is not p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if optional and data.draw(st.booleans()):
        kwargs[data.draw(st.sampled_from(optional))] = data.draw(BAD_VALUES)
    try:
        fn(*args, **kwargs)
    except fg.FuncgradError:
        pass
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError, ZeroDivisionError,
            RecursionError, MemoryError, OSError) as exc:
        tb = exc.__traceback__
        frames = []
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        origin = frames[-1].f_globals.get("__name__", "")
        # Python's own TypeError for a wrong number of arguments is the call's, not the operation's
        raised_by_call = isinstance(exc, TypeError) and ("positional argument" in str(exc) or "keyword argument"
                                                         in str(exc) or "multiple values" in str(exc))
        missing_file = isinstance(exc, OSError) and name in ("load", "save")  # (a path that is not there)
        assert raised_by_call or missing_file or (origin.startswith(_OWN_PREFIXES) and isinstance(
            exc, (TypeError, ValueError, IndexError))), (
            f"{name}{tuple(args)}{kwargs} raised {type(exc).__name__} from {origin}: {exc}")


def test_polynomial_power_must_be_a_number_at_least_zero() -> None:
    """A negative power would divide by zero once total_iters is reached: refused at once."""
    opt = fg.optim.SGD([fg.nn.Parameter(fg.ones(2))], lr=0.1)
    for power in (-1, -0.5, float("nan"), float("inf")):
        with pytest.raises(fg.ArgumentValueError, match="PolynomialLR: power must be finite and at least 0"):
            fg.optim.lr_scheduler.PolynomialLR(opt, 1, power)
    with pytest.raises(fg.ArgumentTypeError, match="PolynomialLR: power must be a number, got str"):
        fg.optim.lr_scheduler.PolynomialLR(opt, 1, "2")
    fg.optim.lr_scheduler.PolynomialLR(opt, 1, 0)  # (power 0: the rate stays, then drops to 0)
