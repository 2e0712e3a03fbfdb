"""The API reference's sections for the optimizers whose docstrings carry a summary alone:
their parameters and an example of one step, PyTorch's (``torch.optim``'s step from the
same weights and gradient gives the same numbers; checked when written).
``tests/test_docstrings.py`` runs the examples."""

from __future__ import annotations

import inspect
from typing import Any

from ..ops.reference_docs import sections

__all__ = ["OPTIMIZERS", "RULES", "SCHEDULERS", "optimizer_doc", "rule_doc", "scheduler_doc"]

# Each optimizer's options in the example, and the weights after its first step from
# ``[1, -2]`` with the gradient of ``(w * w).sum()``.
OPTIMIZERS: dict[str, tuple[str, list[float]]] = {
    'AdamW': ('lr=0.1, weight_decay=0.1', [0.89, -1.88]),
    'RMSprop': ('lr=0.1', [0.0, -1.0]),
    'Adagrad': ('lr=0.1', [0.9, -1.9]),
    'Adadelta': ('lr=1.0', [0.9968, -1.9968]),
    'Adamax': ('lr=0.1', [0.9, -1.9]),
    'NAdam': ('lr=0.1', [0.8944, -1.8944]),
    'RAdam': ('lr=0.1', [0.8, -1.6]),
    'Rprop': ('lr=0.1', [0.9, -1.9]),
}

# The pure rules (``fg.optim.adam``...) and their classes: each example's update is the
# class's first step above (SGD's and Adam's, which document themselves, given here).
RULES: dict[str, tuple[str, tuple[str, list[float]]]] = {
    'sgd': ('SGD', ('lr=0.1', [0.8, -1.6])), 'adam': ('Adam', ('lr=0.1', [0.9, -1.9])),
    **{cls.lower(): (cls, step) for cls, step in OPTIMIZERS.items()},
}

# What the optimizers' parameters mean.
PARAMETERS = {
    'params': (
        'the parameters (arrays that require grad), or a list of groups (dicts with '
        '``params`` and any of the options below).'
    ),
    'lr': 'the learning rate.',
    'betas': 'the decay rates of the running means of the gradient and its square.',
    'eps': 'added to the denominator.',
    'weight_decay': 'L2 weight decay, added to the gradient.',
    'amsgrad': 'keep the largest running mean of the squared gradient.',
    'maximize': 'ascend instead of descending.',
    'fused': (
        "PyTorch's switch: ``None`` runs each float32 or float64 CPU parameter's step "
        'as one native loop where a compiler is found.'
    ),
    'alpha': 'the decay rate of the running mean of the squared gradient.',
    'momentum': 'the momentum factor.',
    'centered': "divide by the gradient's estimated variance instead of its second moment.",
    'lr_decay': "the learning rate's decay per step.",
    'initial_accumulator_value': "the sum of squares' starting value.",
    'rho': 'the decay rate of the running means.',
    'momentum_decay': "NAdam's momentum decay.",
    'decoupled_weight_decay': 'decay the weights directly (as AdamW) instead of through the gradient.',
    'etas': "the step size's factors (decrease, increase) when the gradient's sign flips or stays.",
    'step_sizes': "the step size's bounds (min, max).",
    'dampening': "the share of each new gradient held back from the momentum buffer.",
    'nesterov': "Nesterov's momentum.",
    'max_iter': 'the iterations of one ``step``.',
    'max_eval': 'the function evaluations of one ``step`` (1.25 ``max_iter`` by default).',
    'tolerance_grad': "stop when the gradient's largest element falls below it.",
    'tolerance_change': 'stop when the loss or the step changes less.',
    'history_size': 'the update pairs kept.',
    'line_search_fn': "``None`` or ``'strong_wolfe'``.",
}

# Where an optimizer's parameter means something else than ``PARAMETERS`` says.
OWN = {"AdamW": {"weight_decay": "decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step."}}


def optimizer_doc(cls: Any) -> str:
    """``cls``'s docstring: its own text, its parameters and its example."""
    options, after = OPTIMIZERS[cls.__name__]
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    own = OWN.get(cls.__name__, {})
    example = [">>> w = fg.nn.Parameter(fg.asarray([1.0, -2.0], dtype=fg.float64))", ">>> (w * w).sum().backward()",
               f">>> fg.optim.{cls.__name__}([w], {options}).step()", ">>> [round(v, 4) for v in w.tolist()]",
               str(after)]
    return sections(cls.__doc__ or "", [(p, own.get(p) or PARAMETERS[p]) for p in params], example)


def rule_doc(name: str, fn: Any) -> str:
    """The pure rule ``fn``'s docstring: its own text, its hyperparameters (its class's), what
    it returns, and its first update from the class's example weights and gradient."""
    cls, (options, after) = RULES[name]
    own = OWN.get(cls, {})
    params = [(p, own.get(p) or PARAMETERS[p]) for p in inspect.signature(fn).parameters]
    example = [f">>> init, update = fg.optim.{name}({options})", ">>> w = fg.asarray([1.0, -2.0], dtype=fg.float64)",
               ">>> w, state = update(2 * w, init(w), w)  # (the gradient of (w * w).sum())",
               ">>> [round(v, 4) for v in w.tolist()]", str(after)]
    returns = ("``(init, update)``: ``init(params)`` makes the state (a dict per leaf), "
               "``update(grads, state, params)`` returns the new parameters and state (optax's form, "
               f"``fg.optim.{cls}``'s step as a pure function).")
    return sections(fn.__doc__ or "", params, example, returns)


# Each scheduler's options in its example, the epochs it runs (or the metrics
# ``ReduceLROnPlateau.step`` is given), the learning rates it sets from ``lr=1.0`` (PyTorch's,
# when written), and what each constructor parameter means.
SCHEDULERS: dict[str, tuple[str, int | list[float], list[float], dict[str, str]]] = {
    'ExponentialLR': (
        'gamma=0.5',
        5,
        [1.0, 0.5, 0.25, 0.125, 0.0625],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'gamma': 'the factor.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'CosineAnnealingLR': (
        'T_max=4, eta_min=0.1',
        6,
        [1.0, 0.868198, 0.55, 0.231802, 0.1, 0.231802],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'T_max': 'the epochs to reach ``eta_min``.',
            'eta_min': 'the least learning rate.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'LambdaLR': (
        'lr_lambda=lambda epoch: 1 / (epoch + 1)',
        4,
        [1.0, 0.5, 0.333333, 0.25],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'lr_lambda': 'a function of the epoch (or one per parameter group).',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'MultiStepLR': (
        'milestones=[1, 3], gamma=0.5',
        5,
        [1.0, 0.5, 0.5, 0.25, 0.25],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'milestones': 'the epochs at which it decays, increasing.',
            'gamma': 'the factor.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'ConstantLR': (
        'factor=0.5, total_iters=2',
        4,
        [0.5, 0.5, 1.0, 1.0],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'factor': 'the factor for the first epochs.',
            'total_iters': 'how many epochs it applies.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'LinearLR': (
        'start_factor=0.25, total_iters=3',
        5,
        [0.25, 0.5, 0.75, 1.0, 1.0],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'start_factor': 'the factor at the first epoch.',
            'end_factor': 'the factor from ``total_iters`` on.',
            'total_iters': 'the epochs it takes.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'PolynomialLR': (
        'total_iters=4, power=2.0',
        6,
        [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'total_iters': 'the epochs to reach 0.',
            'power': "the polynomial's power.",
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'MultiplicativeLR': (
        'lr_lambda=lambda epoch: 0.5',
        4,
        [1.0, 0.5, 0.25, 0.125],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'lr_lambda': "a function of the epoch giving that epoch's factor (or one per parameter group).",
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'CosineAnnealingWarmRestarts': (
        'T_0=2, T_mult=2',
        7,
        [1.0, 0.5, 1.0, 0.853553, 0.5, 0.146447, 1.0],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'T_0': 'the first period, in epochs.',
            'T_mult': 'the factor each period grows by.',
            'eta_min': 'the least learning rate.',
            'last_epoch': 'the epoch to resume after (-1: start).',
        }),
    'OneCycleLR': (
        'max_lr=1.0, total_steps=6',
        6,
        [0.04, 0.994415, 0.811746, 0.462637, 0.133478, 4e-06],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'max_lr': 'the peak learning rate (or one per group).',
            'total_steps': 'the steps of the cycle (or give ``epochs`` and ``steps_per_epoch``).',
            'epochs': 'the epochs of the cycle.',
            'steps_per_epoch': 'the steps in an epoch.',
            'pct_start': 'the share of the cycle spent going up.',
            'anneal_strategy': "``'cos'`` or ``'linear'``.",
            'cycle_momentum': 'cycle the momentum (or ``betas[0]``) inversely.',
            'base_momentum': 'the momentum at the peak learning rate.',
            'max_momentum': 'the momentum at the start and end.',
            'div_factor': 'the initial learning rate is ``max_lr / div_factor``.',
            'final_div_factor': 'the last is the initial one over this.',
            'three_phase': "PyTorch's three-phase variant (down to the initial rate, then annealed).",
            'last_epoch': 'the step to resume after (-1: start).',
        }),
    'CyclicLR': (
        'base_lr=0.1, max_lr=1.0, step_size_up=2',
        6,
        [0.1, 0.55, 1.0, 0.55, 0.1, 0.55],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'base_lr': 'the lower bound.',
            'max_lr': 'the upper bound.',
            'step_size_up': 'the steps going up.',
            'step_size_down': 'the steps going down (``step_size_up`` by default).',
            'mode': "``'triangular'``, ``'triangular2'`` (the amplitude halved each cycle) or ``'exp_range'``.",
            'gamma': "``'exp_range'``'s factor per step.",
            'scale_fn': 'a custom amplitude function instead of ``mode``.',
            'scale_mode': "``'cycle'`` or ``'iterations'``: what ``scale_fn`` takes.",
            'cycle_momentum': 'cycle the momentum inversely.',
            'base_momentum': 'the momentum at ``max_lr``.',
            'max_momentum': 'the momentum at ``base_lr``.',
            'last_epoch': 'the step to resume after (-1: start).',
        }),
    'ReduceLROnPlateau': (
        'patience=1',
        [1.0, 0.9, 0.95, 0.95, 0.95, 0.95],
        [1.0, 1.0, 1.0, 1.0, 0.1, 0.1],
        {
            'optimizer': "the optimizer whose groups' ``lr`` it sets.",
            'mode': "``'min'`` (the metric should fall) or ``'max'``.",
            'factor': 'the factor.',
            'patience': 'epochs without improvement tolerated.',
            'threshold': 'the least change that counts as one.',
            'threshold_mode': "``'rel'`` or ``'abs'``: how ``threshold`` is read.",
            'cooldown': 'epochs to wait after a reduction.',
            'min_lr': 'the least learning rate (or one per group).',
            'eps': 'smaller changes of the rate are skipped.',
        }),
}


def scheduler_doc(cls: Any) -> str:
    """``cls``'s docstring: its own text, its parameters and its example (``SCHEDULERS``):
    the learning rate it sets, epoch by epoch, from an SGD's ``lr=1.0``."""
    options, epochs, rates, described = SCHEDULERS[cls.__name__]
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    loop = (f">>> for metric in {epochs}:" if isinstance(epochs, list) else f">>> for epoch in range({epochs}):")
    step = "schedule.step(metric)" if isinstance(epochs, list) else "schedule.step()"
    example = [">>> w = fg.nn.Parameter(fg.zeros(1))", ">>> opt = fg.optim.SGD([w], lr=1.0, momentum=0.9)",
               f">>> schedule = fg.optim.lr_scheduler.{cls.__name__}(opt, {options})", ">>> rates = []", loop,
               f'...     rates.append(round(opt.param_groups[0]["lr"], 6)); opt.step(); {step}', ">>> rates",
               str(rates)]
    return sections(cls.__doc__ or "", [(p, described[p]) for p in params], example)
