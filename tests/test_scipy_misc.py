"""fg.scipy.special against SciPy (values, finite-difference gradients) and fg.misc
(autograd's flatten and loop optimizers) against autograd's own."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.testing import check_grads

special = fg.scipy.special
RNG = np.random.default_rng(0)


def test_special_functions_match_scipy() -> None:
    sp = pytest.importorskip("scipy.special")
    x = RNG.standard_normal((3, 4))
    p = RNG.uniform(0.05, 0.95, (3, 4))
    b = RNG.standard_normal((3, 4))
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            np.testing.assert_allclose(special.logsumexp(fg.asarray(x), axis=axis, keepdims=keepdims).numpy(),
                                       sp.logsumexp(x, axis=axis, keepdims=keepdims), rtol=1e-12)
            got, sign = special.logsumexp(fg.asarray(x), axis=axis, b=fg.asarray(b), keepdims=keepdims,
                                          return_sign=True)
            want, want_sign = sp.logsumexp(x, axis=axis, b=b, keepdims=keepdims, return_sign=True)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
            np.testing.assert_array_equal(sign.numpy(), want_sign)
    pairs = [(special.expit(fg.asarray(x)), sp.expit(x)), (special.logit(fg.asarray(p)), sp.logit(p)),
             (special.erf(fg.asarray(x)), sp.erf(x)), (special.erfc(fg.asarray(x)), sp.erfc(x)),
             (special.xlogy(fg.asarray(np.r_[0.0, 2.0]), fg.asarray(np.r_[0.0, 3.0])), sp.xlogy([0, 2.0], [0, 3.0])),
             (special.xlog1py(fg.asarray(np.r_[0.0, 2.0]), fg.asarray(np.r_[-1.0, 3.0])),
              sp.xlog1py([0, 2.0], [-1.0, 3.0])),
             (special.softmax(fg.asarray(x), axis=1), sp.softmax(x, axis=1)), (special.softmax(fg.asarray(x)),
                                                                               sp.softmax(x)),
             (special.log_softmax(fg.asarray(x), axis=0), sp.log_softmax(x, axis=0))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


def test_special_functions_differentiate() -> None:
    x = fg.asarray(RNG.standard_normal((2, 3)))
    p = fg.asarray(RNG.uniform(0.1, 0.9, (2, 3)))
    check_grads(lambda v: special.logsumexp(v, axis=1), [x], order=2)
    check_grads(lambda v: special.logsumexp(v, b=fg.asarray([[1.0, 2.0, 0.5]])), [x], order=2)
    check_grads(special.logit, [p], order=2)
    check_grads(lambda v: special.xlogy(v, p), [x], order=2)
    check_grads(lambda v: special.softmax(v, axis=0), [x], order=2)
    big = fg.asarray([1000.0, 1000.0], dtype=fg.float64)  # no overflow, a finite gradient
    assert abs(float(special.logsumexp(big)) - (1000 + np.log(2))) < 1e-9
    np.testing.assert_allclose(fg.grad(special.logsumexp)(big).numpy(), [0.5, 0.5], rtol=1e-12)


def test_flatten_round_trips_and_differentiates() -> None:
    tree = {"w": fg.ones((2, 3)), "b": (fg.zeros(3), fg.asarray(2.0)), "n": [fg.arange(2.0)]}
    vector, unflatten = fg.misc.flatten.flatten(tree)
    assert vector.shape == (6 + 3 + 1 + 2,)
    back = unflatten(vector * 2)
    assert back["w"].tolist() == [[2.0] * 3] * 2 and back["b"][1].tolist() == 4.0
    g = fg.grad(lambda t: fg.misc.flatten.flatten(t)[0].sum())(tree)
    assert g["w"].tolist() == [[1.0] * 3] * 2
    with pytest.raises(ValueError, match="expected a vector of 12 values"):
        unflatten(fg.ones(3))


@pytest.mark.parametrize("name", ["sgd", "rmsprop", "adam"])
def test_loop_optimizers_match_autograds(name) -> None:
    ag_opt = pytest.importorskip("autograd.misc.optimizers")
    target = RNG.standard_normal(5)

    def grad(x, i):
        return [2 * (x[0] - target) * (i + 1), 3 * x[1]]

    x0 = [np.zeros(5), np.ones(2)]
    ours = getattr(fg.misc.optimizers, name)(lambda x, i: grad([v.numpy() for v in x], i), x0, num_iters=7)
    theirs = getattr(ag_opt, name)(grad, x0, num_iters=7)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12)
