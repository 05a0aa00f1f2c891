import os
import sys

import pytest

import flowstone as tf

# The eager tests share tests/python's helpers (peers.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def eager_mode():
    """Each test here runs eagerly; the rest of the suite stays in graph mode."""
    tf.reset_default_graph()
    tf.enable_eager_execution()
    yield
    tf.disable_eager_execution()
    tf.reset_default_graph()
