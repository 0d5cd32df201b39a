"""c10: devices, dtypes, dispatch keys, storage and TensorImpl. Imports nothing of ember."""
