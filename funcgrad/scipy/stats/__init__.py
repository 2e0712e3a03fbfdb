"""``fg.scipy.stats``: the normal distributions of ``scipy.stats`` that ``jax.scipy.stats``
and ``autograd.scipy.stats`` provide, differentiable in every argument, each a module as in
JAX and autograd (``import funcgrad.scipy.stats.norm as norm``): ``norm`` (``pdf``,
``logpdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``) and ``multivariate_normal`` (``pdf``,
``logpdf``), with SciPy's signatures."""

from __future__ import annotations

from . import multivariate_normal, norm

__all__ = ["norm", "multivariate_normal"]
