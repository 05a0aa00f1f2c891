"""fit / evaluate / predict on tf.data datasets in graph mode: (x, y), (x, y, sample_weight) and
x-only elements, steps_per_epoch over infinite datasets, epochs that end at the dataset's end,
and validation_data given as a dataset."""

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras


def problem():
    rng = np.random.RandomState(0)
    x = rng.rand(32, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    return x, y


def sgd(x, y, kernel, bias, lr, batches):
    kernel, bias = kernel.astype(np.float64), bias.astype(np.float64)
    for index in batches:
        error = x[index] @ kernel + bias - y[index]
        kernel = kernel - lr * 2 * x[index].T @ error / error.size
        bias = bias - lr * 2 * error.sum(0) / error.size
    return kernel, bias


def linear_model():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    return model


def test_fit_with_steps_per_epoch_on_a_repeated_dataset():
    x, y = problem()
    model = linear_model()
    kernel0, bias0 = model.get_weights()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).repeat()
    history = model.fit(dataset, steps_per_epoch=8, epochs=2, verbose=0)
    kernel, bias = sgd(x, y, kernel0, bias0, 0.1, [slice(None)] * 16)
    got_kernel, got_bias = model.get_weights()
    np.testing.assert_allclose(got_kernel, kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_bias, bias, rtol=1e-5, atol=1e-6)
    assert sorted(history.history) == ["loss", "mae"] and len(history.history["loss"]) == 2


def test_epochs_end_where_the_dataset_ends_and_validation_dataset():
    x, y = problem()
    model = linear_model()
    kernel0, bias0 = model.get_weights()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(10)   # 10, 10, 10, 2
    history = model.fit(dataset, epochs=2, verbose=0, validation_data=dataset)
    batches = [slice(0, 10), slice(10, 20), slice(20, 30), slice(30, 32)] * 2
    kernel, bias = sgd(x, y, kernel0, bias0, 0.1, batches)
    np.testing.assert_allclose(model.get_weights()[0], kernel, rtol=1e-5, atol=1e-6)
    error = x @ kernel + bias - y
    assert history.history["val_loss"][-1] == pytest.approx(float((error ** 2).mean()),
                                                            rel=1e-4)
    loss, mae = model.evaluate(dataset, verbose=0)
    assert loss == pytest.approx(float((error ** 2).mean()), rel=1e-4)
    assert mae == pytest.approx(float(np.abs(error).mean()), rel=1e-4)


def test_sample_weights_from_the_dataset():
    x, y = problem()
    model = linear_model()
    weights = np.where(np.arange(32) < 16, 1.0, 0.0).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y, weights)).batch(32)
    kernel, bias = model.get_weights()
    error = x @ kernel + bias - y
    expected = float((error[:16, 0] ** 2).sum() / 32)   # Keras: weighted sum / batch size
    assert model.evaluate(dataset, verbose=0)[0] == pytest.approx(expected, rel=1e-5)


def test_predict_on_a_dataset_of_inputs_only():
    x, _ = problem()
    model = linear_model()
    kernel, bias = model.get_weights()
    predictions = model.predict(tf.data.Dataset.from_tensor_slices(x).batch(7), verbose=0)
    np.testing.assert_allclose(predictions, x @ kernel + bias, rtol=1e-5, atol=1e-6)


def test_running_out_of_data_stops_training(capsys):
    x, y = problem()
    model = linear_model()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)   # 4 batches in all
    history = model.fit(dataset, steps_per_epoch=3, epochs=5, verbose=0)
    assert "Your input ran out of data; interrupting training" in capsys.readouterr().out
    assert len(history.history["loss"]) == 2
