"""Function transforms (torch/_functorch): vmap's batching layer lives in batched.py (BatchedTensor),
batching.py (the FuncTorchBatched fallback and its rules) and vmap.py; apis.py is the public surface.

Kept tiny: `import ember._functorch.<module>` must not pull in the rest."""
