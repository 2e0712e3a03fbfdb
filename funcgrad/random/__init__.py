"""``fg.random``: explicit, splittable random keys (JAX's ``jax.random``, in ``keys.py``),
and the generators PyTorch-style code draws from (``generator.py``: ``fg.Generator``,
``fg.manual_seed``, ``fg.rand`` ...)."""

from __future__ import annotations

from .generator import Generator, default_generator
from .keys import (
                   Key,
                   PRNGKey,
                   bernoulli,
                   bits,
                   categorical,
                   choice,
                   fold_in,
                   gumbel,
                   key,
                   key_data,
                   normal,
                   permutation,
                   randint,
                   split,
                   truncated_normal,
                   uniform,
                   wrap_key_data,
)

__all__ = ["Key", "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform", "normal",
           "truncated_normal", "randint", "bernoulli", "categorical", "gumbel", "permutation", "choice", "Generator",
           "default_generator"]
