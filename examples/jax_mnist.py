"""JAX's ``examples/mnist_classifier_fromscratch.py`` (Apache 2.0) ported to funcgrad, on
scikit-learn's digits (8x8 images: 64 inputs) in place of the MNIST download.

The port's edits, all of them: the imports (``funcgrad`` for ``jax``: ``jit``, ``grad``,
``funcgrad.scipy.special.logsumexp``, ``funcgrad`` as ``jnp``); ``digits()`` for
``datasets.mnist()``, and 64 inputs in ``layer_sizes`` for MNIST's 784; the epoch count
from the command line. Run: ``python examples/jax_mnist.py [epochs]``.
"""


import sys
import time

import numpy.random as npr

from funcgrad import jit, grad
from funcgrad.scipy.special import logsumexp
import funcgrad as jnp


def digits():
  """scikit-learn's digits as the MNIST example's arrays: images flattened and scaled to
  [0, 1], labels one-hot, float32; the first 80% train, the rest test."""
  import numpy as np
  from sklearn.datasets import load_digits

  data = load_digits()
  images = (data.images.reshape(len(data.images), -1) / 16.0).astype(np.float32)
  labels = np.eye(10, dtype=np.float32)[data.target]
  cut = int(0.8 * len(images))
  return images[:cut], labels[:cut], images[cut:], labels[cut:]


def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
  return [(scale * rng.randn(m, n), scale * rng.randn(n))
          for m, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

def predict(params, inputs):
  activations = inputs
  for w, b in params[:-1]:
    outputs = jnp.dot(activations, w) + b
    activations = jnp.tanh(outputs)

  final_w, final_b = params[-1]
  logits = jnp.dot(activations, final_w) + final_b
  return logits - logsumexp(logits, axis=1, keepdims=True)

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)


if __name__ == "__main__":
  layer_sizes = [64, 1024, 1024, 10]
  param_scale = 0.1
  step_size = 0.001
  num_epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
  batch_size = 128

  train_images, train_labels, test_images, test_labels = digits()
  num_train = train_images.shape[0]
  num_complete_batches, leftover = divmod(num_train, batch_size)
  num_batches = num_complete_batches + bool(leftover)

  def data_stream():
    rng = npr.RandomState(0)
    while True:
      perm = rng.permutation(num_train)
      for i in range(num_batches):
        batch_idx = perm[i * batch_size:(i + 1) * batch_size]
        yield train_images[batch_idx], train_labels[batch_idx]
  batches = data_stream()

  @jit
  def update(params, batch):
    grads = grad(loss)(params, batch)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads)]

  params = init_random_params(param_scale, layer_sizes)
  for epoch in range(num_epochs):
    start_time = time.time()
    for _ in range(num_batches):
      params = update(params, next(batches))
    epoch_time = time.time() - start_time

    train_acc = accuracy(params, (train_images, train_labels))
    test_acc = accuracy(params, (test_images, test_labels))
    print("Epoch {} in {:0.2f} sec".format(epoch, epoch_time))
    print("Training set accuracy {}".format(train_acc))
    print("Test set accuracy {}".format(test_acc))
