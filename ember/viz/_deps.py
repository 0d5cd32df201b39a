"""The optional drawing libraries, imported when a picture is made (the `viz` extra)."""
import importlib

_HINTS = {
    "graphviz": "pip install graphviz (or pip install ember[viz]); rendering to a file also needs Graphviz's "
                "`dot` binary (apt-get install graphviz)",
    "matplotlib": "pip install matplotlib (or pip install ember[viz])",
}


def require(name):
    """Import an optional dependency, or raise ImportError saying how to install it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        raise ImportError(f"ember.viz needs the '{name}' package: {_HINTS[name]}") from e
