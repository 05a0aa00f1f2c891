"""Running tf-keras (Keras 2 on real TensorFlow) in the peer interpreter, as an oracle.

tf-keras is never imported here: each check runs a short script in the peer venv (see
tests/python/peers.py) and reads back what it printed or wrote.
"""

import functools
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import peers  # noqa: E402


@functools.lru_cache(maxsize=None)
def available():
    if not peers.HAVE_PEER:
        return False
    proc = subprocess.run([peers.PEER_PYTHON, "-c", "import tf_keras"], capture_output=True)
    return proc.returncode == 0


SKIP_REASON = (peers.SKIP_REASON + "; tf-keras must be installed there too "
               "(pip install --no-deps tf-keras)")


def run(script, cwd):
    """Runs `script` with tf-keras imported as `keras` and numpy as `np`; returns stdout."""
    prologue = ("import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
                "import numpy as np\nimport tf_keras as keras\nimport tensorflow as tf\n")
    proc = subprocess.run([peers.PEER_PYTHON, "-c", prologue + script], capture_output=True,
                          text=True, cwd=cwd, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"tf-keras script failed:\n{proc.stderr[-3000:]}")
    return proc.stdout
