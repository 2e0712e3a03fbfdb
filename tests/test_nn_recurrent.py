"""fg.nn attention and LSTM: masks, options, directions and unbatched inputs, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .backends import compile_backend
from .nn_common import RNG, _compare, _copy_params, needs_torch, nn, torch


@needs_torch
@pytest.mark.parametrize("case", ["unbatched", "float mask per head", "bool mask", "unbatched padding",
                                  "batch_first padding"])
def test_multihead_attention_masks_and_unbatched_inputs_match_pytorch(case) -> None:
    batch_first = case == "batch_first padding"
    tm, fm = torch.nn.MultiheadAttention(4, 2, batch_first=batch_first), nn.MultiheadAttention(4, 2, batch_first=batch_first)
    _copy_params(tm, fm)
    shape = {"unbatched": (3, 4), "unbatched padding": (3, 4), "batch_first padding": (2, 3, 4)}.get(case, (3, 2, 4))
    masks = {"float mask per head": {"attn_mask": RNG.standard_normal((4, 3, 3)).astype(np.float32)},
             "bool mask": {"attn_mask": np.triu(np.ones((3, 3), bool), 1)},
             "unbatched padding": {"key_padding_mask": np.array([False, False, True])},
             "batch_first padding": {"key_padding_mask": np.array([[False, False, True], [False, True, False]])}
             }.get(case, {})
    q = RNG.standard_normal(shape).astype(np.float32)
    tq, fq = torch.tensor(q, requires_grad=True), fg.asarray(q, requires_grad=True)
    tout, tw = tm(tq, tq, tq, **{k: torch.tensor(v) for k, v in masks.items()})
    fout, fw = fm(fq, fq, fq, **{k: fg.asarray(v) for k, v in masks.items()})
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    (tout.sum() + (tw * tw).sum()).backward()
    (fout.sum() + (fw * fw).sum()).backward()
    np.testing.assert_allclose(fq.grad.numpy(), tq.grad.numpy(), rtol=1e-3, atol=1e-4)
    with pytest.raises(fg.ShapeError, match=r"MultiheadAttention\(4, 2\): key must be"):
        fm(fq, fg.zeros((3, 2, 5)), fq)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(kdim=3, vdim=5), dict(add_bias_kv=True), dict(add_zero_attn=True),
                                    dict(kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True),
                                    dict(add_bias_kv=True, bias=False), dict(dropout=0.0, add_zero_attn=True)])
@pytest.mark.parametrize("masked", [False, True])
def test_multihead_attention_options_match_pytorch(kwargs, masked) -> None:
    """kdim/vdim (separate q/k/v projection weights, PyTorch's names and order), a learned
    key and value appended to every sequence, and a zero one, with masks that then grow a
    column; values, weights, and gradients of the inputs and every parameter."""
    tm, fm = torch.nn.MultiheadAttention(4, 2, **kwargs), nn.MultiheadAttention(4, 2, **kwargs)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _copy_params(tm, fm)
    first = kwargs.get("batch_first", False)
    lay = (lambda t, n: (2, t, n)) if first else (lambda t, n: (t, 2, n))
    q, k, v = (RNG.standard_normal(lay(t, n)).astype(np.float32)
               for t, n in ((3, 4), (5, kwargs.get("kdim", 4)), (5, kwargs.get("vdim", 4))))
    masks = {"attn_mask": np.triu(np.ones((3, 5), bool), 2),
             "key_padding_mask": np.array([[False] * 4 + [True], [False] * 5])} if masked else {}
    tx = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    fx = [fg.asarray(a, requires_grad=True) for a in (q, k, v)]
    tout, tw = tm(*tx, **{n: torch.tensor(m) for n, m in masks.items()})
    fout, fw = fm(*fx, **{n: fg.asarray(m) for n, m in masks.items()})
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    (tout.sum() + (tw * tw).sum()).backward()
    (fout.sum() + (fw * fw).sum()).backward()
    for a, b in zip(fx, tx):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-5)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=name)


@needs_torch
def test_lstm_unbatched_input_matches_pytorch() -> None:
    tm, fm = torch.nn.LSTM(3, 5, num_layers=2), nn.LSTM(3, 5, num_layers=2)
    _copy_params(tm, fm)
    x, h0, c0 = (RNG.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 5), (2, 5)])
    tout, (th, tc) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    fout, (fh, fc) = fm(fg.asarray(x), (fg.asarray(h0), fg.asarray(c0)))
    for f, t in ((fout, tout), (fh, th), (fc, tc)):
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(fg.ShapeError, match=r"LSTM\(3, 5\): expected an input of shape"):
        fm(fg.zeros((4, 2)))
    with pytest.raises(fg.ShapeError, match=r"LSTM: h_0 must have shape \(2, 5\), got \(1, 5\)"):
        fm(fg.asarray(x), (fg.zeros((1, 5)), fg.asarray(c0)))


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_pytorch(batch_first) -> None:
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    fm = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q = RNG.standard_normal((5, 3, 8) if not batch_first else (3, 5, 8)).astype(np.float32)
    kv = RNG.standard_normal((4, 3, 8) if not batch_first else (3, 4, 8)).astype(np.float32)
    _compare(tm, fm, [q, kv, kv], out_index=0)
    _, tw = tm(torch.tensor(q), torch.tensor(kv), torch.tensor(kv))
    _, fw = fm(fg.asarray(q), fg.asarray(kv), fg.asarray(kv))
    np.testing.assert_allclose(fw.numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("layers,batch_first,bidirectional,proj", [(1, False, False, 0), (2, True, False, 0),
                                                                  (1, False, True, 0), (3, True, True, 0),
                                                                  (1, False, False, 2), (2, True, True, 3)])
def test_lstm_matches_pytorch(layers, batch_first, bidirectional, proj) -> None:
    kwargs = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidirectional, proj_size=proj)
    tm, fm = torch.nn.LSTM(3, 5, **kwargs), nn.LSTM(3, 5, **kwargs)
    assert repr(fm) == repr(tm)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    _compare(tm, fm, [x], out_index=0)
    d = 2 if bidirectional else 1
    batch = x.shape[0] if batch_first else x.shape[1]
    h0, c0 = (RNG.standard_normal((layers * d, batch, size)).astype(np.float32) for size in (proj or 5, 5))
    tout, (th, tc) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    fout, (fh, fc) = fm(fg.asarray(x), (fg.asarray(h0), fg.asarray(c0)))
    for f, t in ((fout, tout), (fh, th), (fc, tc)):
        assert f.shape == tuple(t.shape)
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    # the gradient reaches the initial states, through both directions
    th0 = torch.tensor(h0, requires_grad=True)
    fh0 = fg.asarray(h0, requires_grad=True)
    tm(torch.tensor(x), (th0, torch.tensor(c0)))[0].sum().backward()
    fm(fg.asarray(x), (fh0, fg.asarray(c0)))[0].sum().backward()
    np.testing.assert_allclose(fh0.grad.numpy(), th0.grad.numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
def test_lstm_dropout_between_layers_matches_pytorch() -> None:
    """Dropout applies to every layer's output but the last, only in training: with p=1
    the second layer sees zeros (deterministic in both libraries); in eval mode nothing."""
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    for p, train in ((1.0, True), (0.5, False)):
        tm = torch.nn.LSTM(3, 5, num_layers=2, dropout=p, bidirectional=True)
        fm = nn.LSTM(3, 5, num_layers=2, dropout=p, bidirectional=True)
        _copy_params(tm, fm)
        tm.train(train)
        fm.train(train)
        tout, _ = tm(torch.tensor(x))
        fout, _ = fm(fg.asarray(x))
        np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    fm = nn.LSTM(3, 5, num_layers=2, dropout=0.5)  # training with 0 < p < 1: different draws each call
    assert not np.allclose(fm(fg.asarray(x))[0].numpy(), fm(fg.asarray(x))[0].numpy())
    fm.eval()
    assert np.array_equal(fm(fg.asarray(x))[0].numpy(), fm(fg.asarray(x))[0].numpy())


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 5), batch=st.integers(1, 3), proj=st.sampled_from([0, 1, 3]))
def test_lstm_reverse_direction_is_a_forward_lstm_on_the_flipped_sequence(length, batch, proj) -> None:
    """The reverse half of a bidirectional LSTM's output is a one-way LSTM with the
    ``*_reverse`` weights run over the sequence backwards (its output flipped back), and
    the forward half is the one-way LSTM with the forward weights (with or without a
    projection of the hidden state)."""
    bi, one = nn.LSTM(3, 4, bidirectional=True, proj_size=proj), nn.LSTM(3, 4, proj_size=proj)
    x = fg.asarray(RNG.standard_normal((length, batch, 3)).astype(np.float32))
    out, (h, c) = bi(x)
    params = dict(bi.named_parameters())
    k = proj or 4
    for suffix, half, seq, flip in (("", slice(0, k), x, lambda a: a), ("_reverse", slice(k, 2 * k), x[::-1],
                                                                       lambda a: a[::-1])):
        for name, p in one.named_parameters():
            p._assign(params[name + suffix])
        ref, (rh, rc) = one(seq)
        np.testing.assert_allclose(out.numpy()[..., half], flip(ref.numpy()), rtol=1e-5, atol=1e-6)
        k = 0 if suffix == "" else 1
        np.testing.assert_allclose(h.numpy()[k], rh.numpy()[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c.numpy()[k], rc.numpy()[0], rtol=1e-5, atol=1e-6)


def test_lstm_bidirectional_unbatched_and_bad_arguments() -> None:
    fm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    out, (h, c) = fm(fg.ones((5, 3)))
    assert out.shape == (5, 8) and h.shape == (4, 4) and c.shape == (4, 4)
    batched, (hb, _) = fm(fg.ones((5, 1, 3)))
    np.testing.assert_allclose(out.numpy(), batched.numpy()[:, 0], rtol=1e-6)
    np.testing.assert_allclose(h.numpy(), hb.numpy()[:, 0], rtol=1e-6)
    # the reverse direction's last state is the first step's: the forward one's is the last step's
    np.testing.assert_allclose(h.numpy()[2], out.numpy()[-1, :4], rtol=1e-6)
    np.testing.assert_allclose(h.numpy()[3], out.numpy()[0, 4:], rtol=1e-6)
    with pytest.raises(fg.ShapeError, match=r"LSTM: h_0 must have shape \(4, 1, 4\), got \(2, 1, 4\)"):
        fm(fg.ones((5, 1, 3)), (fg.zeros((2, 1, 4)), fg.zeros((2, 1, 4))))
    with pytest.raises(ValueError, match="dropout must be a probability"):
        nn.LSTM(3, 4, dropout=1.5)
    for bad in (-1, 4):
        with pytest.raises(ValueError, match="proj_size must be at least 0 and smaller than hidden_size=4"):
            nn.LSTM(3, 4, proj_size=bad)
    projected = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    out, (h, c) = projected(fg.ones((5, 3)))
    assert out.shape == (5, 4) and h.shape == (4, 2) and c.shape == (4, 4)  # h projected, c not
    with pytest.raises(fg.ShapeError, match=r"LSTM: c_0 must have shape \(4, 1, 4\), got \(4, 1, 2\)"):
        projected(fg.ones((5, 1, 3)), (fg.zeros((4, 1, 2)), fg.zeros((4, 1, 2))))


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.GRU(3, 5), lambda m: m.GRU(3, 5, num_layers=2, batch_first=True, bidirectional=True),
    lambda m: m.GRU(3, 5, bias=False), lambda m: m.RNN(3, 5), lambda m: m.RNN(3, 5, 2, "relu", bidirectional=True),
    lambda m: m.RNN(3, 5, batch_first=True),
], ids=["gru", "gru_deep_bidirectional", "gru_no_bias", "rnn", "rnn_relu_deep", "rnn_batch_first"])
def test_gru_and_rnn_match_pytorch(make) -> None:
    torch.manual_seed(0)
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    _compare(tm, fm, [x], out_index=0)
    d = 2 if tm.bidirectional else 1
    h0 = RNG.standard_normal((tm.num_layers * d, 4 if tm.batch_first else 2, 5)).astype(np.float32)
    tout, th = tm(torch.tensor(x), torch.tensor(h0))
    fout, fh = fm(fg.asarray(x), fg.asarray(h0))
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fh.numpy(), th.detach().numpy(), rtol=1e-4, atol=1e-5)
    unbatched = tm(torch.tensor(x[:, 0]))[1], fm(fg.asarray(x[:, 0]))[1]
    np.testing.assert_allclose(unbatched[1].numpy(), unbatched[0].detach().numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("make", [lambda m: m.RNNCell(3, 5), lambda m: m.RNNCell(3, 5, nonlinearity="relu"),
                                  lambda m: m.GRUCell(3, 5), lambda m: m.LSTMCell(3, 5), lambda m: m.GRUCell(3, 5, False)],
                         ids=["rnn_cell", "rnn_cell_relu", "gru_cell", "lstm_cell", "gru_cell_no_bias"])
def test_cells_match_pytorch(make) -> None:
    torch.manual_seed(0)
    tm, fm = make(torch.nn), make(nn)
    assert repr(fm) == repr(tm)
    _copy_params(tm, fm)
    x, h = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((2, 5)).astype(np.float32)
    lstm = isinstance(tm, torch.nn.LSTMCell)
    t_state = (torch.tensor(h, requires_grad=True), torch.tensor(h)) if lstm else torch.tensor(h, requires_grad=True)
    f_state = (fg.asarray(h, requires_grad=True), fg.asarray(h)) if lstm else fg.asarray(h, requires_grad=True)
    tout, fout = tm(torch.tensor(x), t_state), fm(fg.asarray(x), f_state)
    tout, fout = (tout[0], fout[0]) if lstm else (tout, fout)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    tout.sum().backward()
    fout.sum().backward()
    t_h, f_h = (t_state[0], f_state[0]) if lstm else (t_state, f_state)
    np.testing.assert_allclose(f_h.grad.numpy(), t_h.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(fm(fg.asarray(x)).numpy() if not lstm else fm(fg.asarray(x))[0].numpy(),
                               (tm(torch.tensor(x)) if not lstm else tm(torch.tensor(x))[0]).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"},
                                    {"gqa": True}], ids=["plain", "causal", "scale", "bool_mask", "float_mask", "gqa"])
def test_scaled_dot_product_attention_matches_pytorch(kwargs) -> None:
    kwargs = dict(kwargs)
    heads_kv = 2 if kwargs.pop("gqa", False) else 4
    q = RNG.standard_normal((2, 4, 5, 8))
    k, v = RNG.standard_normal((2, heads_kv, 6, 8)), RNG.standard_normal((2, heads_kv, 6, 8))
    mask = kwargs.pop("mask", None)
    if kwargs.get("is_causal"):
        k, v = k[:, :, :5], v[:, :, :5]
    extra: dict = {"enable_gqa": True} if heads_kv == 2 else {}
    if mask == "bool":
        m = RNG.random((5, 6)) > 0.3
        m[:, 0] = True  # every query keeps a key
        extra["attn_mask"] = m
    elif mask == "float":
        extra["attn_mask"] = RNG.standard_normal((5, 6))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    fq, fk, fv = (fg.asarray(a, requires_grad=True) for a in (q, k, v))
    targs = {**kwargs, **{n: torch.tensor(a) if n == "attn_mask" else a for n, a in extra.items()}}
    fargs = {**kwargs, **{n: fg.asarray(a) if n == "attn_mask" else a for n, a in extra.items()}}
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **targs)
    fout = fg.nn.functional.scaled_dot_product_attention(fq, fk, fv, **fargs)
    np.testing.assert_allclose(fout.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    (tout ** 2).sum().backward()
    (fout ** 2).sum().backward()
    for f, t in ((fq, tq), (fk, tk), (fv, tv)):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_attention_primitive_reads_projection_heads_where_they_lie_and_composes() -> None:
    """``scaled_dot_product_attention`` without a mask or dropout is the ``attention``
    primitive: heads that are views into a fused qkv projection (rows three widths apart)
    give the bits of their contiguous copies, and it composes with ``compile``, ``vmap`` and
    ``grad`` as the composite it replaces does (a mask still takes the composite)."""
    F = fg.nn.functional
    batch, length, heads, width = 3, 10, 2, 4
    qkv = fg.asarray(RNG.standard_normal((batch, length, 3 * heads * width)).astype(np.float32))

    def attend(t):
        q, k, v = (x.reshape(batch, length, heads, width).transpose(1, 2)
                   for x in t.split(heads * width, 2))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    views = [x.reshape(batch, length, heads, width).transpose(1, 2) for x in qkv.split(heads * width, 2)]
    copies = [fg.asarray(np.ascontiguousarray(x.numpy())) for x in views]
    out = attend(qkv)
    assert out.numpy().tobytes() == F.scaled_dot_product_attention(*copies, is_causal=True).numpy().tobytes()
    jaxpr = str(fg.make_jaxpr(attend)(qkv))
    assert "attention" in jaxpr and "softmax" not in jaxpr
    np.testing.assert_allclose(fg.compile(attend)(qkv).numpy(), out.numpy(), rtol=1e-6, atol=1e-6)
    loss = lambda t: (attend(t) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(fg.compile(fg.grad(loss))(qkv).numpy(), fg.grad(loss)(qkv).numpy(), rtol=1e-5,
                               atol=1e-6)
    q, k, v = copies
    member = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True)  # noqa: E731
    mapped = fg.vmap(member, in_axes=(0, None, 0))(q, k[0], v)
    for i in range(batch):
        np.testing.assert_allclose(mapped[i].numpy(), member(q[i], k[0], v[i]).numpy(), rtol=1e-6, atol=1e-6)
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=fg.ones((length, length), dtype=fg.bool_))
    np.testing.assert_allclose(masked.numpy(), F.scaled_dot_product_attention(q, k, v).numpy(), rtol=1e-6, atol=1e-6)


@settings(deadline=None)
@given(data=st.data())
def test_attention_loops_match_the_float64_composite(data) -> None:
    """The native forward and backward loops (tiles of four query rows by two vectors of keys
    or features) against the composite in float64: lengths, widths and feature counts that
    end inside a tile, causal or not, heads read where they lie in a fused projection and
    results written in their inputs' layout. Every result of the backward pass is checked,
    and the NumPy backend gives the same values."""
    from funcgrad.primitives.attention import attention_grad_p, attention_p

    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    length, source, width, features = (data.draw(st.integers(1, 40)) for _ in range(4))
    causal, scale = data.draw(st.booleans()), data.draw(st.sampled_from([0.5, 1.0]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    fused = rng.standard_normal((2, max(length, source), 3, 2, width + features)).astype(dtype)
    q = fused[:, :length, 0, :, :width].transpose(0, 2, 1, 3)  # two heads, rows 6 * (width + features) apart
    k = fused[:, :source, 1, :, :width].transpose(0, 2, 1, 3)
    v = fused[:, :source, 2, :, width:].transpose(0, 2, 1, 3)
    go = rng.standard_normal((2, 2, length, features)).astype(dtype)
    q64, k64, v64, go64 = (a.astype(np.float64) for a in (q, k, v, go))
    keep = np.arange(source)[None, :] <= np.arange(length)[:, None] if causal else np.ones((length, source), bool)
    s = np.where(keep, q64 @ np.swapaxes(k64, -1, -2) * scale, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = go64 @ np.swapaxes(v64, -1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * scale
    want = [p @ v64, p, ds @ k64, np.swapaxes(ds, -1, -2) @ q64, np.swapaxes(p, -1, -2) @ go64]
    tol = 2e-5 if dtype == np.float32 else 1e-12
    results = []
    for backend in ("c", "numpy"):
        with compile_backend(backend):
            o, w = fg.bind(attention_p, *map(fg.asarray, (q, k, v)), scale=scale, causal=causal)
            grads = fg.bind(attention_grad_p, *map(fg.asarray, (q, k, v, p.astype(dtype), go)), scale=scale,
                            causal=causal)
        results.append([o.numpy(), w.numpy(), *(g.numpy() for g in grads)])
        if backend == "c":  # o and dq in q's layout, dk k's, dv v's: heads by rows, a view of (2, rows, 2 * width)
            for a in (o, *grads):
                assert np.transpose(a.numpy(), (0, 2, 1, 3)).flags.c_contiguous
        for name, got, expected in zip(("o", "p", "dq", "dk", "dv"), results[-1], want):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max()),
                                       err_msg=f"{backend} {name}")


def test_the_attention_loops_exponential_at_the_ends_of_its_range() -> None:
    """The forward loop's exponential (a polynomial, within 1.04 ulp of exp over [-87.3, 0]):
    weights whose scores lie more than 87.3 below their row's largest are 0 (subnormal in
    NumPy's composite), the rest match float64 within float32's rounding, and a NaN score
    makes its row NaN and no other; under both backends."""
    from funcgrad.primitives.attention import attention_p

    rng = np.random.default_rng(5)
    q = (rng.standard_normal((1, 2, 6, 4)) * 12).astype(np.float32)
    k = (rng.standard_normal((1, 2, 9, 4)) * 12).astype(np.float32)
    v = rng.standard_normal((1, 2, 9, 3)).astype(np.float32)
    q[0, 1, 2, 0] = np.nan
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)
    gap = s.max(-1, keepdims=True) - s
    p = np.exp(-gap) / np.exp(-gap).sum(-1, keepdims=True)
    finite = ~np.isnan(s).any(-1)
    for backend in ("c", "numpy"):
        with compile_backend(backend):
            o, w = (a.numpy() for a in fg.bind(attention_p, *map(fg.asarray, (q, k, v)), scale=1.0, causal=False))
        assert np.isnan(w[0, 1, 2]).all() and np.isnan(o[0, 1, 2]).all() and finite.sum() == 11
        far = gap[finite] > 88  # (float32 scores: a margin)
        assert far.any() and (w[finite][far] < np.finfo(np.float32).tiny).all(), backend
        rtol = 2e-7 * np.abs(s[finite]).max()  # (a score's float32 rounding is an exponential's relative error)
        np.testing.assert_allclose(w[finite], p[finite], rtol=rtol, atol=1e-30, err_msg=backend)
        np.testing.assert_allclose(o[finite], (p @ v.astype(np.float64))[finite], rtol=rtol, atol=1e-6)


def test_a_gradient_through_attention_is_one_attention_grad() -> None:
    """Without a cotangent for the weights, attention's backward pass is the one primitive
    (its rules differentiate it further: tests/test_gradients.py)."""
    q = fg.asarray(RNG.standard_normal((2, 3, 5, 4)))
    loss = lambda q: (fg.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True) ** 2).sum()  # noqa: E731
    jaxpr = str(fg.make_jaxpr(fg.grad(loss))(q))
    assert jaxpr.count("attention_grad") == 1 and "softmax" not in jaxpr
