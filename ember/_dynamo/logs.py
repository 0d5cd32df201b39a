"""EMBER_LOGS: what graph capture prints, with torch's TORCH_LOGS names.

`EMBER_LOGS=graph_code,graph_breaks,recompiles,guards,aot_joint_graph,aot_graphs,output_code`
(or `set_logs(recompiles=True, ...)`) turns artifacts on. Each is a module-level bool: when off,
the code that would print tests one flag and formats nothing. Messages go to the logger
`ember._dynamo` (recompiles, graph_breaks, guards) or `ember._functorch` / `ember._inductor`,
at INFO with a stderr handler added when the artifact is turned on, as torch's loggers do.
"""
import logging
import os

ARTIFACTS = ("graph_code", "graph_breaks", "recompiles", "guards", "aot_joint_graph", "aot_graphs",
             "output_code", "graph", "dynamo", "autotuning")
graph_code = graph_breaks = recompiles = guards = False
aot_joint_graph = aot_graphs = output_code = graph = dynamo = autotuning = False

log = logging.getLogger("ember._dynamo")
_handler = None


def set_logs(**flags):
    """Turn artifacts on or off (torch._logging.set_logs); unknown names raise ValueError."""
    global _handler
    g = globals()
    for name, on in flags.items():
        if name not in ARTIFACTS:
            raise ValueError(f"Unknown log artifact: {name!r}; valid: {', '.join(ARTIFACTS)}")
        g[name] = bool(on)
    if any(g[a] for a in ARTIFACTS):
        if _handler is None:
            _handler = logging.StreamHandler()
            _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
            log.addHandler(_handler)
        if log.level == logging.NOTSET or log.level > logging.INFO:
            log.setLevel(logging.INFO)


def emit(artifact, msg):
    log.info("[__%s] %s", artifact, msg)


def _from_env():
    spec = os.environ.get("EMBER_LOGS", "")
    names = [s.strip().lstrip("+") for s in spec.split(",") if s.strip()]
    if names:
        set_logs(**{n: True for n in names if n in ARTIFACTS})


_from_env()
