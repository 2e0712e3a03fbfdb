"""The scripts in examples/ run (with few epochs)."""

from __future__ import annotations

import pathlib
import runpy
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name,argv", [("gradient_accumulation.py", []), ("digits_pytorch_style.py", ["3"]),
                                       ("digits_functional.py", ["3"]), ("digits_cnn.py", ["2"])])
def test_example_runs(name: str, argv: list[str], capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    if name.startswith("digits"):
        pytest.importorskip("sklearn")
    monkeypatch.setattr(sys, "argv", [name] + argv)
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert "agree" in out or "test accuracy" in out
