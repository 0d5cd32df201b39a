"""Generated code is committed and must match the schema files."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_generated_files_are_fresh():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "ember", "codegen", "gen.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ember_never_imports_torch():
    code = "import sys, ember; x = ember.from_numpy(__import__('numpy').ones(3)); x + x; " \
           "sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_import_time_is_small():
    code = "import time; t = time.perf_counter(); import ember; print(time.perf_counter() - t)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # users have .pyc
    subprocess.run([sys.executable, "-c", "import ember"], cwd=ROOT, env=env)
    best = min(float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                                    capture_output=True, text=True).stdout) for _ in range(3))
    assert best < 2.0  # generous: a test must not assert timings; benchmarks report the real figure


def test_generated_code_stays_readable():
    """The generated layer calls shared helpers instead of repeating their bodies: a budget on its
    size and on its line length keeps it a thing people can read and review (issue 9)."""
    gen = os.path.join(ROOT, "ember", "_generated")
    total, long_lines = 0, []
    for name in sorted(os.listdir(gen)):
        if name.endswith(".py"):
            with open(os.path.join(gen, name)) as f:
                for i, line in enumerate(f, 1):
                    total += 1
                    if len(line.rstrip("\n")) > 200:
                        long_lines.append(f"{name}:{i} ({len(line.rstrip())} characters)")
    assert not long_lines, long_lines[:10]
    # 21,500: forward-mode AD added its tangent formula table (one line per op, _generated/forward_ad.py)
    # 21,600: op_db's remaining CPU operators (_safe_softmax, _unsafe_masked_index, special.airy_ai, ...) and
    # angle/polar/complex as operators (bindings, out= variants, nodes); recording an op and saving its own
    # result became one generated line (Node._set_history_saved), which paid for most of them
    assert total <= 21_600, f"ember/_generated has {total} lines (budget 21,600)"
