"""``nn.Transformer`` and its layers against PyTorch's (parameters copied by name): values,
with and without masks, post- and pre-norm, and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg

torch = pytest.importorskip("torch")


def _copy(t, f) -> None:
    params = dict(t.named_parameters())
    assert [n for n, _ in f.named_parameters()] == list(params)
    for name, p in f.named_parameters():
        p._assign(fg.asarray(params[name].detach().numpy().copy()))


CASES = {
    "encoder layer": lambda m: m.TransformerEncoderLayer(8, 2, 16, 0.0),
    "encoder layer pre-norm gelu batch-first": lambda m: m.TransformerEncoderLayer(8, 2, 16, 0.0, activation="gelu",
                                                                                   norm_first=True, batch_first=True),
    "decoder layer": lambda m: m.TransformerDecoderLayer(8, 2, 16, 0.0),
    "decoder layer pre-norm": lambda m: m.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True),
    "encoder stack": lambda m: m.TransformerEncoder(m.TransformerEncoderLayer(8, 2, 16, 0.0), 2, m.LayerNorm(8)),
    "transformer": lambda m: m.Transformer(8, 2, 2, 2, 16, 0.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("masked", [False, True])
def test_transformer_parts_match_pytorch(name: str, masked: bool) -> None:
    torch.manual_seed(0)
    t, f = CASES[name](torch.nn), CASES[name](fg.nn)
    _copy(t, f)
    t.eval()
    f.eval()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 3, 8)).astype(np.float32), rng.standard_normal((4, 3, 8)).astype(np.float32)
    decoder = "decoder" in name
    seq = x.shape[1] if "batch-first" in name else (y.shape[0] if decoder or name == "transformer" else x.shape[0])
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(seq) if masked else None
    fmask = fg.nn.Transformer.generate_square_subsequent_mask(seq) if masked else None
    tx, fx = torch.tensor(x, requires_grad=True), fg.asarray(x, requires_grad=True)
    if name == "transformer":
        tout, fout = t(tx, torch.tensor(y), tgt_mask=tmask), f(fx, fg.asarray(y), tgt_mask=fmask)
    elif decoder:
        tout, fout = t(torch.tensor(y), tx, tgt_mask=tmask), f(fg.asarray(y), fx, tgt_mask=fmask)
    elif name == "encoder stack":
        tout, fout = t(tx, mask=tmask), f(fx, mask=fmask)
    else:
        tout, fout = t(tx, src_mask=tmask), f(fx, src_mask=fmask)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    tout.sum().backward()
    fout.sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
