"""The API reference's sections for the optimizers whose docstrings carry a summary alone:
their parameters and an example of one step, PyTorch's (``torch.optim``'s step from the
same weights and gradient gives the same numbers; checked when written).
``tests/test_docstrings.py`` runs the examples."""

from __future__ import annotations

import inspect
from typing import Any

from ..ops.reference_docs import sections

__all__ = ["OPTIMIZERS", "optimizer_doc"]

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
