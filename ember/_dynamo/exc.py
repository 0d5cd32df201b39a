"""ember._dynamo.exc (torch._dynamo.exc): the errors graph capture raises."""


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    """Raised under fullgraph=True at the first graph break. Its message says what broke, where
    in the user's code, and a hint, in torch's layout."""

    def __init__(self, msg, *, case_name=None, gb_type=None, reason=None, user_stack=None):
        super().__init__(msg)
        self.msg = msg
        self.case_name = case_name
        self.gb_type = gb_type
        self.reason = reason
        self.user_stack = user_stack or []
        self.real_stack = self.user_stack


class RecompileLimitExceeded(Unsupported):
    pass


# torch's older name
CacheLimitExceeded = RecompileLimitExceeded


class BackendCompilerFailed(TorchDynamoException):
    def __init__(self, backend_fn, inner_exception):
        self.backend_name = getattr(backend_fn, "__name__", "?")
        self.inner_exception = inner_exception
        super().__init__(f"backend='{self.backend_name}' raised:\n{type(inner_exception).__name__}: "
                         f"{inner_exception}")


class InternalTorchDynamoError(TorchDynamoException):
    pass


class UserError(Unsupported):
    pass


def format_break(title, explanation, hints, where, source_line, context=""):
    """torch's graph-break message: title, Explanation, Hints, debug context, user code."""
    lines = [title, f"  Explanation: {explanation}"]
    lines += [f"  Hint: {h}" for h in hints]
    if context:
        lines += ["", f"  Developer debug context: {context}"]
    lines += ["", "from user code:"]
    if where is not None:
        fn, ln, name = where
        lines.append(f'   File "{fn}", line {ln}, in {name}')
        if source_line:
            lines.append(f"    {source_line.strip()}")
    return "\n".join(lines)
