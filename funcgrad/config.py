"""``fg.config``: switches read where they apply.

* ``explain_cache_misses``: every time a compiled function traces again, a warning says
  which argument changed and how (``leaf 0: f32[32,784] -> f32[16,784]``). Also set by the
  environment variable ``FUNCGRAD_EXPLAIN_CACHE_MISSES=1``.
* ``no_retrace``: a compiled function that has traced once raises ``fg.RetraceError``
  (naming what changed) instead of tracing again, for loops whose signature must not change.
* ``compile_threads``: how many threads a compiled program's fused elementwise loops split
  their chunks across (NumPy's ufuncs release the GIL, so the pieces run on separate cores).
  Read when a program is lowered; defaults to the cores this process may use, or the
  environment variable ``FUNCGRAD_COMPILE_THREADS``. ``1`` runs every loop on the caller's thread.
* ``compile_backend``: how a compiled program runs its elementwise runs: ``"c"`` (the
  default) as native loops built by the system C compiler, ``"numpy"`` as NumPy calls.
  Without a compiler ``"c"`` falls back to ``"numpy"`` with one warning. Read when a program
  is lowered; also set by the environment variable ``FUNCGRAD_COMPILE_BACKEND``.
* ``write_guard``: every compiled or lowered call (``fg.compile``, control flow's sub-programs,
  backward plans) compares its non-donated inputs and its constants before and after it runs,
  and raises ``fg.WriteGuardError`` naming the program and the equation that wrote into one
  (the arrays are restored first). A debugging switch, costing a copy of every input per call;
  also set by the environment variable ``FUNCGRAD_WRITE_GUARD=1``. The project's tests run with it on.
* ``enable_x64``: JAX's 64-bit mode, for NumPy-style code (``import funcgrad as np``): Python
  floats, ``zeros``/``ones``/``eye``/``linspace``/``arange(3.0)`` and integer-to-float results
  are float64 (complex128), as NumPy's are, and ``fg.random`` follows JAX's x64 mode (keys
  from 64-bit seeds, int64 and float64 draws). Set it with ``fg.config.update("enable_x64",
  True)`` before making arrays, or the environment variable ``FUNCGRAD_ENABLE_X64=1``.
  ``fg.set_default_dtype(fg.float64)`` (PyTorch's) changes the default float alone.
* ``cpu_heap_cache``: bytes of freed CPU memory the C heap keeps mapped for reuse (1 GiB by
  default; ``0`` from the start leaves glibc's own policy, and switched to later gives freed
  memory back at once). Reusing memory saves the page faults that a fresh
  mapping costs on every large array, at the price of a resident size up to this much above
  what is live; ``fg.memory.empty_cache("cpu")`` gives it back. Also set by the environment
  variable ``FUNCGRAD_CPU_HEAP_CACHE`` (bytes). It affects the whole process (glibc only).
* ``blas``: the library that computes matrix products: ``"auto"`` (the default) Intel's MKL
  on an Intel CPU where the ``mkl`` package is installed (``pip install funcgrad[mkl]``) and
  NumPy does not use MKL itself, else NumPy's own BLAS; ``"mkl"`` or ``"numpy"`` to choose. MKL runs one
  thread a call and funcgrad shares each product out over its threads; NumPy's OpenBLAS
  threads itself. The two give different bits; eager and compiled code use the same one.
  Read at each product (a program compiled before a change keeps the library it was built
  with); also set by the environment variable ``FUNCGRAD_BLAS``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["config"]


class _Config:
    __slots__ = ("explain_cache_misses", "no_retrace", "compile_threads", "write_guard", "_compile_backend", "_x64",
                 "_heap_cache", "_blas", "_followers")

    def __init__(self) -> None:
        self.explain_cache_misses = os.environ.get("FUNCGRAD_EXPLAIN_CACHE_MISSES", "") not in ("", "0")
        self.no_retrace = False
        self.compile_threads = int(os.environ.get("FUNCGRAD_COMPILE_THREADS", 0)) or _usable_cores()
        self.write_guard = os.environ.get("FUNCGRAD_WRITE_GUARD", "") not in ("", "0")
        self.compile_backend = os.environ.get("FUNCGRAD_COMPILE_BACKEND", "") or "c"
        self.blas = os.environ.get("FUNCGRAD_BLAS", "") or "auto"
        self._followers: dict[str, list[Callable[[object], None]]] = {"enable_x64": [], "cpu_heap_cache": []}
        self.enable_x64 = os.environ.get("FUNCGRAD_ENABLE_X64", "") not in ("", "0")
        self.cpu_heap_cache = _byte_count("FUNCGRAD_CPU_HEAP_CACHE", 1 << 30)

    @property
    def enable_x64(self) -> bool:
        return self._x64

    @enable_x64.setter
    def enable_x64(self, value: bool) -> None:
        self._x64 = bool(value)
        self._tell("enable_x64", self._x64)

    @property
    def cpu_heap_cache(self) -> int:
        return self._heap_cache

    @cpu_heap_cache.setter
    def cpu_heap_cache(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"fg.config.cpu_heap_cache: {value!r} is not a byte count (an int >= 0)")
        self._heap_cache = value
        self._tell("cpu_heap_cache", value)

    def follow(self, name: str, follow: Callable[[object], None]) -> None:
        """Call ``follow(value)`` now and whenever the switch ``name`` changes: how the layers
        above this one take a switch (``dtypes``'s default float, the backends' heap)."""
        self._followers[name].append(follow)
        follow(getattr(self, name))

    def _tell(self, name: str, value: object) -> None:
        for follow in self._followers[name]:
            follow(value)

    @property
    def x64_enabled(self) -> bool:
        """Whether 64-bit mode is on (JAX's ``jax.config.x64_enabled``)."""
        return self._x64

    def update(self, name: str, value: object) -> None:
        """Set a switch by name, as ``jax.config.update`` does (a ``jax_`` prefix is allowed:
        ``update("jax_enable_x64", True)``)."""
        key = name[4:] if name.startswith("jax_") else name
        if key not in _SWITCHES:
            raise AttributeError(f"fg.config.update: no switch named {name!r}; the switches are "
                                 f"{', '.join(_SWITCHES[:-1])} and {_SWITCHES[-1]}")
        setattr(self, key, value)

    @property
    def compile_backend(self) -> str:
        return self._compile_backend

    @compile_backend.setter
    def compile_backend(self, value: str) -> None:
        if value not in ("c", "numpy"):
            raise ValueError(f"fg.config.compile_backend: {value!r} is not a backend; use 'c' or 'numpy'")
        self._compile_backend = value

    @property
    def blas(self) -> str:
        return self._blas

    @blas.setter
    def blas(self, value: str) -> None:
        if value not in ("auto", "mkl", "numpy"):
            raise ValueError(f"fg.config.blas: {value!r} is not a BLAS choice; use 'auto', 'mkl' or 'numpy'")
        self._blas = value

    def __repr__(self) -> str:
        return (f"fg.config(explain_cache_misses={self.explain_cache_misses}, no_retrace={self.no_retrace}, "
                f"compile_threads={self.compile_threads}, compile_backend={self.compile_backend!r}, "
                f"blas={self.blas!r}, write_guard={self.write_guard}, enable_x64={self.enable_x64}, "
                f"cpu_heap_cache={self.cpu_heap_cache})")


def _byte_count(variable: str, default: int) -> int:
    """An environment variable's byte count, or ``default`` where it is unset."""
    text = os.environ.get(variable, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{variable}={text!r} is not a byte count (an int >= 0, such as 1073741824)")
    return value


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity masks
        return os.cpu_count() or 1


_SWITCHES = ("explain_cache_misses", "no_retrace", "compile_threads", "write_guard", "compile_backend", "blas",
             "enable_x64", "cpu_heap_cache")
config = _Config()
