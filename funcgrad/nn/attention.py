"""``MultiheadAttention`` (PyTorch's parameter names, shapes and outputs)."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..errors import ShapeError
from ..primitives.checks import as_int
from ..primitives.core import fmt_shape
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Returns ``(output, attention weights averaged over heads)``, as PyTorch does.

    ``kdim``/``vdim`` let keys and values have their own sizes (separate
    ``q/k/v_proj_weight`` then, as PyTorch names them); ``add_bias_kv`` appends a learned
    key and value to every sequence, ``add_zero_attn`` a zero one after the projection."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        as_int("MultiheadAttention", embed_dim, "embed_dim", minimum=1)
        as_int("MultiheadAttention", num_heads, "num_heads", minimum=1)
        if embed_dim % num_heads:
            raise ShapeError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.batch_first, self.dropout = embed_dim, num_heads, batch_first, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.add_zero_attn = add_zero_attn
        e = embed_dim
        # made first, drawn after out_proj's own initialisation, as PyTorch does (so the same
        # seed gives PyTorch's weights)
        projections = ["in_proj_weight"] if self._qkv_same_embed_dim else ["q_proj_weight", "k_proj_weight",
                                                                          "v_proj_weight"]
        for name, n_in in zip(projections, (e,) if len(projections) == 1 else (e, self.kdim, self.vdim)):
            rows = 3 * e if len(projections) == 1 else e
            setattr(self, name, Parameter(ops.zeros((rows, n_in), dtype, device=device)))
        self.in_proj_bias = Parameter(ops.zeros((3 * e,), dtype, device=device)) if bias else None
        self.out_proj = Linear(e, e, bias=bias, dtype=dtype, device=device)
        if add_bias_kv:
            self.bias_k = Parameter(ops.zeros((1, 1, e), dtype, device=device))
            self.bias_v = Parameter(ops.zeros((1, 1, e), dtype, device=device))
        else:
            self.bias_k = self.bias_v = None  # type: ignore[assignment]
        for name in projections:
            init.xavier_uniform_(getattr(self, name))
        if bias:
            init.zeros_(self.out_proj.bias)
        if add_bias_kv:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

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
            appended.append((zero, zero))  # type: ignore[arg-type]
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
