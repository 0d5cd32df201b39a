"""python -m examples.async_device [--steps N]: the async device at work.

1. timing a launch without synchronize measures only the enqueueing;
2. two streams ordered by an event;
3. an MLP trained on adev:0 and on the CPU from the same seed: the same losses;
4. the caching allocator's summary after the tensors died.
"""
import argparse
import time

import ember
import ember.nn as nn

from . import install, uninstall


def timing_demo(adev):
    x = ember.randn(512, 512).adev()
    adev.synchronize()
    start, end = adev.Event(enable_timing=True), adev.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(10):
        y = x @ x
    end.record()
    enqueue = time.perf_counter() - t0
    adev.synchronize()
    total = time.perf_counter() - t0
    print(f"10 matmuls 512x512: host timer without synchronize {enqueue * 1e3:7.2f} ms "
          f"(enqueueing only)")
    print(f"                    host timer with synchronize    {total * 1e3:7.2f} ms")
    print(f"                    device time between events     {start.elapsed_time(end):7.2f} ms")
    return y


def streams_demo(adev):
    side = adev.Stream()
    x = ember.ones(1 << 16, device="adev")
    with adev.stream(side):
        adev._sleep(0.05)            # a slow producer
        x.mul_(3)
        ready = side.record_event()
    adev.current_stream().wait_event(ready)
    total = x.sum()                  # ordered after the producer by the event
    print(f"sum after an event from a side stream: {total.item():.0f} (expected {3 << 16})")


def train(dev, steps):
    ember.manual_seed(0)
    g = ember.Generator().manual_seed(1)
    x = ember.randn(256, 20, generator=g)
    y = (x[:, :5].sum(1) > 0).long() + (x[:, 5:10].sum(1) > 0).long()
    x, y = x.to(dev), y.to(dev)
    m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3)).to(dev)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)          # no .item() inside the loop: nothing waits
    return [v.item() for v in losses]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args(argv)
    adev = install()
    try:
        timing_demo(adev)
        streams_demo(adev)
        la = train("adev", args.steps)
        lc = train("cpu", args.steps)
        print(f"MLP, {args.steps} SGD steps: loss {la[0]:.4f} -> {la[-1]:.4f} on adev:0, "
              f"{lc[0]:.4f} -> {lc[-1]:.4f} on cpu; max difference "
              f"{max(abs(a - b) for a, b in zip(la, lc)):.2e}")
        adev.synchronize()
        print(adev.memory_summary(abbreviated=True))
    finally:
        uninstall()


if __name__ == "__main__":
    main()
