"""Where the MPI launchers (MPICH's, Open MPI's) put each rank's place in the job, and
torchrun's names for it. A module of its own: ``funcgrad.distributed`` reads it, and the
launcher's entry point ``python -m funcgrad.distributed.rank_env`` must not be imported
before it runs (runpy warns when it is).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LAUNCHER_RANK", "torchrun_env"]

# (torchrun's name, then where MPICH's and Open MPI's launchers put it)
_SOURCES = {
    "RANK": ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"),
    "WORLD_SIZE": ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"),
    "LOCAL_RANK": ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "LOCAL_WORLD_SIZE": ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"),
}


LAUNCHER_RANK = _SOURCES["RANK"]  # set when an MPI launcher started this process


def torchrun_env(environ: Mapping[str, str]) -> dict[str, str]:
    """torchrun's variables, read from the MPI launcher's (those already set are kept)."""
    found = {}
    for name, sources in _SOURCES.items():
        if name in environ:
            continue
        value = next((environ[s] for s in sources if s in environ), None)
        if value is not None:
            found[name] = value
    return found
