"""ember demo: a tensor's device, dtype and strides, a view sharing storage, a dispatcher trace."""
import ember as torch

x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
print("x =", x)
print(f"device={x.device} dtype={x.dtype} shape={tuple(x.shape)} strides={x.stride()} "
      f"contiguous={x.is_contiguous()}")

t = x.t()
print(f"\nx.t(): shape={tuple(t.shape)} strides={t.stride()} contiguous={t.is_contiguous()} "
      f"shares storage={t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()} "
      f"_base is x: {t._base is x}")
t[0, 1] = 100.0
print("after t[0, 1] = 100, x[1, 0] =", x[1, 0].item(), f"(x._version = {x._version})")

m = torch.empty(1024, 1024, device="meta")
print(f"\nmeta tensor: {m.shape} on {m.device}, no memory: (m @ m).shape = {(m @ m).shape}")

print("\nOne call through the dispatcher, layer by layer:")
w = torch.randn(4, 2)
with torch.dispatch_trace() as trace:
    y = torch.relu(x @ w + 1)
print(trace)
print("\ny =", y)
