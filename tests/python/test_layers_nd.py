"""tf.layers for 1-D and 3-D data: Conv1D, Conv3D, Conv3DTranspose, SeparableConv1D, the 1-D and
3-D pooling classes and their functional forms; variable names and shapes, outputs against real
TensorFlow's tf.compat.v1.layers with the same weights, and reuse; and tf.layers.InputSpec."""

import pickle

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

RNG = np.random.default_rng(31)
X1 = RNG.normal(size=(2, 9, 3)).astype(np.float32)
X3 = RNG.normal(size=(2, 5, 6, 7, 3)).astype(np.float32)

# (constructor, keyword arguments, input): built in both Flowstone and TensorFlow.
LAYERS = [
    ("Conv1D", dict(filters=4, kernel_size=3, strides=2, padding="same"), "X1"),
    ("SeparableConv1D", dict(filters=4, kernel_size=3, strides=2, depth_multiplier=2,
                             padding="same"), "X1"),
    ("SeparableConv1D", dict(filters=4, kernel_size=3, dilation_rate=2), "X1"),
    ("Conv3D", dict(filters=4, kernel_size=(2, 3, 2), strides=(1, 2, 1)), "X3"),
    ("Conv3DTranspose", dict(filters=4, kernel_size=(2, 3, 2), strides=(2, 1, 2),
                             padding="same"), "X3"),
    ("Conv3DTranspose", dict(filters=2, kernel_size=3, strides=2), "X3"),
    ("MaxPooling1D", dict(pool_size=2, strides=2), "X1"),
    ("AveragePooling1D", dict(pool_size=3, strides=2, padding="same"), "X1"),
    ("MaxPooling3D", dict(pool_size=2, strides=2), "X3"),
    ("AveragePooling3D", dict(pool_size=(2, 2, 3), strides=(1, 2, 2)), "X3"),
]


def _build_all():
    """Each layer applied to a placeholder, with weights drawn from RNG: (outputs, weights by
    variable name, placeholders)."""
    graph = tf.Graph()
    with graph.as_default():
        x1 = tf.placeholder(tf.float32, X1.shape)
        x3 = tf.placeholder(tf.float32, X3.shape)
        outputs = [getattr(tf.layers, name)(**kwargs)({"X1": x1, "X3": x3}[which])
                   for name, kwargs, which in LAYERS]
        variables = tf.global_variables()
    return graph, outputs, variables, x1, x3


def test_variables_and_shapes_are_tensorflows():
    _, outputs, variables, _, _ = _build_all()
    assert [o.shape.as_list() for o in outputs] == [
        [2, 5, 4], [2, 5, 4], [2, 5, 4], [2, 4, 2, 6, 4], [2, 10, 6, 14, 4], [2, 11, 13, 15, 2],
        [2, 4, 3], [2, 5, 3], [2, 2, 3, 3, 3], [2, 4, 3, 3, 3]]
    assert {v.op.name: v.shape.as_list() for v in variables} == {
        "conv1d/kernel": [3, 3, 4], "conv1d/bias": [4],
        "separable_conv1d/depthwise_kernel": [3, 3, 2],
        "separable_conv1d/pointwise_kernel": [1, 6, 4], "separable_conv1d/bias": [4],
        "separable_conv1d_1/depthwise_kernel": [3, 3, 1],
        "separable_conv1d_1/pointwise_kernel": [1, 3, 4], "separable_conv1d_1/bias": [4],
        "conv3d/kernel": [2, 3, 2, 3, 4], "conv3d/bias": [4],
        "conv3d_transpose/kernel": [2, 3, 2, 4, 3], "conv3d_transpose/bias": [4],
        "conv3d_transpose_1/kernel": [3, 3, 3, 2, 3], "conv3d_transpose_1/bias": [2]}


@requires_tensorflow
def test_outputs_match_tensorflow_layers(tmp_path):
    graph, outputs, variables, x1, x3 = _build_all()
    weights = {v.op.name: RNG.normal(size=v.shape.as_list()).astype(np.float32)
               for v in variables}
    with tf.Session(graph=graph) as sess:
        for v in variables:
            v.load(weights[v.op.name], sess)
        mine = sess.run(outputs, {x1: X1, x3: X3})
    (tmp_path / "inputs.pkl").write_bytes(pickle.dumps((LAYERS, weights, X1, X3)))
    run_tensorflow("""
        import os, pickle
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        layers, weights, x1_value, x3_value = pickle.load(open("inputs.pkl", "rb"))
        x1 = tf.compat.v1.placeholder(tf.float32, x1_value.shape)
        x3 = tf.compat.v1.placeholder(tf.float32, x3_value.shape)
        outputs = [getattr(tf.compat.v1.layers, name)(**kwargs)({"X1": x1, "X3": x3}[which])
                   for name, kwargs, which in layers]
        with tf.compat.v1.Session() as sess:
            for v in tf.compat.v1.global_variables():
                v.load(weights[v.op.name], sess)
            results = sess.run(outputs, {x1: x1_value, x3: x3_value})
        pickle.dump(results, open("results.pkl", "wb"))
    """, workdir=str(tmp_path))
    theirs = pickle.loads((tmp_path / "results.pkl").read_bytes())
    for (name, _, _), got, want in zip(LAYERS, mine, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=name)


def test_functional_forms_share_variables_with_reuse():
    x = tf.constant(X3)
    first = tf.layers.conv3d_transpose(x, 2, 3, name="up")
    second = tf.layers.conv3d_transpose(x, 2, 3, name="up", reuse=True)
    y = tf.layers.separable_conv1d(tf.constant(X1), 5, 2, depth_multiplier=3, name="sep")
    assert sorted(v.op.name for v in tf.global_variables()) == [
        "sep/bias", "sep/depthwise_kernel", "sep/pointwise_kernel", "up/bias", "up/kernel"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c = sess.run((first, second, y))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 7, 8, 9, 2) and c.shape == (2, 8, 5)


def test_layer_objects_track_their_weights_and_reuse_them():
    layer = tf.layers.Conv3D(4, 2, name="c3")
    layer(tf.constant(X3))
    layer(tf.constant(X3))
    assert [v.op.name for v in layer.trainable_weights] == ["c3/kernel", "c3/bias"]
    assert len(tf.global_variables()) == 2
    separable = tf.layers.SeparableConv1D(2, 3, use_bias=False)
    separable(tf.constant(X1))
    assert [v.op.name for v in separable.weights] == [
        "separable_conv1d/depthwise_kernel", "separable_conv1d/pointwise_kernel"]


def test_input_spec_is_keras_one():
    spec = tf.layers.InputSpec(ndim=3, axes={-1: 4})
    assert spec.ndim == 3 and spec.axes == {-1: 4}
    assert tf.layers.InputSpec is tf.keras.layers.InputSpec
    with pytest.raises(ValueError, match="expected ndim=5"):
        tf.layers.Conv3D(4, 2)(tf.constant(X1))
