"""A small CNN on scikit-learn's 8x8 digits: Conv2d and MaxPool2d are strided views
plus one im2col copy and a matmul each.

    pip install 'funcgrad[examples]' && python examples/digits_cnn.py [epochs]
"""

import sys

import numpy as np
from sklearn.datasets import load_digits

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 10

data = load_digits()
x = (data.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
y = data.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x))
train, test = order[:1400], order[1400:]

fg.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
opt = fg.optim.Adam(model.parameters(), lr=3e-3)
rng = np.random.default_rng(1)
for epoch in range(epochs):
    for batch in np.array_split(rng.permutation(train), len(train) // 64):
        opt.zero_grad()
        loss = F.cross_entropy(model(fg.asarray(x[batch])), fg.asarray(y[batch]))
        loss.backward()
        opt.step()
    print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

with fg.no_grad():
    pred = fg.argmax(model(fg.asarray(x[test])), axis=1)
print(f"test accuracy: {100 * float((pred == fg.asarray(y[test])).astype(fg.float32).mean()):.1f}%")
