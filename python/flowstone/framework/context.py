"""Whether ops run eagerly. A leaf module: the graph code (framework/ops.py) asks it where an op
goes, and framework/eager.py installs the function that runs ops eagerly."""


class _EagerState:
    """The process-wide eager switch and the eager executor's entry point."""

    def __init__(self):
        self.enabled = False
        # execute(op_type, flat_inputs, attrs, name) -> an operation-like result with
        # `.outputs`; installed by framework/eager.py.
        self.execute = None


state = _EagerState()
