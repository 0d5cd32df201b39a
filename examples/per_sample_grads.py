"""Per-sample gradients of the digits CNN (examples/digits_cnn.py's model) with vmap(grad(loss)),
compared with a Python loop over the samples: the same gradients, their norms, and the time of each.

    python examples/per_sample_grads.py                  # 64 samples on ember
    python examples/per_sample_grads.py --backend torch  # the same script on PyTorch (torch.func)
    python examples/per_sample_grads.py --n 16 --steps 0 # quick

Written against PyTorch's API: `import ember as torch` is the only change. Per-sample gradient norms
are what DP-SGD clips and what data-debugging tools rank samples by; computing them one sample at a
time costs a forward and a backward per sample, vmap computes them in one batched pass.
"""
import argparse
import importlib.util
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["ember", "torch"], default="ember")
    p.add_argument("--n", type=int, default=64, help="samples to take per-sample gradients of")
    p.add_argument("--steps", type=int, default=30, help="Adam steps on the training set first")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each method (median)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.backend == "torch":
        import torch
        torch.set_num_threads(1)
    else:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import ember as torch
    import numpy as np
    from sklearn.datasets import load_digits
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(args.seed)

    # ---- data and model, as in digits_cnn.py ----
    digits = load_digits()
    x_all = torch.tensor(digits.images.astype(np.float32) / 16.0).unsqueeze(1)  # (N, 1, 8, 8)
    y_all = torch.tensor(digits.target.astype(np.int64))
    x_all = (x_all - x_all.mean()) / x_all.std()
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(args.steps):  # a little training, so that the gradients mean something
        idx = torch.randint(0, x_all.shape[0], (64,))
        opt.zero_grad()
        F.cross_entropy(model(x_all[idx]), y_all[idx]).backward()
        opt.step()

    # ---- the loss as a function of the parameters and ONE sample ----
    names = [n for n, _ in model.named_parameters()]
    params = tuple(p.detach() for p in model.parameters())

    def loss_fn(ps, x, y):
        c1w, c1b, c2w, c2b, lw, lb = ps
        h = F.max_pool2d(F.relu(F.conv2d(x.unsqueeze(0), c1w, c1b, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, c2w, c2b, padding=1)), 2)
        return F.cross_entropy(F.linear(h.flatten(1), lw, lb), y.unsqueeze(0))

    grad = grad_transform(torch, loss_fn)
    per_sample = torch.vmap(grad, in_dims=(None, 0, 0))

    x, y = x_all[:args.n], y_all[:args.n]

    def with_vmap():
        return per_sample(params, x, y)

    def with_loop():
        gs = [grad(params, x[i], y[i]) for i in range(args.n)]
        return tuple(torch.stack([g[k] for g in gs]) for k in range(len(params)))

    t_vmap, g_vmap = timed(with_vmap, args.repeat)
    t_loop, g_loop = timed(with_loop, args.repeat)

    # ---- the same gradients, and their norms ----
    worst = max(float((a - b).abs().max()) for a, b in zip(g_vmap, g_loop))
    norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in g_vmap]).sum(0).sqrt()
    print(f"[{args.backend}] per-sample gradients of {sum(p.numel() for p in params)} parameters "
          f"for {args.n} digits")
    for n, g in zip(names, g_vmap):
        print(f"  {n:10s} {tuple(g.shape)}")
    order = norms.argsort(descending=True)
    print("  largest gradient norms (sample: label, norm): " + ", ".join(
        f"{int(i)}: {int(y[int(i)])}, {float(norms[int(i)]):.3f}" for i in order[:5]))
    print(f"  mean norm {float(norms.mean()):.4f}; vmap vs loop: max |difference| {worst:.2e}")
    print(f"  vmap(grad): {t_vmap * 1e3:.1f} ms   loop: {t_loop * 1e3:.1f} ms   "
          f"speed-up {t_loop / t_vmap:.1f}x")
    ok = worst <= 1e-4 * max(1.0, float(norms.max()))
    print("OK" if ok else "FAIL: vmap and the loop disagree")
    return 0 if ok else 1


def grad_transform(torch, f):
    """torch.func.grad(f) with respect to the first argument (a tuple of tensors); where the library
    has no func.grad yet, the same thing written with autograd.grad."""
    if importlib.util.find_spec(torch.__name__ + ".func") is not None and hasattr(torch.func, "grad"):
        return torch.func.grad(f)

    def g(ps, *args):
        ps = tuple(p.detach().requires_grad_() for p in ps)
        with torch.enable_grad():
            return torch.autograd.grad(f(ps, *args), ps)
    return g


def timed(fn, repeat):
    out = fn()  # warm-up (and the result)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], out


if __name__ == "__main__":
    sys.exit(main())
