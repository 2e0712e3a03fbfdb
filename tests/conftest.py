import os

import pytest
from hypothesis import HealthCheck, settings

# CI draws the same examples on every run (a submission's result never depends on luck), 50
# per property so that the whole run stays within CI's 10 minutes on 2 cores; development runs
# draw new ones each time, and "thorough" many more.
settings.register_profile("ci", max_examples=50, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def jax64():
    """JAX with float64 enabled for one test (JAX's flag is global: it is put back after)."""
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield jax
    finally:
        jax.config.update("jax_enable_x64", before)


# Every compiled or lowered program in the suite checks that it wrote only into memory it owns
# (fg.config.write_guard; docs/compile.md, "What runs"): tests that time nothing pay a copy
# of each input per call, and a write into a caller's array fails the test that caused it.
import funcgrad as _fg  # noqa: E402

_fg.config.write_guard = os.environ.get("FUNCGRAD_WRITE_GUARD", "1") != "0"

# Compiled programs run on NumPy calls in most of the suite: each native build is a compiler
# run (about 0.1 s), and the suite compiles thousands of programs. The compile tests, the
# composed fuzzers (control flow among them), backward plans and tests/test_native.py run
# under both backends (tests/backends.py); FUNCGRAD_COMPILE_BACKEND=c runs the whole suite
# natively.
_fg.config.compile_backend = os.environ.get("FUNCGRAD_COMPILE_BACKEND", "numpy")
