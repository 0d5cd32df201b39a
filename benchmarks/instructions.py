"""Instructions per call of one small ember expression, counted with valgrind's callgrind.

Deterministic where wall-clock time is not (2 shared cores drift 10-30% between runs): the count
is collected only inside functools.reduce, which runs the expression `n` times after a warm-up,
and the count of an empty loop is subtracted. Compare two checkouts with the same interpreter:

    python benchmarks/instructions.py 'x[1:3]' --repo /path/to/before --repo /path/to/after

Needs valgrind (`apt-get install valgrind`)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

_CHILD = """
import functools, sys
import ember
x = ember.randn(4, 4)
f = eval("lambda: " + sys.argv[2])
for _ in range(200):
    f()
functools.reduce(lambda a, b: f(), range(int(sys.argv[1])), None)
"""


def count(repo, expr, n):
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=repo)
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
           "--callgrind-out-file=/dev/null", sys.executable, "-c", _CHILD, str(n), expr]
    out = subprocess.run(cmd, env=env, cwd=repo, capture_output=True, text=True).stderr
    m = re.search(r"Collected : (\d+)", out)
    if m is None:
        raise SystemExit(f"callgrind gave no count for {repo}:\n{out[-2000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("expr", help="an expression over the 4x4 float32 tensor x, e.g. 'x[1:3]'")
    ap.add_argument("--repo", action="append", help="checkout(s) to measure (default: this one)")
    ap.add_argument("-n", type=int, default=1000, help="calls counted (default 1000)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    repos = args.repo or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for repo in repos:
        per_call = (count(repo, args.expr, args.n) - count(repo, args.expr, 0)) / args.n
        print(f"{repo}: {args.expr}: {per_call:,.0f} instructions per call")


if __name__ == "__main__":
    main()
