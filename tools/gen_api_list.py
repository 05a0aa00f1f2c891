"""Regenerates tests/python/data/tf_compat_v1_api.txt from an installed TensorFlow.

    .venv-peers/bin/python tools/gen_api_list.py            # writes the checked-in list
    .venv-peers/bin/python tools/gen_api_list.py --stdout   # prints it instead

Each line is `<namespace> <name> <kind>`: the namespace below `tf.compat.v1` ("." for the top
level, "nn", "nn.rnn_cell", ...), a public name in it, and what TensorFlow has there: module,
class, function or constant. tests/python/test_api_surface.py compares Flowstone's names with
this list. The namespaces are the ones TF1 programs use; tf.keras, tf.estimator and tf.contrib
are left out (their own issues), and so are TensorFlow-internal modules.
"""

import argparse
import inspect
import os
import sys
import types

# The namespaces below tf.compat.v1 that are listed, each with every public name it has.
NAMESPACES = [
    ".", "app", "bitwise", "config", "data", "debugging", "dtypes", "errors", "flags", "gfile",
    "graph_util", "image", "initializers", "io", "io.gfile", "layers", "linalg", "logging",
    "losses", "math", "metrics", "nest", "nn", "nn.rnn_cell", "python_io", "random",
    "resource_loader", "saved_model", "sets", "signal", "sparse", "strings", "summary",
    "sysconfig", "test", "train", "user_ops",
]

# Namespaces TensorFlow loads lazily from a package the peer environment may lack (tf.layers needs
# tf_keras under Keras 3): TF 1.15's names, written down here, stand in when loading fails.
FALLBACK = {
    "layers": {
        "class": ["AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
                  "BatchNormalization", "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D",
                  "Conv3DTranspose", "Dense", "Dropout", "Flatten", "InputSpec", "Layer",
                  "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "SeparableConv1D",
                  "SeparableConv2D"],
        "function": ["average_pooling1d", "average_pooling2d", "average_pooling3d",
                     "batch_normalization", "conv1d", "conv2d", "conv2d_transpose", "conv3d",
                     "conv3d_transpose", "dense", "dropout", "flatten", "max_pooling1d",
                     "max_pooling2d", "max_pooling3d", "separable_conv1d", "separable_conv2d"],
        "module": ["experimental"],
    },
    "nn.rnn_cell": {
        "class": ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
                  "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper"],
    },
}

OUTPUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "tests", "python", "data", "tf_compat_v1_api.txt")


def kind_of(value):
    """module, class, function or constant: what a user can do with the name."""
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "constant"


def public_names(namespace):
    names = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        names.append((name, kind_of(getattr(namespace, name))))
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdout", action="store_true", help="print the list, write nothing")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    v1 = tf.compat.v1
    lines = [f"# tf.compat.v1 of TensorFlow {tf.__version__}, written by tools/gen_api_list.py"]
    for path in NAMESPACES:
        namespace = v1
        for part in ([] if path == "." else path.split(".")):
            namespace = getattr(namespace, part)
        try:
            names = public_names(namespace)
        except ImportError:
            names = [(name, kind) for kind, listed in FALLBACK[path].items() for name in listed]
            lines.append(f"# {path}: not loadable here; TF 1.15's names from FALLBACK")
        for name, kind in sorted(names):
            lines.append(f"{path} {name} {kind}")
    text = "\n".join(lines) + "\n"
    if args.stdout:
        sys.stdout.write(text)
        return
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w") as f:
        f.write(text)
    count = sum(not line.startswith("#") for line in lines)
    print(f"wrote {count} names to {OUTPUT}")


if __name__ == "__main__":
    main()
