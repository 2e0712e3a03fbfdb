"""``fg.random``: explicit, splittable random keys (JAX's ``jax.random``: the keys, bits and
uniform values in ``keys.py``, the distributions in ``distributions.py``), and the
generators PyTorch-style code draws from (``generator.py``: ``fg.Generator``,
``fg.manual_seed``, ``fg.rand`` ...)."""

from __future__ import annotations

from .distributions import (
                            bernoulli,
                            beta,
                            categorical,
                            cauchy,
                            choice,
                            dirichlet,
                            exponential,
                            gamma,
                            gumbel,
                            laplace,
                            loggamma,
                            logistic,
                            multivariate_normal,
                            normal,
                            orthogonal,
                            permutation,
                            poisson,
                            rademacher,
                            randint,
                            t,
                            truncated_normal,
)
from .generator import Generator, default_generator
from .keys import Key, PRNGKey, bits, fold_in, key, key_data, split, uniform, wrap_key_data

__all__ = ["Key", "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform", "normal",
           "truncated_normal", "randint", "bernoulli", "categorical", "gumbel", "permutation", "choice",
           "exponential", "laplace", "logistic", "cauchy", "rademacher", "gamma", "loggamma", "beta", "dirichlet", "t",
           "poisson", "multivariate_normal", "orthogonal", "Generator",
           "default_generator"]

# The reference sections of the functions whose docstrings carry a summary alone.
from . import reference_docs as _reference_docs  # noqa: E402

for _name in _reference_docs.RANDOM:
    globals()[_name].__doc__ = _reference_docs.random_doc(_name, globals()[_name])
del _name
