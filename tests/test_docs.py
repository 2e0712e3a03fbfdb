"""Every ```python block in README.md and docs/*.md runs, in order, per file."""

from __future__ import annotations

import pathlib
import re

import pytest

import funcgrad as fg

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
SWITCHES = ("explain_cache_misses", "no_retrace", "compile_threads", "write_guard", "compile_backend", "blas", "enable_x64",
            "cpu_heap_cache")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_code_examples_run(path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from funcgrad.primitives import core

    blocks = BLOCK.findall(path.read_text())
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    registered = dict(core.REGISTRY)
    switches = {name: getattr(fg.config, name) for name in SWITCHES}  # (pages set some: compile.md's write guard)
    fg.config.compile_backend = "c"  # (a user's default: native loops)
    try:
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message is the point
                raise AssertionError(f"{path.name}, code block {i} failed:\n{code}") from exc
    finally:  # examples may register demo primitives; keep the registry as the library defines it
        core.REGISTRY.clear()
        core.REGISTRY.update(registered)
        for name, value in switches.items():  # (the suite's own settings back, whatever the page set)
            setattr(fg.config, name, value)


def test_readme_has_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert "<!-- demo-command -->" in text and "python -m funcgrad.demo" in text
    assert "<!-- test-command -->" in text and "pytest" in text


def test_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from funcgrad.demo import main

    assert main(["--tour"]) == 0
    out = capsys.readouterr().out
    assert "same buffer=True" in out and "ViewError" in out and "primitive registry" in out


def test_training_demo_reaches_95_percent(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    pytest.importorskip("sklearn", reason="the demo's data set comes with scikit-learn ('funcgrad[examples]')")
    from funcgrad.demo import train

    result = train(epochs=12, plot=str(tmp_path / "loss.png"))
    out = capsys.readouterr().out
    assert result["accuracy"] >= 95.0 and result["functional_accuracy"] >= 95.0
    assert result["reloaded_accuracy"] == result["accuracy"]
    assert "test accuracy:" in out and "{ lambda" in out and "identical" in out


def test_documentation_site_builds_strictly(tmp_path: pathlib.Path) -> None:
    """``mkdocs build --strict``: every page in the nav, every link and every API reference
    entry (mkdocstrings, from the docstrings) resolves, with no warning."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install '.[docs]')")
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed (pip install '.[docs]')")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-5000:]
    api = (tmp_path / "site" / "api" / "functions" / "index.html").read_text()
    assert 'id="funcgrad.ops.creation.asarray"' in api and 'id="funcgrad.ops.elementwise.exp"' in api
    for page, wanted, foreign in API_PAGES:
        names = {anchor.rsplit(".", 1)[-1] for anchor in re.findall(r'id="(funcgrad\.[\w.]+)"',
                 (tmp_path / "site" / "api" / page / "index.html").read_text())}
        assert set(wanted) <= names, (page, sorted(set(wanted) - names))
        assert not names & set(foreign), (page, sorted(names & set(foreign)))


# The API reference, page by page: the names of the page's topic it must render, and names
# its modules only import (primitives, errors, the array class), which must stay off it.
IMPORTED_ONLY = ["stop_gradient_p", "ArgumentTypeError", "ArgumentValueError", "ShapeError", "ArrayBase", "CPU",
                 "broadcast_to_p", "concatenate_p", "bind", "Primitive"]
API_PAGES = [
    ("transforms", ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "vmap", "checkpoint",
                    "compile", "custom_vjp", "custom_jvp", "trace", "make_jaxpr", "cond", "scan", "no_grad"],
     IMPORTED_ONLY + ["Array", "tree"]),
    ("functions", ["asarray", "zeros", "exp", "sum", "reshape", "where", "matmul", "isclose", "allclose"],
     IMPORTED_ONLY + ["Array", "Device"]),
    ("random", ["key", "split", "normal", "uniform", "Generator", "manual_seed"], IMPORTED_ONLY),
    ("nn", ["Linear", "LSTM", "FractionalMaxPool2d", "AdaptiveLogSoftmaxWithLoss"], IMPORTED_ONLY),
    ("testing", ["check_grads", "numerical_jvp"], IMPORTED_ONLY),
]
