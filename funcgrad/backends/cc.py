"""The system C compiler, for ``fg.compile``'s native kernels.

A kernel's source is built into a CPython extension module (one ``run`` function taking
NumPy arrays through the buffer protocol) and loaded from a cache on disk. An extension
rather than ``ctypes``: reaching an array's address through ``ndarray.ctypes`` costs about
2.7 µs per array, while the buffer protocol costs a few tens of nanoseconds, and a fused
loop of a (128, 512) array runs in about 20 µs. It needs only the standard library and the
Python headers the interpreter ships with.

* The compiler is ``$CC`` or the first of ``cc``, ``gcc``, ``clang`` on the ``PATH``, with
  ``-O3 -march=native`` (without ``-march`` where the compiler refuses it),
  ``-ffp-contract=off`` (no fused multiply-add: ``a * b + c`` rounds twice, as NumPy does)
  and ``-fopenmp-simd`` (the loops' ``omp simd`` pragmas, and glibc's vector math library
  ``libmvec`` for ``expf``, ``tanhf``... where it exists).
* Built modules are cached under ``$FUNCGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/funcgrad``,
  else ``~/.cache/funcgrad``, keyed by a hash of the source, the flags, the compiler's
  version and the Python ABI. A build writes a file of its own name and renames it into
  place, so processes building the same kernel at once never see half a file.
* Anything that goes wrong raises ``NativeBuildError``; the compiler falls back to its
  NumPy lowering (``transforms/compiler/native.py``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from ..errors import FuncgradError

__all__ = ["NativeBuildError", "build", "cache_dir", "toolchain"]


class NativeBuildError(FuncgradError, RuntimeError):
    """A native kernel could not be built or loaded (no compiler, no Python headers, a
    failed compilation); the caller falls back to NumPy."""


def cache_dir() -> Path:
    """Where built kernels are kept (created on first use)."""
    root = os.environ.get("FUNCGRAD_CACHE_DIR")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "funcgrad")
    return Path(root) / "native"


class Toolchain:
    """The compiler and how it is called on this machine, found once per process."""

    def __init__(self, command: list[str], version: str, flags: list[str], libraries: list[str]) -> None:
        self.command, self.version, self.flags, self.libraries = command, version, flags, libraries
        self.include = sysconfig.get_paths()["include"]
        self.suffix = importlib.machinery.EXTENSION_SUFFIXES[0]

    def compile(self, source: Path, target: Path) -> None:
        cmd = [*self.command, *self.flags, f"-I{self.include}", str(source), "-o", str(target), *self.libraries]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603
        if done.returncode != 0:
            raise NativeBuildError(f"fg.compile: the C compiler failed ({' '.join(cmd)}):\n{done.stderr[-2000:]}")


_BASE_FLAGS = ["-O3", "-shared", "-fPIC", "-fno-math-errno", "-ffp-contract=off", "-fopenmp-simd", "-w"]


@functools.lru_cache(maxsize=1)
def toolchain() -> Toolchain:
    """The system compiler, its version and the flags it accepts (``NativeBuildError`` if there
    is none, or no Python headers to build against)."""
    wanted = os.environ.get("CC")
    command = wanted.split() if wanted else next(([c] for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if not command or not shutil.which(command[0]):
        raise NativeBuildError("fg.compile: no C compiler found (set CC, or install gcc or clang)")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        raise NativeBuildError("fg.compile: this Python has no development headers (Python.h), "
                               "which native kernels are built against")
    try:
        version = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=30,  # noqa: S603
                                 check=False).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError) as exc:
        raise NativeBuildError(f"fg.compile: cannot run the C compiler {command[0]!r}: {exc}") from exc
    flags = list(_BASE_FLAGS)
    libraries = ["-lm"]
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("double probe(double x) { return x * 2; }\n")
        for extra, where in ((["-march=native"], flags), (["-lmvec"], libraries)):
            cmd = [*command, *flags, str(probe), "-o", str(Path(tmp) / "probe.so"), *libraries, *extra]
            if subprocess.run(cmd, capture_output=True, timeout=60, check=False).returncode == 0:  # noqa: S603
                where.extend(extra)
    return Toolchain(command, version, flags, libraries)


_LOADED: dict[str, ModuleType] = {}


def build(body: str, init: str) -> ModuleType:
    """The extension module of C source ``body``, built (or found in the cache) and loaded.
    ``init`` is the module's definition, with ``{name}`` where the module's name goes (a
    name derived from the hash of everything that makes the binary)."""
    tools = toolchain()
    key = hashlib.sha256("\0".join((body, init, tools.version, " ".join(tools.flags + tools.libraries),
                                    sys.version, tools.suffix)).encode()).hexdigest()[:24]
    if key in _LOADED:
        return _LOADED[key]
    name = f"funcgrad_native_{key}"
    folder = cache_dir()
    target = folder / f"{name}{tools.suffix}"
    if not target.exists():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, source = tempfile.mkstemp(suffix=".c", prefix=f"{name}.", dir=folder)
            with os.fdopen(fd, "w") as f:
                f.write(body + init.replace("{name}", name))
            partial = Path(source).with_suffix(".part")
            try:
                tools.compile(Path(source), partial)
                os.replace(partial, target)  # atomic: another process sees no file or the whole one
            finally:
                for leftover in (Path(source), partial):
                    leftover.unlink(missing_ok=True)
        except OSError as exc:
            raise NativeBuildError(f"fg.compile: cannot write native kernels to {folder}: {exc}") from exc
    spec = importlib.util.spec_from_file_location(name, target)
    if spec is None or spec.loader is None:
        raise NativeBuildError(f"fg.compile: cannot load the native kernel {target}")
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise NativeBuildError(f"fg.compile: cannot load the native kernel {target}: {exc}") from exc
    _LOADED[key] = module
    return module
