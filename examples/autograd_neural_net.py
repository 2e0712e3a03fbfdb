"""HIPS autograd's ``examples/neural_net.py`` (MIT licence) ported to funcgrad, on
scikit-learn's digits (8x8 images: 64 inputs) in place of the MNIST download.

The port's edits, all of them: the imports (``funcgrad`` for ``autograd``: ``funcgrad`` as
``np``, ``funcgrad.scipy.special``, ``funcgrad.misc.flatten``, ``funcgrad.misc.optimizers``,
and NumPy's own ``numpy.random``, which autograd re-exports); ``load_digits`` for
``load_mnist``, 64 inputs in ``layer_sizes`` for MNIST's 784; the epoch count from the
command line. Run: ``python examples/autograd_neural_net.py [epochs]``.
"""

import sys

import funcgrad as np
import numpy.random as npr
from funcgrad.scipy.special import logsumexp
from funcgrad import grad
from funcgrad.misc.flatten import flatten
from funcgrad.misc.optimizers import adam


def load_digits():
    """scikit-learn's digits as ``load_mnist``'s arrays: N, then train images, train labels
    (one-hot), test images, test labels; images flattened and scaled to [0, 1]."""
    import numpy
    from sklearn import datasets

    data = datasets.load_digits()
    images = data.images.reshape(len(data.images), -1) / 16.0
    labels = numpy.eye(10)[data.target]
    cut = int(0.8 * len(images))
    return cut, images[:cut], labels[:cut], images[cut:], labels[cut:]


def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):
    """Build a list of (weights, biases) tuples,
    one for each layer in the net."""
    return [
        (
            scale * rs.randn(m, n),  # weight matrix
            scale * rs.randn(n),
        )  # bias vector
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def neural_net_predict(params, inputs):
    """Implements a deep neural network for classification.
    params is a list of (weights, bias) tuples.
    inputs is an (N x D) matrix.
    returns normalized class log-probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """Computes l2 norm of params by flattening them into a vector."""
    flattened, _ = flatten(params)
    return np.dot(flattened, flattened)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def accuracy(params, inputs, targets):
    target_class = np.argmax(targets, axis=1)
    predicted_class = np.argmax(neural_net_predict(params, inputs), axis=1)
    return np.mean(predicted_class == target_class)


if __name__ == "__main__":
    # Model parameters
    layer_sizes = [64, 200, 100, 10]
    L2_reg = 1.0

    # Training parameters
    param_scale = 0.1
    batch_size = 256
    num_epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    step_size = 0.001

    print("Loading training data...")
    N, train_images, train_labels, test_images, test_labels = load_digits()

    init_params = init_random_params(param_scale, layer_sizes)

    num_batches = int(np.ceil(len(train_images) / batch_size))

    def batch_indices(iter):
        idx = iter % num_batches
        return slice(idx * batch_size, (idx + 1) * batch_size)

    # Define training objective
    def objective(params, iter):
        idx = batch_indices(iter)
        return -log_posterior(params, train_images[idx], train_labels[idx], L2_reg)

    # Get gradient of objective using autograd.
    objective_grad = grad(objective)

    print("     Epoch     |    Train accuracy  |       Test accuracy  ")

    def print_perf(params, iter, gradient):
        if iter % num_batches == 0:
            train_acc = accuracy(params, train_images, train_labels)
            test_acc = accuracy(params, test_images, test_labels)
            print(f"{iter // num_batches:15}|{train_acc:20}|{test_acc:20}")

    # The optimizers provided can optimize lists, tuples, or dicts of parameters.
    optimized_params = adam(
        objective_grad,
        init_params,
        step_size=step_size,
        num_iters=num_epochs * num_batches,
        callback=print_perf,
    )
