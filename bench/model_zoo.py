"""The model zoo: TensorFlow builds Keras's MobileNetV2 and ResNet50 (`weights=None`, fixed seed)
and a small BERT-style encoder, and freezes each inference graph into a GraphDef that Flowstone
imports. TensorFlow is never a dependency: the graphs are built by running this file in the peer
Python (`--build DIR`), and cached in DIR (build/model_zoo by default, ignored by git) as

    <name>.pb         the frozen GraphDef (binary), input placeholder "input", batch dimension None
    <name>.json       {"input": "input:0", "output": ..., "shape": [...], "dtype": ...}
    <name>_ref.npz    a batch-1 input "x" and TensorFlow's output "y" for it (the oracle)

    .venv-peers/bin/python bench/model_zoo.py --build build/model_zoo

`ensure_zoo(peer_python)` does that from Flowstone's side when the cache is missing.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_DIR = os.path.join(ROOT, "build", "model_zoo")
MODELS = ("mobilenet_v2", "resnet50", "bert_encoder")
SEED = 20261127

# The BERT-style encoder: 4 post-norm transformer blocks as Google's BERT writes them with TF ops
# (dense layers as MatMul + BiasAdd, heads by Reshape/Transpose, exact GELU through Erf, layer
# norm through moments), over token and position embeddings.
BERT = dict(vocab=8000, seq=128, hidden=256, heads=4, layers=4, ffn=1024)


def _calibrated(keras, model):
    """The model with each batch norm's moving statistics set to those of a random batch (one
    training-mode call with momentum 0): with the initial statistics (mean 0, variance 1) the
    activations of a randomly initialized net shrink to about 1e-11 by the last layer, and the
    softmax is uniform, which would check nothing."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(np.random.default_rng(SEED + 1).uniform(-1, 1, (8, 224, 224, 3)).astype(np.float32),
          training=True)
    return model


def _mobilenet_v2(keras):
    return _calibrated(keras, keras.applications.MobileNetV2(weights=None,
                                                             input_shape=(224, 224, 3)))


def _resnet50(keras):
    return _calibrated(keras, keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3)))


def _bert_encoder(tf):
    """A tf.Module whose __call__ maps int32 token ids [batch, seq] to [batch, seq, hidden]."""
    c = BERT
    rng = np.random.default_rng(SEED)

    def var(*shape, scale=0.02):
        return tf.Variable(rng.normal(0.0, scale, shape).astype(np.float32))

    def ones(n):
        return tf.Variable(np.ones(n, np.float32))

    def zeros(n):
        return tf.Variable(np.zeros(n, np.float32))

    h, d = c["hidden"], c["hidden"] // c["heads"]

    class Encoder(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokens = var(c["vocab"], h)
            self.positions = var(c["seq"], h)
            self.ln0 = (ones(h), zeros(h))
            self.blocks = [dict(qkv=(var(h, 3 * h), zeros(3 * h)), out=(var(h, h), zeros(h)),
                                ln1=(ones(h), zeros(h)), up=(var(h, c["ffn"]), zeros(c["ffn"])),
                                down=(var(c["ffn"], h), zeros(h)), ln2=(ones(h), zeros(h)))
                           for _ in range(c["layers"])]

        @staticmethod
        def layer_norm(x, params):
            mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
            return (x - mean) * tf.math.rsqrt(variance + 1e-12) * params[0] + params[1]

        @staticmethod
        def gelu(x):
            # BERT's exact GELU through Erf (TensorFlow 2.21's tf.nn.gelu uses Erfc, which
            # tf2onnx 1.17 cannot convert).
            return x * 0.5 * (1.0 + tf.math.erf(x * float(1.0 / np.sqrt(2.0))))

        @staticmethod
        def dense(x, params):
            return tf.nn.bias_add(tf.matmul(x, params[0]), params[1])

        def __call__(self, ids):
            batch = tf.shape(ids)[0]
            x = tf.gather(self.tokens, ids) + self.positions
            x = self.layer_norm(x, self.ln0)
            x = tf.reshape(x, [-1, h])  # [batch * seq, hidden] as BERT keeps it between blocks
            for block in self.blocks:
                qkv = tf.reshape(self.dense(x, block["qkv"]), [batch, c["seq"], 3, c["heads"], d])
                q, k, v = tf.unstack(tf.transpose(qkv, [2, 0, 3, 1, 4]))  # each [b, heads, seq, d]
                scores = tf.matmul(q, k, transpose_b=True) * (1.0 / float(np.sqrt(d)))
                context = tf.matmul(tf.nn.softmax(scores), v)
                context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, h])
                x = self.layer_norm(x + self.dense(context, block["out"]), block["ln1"])
                ffn = self.gelu(self.dense(x, block["up"]))
                x = self.layer_norm(x + self.dense(ffn, block["down"]), block["ln2"])
            return tf.reshape(x, [batch, c["seq"], h])

    return Encoder()


def build(cache_dir):
    """Builds and freezes the three graphs under real TensorFlow (the peer Python only)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tf_keras as keras
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)

    os.makedirs(cache_dir, exist_ok=True)
    for name in MODELS:
        tf.random.set_seed(SEED)
        keras.utils.set_random_seed(SEED)
        if name == "bert_encoder":
            model = _bert_encoder(tf)
            spec = tf.TensorSpec([None, BERT["seq"]], tf.int32, name="input")
            fn = tf.function(model)
            x = np.random.default_rng(SEED).integers(0, BERT["vocab"], (1, BERT["seq"]),
                                                     dtype=np.int32)
        else:
            model = _mobilenet_v2(keras) if name == "mobilenet_v2" else _resnet50(keras)
            spec = tf.TensorSpec([None, 224, 224, 3], tf.float32, name="input")
            fn = tf.function(lambda images, m=model: m(images, training=False))
            x = np.random.default_rng(SEED).uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)
        frozen = convert_variables_to_constants_v2(fn.get_concrete_function(spec))
        graph_def = frozen.graph.as_graph_def()
        y = frozen(tf.constant(x))
        y = (y[0] if isinstance(y, (list, tuple)) else y).numpy()
        meta = {"input": frozen.inputs[0].name, "output": frozen.outputs[0].name,
                "shape": [None] + list(x.shape[1:]), "dtype": str(x.dtype)}
        with open(os.path.join(cache_dir, name + ".pb"), "wb") as f:
            f.write(graph_def.SerializeToString())
        with open(os.path.join(cache_dir, name + ".json"), "w") as f:
            json.dump(meta, f)
        np.savez(os.path.join(cache_dir, name + "_ref.npz"), x=x, y=y)


def ensure_zoo(peer_python, cache_dir=CACHE_DIR):
    """Builds the cache with TensorFlow (peer_python) unless every file is already there."""
    needed = [os.path.join(cache_dir, n + ext) for n in MODELS
              for ext in (".pb", ".json", "_ref.npz")]
    if all(os.path.exists(p) for p in needed):
        return
    proc = subprocess.run([peer_python, os.path.abspath(__file__), "--build", cache_dir],
                          capture_output=True, text=True, timeout=1200,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    if proc.returncode != 0:
        raise RuntimeError("building the model zoo under TensorFlow failed:\n"
                           + proc.stderr[-3000:])


def load(name, cache_dir=CACHE_DIR):
    """(serialized GraphDef, meta dict, reference input, reference output) of a cached model."""
    with open(os.path.join(cache_dir, name + ".pb"), "rb") as f:
        graph_def = f.read()
    with open(os.path.join(cache_dir, name + ".json")) as f:
        meta = json.load(f)
    ref = np.load(os.path.join(cache_dir, name + "_ref.npz"))
    return graph_def, meta, ref["x"], ref["y"]


def batch_input(meta, batch, seed=SEED):
    """A deterministic input of the model's shape with `batch` rows."""
    rng = np.random.default_rng(seed)
    shape = [batch] + meta["shape"][1:]
    if meta["dtype"] == "int32":
        return rng.integers(0, BERT["vocab"], shape, dtype=np.int32)
    return rng.uniform(-1, 1, shape).astype(np.float32)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", metavar="DIR", required=True,
                        help="where to write the frozen graphs (run under TensorFlow)")
    build(parser.parse_args().build)
    sys.exit(0)
