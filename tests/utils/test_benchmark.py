"""ember.utils.benchmark against torch.utils.benchmark.

Measurements built from the same raw times must print the same (repr and Compare tables, byte for
byte, colours and warnings included): the statistics, unit choice and significant-figure trimming
follow torch's float32/float64 arithmetic. Real timings differ, so for Timer runs the fields and the
layout are compared with the numbers masked.
"""
import re

import numpy as np
import pytest
import torch
import torch.utils.benchmark as tb

import ember
import ember.utils.benchmark as eb


def _spec(lib, **kw):
    kw.setdefault("stmt", "x + y")
    kw.setdefault("setup", "pass")
    return lib.TaskSpec(**kw)


def _pair(raw_times, number_per_run=10, **kw):
    return (eb.Measurement(number_per_run, list(raw_times), _spec(eb, **kw)),
            tb.Measurement(number_per_run, list(raw_times), _spec(tb, **kw)))


def _body(m):
    """repr without the first line (the object's class path and address)."""
    first, _, rest = repr(m).partition("\n")
    assert first.startswith(f"<{type(m).__module__}.Measurement object at 0x")
    return rest


TIME_SETS = {
    "one": [3.2e-5],
    "two": [1.0e-5, 1.2e-5],
    "three": [2e-3, 2.1e-3, 2.05e-3],
    "four": [5.0e-7, 5.1e-7, 5.3e-7, 4.9e-7],
    "tight_ns": list(np.linspace(4.1e-7, 4.15e-7, 40)),
    "noisy_us": [1e-4, 1.1e-4, 0.9e-4, 1.6e-4, 2.5e-4, 1e-4, 1.05e-4, 0.95e-4],
    "gross_ms": [1e-2, 3e-2, 1.5e-2, 4e-2, 1e-2, 2e-2],
    "seconds": [12.0, 12.5, 11.8, 12.2, 13.0],
    "fluct": [1.0, 1.0, 1.15, 1.15, 1.0, 1.15, 1.0, 1.15],
}


@pytest.mark.parametrize("name", sorted(TIME_SETS))
@pytest.mark.parametrize("number_per_run", [1, 100])
def test_measurement_statistics_and_repr(name, number_per_run):
    e, t = _pair(TIME_SETS[name], number_per_run, label="add", description="4x8", sub_label="float")
    assert e.times == t.times
    assert e.median == pytest.approx(t.median, rel=1e-12)
    assert e.mean == pytest.approx(t.mean, rel=1e-12)
    assert e.iqr == pytest.approx(t.iqr, rel=1e-9, abs=1e-18)
    assert e.significant_figures == t.significant_figures
    assert e.has_warnings == t.has_warnings
    assert e.meets_confidence(0.05) == t.meets_confidence(0.05)
    assert _body(e) == _body(t)
    # TaskSpec fields are forwarded, as torch's __getattr__ does
    for f in ("label", "sub_label", "description", "num_threads", "stmt", "setup", "env", "title", "as_row_name"):
        assert getattr(e, f) == getattr(t, f), f


@pytest.mark.parametrize("seed", range(6))
def test_measurement_random_times(seed):
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-8, 1)
    times = list(scale * rng.lognormal(0, rng.uniform(0.01, 0.5), rng.integers(1, 60)))
    e, t = _pair(times, int(rng.integers(1, 1000)))
    assert e.significant_figures == t.significant_figures
    assert _body(e) == _body(t)


SPECS = [
    dict(stmt="x + y"),
    dict(stmt="x + y", setup="x = torch.ones(3)"),
    dict(stmt="for _ in range(3):\n    x + y", setup="x = 1\ny = 2", sub_label="loop"),
    dict(stmt="x + y", label="add", sub_label="int", description="n=4", num_threads=4),
    dict(stmt="x\ny", description="multi\nline"),
]


@pytest.mark.parametrize("kw", SPECS)
def test_taskspec_summaries(kw):
    e, t = _pair([1e-6, 1.1e-6, 1.05e-6, 1.02e-6], **kw)
    assert e.task_spec.title == t.task_spec.title
    assert e.task_spec.setup_str() == t.task_spec.setup_str()
    assert e.task_spec.summarize() == t.task_spec.summarize()
    assert _body(e) == _body(t)


@pytest.mark.parametrize("x", [3.14159, 0.000123456, 98765.4321, 1.0, 0.5, 999.96, 1e-9, 2.5e-7, 0.3361170605456604])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", [float, np.float64, np.float32])
def test_helpers(x, n, kind):
    # torch.tensor(x) is float32 for a Python float but keeps a NumPy float's dtype: so do these
    x = kind(x)
    assert eb.trim_sigfig(x, n) == tb.trim_sigfig(x, n)
    assert eb.select_unit(x) == tb.select_unit(x)
    for u in ("ns", "us", "ms", "s"):
        assert eb.unit_to_english(u) == tb.unit_to_english(u)
    assert eb.ordered_unique([3, 1, 3, 2, 1]) == tb.ordered_unique([3, 1, 3, 2, 1])


def test_merge():
    spec_kw = dict(stmt="a", label="L")
    es = [eb.Measurement(n, [1e-3 * n, 1.1e-3 * n], _spec(eb, **spec_kw), metadata={"k": 1}) for n in (1, 10)]
    ts = [tb.Measurement(n, [1e-3 * n, 1.1e-3 * n], _spec(tb, **spec_kw), metadata={"k": 1}) for n in (1, 10)]
    es.append(eb.Measurement(1, [5e-3], _spec(eb, stmt="b", label="L")))
    ts.append(tb.Measurement(1, [5e-3], _spec(tb, stmt="b", label="L")))
    em, tm = eb.Measurement.merge(es), tb.Measurement.merge(ts)
    assert [(m.number_per_run, m.raw_times, m.stmt, m.metadata) for m in em] == \
        [(m.number_per_run, m.raw_times, m.stmt, m.metadata) for m in tm]


def _grid(lib, rng_seed=0, envs=(None,), threads=(1,), warn=False):
    """Measurements for a Compare table: rows (sub_label) x columns (description) x threads x env,
    two labels, replicates to merge, one missing cell."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for label in ("add", "mul"):
        for env in envs:
            for nt in threads:
                for row, base in (("float", 2e-6), ("int", 7e-6), ("double", 3e-5)):
                    for col, k in (("n=1", 1), ("n=64", 3), ("n=4096", 40)):
                        if (row, col) == ("double", "n=64"):
                            continue
                        for _rep in range(2):
                            spread = 0.4 if (warn and row == "int") else 0.02
                            times = list(base * k * (1 + spread * rng.random(12)))
                            out.append(lib.Measurement(100, times, lib.TaskSpec(
                                stmt=f"x {'+' if label == 'add' else '*'} y", setup="pass", label=label,
                                sub_label=row, description=col, env=env, num_threads=nt)))
    return out


@pytest.mark.parametrize("options", [(), ("trim",), ("colorize",), ("rowwise",), ("warn",),
                                     ("trim", "colorize", "warn")])
@pytest.mark.parametrize("layout", ["plain", "threads", "envs"])
def test_compare_table_matches_torch(options, layout):
    kw = {"plain": {}, "threads": {"threads": (1, 4)}, "envs": {"envs": ("old", "new")}}[layout]
    kw["warn"] = "warn" in options
    tables = []
    for lib in (eb, tb):
        c = lib.Compare(_grid(lib, **kw))
        if "trim" in options:
            c.trim_significant_figures()
        if "colorize" in options:
            c.colorize()
        if "rowwise" in options:
            c.colorize(rowwise=True)
        if "warn" in options:
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[0] == tables[1]
    assert "Times are in nanoseconds (ns)." in tables[0]


def test_compare_print_and_extend(capsys):
    e = eb.Compare(_grid(eb)[:4])
    t = tb.Compare(_grid(tb)[:4])
    e.extend_results(_grid(eb)[4:8])
    t.extend_results(_grid(tb)[4:8])
    e.print()
    t.print()
    out = capsys.readouterr().out
    half = len(out) // 2
    assert out[:half] == out[half:]
    for lib in (eb, tb):
        with pytest.raises(ValueError, match=re.escape("Expected an instance of `Measurement`, got <class 'int'> instead.")):
            lib.Compare([1])


# ---- Timer: real runs. Numbers differ; fields and layout must not. ----

_NUM = re.compile(r"\d+(\.\d+)?")


def _mask(s):
    return _NUM.sub("N", s)


def _timers(**kw):
    x_e, x_t = ember.ones(16), torch.ones(16)
    return (eb.Timer("torch.add(x, 1)", globals={"x": x_e}, **kw),
            tb.Timer("torch.add(x, 1)", globals={"x": x_t}, **kw))


def test_timer_timeit():
    for timer in _timers(label="add", sub_label="16", description="cpu"):
        m = timer.timeit(50)
        assert m.number_per_run == 50 and len(m.raw_times) == 1 and m.times[0] > 0
        assert m.median == m.mean == m.times[0] and m.iqr == 0
    e, t = (tm.timeit(20) for tm in _timers(label="add"))
    # units can differ (ember is slower); the rest of the layout is the same
    units = re.compile(r"\b(ns|us|ms|s)\b")
    assert units.sub("U", _mask(_body(e))) == units.sub("U", _mask(_body(t)))


def test_timer_blocked_and_adaptive_autorange():
    e_timer, t_timer = _timers(label="add", description="16")
    calls = []
    e = e_timer.blocked_autorange(callback=lambda n, s: calls.append((n, s)), min_run_time=0.05)
    t = t_timer.blocked_autorange(min_run_time=0.05)
    assert sum(e.raw_times) >= 0.05 and len(e.raw_times) == len(calls)
    assert all(n == e.number_per_run for n, _ in calls)
    assert str(e.number_per_run).rstrip("0") == "1"  # block sizes are powers of ten, as torch's
    assert str(t.number_per_run).rstrip("0") == "1"
    a = e_timer.adaptive_autorange(threshold=0.5, max_run_time=0.5)
    assert len(a.raw_times) > 3 or sum(a.raw_times) > 0.5
    for m in (e, a):
        lines = [_mask(line) for line in repr(m).splitlines()[1:]]
        assert lines[:2] == ["add", "N"]
        assert re.fullmatch(r"  (Median: )?N (ns|us|ms|s)", lines[2])
    # a table of real measurements has torch's rows and columns
    e2 = _timers(label="add", description="16 (2)")[0].timeit(100)
    t2 = _timers(label="add", description="16 (2)")[1].timeit(100)
    et, tt = str(eb.Compare([e, e2])), str(tb.Compare([t, t2]))
    el, tl = et.splitlines(), tt.splitlines()
    assert len(el) == len(tl)
    cells = [[c.strip() for c in line.split("|")] for line in (el[1], tl[1], el[3], tl[3])]
    assert cells[0] == cells[1] == ["", "16", "16 (2)"]  # the column headers
    assert cells[2][0] == cells[3][0] == "torch.add(x, 1)" and len(cells[2]) == len(cells[3]) == 3  # the row
    assert el[0].strip("[]- ") == tl[0].strip("[]- ") == "add"
    assert el[2].startswith("1 threads: ---") and tl[2].startswith("1 threads: ---")
    assert re.fullmatch(r"Times are in \w+ \((ns|us|ms|s)\)\.", el[-1] or el[-2])


def test_timer_globals_setup_and_torch_binding():
    # `torch` in a snippet is ember; globals are copied; multi-line stmt and setup are dedented
    g = {"n": 3}
    timer = eb.Timer("""
        y = torch.zeros(n)
        z = y + 1
    """, setup="""
        k = 1
    """, globals=g)
    m = timer.timeit(5)
    assert "torch" not in g and m.stmt == "y = torch.zeros(n)\nz = y + 1" and m.setup == "k = 1"
    assert timer._globals["torch"] is ember
    t = tb.Timer("""
        y = torch.zeros(n)
        z = y + 1
    """, setup="""
        k = 1
    """, globals={"n": 3}).timeit(5)
    assert _mask(_body(m)).replace("ns", "us") == _mask(_body(t)).replace("ns", "us")


@pytest.mark.parametrize("case", ["stmt", "global_setup", "language", "repeat", "autorange"])
def test_timer_errors_match_torch(case):
    def run(lib):
        if case == "stmt":
            lib.Timer(lambda: None)
        elif case == "global_setup":
            lib.Timer("pass", global_setup="#include <x>")
        elif case == "language":
            lib.Timer("pass", language="rust")
        elif case == "repeat":
            lib.Timer("pass").repeat()
        else:
            lib.Timer("pass").autorange()
    errs = []
    for lib in (eb, tb):
        with pytest.raises(Exception) as info:
            run(lib)
        errs.append((type(info.value), str(info.value)))
    assert errs[0] == errs[1]
