"""python -m ember.report [-o PATH] [--no-widgets] [--fast] [-q] SCRIPT [args...]: see ember.report."""
import argparse
import contextlib
import os
import sys

from ember.report import DEFAULT_PATH, run_script


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.report",
                                description="Run SCRIPT under ember.profiler and write one self-contained HTML "
                                            "report (op table, pictures, Chrome trace, memory, environment).")
    p.add_argument("-o", "--output", default=DEFAULT_PATH, help=f"where to write the report (default ./{DEFAULT_PATH})")
    p.add_argument("--no-widgets", action="store_true", help="leave the four ember.viz pictures out")
    p.add_argument("--fast", action="store_true", help="measure the pictures briefly (no compiled row)")
    p.add_argument("-q", "--quiet", action="store_true", help="hide the script's standard output")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    ns = p.parse_args(argv)
    with open(os.devnull, "w") if ns.quiet else contextlib.nullcontext(sys.stdout) as out, \
            contextlib.redirect_stdout(out):
        path, code = run_script(ns.script, ns.args, ns.output, widgets=not ns.no_widgets, fast=ns.fast)
    print(path)
    return code


if __name__ == "__main__":
    sys.exit(main())
