"""Learning-rate schedulers (PyTorch's closed forms; ``step()`` once per epoch)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .optimizer import Optimizer as _Optimizer

__all__ = ["LRScheduler", "StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR"]


class LRScheduler:
    """The base of the schedulers: ``step()`` sets each group's ``lr`` from ``get_lr()``;
    ``state_dict``/``load_state_dict``."""

    def __init__(self, optimizer: _Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        raise NotImplementedError

    def step(self) -> None:
        self.last_epoch += 1
        for i, (g, base) in enumerate(zip(self.optimizer.param_groups, self.base_lrs)):
            g["lr"] = self.lr_at(base, self.last_epoch, i)
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambda")}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """The learning rate times ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: _Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class ExponentialLR(LRScheduler):
    """The learning rate times ``gamma`` every epoch."""

    def __init__(self, optimizer: _Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """The learning rate down a half cosine from the initial value to ``eta_min`` over ``T_max`` epochs."""

    def __init__(self, optimizer: _Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class LambdaLR(LRScheduler):
    """The initial learning rate times ``lr_lambda(epoch)``."""

    def __init__(self, optimizer: _Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        return base_lr * self.lr_lambdas[group_index](epoch)

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
