"""``fg.nn.utils.rnn``: padding variable-length sequences into one batch."""

from __future__ import annotations

from typing import Any

from ... import ops

__all__ = ["pad_sequence"]


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Any:
    """Stack sequences of shapes (L_i, *) padded to the longest: (L, B, *), or (B, L, *)
    with ``batch_first``; ``padding_side="left"`` pads before each sequence."""
    seqs = list(sequences)
    if not seqs:
        raise ValueError("pad_sequence: got no sequences")
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    trailing = tuple(seqs[0].shape[1:])
    if any(tuple(s.shape[1:]) != trailing for s in seqs):
        raise ValueError(f"pad_sequence: the sequences must share their trailing shape, got "
                         f"{[tuple(s.shape) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    rest = ((0, 0),) * len(trailing)
    padded = [ops.pad(s, (((0, longest - s.shape[0]) if padding_side == "right" else (longest - s.shape[0], 0)),)
                      + rest, constant_values=padding_value) for s in seqs]
    return ops.stack(padded, axis=0 if batch_first else 1)

