"""The kerasmore additions in eager mode: learning-rate schedules in fit's traced step,
attention, preprocessing and image layers on eager tensors (numbers against numpy, and the
fit() comparisons with tf-keras of tests/python/keras run eagerly)."""

import os
import sys

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "keras"))
import test_keras_attention  # noqa: E402
import test_keras_schedules  # noqa: E402

keras = tf.keras


@pytest.fixture(autouse=True)
def fresh_keras():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def test_schedule_rate_is_computed_in_the_traced_step():
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay([1, 3], [0.5, 0.25, 0.125])
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), use_bias=False,
                                                 kernel_initializer="zeros")])
    model.compile(keras.optimizers.SGD(schedule, momentum=0.5), "mse")
    x, y = np.ones((1, 2), np.float32), np.ones((1, 1), np.float32)
    kernel, velocity, used = 0.0, 0.0, []
    for _ in range(5):
        model.train_on_batch(x, y)
        used.append(float(model.optimizer.learning_rate.numpy()))
        # Keras's momentum rule with the step's rate inside the velocity.
        velocity = 0.5 * velocity - used[-1] * 2 * (2 * kernel - 1)
        kernel += velocity
        np.testing.assert_allclose(model.get_weights()[0], [[kernel], [kernel]], rtol=1e-5)
    assert used == [0.5, 0.5, 0.25, 0.25, 0.125]


@pytest.mark.parametrize("case", sorted(test_keras_schedules.FIT_CASES)[:2])
def test_fit_with_a_schedule_matches_tf_keras_eagerly(case, tmp_path):
    if not test_keras_schedules.tf_keras_peer.available():
        pytest.skip(test_keras_schedules.tf_keras_peer.SKIP_REASON)
    test_keras_schedules.test_fit_with_a_schedule_matches_tf_keras(case, tmp_path)


def test_fit_through_multi_head_attention_eagerly(tmp_path):
    if not test_keras_attention.tf_keras_peer.available():
        pytest.skip(test_keras_attention.tf_keras_peer.SKIP_REASON)
    test_keras_attention.test_fit_through_attention_matches_tf_keras("mha_self_attention",
                                                                     tmp_path)


def test_layers_on_eager_tensors():
    arrays = test_keras_attention.ARRAYS
    test_keras_attention.test_attention_matches_numpy()
    q = tf.constant(arrays["q"])
    output, scores = keras.layers.MultiHeadAttention(2, 3)(q, q, return_attention_scores=True)
    assert output.shape == (2, 4, 3) and scores.shape == (2, 2, 4, 4)
    np.testing.assert_allclose(scores.numpy().sum(-1), np.ones((2, 2, 4)), rtol=1e-5)
    data = np.random.RandomState(0).rand(30, 3) * 10
    normalize = keras.layers.Normalization()
    normalize.adapt(data)
    np.testing.assert_allclose(normalize(data).numpy(), (data - data.mean(0)) / data.std(0),
                               rtol=1e-4, atol=1e-5)
    images = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6, 1)
    np.testing.assert_array_equal(keras.layers.CenterCrop(3, 2)(images).numpy(),
                                  images[:, 1:4, 2:4])
    assert keras.layers.Resizing(4, 3)(images).shape == (2, 4, 3, 1)
    np.testing.assert_allclose(keras.layers.Rescaling(0.5, 1.0)(images).numpy(),
                               images * 0.5 + 1)
