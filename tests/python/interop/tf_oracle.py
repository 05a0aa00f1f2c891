"""Runs a script under real TensorFlow (the peer interpreter, see peers.py) in a directory the
test shares with it, and returns what the script printed."""

import subprocess
import textwrap

import pytest

from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

requires_tensorflow = pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)


def run_tensorflow(script, workdir):
    proc = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(script)], cwd=workdir,
                          capture_output=True, text=True, timeout=300,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
