"""Adam, AdamW and Adadelta as one native loop per parameter (PyTorch's ``fused=True``).

The rules (``rules.ADAM``, ``rules.ADAMW``, ``rules.ADADELTA``) take a dozen array
operations or more a parameter: a pass over memory and a dispatch each, 10 ms of a nanoGPT
step here where PyTorch's loop takes 6.5, and 11 ms of the MNIST CNN's. The same arithmetic
in C, operation by operation in the rule's order (its
Python scalars rounded to the parameter's dtype as NumPy rounds them, no fused
multiply-adds), reads the parameter, its gradient and moments once and gives the rule's
bits: the tests compare the two over hyperparameters, dtypes and steps.

``step`` is used where it can be: float32 or float64 CPU parameters with gradients and
moments of their shape and dtype, under the C backend, with a compiler. Elsewhere the
rule runs, or, when ``fused=True`` was asked for, a ``FuncgradError`` says why not.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..array import Array, wrap_kernel_output
from ..backends import cc
from ..errors import ArgumentValueError

__all__ = ["adam_step", "adadelta_step"]

# One element: the rule's operations in its order. ``k`` holds the scalars, each rounded
# to the dtype: 1 - lr wd, wd, b1, 1 - b1, b2, 1 - b2, sqrt(1 - b2^step), eps, -lr / (1 - b1^step).
_ADAM_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict param = (const {t} *)p[0];
    const {t} *restrict grad = (const {t} *)p[1];
    const {t} *restrict k = (const {t} *)p[2];
    {reads}
    {t} *restrict param_out = ({t} *)p[{out}];
    {t} *restrict m_out = ({t} *)p[{out} + 1];
    {t} *restrict v_out = ({t} *)p[{out} + 2];
    {vmax_out}
    #pragma omp simd
    for (int64_t i = lo; i < hi; i++) {{
        {t} w = param[i], g = grad[i];
        {body}
        {t} s = sqrt(vv) / k[6];
        {t} denom = s + k[7];
        {t} direction = m / denom;
        param_out[i] = w + direction * k[8];
    }}
}}
"""


def _body(first: bool, decoupled: bool, decay: bool, maximize: bool, amsgrad: bool, running: bool, t: str) -> str:
    lines = ["g = -g;"] if maximize else []
    if decay:
        lines.append("w = w * k[0];" if decoupled else "g = g + k[1] * w;")
    lines.append(f"{t} m = k[3] * g;" if first else f"{t} m = k[2] * m_in[i] + k[3] * g;")
    lines.append(f"{t} v = k[5] * (g * g);" if first else f"{t} v = k[4] * v_in[i] + k[5] * (g * g);")
    lines.append("m_out[i] = m; v_out[i] = v;")
    if amsgrad:  # (the running maximum, NaN propagating as np.maximum; from this v where there is none yet)
        lines.append(f"{t} vv = (vmax_in[i] > v || vmax_in[i] != vmax_in[i]) ? vmax_in[i] : v; vmax_out[i] = vv;"
                     if running else f"{t} vv = v; vmax_out[i] = vv;")
    else:
        lines.append(f"{t} vv = v;")
    return "\n        ".join(lines)


@functools.cache  # (a step asks for it once a parameter: formatting the C each time costs)
def _kernel(dtype: np.dtype, first: bool, decoupled: bool, decay: bool, maximize: bool, amsgrad: bool,
            running: bool) -> int:
    t = cc.C_TYPE_OF[dtype]
    reads = [] if first else [f"const {t} *restrict m_in = (const {t} *)p[3];",
                              f"const {t} *restrict v_in = (const {t} *)p[4];"]
    if running:
        reads.append(f"const {t} *restrict vmax_in = (const {t} *)p[{3 + len(reads)}];")
    out = 3 + len(reads)
    return cc.loop_kernel(_ADAM_C.format(
        t=t, reads="\n    ".join(reads), out=out,
        body=_body(first, decoupled, decay, maximize, amsgrad, running, t),
        vmax_out=f"{t} *restrict vmax_out = ({t} *)p[{out} + 3];" if amsgrad else ""))


def _unfusable(p: Any, g: Any, state: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """Why the native loop cannot take this parameter, whose state holds arrays ``keys``
    (all of them, or none yet; None: it can)."""
    if not cc.eager_native(np):
        return "the C backend is off (fg.config.compile_backend)"
    arrays = [p, g] + [state[key] for key in keys if state.get(key) is not None]
    if not all(a.__class__ is Array and a._device.kind == "cpu" and a._dtype is p._dtype and a._data.shape ==
               p._data.shape for a in arrays):
        return "the parameter, its gradient and its moments are not CPU arrays of one shape and dtype"
    if p._data.dtype not in (np.float32, np.float64):
        return f"it takes float32 and float64 parameters, not {p._dtype}"
    if len({state.get(key) is None for key in keys}) > 1 or not isinstance(state.get("step", 0), int):
        return "the parameter's state is not the one its optimizer keeps"
    return None


def _launch(address: int, p: Any, g: Any, k: np.ndarray, running: list[Any], outputs: int) -> list[Any]:
    """One optimizer loop over a parameter: its value, gradient, scalars ``k`` and running
    arrays in, ``outputs`` new arrays of its shape out (the parameter's new value first)."""
    inputs = [np.ascontiguousarray(a._data) for a in (p, g)] + [k] + [np.ascontiguousarray(a._data) for a in running]
    results = [np.empty_like(inputs[0]) for _ in range(outputs)]
    cc.run(address, inputs, results, [inputs[0].size], per_element=16)
    return [wrap_kernel_output(r, p._device) for r in results]


def adam_step(name: str, p: Any, g: Any, state: dict[str, Any], h: dict[str, Any], decoupled: bool) -> Any:
    """The parameter's new value after one Adam (AdamW with ``decoupled``) step, its state
    updated as the rule updates it; None where the native loop cannot run and ``h["fused"]``
    is not True (then the rule runs)."""
    amsgrad = bool(h["amsgrad"])
    first, running = state.get("exp_avg") is None, amsgrad and state.get("max_exp_avg_sq") is not None
    why = _unfusable(p, g, state, ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if running else ()))
    if why is None:
        try:
            address = _kernel(p._data.dtype, first, decoupled, bool(h["weight_decay"]), bool(h["maximize"]), amsgrad,
                              running)
        except cc.NativeBuildError as exc:
            why = str(exc).splitlines()[0]
    if why is not None:
        if h.get("fused"):
            raise ArgumentValueError(f"{name}(fused=True): {why}")
        return None
    lr, (b1, b2), eps, wd = h["lr"], h["betas"], h["eps"], h["weight_decay"]
    step = state.get("step", 0) + 1
    bias1, bias2 = 1 - b1 ** step, 1 - b2 ** step
    dtype = p._data.dtype
    k = np.array([1 - lr * wd, wd, b1, 1 - b1, b2, 1 - b2, bias2 ** 0.5, eps, -lr / bias1], np.float64).astype(dtype)
    reads = ([] if first else ["exp_avg", "exp_avg_sq"]) + (["max_exp_avg_sq"] if running else [])
    new_p, m, v, *vmax = _launch(address, p, g, k, [state[key] for key in reads], 4 if amsgrad else 3)
    state.update(step=step, exp_avg=m, exp_avg_sq=v)
    if amsgrad:
        state["max_exp_avg_sq"] = vmax[0]
    return new_p


# One element of Adadelta, the rule's operations in its order. ``k``: the weight decay, rho,
# 1 - rho, eps, -lr, each rounded to the dtype. A first step's running sums are zeros.
_ADADELTA_C = """void fg_kernel(int64_t lo, int64_t hi, const int64_t *n, char **p) {{
    const {t} *restrict param = (const {t} *)p[0];
    const {t} *restrict grad = (const {t} *)p[1];
    const {t} *restrict k = (const {t} *)p[2];
    {reads}
    {t} *restrict param_out = ({t} *)p[{out}];
    {t} *restrict square_avg_out = ({t} *)p[{out} + 1];
    {t} *restrict acc_delta_out = ({t} *)p[{out} + 2];
    #pragma omp simd
    for (int64_t i = lo; i < hi; i++) {{
        const {t} w = param[i];
        {t} g = grad[i];
        {decay}
        const {t} square_avg = {square_avg};
        const {t} delta = ({t})sqrt({acc_plus_eps}) / ({t})sqrt(square_avg + k[3]) * g;
        const {t} acc_delta = {acc_delta};
        square_avg_out[i] = square_avg;
        acc_delta_out[i] = acc_delta;
        param_out[i] = w + delta * k[4];
    }}
}}
"""


@functools.cache
def _adadelta_kernel(dtype: np.dtype, first: bool, maximize: bool, decay: bool) -> int:
    t = cc.C_TYPE_OF[dtype]
    lines = ["g = -g;"] if maximize else []
    if decay:
        lines.append("g = g + k[0] * w;")
    return cc.loop_kernel(_ADADELTA_C.format(
        t=t, out=3 if first else 5, decay=" ".join(lines),
        reads="" if first else (f"const {t} *restrict square_avg_in = (const {t} *)p[3];\n    "
                                f"const {t} *restrict acc_delta_in = (const {t} *)p[4];"),
        square_avg="k[2] * (g * g)" if first else "k[1] * square_avg_in[i] + k[2] * (g * g)",
        acc_plus_eps="k[3]" if first else "acc_delta_in[i] + k[3]",
        acc_delta="k[2] * (delta * delta)" if first else "k[1] * acc_delta_in[i] + k[2] * (delta * delta)"))


def adadelta_step(p: Any, g: Any, state: dict[str, Any], h: dict[str, Any]) -> Any:
    """The parameter's new value after one Adadelta step, its state updated as the rule
    updates it; None where the native loop cannot run (then the rule runs)."""
    first = state.get("square_avg") is None
    if _unfusable(p, g, state, ("square_avg", "acc_delta")) is not None:
        return None
    dtype = p._data.dtype
    try:
        address = _adadelta_kernel(dtype, first, bool(h["maximize"]), bool(h["weight_decay"]))
    except cc.NativeBuildError:
        return None
    rho = h["rho"]
    k = np.array([h["weight_decay"], rho, 1 - rho, h["eps"], -h["lr"]], np.float64).astype(dtype)
    running = [] if first else [state["square_avg"], state["acc_delta"]]
    new_p, square_avg, acc_delta = _launch(address, p, g, k, running, 3)
    state.update(step=state.get("step", 0) + 1, square_avg=square_avg, acc_delta=acc_delta)
    return new_p
