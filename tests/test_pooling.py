"""Max pooling's selection primitives (``primitives/pooling.py``): the native loops give the
NumPy kernels' bits; max pooling's values, indices and gradient are PyTorch's under both
backends, ties and NaNs included; a geometry that leaves a window empty is refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad.primitives import pooling

from .backends import BACKENDS, compile_backend
from .primitive_cases import CASES

try:
    import torch
except ImportError:  # pragma: no cover - CI has no PyTorch
    torch = None

has_compiler = any(os.path.exists(os.path.join(p, c)) for p in os.environ["PATH"].split(":") for c in ("cc", "gcc"))


@pytest.mark.skipif(not has_compiler, reason="no C compiler")
@pytest.mark.parametrize("name", ["select_and_gather", "select_and_scatter_add"])
@settings(max_examples=25, deadline=None)  # (each new geometry is a compiler run)
@given(data=st.data())
def test_native_loops_give_the_numpy_kernels_bits(name: str, data: st.DataObject) -> None:
    case = CASES[name](data.draw)
    first, x = case.args
    kernel = pooling._gather if name == "select_and_gather" else pooling._scatter_add
    with compile_backend("c"):
        native = pooling._native(np, name[len("select_and_"):], first, x, **case.params)
        assert native is not None  # (the C types: the native loop runs)
    with compile_backend("numpy"):
        want = kernel(np, first, x, **case.params)
    assert native.dtype == want.dtype and native.shape == want.shape
    np.testing.assert_array_equal(native, want)
    np.testing.assert_array_equal(want, case.reference(first, x, **case.params))


def _image(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Values with ties (a plateau), NaNs and a channel of -inf."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, :3, :3] = 1.0
    x[-1, -1, 2, 2:4] = np.nan
    x[0, -1] = -np.inf
    return x


POOLS = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
         dict(kernel_size=2, stride=1, dilation=2), dict(kernel_size=(3, 2), stride=(1, 3), padding=(1, 1),
                                                           ceil_mode=True)]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", POOLS)
def test_max_pool_values_indices_and_gradient_are_pytorchs(backend: str, dtype: str, kwargs: dict) -> None:
    x = _image((2, 3, 9, 8), dtype, 0)
    with compile_backend(backend):
        fx = fg.tensor(x, requires_grad=True)
        out, idx = F.max_pool2d(fx, return_indices=True, **kwargs)
        weights = np.arange(out.size, dtype=dtype).reshape(out.shape)
        (out * fg.asarray(weights)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    tout, tidx = torch.nn.functional.max_pool2d(tx, return_indices=True, **kwargs)
    (tout * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_pool_gradient_goes_to_the_first_maximum(backend: str) -> None:
    """A plateau's gradient goes to its first position alone, as PyTorch's and JAX's
    (``reduce_window``'s select-and-scatter) do; a second derivative is zero."""
    x = fg.asarray(np.ones((1, 1, 2, 4), np.float32))
    with compile_backend(backend):
        g = fg.grad(lambda v: F.max_pool2d(v, 2).sum())(x)
        gg = fg.grad(lambda v: fg.grad(lambda u: (F.max_pool2d(u, 2) ** 2).sum())(v).sum())(x)
    assert g.numpy().tolist() == [[[[1, 0, 1, 0], [0, 0, 0, 0]]]]
    assert gg.numpy().tolist() == [[[[2, 0, 2, 0], [0, 0, 0, 0]]]]


def test_max_pool_under_vmap_and_compile_is_eager() -> None:
    x = fg.asarray(_image((3, 2, 4, 6, 5), "float64", 1))
    def f(v):
        return (F.max_pool2d(v, 2, stride=1, padding=1) ** 2).sum()

    want = fg.stack([fg.grad(f)(x[i]) for i in range(3)])
    np.testing.assert_array_equal(fg.vmap(fg.grad(f))(x).numpy(), want.numpy())
    np.testing.assert_array_equal(fg.compile(fg.grad(f))(x[0]).numpy(), want[0].numpy())


def test_a_window_with_no_position_inside_is_refused() -> None:
    x = fg.ones((1, 1, 1, 4))
    with pytest.raises(fg.ShapeError, match=r"select_and_gather: windows .* shape \(1, 1, 1, 4\)"):
        fg.bind(pooling.select_and_gather_p, x, x, sizes=(2, 1), steps=(1, 1), padding=(1, 0), dilations=(2, 1),
                shape=(1, 4))
    with pytest.raises(fg.DTypeError, match="select_and_scatter_add: expected floating-point values"):
        fg.bind(pooling.select_and_scatter_add_p, fg.ones((1, 1, 1, 4), dtype=fg.int32), x, sizes=(1, 1),
                steps=(1, 1), padding=(0, 0), dilations=(1, 1), shape=(1, 4))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32"])
def test_max_pool_of_half_precision_and_integers_selects_the_same_elements(backend: str, dtype: str) -> None:
    """No native loop for these dtypes: the NumPy kernels select (bfloat16 is NumPy kind
    "V"), and the result is the pooled float32 input's, rounded."""
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 5)) * 4
    low = fg.asarray(x.astype(np.float32)).astype(getattr(fg, dtype))
    with compile_backend(backend):
        got = F.max_pool2d(low, 3, 2, 1)
        want = F.max_pool2d(low.astype(fg.float32), 3, 2, 1).astype(getattr(fg, dtype))
    np.testing.assert_array_equal(got.astype(fg.float32).numpy(), want.astype(fg.float32).numpy())


def test_the_native_pooling_and_convolution_loops_build_where_a_compiler_is_found() -> None:
    """Where a compiler is found, the kernels run their native loops: a build failure would
    fall back to NumPy silently, with the same values (a macro in the prelude every kernel is
    built with, named as a kernel's own function, would do that)."""
    import numpy as np

    from funcgrad.backends import cc
    from funcgrad.primitives import convolution, pooling

    try:
        cc.toolchain()
    except cc.NativeBuildError:
        pytest.skip("no C compiler")
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    geometry = dict(sizes=(2, 2), steps=(2, 2), padding=(0, 0), dilations=(1, 1), shape=(3, 3))
    kept = fg.config.compile_backend
    fg.config.compile_backend = "c"
    try:
        for which in ("gather", "scatter_add"):
            first = x if which == "gather" else x[..., :3, :3].copy()
            assert pooling._native(np, which, first, x, **geometry) is not None, which
        if cc.blas() is not None:
            w = np.ones((4, 3, 3, 3), np.float32)
            assert convolution._native(np, 0, (x, w), (2, 4, 4, 4), 1, 3, (6, 6), (3, 3), (1, 1), (1, 1)) is not None
    finally:
        fg.config.compile_backend = kept
