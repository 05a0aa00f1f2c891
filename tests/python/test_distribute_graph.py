"""tf.distribute in a TF1 graph program: a Keras model built under MirroredStrategy's scope
trains as it does without it (one replica)."""

import numpy as np

import flowstone as tf


def _fit(strategy):
    rng = np.random.RandomState(1)
    x = rng.randn(128, 4).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    weights = [rng.randn(4, 8).astype(np.float32), np.zeros(8, np.float32),
               rng.randn(8, 2).astype(np.float32), np.zeros(2, np.float32)]
    tf.reset_default_graph()
    tf.keras.backend.clear_session()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                                     tf.keras.layers.Dense(2)])
        model.set_weights(weights)
        model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    return history.history["loss"], model.get_weights()


def test_keras_fit_under_a_strategy_scope_equals_fit_without_it():
    losses, weights = _fit(tf.distribute.get_strategy())
    assert losses[-1] < losses[0]
    mirrored_losses, mirrored_weights = _fit(tf.distribute.MirroredStrategy())
    np.testing.assert_array_equal(mirrored_losses, losses)
    for got, want in zip(mirrored_weights, weights):
        np.testing.assert_array_equal(got, want)
