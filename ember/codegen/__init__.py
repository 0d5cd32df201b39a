"""torchgen for ember: reads ember/ops/native_functions/*.yaml and writes ember/_generated/.

Run `python ember/codegen/gen.py` (add --check to fail when the committed files are stale).
It runs without importing ember, since ember imports what it writes.
"""
