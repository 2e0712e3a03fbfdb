"""``python -m funcgrad.distributed.rank_env [-m] script [args]``: what each rank of a job
started by ``funcgrad.distributed.run`` runs. It sets torchrun's environment variables
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``) from the MPI launcher's
(MPICH's ``PMI_*``/``MPI_LOCAL*``, Open MPI's ``OMPI_COMM_WORLD_*``), so a ported script that
reads ``os.environ["LOCAL_RANK"]`` to pick its GPU runs unchanged, then runs the script as
``__main__``.
"""

from __future__ import annotations

import os
import runpy
import sys

from .launcher_env import LAUNCHER_RANK, torchrun_env

__all__ = ["LAUNCHER_RANK", "torchrun_env", "main"]

def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    module = bool(args) and args[0] == "-m"
    if module:
        args = args[1:]
    if not args:
        raise SystemExit("usage: python -m funcgrad.distributed.rank_env [-m] script [args]")
    os.environ.update(torchrun_env(os.environ))
    sys.argv = args
    if module:
        runpy.run_module(args[0], run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
