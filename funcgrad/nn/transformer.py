"""``Transformer`` and its encoder and decoder layers and stacks (PyTorch's submodule names,
arguments and post-/pre-norm orders), built from ``MultiheadAttention``, ``Linear``,
``LayerNorm`` and ``Dropout``."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from .. import ops
from ..errors import ArgumentTypeError, ArgumentValueError
from ..primitives.checks import as_int
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .layers import Dropout, LayerNorm, Linear, ModuleList
from .module import Module

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
           "Transformer"]


def _activation(activation: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    if callable(activation):
        return activation
    if activation not in ("relu", "gelu"):
        raise ValueError(f"activation must be 'relu', 'gelu' or a function, got {activation!r}")
    return F.relu if activation == "relu" else F.gelu


def _causal_mask(size: int, like: Any) -> Any:
    """``-inf`` above the diagonal, 0 elsewhere (``Transformer.generate_square_subsequent_mask``)."""
    keep = ops.tril(ops.ones((size, size), _dt.bool_, device=like.device))
    return ops.where(keep, ops.asarray(0.0, dtype=like.dtype, device=like.device), -float("inf"))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm (after
    them, or before with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src: Any, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Any:
        """The layer applied to ``src``; masks as ``MultiheadAttention`` takes them."""
        if is_causal and src_mask is None:
            src_mask = _causal_mask(src.shape[1 if self.self_attn.batch_first else 0], src)
        x = src
        if self.norm_first:
            x = x + self._attend(self.norm1(x), src_mask, src_key_padding_mask)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._attend(x, src_mask, src_key_padding_mask))
        return self.norm2(x + self._feed_forward(x))

    def _attend(self, x: Any, mask: Any, padding: Any) -> Any:
        return self.dropout1(self.self_attn(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)[0])

    def _feed_forward(self, x: Any) -> Any:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (``memory``), and a feed-forward
    block, each with a residual and a LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kwargs = dict(dropout=dropout, bias=bias, batch_first=batch_first, device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, **kwargs)  # type: ignore[arg-type]
        self.multihead_attn = MultiheadAttention(d_model, nhead, **kwargs)  # type: ignore[arg-type]
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                                                        dtype=dtype) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Any:
        """The layer applied to ``tgt`` attending to ``memory``."""
        if tgt_is_causal and tgt_mask is None:
            tgt_mask = _causal_mask(tgt.shape[1 if self.self_attn.batch_first else 0], tgt)
        x = tgt
        if self.norm_first:
            x = x + self._self(self.norm1(x), tgt_mask, tgt_key_padding_mask)
            x = x + self._cross(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            return x + self._feed_forward(self.norm3(x))
        x = self.norm1(x + self._self(x, tgt_mask, tgt_key_padding_mask))
        x = self.norm2(x + self._cross(x, memory, memory_mask, memory_key_padding_mask))
        return self.norm3(x + self._feed_forward(x))

    def _self(self, x: Any, mask: Any, padding: Any) -> Any:
        return self.dropout1(self.self_attn(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)[0])

    def _cross(self, x: Any, memory: Any, mask: Any, padding: Any) -> Any:
        out = self.multihead_attn(x, memory, memory, key_padding_mask=padding, attn_mask=mask, need_weights=False)
        return self.dropout2(out[0])

    def _feed_forward(self, x: Any) -> Any:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _physical_memory() -> int | None:
    """The machine's memory in bytes, where the OS says (``None`` where it does not)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _check_stack(name: str, layer: Any, num_layers: Any, norm: Any) -> None:
    if not isinstance(layer, Module):
        raise ArgumentTypeError(f"{name}: the layer to repeat must be a Module, got {type(layer).__name__}")
    count = as_int(name, num_layers, "num_layers", minimum=1)
    each = sum(p.nbytes for p in layer.parameters())
    limit = _physical_memory()
    if limit is not None and count * each > limit:  # (refused before copying: the copies would exhaust memory)
        raise ArgumentValueError(f"{name}: {count} copies of a layer of {each} bytes of parameters need "
                                 f"{count * each} bytes, more than this machine's memory ({limit} bytes)")
    if norm is not None and not isinstance(norm, Module):
        raise ArgumentTypeError(f"{name}: norm must be a Module or None, got {type(norm).__name__}")


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (each its own parameters), then ``norm``."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        _check_stack("TransformerEncoder", encoder_layer, num_layers, norm)
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Any, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Any:
        """The layers applied in turn."""
        for layer in self.layers:
            src = layer(src, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return src if self.norm is None else self.norm(src)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        _check_stack("TransformerDecoder", decoder_layer, num_layers, norm)
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Any:
        """The layers applied in turn to ``tgt``, each attending to ``memory``."""
        for layer in self.layers:
            tgt = layer(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                        bool(tgt_is_causal), memory_is_causal)
        return tgt if self.norm is None else self.norm(tgt)


class Transformer(Module):
    """The encoder-decoder Transformer ("Attention is all you need"), PyTorch's layout."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kwargs = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                      layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias,
                      device=device, dtype=dtype)
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **kwargs), num_encoder_layers,  # type: ignore[arg-type]
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype))
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **kwargs), num_decoder_layers,  # type: ignore[arg-type]
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():  # (PyTorch's _reset_parameters: every matrix drawn again, in order)
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Any, tgt: Any, src_mask: Any = None, tgt_mask: Any = None, memory_mask: Any = None,
                src_key_padding_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Any:
        """The encoder over ``src``, then the decoder over ``tgt`` attending to its output."""
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                            tgt_is_causal, memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Any:
        """A float mask with ``-inf`` above the diagonal: each position attends to itself and earlier."""
        return _causal_mask(sz, ops.zeros((), dtype or _dt.float32, device=device))
