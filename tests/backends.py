"""The two ways a compiled program runs (``fg.config.compile_backend``), for tests that check
compiled code against eager evaluation under each.

NumPy's lowering calls eager evaluation's own kernels, so its results are eager's bit for
bit. Native loops give the same bits for arithmetic, comparisons, selects and casts, and
the C library's transcendental functions within a few ulp of NumPy's (``docs/compile.md``);
through a chain of them those differences grow with each function's condition number, so
comparisons of whole programs take a relative tolerance there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import funcgrad as fg

BACKENDS = ("c", "numpy")
RTOL = {np.dtype("float32"): 2e-5, np.dtype("float64"): 1e-12}


@contextmanager
def setting(name: str, value: Any) -> Iterator[None]:
    """``fg.config``'s switch ``name`` set to ``value`` inside."""
    before = getattr(fg.config, name)
    setattr(fg.config, name, value)
    try:
        yield
    finally:
        setattr(fg.config, name, before)


def compile_backend(name: str) -> Any:
    """Programs lowered inside run on backend ``name``."""
    return setting("compile_backend", name)


def blas(name: str) -> Any:
    """Products inside call the BLAS library ``name`` chooses (``fg.config.blas``)."""
    return setting("blas", name)


def native() -> bool:
    return fg.config.compile_backend == "c"


def assert_as_eager(got: Any, want: Any, amplified: float = 1.0) -> None:
    """A compiled result against eager's: bit for bit under NumPy's lowering, within the
    native loops' tolerance under theirs (NaN where NaN in both), times ``amplified`` where
    the computation multiplies a last-bit difference (each squaring doubles it)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if not native() or got.dtype not in RTOL:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = RTOL[got.dtype] * amplified
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
