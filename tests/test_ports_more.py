"""Seven more real scripts ported by their imports: pytorch/examples' time-sequence
prediction (an LSTM trained by L-BFGS) and six of autograd's examples (logistic regression,
the Rosenbrock function under SciPy's optimizer, a Gaussian process, a negative binomial's
maximum likelihood by Newton's method, a character RNN and an LSTM). Each port is its original with the imports changed (and, in ``rnn.py``, the
documented ``x.at[...].set(...)`` for an assignment into an array); swapping the imports
back gives code the original library runs, and the two agree from the same seed, with no
randomness shared by hand: after ``torch.manual_seed(0)`` and ``fg.manual_seed(0)`` the
models start from the same weights. The autograd ports run in 64-bit mode, as the porting
guide starts NumPy code (``FUNCGRAD_ENABLE_X64=1``)."""

from __future__ import annotations

import pathlib
import re
import runpy
import sys
import types

import numpy as np
import pytest

import funcgrad as fg

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
TSP = EXAMPLES / "time_sequence_prediction"
AUTOGRAD = EXAMPLES / "autograd_examples"
TSP_IMPORTS = "import funcgrad as torch\nimport funcgrad.nn as nn\nimport funcgrad.optim as optim\n"
# funcgrad's import -> autograd's, as the ports changed them
AUTOGRAD_NAMES = {
    "import funcgrad as np": "import autograd.numpy as np",
    "import numpy.random as npr": "import autograd.numpy.random as npr",
    "from funcgrad import grad": "from autograd import grad",
    "from funcgrad import value_and_grad": "from autograd import value_and_grad",
    "from funcgrad.testing import check_grads": "from autograd.test_util import check_grads",
    "from funcgrad.misc.optimizers import adam": "from autograd.misc.optimizers import adam",
    "from funcgrad.scipy.special import logsumexp": "from autograd.scipy.special import logsumexp",
    "from funcgrad.scipy.special import gammaln": "from autograd.scipy.special import gammaln",
    "import funcgrad.scipy.stats.multivariate_normal as mvn": "import autograd.scipy.stats.multivariate_normal as mvn",
    "from funcgrad.linalg import solve": "from autograd.numpy.linalg import solve",
}


def _module(name: str, source: str, path: pathlib.Path) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


# the documented immutability idioms the ports use -> the original's in-place form
IDIOMS = {"        seqs = seqs.at[:, ix, :].set(string_to_one_hot(padded_line, alphabet_size))":
          "        seqs[:, ix, :] = string_to_one_hot(padded_line, alphabet_size)"}


def _autograd_source(path: pathlib.Path) -> str:
    source = path.read_text()
    for port, original in IDIOMS.items():
        source = source.replace(port, original)
    lines = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    for line in lines:
        if "funcgrad" in line:
            assert line in AUTOGRAD_NAMES, line  # (a port changes its imports alone)
            source = source.replace(line, AUTOGRAD_NAMES[line])
    return source


@pytest.fixture
def x64():
    fg.config.update("enable_x64", True)
    yield
    fg.config.update("enable_x64", False)


# ---- pytorch/examples: time_sequence_prediction ----------------------------------------

def test_time_sequence_prediction_writes_its_data_and_trains(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(TSP / "generate_sine_wave.py"))
    data = fg.load("traindata.pt")
    assert isinstance(data, np.ndarray) and data.shape == (100, 1000) and data.dtype == np.float64
    fg.save(data[:8, :100], open("traindata.pt", "wb"))  # (a small set: the script trains on what it finds)
    monkeypatch.setattr(sys, "argv", ["train.py", "--steps", "1", "--device", "cpu"])
    runpy.run_path(str(TSP / "train.py"), run_name="__main__")
    out = capsys.readouterr().out
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("loss:")]
    assert len(losses) > 2 and losses[-1] < losses[0] / 10 and "test loss:" in out
    assert (tmp_path / "predict0.pdf").exists()


def test_time_sequence_prediction_is_the_original_from_the_same_seed(tmp_path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    source = (TSP / "train.py").read_text()
    assert TSP_IMPORTS in source
    ours = _module("tsp_fg", source, TSP / "train.py")
    theirs = _module("tsp_torch", source.replace(TSP_IMPORTS, TSP_IMPORTS.replace("funcgrad", "torch")), TSP / "train.py")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(TSP / "generate_sine_wave.py"))
    data = fg.load("traindata.pt")[:9, :100]
    torch.manual_seed(0)
    fg.manual_seed(0)
    tm, fm = theirs.Sequence().double(), ours.Sequence().double()
    for (name, a), b in zip(tm.state_dict().items(), fm.state_dict().values()):
        assert a.numpy().tobytes() == b.numpy().tobytes(), name  # PyTorch's initial weights, bit for bit
    runs = []
    for lib, model in ((torch, tm), (fg, fm)):
        d = lib.from_numpy(data.copy())
        inputs, target = d[3:, :-1], d[3:, 1:]
        optimizer, criterion, losses = lib.optim.LBFGS(model.parameters(), lr=0.8), lib.nn.MSELoss(), []

        def closure(optimizer=optimizer, model=model, criterion=criterion, inputs=inputs, target=target,
                    losses=losses):
            optimizer.zero_grad()
            loss = criterion(model(inputs), target)
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        runs.append(losses)
    assert len(runs[0]) == len(runs[1]) == 20
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9)


# ---- autograd's examples -----------------------------------------------------------------

def _run_both(path: pathlib.Path, capsys) -> tuple[str, str]:
    """The port's output, and the original's (its imports swapped back) run by autograd."""
    pytest.importorskip("autograd")
    runpy.run_path(str(path), run_name="__main__")
    ours = capsys.readouterr().out
    exec(compile(_autograd_source(path), str(path), "exec"), {"__name__": "__main__", "__file__": str(path)})
    return ours, capsys.readouterr().out


def _numbers(text: str) -> list[float]:
    return [float(t.strip("[](),")) for t in text.replace("[", " ").replace("]", " ").split()
            if t.strip("[](),").replace(".", "", 1).replace("e-", "").replace("-", "", 1).isdigit()]


def test_logistic_regression_port_trains_as_autograd(x64, capsys) -> None:
    ours, theirs = _run_both(AUTOGRAD / "logistic_regression.py", capsys)
    assert "Trained loss" in ours
    np.testing.assert_allclose(_numbers(ours), _numbers(theirs), rtol=1e-12)


def test_rosenbrock_port_finds_autograds_minimum(x64, capsys) -> None:
    pytest.importorskip("scipy")
    ours, theirs = _run_both(AUTOGRAD / "rosenbrock.py", capsys)
    np.testing.assert_allclose(_numbers(ours), _numbers(theirs), rtol=1e-9)
    np.testing.assert_allclose(_numbers(ours), [1.0, 1.0], atol=1e-4)


def test_gaussian_process_port_optimizes_as_autograd(x64) -> None:
    pytest.importorskip("autograd")
    minimize = pytest.importorskip("scipy.optimize").minimize
    pytest.importorskip("matplotlib")
    path = AUTOGRAD / "gaussian_process.py"
    ours, theirs = _module("gp_fg", path.read_text(), path), _module("gp_ag", _autograd_source(path), path)
    results = []
    for module in (ours, theirs):
        num_params, predict, log_marginal_likelihood = module.make_gp_funs(module.rbf_covariance, num_cov_params=2)
        x, y = module.build_toy_dataset(D=1)
        objective = lambda p, m=log_marginal_likelihood, x=x, y=y: -m(p, x, y)  # noqa: E731
        init = 0.1 * np.random.RandomState(0).randn(num_params)
        fitted = minimize(module.value_and_grad(objective), init, jac=True, method="CG", options={"maxiter": 8})
        mean, cov = predict(fitted.x, x, y, np.linspace(-3, 3, 7).reshape(7, 1))
        results.append((float(fitted.fun), np.asarray(fitted.x), np.asarray(mean), np.asarray(cov)))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)


def test_negative_binomial_port_fits_as_autograd(x64, capsys, monkeypatch) -> None:
    """Newton's method with ``grad`` and ``grad(grad(...))`` of ``gammaln`` (digamma and
    trigamma): the same fitted parameters as autograd's."""
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ours, theirs = _run_both(AUTOGRAD / "negative_binomial_maxlike.py", capsys)
    fits = [[float(v) for v in re.findall(r"[rp]=([0-9.e+-]+)", out)] for out in (ours, theirs)]
    assert len(fits[0]) == 2
    np.testing.assert_allclose(fits[0], fits[1], rtol=1e-10)


@pytest.mark.parametrize("name", ["rnn", "lstm"])
def test_character_models_port_train_as_autograd(name, x64, monkeypatch) -> None:
    pytest.importorskip("autograd")
    path = AUTOGRAD / f"{name}.py"
    monkeypatch.syspath_prepend(str(AUTOGRAD))  # (lstm.py imports rnn.py's helpers)
    modules = []
    for kind, source in (("fg", path.read_text()), ("ag", _autograd_source(path))):
        rnn = _module("rnn", (AUTOGRAD / "rnn.py").read_text() if kind == "fg" else
                      _autograd_source(AUTOGRAD / "rnn.py"), AUTOGRAD / "rnn.py")
        monkeypatch.setitem(sys.modules, "rnn", rnn)
        modules.append(_module(f"{name}_{kind}", source, path))
    runs = []
    for module in modules:
        inputs = module.build_dataset(str(path), sequence_length=12, alphabet_size=128, max_lines=10)
        make = module.create_rnn_params if name == "rnn" else module.init_lstm_params
        predict = module.rnn_predict if name == "rnn" else module.lstm_predict
        params = make(input_size=128, output_size=128, state_size=16, param_scale=0.01, rs=np.random.RandomState(0))
        log_likelihood = module.rnn_log_likelihood if name == "rnn" else module.lstm_log_likelihood
        loss = lambda p, i, f=log_likelihood, x=inputs: -f(p, x, x)  # noqa: E731
        trained = module.adam(module.grad(loss), params, step_size=0.1, num_iters=5)
        text = module.one_hot_to_string(np.asarray(predict(trained, inputs))[:, 0, :])
        runs.append((np.asarray(inputs), float(loss(trained, 0)), {k: np.asarray(v) for k, v in trained.items()}, text))
    (x_fg, loss_fg, p_fg, text_fg), (x_ag, loss_ag, p_ag, text_ag) = runs
    np.testing.assert_array_equal(x_fg, x_ag)
    np.testing.assert_allclose(loss_fg, loss_ag, rtol=1e-10)
    for key in p_ag:
        np.testing.assert_allclose(p_fg[key], p_ag[key], rtol=1e-8, atol=1e-12, err_msg=key)
    assert text_fg == text_ag
