"""Runs a script under real TensorFlow (the peer interpreter, see peers.py) in a directory the
test shares with it, and returns what the script printed."""

from peers import requires_tensorflow, run_tensorflow  # noqa: F401 - this module's interface
