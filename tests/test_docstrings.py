"""Every public function and class, and every public method and property of the public
classes, has a docstring whose first line summarizes it: the test walks the public namespaces."""

from __future__ import annotations

import doctest
import inspect
import sys

import pytest

import funcgrad as fg

SPACES = [("fg", fg), ("fg.nn", fg.nn), ("fg.nn.functional", fg.nn.functional), ("fg.optim", fg.optim),
          ("fg.optim.lr_scheduler", fg.optim.lr_scheduler), ("fg.random", fg.random), ("fg.debug", fg.debug),
          ("fg.testing", fg.testing), ("fg.memory", fg.memory), ("fg.autograd", fg.autograd), ("fg.fft", fg.fft),
          ("fg.linalg", fg.linalg), ("fg.scipy.special", fg.scipy.special), ("fg.utils.data", fg.utils.data),
          ("fg.cuda", fg.cuda), ("fg.accelerator", fg.accelerator), ("fg.amp", fg.amp),
          ("fg.profiler", fg.profiler), ("fg.export", sys.modules["funcgrad.export"]),
          ("fg.distributed", fg.distributed)]


def _own_doc(obj: object) -> str:
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return (doc or "").strip()


TWO_RANKS = "Example (on two ranks"  # the heading of an example only a process group runs


def _public() -> list[tuple[str, object]]:
    found = []
    for prefix, space in SPACES:
        names = getattr(space, "__all__", None) or [n for n in dir(space) if not n.startswith("_")]
        for name in names:
            obj = getattr(space, name, None)
            if inspect.ismodule(obj) or not (inspect.isfunction(obj) or isinstance(obj, type) or
                                             callable(getattr(obj, "__wrapped__", None))):
                continue
            if not getattr(obj, "__module__", "").startswith("funcgrad"):
                continue  # (a re-exported NumPy or Python object documents itself)
            found.append((f"{prefix}.{name}", obj))
            if isinstance(obj, type):
                found.extend(_methods(f"{prefix}.{name}", obj))
    found.extend(_methods("Array", fg.Array.__mro__[1]))
    return found


def _methods(prefix: str, cls: type) -> list[tuple[str, object]]:
    """The public methods and properties a funcgrad class defines itself."""
    out = []
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if inspect.isfunction(attr) or isinstance(attr, property):
            out.append((f"{prefix}.{name}", attr))
    return out


def test_every_public_function_class_and_array_method_has_a_summary() -> None:
    missing = sorted(name for name, obj in _public() if not _own_doc(obj))
    assert not missing, f"{len(missing)} without a docstring: {missing}"


def test_summaries_are_sentences() -> None:
    short = sorted(name for name, obj in _public() if _own_doc(obj) and len(_own_doc(obj).splitlines()[0]) < 8)
    assert not short, short


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
                                  "compile", "checkpoint", "custom_vjp", "custom_jvp"])
def test_the_transforms_docstring_examples_run(name: str) -> None:
    """The examples in the API reference's transforms page (Google-style docstrings) run."""
    obj = getattr(fg, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={"fg": fg})
    assert tests and tests[0].examples, f"fg.{name} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"fg.{name}: {runner.failures} failing example(s)"


def _examples_run(obj: object, label: str) -> None:
    tests = doctest.DocTestFinder(recurse=False).find(obj, label, globs={"fg": fg})
    assert tests and tests[0].examples, f"{label} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    state = fg.get_rng_state()
    try:
        for test in tests:
            runner.run(test)
    finally:
        fg.set_rng_state(state)  # (the generators' examples reseed the global generator)
    assert runner.failures == 0, f"{label}: {runner.failures} failing example(s)"


@pytest.mark.parametrize("space, name", [
    *((fg.random, n) for n in ("key", "split", "fold_in", "bits", "uniform", "normal", "randint", "permutation",
                               "choice", "bernoulli", "categorical")),
    *((fg, n) for n in ("manual_seed", "rand", "randn", "randint", "randperm", "asarray", "zeros", "arange", "where",
                        "matmul", "sum", "mean", "concatenate", "stack", "einsum", "linspace")),
    *((fg.optim, n) for n in ("SGD", "Adam")), *((fg.nn, n) for n in ("Linear", "Dropout", "Conv2d", "LayerNorm", "Embedding")),
    (fg.optim.lr_scheduler, "StepLR"), (fg.linalg, "solve"), (fg.linalg, "det"), (fg.fft, "fft"), (fg.fft, "rfft"),
    *((fg.nn.functional, n) for n in ("relu", "gelu", "softmax", "conv2d", "cross_entropy", "mse_loss")),
    (fg.nn, "Sequential"),
    *((fg, n) for n in ("switch", "cond", "while_loop", "scan", "fori_loop", "stop_gradient", "no_grad",
                        "enable_grad", "make_jaxpr", "trace", "make_mesh", "shard_map"))])
def test_the_random_and_optimizer_docstring_examples_run(space: object, name: str) -> None:
    """``fg.random``'s JAX-style functions show JAX's own bits, ``fg.manual_seed``'s functions
    and the layers PyTorch's numbers after the same seed, the optimizers PyTorch's steps; the
    examples run."""
    _examples_run(getattr(space, name), f"{space.__name__}.{name}")


def test_the_generated_reference_sections_run() -> None:
    """Every docstring ``ops.reference_docs`` makes (the elementwise functions and the array
    functions of a one-line summary; values checked against NumPy's and SciPy's when
    written) has its sections, and its example runs."""
    from funcgrad.ops.reference_docs import ELEMENTWISE, FUNCTIONS

    for name in [*ELEMENTWISE, *FUNCTIONS]:
        doc = getattr(fg, name).__doc__
        assert "Args:" in doc and "Returns:" in doc, name
        _examples_run(getattr(fg, name), f"fg.{name}")


def test_the_lax_reference_sections_run() -> None:
    """``fg.lax``'s collectives and primitive wrappers list their parameters, and their
    examples (``jax.lax``'s values, under ``jax.vmap`` for the collectives) run."""
    import inspect

    from funcgrad.lax import _REFERENCE

    for name in _REFERENCE:
        fn = getattr(fg.lax, name)
        assert all(f"    {p}: " in fn.__doc__ for p in inspect.signature(fn).parameters), name
        _examples_run(fn, f"fg.lax.{name}")


def test_the_linalg_reference_sections_run() -> None:
    """Every ``fg.linalg`` function has its sections (values checked against ``numpy.linalg``
    when written), and its example runs; the functions ``fg`` also has are the same objects."""
    for name in fg.linalg.__all__:
        fn = getattr(fg.linalg, name)
        if isinstance(fn, type):
            continue
        assert "Args:" in fn.__doc__ and "Example:" in fn.__doc__, name
        _examples_run(fn, f"fg.linalg.{name}")
    assert fg.linalg.inv is fg.inv and fg.linalg.cholesky is fg.cholesky


def test_the_layers_generated_reference_sections_run() -> None:
    """Every layer, loss and functional form ``nn.reference_docs`` documents has its example
    (values checked against PyTorch's when written), and it runs; a module whose constructor names
    its parameters lists each of them."""
    import inspect

    from funcgrad.nn.reference_docs import FUNCTIONAL, MODULES

    for name in FUNCTIONAL:
        _examples_run(getattr(fg.nn.functional, name), f"fg.nn.functional.{name}")
    for name in MODULES:
        cls = getattr(fg.nn, name)
        named = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
        if named and not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in named):
            assert all(f"    {p.name}: " in cls.__doc__ for p in named), name
        _examples_run(cls, f"fg.nn.{name}")


def test_the_random_generated_reference_sections_run() -> None:
    """Every ``fg.random`` function ``random.reference_docs`` documents lists each of its
    parameters, and its example (JAX's values for the same key, when written) runs."""
    import inspect

    from funcgrad.random.reference_docs import RANDOM

    for name in RANDOM:
        fn = getattr(fg.random, name)
        assert all(f"    {p}: " in fn.__doc__ for p in inspect.signature(fn).parameters), name
        _examples_run(fn, f"fg.random.{name}")


def test_the_optimizers_generated_reference_sections_run() -> None:
    """Every optimizer ``optim.reference_docs`` documents lists its parameters, and its
    example (one step, PyTorch's numbers when written) runs."""
    import inspect

    from funcgrad.optim.reference_docs import OPTIMIZERS

    for name in OPTIMIZERS:
        cls = getattr(fg.optim, name)
        assert all(f"    {p}: " in cls.__doc__ for p in inspect.signature(cls.__init__).parameters if p != "self")
        _examples_run(cls, f"fg.optim.{name}")


def test_the_schedulers_generated_reference_sections_run() -> None:
    """Every learning-rate scheduler ``optim.reference_docs`` documents lists its parameters,
    and its example (the rates it sets, PyTorch's when written) runs."""
    import inspect

    from funcgrad.optim.reference_docs import SCHEDULERS

    for name in SCHEDULERS:
        cls = getattr(fg.optim.lr_scheduler, name)
        assert all(f"    {p}: " in cls.__doc__ for p in inspect.signature(cls.__init__).parameters if p != "self")
        _examples_run(cls, f"fg.optim.lr_scheduler.{name}")


def test_every_example_in_the_public_docstrings_runs() -> None:
    """Each example anywhere in the public namespaces (functions, classes, their methods)
    runs and prints what it shows; the lists above also check the sections' presence."""
    ran = 0
    for name, obj in _public():
        if isinstance(obj, property):
            obj = obj.fget
        if TWO_RANKS in (obj.__doc__ or ""):
            continue  # (run by tests/test_distributed.py, on two ranks)
        tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={"fg": fg})
        if tests and tests[0].examples:
            _examples_run(obj, name)
            ran += 1
    assert ran >= 800, ran
