"""Bad input: each case gets a typed error that names the operation and the
user's shapes/dtypes/devices, and no array is changed."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg


@pytest.fixture
def x() -> fg.Array:
    return fg.arange(12.0).reshape(3, 4)


def test_binary_ops_on_shapes_that_do_not_broadcast(x: fg.Array) -> None:
    with pytest.raises(fg.ShapeError, match=r"add: shapes \(3, 4\) and \(5,\) do not broadcast"):
        x + fg.ones(5)
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        x * fg.ones((2, 4))
    with pytest.raises(fg.ShapeError, match=r"matmul: shapes \(3, 4\) and \(3, 4\) do not align"):
        x @ x
    with pytest.raises(fg.ShapeError, match="where"):
        fg.where(fg.ones((2,), fg.bool), x, 0.0)


def test_view_on_incompatible_strides(x: fg.Array) -> None:
    with pytest.raises(fg.ViewError, match=r"view: cannot view an array of shape \(4, 3\) with strides \(1, 4\)"):
        x.T.view(12)
    assert issubclass(fg.ViewError, ValueError)


def test_reshape_to_a_different_size(x: fg.Array) -> None:
    with pytest.raises(fg.ShapeError, match=r"reshape: cannot reshape an array of shape \(3, 4\) \(12 elements\) "
                                            r"into shape \(5,\)"):
        x.reshape(5)
    with pytest.raises(fg.ShapeError, match="reshape"):
        x.reshape(-1, 5)
    with pytest.raises(fg.ShapeError):
        x.reshape(-1, -1)


def test_index_out_of_bounds(x: fg.Array) -> None:
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3 \(array shape \(3, 4\)\)"):
        x[3]
    with pytest.raises(IndexError, match="axis 1 with size 4"):
        x[0, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[fg.array([0, 7])]
    with pytest.raises(IndexError, match="out of bounds"):
        x.at[5].set(1.0)


def test_bad_axis(x: fg.Array) -> None:
    for call in [lambda: x.sum(axis=2), lambda: x.max(axis=-3), lambda: fg.argmax(x, axis=5),
                 lambda: fg.concatenate([x, x], axis=2), lambda: fg.squeeze(x, 0), lambda: fg.cumsum(x, 4)]:
        with pytest.raises(fg.ShapeError, match="axis"):
            call()


def test_ragged_nested_lists() -> None:
    with pytest.raises(fg.ShapeError, match="ragged"):
        fg.array([[1.0, 2.0], [3.0]])


def test_unsupported_dtype() -> None:
    with pytest.raises(fg.DTypeError, match="unsupported dtype"):
        fg.array([1, 2], dtype="datetime64[s]")
    with pytest.raises(fg.DTypeError, match="float"):
        fg.bitwise_and(fg.ones(2), fg.ones(2))
    with pytest.raises(fg.DTypeError, match="index arrays must be integer or bool, got float32"):
        fg.ones(3)[fg.ones(2)]
    assert issubclass(fg.DTypeError, TypeError)


def test_mixed_devices_name_both(monkeypatch: pytest.MonkeyPatch) -> None:
    from funcgrad.backends.device import Device
    from funcgrad.backends.numpy_backend import NumpyBackend

    other = Device("gpu", 7)  # a fake second device backed by NumPy: enough to test the check
    other._backend = NumpyBackend(other)
    a = fg.ones(3)
    b = a._to_device(other)
    assert b.device is other
    with pytest.raises(fg.DeviceMismatchError, match=r"add: arrays are on different devices: cpu .* gpu:7"):
        a + b
    with pytest.raises(fg.DeviceMismatchError, match="gpu:7"):
        fg.where(a > 0, a, b)
    with pytest.raises(fg.DeviceMismatchError):
        fg.concatenate([a, b])


def test_mutation_is_impossible(x: fg.Array) -> None:
    before = x.tolist()
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0
    view = x.numpy()
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(x)[0, 0] = 1.0
    with pytest.raises(AttributeError):
        x.shape = (4, 3)  # type: ignore[misc]
    assert x.tolist() == before


def test_gpu_without_cupy_says_what_is_missing() -> None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(fg.DeviceUnavailableError, match=r"CuPy, which is not installed: pip install 'funcgrad\[gpu\]'"):
            fg.device("gpu")
        with pytest.raises(fg.DeviceUnavailableError):
            fg.ones(3).to("cuda")
        assert fg.devices() == [fg.device("cpu")]
    else:
        pytest.skip("CuPy is installed; the GPU tests cover this machine")


def test_unknown_device_names() -> None:
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        fg.device("tpu")
    with pytest.raises(ValueError, match="one cpu device"):
        fg.device("cpu:1")


def test_kernel_failures_name_the_operation() -> None:
    singular = fg.zeros((2, 2))
    with pytest.raises(fg.LinAlgError, match="linalg.inv"):
        fg.linalg.inv(singular)
    with pytest.raises(fg.ShapeError, match="linalg.solve"):
        fg.linalg.solve(fg.eye(3), fg.ones(2))
    with pytest.raises(fg.ShapeError, match="einsum"):
        fg.einsum("ij,jk->ik", fg.ones((2, 3)), fg.ones((2, 3)))
    with pytest.raises(fg.ShapeError, match="reduce_max"):
        fg.max(fg.ones((0,)))


def test_truthiness_and_item_of_many_elements(x: fg.Array) -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(ValueError, match="item"):
        x.item()
    with pytest.raises(TypeError, match="len"):
        len(fg.array(1.0))


def test_scatter_names_an_unknown_mode() -> None:
    with pytest.raises(fg.errors.ArgumentValueError, match=r"scatter: unknown mode 'mul'; expected one of set, add"):
        fg.scatter(fg.ones(4), fg.asarray([1, 1]), 3.0, "mul")
