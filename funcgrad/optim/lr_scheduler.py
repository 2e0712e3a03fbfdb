"""Learning-rate schedulers (PyTorch's closed forms; ``step()`` once per epoch)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any

from ..errors import ArgumentTypeError, ArgumentValueError
from ..primitives.checks import as_int
from .optimizer import Optimizer as _Optimizer

__all__ = ["LRScheduler", "StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "PolynomialLR", "MultiplicativeLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR",
           "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"]


def _require_optimizer(name: str, optimizer: Any) -> None:
    if not isinstance(optimizer, _Optimizer):
        raise ArgumentTypeError(f"{name}: the first argument must be an fg.optim optimizer, got "
                                f"{type(optimizer).__name__} {optimizer!r}")


def _factor(name: str, value: Any) -> float:
    """A multiplicative factor (``gamma``) as a float: its powers then overflow to an error
    at once, where an int's would be computed digit by digit."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{name}: gamma must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def _lambdas(name: str, lr_lambda: Any, n: int) -> list[Callable[[int], float]]:
    """One function per parameter group (one given for all, or a list of ``n``)."""
    fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
    if len(fns) != n or not all(callable(f) for f in fns):
        raise ArgumentTypeError(f"{name}: lr_lambda must be a function or a list of {n} functions (one per "
                                f"parameter group), got {lr_lambda!r}")
    return fns


class LRScheduler:
    """The base of the schedulers: ``step()`` sets each group's ``lr`` from ``get_lr()``;
    ``state_dict``/``load_state_dict``.

    Example:
        >>> w = fg.nn.Parameter(fg.ones(1))
        >>> opt = fg.optim.SGD([w], lr=1.0)
        >>> scheduler = fg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        >>> opt.step()
        >>> scheduler.step()
        >>> isinstance(scheduler, fg.optim.lr_scheduler.LRScheduler), scheduler.get_last_lr()
        (True, [0.5])
    """

    def __init__(self, optimizer: _Optimizer, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = as_int(type(self).__name__, last_epoch, "last_epoch", minimum=-1)
        if self.last_epoch >= 1 << 31:
            raise ArgumentValueError(f"{type(self).__name__}: last_epoch must be below 2**31, got {last_epoch}")
        self.step()

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance one step."""
        self.last_epoch += 1
        for i, (g, base) in enumerate(zip(self.optimizer.param_groups, self.base_lrs)):
            try:
                g["lr"] = self.lr_at(base, self.last_epoch, i)
            except OverflowError:
                raise ArgumentValueError(f"{type(self).__name__}: the learning rate overflows at epoch "
                                         f"{self.last_epoch}") from None
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The state as a dict of plain values (what load_state_dict takes back)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambda")}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state from state_dict()'s dict."""
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """The learning rate times ``gamma`` every ``step_size`` epochs, as PyTorch's.

    Args:
        optimizer: the optimizer whose groups' ``lr`` it sets.
        step_size: epochs between decays.
        gamma: the factor.
        last_epoch: the epoch to resume after (-1: start).

    Example:
        >>> w = fg.nn.Parameter(fg.zeros(1))
        >>> opt = fg.optim.SGD([w], lr=1.0)
        >>> schedule = fg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
        >>> rates = []
        >>> for _ in range(5):
        ...     rates.append(round(opt.param_groups[0]["lr"], 6)); opt.step(); schedule.step()
        >>> rates
        [1.0, 1.0, 0.1, 0.1, 0.01]
    """

    def __init__(self, optimizer: _Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.step_size, self.gamma = as_int("StepLR", step_size, "step_size", minimum=1), _factor("StepLR", gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * self.gamma ** (epoch // self.step_size)


class ExponentialLR(LRScheduler):
    """The learning rate times ``gamma`` every epoch."""

    def __init__(self, optimizer: _Optimizer, gamma: float, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.gamma = _factor("ExponentialLR", gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """The learning rate down a half cosine from the initial value to ``eta_min`` over ``T_max`` epochs."""

    def __init__(self, optimizer: _Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.T_max, self.eta_min = as_int("CosineAnnealingLR", T_max, "T_max", minimum=1), eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class _LambdaScheduler(LRScheduler):
    """A schedule given by functions of the epoch, one per parameter group (or one for all);
    functions are not state, so ``state_dict`` leaves them out, as PyTorch's does."""

    def __init__(self, optimizer: _Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        n = len(optimizer.param_groups)
        self.lr_lambdas = _lambdas(type(self).__name__, lr_lambda, n)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The state as a dict of plain values (what load_state_dict takes back)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class LambdaLR(_LambdaScheduler):
    """The initial learning rate times ``lr_lambda(epoch)``."""

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * self.lr_lambdas[group_index](epoch)


class MultiStepLR(LRScheduler):
    """The learning rate times ``gamma`` at each milestone epoch."""

    def __init__(self, optimizer: _Optimizer, milestones: list[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.milestones, self.gamma = sorted(milestones), _factor("MultiStepLR", gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ConstantLR(LRScheduler):
    """The learning rate times ``factor`` for the first ``total_iters`` epochs."""

    def __init__(self, optimizer: _Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.factor, self.total_iters = factor, as_int("ConstantLR", total_iters, "total_iters")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class LinearLR(LRScheduler):
    """The learning rate's factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs."""

    def __init__(self, optimizer: _Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = as_int("LinearLR", total_iters, "total_iters", minimum=1)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        done = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class PolynomialLR(LRScheduler):
    """The learning rate times ``(1 - epoch / total_iters) ** power``, then 0."""

    def __init__(self, optimizer: _Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        if isinstance(power, bool) or not isinstance(power, (int, float)):
            raise ArgumentTypeError(f"PolynomialLR: power must be a number, got {type(power).__name__} {power!r}")
        if not 0 <= power < math.inf:  # (a negative power divides by zero once total_iters is reached)
            raise ArgumentValueError(f"PolynomialLR: power must be finite and at least 0, got {power!r}")
        self.total_iters, self.power = as_int("PolynomialLR", total_iters, "total_iters", minimum=1), float(power)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        return base_lr * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power


class MultiplicativeLR(_LambdaScheduler):
    """The learning rate times ``lr_lambda(epoch)`` at every epoch after the first."""

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        lr = base_lr if epoch == 0 else self.optimizer.param_groups[group_index]["lr"]
        return lr * self.lr_lambdas[group_index](epoch) if epoch > 0 else lr


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing to ``eta_min`` over ``T_0`` epochs, restarting with periods growing by ``T_mult``."""

    def __init__(self, optimizer: _Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        self.T_0 = as_int("CosineAnnealingWarmRestarts", T_0, "T_0", minimum=1)
        self.T_mult = as_int("CosineAnnealingWarmRestarts", T_mult, "T_mult", minimum=1)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        if self.T_mult == 1:
            t_cur, t_i = epoch % self.T_0, self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            t_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            t_i = self.T_0 * self.T_mult ** n
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2


def _momentum_key(optimizer: _Optimizer) -> str | None:
    group = optimizer.param_groups[0]
    return "betas" if "betas" in group else ("momentum" if "momentum" in group else None)


def _set_momentum(optimizer: _Optimizer, key: str | None, values: list[float]) -> None:
    for g, m in zip(optimizer.param_groups, values):
        if key == "betas":
            g["betas"] = (m, *g["betas"][1:])
        elif key == "momentum":
            g["momentum"] = m


class OneCycleLR(LRScheduler):
    """The 1cycle policy, per batch: up from ``max_lr / div_factor`` to ``max_lr`` over
    ``pct_start`` of the steps, then down to ``initial / final_div_factor``; the momentum
    (or Adam's first beta) cycles the other way."""

    def __init__(self, optimizer: _Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        n = len(optimizer.param_groups)
        if total_steps is None and (epochs is None or steps_per_epoch is None):
            raise ArgumentValueError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")
        self.total_steps = as_int("OneCycleLR", total_steps if total_steps is not None else
                                  epochs * steps_per_epoch, "total_steps", minimum=1)  # type: ignore[operator]
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * n
        if len(max_lrs) != n:
            raise ArgumentValueError(f"OneCycleLR: expected {n} values for max_lr (one per parameter group), got "
                                     f"{len(max_lrs)}")
        for g, top in zip(optimizer.param_groups, max_lrs):
            g["initial_lr"], g["max_lr"] = top / div_factor, top
            g["min_lr"] = g["initial_lr"] / final_div_factor
        last = self.total_steps - 1
        up = float(pct_start * self.total_steps) - 1
        self.phases = ([(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                        (2 * up, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                        (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")] if three_phase else
                       [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                        (last, "max_lr", "min_lr", "base_momentum", "max_momentum")])
        self.anneal = self._cos if anneal_strategy == "cos" else self._linear
        self.momentum_key = _momentum_key(optimizer) if cycle_momentum else None
        self.momenta = {"base_momentum": base_momentum, "max_momentum": max_momentum}
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _cos(start: float, end: float, pct: float) -> float:
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start: float, end: float, pct: float) -> float:
        return (end - start) * pct + start

    def _phase(self, step: int) -> tuple[Any, float]:
        start = 0.0
        for i, phase in enumerate(self.phases):
            if step <= phase[0] or i == len(self.phases) - 1:
                return phase, (step - start) / (phase[0] - start)
            start = phase[0]
        raise AssertionError

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        if epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {epoch} times, more than total_steps={self.total_steps}")
        (_, lr_from, lr_to, m_from, m_to), pct = self._phase(epoch)
        g = self.optimizer.param_groups[group_index]
        if self.momentum_key is not None:
            momentum = self.anneal(self.momenta[m_from], self.momenta[m_to], pct)
            _set_momentum(self.optimizer, self.momentum_key, [momentum] * len(self.optimizer.param_groups))
        return self.anneal(g[lr_from], g[lr_to], pct)


class CyclicLR(LRScheduler):
    """The learning rate cycling between ``base_lr`` and ``max_lr`` per batch (``mode``:
    ``triangular``, ``triangular2``, ``exp_range``); the momentum cycles the other way."""

    def __init__(self, optimizer: _Optimizer, base_lr: float, max_lr: float, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        for g in optimizer.param_groups:
            g["initial_lr"] = g["lr"] = base_lr
        self.base_lr_value, self.max_lr = base_lr, max_lr
        step_size_up = as_int("CyclicLR", step_size_up, "step_size_up", minimum=1)
        down = as_int("CyclicLR", step_size_down, "step_size_down", minimum=1) if step_size_down is not None \
            else step_size_up
        self.total_size, self.step_ratio = float(step_size_up + down), step_size_up / float(step_size_up + down)
        self.mode, self.gamma = mode, gamma
        if scale_fn is None:
            fns = {"triangular": lambda x: 1.0, "triangular2": lambda x: 1 / 2.0 ** (x - 1),
                   "exp_range": lambda x: gamma ** x}
            self.scale_fn, self.scale_mode = fns[mode], "iterations" if mode == "exp_range" else "cycle"
        else:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        self.momentum_key = _momentum_key(optimizer) if cycle_momentum else None
        self.base_momentum, self.max_momentum = base_momentum, max_momentum
        if self.momentum_key is not None:
            _set_momentum(optimizer, self.momentum_key, [max_momentum] * len(optimizer.param_groups))
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        """The learning rate of a group with base rate ``base_lr`` at ``epoch``."""
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        factor = self.scale_fn(cycle if self.scale_mode == "cycle" else epoch)
        if self.momentum_key is not None and group_index == 0:
            m = self.max_momentum - (self.max_momentum - self.base_momentum) * scale * factor
            _set_momentum(self.optimizer, self.momentum_key, [m] * len(self.optimizer.param_groups))
        return self.base_lr_value + (self.max_lr - self.base_lr_value) * scale * factor

    def state_dict(self) -> dict[str, Any]:
        """The state as a dict of plain values (what load_state_dict takes back)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "scale_fn")}


class ReduceLROnPlateau:
    """The learning rate times ``factor`` once the metric passed to ``step(metric)`` has not
    improved for ``patience`` epochs (then ``cooldown`` epochs of rest)."""

    def __init__(self, optimizer: _Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0.0, eps: float = 1e-8) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor must be below 1")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = threshold, threshold_mode, cooldown, eps
        n = len(optimizer.param_groups)
        self.min_lrs = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * n
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _better(self, value: float) -> bool:
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return value > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metrics: Any) -> None:
        """Advance one step."""
        value = float(metrics)
        self.last_epoch += 1
        if self._better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, low in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(g["lr"] * self.factor, low)
                if g["lr"] - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The state as a dict of plain values (what load_state_dict takes back)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state from state_dict()'s dict."""
        self.__dict__.update(state)


class SequentialLR:
    """One scheduler after another, switching at each milestone epoch (the next one starts
    from epoch 0).

    Example:
        >>> S = fg.optim.lr_scheduler
        >>> opt = fg.optim.SGD([fg.nn.Parameter(fg.ones(1))], lr=1.0)
        >>> s = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.9)],
        ...                    milestones=[2])
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(opt.param_groups[0]["lr"], 4))
        ...     opt.step()
        ...     s.step()
        >>> lrs  # (PyTorch's, for the same schedulers)
        [0.5, 0.5, 1.0, 0.9, 0.81]
    """

    def __init__(self, optimizer: _Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        _require_optimizer(type(self).__name__, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones")
        self.optimizer, self._schedulers, self._milestones = optimizer, list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        for g, base in zip(optimizer.param_groups, schedulers[0].base_lrs):
            g["lr"] = base
        for s in self._schedulers[1:]:  # undo what their constructors did: the first one runs first
            s.last_epoch -= 1
        self._schedulers[0].last_epoch -= 1
        self._schedulers[0].step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self) -> None:
        """Advance one step."""
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler.last_epoch = -1
        scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set, one per parameter group."""
        return list(self._last_lr)


class ChainedScheduler:
    """Several schedulers stepped together, their factors multiplied: each scales the
    learning rate the others set, as PyTorch's chained (recursive) schedulers do.

    Example:
        >>> S = fg.optim.lr_scheduler
        >>> opt = fg.optim.SGD([fg.nn.Parameter(fg.ones(1))], lr=1.0)
        >>> s = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.9)])
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(opt.param_groups[0]["lr"], 4))
        ...     opt.step()
        ...     s.step()
        >>> lrs
        [0.5, 0.45, 0.81, 0.729]
    """

    def __init__(self, schedulers: list[LRScheduler], optimizer: _Optimizer | None = None) -> None:
        self._schedulers = list(schedulers)
        self.optimizer = optimizer if optimizer is not None else self._schedulers[0].optimizer
        self._apply()

    def _apply(self) -> None:
        for i, g in enumerate(self.optimizer.param_groups):
            base = g["initial_lr"]
            lr = base
            for s in self._schedulers:
                lr *= s.lr_at(base, s.last_epoch, i) / base if base else 1.0
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def step(self) -> None:
        """Advance one step."""
        for s in self._schedulers:
            s.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set, one per parameter group."""
        return list(self._last_lr)
