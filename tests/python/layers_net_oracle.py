"""Runs data/tf1_layers_net.py (a small network of contrib-style layers) under an interpreter
and compares two runs: the tests run it with tf_slim on real TensorFlow and with Flowstone."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf1_layers_net.py")


def run_net(python, layers, *args):
    """The script's JSON result; under Flowstone (python=None) through `python -m flowstone
    run`, so that its `import tensorflow` gets Flowstone."""
    command = ([sys.executable, "-m", "flowstone", "run"] if python is None else [python])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(command + [SCRIPT, layers] + list(args), capture_output=True,
                          text=True, env=env, timeout=600)
    if "No module named 'tf_slim'" in done.stderr:
        pytest.skip("tf-slim is not installed where the script ran (pip install tf-slim)")
    assert done.returncode == 0, done.stderr[-3000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def assert_same_run(ours, theirs):
    """Same variables and collections, and the same numbers within float32 rounding."""
    for key in ("variables", "model_variables", "trainable", "regularization_losses"):
        assert ours[key] == theirs[key], key
    for key in ("logits", "losses", "moving_mean", "moving_variance", "trained_logits"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-4, atol=2e-5, err_msg=key)
