"""Backend kernels: kernels/meta (shapes and dtypes), kernels/cpu (NumPy), composite.py."""
