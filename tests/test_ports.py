"""Real scripts ported to funcgrad: examples/nanogpt.py (nanoGPT's model.py) and
examples/pytorch_mnist.py (pytorch/examples' mnist/main.py). Each port is the original
with its imports changed and the documented immutability idioms; swapping the imports
back gives code PyTorch runs, and the two agree."""

from __future__ import annotations

import copy
import pathlib
import runpy
import sys
import types

import numpy as np
import pytest

import funcgrad as fg

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
FG_IMPORTS = "import funcgrad as torch\nimport funcgrad.nn as nn\nfrom funcgrad.nn import functional as F\n"
TORCH_IMPORTS = "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # (dataclasses look their module up)
    try:
        exec(compile(source, name, "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


def test_nanogpt_port_trains_and_samples(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["nanogpt.py", "40"])
    runpy.run_path(str(EXAMPLES / "nanogpt.py"), run_name="__main__")
    out = capsys.readouterr().out
    final, first = (float(v) for v in out.split("final loss ")[1].replace(")", "").split(" (first "))
    assert final < first - 1.0 and "sample: F" in out


@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_port_is_the_original_model(flash: bool) -> None:
    """The port's source with PyTorch's imports runs in PyTorch; with the same weights both
    give the same loss and gradients (both attention paths, tied weights, the scaled init's
    shapes, parameter groups)."""
    torch = pytest.importorskip("torch")
    source = (EXAMPLES / "nanogpt.py").read_text()
    assert FG_IMPORTS in source
    ours = _module("nanogpt_fg", source)
    theirs = _module("nanogpt_torch", source.replace(FG_IMPORTS, TORCH_IMPORTS))
    kwargs = dict(block_size=16, vocab_size=23, n_layer=2, n_head=2, n_embd=32, dropout=0.0, flash=flash)
    torch.manual_seed(0)
    tm = theirs.GPT(theirs.GPTConfig(**kwargs))
    fm = ours.GPT(ours.GPTConfig(**kwargs))
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert fm.get_num_params() == tm.get_num_params()
    fm.load_state_dict({k: fg.asarray(v.numpy().copy()) for k, v in tm.state_dict().items()})
    assert fm.transformer.wte.weight is fm.lm_head.weight  # still tied after loading

    rng = np.random.default_rng(0)
    idx, targets = rng.integers(0, 23, (3, 16)), rng.integers(0, 23, (3, 16))
    targets[0, :4] = -1  # ignore_index
    t_logits, t_loss = tm(torch.tensor(idx), torch.tensor(targets))
    f_logits, f_loss = fm(fg.asarray(idx), fg.asarray(targets))
    np.testing.assert_allclose(f_logits.numpy(), t_logits.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert abs(f_loss.item() - t_loss.item()) < 1e-5
    t_loss.backward()
    f_loss.backward()
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
    last, _ = fm(fg.asarray(idx))
    assert last.shape == (3, 1, 23)
    opt = fm.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
    assert [len(g["params"]) for g in opt.param_groups] == [
        len(g["params"]) for g in tm.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu").param_groups]
    fm.crop_block_size(8)
    assert fm(fg.asarray(idx[:, :8]))[0].shape == (3, 1, 23)


MNIST_FG_IMPORTS = ("import funcgrad as torch\nimport funcgrad.nn as nn\nimport funcgrad.nn.functional as F\n"
                    "import funcgrad.optim as optim\nfrom funcgrad.optim.lr_scheduler import StepLR\n")


def test_mnist_port_trains(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sklearn")
    module = runpy.run_path(str(EXAMPLES / "pytorch_mnist.py"))
    accuracy = module["main"](["--epochs", "1", "--log-interval", "20", "--test-batch-size", "120"])
    assert accuracy > 0.5, capsys.readouterr().out
    assert "Test set: Average loss" in capsys.readouterr().out


def test_mnist_port_is_the_original_script() -> None:
    """With PyTorch's imports the port's source runs in PyTorch (data included); with the
    same weights the two nets give the same outputs, gradients and test figures."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    source = (EXAMPLES / "pytorch_mnist.py").read_text()
    assert MNIST_FG_IMPORTS in source
    ours = _module("mnist_fg", source)
    theirs = _module("mnist_torch", source.replace(MNIST_FG_IMPORTS, MNIST_FG_IMPORTS.replace("funcgrad", "torch")))
    f_data, t_data = ours.Digits(train=False), theirs.Digits(train=False)
    np.testing.assert_allclose(f_data.images.numpy(), t_data.images.numpy(), atol=1e-6)
    tm, fm = theirs.Net(), ours.Net()
    fm.load_state_dict({k: fg.asarray(v.numpy().copy()) for k, v in tm.state_dict().items()})
    tm.eval(), fm.eval()
    x = t_data.images[:16]
    t_out, f_out = tm(x), fm(fg.asarray(x.numpy()))
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-4)
    # gradients in float64: float32 sums in another order (another CPU's kernels) differ past any fixed rtol
    tm64, fm64 = copy.deepcopy(tm).double(), copy.deepcopy(fm).to(fg.float64)
    x64 = x.double()
    y = t_data.targets[:16]
    torch.nn.functional.nll_loss(tm64(x64), y).backward()
    fg.nn.functional.nll_loss(fm64(fg.asarray(x64.numpy())), fg.asarray(y.numpy())).backward()
    for (name, p), (_, tp) in zip(fm64.named_parameters(), tm64.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    loaders = [m.torch.utils.data.DataLoader(d, batch_size=100) for m, d in ((ours, f_data), (theirs, t_data))]
    assert ours.test(fm, fg.device("cpu"), loaders[0]) == theirs.test(tm, torch.device("cpu"), loaders[1])


JAX_FG = "from funcgrad import jit, grad\nfrom funcgrad.scipy.special import logsumexp\nimport funcgrad as jnp\n"
JAX_ORIGINAL = "from jax import jit, grad\nfrom jax.scipy.special import logsumexp\nimport jax.numpy as jnp\n"
AUTOGRAD_FG = ("import funcgrad as np\nimport numpy.random as npr\nfrom funcgrad.scipy.special import logsumexp\n"
               "from funcgrad import grad\nfrom funcgrad.misc.flatten import flatten\n"
               "from funcgrad.misc.optimizers import adam\n")
AUTOGRAD_ORIGINAL = ("import autograd.numpy as np\nimport autograd.numpy.random as npr\n"
                     "from autograd.scipy.special import logsumexp\nfrom autograd import grad\n"
                     "from autograd.misc.flatten import flatten\nfrom autograd.misc.optimizers import adam\n")


@pytest.mark.parametrize("name,argv,needle", [("jax_mnist.py", ["2"], "Test set accuracy 0."),
                                              ("autograd_neural_net.py", ["3"], "Test accuracy")])
def test_jax_and_autograd_ports_train(name, argv, needle, capsys, monkeypatch) -> None:
    pytest.importorskip("sklearn")
    monkeypatch.setattr(sys, "argv", [name] + argv)
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert needle in out, out
    if name.startswith("autograd"):
        assert float(out.strip().splitlines()[-1].split("|")[-1]) > 0.5  # test accuracy after 3 epochs


def test_jax_port_is_the_original_script() -> None:
    """The port with JAX's imports runs in JAX: the same loss, gradients and jitted update
    from the same initial parameters (JAX computes in float32; funcgrad keeps NumPy's float64)."""
    pytest.importorskip("jax")
    pytest.importorskip("sklearn")
    source = (EXAMPLES / "jax_mnist.py").read_text()
    assert JAX_FG in source
    ours, theirs = _module("jax_mnist_fg", source), _module("jax_mnist_jax", source.replace(JAX_FG, JAX_ORIGINAL))
    images, labels, _, _ = ours.digits()
    batch = (images[:128], labels[:128])
    params = ours.init_random_params(0.1, [64, 32, 10], np.random.RandomState(1))
    assert abs(float(ours.loss(params, batch)) - float(theirs.loss(params, batch))) < 1e-5
    for (w, b), (tw, tb) in zip(ours.grad(ours.loss)(params, batch), theirs.grad(theirs.loss)(params, batch)):
        np.testing.assert_allclose(w.numpy(), np.asarray(tw), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(b.numpy(), np.asarray(tb), rtol=1e-4, atol=1e-6)
    assert float(ours.accuracy(params, batch)) == float(theirs.accuracy(params, batch))


def test_autograd_port_is_the_original_script() -> None:
    """The port with autograd's imports runs in autograd: in float64 both take the same Adam
    steps on the same objective (flatten, logsumexp and the optimizer loop included)."""
    pytest.importorskip("autograd")
    pytest.importorskip("sklearn")
    source = (EXAMPLES / "autograd_neural_net.py").read_text()
    assert AUTOGRAD_FG in source
    ours = _module("nn_fg", source)
    theirs = _module("nn_autograd", source.replace(AUTOGRAD_FG, AUTOGRAD_ORIGINAL))
    _, images, labels, _, _ = ours.load_digits()
    params = ours.init_random_params(0.1, [64, 16, 10], np.random.RandomState(0))

    def objective(module):
        return lambda p, i: -module.log_posterior(p, images[i * 64:(i + 1) * 64], labels[i * 64:(i + 1) * 64], 1.0)

    seen = []
    got = ours.adam(ours.grad(objective(ours)), params, callback=lambda p, i, g: seen.append(i), num_iters=6,
                    step_size=0.01)
    want = theirs.adam(theirs.grad(objective(theirs)), params, num_iters=6, step_size=0.01)
    assert seen == list(range(6))
    for (w, b), (tw, tb) in zip(got, want):
        np.testing.assert_allclose(w.numpy(), tw, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(b.numpy(), tb, rtol=1e-10, atol=1e-12)
    vector, unflatten = ours.flatten(params)
    assert vector.shape == (64 * 16 + 16 + 16 * 10 + 10,)
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(fg.tree.leaves(unflatten(vector)), fg.tree.leaves(params)))


WLM_FG_IMPORTS = "import funcgrad as torch\nimport funcgrad.nn as nn\nimport funcgrad.nn.functional as F\n"
WLM_MODELS = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU", "Transformer"]


@pytest.mark.parametrize("model", ["RNN_TANH", "Transformer"])
def test_word_language_model_port_trains(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(EXAMPLES / "word_language_model.py"))
    first, best = module["main"](["--model", model, "--epochs", "6" if model != "Transformer" else "2"])
    assert best < first - 0.5, capsys.readouterr().out
    assert "End of training" in capsys.readouterr().out


@pytest.mark.parametrize("model", WLM_MODELS)
def test_word_language_model_port_is_the_original(model: str) -> None:
    """Every ``--model`` of pytorch/examples' word_language_model: the port's source with
    PyTorch's imports runs in PyTorch; with the same weights the two give the same
    log-probabilities, hidden states, loss and gradients, and one SGD step of the script's
    loop (clipping, ``p.data = p.data.add(p.grad, alpha=-lr)``) leaves the same weights."""
    torch = pytest.importorskip("torch")
    source = (EXAMPLES / "word_language_model.py").read_text()
    assert WLM_FG_IMPORTS in source
    ours = _module("wlm_fg", source)
    theirs = _module("wlm_torch", source.replace(WLM_FG_IMPORTS, WLM_FG_IMPORTS.replace("funcgrad", "torch")))
    args = types.SimpleNamespace(model=model, emsize=16, nhid=16, nlayers=2, dropout=0.0, tied=model == "GRU",
                                 nhead=2, bptt=7, clip=0.25)
    f_corpus, t_corpus = ours.Corpus(ours.TEXT), theirs.Corpus(theirs.TEXT)
    assert f_corpus.train.tolist() == t_corpus.train.tolist()
    ntokens = len(t_corpus.dictionary)
    tm = theirs.build_model(args, ntokens, torch.device("cpu"))
    fm = ours.build_model(args, ntokens, fg.device("cpu"))
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    fm.load_state_dict({k: fg.asarray(v.numpy().copy()) for k, v in tm.state_dict().items()})
    tm.eval(), fm.eval()  # (nn.Transformer's layers keep their own dropout of 0.1)
    t_data = theirs.batchify(t_corpus.train, 3, torch.device("cpu"))
    f_data = ours.batchify(f_corpus.train, 3, fg.device("cpu"))
    t_x, t_y = theirs.get_batch(t_data, 5, args.bptt)
    f_x, f_y = ours.get_batch(f_data, 5, args.bptt)
    if model == "Transformer":
        t_out, f_out = tm(t_x).view(-1, ntokens), fm(f_x).view(-1, ntokens)
    else:
        t_out, t_h = tm(t_x, tm.init_hidden(3))
        f_out, f_h = fm(f_x, fm.init_hidden(3))
        for a, b in zip(fg.tree.leaves(f_h), (t_h if isinstance(t_h, tuple) else (t_h,))):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-4)
    t_loss, f_loss = torch.nn.NLLLoss()(t_out, t_y), fg.nn.NLLLoss()(f_out, f_y)
    assert abs(f_loss.item() - t_loss.item()) < 1e-5
    t_loss.backward()
    f_loss.backward()
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
    for m, lib in ((fm, fg), (tm, torch)):  # the script's update step
        lib.nn.utils.clip_grad_norm_(m.parameters(), args.clip)
        for p in m.parameters():
            p.data = p.data.add(p.grad, alpha=-5.0)
    for (name, p), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
