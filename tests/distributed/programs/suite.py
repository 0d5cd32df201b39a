"""Run several of these programs one after another in the same ranks (one launch, one start-up):
argv is a list of 'program.py[:arg,arg...]'. Each one initialises and destroys its own default
process group (on its own MASTER_PORT: base + its index)."""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
base_port = int(os.environ.get("MASTER_PORT", "29500"))
for k, spec in enumerate(sys.argv[1:]):
    # a fresh rendezvous port per process group: torch's gloo can stall re-initialising on the same one
    os.environ["MASTER_PORT"] = str(base_port + k)
    prog, _, args = spec.partition(":")
    sys.argv = [prog] + ([a for a in args.split(",") if a] if args else [])
    runpy.run_path(os.path.join(HERE, prog), run_name="__main__")
    if os.environ.get("RANK", "0") == "0":
        print(f"SUITE done {spec}", flush=True)
