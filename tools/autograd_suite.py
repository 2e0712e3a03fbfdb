"""Run HIPS autograd's own NumPy tests against funcgrad, through a name shim.

The measure of how far autograd code ports by its imports: autograd's NumPy, linalg,
systematic, scalar-op, binary-op, Jacobian and true-division tests (367 of them), with
``autograd`` a shim over funcgrad in 64-bit mode: ``autograd.numpy`` is ``funcgrad``
(``.linalg``, ``.fft``; ``.random`` is NumPy's, as the tests draw their inputs there),
``grad(f, argnum)`` is ``fg.grad(f, argnums=argnum)``, ``jacobian`` is ``fg.jacrev``,
and ``check_grads(f, argnum, modes, order)(*args)`` is ``fg.testing.check_grads`` at
autograd's tolerances. Needs network access once (``pip download`` of autograd's source
distribution, which carries its tests) and pytest with pytest-xdist.

    python tools/autograd_suite.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

FILES = ("test_numpy.py", "test_linalg.py", "test_systematic.py", "test_scalar_ops.py", "test_binary_ops.py",
         "test_jacobian.py", "test_truediv.py", "numpy_utils.py", "conftest.py")

SHIM = {
    "autograd/__init__.py": '''
import builtins
import funcgrad as fg
fg.config.update("enable_x64", True)
def grad(f, argnum=0):
    return fg.grad(f, argnums=argnum)
def value_and_grad(f, argnum=0):
    return fg.value_and_grad(f, argnums=argnum)
def jacobian(f, argnum=0):
    return fg.jacrev(f, argnums=argnum)
tuple = builtins.tuple
''',
    "autograd/numpy/__init__.py": '''
import numpy as _np
import funcgrad as _fg
from funcgrad import *  # noqa
from . import fft, linalg, random  # noqa
def __getattr__(name):  # NumPy's constants and types; its functions only as funcgrad's
    value = getattr(_fg, name) if hasattr(_fg, name) else getattr(_np, name)
    if callable(value) and not isinstance(value, type) and not hasattr(_fg, name):
        raise AttributeError(f"funcgrad has no {name}")
    return value
''',
    "autograd/numpy/linalg.py": "from funcgrad.linalg import *  # noqa\n",
    "autograd/numpy/fft.py": "from funcgrad.fft import *  # noqa\n",
    "autograd/numpy/random.py": "from numpy.random import *  # noqa\n",
    "autograd/test_util.py": '''
import builtins
from itertools import product
from funcgrad.testing import check_grads as _check
def check_grads(fun, argnum=0, modes=("fwd", "rev"), order=2):
    argnums = (argnum,) if isinstance(argnum, int) else builtins.tuple(argnum)
    def checker(*args, **kwargs):
        def g(*diff):
            full = list(args)
            for i, d in zip(argnums, diff):
                full[i] = d
            return fun(*full, **kwargs)
        _check(g, [args[i] for i in argnums], order=order, modes=modes, atol=1e-6, rtol=1e-6, eps=1e-6)
    return checker
def combo_check(fun, *args, **kwargs):
    def _combo_check(*arg_lists, **kwarg_lists):
        pairs = [[(k, x) for x in xs] for k, xs in kwarg_lists.items()]
        for combo in product(*arg_lists):
            for chosen in product(*pairs):
                check_grads(fun, *args, **kwargs)(*combo, **dict(chosen))
    return _combo_check
''',
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work here (and keep it) instead of a temporary folder")
    options = parser.parse_args()
    work = options.keep or Path(tempfile.mkdtemp(prefix="autograd_suite_"))
    work.mkdir(parents=True, exist_ok=True)
    if not list(work.glob("autograd-*.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "download", "autograd", "--no-deps", "--no-binary", ":all:",
                        "-d", str(work), "-q"], check=True)
    archive = sorted(work.glob("autograd-*.tar.gz"))[-1]
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    tests = work / archive.name.removesuffix(".tar.gz") / "tests"
    run = work / "run"
    run.mkdir(exist_ok=True)
    for name in FILES:
        (run / name).write_text((tests / name).read_text())
    (run / "pytest.ini").write_text("[pytest]\n")
    for path, text in SHIM.items():
        (work / "shim" / path).parent.mkdir(parents=True, exist_ok=True)
        (work / "shim" / path).write_text(text.lstrip())
    repo = Path(__file__).resolve().parent.parent
    env_path = f"{work / 'shim'}:{repo}:{run}"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "-c",
                           str(run / "pytest.ini"), str(run)], cwd=run, env={**os.environ, "PYTHONPATH": env_path},
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("FAILED") or " passed" in line]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
