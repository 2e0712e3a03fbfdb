"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells (PyTorch's parameter names,
shapes, gate orders and outputs).

One base runs all three: the input projections of every step at once, then a Python loop
over the steps, each the cell's update of the state (for an LSTM, ``(h, c)``); layers stack,
and a bidirectional layer runs a second copy backwards. The cells are those updates alone.
"""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..errors import ShapeError
from ..primitives.checks import as_int
from ..primitives.core import fmt_shape
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _lstm_step(gates: Any, state: tuple[Any, Any]) -> tuple[Any, Any]:
    """Gates i, f, g, o (PyTorch's order): the new ``(h, c)``."""
    i, f, g, o = ops.split(gates, 4, axis=-1)
    c = ops.sigmoid(f) * state[1] + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(c), c


def _gru_step(x_gates: Any, h_gates: Any, h: Any) -> Any:
    """Gates r, z, n (PyTorch's order); the reset gate scales the hidden part of ``n``."""
    xr, xz, xn = ops.split(x_gates, 3, axis=-1)
    hr, hz, hn = ops.split(h_gates, 3, axis=-1)
    r, z = ops.sigmoid(xr + hr), ops.sigmoid(xz + hz)
    n = ops.tanh(xn + r * hn)
    return (1.0 - z) * n + z * h


def _activation(nonlinearity: str) -> Any:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; use 'tanh' or 'relu'")
    return ops.tanh if nonlinearity == "tanh" else F.relu


class RNNBase(Module):
    """The recurrent layers' shared machinery (``torch.nn.RNNBase``, for ``isinstance``):
    subclasses say how many gates a cell has and how it steps. Construct a layer through
    ``RNN``, ``LSTM`` or ``GRU``.

    Example:
        >>> isinstance(fg.nn.LSTM(4, 8), fg.nn.RNNBase), isinstance(fg.nn.GRU(4, 8), fg.nn.RNNBase)
        (True, True)
    """

    mode = ""
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        as_int(name, input_size, "input_size", minimum=1)
        as_int(name, hidden_size, "hidden_size", minimum=1)
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be a probability in [0, 1], got {dropout}")
        if num_layers < 1:
            raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        if not 0 <= proj_size < hidden_size:
            raise ValueError(f"{name}: proj_size must be at least 0 and smaller than hidden_size={hidden_size}, "
                             f"got {proj_size}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bool(bidirectional), int(proj_size)
        bound = 1 / math.sqrt(hidden_size)
        h_size, rows = self._h_size, self.gates * hidden_size
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else h_size * len(self._directions)
            for suffix in self._directions:
                shapes = [(f"weight_ih_l{layer}{suffix}", (rows, n_in)),
                          (f"weight_hh_l{layer}{suffix}", (rows, h_size))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (rows,)), (f"bias_hh_l{layer}{suffix}", (rows,))]  # type: ignore[list-item]
                if proj_size:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for pname, shape in shapes:
                    p = Parameter(ops.zeros(shape, dtype, device=device))
                    init.uniform_(p, -bound, bound)
                    setattr(self, pname, p)

    @property
    def _directions(self) -> tuple[str, ...]:
        """The parameter-name suffix of each direction of a layer."""
        return ("", "_reverse") if self.bidirectional else ("",)

    @property
    def _h_size(self) -> int:
        """The size of the hidden state ``h`` (and of each direction's output)."""
        return self.proj_size or self.hidden_size

    def forward(self, x: Any, hx: Any = None) -> tuple[Any, Any]:
        """``x`` is (L, N, input_size), (N, L, input_size) with ``batch_first``, or unbatched
        (L, input_size); ``hx`` the initial state, (D * num_layers, N, hidden_size) or
        (D * num_layers, hidden_size) unbatched (for an LSTM, the pair ``(h_0, c_0)``)."""
        kind = type(self).__name__
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            raise ShapeError(f"{kind}({self.input_size}, {self.hidden_size}): expected an input of shape (L, N, "
                             f"{self.input_size}) or (L, {self.input_size}), got {fmt_shape(tuple(x.shape))}")
        unbatched = x.ndim == 2
        x = ops.expand_dims(x, 1) if unbatched else (ops.swapaxes(x, 0, 1) if self.batch_first else x)
        states = self._initial_states(hx, x, unbatched)
        layer_input, finals = x, list[Any]()
        for layer in range(self.num_layers):
            directions = []
            for d, suffix in enumerate(self._directions):
                out, final = self._run(layer_input, states[len(finals)], f"l{layer}{suffix}", reverse=d == 1)
                directions.append(out)
                finals.append(final)
            layer_input = directions[0] if len(directions) == 1 else ops.concatenate(directions, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        out = ops.squeeze(layer_input, 1) if unbatched else (
            ops.swapaxes(layer_input, 0, 1) if self.batch_first else layer_input)
        return out, self._final_states(finals, unbatched)

    def _state_shapes(self) -> list[tuple[str, int]]:
        return [("h_0", self._h_size)]

    def _initial_states(self, hx: Any, x: Any, unbatched: bool) -> list[Any]:
        """Each layer-direction's initial state (a tuple ``(h, c)`` for an LSTM)."""
        n, b = self.num_layers * len(self._directions), x.shape[1]
        given = (hx if isinstance(hx, (tuple, list)) else (hx,)) if hx is not None else None
        parts = []
        for k, (name, size) in enumerate(self._state_shapes()):
            if given is None:
                parts.append(ops.zeros((n, b, size), x.dtype, device=x.device))
                continue
            state = given[k]
            expected = (n, size) if unbatched else (n, b, size)
            if tuple(state.shape) != expected:
                raise ShapeError(f"{type(self).__name__}: {name} must have shape {fmt_shape(expected)}, "
                                 f"got {fmt_shape(tuple(state.shape))}")
            parts.append(ops.expand_dims(state, 1) if unbatched else state)
        return [tuple(p[i] for p in parts) if len(parts) > 1 else parts[0][i] for i in range(n)]

    def _final_states(self, finals: list[Any], unbatched: bool) -> Any:
        if isinstance(finals[0], tuple):
            stacked = tuple(ops.stack([f[k] for f in finals]) for k in range(len(finals[0])))
            return tuple(s[:, 0] for s in stacked) if unbatched else stacked
        stacked = ops.stack(finals)
        return stacked[:, 0] if unbatched else stacked

    def _run(self, x: Any, state: Any, name: str, reverse: bool) -> tuple[Any, Any]:
        """One direction of one layer over (L, N, features): its outputs, in the input's step
        order, and its last state (the first step's, read backwards)."""
        w_ih, w_hh = getattr(self, f"weight_ih_{name}"), getattr(self, f"weight_hh_{name}")
        b_ih = getattr(self, f"bias_ih_{name}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_{name}") if self.bias else None
        pre = F.linear(x, w_ih, b_ih)  # input projections for all steps at once
        t = x.shape[0]
        outputs: list[Any] = [None] * t
        for step in (reversed(range(t)) if reverse else range(t)):
            state = self._step(pre[step], state, w_hh, b_hh, name)
            outputs[step] = state[0] if isinstance(state, tuple) else state
        return ops.stack(outputs), state

    def _step(self, pre: Any, state: Any, w_hh: Any, b_hh: Any, name: str) -> Any:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            value = getattr(self, name)
            if value != default:
                s += f", {name}={value}"
        return s


class LSTM(RNNBase):
    """Multi-layer LSTM; returns ``(output, (h_n, c_n))``. Gate order i, f, g, o (PyTorch's).

    ``bidirectional=True`` adds a second LSTM per layer that reads the sequence backwards
    (parameters ``*_reverse``, as PyTorch names them); the output concatenates both
    directions' hidden states per step, and ``h_n``/``c_n`` list the directions of each
    layer in turn. ``dropout`` applies to each layer's output but the last, in training.
    ``proj_size > 0`` projects each step's hidden state to ``proj_size`` features
    (parameters ``weight_hr_*``, PyTorch's LSTMP): the outputs and ``h`` have that size,
    the cell state keeps ``hidden_size``."""

    gates = 4

    def _state_shapes(self) -> list[tuple[str, int]]:
        return [("h_0", self._h_size), ("c_0", self.hidden_size)]

    def _step(self, pre: Any, state: Any, w_hh: Any, b_hh: Any, name: str) -> Any:
        h, c = _lstm_step(pre + F.linear(state[0], w_hh, b_hh), state)
        if self.proj_size:
            h = F.linear(h, getattr(self, f"weight_hr_{name}"))
        return h, c


class GRU(RNNBase):
    """Multi-layer GRU; returns ``(output, h_n)``. Gate order r, z, n (PyTorch's)."""

    gates = 3

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, dtype: Any = None,
                 device: Any = None) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0, dtype,
                         device)

    def _step(self, pre: Any, state: Any, w_hh: Any, b_hh: Any, name: str) -> Any:
        return _gru_step(pre, F.linear(state, w_hh, b_hh), state)


class RNN(RNNBase):
    """Multi-layer Elman RNN, ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu);
    returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype: Any = None, device: Any = None) -> None:
        act = _activation(nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0, dtype,
                         device)
        self.nonlinearity, self._act = nonlinearity, act

    def _step(self, pre: Any, state: Any, w_hh: Any, b_hh: Any, name: str) -> Any:
        return self._act(pre + F.linear(state, w_hh, b_hh))


class RNNCellBase(Module):
    """The cells' shared parameters (``torch.nn.RNNCellBase``): ``gates`` blocks of
    ``hidden_size`` rows in ``weight_ih``, ``weight_hh`` and the biases, drawn as PyTorch
    draws them. Construct a cell through ``RNNCell``, ``LSTMCell`` or ``GRUCell``.

    Example:
        >>> cell = fg.nn.GRUCell(4, 8)
        >>> isinstance(cell, fg.nn.RNNCellBase), cell.weight_ih.shape  # (three gates)
        (True, (24, 4))
    """

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        as_int(type(self).__name__, input_size, "input_size", minimum=1)
        as_int(type(self).__name__, hidden_size, "hidden_size", minimum=1)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        bound = 1 / math.sqrt(hidden_size)
        rows = self.gates * hidden_size
        shapes = [("weight_ih", (rows, input_size)), ("weight_hh", (rows, hidden_size))]
        if bias:
            shapes += [("bias_ih", (rows,)), ("bias_hh", (rows,))]  # type: ignore[list-item]
        for name, shape in shapes:
            p = Parameter(ops.zeros(shape, dtype, device=device))
            init.uniform_(p, -bound, bound)
            setattr(self, name, p)
        if not bias:
            self.bias_ih = self.bias_hh = None

    def _zeros(self, x: Any) -> Any:
        return ops.zeros((*x.shape[:-1], self.hidden_size), x.dtype, device=x.device)

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        act = _activation(nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity, self._act = nonlinearity, act

    def forward(self, x: Any, hx: Any = None) -> Any:
        """One step of an Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""
        h = self._zeros(x) if hx is None else hx
        return self._act(F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh))

    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else f"{s}, nonlinearity={self.nonlinearity}"


class LSTMCell(RNNCellBase):
    """One step of an LSTM: ``(h', c')`` from ``x`` and ``(h, c)``."""

    gates = 4

    def forward(self, x: Any, hx: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
        """One step of an LSTM: ``(h', c')`` from ``x`` and ``(h, c)``."""
        state = (self._zeros(x), self._zeros(x)) if hx is None else hx
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(state[0], self.weight_hh, self.bias_hh)
        return _lstm_step(gates, state)


class GRUCell(RNNCellBase):
    """One step of a GRU: ``h'`` from ``x`` and ``h``."""

    gates = 3

    def forward(self, x: Any, hx: Any = None) -> Any:
        """One step of a GRU: ``h'`` from ``x`` and ``h``."""
        h = self._zeros(x) if hx is None else hx
        return _gru_step(F.linear(x, self.weight_ih, self.bias_ih), F.linear(h, self.weight_hh, self.bias_hh), h)
