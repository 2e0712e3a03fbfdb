"""fg.nn losses and activations: cross-entropy (fused and general), the other losses, normalize, one_hot, relu, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.primitives.cross_entropy import softmax_cross_entropy_grad_p

from .nn_common import RNG, F, needs_torch, nn, torch


def test_relu_is_one_primitive_with_pytorch_semantics() -> None:
    x = fg.asarray(np.array([-1.5, 0.0, 2.0, np.nan], np.float32))
    y = F.relu(x)
    assert np.array_equal(y.numpy(), [0.0, 0.0, 2.0, np.nan], equal_nan=True)  # NaN stays NaN (where() would give 0)
    assert fg.grad(lambda v: F.relu(v).sum())(x).tolist() == [0.0, 0.0, 1.0, 0.0]  # 0 at 0, as PyTorch
    assert [e.prim.name for e in fg.trace(F.relu)(x).eqns] == ["relu"]
    assert F.relu(fg.asarray(np.array([-2, 3]))).tolist() == [0, 3]
    assert F.relu(x.astype(fg.bfloat16)).dtype == fg.bfloat16
    with pytest.raises(fg.DTypeError, match="relu"):
        F.relu(fg.asarray(np.array([True, False])))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kwargs", [dict(), dict(label_smoothing=0.2), dict(ignore_index=3),
                                    dict(weight=np.arange(1.0, 6.0))])
def test_losses_take_one_unbatched_row(reduction, kwargs) -> None:
    """(C,) logits with a 0-d label, as PyTorch: the batch-of-one loss (with no reduction,
    the row's 0-d value), for cross_entropy and nll_loss."""
    z = fg.asarray(RNG.standard_normal(5))
    kw = {k: fg.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    for label in (3, 1):
        one = F.cross_entropy(z, fg.array(label), reduction=reduction, **kw)
        batch = F.cross_entropy(z[None], fg.array([label]), reduction=reduction, **kw)
        assert one.shape == () and np.allclose(one.numpy(), batch.numpy().reshape(()), equal_nan=True)
        kw.pop("label_smoothing", None)
        logp = F.log_softmax(z, 0)
        one = F.nll_loss(logp, fg.array(label), reduction=reduction, **kw)
        batch = F.nll_loss(logp[None], fg.array([label]), reduction=reduction, **kw)
        assert one.shape == () and np.allclose(one.numpy(), batch.numpy().reshape(()), equal_nan=True)
    with pytest.raises(fg.ShapeError, match=r"input of shape \(5,\) needs a target of shape \(\), got \(1,\)"):
        F.cross_entropy(z, fg.array([1]))


@needs_torch
def test_unbatched_losses_match_pytorch() -> None:
    z = RNG.standard_normal(5).astype(np.float32)
    for kwargs in (dict(), dict(reduction="none"), dict(label_smoothing=0.2), dict(ignore_index=3)):
        tz, fz = torch.tensor(z, requires_grad=True), fg.asarray(z, requires_grad=True)
        t = torch.nn.functional.cross_entropy(tz, torch.tensor(3), **kwargs)
        f = F.cross_entropy(fz, fg.array(3), **kwargs)
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-6, equal_nan=True)
        if not np.isnan(t.item()):
            t.backward()
            f.backward()
            np.testing.assert_allclose(fz.grad.numpy(), tz.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("ignore_index", [7, 1])  # outside the classes, and one of them
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_equals_the_general_formula(reduction: str, ignore_index: int) -> None:
    """Cross-entropy with class labels is one primitive, ignored rows masked inside it. It
    must give the values, gradients and second derivatives of the general formula
    (log_softmax, then nll_loss, which masks with recorded operations), and an extra
    ignored row must leave the loss as it was."""
    rng = np.random.default_rng(5)
    z = fg.asarray(rng.standard_normal((6, 4)).astype(np.float64))
    w = fg.asarray(rng.standard_normal((6,) if reduction == "none" else ()))
    y = fg.asarray(np.array([0, 3, ignore_index, 1, 2, ignore_index]))

    def fused(v):
        return F.cross_entropy(v, y, reduction=reduction, ignore_index=ignore_index)

    def general(v):
        return F.nll_loss(F.log_softmax(v, 1), y, reduction=reduction, ignore_index=ignore_index)

    def one_more_row(v):
        out = F.cross_entropy(fg.concatenate([v, v[:1]]), fg.concatenate([y, fg.asarray(np.array([ignore_index]))]),
                              reduction=reduction, ignore_index=ignore_index)
        return out[:6] if reduction == "none" else out

    assert [e.prim.name for e in fg.trace(fused)(z).eqns] == ["softmax_cross_entropy"]
    assert "softmax_cross_entropy" not in [e.prim.name for e in fg.trace(general)(z).eqns]
    g_fused = fg.grad(lambda v: (fused(v) * w).sum())(z)
    for other in (general, one_more_row):
        np.testing.assert_allclose(fused(z).numpy(), other(z).numpy(), rtol=1e-12)
        g_other = fg.grad(lambda v, other=other: (other(v) * w).sum())(z)
        np.testing.assert_allclose(g_fused.numpy(), g_other.numpy(), rtol=1e-10, atol=1e-12)
    h_fused = fg.hessian(lambda v: (fused(v) * w).sum())(z)
    h_general = fg.hessian(lambda v: (general(v) * w).sum())(z)
    np.testing.assert_allclose(h_fused.numpy(), h_general.numpy(), rtol=1e-9, atol=1e-12)
    empty = F.cross_entropy(fg.zeros((0, 3)), fg.asarray(np.zeros(0, np.int64)), reduction=reduction)
    assert empty.shape == ((0,) if reduction == "none" else ())
    if reduction == "mean":
        assert np.isnan(empty.item())  # as PyTorch: the mean of no rows


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 1}, {"label_smoothing": 0.2}, {"reduction": "sum"},
                                    {"weight": [1.0, 2.0, 0.5]}, {"weight": [1.0, 2.0, 0.5], "label_smoothing": 0.1}])
def test_cross_entropy_matches_pytorch(kwargs) -> None:
    logits = RNG.standard_normal((6, 3))
    target = np.array([0, 1, 2, 1, 0, 2])
    t_kwargs = {k: (torch.tensor(v, dtype=torch.float64) if k == "weight" else v) for k, v in kwargs.items()}
    f_kwargs = {k: (fg.asarray(np.array(v)) if k == "weight" else v) for k, v in kwargs.items()}
    tl = torch.tensor(logits, requires_grad=True)
    fl = fg.asarray(logits, requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tl, torch.tensor(target), **t_kwargs)
    floss = F.cross_entropy(fl, fg.asarray(target), **f_kwargs)
    np.testing.assert_allclose(floss.item(), tloss.item(), rtol=1e-10)
    tloss.backward()
    floss.backward()
    np.testing.assert_allclose(fl.grad.numpy(), tl.grad.numpy(), rtol=1e-9, atol=1e-12)


@needs_torch
def test_other_losses_match_pytorch() -> None:
    a, b = RNG.standard_normal((4, 3)), RNG.random((4, 3))
    pairs = [(F.mse_loss, torch.nn.functional.mse_loss), (F.l1_loss, torch.nn.functional.l1_loss),
             (F.binary_cross_entropy_with_logits, torch.nn.functional.binary_cross_entropy_with_logits)]
    for f, t in pairs:
        np.testing.assert_allclose(f(fg.asarray(a), fg.asarray(b)).item(), t(torch.tensor(a), torch.tensor(b)).item(),
                                   rtol=1e-10)
    pw = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(fg.asarray(a), fg.asarray(b), pos_weight=fg.asarray(pw)).item(),
        torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(a), torch.tensor(b),
                                                             pos_weight=torch.tensor(pw)).item(), rtol=1e-10)
    logp = np.log(RNG.dirichlet(np.ones(3), 5))
    tgt = np.array([0, 2, 1, 1, 0])
    np.testing.assert_allclose(F.nll_loss(fg.asarray(logp), fg.asarray(tgt)).item(),
                               torch.nn.functional.nll_loss(torch.tensor(logp), torch.tensor(tgt)).item(), rtol=1e-10)


class _NotNumPy:
    """NumPy under another name: the cross-entropy kernels take their CuPy branch (no host
    reads of the labels) when ``xp is not np``, so this runs that branch without a GPU."""

    def __getattr__(self, name: str):
        return getattr(np, name)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_kernels_device_branch_masks_without_reading_labels(reduction: str) -> None:
    from funcgrad.primitives.cross_entropy import _xent, _xent_grad

    z = RNG.standard_normal((5, 4))
    g = RNG.standard_normal((5,) if reduction == "none" else ())
    ok = np.array([0, 3, -100, 1, 2])
    for labels in (ok, np.array([0, 3, -100, 9, -1])):  # the last two: out of range, not ignored
        bad = (labels != -100) & ((labels < 0) | (labels >= 4))
        counted = (labels != -100) & ~bad
        ref_rows = _xent(np, z[counted], labels[counted], reduction="none", ignore_index=-100)
        loss = _xent(_NotNumPy(), z, labels, reduction=reduction, ignore_index=-100)
        grad = _xent_grad(_NotNumPy(), g, z, labels, reduction=reduction, ignore_index=-100)
        if reduction == "none":
            np.testing.assert_allclose(loss[counted], ref_rows, rtol=1e-12)
            assert (loss[labels == -100] == 0).all() and np.isnan(loss[bad]).all()
        elif bad.any():
            assert np.isnan(loss)  # one NaN row poisons the reduced loss, never another class's entry
        else:
            np.testing.assert_allclose(loss, _xent(np, z, labels, reduction=reduction, ignore_index=-100))
        assert (grad[labels == -100] == 0).all() and np.isnan(grad[bad]).all()
        # the other rows: as the NumPy branch gives them with the bad rows ignored; a mean
        # still counts the bad rows (only their values are unknown)
        ref = _xent_grad(np, g, z, np.where(bad, -100, labels), reduction="sum" if reduction == "mean" else reduction,
                         ignore_index=-100)
        if reduction == "mean":
            ref = ref / (labels != -100).sum()
        np.testing.assert_allclose(grad[counted], ref[counted], rtol=1e-12)


def test_cross_entropy_reads_no_labels_on_the_host_and_checks_their_range() -> None:
    """The labels stay where they are: eager, traced and ignored rows all run the one fused
    primitive (so on a GPU nothing waits for a device-to-host copy). A label outside the
    classes that is not ignore_index is an error on the CPU, not a silent wrap-around."""
    logits = fg.asarray(RNG.standard_normal((6, 4)))
    target = fg.asarray(np.array([0, 3, 1, 1, 2, 0]))
    traced = fg.trace(lambda z, t: F.cross_entropy(z, t))(logits, target)
    assert [e.prim.name for e in traced.eqns] == ["softmax_cross_entropy"]
    np.testing.assert_allclose(traced(logits, target).item(), F.cross_entropy(logits, target).item(), rtol=1e-12)
    masked = F.cross_entropy(logits, fg.asarray(np.array([0, 3, 1, 1, 2, -100])))
    np.testing.assert_allclose(masked.item(), F.cross_entropy(logits[:5], target[:5]).item(), rtol=1e-12)
    g_masked = fg.grad(lambda z: F.cross_entropy(z, fg.asarray(np.array([0, 3, 1, 1, 2, -100]))))(logits)
    assert not g_masked.numpy()[5].any()
    for bad in ([0, 3, 1, -1, 2, 0], [0, 3, 1, 4, 2, 0], [0, 3, 1, -100, 2, 0]):
        with pytest.raises(IndexError, match=r"softmax_cross_entropy.*label (-1|4|-100) is out of range for 4"):
            F.cross_entropy(logits, fg.asarray(np.array(bad)), ignore_index=-7)
    with pytest.raises(IndexError, match="softmax_cross_entropy_grad.*label 4 is out of range"):
        fg.bind(softmax_cross_entropy_grad_p, fg.ones((), fg.float64), logits, fg.asarray(np.array([0, 3, 1, 4, 2, 0])),
                reduction="sum", ignore_index=-100)
    assert np.isnan(F.cross_entropy(logits, fg.asarray(np.full(6, -100))).item())  # no row counts: 0/0, as PyTorch
    log_probs = F.log_softmax(logits, 1)
    with pytest.raises(IndexError, match="nll_loss: label -1 is out of range for 4"):
        F.nll_loss(log_probs, fg.asarray(np.array([0, 3, 1, -1, 2, 0])))
    program = fg.trace(F.nll_loss)(log_probs, target)  # traced labels cannot be checked: the row is NaN instead
    assert np.isnan(program(log_probs, fg.asarray(np.array([0, 3, 1, -1, 2, 0]))).item())


@needs_torch
def test_normalize_and_one_hot_match_pytorch() -> None:
    x = RNG.standard_normal((4, 3))
    x[1] = 0.0  # a zero vector: its gradient is zero, not NaN
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
        tout, fout = torch.nn.functional.normalize(tx, p=p, dim=dim), F.normalize(fx, p=p, dim=dim)
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = RNG.standard_normal(x.shape)
        (tout * torch.tensor(w)).sum().backward()
        (fout * fg.asarray(w)).sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    labels = np.array([[0, 2], [1, 1]])
    assert F.one_hot(fg.asarray(labels)).tolist() == torch.nn.functional.one_hot(torch.tensor(labels)).tolist()
    assert F.one_hot(fg.asarray(labels), 4).shape == (2, 2, 4) and F.one_hot(fg.asarray(labels)).dtype == fg.int64
    with pytest.raises(IndexError, match="one_hot: index -1 is out of range for 3 classes"):
        F.one_hot(fg.asarray(np.array([0, -1])), 3)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(fg.ones(2), approximate="exact")
    with pytest.raises(TypeError, match="unexpected keyword argument 'slope'"):
        nn.LeakyReLU(slope=0.1)


def _loss_cases():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    p, t01 = rng.uniform(0.05, 0.95, (4, 3)), rng.integers(0, 2, (4, 3)).astype(np.float64)
    logp = np.log(rng.dirichlet(np.ones(3), 4))
    q = rng.dirichlet(np.ones(3), 4)
    sign = np.where(rng.random(4) > 0.5, 1.0, -1.0)
    v1, v2 = rng.standard_normal(4), rng.standard_normal(4)
    counts = rng.poisson(2.0, (4, 3)).astype(np.float64)
    return [
        ("BCELoss", (p, t01), {}), ("BCELoss", (p, t01), {"reduction": "sum"}),
        ("SmoothL1Loss", (x, y), {"beta": 0.5}), ("SmoothL1Loss", (x, y), {"reduction": "none"}),
        ("HuberLoss", (x, y), {"delta": 0.7}), ("KLDivLoss", (logp, q), {"reduction": "batchmean"}),
        ("KLDivLoss", (logp, np.log(q)), {"reduction": "sum", "log_target": True}),
        ("MarginRankingLoss", (v1, v2, sign), {"margin": 0.3}),
        ("TripletMarginLoss", (x, y, x * 0.5), {"margin": 0.5}), ("TripletMarginLoss", (x, y, -y), {"swap": True}),
        ("CosineEmbeddingLoss", (x, y, sign), {"margin": 0.1}), ("PoissonNLLLoss", (x, counts), {}),
        ("PoissonNLLLoss", (p * 3, counts), {"log_input": False, "full": True}),
        ("GaussianNLLLoss", (x, y, p), {}), ("GaussianNLLLoss", (x, y, p), {"full": True, "reduction": "sum"}),
        ("MultiLabelSoftMarginLoss", (x, t01), {}), ("CosineSimilarity", (x, y), {"dim": 1}),
        ("PairwiseDistance", (x, y), {}), ("PairwiseDistance", (x, y), {"p": 1.0, "keepdim": True}),
    ]


@needs_torch
@pytest.mark.parametrize("case", range(len(_loss_cases())))
def test_more_losses_match_pytorch(case: int) -> None:
    """Values and gradients of the first input (float64), and the reprs."""
    name, arrays, kwargs = _loss_cases()[case]
    fm, tm = getattr(fg.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(fm) == repr(tm)
    fx = [fg.asarray(a, requires_grad=i == 0) for i, a in enumerate(arrays)]
    tx = [torch.tensor(a, requires_grad=i == 0) for i, a in enumerate(arrays)]
    fout, tout = fm(*fx), tm(*tx)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    fout.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(fx[0].grad.numpy(), tx[0].grad.numpy(), rtol=1e-9, atol=1e-12)
