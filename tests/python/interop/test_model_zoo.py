"""The model zoo (bench/model_zoo.py): MobileNetV2, ResNet50 and a 4-block BERT-style encoder,
built and frozen by real TensorFlow, imported and run by Flowstone at batch 1; the outputs must
be TensorFlow's.

Slow the first time: building and freezing the three graphs under TensorFlow takes about two
minutes on the 2-core machine (cached under build/model_zoo afterwards); the runs take seconds.

The bound is normwise: max |flowstone - tensorflow| <= tol * max |tensorflow|. It is 1e-5 for
MobileNetV2 and the encoder. ResNet50's 53 convolutions (up to 4608 products per output) add
their terms in another order than TensorFlow's oneDNN does, and the softmax turns the logits'
absolute error into the probabilities' relative error; its bound is 1e-4 (ONNX Runtime is
1.4e-5 normwise and 7.9e-5 elementwise away from TensorFlow on the same graph and input). Its
56x56 and 28x28 stages run Winograd convolutions (docs/COMPAT.md), whose rounding is about 10x
the direct convolution's: 4.5e-5 normwise from TensorFlow and 5.3e-5 between the optimized and
unoptimized plans (1.8e-5 and 2.7e-5 with FLOWSTONE_CONV_WINOGRAD=0).
"""

import os
import sys

import numpy as np
import pytest

import flowstone as tf
from flowstone.protos import RewriterConfig
from peers import PEER_PYTHON, ROOT
from tf_oracle import requires_tensorflow

sys.path.insert(0, os.path.join(ROOT, "bench"))
import model_zoo  # noqa: E402

TOLERANCE = {"mobilenet_v2": 1e-5, "resnet50": 1e-4, "bert_encoder": 1e-5}


@pytest.fixture(scope="module")
def zoo():
    model_zoo.ensure_zoo(PEER_PYTHON)
    return model_zoo


def run_frozen(name, config=None):
    data, meta, x, y = model_zoo.load(name)
    graph_def = tf.GraphDef()
    graph_def.ParseFromString(data)
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    with tf.Session(graph=graph, config=config) as sess:
        return sess.run(meta["output"], {meta["input"]: x}), y


@requires_tensorflow
@pytest.mark.parametrize("name", model_zoo.MODELS)
def test_frozen_model_matches_tensorflow_at_batch_1(zoo, name):
    out, expected = run_frozen(name)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    error = np.abs(out.astype(np.float64) - expected).max() / np.abs(expected).max()
    assert error <= TOLERANCE[name], f"{name}: normwise error {error:.3g}"


@requires_tensorflow
@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet50"])
def test_unoptimized_plan_gives_the_same_outputs(zoo, name):
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    plain, expected = run_frozen(name, config)
    optimized, _ = run_frozen(name)
    error = np.abs(plain.astype(np.float64) - expected).max() / np.abs(expected).max()
    assert error <= TOLERANCE[name]
    np.testing.assert_allclose(optimized, plain, rtol=0, atol=TOLERANCE[name] * abs(plain).max())
