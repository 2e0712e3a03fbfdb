"""PyTorch's spellings on funcgrad arrays: each against PyTorch itself when it is installed
(the oracle), and against NumPy always; the spellings NumPy and PyTorch read differently
work both ways or raise an error naming both; PyTorch's in-place habits get explanations."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)

# (name, funcgrad call, NumPy reference): the same call is made on a torch tensor when torch is installed
METHODS = [
    ("numel", lambda x: x.numel(), lambda a: a.size),
    ("dim", lambda x: x.dim(), lambda a: a.ndim),
    ("t", lambda x: x.t(), lambda a: a.T),
    ("float", lambda x: x.double().float(), lambda a: a),
    ("long", lambda x: (x * 10).long(), lambda a: (a * 10).astype(np.int64)),
    ("int", lambda x: (x * 10).int(), lambda a: (a * 10).astype(np.int32)),
    ("bool", lambda x: x.gt(0).bool(), lambda a: a > 0),
    ("expand", lambda x: x[:1].expand(5, -1), lambda a: np.broadcast_to(a[:1], (5, 4))),
    ("expand_as", lambda x: x[:, :1].expand_as(x), lambda a: np.broadcast_to(a[:, :1], a.shape)),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("narrow", lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    ("chunk", lambda x: x.chunk(2, 1)[1], lambda a: a[:, 2:]),
    ("permute", lambda x: x.permute(1, 0), lambda a: a.T),
    ("clone", lambda x: x.clone(), lambda a: a),
    ("new_zeros", lambda x: x.new_zeros(2, 3), lambda a: np.zeros((2, 3), a.dtype)),
    ("new_full", lambda x: x.new_full((2,), 7.0), lambda a: np.full(2, 7.0, a.dtype)),
    ("masked_fill", lambda x: x.masked_fill(x > 0, 0.0), lambda a: np.where(a > 0, 0, a)),
    ("clamp", lambda x: x.clamp(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("clamp_min", lambda x: x.clamp_min(0.0), lambda a: np.maximum(a, 0)),
    ("add alpha", lambda x: x.add(x, alpha=2), lambda a: a + 2 * a),
    ("sub alpha", lambda x: x.sub(x, alpha=0.5), lambda a: a - 0.5 * a),
    ("div floor", lambda x: (x * 10).div(3.0, rounding_mode="floor"), lambda a: np.floor(a * 10 / 3)),
    ("div trunc", lambda x: (x * 10).div(3.0, rounding_mode="trunc"), lambda a: np.trunc(a * 10 / 3)),
    ("pow", lambda x: x.pow(2), lambda a: a ** 2),
    ("matmul", lambda x: x.matmul(x.t()), lambda a: a @ a.T),
    ("topk values", lambda x: x.topk(2, dim=1)[0], lambda a: -np.sort(-a, axis=1)[:, :2]),
    ("topk indices", lambda x: x.topk(2, dim=1)[1], lambda a: np.argsort(-a, axis=1, kind="stable")[:, :2]),
    ("argsort dim", lambda x: x.argsort(dim=1, descending=True), lambda a: np.argsort(-a, axis=1, kind="stable")),
    ("sum dim keepdim", lambda x: x.sum(dim=1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    ("mean dim", lambda x: x.mean(dim=0), lambda a: a.mean(0)),
    ("max dim values", lambda x: x.max(dim=1)[0], lambda a: a.max(1)),
    ("max dim indices", lambda x: x.max(dim=1)[1], lambda a: a.argmax(1)),
    ("std dim", lambda x: x.std(dim=1), lambda a: a.std(1, ddof=1)),
    ("var unbiased", lambda x: x.var(unbiased=False), lambda a: a.var()),
    ("size()", lambda x: x.size(), lambda a: a.shape),
    ("size(1)", lambda x: x.size(1), lambda a: a.shape[1]),
    ("split size", lambda x: x.split(3, dim=1)[1], lambda a: a[:, 3:]),
    ("split sizes", lambda x: x.split([1, 3], dim=1)[1], lambda a: a[:, 1:]),
    ("transpose dims", lambda x: x.unsqueeze(0).transpose(0, 2), lambda a: np.swapaxes(a[None], 0, 2)),
    ("type_as", lambda x: x.type_as(x.long()), lambda a: a.astype(np.int64)),
    ("eq", lambda x: x.eq(x), lambda a: a == a),
]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _value(v):
    if isinstance(v, (tuple, list)) and not isinstance(v, fg.Array):
        return np.asarray(v)
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


@pytest.mark.parametrize("name,call,reference", METHODS, ids=[m[0] for m in METHODS])
def test_pytorch_methods_match_numpy_and_pytorch(name, call, reference) -> None:
    got = _value(call(fg.asarray(A)))
    want = np.asarray(reference(A))
    assert got.shape == want.shape, (name, got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)
    torch = _torch()
    if torch is not None:
        ref = call(torch.from_numpy(A.copy()))
        ref = np.asarray(ref) if isinstance(ref, (int, tuple, torch.Size)) else ref.numpy()
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref).astype(np.float64), rtol=1e-5, atol=1e-6)


def test_torch_style_namespace() -> None:
    assert fg.zeros(3, 4).shape == (3, 4) and fg.ones(2, 3, 4).shape == (2, 3, 4)
    assert fg.zeros((2, 2), fg.int32).dtype is fg.int32  # NumPy's positional dtype still works
    assert fg.long is fg.int64 and fg.float is fg.float32 and fg.double is fg.float64 and fg.half is fg.float16
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and fg.cat([t, t], dim=0).shape == (4,)
    assert fg.as_tensor(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
    assert fg.as_tensor([1, 2], dtype=fg.float32).dtype is fg.float32 and fg.as_tensor(t) is t
    values, indices = fg.topk(fg.asarray([1.0, 3.0, 2.0]), 2)
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [1, 2]
    x = fg.arange(6).reshape(2, 3)
    assert x.size == 6 and x.size() == (2, 3) and x.size(-1) == 3  # NumPy's count and PyTorch's call
    assert [p.shape for p in fg.split(fg.arange(6), 3)] == [(2,), (2,), (2,)]  # the function: NumPy's n pieces


def test_readings_that_differ_are_errors_naming_both() -> None:
    x = fg.ones((2, 3))
    with pytest.raises(fg.ArgumentValueError, match="NumPy's permutation.*PyTorch's swaps"):
        x.transpose(0, 1)
    assert x.transpose(1, 0).shape == (3, 2) and x.transpose((0, 1)).shape == (2, 3)


def test_in_place_habits_get_explanations() -> None:
    x = fg.ones(3)
    with pytest.raises(AttributeError, match="immutable.*x = x.add"):
        x.add_(1)
    with pytest.raises(AttributeError, match="immutable.*zero_"):
        x.zero_()
    with pytest.raises(AttributeError, match="no .data.*detach"):
        x.data  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        x.nonsense  # noqa: B018


def test_every_in_place_explanation_suggests_code_that_exists() -> None:
    """The fix each in-place method's error suggests names only methods and functions that exist."""
    import re

    from funcgrad.array import _IN_PLACE, ArrayBase

    x = fg.ones((2, 2))
    names = _IN_PLACE | {n for n, v in vars(ArrayBase).items() if n.endswith("_") and isinstance(v, property)}
    checked = 0
    for name in sorted(names):
        with pytest.raises(AttributeError) as caught:
            getattr(x, name)
        code = re.search(r"Write `([^`]*)`", str(caught.value))
        if code is None:
            continue
        checked += 1
        for method in re.findall(r"x\.(\w+)\(", code.group(1)):
            assert hasattr(x, method), (name, code.group(1))
        for function in re.findall(r"fg\.(\w+)\(", code.group(1)):
            assert hasattr(fg, function), (name, code.group(1))
    assert checked >= len(_IN_PLACE)


def test_manual_sgd_on_parameters_works_as_in_pytorch() -> None:
    """``with no_grad(): p -= lr * p.grad`` changes the module's parameters (it re-points them),
    and outside no_grad it is an error that shows the fix; ``p.data`` and ``copy_`` too."""
    fg.manual_seed(0)
    model = fg.nn.Linear(3, 1)
    x, y = fg.ones((4, 3)), fg.zeros((4, 1))
    losses = []
    for _ in range(5):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with fg.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.1
    with pytest.raises(RuntimeError, match="no_grad"):
        for p in model.parameters():
            p -= 0.1
    w = model.weight
    assert not w.data.requires_grad and w.data.shape == w.shape
    w.data = fg.zeros((1, 3))
    assert model.weight.tolist() == [[0.0, 0.0, 0.0]] and model.weight.requires_grad
    model.bias.copy_(fg.asarray([2.0]))
    assert model.bias.tolist() == [2.0]


def test_type_tensor_and_stack_dim_spellings() -> None:
    x = fg.asarray(np.array([1.5, -2.0]))
    assert x.type() == "float64" and x.type(fg.int64).dtype == fg.int64
    assert fg.Tensor is fg.Array and isinstance(x, fg.Tensor)
    a, b = fg.ones((2, 3)), fg.zeros((2, 3))
    assert fg.stack([a, b], dim=2).shape == (2, 3, 2) and fg.stack([a, b], axis=1).shape == (2, 2, 3)


@pytest.mark.parametrize("transform", ["grad", "vmap", "compile"])
def test_every_array_attribute_reads_on_traced_values(transform) -> None:
    """Every public attribute of a concrete array can be read on a traced value (inside
    fg.grad, fg.vmap and fg.compile), except the memory a traced value does not have yet
    (``.buffer``, a clear error) and the in-place habits every array explains."""
    from funcgrad.array import Array

    names = sorted(n for n in dir(Array) if not n.startswith("_"))
    missing: dict[str, str] = {}

    def probe(x):
        for name in names:
            try:
                getattr(x, name)
            except AttributeError as exc:
                if not any(s in str(exc) for s in ("immutable", "no .data", "no memory until its program runs")):
                    missing[name] = str(exc)
            except fg.ShapeError:  # (mT of a vector: a rule about the shape, not a missing attribute)
                pass
        assert x.stride() == tuple(fg.ones(x.shape).stride()) and x.nbytes == 4 * math.prod(x.shape)
        assert x.is_contiguous() and x.cpu().shape == x.shape and x.block_until_ready() is x
        assert not x.requires_grad and x.grad is None and x.grad_fn is None and x.is_leaf
        with pytest.raises(RuntimeError, match="register_hook: the tape's hooks"):
            x.register_hook(lambda g: g)
        return (x.view(-1) * 2).sum()

    run = {"grad": fg.grad, "vmap": fg.vmap, "compile": fg.compile}[transform](probe)
    run(fg.ones((2, 2)))
    assert missing == {}


def test_pytorch_attributes_of_arrays_and_devices() -> None:
    x = fg.ones((2, 3))
    assert not x.is_cuda and x.device.type == "cpu" and x.mm(fg.ones((3, 4))).shape == (2, 4)
    with pytest.raises(fg.ShapeError, match="mm: expects two matrices"):
        x.mm(fg.ones(3))
    assert fg.permute(fg.ones((2, 3, 4)), (2, 0, 1)).shape == (4, 2, 3)
    assert fg.shape([[1, 2, 3]]) == (1, 3) and fg.ndim(3.0) == 0 and fg.size(x) == 6 and fg.size(x, 1) == 3


def test_no_future_import_names_in_the_namespaces() -> None:
    import types

    public = [getattr(fg, n) for n in fg.__all__]
    spaces = [fg] + [v for v in public if isinstance(v, types.ModuleType) and v.__name__.startswith("funcgrad")]
    assert [m.__name__ for m in spaces if "annotations" in vars(m)] == []
