"""Mixed-precision training on scikit-learn's digits: the two loops of PyTorch's AMP recipe.

* bfloat16 (the CPU's low dtype): ``fg.autocast`` alone. bfloat16 keeps float32's exponent
  range, so gradients do not underflow and no scaler is needed.
* float16: ``fg.autocast(dtype=fg.float16)`` with ``fg.amp.GradScaler``, which scales the
  loss up before ``backward`` and the gradients down before the step, skipping a step
  whose gradients overflowed.

    pip install 'funcgrad[examples]' && python examples/digits_mixed_precision.py [epochs] [bfloat16|float16]
"""

import sys

import numpy as np
from sklearn.datasets import load_digits

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional


def train(epochs: int = 20, low: str = "bfloat16") -> float:
    data = load_digits()
    x, y = (data.data / 16.0).astype(np.float32), data.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train_idx, test_idx = order[:1400], order[1400:]

    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))  # float32 parameters
    opt = fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    dtype = getattr(fg, low)
    scaler = fg.amp.GradScaler(enabled=dtype == fg.float16)  # (a disabled scaler passes everything through)
    rng = np.random.default_rng(1)
    for epoch in range(epochs):
        for batch in np.array_split(rng.permutation(train_idx), len(train_idx) // 64):
            opt.zero_grad()
            with fg.autocast("cpu", dtype=dtype):
                loss = F.cross_entropy(model(fg.asarray(x[batch])), fg.asarray(y[batch]))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f} (scale {scaler.get_scale():g})")

    with fg.inference_mode(), fg.autocast("cpu", dtype=dtype):
        pred = fg.argmax(model(fg.asarray(x[test_idx])), axis=1)
    accuracy = float((pred == fg.asarray(y[test_idx])).astype(fg.float32).mean())
    print(f"test accuracy ({low}): {100 * accuracy:.1f}%")
    return accuracy


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 20, sys.argv[2] if len(sys.argv) > 2 else "bfloat16")
