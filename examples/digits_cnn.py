"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits with ember.

Everything below is written against PyTorch's API: `import ember as torch` is the only
difference (run with `--backend torch` to execute the very same code on PyTorch).

    python examples/digits_cnn.py                      # full run: >= 97% test accuracy
    python examples/digits_cnn.py --epochs 1 --check-accuracy 0.8   # quick smoke run
    python -m ember.distributed.run --nproc-per-node 2 examples/digits_cnn.py --ddp   # 2 ranks, DDP
    python examples/digits_cnn.py --compile no         # eager training only

Steps: load the digits (no download), normalize, split train/test with a seeded generator,
train with Adam + cross_entropy over a shuffling DataLoader (tqdm bar with loss and samples/s
when tqdm is installed), report test accuracy and wall time, save a checkpoint with save(),
reload it into a fresh model with load() + load_state_dict() and check that the predictions
are identical. Then (on ember, without --ddp) the same model, from the same initial weights, is
trained again over the same batches with the whole training step compiled, torch.compile style
(ember.compile(train_step): forward, loss, backward and optimizer step in one graph), and the
eager and compiled step times (medians), the compile time and both test accuracies are printed.
With --ddp (started by `python -m ember.distributed.run` or torchrun), every rank
trains a DistributedDataParallel replica on its DistributedSampler slice of each global batch of
--batch-size images; rank 0 prints and saves the checkpoint of the plain model. The exit code
is non-zero when the accuracy is below --check-accuracy or when the reloaded model predicts
differently, or when the compiled training's model predicts more than one test image
differently from the eager one.
"""
import argparse
import os
import sys
import tempfile
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--check-accuracy", type=float, default=0.97,
                   help="exit with status 1 when test accuracy is below this")
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn",
                   help="cnn (default) or an MLP fallback")
    p.add_argument("--backend", choices=["ember", "torch"], default="ember",
                   help="run the same code on ember (default) or on PyTorch")
    p.add_argument("--checkpoint", default=None,
                   help="where to save the checkpoint (default: a temporary file)")
    p.add_argument("--no-progress", action="store_true", help="plain prints instead of tqdm")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel over the ranks of a launcher (gloo; ember runs it on MPI)")
    p.add_argument("--compile", choices=["auto", "yes", "no"], default="auto",
                   help="also train with the training step compiled, never with --ddp (auto: on ember "
                        "only; torch.compile takes tens of seconds to compile a training step)")
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
    nn = torch.nn
    F = torch.nn.functional
    from_data = torch.utils.data
    import builtins
    print = builtins.print
    rank, world = 0, 1
    if args.ddp:  # one process per rank, started by ember.distributed.run (or torchrun)
        dist = torch.distributed
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if rank != 0:
            def print(*a, **k):  # only rank 0 reports
                pass

    tqdm = None
    if not args.no_progress and sys.stdout.isatty():     # a bar on terminals, lines in logs
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None

    t_start = time.perf_counter()
    torch.manual_seed(args.seed)

    # ---- data: 1797 images of 8x8 pixels with values 0..16 ----
    digits = load_digits()
    x_all = torch.tensor(digits.images.astype(np.float32) / 16.0).unsqueeze(1)  # (N, 1, 8, 8)
    y_all = torch.tensor(digits.target.astype(np.int64))
    n = x_all.shape[0]
    g = torch.Generator().manual_seed(args.seed)
    perm = torch.randperm(n, generator=g)
    n_test = int(round(n * args.test_fraction))
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    x_train, y_train = x_all[train_idx], y_all[train_idx]
    x_test, y_test = x_all[test_idx], y_all[test_idx]
    mean, std = x_train.mean(), x_train.std()          # statistics of the training set only
    x_train = (x_train - mean) / std
    x_test = (x_test - mean) / std
    print(f"[{args.backend}] digits: {x_train.shape[0]} train / {x_test.shape[0]} test images "
          f"of {tuple(x_train.shape[1:])}, model={args.model}")

    if args.ddp:  # each rank loads its slice of every global batch of --batch-size images
        sampler = from_data.distributed.DistributedSampler(from_data.TensorDataset(x_train, y_train),
                                                           seed=args.seed + 1)
        train_loader = from_data.DataLoader(from_data.TensorDataset(x_train, y_train),
                                            batch_size=args.batch_size // world, sampler=sampler)
    else:
        train_loader = from_data.DataLoader(
            from_data.TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
            generator=torch.Generator().manual_seed(args.seed + 1))

    def make_model():
        if args.model == "mlp":
            return nn.Sequential(
                nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 x 2 x 2
            nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    model = make_model()
    net = model  # the plain model (what the checkpoint holds)
    if args.ddp:
        model = nn.parallel.DistributedDataParallel(net)
        print(f"DistributedDataParallel over {world} ranks, {args.batch_size // world} images per rank and step")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    # ---- training ----
    t_train = time.perf_counter()
    seen = 0
    step_times = []
    for epoch in range(args.epochs):
        model.train()
        if args.ddp:
            sampler.set_epoch(epoch)
        total, count = 0.0, 0
        t_epoch = time.perf_counter()
        batches = train_loader
        bar = None
        if tqdm is not None:
            bar = batches = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}",
                                 leave=False, file=sys.stdout, dynamic_ncols=True)
        for xb, yb in batches:
            t_step = time.perf_counter()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - t_step)
            bs = yb.shape[0]
            total += loss.item() * bs
            count += bs
            seen += bs
            if bar is not None:
                rate = count / max(time.perf_counter() - t_epoch, 1e-9)
                bar.set_postfix(loss=f"{loss.item():.4f}", samples_s=f"{rate:.0f}")
        if bar is not None:
            bar.close()
        rate = count / max(time.perf_counter() - t_epoch, 1e-9)
        print(f"epoch {epoch + 1:2d}/{args.epochs}: train loss {total / count:.4f}  "
              f"({rate:.0f} samples/s)")
    train_time = time.perf_counter() - t_train

    # ---- evaluation ----
    model.eval()
    with torch.no_grad():
        pred = model(x_test).argmax(dim=1)
    accuracy = (pred == y_test).float().mean().item()

    # ---- checkpoint: save, reload into a fresh model, compare predictions ----
    if args.checkpoint:
        ckpt = args.checkpoint
        tmpdir = None
    else:
        tmpdir = tempfile.TemporaryDirectory()
        ckpt = os.path.join(tmpdir.name, "digits_cnn.pt")
    if args.ddp:  # rank 0 saves; every rank loads its file into a single-process model
        shared = [ckpt]
        dist.broadcast_object_list(shared, src=0)
        ckpt = shared[0]
    if rank == 0:
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                    "epochs": args.epochs, "accuracy": accuracy}, ckpt)
    if args.ddp:
        dist.barrier()
    state = torch.load(ckpt)
    fresh = make_model()
    fresh.load_state_dict(state["model"])
    fresh.eval()
    with torch.no_grad():
        pred2 = fresh(x_test).argmax(dim=1)
    same = bool(torch.equal(pred, pred2))
    size_kb = os.path.getsize(ckpt) / 1024
    if args.ddp:
        dist.barrier()  # every rank has read rank 0's checkpoint before it goes
    if tmpdir is not None:
        tmpdir.cleanup()

    wall = time.perf_counter() - t_start
    print(f"test accuracy: {accuracy * 100:.2f}% ({int((pred == y_test).sum().item())}/"
          f"{y_test.shape[0]})")
    print(f"training time: {train_time:.1f} s ({seen / max(train_time, 1e-9):.0f} samples/s), "
          f"wall time: {wall:.1f} s")
    print(f"checkpoint: {size_kb:.1f} KiB, reloaded model predicts the same: {same}")

    compiled_ok = True
    if not args.ddp and (args.compile == "yes" or (args.compile == "auto" and args.backend == "ember")):
        compiled_ok = train_compiled(args, torch, make_model, x_train, y_train, x_test, y_test,
                                     pred, accuracy, step_times, print)

    ok = compiled_ok
    if accuracy < args.check_accuracy:
        print(f"FAIL: accuracy {accuracy:.4f} < required {args.check_accuracy}")
        ok = False
    if not same:
        print("FAIL: the reloaded model predicts differently")
        ok = False
    print("OK" if ok else "FAILED")
    if args.ddp:
        dist.destroy_process_group()
    return 0 if ok else 1


def train_compiled(args, torch, make_model, x_train, y_train, x_test, y_test, eager_pred, eager_accuracy,
                   eager_times, print):
    """Train the same model again (same initial weights, same batches in the same order) with the
    whole training step compiled; print step times, compile time and accuracy against eager's."""
    import statistics
    F = torch.nn.functional
    from_data = torch.utils.data
    torch.manual_seed(args.seed)           # the eager model's initial weights
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loader = from_data.DataLoader(         # the eager run's batches, in its order
        from_data.TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
        generator=torch.Generator().manual_seed(args.seed + 1))

    def train_step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    step = torch.compile(train_step)
    times = []
    t0 = time.perf_counter()
    model.train()
    for _epoch in range(args.epochs):
        for xb, yb in loader:
            t_step = time.perf_counter()
            loss = step(xb, yb)
            times.append(time.perf_counter() - t_step)
            loss.item()
    total = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        pred = model(x_test).argmax(dim=1)
    accuracy = (pred == y_test).float().mean().item()
    differ = int((pred != eager_pred).sum().item())
    med_e, med_c = statistics.median(eager_times), statistics.median(times)
    # the compile: what the first call at each batch shape cost beyond an ordinary step
    compile_s = sum(t - med_c for t in times if t > 2 * med_c)
    print(f"compiled training ({args.backend}.compile(train_step): forward, loss, backward and Adam step "
          f"compiled as one function): "
          f"{len(times)} steps in {total:.1f} s")
    print(f"step time (median): eager {med_e * 1e3:.2f} ms, compiled {med_c * 1e3:.2f} ms "
          f"({med_e / med_c:.2f}x); compile time {compile_s:.2f} s")
    same = "the same" if accuracy == eager_accuracy else "DIFFERENT"
    print(f"compiled test accuracy: {accuracy * 100:.2f}% (eager {eager_accuracy * 100:.2f}%: {same}; "
          f"{differ} of {y_test.shape[0]} test predictions differ)")
    if differ > 1:
        print(f"FAIL: the compiled training predicts {differ} test images differently from eager's")
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
