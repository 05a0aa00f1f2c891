"""examples/keras_mnist.py trains a Keras CNN on the bundled digits to at least 97% held-out
accuracy, with the progress bar, and reloads it from HDF5 predicting the same."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def test_keras_mnist_example():
    pytest.importorskip("h5py")
    pytest.importorskip("sklearn")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "keras_mnist.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert 'Model: "sequential"' in out and "Epoch 15/15" in out
    assert re.search(r"^41/41 \[==============================\] - \d+s \d+(ms|us)/step - loss: ",
                     out, re.M)
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
    assert accuracy >= 0.97
    assert "reloaded from HDF5: predictions identical" in out
