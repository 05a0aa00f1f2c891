"""Keras layers against numpy: each layer's forward pass with its own weights, its shapes and
its config round trip."""

import os
import sys

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conv_reference import conv_ref, pool_ref  # noqa: E402

keras = tf.keras
RNG = np.random.RandomState(0)


def run(layer, *arrays, training=None):
    """The layer's output on `arrays` through a functional model (one session call)."""
    inputs = [keras.Input(a.shape[1:], dtype="int32" if a.dtype.kind == "i" else "float32")
              for a in arrays]
    kwargs = {} if training is None else {"training": training}
    out = layer(inputs if len(inputs) > 1 else inputs[0], **kwargs)
    model = keras.Model(inputs, out)
    return model.predict(list(arrays) if len(arrays) > 1 else arrays[0], verbose=0)


def roundtrip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    return config


def test_dense_with_activation_and_higher_rank_input():
    x = RNG.rand(4, 3, 5).astype(np.float32)
    layer = keras.layers.Dense(2, activation="tanh")
    got = run(layer, x)
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(got, np.tanh(x @ kernel + bias), rtol=1e-5, atol=1e-6)
    config = roundtrip(layer)
    assert config["activation"] == "tanh"
    assert config["kernel_initializer"] == {"class_name": "GlorotUniform",
                                            "config": {"seed": None}}


def test_core_shape_layers():
    x = RNG.rand(2, 3, 4).astype(np.float32)
    np.testing.assert_array_equal(run(keras.layers.Flatten(), x), x.reshape(2, 12))
    np.testing.assert_array_equal(run(keras.layers.Reshape((4, 3)), x), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(run(keras.layers.Reshape((-1, 2)), x), x.reshape(2, 6, 2))
    np.testing.assert_array_equal(run(keras.layers.Permute((2, 1)), x), x.transpose(0, 2, 1))
    v = RNG.rand(2, 3).astype(np.float32)
    np.testing.assert_array_equal(run(keras.layers.RepeatVector(4), v),
                                  np.repeat(v[:, None, :], 4, axis=1))
    np.testing.assert_allclose(run(keras.layers.Activation("relu"), v - 0.5),
                               np.maximum(v - 0.5, 0))
    np.testing.assert_allclose(run(keras.layers.Lambda(lambda t: t * 2 + 1), v), v * 2 + 1)


def test_reshape_to_a_wrong_size_is_a_value_error():
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        keras.layers.Reshape((5,))(keras.Input((2, 3)))


def test_dropout_scales_in_training_and_is_identity_at_inference():
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(run(keras.layers.Dropout(0.5), x), x)
    keras.backend.clear_session()
    trained = run(keras.layers.Dropout(0.5), x, training=True)
    assert set(np.unique(trained)) <= {0.0, 2.0}
    assert 0.4 < (trained == 0).mean() < 0.6


def test_conv_layers_match_the_reference():
    x = RNG.rand(2, 7, 6, 3).astype(np.float32)
    conv = keras.layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")
    got = run(conv, x)
    kernel, bias = conv.get_weights()
    want = np.maximum(conv_ref(x, kernel, (2, 2), "SAME") + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert conv.output_shape == (None, 4, 3, 4)

    seq = RNG.rand(2, 9, 3).astype(np.float32)
    conv1 = keras.layers.Conv1D(2, 3, padding="causal")
    got = run(conv1, seq)
    kernel, bias = conv1.get_weights()
    padded = np.pad(seq, [(0, 0), (2, 0), (0, 0)])
    want = conv_ref(padded[:, None], kernel[None], (1, 1), "VALID")[:, 0] + bias
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    depthwise = keras.layers.DepthwiseConv2D(3, depth_multiplier=2, use_bias=False)
    got = run(depthwise, x)
    (dk,) = depthwise.get_weights()
    want = np.concatenate([conv_ref(x[..., c:c + 1], dk[:, :, c:c + 1, :], (1, 1), "VALID")
                           for c in range(3)], axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    separable = keras.layers.SeparableConv2D(5, 3, use_bias=False)
    got = run(separable, x)
    dk, pk = separable.get_weights()
    depth = np.concatenate([conv_ref(x[..., c:c + 1], dk[:, :, c:c + 1, :], (1, 1), "VALID")
                            for c in range(3)], axis=-1)
    np.testing.assert_allclose(got, depth @ pk[0, 0], rtol=1e-4, atol=1e-5)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    x = RNG.rand(2, 4, 4, 3).astype(np.float32)
    layer = keras.layers.Conv2DTranspose(2, 3, strides=2, padding="same", use_bias=False)
    got = run(layer, x)
    assert got.shape == (2, 8, 8, 2)
    (kernel,) = layer.get_weights()
    # <conv_transpose(x), y> == <x, conv(y)> with the same kernel.
    y = RNG.rand(2, 8, 8, 2).astype(np.float32)
    forward = conv_ref(y, kernel, (2, 2), "SAME")
    np.testing.assert_allclose(np.sum(got * y), np.sum(x * forward), rtol=1e-4)


def test_pooling_padding_cropping_upsampling():
    x = RNG.rand(2, 6, 5, 3).astype(np.float32)
    np.testing.assert_allclose(run(keras.layers.MaxPooling2D(), x),
                               pool_ref(x, (2, 2), (2, 2), "VALID", kind="max"))
    np.testing.assert_allclose(run(keras.layers.AveragePooling2D(3, 1, padding="same"), x),
                               pool_ref(x, (3, 3), (1, 1), "SAME", kind="avg"), rtol=1e-5)
    np.testing.assert_allclose(run(keras.layers.GlobalAveragePooling2D(), x),
                               x.mean(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(run(keras.layers.GlobalMaxPooling2D(), x), x.max(axis=(1, 2)))
    np.testing.assert_array_equal(run(keras.layers.ZeroPadding2D(((1, 0), (2, 1))), x),
                                  np.pad(x, [(0, 0), (1, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(run(keras.layers.Cropping2D(((1, 2), (0, 1))), x),
                                  x[:, 1:-2, 0:-1])
    np.testing.assert_array_equal(run(keras.layers.UpSampling2D((2, 3)), x),
                                  x.repeat(2, axis=1).repeat(3, axis=2))
    seq = RNG.rand(2, 8, 3).astype(np.float32)
    np.testing.assert_allclose(run(keras.layers.MaxPooling1D(2), seq),
                               seq.reshape(2, 4, 2, 3).max(axis=2))
    np.testing.assert_allclose(run(keras.layers.AveragePooling1D(4), seq),
                               seq.reshape(2, 2, 4, 3).mean(axis=2), rtol=1e-5)
    np.testing.assert_allclose(run(keras.layers.GlobalAveragePooling1D(), seq),
                               seq.mean(axis=1), rtol=1e-5)


def test_channels_first_conv_transposes_around_the_kernel():
    x = RNG.rand(2, 3, 6, 6).astype(np.float32)
    conv = keras.layers.Conv2D(2, 3, data_format="channels_first", use_bias=False)
    got = run(conv, x)
    (kernel,) = conv.get_weights()
    want = conv_ref(x.transpose(0, 2, 3, 1), kernel, (1, 1), "VALID").transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_batch_normalization_training_inference_and_moving_statistics():
    x = (RNG.rand(16, 3) * 4 + 1).astype(np.float32)
    model = keras.Sequential([keras.layers.BatchNormalization(momentum=0.5, input_shape=(3,))])
    model.compile("sgd", "mse")
    bn = model.layers[0]
    # Inference uses the moving statistics (0 and 1 at first): nearly the identity.
    np.testing.assert_allclose(model.predict(x, verbose=0), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    # One training step normalizes with the batch statistics and moves the averages halfway.
    model.train_on_batch(x, np.zeros_like(x))
    mean, var = x.mean(0), x.var(0)
    gamma, beta, moving_mean, moving_var = bn.get_weights()
    np.testing.assert_allclose(moving_mean, 0.5 * mean, rtol=1e-5)
    np.testing.assert_allclose(moving_var, 0.5 + 0.5 * var, rtol=1e-5)
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    expected = (x - moving_mean) / np.sqrt(moving_var + 1e-3) * gamma + beta
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)


def test_frozen_batch_normalization_runs_in_inference_mode():
    x = (RNG.rand(16, 3) * 4 + 1).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(3,)),
                              keras.layers.BatchNormalization()])
    model.layers[1].trainable = False
    model.compile("sgd", "mse")
    model.train_on_batch(x, x)
    _, _, moving_mean, moving_var = model.layers[1].get_weights()
    np.testing.assert_array_equal(moving_mean, np.zeros(3))
    np.testing.assert_array_equal(moving_var, np.ones(3))


def test_layer_normalization():
    x = RNG.rand(4, 6).astype(np.float32)
    got = run(keras.layers.LayerNormalization(), x)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_embedding_lookup_and_mask_zero():
    ids = np.array([[1, 2, 0], [3, 0, 0]], np.int32)
    layer = keras.layers.Embedding(5, 2, mask_zero=True)
    got = run(layer, ids)
    (table,) = layer.get_weights()
    np.testing.assert_array_equal(got, table[ids])
    mask = layer.compute_mask(tf.constant(ids))
    np.testing.assert_array_equal(keras.backend.get_value(mask), ids != 0)
    assert np.all(np.abs(table) <= 0.05)  # Keras's 'uniform' initializer: U(-0.05, 0.05)


def test_merging_layers():
    a = RNG.rand(3, 4).astype(np.float32)
    b = RNG.rand(3, 4).astype(np.float32)
    np.testing.assert_allclose(run(keras.layers.Add(), a, b), a + b)
    np.testing.assert_allclose(run(keras.layers.Subtract(), a, b), a - b)
    np.testing.assert_allclose(run(keras.layers.Multiply(), a, b), a * b)
    np.testing.assert_allclose(run(keras.layers.Average(), a, b), (a + b) / 2)
    np.testing.assert_allclose(run(keras.layers.Maximum(), a, b), np.maximum(a, b))
    np.testing.assert_allclose(run(keras.layers.Minimum(), a, b), np.minimum(a, b))
    np.testing.assert_allclose(run(keras.layers.Concatenate(), a, b), np.concatenate([a, b], 1))
    np.testing.assert_allclose(run(keras.layers.Dot(axes=1), a, b),
                               np.sum(a * b, 1, keepdims=True), rtol=1e-5)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(run(keras.layers.Dot(axes=1, normalize=True), a, b),
                               np.sum(unit(a) * unit(b), 1, keepdims=True), rtol=1e-5)


def test_merge_of_a_single_tensor_is_a_value_error():
    with pytest.raises(ValueError, match="A merge layer should be called on a list of inputs"):
        keras.layers.Add()(keras.Input((3,)))


def test_activation_layers():
    x = (RNG.rand(3, 4).astype(np.float32) - 0.5) * 4
    np.testing.assert_allclose(run(keras.layers.LeakyReLU(0.1), x), np.where(x > 0, x, 0.1 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(run(keras.layers.ReLU(max_value=1.0), x), np.clip(x, 0, 1))
    np.testing.assert_allclose(run(keras.layers.ELU(), x), np.where(x > 0, x, np.exp(x) - 1),
                               rtol=1e-5, atol=1e-6)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(run(keras.layers.Softmax(), x), e / e.sum(-1, keepdims=True),
                               rtol=1e-5)
    prelu = keras.layers.PReLU(alpha_initializer=keras.initializers.Constant(0.25))
    np.testing.assert_allclose(run(prelu, x), np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    assert prelu.get_weights()[0].shape == (4,)


def test_initializers_regularizers_constraints_by_name_and_object():
    assert isinstance(keras.initializers.get("he_normal"), keras.initializers.HeNormal)
    assert isinstance(keras.initializers.get("GlorotUniform"), keras.initializers.GlorotUniform)
    init = keras.initializers.get({"class_name": "RandomNormal",
                                   "config": {"mean": 1.0, "stddev": 0.0, "seed": None}})
    np.testing.assert_allclose(keras.backend.get_value(init((2, 2))), np.ones((2, 2)))
    reg = keras.regularizers.get({"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}})
    w = np.array([[1.0, -2.0]], np.float32)
    assert keras.backend.get_value(reg(tf.constant(w))) == pytest.approx(0.1 * 3 + 0.2 * 5)
    constraint = keras.constraints.get("non_neg")
    np.testing.assert_array_equal(keras.backend.get_value(constraint(tf.constant(w))),
                                  [[1.0, 0.0]])
    assert keras.activations.get("relu") is keras.activations.relu
    with pytest.raises(ValueError, match="Unknown activation function: 'nope'"):
        keras.activations.get("nope")


def test_constraint_is_applied_after_each_step():
    model = keras.Sequential([keras.layers.Dense(
        2, input_shape=(2,), kernel_constraint=keras.constraints.NonNeg(),
        kernel_initializer=keras.initializers.Constant(-1.0))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.train_on_batch(np.ones((4, 2)), np.zeros((4, 2)))
    assert np.all(model.get_weights()[0] >= 0)


def test_input_spec_rejects_a_wrong_rank():
    with pytest.raises(ValueError, match='Input 0 of layer "conv2d" is incompatible with the '
                                         r"layer: expected min_ndim=4, found ndim=2. Full "
                                         r"shape received: \(None, 3\)"):
        keras.layers.Conv2D(1, 1)(keras.Input((3,)))
