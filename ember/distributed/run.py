"""`python -m ember.distributed.run` (torchrun): start the ranks of a script over MPI.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 4 --hosts node0,node1 train.py

The ranks are started by Open MPI's mpirun (the MPI engine that ember.distributed runs on); each
one gets torchrun's variables: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
MASTER_ADDR, MASTER_PORT (so a torch program using gloo over env:// runs unchanged as well).
SIGINT and SIGTERM are forwarded. When a rank fails, the launcher exits non-zero and prints the
traceback of the rank that failed first.

Several machines: mpirun starts the remote ranks over ssh, so the launcher runs once, on the
first node, with --nnodes and --hosts (or --hostfile); --node-rank other than 0 does nothing.
See docs/distributed.md.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading


def get_args_parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start the ranks of a distributed ember (or torch) script over MPI.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks per node (a number; 'cpu' or 'auto' mean one per CPU core)")
    p.add_argument("--nnodes", default="1", help="number of nodes (the ranks of all nodes are started from node 0)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--hosts", default=None, help="comma-separated host names, one per node (several nodes)")
    p.add_argument("--hostfile", default=None, help="an Open MPI hostfile (several nodes)")
    p.add_argument("--mpirun", default=None, help="the mpirun to use (default: the one on PATH)")
    p.add_argument("--mpirun-args", default="", help="extra arguments for mpirun, as one string")
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun compatibility")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as an executable")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(v):
    if v in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    return int(v)


def mpirun_command(args, nproc, nnodes):
    """The mpirun command line that starts every rank."""
    mpirun = args.mpirun or shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("ember.distributed.run: mpirun not found; install Open MPI (Debian: apt-get install "
                         "openmpi-bin libopenmpi-dev) and mpi4py (pip install mpi4py)")
    world = nproc * nnodes
    cmd = [mpirun, "-n", str(world), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if nnodes > 1:
        if args.hostfile:
            cmd += ["--hostfile", args.hostfile, "--map-by", f"ppr:{nproc}:node"]
        elif args.hosts:
            hosts = args.hosts.split(",")
            if len(hosts) != nnodes:
                raise SystemExit(f"ember.distributed.run: --hosts names {len(hosts)} hosts, --nnodes is {nnodes}")
            cmd += ["--host", ",".join(f"{h}:{nproc}" for h in hosts)]
        else:
            raise SystemExit("ember.distributed.run: --nnodes > 1 needs --hosts or --hostfile (mpirun starts "
                             "the other nodes' ranks over ssh)")
    for var in ("MASTER_ADDR", "MASTER_PORT", "EMBER_DIST_ERROR_DIR", "PYTHONPATH", "OMP_NUM_THREADS",
                "EMBER_CUDA_SIM"):
        if var in os.environ:
            cmd += ["-x", var]
    if args.mpirun_args:
        cmd += args.mpirun_args.split()
    if args.no_python:
        cmd += [args.training_script]
    else:
        cmd += [sys.executable, "-u", "-m", "ember.distributed._entry"] + (["-m"] if args.module else []) + \
            [args.training_script]
    return cmd + list(args.training_script_args)


def _first_failure(d):
    recs = []
    for f in glob.glob(os.path.join(d, "rank*.json")):
        try:
            with open(f) as fh:
                recs.append(json.load(fh))
        except (OSError, ValueError):
            pass
    return min(recs, key=lambda r: r["time"]) if recs else None


_PROCESS_NAME = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]")
_EXIT_CODE = re.compile(r"Exit code:\s*(-?\d+)")
_SIGNAL = re.compile(r"process rank (\d+) with PID .* exited on signal (\d+)")


def _relay(stream, exits):
    """Copy mpirun's stderr through, noting which rank it reports as having exited."""
    rank = None
    for line in stream:
        sys.stderr.write(line)
        m = _PROCESS_NAME.search(line)
        if m:
            rank = int(m.group(1))
        m = _EXIT_CODE.search(line)
        if m and rank is not None:
            exits.append((rank, f"exited with code {m.group(1)}"))
            rank = None
        m = _SIGNAL.search(line)
        if m:
            exits.append((int(m.group(1)), f"was killed by signal {m.group(2)}"))
    sys.stderr.flush()


def run(args):
    nproc, nnodes = _nproc(args.nproc_per_node), int(str(args.nnodes).split(":")[-1])
    if nnodes > 1 and args.node_rank != 0:
        print(f"ember.distributed.run: node {args.node_rank}: the ranks of every node are started by the launcher "
              "on node 0 (mpirun over ssh); nothing to do here", file=sys.stderr)
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    errdir = tempfile.mkdtemp(prefix="ember-dist-")
    os.environ["EMBER_DIST_ERROR_DIR"] = errdir
    cmd = mpirun_command(args, nproc, nnodes)
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
    exits = []  # (rank, how) from mpirun's report of a rank that exited
    reader = threading.Thread(target=_relay, args=(proc.stderr, exits), daemon=True)
    reader.start()

    def forward(sig, frame):
        proc.send_signal(sig)
    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    reader.join(5)
    if rc != 0:
        rec = _first_failure(errdir)
        if rec is not None:
            print(f"ember.distributed.run: rank {rec['rank']} (local_rank {rec['local_rank']}) failed first:\n"
                  f"{rec['traceback']}", file=sys.stderr, end="")
        elif exits:
            rank, how = exits[0]
            print(f"ember.distributed.run: rank {rank} {how} (without a Python traceback)", file=sys.stderr)
        else:
            print(f"ember.distributed.run: the ranks exited with code {rc}", file=sys.stderr)
    shutil.rmtree(errdir, ignore_errors=True)
    return rc


def main(argv=None):
    args = get_args_parser().parse_args(argv)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
