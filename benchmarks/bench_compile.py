"""fg.compile against eager funcgrad, hand-written NumPy, jax.jit and torch.compile.

Workloads (docs/performance.md has the targets):
  W2  SGD step of the MLP 784-512-256-10, batch 128, ReLU spelled ``maximum(x, 0.0)``
      (forward, backward, update)
  W3  GELU (tanh form) on 1e6 float32: forward, and forward + gradient
  W4  value_and_grad / loss on the W2 MLP
  W5  RNN, 50 steps of an 8x32 state, forward + backward, written as a Python loop, and as
      fg.scan against jax.lax.scan
  W6  the W2 MLP as nn modules, a PyTorch-style step (loss.backward(), opt.step()) with
      the model compiled (fg.compile(model)) against the eager model
  and the call overhead of a compiled (1,) add, and the first call (trace + passes +
  lowering + native build) of the W2 step with a cold and a warm disk cache. "funcgrad
  compiled" runs native loops (fg.config.compile_backend = "c"), "fg.compile, NumPy calls"
  the NumPy lowering. Contenders run interleaved in one process; the ratios are
  paired (each round's ratio, then the median).

    python benchmarks/bench_compile.py [--rounds 7] [--no-torch-compile] [--only W3 W5 ...]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import bench_autodiff as mlp_bench  # noqa: E402
from common import blas_line, interleaved_samples, median_and_best, optional, paired_ratio  # noqa: E402

import funcgrad as fg  # noqa: E402

LR = 0.01
C = math.sqrt(2 / math.pi)


# ---- W2 / W4: the MLP ----------------------------------------------------------------------
# The MLP: bench_autodiff's sizes and data, ReLU spelled ``maximum(x, 0.0)`` for
# funcgrad and JAX (as ``jax.nn.relu`` is written), ``np.maximum`` by hand, softmax
# cross-entropy.

def numpy_relu_forward(p, x, y):
    W1, b1, W2, b2, W3, b3 = p
    h1 = np.maximum(x @ W1 + b1, 0.0)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    m = z.max(1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(1, keepdims=True)) + m
    return (lse[:, 0] - z[np.arange(len(y)), y]).mean(), (h1, h2, z, lse)


def numpy_relu_value_and_grad(p, x, y):
    """The loss and gradient written by hand, as a NumPy user would."""
    value, (h1, h2, z, lse) = numpy_relu_forward(p, x, y)
    W1, b1, W2, b2, W3, b3 = p
    dz = np.exp(z - lse)
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh2 = (dz @ W3.T) * (h2 > 0)
    dh1 = (dh2 @ W2.T) * (h1 > 0)
    return value, [x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0)]


def funcgrad_relu_loss(p, x, y):
    W1, b1, W2, b2, W3, b3 = p
    h = fg.maximum(x @ W1 + b1, 0.0)
    h = fg.maximum(h @ W2 + b2, 0.0)
    return fg.nn.functional.cross_entropy(h @ W3 + b3, y)


def jax_relu_loss(p, x, y):
    import jax
    import jax.numpy as jnp

    W1, b1, W2, b2, W3, b3 = p
    h = jnp.maximum(x @ W1 + b1, 0.0)
    h = jnp.maximum(h @ W2 + b2, 0.0)
    z = h @ W3 + b3
    return (jax.nn.logsumexp(z, axis=1) - jnp.take_along_axis(z, y[:, None], 1)[:, 0]).mean()


def mlp_numpy(params, x, y):
    state = [list(params)]

    def step():
        value, grads = numpy_relu_value_and_grad(state[0], x, y)
        state[0] = [p - LR * g for p, g in zip(state[0], grads)]
        return value

    return {"step": step, "loss": lambda: numpy_relu_forward(params, x, y)[0],
            "vg": lambda: numpy_relu_value_and_grad(params, x, y)}


def mlp_funcgrad(params, x, y, compiled: bool):
    wrap = fg.compile if compiled else (lambda f: f)
    p0 = [fg.asarray(a) for a in params]
    fx, fy = fg.asarray(x), fg.asarray(y)
    vg = fg.value_and_grad(funcgrad_relu_loss)

    def sgd_step(p, x, y):
        value, grads = vg(p, x, y)
        return value, [w - LR * g for w, g in zip(p, grads)]

    step_fn, vg_fn, loss_fn = wrap(sgd_step), wrap(vg), wrap(funcgrad_relu_loss)
    state = [p0]

    def step():
        value, state[0] = step_fn(state[0], fx, fy)
        return value

    return {"step": step, "vg": lambda: vg_fn(p0, fx, fy), "loss": lambda: loss_fn(p0, fx, fy)}


def mlp_jax(params, x, y):
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    vg = jax.value_and_grad(jax_relu_loss)

    @jax.jit
    def sgd_step(p, x, y):
        value, grads = vg(p, x, y)
        return value, [w - LR * g for w, g in zip(p, grads)]

    p0 = [jnp.asarray(a) for a in params]
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    state = [p0]
    jvg, jloss = jax.jit(vg), jax.jit(jax_relu_loss)

    def step():
        value, state[0] = sgd_step(state[0], jx, jy)
        return jax.block_until_ready(value)

    return {"step": step, "vg": lambda: jax.block_until_ready(jvg(p0, jx, jy)),
            "loss": lambda: jloss(p0, jx, jy).block_until_ready()}


def mlp_torch_compile(params, x, y):
    torch = optional("torch")
    if torch is None:
        return None
    p = [torch.tensor(a, requires_grad=True) for a in params]
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    @torch.compile
    def step_fn():
        W1, b1, W2, b2, W3, b3 = p
        h = torch.relu(torch.relu(tx @ W1 + b1) @ W2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ W3 + b3, ty)
        grads = torch.autograd.grad(loss, p)
        with torch.no_grad():
            for w, g in zip(p, grads):
                w -= LR * g
        return loss

    return {"step": step_fn}


def mlp_modules(params, x, y, compiled: bool):
    model = fg.nn.Sequential(fg.nn.Linear(784, 512), fg.nn.ReLU(), fg.nn.Linear(512, 256), fg.nn.ReLU(),
                             fg.nn.Linear(256, 10))
    model.load_state_dict({f"{2 * i}.{k}": fg.asarray(np.ascontiguousarray(v)) for i, (w, b) in
                           enumerate(zip(params[::2], params[1::2])) for k, v in (("weight", w.T), ("bias", b))})
    run = fg.compile(model) if compiled else model
    opt = fg.optim.SGD(model.parameters(), lr=LR)
    fx, fy = fg.asarray(x), fg.asarray(y)

    def step():
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(run(fx), fy)
        loss.backward()
        opt.step()
        return loss

    return {"step": step}


# ---- W3: GELU ------------------------------------------------------------------------------

def gelu_numpy(x):
    def fwd():
        u = C * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + np.tanh(u))

    def fwd_grad():
        u = C * (x + 0.044715 * x * x * x)
        t = np.tanh(u)
        du = C * (1 + 3 * 0.044715 * x * x)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du

    return {"fwd": fwd, "fwd+grad": fwd_grad}


def _gelu(x):
    return 0.5 * x * (1 + fg.tanh(C * (x + 0.044715 * x * x * x)))


def gelu_funcgrad(x, compiled: bool):
    wrap = fg.compile if compiled else (lambda f: f)
    fx = fg.asarray(x)
    fwd, grad = wrap(_gelu), wrap(fg.grad(lambda v: _gelu(v).sum()))
    return {"fwd": lambda: fwd(fx), "fwd+grad": lambda: grad(fx)}


def gelu_jax(x):
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    def f(v):
        return 0.5 * v * (1 + jnp.tanh(C * (v + 0.044715 * v * v * v)))

    jx = jnp.asarray(x)
    fwd, grad = jax.jit(f), jax.jit(jax.grad(lambda v: f(v).sum()))
    return {"fwd": lambda: fwd(jx).block_until_ready(), "fwd+grad": lambda: grad(jx).block_until_ready()}


def gelu_torch_compile(x):
    torch = optional("torch")
    if torch is None:
        return None

    def f(v):
        return 0.5 * v * (1 + torch.tanh(C * (v + 0.044715 * v * v * v)))

    tx, tg = torch.from_numpy(x), torch.from_numpy(x.copy()).requires_grad_(True)
    fwd = torch.compile(f)

    @torch.compile
    def grad(v):
        return torch.autograd.grad(f(v).sum(), v)[0]

    return {"fwd": lambda: fwd(tx), "fwd+grad": lambda: grad(tg)}


# ---- W5: RNN -------------------------------------------------------------------------------

def rnn_data():
    rng = np.random.default_rng(1)
    return ((rng.standard_normal((32, 32)) * 0.2).astype(np.float32),
            (rng.standard_normal((50, 8, 32)) * 0.5).astype(np.float32))


def rnn_numpy(w, xs):
    def fwd_bwd():
        h, hs = np.zeros((8, 32), np.float32), []
        for x in xs:
            h = np.tanh(h @ w + x)
            hs.append(h)
        dw, dh = np.zeros_like(w), np.ones_like(h)
        for t in range(len(xs) - 1, -1, -1):
            da = dh * (1 - hs[t] * hs[t])
            prev = hs[t - 1] if t else np.zeros_like(h)
            dw += prev.T @ da
            dh = da @ w.T
        return dw

    return {"rnn": fwd_bwd}


def rnn_funcgrad(w, xs, compiled: bool):
    def loss(w, xs):
        h = fg.zeros((8, 32))
        for t in range(xs.shape[0]):
            h = fg.tanh(h @ w + xs[t])
        return h.sum()

    g = fg.grad(loss)
    g = fg.compile(g) if compiled else g
    fw, fxs = fg.asarray(w), fg.asarray(xs)
    return {"rnn": lambda: g(fw, fxs)}


def rnn_jax(w, xs):
    """The unrolled loop (a Python loop traced by jax.jit), as funcgrad's."""
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    def loss(w, xs):
        h = jnp.zeros((8, 32), jnp.float32)
        for t in range(xs.shape[0]):
            h = jnp.tanh(h @ w + xs[t])
        return h.sum()

    g = jax.jit(jax.grad(loss))
    jw, jxs = jnp.asarray(w), jnp.asarray(xs)
    return {"rnn": lambda: g(jw, jxs).block_until_ready()}


def rnn_scan_funcgrad(w, xs):
    """The same loss with the loop as fg.scan, compiled: one scan primitive whose backward
    pass is a reversed scan of the body's VJP."""
    def loss(w, xs):
        h, _ = fg.scan(lambda h, x: (fg.tanh(h @ w + x), None), fg.zeros((8, 32)), xs)
        return h.sum()

    g = fg.compile(fg.grad(loss))
    fw, fxs = fg.asarray(w), fg.asarray(xs)
    return {"rnn": lambda: g(fw, fxs)}


def rnn_scan_jax(w, xs):
    if optional("jax") is None:
        return None
    import jax
    import jax.numpy as jnp

    def loss(w, xs):
        h, _ = jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x), None), jnp.zeros((8, 32), jnp.float32), xs)
        return h.sum()

    g = jax.jit(jax.grad(loss))
    jw, jxs = jnp.asarray(w), jnp.asarray(xs)
    return {"rnn": lambda: g(jw, jxs).block_until_ready()}


# ---- running ---------------------------------------------------------------------------------

def report(title: str, frameworks: dict, rounds: int, number: int, base: str = "numpy (by hand)") -> None:
    run = {f"{fw}|{k}": fn for fw, c in frameworks.items() if c for k, fn in c.items()}
    samples = interleaved_samples(run, rounds, number, pause=0.25)
    med, _ = median_and_best(samples)
    print(title)
    for key in run:
        fw, what = key.split("|")
        ref = f"{base}|{what}"
        ratio = f"{paired_ratio(samples, key, ref):6.2f}x {base}" if ref in run and key != ref else ""
        took = f"{med[key] * 1e6:9.2f} us" if med[key] < 1e-4 else f"{med[key] * 1e3:9.3f} ms"  # (a call's overhead)
        print(f"  {what:9s} {fw:24s} {took}  {ratio}")
    for fw in frameworks:
        if f"{fw}|vg" in run and f"{fw}|loss" in run:
            print(f"  vg / loss, {fw}: {paired_ratio(samples, f'{fw}|vg', f'{fw}|loss'):.2f}")


def lowered_with(backend: str, contenders: dict) -> dict:
    """Each contender called once with ``fg.config.compile_backend = backend``: compiled
    programs (and backward plans) are lowered at their first call, and keep that backend."""
    before = fg.config.compile_backend
    fg.config.compile_backend = backend
    try:
        for fn in contenders.values():
            fn()
    finally:
        fg.config.compile_backend = before
    return contenders


_FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
import bench_autodiff as mlp_bench, bench_compile
params, x, y = mlp_bench.data()
start = time.perf_counter()
bench_compile.mlp_funcgrad(params, x, y, compiled=True)["step"]()
print(time.perf_counter() - start)
"""


def first_calls() -> None:
    """The compiled W2 step's first call (trace, passes, lowering, native build), in a fresh
    process each: with an empty disk cache, then with the cache that call filled."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FUNCGRAD_CACHE_DIR=cache)
        code = _FIRST_CALL.format(here=os.path.dirname(os.path.abspath(__file__)))
        times = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True).stdout.split()[-1]) for _ in range(2)]
    print(f"first call of the compiled W2 step: {times[0]:.2f} s with a cold disk cache, {times[1]:.2f} s warm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--only", nargs="+", choices=["first", "W2", "W6", "W3", "W5", "call"],
                        help="these workloads only (W2 includes W4)")
    args = parser.parse_args()
    print(blas_line())
    wanted = set(args.only or ["first", "W2", "W6", "W3", "W5", "call"])
    if "first" in wanted:
        first_calls()
    if {"W2", "W6"} & wanted:
        mlps(args, wanted)
    if "W3" in wanted:
        gelus(args)
    if "W5" in wanted:
        rnns(args)
    if "call" in wanted:
        one = fg.ones((1,))
        add = fg.compile(lambda a, b: a + b)
        report("compiled (1,) add: the call overhead",
               {"funcgrad eager": {"add": lambda: one + one}, "funcgrad compiled": {"add": lambda: add(one, one)}},
               args.rounds, 2000, base="funcgrad eager")


def mlps(args: argparse.Namespace, wanted: set[str]) -> None:
    params, x, y = mlp_bench.data()
    mlp = {"numpy (by hand)": mlp_numpy(params, x, y), "funcgrad eager": mlp_funcgrad(params, x, y, False),
           "funcgrad compiled": lowered_with("c", mlp_funcgrad(params, x, y, True)),
           "fg.compile, NumPy calls": lowered_with("numpy", mlp_funcgrad(params, x, y, True)),
           "jax.jit": mlp_jax(params, x, y)}
    if not args.no_torch_compile:
        try:
            mlp["torch.compile"] = mlp_torch_compile(params, x, y)
        except Exception as exc:  # noqa: BLE001 - a contender that cannot run is left out, with the reason
            print(f"(torch.compile left out: {type(exc).__name__}: {exc})")
    if "W2" in wanted:
        sizes = "-".join(map(str, mlp_bench.SIZES))
        report(f"W2/W4 MLP {sizes}, batch {mlp_bench.BATCH}, ReLU as maximum(x, 0.0)", mlp, args.rounds, 20)
    if "W6" not in wanted:
        return
    report("W6 the MLP as modules, PyTorch-style step",
           {"numpy (by hand)": {"step": mlp_numpy(params, x, y)["step"]},
            "funcgrad eager": mlp_modules(params, x, y, False), "funcgrad compiled": mlp_modules(params, x, y, True)},
           args.rounds, 20)


def gelus(args: argparse.Namespace) -> None:
    g = np.random.default_rng(2).standard_normal(1_000_000).astype(np.float32)
    jax_gelu = gelu_jax(g)
    gelu = {"numpy (by hand)": gelu_numpy(g), "funcgrad eager": gelu_funcgrad(g, False),
            "funcgrad compiled": lowered_with("c", gelu_funcgrad(g, True)),
            "fg.compile, NumPy calls": lowered_with("numpy", gelu_funcgrad(g, True)), "jax.jit": jax_gelu}
    if not args.no_torch_compile:
        try:
            gelu["torch.compile"] = gelu_torch_compile(g)
        except Exception as exc:  # noqa: BLE001 - a contender that cannot run is left out, with the reason
            print(f"(torch.compile left out of W3: {type(exc).__name__}: {exc})")
    # 20 calls a round (10-100 ms): the first calls after the pause run on a cold machine
    report("W3 GELU (tanh form), 1e6 float32 (NumPy by hand allocates a fresh array per operation)", gelu,
           args.rounds, 20, base="jax.jit" if jax_gelu else "numpy (by hand)")


def rnns(args: argparse.Namespace) -> None:
    w, xs = rnn_data()
    report("W5 RNN 50 steps (8x32 state), forward + backward",
           {"numpy (by hand)": rnn_numpy(w, xs), "funcgrad eager": rnn_funcgrad(w, xs, False),
            "funcgrad compiled": lowered_with("c", rnn_funcgrad(w, xs, True)),
            "fg.compile, NumPy calls": lowered_with("numpy", rnn_funcgrad(w, xs, True)),
            "jax.jit": rnn_jax(w, xs)}, args.rounds, 10)
    scan_jax = rnn_scan_jax(w, xs)
    report("W5 as a scan, compiled (fg.scan against jax.lax.scan under jax.jit)",
           {"funcgrad compiled scan": rnn_scan_funcgrad(w, xs), "jax.jit": scan_jax}, args.rounds, 20,
           base="jax.jit" if scan_jax else "funcgrad compiled scan")


if __name__ == "__main__":
    main()
