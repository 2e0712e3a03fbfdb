"""Gradient accumulation: several small backward passes, one optimizer step.

Gradients accumulate into .grad across backward() calls (as in PyTorch), so
dividing each micro-batch loss by the number of micro-batches gives the same
update as one large batch. The script checks that.

    python examples/gradient_accumulation.py
"""

import numpy as np

import funcgrad as fg

nn, F = fg.nn, fg.nn.functional
rng = np.random.default_rng(0)
x = fg.asarray(rng.standard_normal((32, 8)).astype(np.float32))
y = fg.asarray(rng.integers(0, 3, 32))


def make():
    fg.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))


big, small = make(), make()
opt_big = fg.optim.SGD(big.parameters(), lr=0.1)
opt_small = fg.optim.SGD(small.parameters(), lr=0.1)

opt_big.zero_grad()
F.cross_entropy(big(x), y).backward()
opt_big.step()

micro = 4
opt_small.zero_grad()
for xb, yb in zip(x.chunk(micro), y.chunk(micro)):   # 4 pieces (x.split(8): pieces of 8)
    (F.cross_entropy(small(xb), yb) / micro).backward()   # accumulates into .grad
opt_small.step()

for (name, a), (_, b) in zip(big.named_parameters(), small.named_parameters()):
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-6), name
print("one step on 32 examples == 4 accumulated micro-batches of 8: parameters agree")
