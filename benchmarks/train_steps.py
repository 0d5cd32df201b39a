"""Training-step time, ember vs torch, same process, same shapes. Prints a markdown table.

    python benchmarks/train_steps.py            # MLP, digits CNN, GPT
    python benchmarks/train_steps.py --demo     # also run examples/digits_cnn.py: wall time, accuracy

One step = forward, loss, zero_grad, backward, optimizer step (float32, torch on one thread).
Times are medians over repeated steps on a noisy machine: read the ratios, not the digits.
"""
import argparse
import importlib.util
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


def _char_gpt():
    spec = importlib.util.spec_from_file_location(
        "char_gpt_example", os.path.join(ROOT, "examples", "char_gpt.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mlp_case(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))
    return model, opt, lambda: lib.nn.functional.cross_entropy(model(x), y)


def cnn_case(lib, rng):
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    opt = lib.optim.Adam(model.parameters(), lr=3e-3)
    x = lib.tensor(rng.standard_normal((64, 1, 8, 8)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))
    return model, opt, lambda: lib.nn.functional.cross_entropy(model(x), y)


def gpt_case(lib, rng):
    mod = _char_gpt()
    vocab, block = 65, 64
    model = mod.build_gpt(lib)(vocab, block, n_layer=4, n_embd=128, n_head=4)
    opt = lib.optim.AdamW(model.param_groups(0.1), lr=3e-4)
    x = lib.tensor(rng.integers(0, vocab, (16, block)))
    y = lib.tensor(rng.integers(0, vocab, (16, block)))
    return model, opt, lambda: model(x, y)[1]


CASES = [
    ("MLP 784-128-10, batch 64, SGD", mlp_case),
    ("digits CNN, batch 64, Adam", cnn_case),
    ("GPT 4 layers, width 128, batch 16, block 64, AdamW", gpt_case),
]


def step_time(lib, make, seed, min_time, max_steps):
    model, opt, loss_fn = make(lib, np.random.default_rng(seed))

    def step():
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()                                  # warm-up: caches, optimizer state
    times = []
    t_end = time.perf_counter() + min_time
    while len(times) < 3 or (time.perf_counter() < t_end and len(times) < max_steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def run_demo():
    cmd = [sys.executable, os.path.join(ROOT, "examples", "digits_cnn.py"), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    acc = re.search(r"test accuracy: ([\d.]+)%", proc.stdout)
    train = re.search(r"training time: ([\d.]+) s", proc.stdout)
    print("\n`python examples/digits_cnn.py` (ember): "
          f"exit code {proc.returncode}, test accuracy "
          f"{acc.group(1) + '%' if acc else '?'}, training {train.group(1) + ' s' if train else '?'}, "
          f"wall time {wall:.1f} s (process, including imports)")
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
    return proc.returncode


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--demo", action="store_true", help="also time examples/digits_cnn.py")
    p.add_argument("--min-time", type=float, default=2.0, help="seconds per case and library")
    p.add_argument("--max-steps", type=int, default=50)
    p.add_argument("--only", default=None, help="run only cases whose name contains this")
    args = p.parse_args(argv)

    print(f"Training steps, median per step ({platform.machine()}, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, torch {torch.__version__} "
          f"on 1 thread)\n")
    print("| model | torch | ember | ember / torch |")
    print("|---|---:|---:|---:|")
    for name, make in CASES:
        if args.only and args.only.lower() not in name.lower():
            continue
        t = step_time(torch, make, 0, args.min_time, args.max_steps)
        try:
            e = step_time(ember, make, 0, args.min_time, args.max_steps)
            print(f"| {name} | {fmt(t)} | {fmt(e)} | {e / t:.1f}x |", flush=True)
        except Exception as exc:   # a piece of ember missing: say so in the table
            print(f"| {name} | {fmt(t)} | n/a ({type(exc).__name__}: {str(exc)[:60]}) | |",
                  flush=True)
    rc = 0
    if args.demo:
        rc = run_demo()
    return rc


if __name__ == "__main__":
    sys.exit(main())
