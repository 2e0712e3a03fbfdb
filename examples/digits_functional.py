"""The same model trained in the functional style: fg.value_and_grad over functional_call.

    pip install 'funcgrad[examples]' && python examples/digits_functional.py [epochs]
"""

import sys

import numpy as np
from sklearn.datasets import load_digits

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20

data = load_digits()
x, y = (data.data / 16.0).astype(np.float32), data.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x))
train, test = order[:1400], order[1400:]

fg.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def loss_fn(params, xb, yb):
    return F.cross_entropy(nn.functional_call(model, params, xb), yb)


step = fg.value_and_grad(loss_fn)
opt = fg.optim.Adam(model.named_parameters(), lr=3e-3)
rng = np.random.default_rng(1)
for epoch in range(epochs):
    for batch in np.array_split(rng.permutation(train), len(train) // 64):
        loss, grads = step(dict(model.named_parameters()), fg.asarray(x[batch]), fg.asarray(y[batch]))
        opt.step(grads)
    print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

pred = fg.argmax(model(fg.asarray(x[test])), axis=1)
print(f"test accuracy: {100 * float((pred == fg.asarray(y[test])).astype(fg.float32).mean()):.1f}%")
print(fg.trace(loss_fn)(dict(model.named_parameters()), fg.asarray(x[:8]), fg.asarray(y[:8])))
