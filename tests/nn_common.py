"""What the fg.nn and fg.optim tests share: the optional PyTorch oracle and its helpers."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional
RNG = np.random.default_rng(0)

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")


def _copy_params(src, dst) -> None:
    for (name, p), (tname, tp) in zip(dst.named_parameters(), src.named_parameters()):
        assert name == tname
        p._assign(fg.asarray(tp.detach().numpy().copy()))


def _compare(tm, fm, inputs, out_index=None, rtol=1e-4, atol=1e-5) -> None:
    _copy_params(tm, fm)
    tx = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    fx = [fg.asarray(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    tout, fout = tm(*tx), fm(*fx)
    if out_index is not None:
        tout, fout = tout[out_index], fout[out_index]
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (fout * fg.asarray(w)).sum().backward()
    for a, b in zip(fx, tx):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    for (name, b), (_, tb) in zip(fm.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=rtol, atol=atol, err_msg=name)
