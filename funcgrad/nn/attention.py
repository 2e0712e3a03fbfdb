"""``MultiheadAttention`` and ``LSTM`` (PyTorch's parameter names, shapes and outputs)."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..errors import ShapeError
from ..primitives.core import fmt_shape
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention", "LSTM"]


class MultiheadAttention(Module):
    """Returns ``(output, attention weights averaged over heads)``, as PyTorch does.

    ``kdim``/``vdim`` let keys and values have their own sizes (separate
    ``q/k/v_proj_weight`` then, as PyTorch names them); ``add_bias_kv`` appends a learned
    key and value to every sequence, ``add_zero_attn`` a zero one after the projection."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ShapeError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.batch_first, self.dropout = embed_dim, num_heads, batch_first, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.add_zero_attn = add_zero_attn
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(ops.zeros((3 * e, e), dtype, device=device))
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for name, n_in in (("q_proj_weight", e), ("k_proj_weight", self.kdim), ("v_proj_weight", self.vdim)):
                setattr(self, name, Parameter(ops.zeros((e, n_in), dtype, device=device)))
                init.xavier_uniform_(getattr(self, name))
        self.in_proj_bias = Parameter(ops.zeros((3 * e,), dtype, device=device)) if bias else None
        if add_bias_kv:
            self.bias_k = Parameter(ops.zeros((1, 1, e), dtype, device=device))
            self.bias_v = Parameter(ops.zeros((1, 1, e), dtype, device=device))
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        else:
            self.bias_k = self.bias_v = None
        self.out_proj = Linear(e, e, bias=bias, dtype=dtype, device=device)
        if bias:
            init.zeros_(self.out_proj.bias)

    @property
    def _qkv_same_embed_dim(self) -> bool:
        """One packed ``in_proj_weight`` when keys and values have the query's size."""
        return self.kdim == self.embed_dim and self.vdim == self.embed_dim

    def _projections(self) -> tuple[Any, Any, Any]:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            return w[:e], w[e:2 * e], w[2 * e:]
        return self.q_proj_weight, self.k_proj_weight, self.v_proj_weight

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None, need_weights: bool = True,
                attn_mask: Any = None, average_attn_weights: bool = True) -> tuple[Any, Any]:
        """query (L, N, E) and key, value (S, N, kdim / vdim); (N, L, E) and (N, S, ...)
        with ``batch_first``; or unbatched (L, E) and (S, ...). ``attn_mask`` is (L, S) or
        (N * num_heads, L, S), boolean (True: not allowed to attend) or added to the scores;
        ``key_padding_mask`` is (N, S), or (S,) unbatched."""
        e = self.embed_dim
        for name, t, size in (("query", query, e), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.ndim not in (2, 3) or t.shape[-1] != size or t.ndim != query.ndim:
                raise ShapeError(f"MultiheadAttention({e}, {self.num_heads}): {name} must be (L, N, {size}), or "
                                 f"(L, {size}) unbatched like the query, got {fmt_shape(tuple(t.shape))}")
        unbatched = query.ndim == 2
        if unbatched:  # as PyTorch: one sequence, with no batch axis in or out
            query, key, value = (ops.expand_dims(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.expand_dims(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))
        tq, b, _ = query.shape
        h, d = self.num_heads, e // self.num_heads
        wq, wk, wv = self._projections()
        bias = self.in_proj_bias
        q = F.linear(query, wq, None if bias is None else bias[:e])
        k = F.linear(key, wk, None if bias is None else bias[e:2 * e])
        v = F.linear(value, wv, None if bias is None else bias[2 * e:])
        # key positions appended to every sequence (after the projection): a learned one, then a zero one
        appended = [(self.bias_k, self.bias_v)] if self.bias_k is not None else []
        if self.add_zero_attn:
            zero = ops.zeros((1, 1, e), k.dtype, device=k.device)
            appended.append((zero, zero))
        for extra_k, extra_v in appended:
            k = ops.concatenate([k, ops.broadcast_to(extra_k, (1, b, e))], axis=0)
            v = ops.concatenate([v, ops.broadcast_to(extra_v, (1, b, e))], axis=0)
        tk = k.shape[0]
        if appended:  # the masks get a column per appended key, which allows it
            pad = len(appended)
            if attn_mask is not None:
                attn_mask = ops.pad(attn_mask, ((0, 0),) * (attn_mask.ndim - 1) + ((0, pad),))
            if key_padding_mask is not None:
                key_padding_mask = ops.pad(key_padding_mask, ((0, 0), (0, pad)))

        def heads(t: Any, n: int) -> Any:  # (T, B, E) -> (B, H, T, D)
            return ops.transpose(ops.reshape(t, (n, b, h, d)), (1, 2, 0, 3))

        q, k, v = heads(q, tq), heads(k, tk), heads(v, tk)
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(d))   # (B, H, Tq, Tk)
        if attn_mask is not None:
            if attn_mask.ndim == 3:  # one mask per batch entry and head, as PyTorch lays them out
                attn_mask = ops.reshape(attn_mask, (b, h, tq, tk))
            scores = ops.where(attn_mask, -math.inf, scores) if attn_mask.dtype.kind == "b" else scores + attn_mask
        if key_padding_mask is not None:
            scores = ops.where(ops.reshape(key_padding_mask, (b, 1, 1, tk)), -math.inf, scores)
        weights = F.softmax(scores, dim=-1)
        weights = F.dropout(weights, self.dropout, self.training)
        out = ops.matmul(weights, v)                                              # (B, H, Tq, D)
        out = ops.reshape(ops.transpose(out, (2, 0, 1, 3)), (tq, b, e))
        out = self.out_proj(out)
        if unbatched:
            out, weights = out[:, 0], weights[0]
        elif self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        if not need_weights:
            return out, None
        return out, (ops.mean(weights, -3) if average_attn_weights else weights)


class LSTM(Module):
    """Multi-layer LSTM; returns ``(output, (h_n, c_n))``. Gate order i, f, g, o (PyTorch's).

    ``bidirectional=True`` adds a second LSTM per layer that reads the sequence backwards
    (parameters ``*_reverse``, as PyTorch names them); the output concatenates both
    directions' hidden states per step, and ``h_n``/``c_n`` list the directions of each
    layer in turn. ``dropout`` applies to each layer's output but the last, in training.
    ``proj_size > 0`` projects each step's hidden state to ``proj_size`` features
    (parameters ``weight_hr_*``, PyTorch's LSTMP): the outputs and ``h`` have that size,
    the cell state keeps ``hidden_size``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"LSTM: dropout must be a probability in [0, 1], got {dropout}")
        if num_layers < 1:
            raise ValueError(f"LSTM: num_layers must be at least 1, got {num_layers}")
        if not 0 <= proj_size < hidden_size:
            raise ValueError(f"LSTM: proj_size must be at least 0 and smaller than hidden_size={hidden_size}, "
                             f"got {proj_size}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bool(bidirectional), int(proj_size)
        bound = 1 / math.sqrt(hidden_size)
        h_size = self._h_size
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else h_size * len(self._directions)
            for suffix in self._directions:
                shapes = [(f"weight_ih_l{layer}{suffix}", (4 * hidden_size, n_in)),
                          (f"weight_hh_l{layer}{suffix}", (4 * hidden_size, h_size))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (4 * hidden_size,)),
                               (f"bias_hh_l{layer}{suffix}", (4 * hidden_size,))]
                if proj_size:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    p = Parameter(ops.zeros(shape, dtype, device=device))
                    init.uniform_(p, -bound, bound)
                    setattr(self, name, p)

    @property
    def _directions(self) -> tuple[str, ...]:
        """The parameter-name suffix of each direction of a layer."""
        return ("", "_reverse") if self.bidirectional else ("",)

    @property
    def _h_size(self) -> int:
        """The size of the hidden state ``h`` (and of each direction's output)."""
        return self.proj_size or self.hidden_size

    def forward(self, x: Any, hx: tuple[Any, Any] | None = None) -> tuple[Any, tuple[Any, Any]]:
        """``x`` is (L, N, input_size), (N, L, input_size) with ``batch_first``, or unbatched
        (L, input_size); ``hx`` is ``(h_0, c_0)``, each (D * num_layers, N, hidden_size), or
        (D * num_layers, hidden_size) for an unbatched input (D: 2 when bidirectional;
        ``h_0`` has ``proj_size`` features when there is a projection)."""
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            raise ShapeError(f"LSTM({self.input_size}, {self.hidden_size}): expected an input of shape (L, N, "
                             f"{self.input_size}) or (L, {self.input_size}), got {fmt_shape(tuple(x.shape))}")
        unbatched, hs, h_size = x.ndim == 2, self.hidden_size, self._h_size
        if unbatched:  # as PyTorch: one sequence, with no batch axis in or out
            x = ops.expand_dims(x, 1)
        elif self.batch_first:
            x = ops.swapaxes(x, 0, 1)
        b = x.shape[1]
        states = self.num_layers * len(self._directions)
        if hx is None:
            c0 = ops.zeros((states, b, hs), x.dtype, device=x.device)
            h0 = c0 if h_size == hs else ops.zeros((states, b, h_size), x.dtype, device=x.device)
        else:
            for name, state, size in zip(("h_0", "c_0"), hx, (h_size, hs)):
                expected = (states, size) if unbatched else (states, b, size)
                if tuple(state.shape) != expected:
                    raise ShapeError(f"LSTM: {name} must have shape {fmt_shape(expected)}, "
                                     f"got {fmt_shape(tuple(state.shape))}")
            h0, c0 = (ops.expand_dims(s, 1) for s in hx) if unbatched else hx
        layer_input = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            directions = []
            for d, suffix in enumerate(self._directions):
                out, h, c = self._run(layer_input, h0[len(h_n)], c0[len(h_n)], f"l{layer}{suffix}", reverse=d == 1)
                directions.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_input = directions[0] if len(directions) == 1 else ops.concatenate(directions, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        if unbatched:
            return ops.squeeze(layer_input, 1), (ops.stack(h_n)[:, 0], ops.stack(c_n)[:, 0])
        out = ops.swapaxes(layer_input, 0, 1) if self.batch_first else layer_input
        return out, (ops.stack(h_n), ops.stack(c_n))

    def _run(self, x: Any, h: Any, c: Any, name: str, reverse: bool) -> tuple[Any, Any, Any]:
        """One direction of one layer over (L, N, features): its outputs, in the input's
        step order, and its last state (the first step's, read backwards)."""
        w_ih, w_hh = getattr(self, f"weight_ih_{name}"), getattr(self, f"weight_hh_{name}")
        b_ih = getattr(self, f"bias_ih_{name}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_{name}") if self.bias else None
        w_hr = getattr(self, f"weight_hr_{name}") if self.proj_size else None
        pre = F.linear(x, w_ih, b_ih)  # input projections for all steps at once
        t = x.shape[0]
        outputs: list[Any] = [None] * t
        for step in (reversed(range(t)) if reverse else range(t)):
            gates = pre[step] + F.linear(h, w_hh, b_hh)
            i, f, g, o = ops.split(gates, 4, axis=-1)
            c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            if w_hr is not None:
                h = F.linear(h, w_hr)
            outputs[step] = h
        return ops.stack(outputs), h, c

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            value = getattr(self, name)
            if value != default:
                s += f", {name}={value}"
        return s
