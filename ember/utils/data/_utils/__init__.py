"""Helpers shared by DataLoader and its worker processes (torch/utils/data/_utils).

Its submodules (collate, fetch, worker, pin_memory) import this package's helpers, so the package
does not import them: ember/utils/data/dataloader.py imports each one it uses."""
import atexit
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"
MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that worker processes are alive while waiting for data."""

python_exit_status = False
"""Set at interpreter exit, so worker shutdown in __del__ does nothing then."""

try:
    import numpy  # noqa: F401
    HAS_NUMPY = True
except ModuleNotFoundError:
    HAS_NUMPY = False


class KeyErrorMessage(str):
    """str subclass that returns itself in repr (KeyError repr()s its message)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """Wraps an exception plus traceback to communicate across threads/processes."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Reraises the wrapped exception in the current thread."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)
