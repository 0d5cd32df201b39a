"""ember demo: a tensor's device, dtype and strides; a view sharing storage; the dispatcher's
layers for one call; the autograd graph that call leaves behind."""
import ember as torch

x = torch.arange(12, dtype=torch.float32).reshape(3, 4).clone()
print("x =", x)
print(f"device={x.device} dtype={x.dtype} shape={tuple(x.shape)} strides={x.stride()} "
      f"contiguous={x.is_contiguous()}")

t = x.t()
print(f"\nt = x.t(): shape={tuple(t.shape)} strides={t.stride()} contiguous={t.is_contiguous()}, "
      f"a view of x: t._base is x -> {t._base is x}, same memory: "
      f"{t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}")
t[0, 1] = 100.0
print(f"after t[0, 1] = 100: x[1, 0] = {x[1, 0].item()} (x._version = {x._version})")

m = torch.empty(1024, 1024, device="meta")
print(f"\nmeta tensors carry shapes only: (m @ m).shape = {tuple((m @ m).shape)} on {m.device}")

print("\nOne expression through the dispatcher, layer by layer (w requires grad, so the Autograd "
      "layer records a node):")
w = torch.randn(4, 2, requires_grad=True)
with torch.dispatch_trace() as trace:
    y = torch.relu(x @ w + 1)
print(trace)
print("\ny.grad_fn:", y.grad_fn.name(), "->",
      [(fn.name() if fn else None) for fn, _ in y.grad_fn.next_functions])
y.sum().backward()
print("w.grad =", w.grad)
