"""``LBFGS``: limited-memory BFGS over all parameters as one flat vector, PyTorch's
algorithm (fixed steps or a strong-Wolfe line search), driven by a closure.

Unlike the other optimizers it is not one rule per parameter: a step evaluates the
closure several times, builds the search direction from the last ``history_size``
steps and gradient changes (the two-loop recursion), and moves every parameter along
it together. Scalars (step sizes, dot products) are Python floats."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import ops
from ..transforms.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer
from .rules import at_least_zero, check

__all__ = ["LBFGS"]


def _dot(a: Any, b: Any) -> float:
    return float(ops.vecdot(a, b))


def _cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                   bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through two points with their values and slopes, clamped
    to ``bounds`` (default: between the points); their midpoint when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


def _strong_wolfe(evaluate: Callable[[float], tuple[float, Any]], t: float, d: Any, f: float, g: Any, gtd: float,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, Any, float, int]:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions (sufficient decrease,
    and a slope at most ``c2`` of the first in size): bracket an interval that holds one,
    then zoom into it by cubic interpolation (Nocedal & Wright, algorithms 3.5 and 3.6).
    Returns the loss, gradient and step found, and how many evaluations it took."""
    d_norm = float(ops.max(ops.abs(d)))
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        too_far = f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev)
        if not too_far and abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, bracket_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if too_far or gtd_new >= 0:  # a minimum lies between the last two steps
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # extrapolate: the cubic's minimum, at least 1% past t and at most 10 t
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                      bounds=(t + 0.01 * (t - t_prev), t * 10))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g, bracket_gtd = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]

    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # a step too close to the interval's ends makes little progress: move it inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS (PyTorch's): quasi-Newton steps from the last ``history_size`` updates;
    ``step(closure)`` re-evaluates the loss (the closure clears the gradients, computes the
    loss, calls ``backward`` and returns it) up to ``max_eval`` times.

    Example:
        >>> w = fg.nn.Parameter(fg.asarray([3.0, -2.0]))
        >>> opt = fg.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 1.0) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> w.tolist()  # (torch.optim.LBFGS: the same)
        [1.0000004768371582, 1.0000003576278687]
    """

    def __init__(self, params: Any, lr: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check("LBFGS", lr=(lr, at_least_zero), max_iter=(max_iter, lambda n: n >= 1),
               line_search_fn=(line_search_fn, lambda fn: fn in (None, "strong_wolfe")))
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: one parameter group only (it moves all parameters along one direction)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self) -> Any:
        return ops.concat([ops.reshape(p.grad, (-1,)) if p.grad is not None else ops.zeros(p.size, p.dtype,
                                                                                            device=p.device)
                           for p in self._params])

    def _move(self, t: float, d: Any) -> None:
        """Every parameter moved by ``t`` times its slice of ``d``."""
        start = 0
        for p in self._params:
            p._assign(p.detach() + t * ops.reshape(d[start:start + p.size], tuple(p.shape)))
            start += p.size

    def _evaluate(self, closure: Callable[[], Any]) -> float:
        with enable_grad():
            return float(closure())

    def _evaluate_at(self, closure: Callable[[], Any], start: list[Any], d: Any, step: float) -> tuple[float, Any]:
        """The loss and flat gradient at ``start + step * d``; the parameters are then put back."""
        self._move(step, d)
        value = self._evaluate(closure)
        grad = self._flat_grad()
        for p, x in zip(self._params, start):
            p._assign(x)
        return value, grad

    def step(self, grads: Any = None, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """Up to ``max_iter`` L-BFGS iterations; returns the closure's first loss."""
        if closure is None and callable(grads):
            closure, grads = grads, None
        if closure is None or grads is not None:
            raise TypeError("LBFGS.step(closure): needs a closure that clears the gradients, computes the loss, calls "
                            "backward() and returns the loss (it evaluates it several times per step)")
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search = group["history_size"], group["line_search_fn"]
        state = self.state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})

        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(ops.max(ops.abs(flat_grad))) <= tolerance_grad:
            return first_loss

        d: Any = state.get("d")
        t: Any = state.get("t")
        old_dirs: Any = state.get("old_dirs")
        old_steps: Any = state.get("old_stps")
        ro: Any = state.get("ro")
        h_diag: Any = state.get("H_diag")
        prev_flat_grad: Any = state.get("prev_flat_grad")
        prev_loss: Any = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_steps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                # the new curvature pair (kept only when it is positive: the update stays positive definite)
                y, s = flat_grad - prev_flat_grad, d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0), old_steps.pop(0), ro.pop(0)
                    old_dirs.append(y), old_steps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                # the two-loop recursion: d = -H g
                alphas = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    alphas[i] = _dot(old_steps[i], q) * ro[i]
                    q = q - alphas[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    beta = _dot(old_dirs[i], d) * ro[i]
                    d = d + (alphas[i] - beta) * old_steps[i]
            prev_flat_grad, prev_loss = flat_grad, loss
            t = min(1.0, 1.0 / float(ops.sum(ops.abs(flat_grad)))) * lr if state["n_iter"] == 1 else lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            if line_search == "strong_wolfe":
                evaluate = functools.partial(self._evaluate_at, closure, [p.detach() for p in self._params], d)
                loss, flat_grad, t, ls_evals = _strong_wolfe(evaluate, t, d, loss, flat_grad, gtd,
                                                             tolerance_change=tolerance_change)
                self._move(t, d)
                small_grad = float(ops.max(ops.abs(flat_grad))) <= tolerance_grad
            else:
                self._move(t, d)
                ls_evals, small_grad = 0, False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    small_grad = float(ops.max(ops.abs(flat_grad))) <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if (n_iter == max_iter or evals >= max_eval or small_grad
                    or float(ops.max(ops.abs(d * t))) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_steps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return first_loss
