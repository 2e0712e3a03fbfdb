"""Adagrad, Adamax, NAdam, RAdam, Adadelta and Rprop against PyTorch's, step by step on a
small problem in float64 (PyTorch keeps some scalars, such as NAdam's step and momentum
product, or Rprop's step factors, in float32: those agree to 1e-7, Rprop's compounding to 1e-5), and their state dicts round trip."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)
W0, X, Y = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 3)), RNG.standard_normal((5, 4))

CASES = {
    "Adagrad": lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2),
    "Adagrad maximize": lambda o, p: o.Adagrad(p, lr=0.1, maximize=True),
    "Adamax": lambda o, p: o.Adamax(p, lr=0.05, weight_decay=0.1),
    "NAdam": lambda o, p: o.NAdam(p, lr=0.05, weight_decay=0.1),
    "NAdam decoupled": lambda o, p: o.NAdam(p, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": lambda o, p: o.RAdam(p, lr=0.05, weight_decay=0.1),
    "RAdam decoupled": lambda o, p: o.RAdam(p, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "Adadelta": lambda o, p: o.Adadelta(p, lr=0.5, weight_decay=0.1),
    "Rprop": lambda o, p: o.Rprop(p, lr=0.05),
}
EXACT = {"Adagrad", "Adagrad maximize", "Adamax", "RAdam", "RAdam decoupled", "Adadelta"}


def _trajectory(lib, make, steps: int = 10) -> list[np.ndarray]:
    p = (torch.nn.Parameter(torch.tensor(W0)) if lib is torch else fg.nn.Parameter(fg.asarray(W0)))
    opt = make(lib.optim, [p])
    x, y = (torch.tensor(X), torch.tensor(Y)) if lib is torch else (fg.asarray(X), fg.asarray(Y))
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (((x @ p - y) ** 2).mean() + (p ** 4).sum() * 0.01).backward()
        opt.step()
        out.append(p.detach().numpy().copy())
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimizers_match_pytorch(name: str) -> None:
    want, got = _trajectory(torch, CASES[name]), _trajectory(fg, CASES[name])
    tol = 1e-12 if name in EXACT else 1e-5 if name == "Rprop" else 1e-7  # (Rprop's factors compound)
    for step, (w, g) in enumerate(zip(want, got)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name}, step {step + 1}")
    fopt = CASES[name](fg.optim, [fg.nn.Parameter(fg.asarray(W0))])
    assert repr(fopt).split("\n")[0] == repr(CASES[name](torch.optim, [torch.nn.Parameter(torch.tensor(W0))])).split(
        "\n")[0]


def test_optimizer_arguments_are_checked() -> None:
    p = [fg.nn.Parameter(fg.zeros(2))]
    with pytest.raises(fg.ArgumentValueError, match="Adagrad: invalid lr"):
        fg.optim.Adagrad(p, lr=-1.0)
    with pytest.raises(fg.ArgumentValueError, match="Rprop: invalid etas"):
        fg.optim.Rprop(p, etas=(1.5, 1.2))
    with pytest.raises(fg.ArgumentValueError, match="NAdam: invalid betas"):
        fg.optim.NAdam(p, betas=(1.0, 0.9))



@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("history_size", [100, 3])
def test_lbfgs_matches_pytorch(line_search_fn, history_size) -> None:
    """The same closure evaluations and iterations as PyTorch's LBFGS, float64; the same
    parameters after one step to 1e-9 (later steps amplify rounding on this ill-conditioned fit)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((40, 5)), (rng.standard_normal(40) > 0).astype(np.int64)
    torch.manual_seed(0)  # (the same start every run: a borderline line-search step may count one more evaluation)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).double()
    fm = fg.nn.Sequential(fg.nn.Linear(5, 8), fg.nn.Tanh(), fg.nn.Linear(8, 2)).double()
    fm.load_state_dict({k: fg.asarray(v.numpy()) for k, v in tm.state_dict().items()})
    kwargs = dict(lr=0.8, max_iter=15, history_size=history_size, line_search_fn=line_search_fn)
    topt, fopt = torch.optim.LBFGS(tm.parameters(), **kwargs), fg.optim.LBFGS(fm.parameters(), **kwargs)
    tx, ty, fx, fy = torch.tensor(x), torch.tensor(y), fg.asarray(x), fg.asarray(y)

    def torch_closure():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(tx), ty)
        loss.backward()
        return loss

    def closure():
        fopt.zero_grad()
        loss = fg.nn.functional.cross_entropy(fm(fx), fy)
        loss.backward()
        return loss

    for step in range(3):
        want, got = topt.step(torch_closure), fopt.step(closure)
        assert abs(float(want) - float(got)) <= 1e-9 * (1 + abs(float(want)))
        if step == 0:
            for p, tp in zip(fm.parameters(), tm.parameters()):
                np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-9, atol=1e-11)
        theirs, ours = topt.state[next(iter(tm.parameters()))], fopt.state[next(iter(fm.parameters()))]
        assert (ours["func_evals"], ours["n_iter"]) == (theirs["func_evals"], theirs["n_iter"])
