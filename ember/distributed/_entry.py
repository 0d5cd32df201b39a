"""One rank of `python -m ember.distributed.run`: started by mpirun, it sets torchrun's variables
from MPI's (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK) and runs the script as
__main__. An uncaught exception is also written to the launcher's error directory, so that the
launcher can name the rank that failed first. Imports nothing of ember (the script may be torch's)."""
import json
import os
import runpy
import sys
import time
import traceback


def _env(*names, default=None):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return v
    return default


def main():
    rank = _env("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", default="0")
    size = _env("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", default="1")
    local = _env("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", default="0")
    local_size = _env("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", default=size)
    os.environ.update(RANK=rank, WORLD_SIZE=size, LOCAL_RANK=local, LOCAL_WORLD_SIZE=local_size,
                      GROUP_RANK=str(int(rank) // max(int(local_size), 1)))
    args = sys.argv[1:]
    as_module = args and args[0] == "-m"
    if as_module:
        args = args[1:]
    target, rest = args[0], args[1:]
    sys.argv = [target] + rest
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            _record(rank, local, f"SystemExit: {e.code}\n")
        raise
    except BaseException:
        _record(rank, local, traceback.format_exc())
        raise


def _record(rank, local, text):
    d = os.environ.get("EMBER_DIST_ERROR_DIR")
    if not d:
        return
    try:
        with open(os.path.join(d, f"rank{rank}.json"), "w") as f:
            json.dump({"rank": int(rank), "local_rank": int(local), "time": time.time(), "traceback": text}, f)
    except OSError:
        pass


if __name__ == "__main__":
    main()
