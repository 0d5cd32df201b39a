"""What ember.compile costs: capture, guards on a cache hit, a cache hit against eager.

    python benchmarks/compile.py            # prints the figures and their ratios

1. capture + guard building (+ the built-in backend's code generation) per 100 ops: a chain of
   pointwise ops on a small tensor, first call of a fresh compiled function, minus one eager run
   of the same function (the capturing call also computes the result).
2. checking guards on a cache hit, per tensor input: the entry's generated check function over
   1, 8 and 32 tensor inputs.
3. a cache hit with backend="eager" against eager: an MLP, torch's toy (two segments and a
   branch), and a tiny GPT's forward; the ratio compiled / eager (1.00 = as fast as eager).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import ember  # noqa: E402
import ember._dynamo as dynamo  # noqa: E402


def best(fn, n=200, reps=5):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n)
    return min(out)


def chain(n_ops):
    def f(x):
        for _ in range(n_ops // 2):
            x = x * 1.0001
            x = x + 0.5
        return x
    return f


def capture_cost():
    rows = []
    x = ember.randn(16)
    for n in (100, 500):
        f = chain(n)
        eager = best(lambda f=f: f(x), n=20)
        ts = []
        for _ in range(5):
            c = ember.compile(f, backend="eager")
            t = time.perf_counter()
            c(x)
            ts.append(time.perf_counter() - t)
        cap = min(ts) - eager
        rows.append((n, cap * 1e3 / (n / 100), eager * 1e3))
    return rows


def guard_cost():
    rows = []
    for k in (1, 8, 32):
        xs = [ember.randn(4, 4) for _ in range(k)]

        def f(*ts):
            return ts[0] + 1
        c = ember.compile(f, backend="eager")
        c(*xs)
        e = c.entries[0]
        L = tuple(xs)
        assert e.check(L)
        per = best(lambda e=e, L=L: e.check(L), n=2000) / k
        rows.append((k, per * 1e6))
    return rows


def hit_vs_eager():
    rows = []
    nn = ember.nn
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    x = ember.randn(8, 32)
    cases = [("MLP forward (no grad)", mlp, (x,), True), ("MLP forward (training)", mlp, (x,), False)]

    def toy(a, b):
        y = a / (ember.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return y * b
    cases.append(("torch's toy (2 segments)", toy, (ember.randn(10), ember.randn(10)), False))
    from char_gpt import build_gpt
    GPT = build_gpt(ember)
    gpt = GPT(11, 8, n_layer=1, n_embd=16, n_head=2, dropout=0.0)
    idx = ember.randint(0, 11, (2, 8))
    cases.append(("tiny GPT forward + loss", gpt, (idx, idx), False))
    for name, fn, args, nograd in cases:
        c = ember.compile(fn, backend="eager")
        ctx = ember.no_grad if nograd else ember.enable_grad
        with ctx():
            c(*args)
            c(*args)

            def run_e(fn=fn, args=args):
                fn(*args)

            def run_c(c=c, args=args):
                c(*args)
            e, cc = [], []
            # calls per round: ~20 ms of work, so a 16 µs function is timed over more than 100 calls
            n = max(100, int(0.02 / best(run_e, n=20, reps=3)))
            for _ in range(9):   # interleaved, best of each
                e.append(best(run_e, n=n, reps=1))
                cc.append(best(run_c, n=n, reps=1))
        rows.append((name, min(e) * 1e6, min(cc) * 1e6, min(cc) / min(e)))
    return rows


def main():
    dynamo.reset()
    print("capture + guard building (backend='eager'), per 100 ops:")
    for n, per100, eager in capture_cost():
        print(f"  chain of {n:4d} ops: {per100:7.2f} ms per 100 ops   (eager run of the whole chain {eager:.2f} ms)"
              f"   budget 20 ms -> ratio {per100 / 20:.2f}")
    print("guard check on a cache hit, per tensor input:")
    for k, us in guard_cost():
        print(f"  {k:2d} tensor inputs: {us:.3f} us per tensor input   budget 0.5 us -> ratio {us / 0.5:.2f}")
    print("cache hit (backend='eager') vs eager:")
    for name, e, c, r in hit_vs_eager():
        print(f"  {name:28s} eager {e:9.1f} us   compiled {c:9.1f} us   compiled/eager {r:.3f}   (budget 1.05)")


if __name__ == "__main__":
    main()
