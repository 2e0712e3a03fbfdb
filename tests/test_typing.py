"""Static types: ``mypy`` finds no error in funcgrad or the examples (config in
pyproject.toml), sees the ``fg.*`` namespace, and types array methods as arrays."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """One mypy cache for the module's runs: the second reads funcgrad's analysis from it."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(args: list[str], cache: pathlib.Path) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api")
    out, err, status = api.run([*args, "--cache-dir", str(cache), "--config-file", str(ROOT / "pyproject.toml")])
    return out + err, status


def test_mypy_finds_no_error_in_funcgrad_and_the_examples(cache: pathlib.Path) -> None:
    out, status = _mypy([str(ROOT / "funcgrad"), str(ROOT / "examples")], cache)
    assert status == 0, out[-5000:]


def test_the_namespace_and_array_methods_are_typed(tmp_path: pathlib.Path, cache: pathlib.Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(
        "import funcgrad as fg\n"
        "x = fg.zeros((3,))\n"
        "reveal_type(x)\n"
        "reveal_type(x.sum().exp() + 1)\n"
        "reveal_type(fg.fft.rfft)\n"
        "n: int = x.mean()\n")  # an array where an int is declared: must be caught
    out, status = _mypy([str(user)], cache)
    assert 'Revealed type is "funcgrad.array.Array"' in out, out
    assert out.count('"funcgrad.array.Array"') >= 2, out
    assert "def (Any, *, n: builtins.int | None =" in out or "n: int | None" in out, out
    assert 'Incompatible types in assignment (expression has type "Array", variable has type "int")' in out, out
    assert "has no attribute" not in out, out
