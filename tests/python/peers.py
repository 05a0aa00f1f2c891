"""Where real TensorFlow (the oracle) lives: never a dependency, only a peer in its own venv.

`make bench` creates `.venv-peers` at the repository root with TensorFlow and PyTorch;
FLOWSTONE_PEER_PYTHON names another interpreter that has TensorFlow. Tests that compare with
TensorFlow skip, with SKIP_REASON, when neither exists.
"""

import os
import subprocess
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_PYTHON = os.environ.get("FLOWSTONE_PEER_PYTHON") or os.path.join(ROOT, ".venv-peers", "bin",
                                                                      "python")
HAVE_PEER = os.path.exists(PEER_PYTHON)
SKIP_REASON = ("TensorFlow oracle not installed: run `make bench` once (it creates .venv-peers) "
               "or set FLOWSTONE_PEER_PYTHON")


requires_tensorflow = pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)


def run_tensorflow(script, workdir=None):
    """Runs `script` under real TensorFlow (in `workdir`) and returns what it printed."""
    proc = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(script)], cwd=workdir,
                          capture_output=True, text=True, timeout=300,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
