"""Import torch or ember as `torch`, as the DIST_LIB environment variable says (the same program
runs under both: it is ordinary torch.distributed code)."""
import importlib
import json
import os

LIB = os.environ.get("DIST_LIB", "ember")
torch = importlib.import_module("torch" if LIB == "torch" else "ember")
dist = importlib.import_module(f"{torch.__name__}.distributed")


def report(tag, obj):
    """Rank 0's result: written to $RESULTS_DIR/<tag>.json when the test gives one (the ranks'
    output lines interleave on stdout), and printed."""
    d = os.environ.get("RESULTS_DIR")
    if d:
        with open(os.path.join(d, f"{tag}.json"), "w") as f:
            json.dump(obj, f)
    print(f"{tag} " + json.dumps(obj), flush=True)
