"""A/B: the benchmarks of two checkouts, interleaved in one session, as ratios to torch.

    python benchmarks/ab.py /path/to/before /path/to/after [--rounds 3] [--only tiny,autograd,train]

Each round runs `benchmarks/run.py` and `benchmarks/train_steps.py` of the "before" checkout, then
of the "after" one (each script imports the ember beside it), so machine drift hits both alike.
Every row's ember/torch ratio is taken from its own process (torch runs in the same process and
absorbs the drift); the table gives the median ratio over rounds for A and B and B/A. B/A below
1.05 is "within 5%".
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

_UNIT = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _num(cell, unit=1.0):
    m = re.match(r"\s*([\d.]+)\s*(µs|ms|s)?\s*$", cell)
    if not m:
        return None
    return float(m.group(1)) * (_UNIT[m.group(2)] if m.group(2) else unit)


def parse_run(text):
    """run.py's tables -> {section/row: ember/torch} (tiny ops, autograd graphs)."""
    rows, section = {}, None
    for line in text.splitlines():
        if line.startswith("### Tiny-op"):
            section = "tiny"
        elif line.startswith("### Autograd"):
            section = "autograd"
        elif line.startswith("### "):
            section = None
        elif section and line.startswith("| ") and not line.startswith(("| op", "| graph")):
            cells = [c.strip() for c in line.strip("|").split("|")]
            e, t = _num(cells[1]), _num(cells[2])
            if e and t:
                rows[f"{section}: {cells[0]}"] = e / t
        if line.startswith("`import ember`"):
            m = re.search(r"`import ember`: ([\d.]+) s", line)
            if m:
                rows["import ember (s)"] = float(m.group(1))
    return rows


def parse_train(text):
    """train_steps.py's table -> {train: model: ember/torch}."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| model"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) >= 3:
                t, e = _num(cells[1]), _num(cells[2])
                if e and t:
                    rows[f"train: {cells[0]}"] = e / t
    return rows


def run(root, script, args=()):
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.run([sys.executable, os.path.join(root, "benchmarks", script), *args],
                       capture_output=True, text=True, cwd=root, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{script} failed in {root}:\n{p.stderr[-3000:]}")
    return p.stdout


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="tiny,autograd,train,import")
    args = p.parse_args(argv)
    want = set(args.only.split(","))
    results = {"A": {}, "B": {}}
    for r in range(args.rounds):
        for tag, root in (("A", args.before), ("B", args.after)):
            rows = {}
            if want & {"tiny", "autograd", "import"}:
                rows.update(parse_run(run(root, "run.py")))
            if "train" in want:
                rows.update(parse_train(run(root, "train_steps.py", ["--min-time", "1.0"])))
            for k, v in rows.items():
                if k.split(":")[0].split(" ")[0] in want or k.startswith("import") and "import" in want:
                    results[tag].setdefault(k, []).append(v)
            print(f"round {r + 1}/{args.rounds} {tag} done", file=sys.stderr, flush=True)
    print(f"A = {args.before}\nB = {args.after}\n{args.rounds} interleaved rounds; "
          "ember/torch ratios (import: seconds), median over rounds\n")
    print("| benchmark | A | B | B/A |")
    print("|---|---:|---:|---:|")
    for k in results["A"]:
        a = statistics.median(results["A"][k])
        b = statistics.median(results["B"].get(k, [float("nan")]))
        print(f"| {k} | {a:.3f} | {b:.3f} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
