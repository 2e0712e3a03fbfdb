"""Every learning-rate scheduler against PyTorch's over 30 steps: the learning rates, and
the momentum (or Adam's first beta) the cyclic ones move."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg

torch = pytest.importorskip("torch")
T, F = torch.optim.lr_scheduler, fg.optim.lr_scheduler

CASES = {
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, [3, 7], 0.5),
    "ConstantLR": lambda S, o: S.ConstantLR(o, 0.5, 4),
    "LinearLR": lambda S, o: S.LinearLR(o, 0.2, 1.0, 6),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, 8, 2.0),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, 4, 2, 0.01),
    "CosineAnnealingWarmRestarts T_mult=1": lambda S, o: S.CosineAnnealingWarmRestarts(o, 5),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, 1.0, total_steps=30),
    "OneCycleLR three-phase linear": lambda S, o: S.OneCycleLR(o, 1.0, total_steps=30, three_phase=True,
                                                               anneal_strategy="linear"),
    "CyclicLR": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "CyclicLR triangular2": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                    mode="triangular2"),
    "CyclicLR exp_range": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9),
    "SequentialLR": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.1, 1.0, 3), S.ExponentialLR(o, 0.9)], [3]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 4), S.ExponentialLR(o, 0.9)]),
}
PLATEAU = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] * 3


def _trajectory(lib, scheduler, optimizer: str, metrics=None):
    p = (torch.nn.Parameter(torch.zeros(2)) if lib is torch else fg.nn.Parameter(fg.zeros(2)))
    opt = (lib.optim.SGD([p], lr=0.1, momentum=0.9) if optimizer == "SGD" else lib.optim.Adam([p], lr=0.1))
    sched = scheduler(opt)
    key = "momentum" if optimizer == "SGD" else "betas"
    lrs, momenta = [], []
    for i in range(30):
        lrs.append(opt.param_groups[0]["lr"])
        m = opt.param_groups[0][key]
        momenta.append(m if optimizer == "SGD" else m[0])
        sched.step(metrics[i]) if metrics is not None else sched.step()
    return np.array(lrs), np.array(momenta), sched


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_schedulers_match_pytorch(name: str, optimizer: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_lr, want_m, tsched = _trajectory(torch, lambda o: CASES[name](T, o), optimizer)
    got_lr, got_m, fsched = _trajectory(fg, lambda o: CASES[name](F, o), optimizer)
    np.testing.assert_allclose(got_lr, want_lr, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(got_m, want_m, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(fsched.get_last_lr(), tsched.get_last_lr(), rtol=1e-10)


def test_reduce_on_plateau_matches_pytorch() -> None:
    make = lambda S: lambda o: S.ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5)  # noqa: E731
    want, _, _ = _trajectory(torch, make(T), "SGD", PLATEAU)
    got, _, sched = _trajectory(fg, make(F), "SGD", PLATEAU)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert sched.state_dict()["num_bad_epochs"] >= 0

