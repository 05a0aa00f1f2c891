"""Whether ops run eagerly. A leaf module: the graph code (framework/ops.py) asks it where an op
goes, and framework/eager.py installs the function that runs ops eagerly."""

import contextlib
import threading


class _EagerState:
    """The process-wide eager switch, the per-thread one of tf.py_function bodies, and the eager
    executor's entry point."""

    def __init__(self):
        self.enabled = False
        # execute(op_type, flat_inputs, attrs, name) -> an operation-like result with
        # `.outputs`; installed by framework/eager.py.
        self.execute = None
        self._thread = threading.local()

    def on(self):
        """Whether ops may run eagerly in this thread: eager mode is on, or the thread runs the
        body of a tf.py_function (eagerly, also in a graph-mode program)."""
        return self.enabled or getattr(self._thread, "eager", False)

    @contextlib.contextmanager
    def eager_in_this_thread(self):
        previous = getattr(self._thread, "eager", False)
        self._thread.eager = True
        try:
            yield
        finally:
            self._thread.eager = previous


state = _EagerState()
