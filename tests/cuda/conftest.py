"""The simulator switch (EMBER_CUDA_SIM=1 unless set) lives in tests/conftest.py, so tests/devices
sees the same simulated GPU. Tests elsewhere that need "no CUDA" check ember.cuda.is_available()
themselves, or run in a subprocess (test_cuda_unavailable.py)."""
