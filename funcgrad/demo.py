"""``python -m funcgrad.demo``: train a classifier on handwritten digits, two ways.

It trains an MLP on scikit-learn's bundled 8x8 digits (no download): first with a
PyTorch-style loop (``zero_grad``, ``backward``, ``step``), then the same model in
the functional style (``fg.value_and_grad`` over ``fg.nn.functional_call``, compiled with
``fg.compile`` into one program per step with ``fg.optim.adam``'s update). It
prints the traced program of the loss, saves and reloads a checkpoint with
``fg.save``/``fg.load``, and writes a loss-curve PNG when matplotlib is installed.
``--tour`` instead shows the array foundation: buffers, views, strides, devices.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

import funcgrad as fg


def _show(label: str, value: object) -> None:
    print(f"  {label:<34} {value}")


def tour(device: str = "cpu") -> None:
    print("funcgrad", fg.__version__, "- arrays are immutable views over shared buffers\n")

    x = fg.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    print("x = fg.array([[1., 2., 3.], [4., 5., 6.]])")
    _show("x.shape, x.dtype, x.device", (x.shape, x.dtype, x.device))
    _show("x.stride(), x.storage_offset()", (x.stride(), x.storage_offset()))
    _show("x.buffer", x.buffer)

    print("\nViews: new (shape, strides, offset) over the same buffer, O(1), no copy")
    views = [("x.T", x.T), ("x[1, ::2]", x[1, ::2]), ("x[::-1]", x[::-1]), ("x.reshape(3, 2)", x.reshape(3, 2)),
             ("fg.broadcast_to(x[0], (4, 3))", fg.broadcast_to(x[0], (4, 3)))]
    for label, v in views:
        _show(label, f"shape={v.shape} strides={v.stride()} offset={v.storage_offset()} "
                     f"same buffer={v.buffer is x.buffer}")

    print("\nWhen a view is impossible, view() explains and reshape() copies")
    try:
        x.T.view(6)
    except fg.ViewError as err:
        _show("x.T.view(6)", f"ViewError: {str(err)[:72]}...")
    _show("x.T.reshape(6).buffer is x.buffer", x.T.reshape(6).buffer is x.buffer)

    print("\nImmutability: no write can reach a shared buffer")
    try:
        x[0, 0] = 5.0  # type: ignore[index]
    except TypeError as err:
        _show("x[0, 0] = 5.0", f"TypeError: {str(err)[:60]}...")
    y = x.at[0, 0].set(5.0)
    _show("x.at[0, 0].set(5.0)[0]", y[0].tolist())
    _show("x[0] (unchanged)", x[0].tolist())

    print("\nArithmetic, promotion (NumPy 2 rules, weak Python scalars), advanced indexing")
    _show("(x * 2.0).dtype", (x * 2.0).dtype)
    _show("(x + fg.ones(3, fg.float64)).dtype", (x + fg.ones(3, fg.float64, device=device)).dtype)
    _show("x[x > 2]", x[x > 2].tolist())
    _show("(x @ x.T).sum(axis=0)", (x @ x.T).sum(axis=0).tolist())

    names = sorted(p.name for p in fg.registry())
    print(f"\nThe primitive registry: {len(names)} primitives, every operation goes through fg.bind")
    print("  " + ", ".join(names[:14]) + ", ...")

    print("\nTransforms: derivatives and programs from the same primitives")
    w = fg.array([[0.5, -1.0], [2.0, 0.1], [0.3, 0.3]], device=device)
    loss = lambda w: fg.tanh(x @ w).sum()  # noqa: E731
    _show("fg.grad(loss)(w)", fg.grad(loss)(w).tolist())
    _show("fg.hessian(sum(v**3))([1, 2])", fg.hessian(lambda v: (v ** 3).sum())(fg.array([1.0, 2.0])).tolist())
    print("  fg.trace(loss)(w):")
    print("\n".join("    " + line for line in str(fg.trace(loss)(w)).splitlines()))

    print("\nDevices and memory")
    _show("fg.devices()", fg.devices())
    _show(f"fg.memory.allocated({device!r})", f"{fg.memory.allocated(device)} bytes in live buffers")
    try:
        fg.device("gpu")
        _show("GPU", "available: try --device gpu")
    except fg.DeviceUnavailableError as err:
        _show("fg.device('gpu')", str(err)[:80])


def _digits(seed: int = 0) -> tuple[Any, Any, Any, Any]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("the demo needs scikit-learn's bundled digits: pip install 'funcgrad[examples]'") from None
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(0.8 * len(x))
    return x[order[:split]], y[order[:split]], x[order[split:]], y[order[split:]]


def make_model(kind: str) -> Any:
    nn = fg.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    if kind == "cnn":  # 8x8 images: conv(16) -> pool -> conv(32) -> pool -> linear
        return nn.Sequential(_Image(), nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 2 * 2, 10))
    raise SystemExit(f"unknown --model {kind!r} (available: mlp, cnn)")


class _Image(fg.nn.Module):
    """Flat 64-pixel rows -> (N, 1, 8, 8) images (a view)."""

    def forward(self, x: Any) -> Any:
        return x.reshape(x.shape[0], 1, 8, 8)


def _bar(epoch: int, epochs: int, step: int, steps: int, loss: float) -> None:
    """A one-line progress bar on a terminal; one line per epoch otherwise (logs, CI)."""
    done = int(24 * step / steps)
    line = f"  epoch {epoch + 1:2d}/{epochs} [{'#' * done}{'.' * (24 - done)}] loss {loss:.4f}"
    if sys.stdout.isatty():
        sys.stdout.write("\r" + line)
        sys.stdout.flush()
    elif step == steps:
        print(line)


def _batches(x: Any, y: Any, epochs: int, batch: int, rng: Any, device: str) -> Any:
    """(epoch, step, x batch, y batch) over shuffled full batches, epoch after epoch."""
    steps = len(x) // batch
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        for i in range(steps):
            idx = order[i * batch:(i + 1) * batch]
            yield epoch, i, fg.asarray(x[idx], device=device), fg.asarray(y[idx], device=device)


def accuracy(model: Any, x: Any, y: Any) -> float:
    with fg.no_grad():
        model.eval()
        pred = fg.argmax(model(x), axis=1)
        model.train()
    return int((pred == y).sum()) / int(y.shape[0]) * 100  # (a count: a float32 mean rounds 95% to 94.99999)


def train(epochs: int = 20, kind: str = "mlp", device: str = "cpu", batch: int = 64, seed: int = 0,
          plot: str | None = "funcgrad_demo_loss.png") -> dict[str, float]:
    xtr, ytr, xte, yte = _digits(seed)
    Xte, Yte = fg.asarray(xte, device=device), fg.asarray(yte, device=device)
    F = fg.nn.functional
    rng = np.random.default_rng(seed)
    print(f"funcgrad {fg.__version__}: handwritten digits, {len(xtr)} training and {len(xte)} test images, "
          f"{kind.upper()} on {device}\n")

    print("1. PyTorch style: zero_grad / backward / step")
    fg.manual_seed(seed)
    model = make_model(kind).to(device)
    opt = fg.optim.Adam(model.parameters(), lr=2e-3)
    sched = fg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    steps = len(xtr) // batch
    losses: list[float] = []
    start = time.perf_counter()
    for epoch, i, xb, yb in _batches(xtr, ytr, epochs, batch, rng, device):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i % 4 == 0 or i == steps - 1:
            _bar(epoch, epochs, i + 1, steps, losses[-1])
        if i == steps - 1:
            sched.step()
    seconds = time.perf_counter() - start
    acc = accuracy(model, Xte, Yte)
    print(f"{chr(10) if sys.stdout.isatty() else ''}  trained in {seconds:.1f} s")
    print(f"test accuracy: {acc:.1f}%\n")

    print("2. Functional style, compiled: forward, backward and Adam's update as one program")
    fg.manual_seed(seed + 1)
    fmodel = make_model(kind).to(device)

    def loss_fn(params: dict[str, Any], xb: Any, yb: Any) -> Any:
        return F.cross_entropy(fg.nn.functional_call(fmodel, params, xb), yb)

    adam = fg.optim.adam(lr=2e-3)  # fg.optim.Adam's rule as pure (init, update)

    @fg.compile(donate_argnums=(0, 1))  # the new parameters and state reuse the old ones' memory
    def train_step(params: dict[str, Any], state: Any, xb: Any, yb: Any) -> Any:
        value, grads = fg.value_and_grad(loss_fn)(params, xb, yb)
        return (value, *adam.update(grads, state, params))

    params = {k: v.detach() for k, v in fmodel.named_parameters()}
    state = adam.init(params)
    start = time.perf_counter()
    for epoch, i, xb, yb in _batches(xtr, ytr, epochs, batch, rng, device):
        value, params, state = train_step(params, state, xb, yb)
        if i % 4 == 0 or i == steps - 1:
            _bar(epoch, epochs, i + 1, steps, value.item())
    fmodel.load_state_dict(params)
    facc = accuracy(fmodel, Xte, Yte)
    print(f"{chr(10) if sys.stdout.isatty() else ''}  trained in {time.perf_counter() - start:.1f} s")
    print(f"test accuracy: {facc:.1f}%\n")

    print("3. The loss as a program (fg.trace):")
    xb, yb = fg.asarray(xtr[:batch], device=device), fg.asarray(ytr[:batch], device=device)
    program = fg.trace(loss_fn)(dict(fmodel.named_parameters()), xb, yb)
    print("\n".join("   " + line for line in str(program).splitlines()))

    print("\n4. Checkpoint: fg.save / fg.load (a pickle-free format)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits.safetensors")
        fg.save({"model": model.state_dict(), "optim": opt.state_dict(), "epochs": epochs}, path)
        ckpt = fg.load(path, device=device)
        restored = make_model(kind).to(device)
        restored.load_state_dict(ckpt["model"])
        racc = accuracy(restored, Xte, Yte)
        print(f"  saved {os.path.getsize(path) / 1024:.0f} KiB, reloaded: test accuracy {racc:.1f}% "
              f"({'identical' if racc == acc else 'DIFFERENT'})")

    if plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("\n(matplotlib is not installed: no loss curve; pip install 'funcgrad[examples]')")
        else:
            fig, ax = plt.subplots(figsize=(6, 3.5))
            ax.plot(losses, linewidth=0.8)
            ax.set_xlabel("step")
            ax.set_ylabel("cross-entropy")
            ax.set_title("funcgrad: training loss on digits")
            fig.tight_layout()
            fig.savefig(plot, dpi=100)
            print(f"\n5. Loss curve written to {plot}")
    return {"accuracy": acc, "functional_accuracy": facc, "reloaded_accuracy": racc, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m funcgrad.demo", description=__doc__)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--device", default="cpu", help="cpu or gpu (needs CuPy and a GPU)")
    parser.add_argument("--plot", default="funcgrad_demo_loss.png", help="loss-curve PNG path ('' for none)")
    parser.add_argument("--tour", action="store_true", help="show the array foundation instead of training")
    args = parser.parse_args(argv)
    if args.tour:
        tour(args.device)
        return 0
    train(args.epochs, args.model, args.device, plot=args.plot or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
