"""Where real TensorFlow (the oracle) lives: never a dependency, only a peer in its own venv.

`make bench` creates `.venv-peers` at the repository root with TensorFlow and PyTorch;
FLOWSTONE_PEER_PYTHON names another interpreter that has TensorFlow. Tests that compare with
TensorFlow skip, with SKIP_REASON, when neither exists.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_PYTHON = os.environ.get("FLOWSTONE_PEER_PYTHON") or os.path.join(ROOT, ".venv-peers", "bin",
                                                                      "python")
HAVE_PEER = os.path.exists(PEER_PYTHON)
SKIP_REASON = ("TensorFlow oracle not installed: run `make bench` once (it creates .venv-peers) "
               "or set FLOWSTONE_PEER_PYTHON")
