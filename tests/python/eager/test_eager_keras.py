"""tf.keras in eager mode: layers and models called on eager tensors, the TF2 custom training loop
(eagerly and under tf.function), and compile/fit/evaluate/predict, whose steps are traced once per
input signature. tf-keras (in the peer venv) is the oracle where installed."""

import contextlib
import io
import json
import os
import sys

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "keras"))
import tf_keras_peer  # noqa: E402
from test_keras_vs_tf_keras import (  # noqa: E402
    CASES, check_training_matches_tf_keras)

keras = tf.keras
requires_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                       reason=tf_keras_peer.SKIP_REASON)


@pytest.fixture(autouse=True)
def fresh_keras():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def dense_reference(x, kernel, bias):
    return x.astype(np.float64) @ kernel.astype(np.float64) + bias


# --- layers and models on eager tensors ------------------------------------------------------
def test_dense_on_eager_tensor_makes_eager_weights():
    layer = keras.layers.Dense(4)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = layer(tf.constant(x))
    assert isinstance(y, tf.Tensor) and y.shape.as_list() == [2, 4]
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(y.numpy(), dense_reference(x, kernel, bias), rtol=1e-6)
    assert [v.name for v in layer.trainable_variables] == ["dense/kernel:0", "dense/bias:0"]
    np.testing.assert_array_equal(layer.kernel.numpy(), kernel)
    layer.set_weights([np.ones((3, 4)), np.full(4, 0.5)])
    np.testing.assert_allclose(layer(x).numpy(), x.sum(1, keepdims=True) + 0.5 + np.zeros(4))
    with pytest.raises(ValueError, match="expecting 2 weights"):
        layer.set_weights([np.ones((3, 4))])


def test_sequential_without_and_with_input_shape():
    x = np.random.RandomState(0).rand(5, 3).astype(np.float32)
    deferred = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    out = deferred(x)
    (k1, b1, k2, b2) = deferred.get_weights()
    expected = dense_reference(np.maximum(dense_reference(x, k1, b1), 0), k2, b2)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)

    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                              keras.layers.Dense(2)])
    assert model.output_shape == (None, 2) and model.count_params() == 26
    model.set_weights([k1, b1, k2, b2])
    np.testing.assert_allclose(model(tf.constant(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    lines = []
    model.summary(print_fn=lines.append)
    assert any("Total params: 26" in line for line in lines)


def test_functional_model_built_symbolically_runs_on_eager_tensors():
    inputs = keras.Input(shape=(3,))
    hidden = keras.layers.Dense(4, activation="tanh")(inputs)
    model = keras.Model(inputs, [keras.layers.Dense(1)(hidden), hidden])
    x = np.random.RandomState(1).rand(4, 3).astype(np.float32)
    k1, b1, k2, b2 = model.get_weights()
    h = np.tanh(dense_reference(x, k1, b1))
    out, hid = model(x)
    np.testing.assert_allclose(hid.numpy(), h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), dense_reference(h, k2, b2), rtol=1e-5, atol=1e-6)
    assert len(model.weights) == 4 and all(v._eager for v in model.weights)


class TwoLayer(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.dropout = keras.layers.Dropout(0.5)
        self.out = keras.layers.Dense(1)

    def call(self, inputs, training=None):
        return self.out(self.dropout(self.hidden(inputs), training=training))


def test_subclassed_model_and_training_flag():
    model = TwoLayer()
    x = np.ones((64, 3), np.float32)
    inference = model(x).numpy()
    np.testing.assert_array_equal(model(x, training=False).numpy(), inference)
    assert len(model.trainable_variables) == 4
    k1, b1, k2, b2 = model.get_weights()
    h = np.maximum(dense_reference(x, k1, b1), 0)
    np.testing.assert_allclose(inference, dense_reference(h, k2, b2), rtol=1e-5, atol=1e-6)
    # Training drops about half of the hidden units of each row (and scales the rest by 2).
    model.set_weights([np.ones((3, 4)), np.ones(4), np.ones((4, 1)), np.zeros(1)])
    trained = model(x, training=True).numpy()[:, 0]
    assert set(np.unique(trained)) <= {0.0, 8.0, 16.0, 24.0, 32.0}
    assert len(np.unique(trained)) > 1 and 10 < trained.mean() < 22   # 16 on average


def test_batch_normalization_training_and_inference():
    layer = keras.layers.BatchNormalization(momentum=0.5)
    x = np.random.RandomState(2).rand(8, 3).astype(np.float32) * 4
    inference = layer(x).numpy()
    np.testing.assert_allclose(inference, x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), np.zeros(3))
    trained = layer(x, training=True).numpy()
    normalized = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(trained, normalized, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.5 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.5 + 0.5 * x.var(0), rtol=1e-5)


def test_weight_regularizer_penalty_follows_the_variable():
    layer = keras.layers.Dense(2, kernel_regularizer=keras.regularizers.l2(0.1))
    layer(np.ones((1, 3), np.float32))
    layer.set_weights([np.ones((3, 2)), np.zeros(2)])
    (penalty,) = layer.losses
    np.testing.assert_allclose(penalty.numpy(), 0.1 * 6, rtol=1e-6)
    layer.set_weights([2 * np.ones((3, 2)), np.zeros(2)])
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.1 * 24, rtol=1e-6)


class PenalizedDense(keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (int(input_shape[-1]), 1), initializer="ones")

    def call(self, inputs):
        outputs = tf.matmul(inputs, self.kernel)
        self.add_loss(tf.reduce_mean(tf.abs(outputs)))
        return outputs


def test_losses_added_by_a_call_are_that_calls():
    layer = keras.layers.Dense(2, kernel_initializer="ones",
                               activity_regularizer=keras.regularizers.l1(0.5))
    layer(np.ones((2, 3), np.float32))
    (first,) = layer.losses
    np.testing.assert_allclose(first.numpy(), 0.5 * 12 / 2, rtol=1e-6)
    layer(np.full((4, 3), 2.0, np.float32))
    (second,) = layer.losses
    np.testing.assert_allclose(second.numpy(), 0.5 * 48 / 4, rtol=1e-6)

    # fit adds the penalty to the loss, in the traced step as well.
    x = np.array([[1.0, 2.0], [-3.0, 1.0]], np.float32)
    y = np.zeros((2, 1), np.float32)
    model = keras.Sequential([PenalizedDense()])
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    loss = model.evaluate(x, y, verbose=0)
    outputs = x.sum(1)
    assert loss == pytest.approx((outputs ** 2).mean() + np.abs(outputs).mean(), rel=1e-6)
    assert len(model.losses) == 1


# --- the custom training loop ------------------------------------------------------------------
def linear_problem():
    rng = np.random.RandomState(3)
    x = rng.rand(16, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    return x, y


def sgd_reference(x, y, kernel, bias, lr, steps):
    kernel, bias = kernel.astype(np.float64), bias.astype(np.float64)
    for _ in range(steps):
        error = x @ kernel + bias - y
        kernel = kernel - lr * 2 * x.T @ error / error.size
        bias = bias - lr * 2 * error.sum(0) / error.size
    return kernel, bias


@pytest.mark.parametrize("traced", [False, True])
def test_gradient_tape_loop_with_sgd(traced):
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    kernel0, bias0 = model.get_weights()
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD(0.1)
    metric = keras.metrics.Mean()

    def step(inputs, targets):
        with tf.GradientTape() as tape:
            loss = loss_fn(targets, model(inputs, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        metric.update_state(loss)
        return loss

    if traced:
        step = tf.function(step)
    for _ in range(5):
        step(tf.constant(x), tf.constant(y))
    kernel, bias = sgd_reference(x, y, kernel0, bias0, 0.1, 5)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), bias, rtol=1e-5, atol=1e-6)
    assert int(optimizer.iterations.numpy()) == 5
    assert metric.result().numpy() > 0
    metric.reset_states()
    assert metric.result().numpy() == 0
    if traced:
        assert step.experimental_get_tracing_count() == 1


def test_losses_and_metrics_objects_eagerly():
    y_true = np.array([0, 2, 1, 2])
    logits = np.array([[2.0, 0.1, 0.3], [0.1, 0.2, 3.0], [1.0, 1.5, 0.1], [0.2, 2.0, 0.1]],
                      np.float32)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y_true, logits)
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.numpy(), -log_softmax[range(4), y_true].mean(), rtol=1e-6)
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(y_true[:2], logits[:2])
    accuracy.update_state(y_true[2:], logits[2:])
    assert accuracy.result().numpy() == pytest.approx(0.75)
    accuracy.reset_states()
    accuracy.update_state(y_true[3:], logits[3:])
    assert accuracy.result().numpy() == 0.0


def run_both(script, folder):
    """Runs `script` (Keras code that prints one JSON line last) here, eagerly, and in tf-keras;
    returns both results."""
    theirs = json.loads(tf_keras_peer.run("import json\n" + script, cwd=folder)
                        .strip().splitlines()[-1])
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(script, {"keras": keras, "tf": tf, "np": np, "json": json})  # noqa: S102
    finally:
        os.chdir(cwd)
    return json.loads(out.getvalue().strip().splitlines()[-1]), theirs


ADAM_LOOP = """
model = keras.Sequential([keras.layers.Dense(4, activation='relu', input_shape=(3,)),
                          keras.layers.Dense(1)])
model.set_weights([np.load(f'w{i}.npy') for i in range(4)])
x, y = np.load('x.npy'), np.load('y.npy')
optimizer = keras.optimizers.Adam(0.05)
loss_fn = keras.losses.MeanSquaredError()
STEP
losses = [float(step(tf.constant(x), tf.constant(y))) for _ in range(10)]
print(json.dumps({'losses': losses, 'weights': [w.tolist() for w in model.get_weights()]}))
"""
STEP = """
@tf.function
def step(inputs, targets):
    with tf.GradientTape() as tape:
        loss = loss_fn(targets, model(inputs, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""


@requires_tf_keras
def test_traced_adam_loop_matches_tf_keras(tmp_path):
    x, y = linear_problem()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    rng = np.random.RandomState(4)
    for i, shape in enumerate([(3, 4), (4,), (4, 1), (1,)]):
        np.save(tmp_path / f"w{i}.npy", rng.uniform(-0.5, 0.5, shape).astype(np.float32))
    ours, theirs = run_both(ADAM_LOOP.replace("STEP", STEP), tmp_path)
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-4, atol=1e-6)
    for a, b in zip(ours["weights"], theirs["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# --- compile / fit / evaluate / predict -----------------------------------------------------------
def test_fit_traces_the_train_step_once_per_signature():
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    kernel0, bias0 = model.get_weights()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    kernel, bias = sgd_reference(x, y, kernel0, bias0, 0.1, 3)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), bias, rtol=1e-5, atol=1e-6)
    assert len(history.history["loss"]) == 3
    # 16 samples in batches of 5: three full batches and one of 1, all one trace.
    model.fit(x, y, batch_size=5, epochs=1, verbose=0)
    (plan,) = [p for key, p in model._plans.items() if key[0] == "train"]
    assert plan.function.experimental_get_tracing_count() == 1
    loss = model.evaluate(x, y, verbose=0)
    error = x @ model.layers[0].kernel.numpy() + model.layers[0].bias.numpy() - y
    assert loss == pytest.approx(float((error ** 2).mean()), rel=1e-5)


def test_run_eagerly_gives_the_same_weights():
    x, y = linear_problem()
    results = []
    for run_eagerly in (False, True):
        keras.backend.clear_session()
        model = keras.Sequential([keras.layers.Dense(2, activation="tanh", input_shape=(3,)),
                                  keras.layers.Dense(1)])
        model.set_weights([np.full((3, 2), 0.1), np.zeros(2), np.full((2, 1), 0.2), np.zeros(1)])
        model.compile(optimizer="adam", loss="mae", metrics=["mse", "accuracy"],
                      run_eagerly=run_eagerly)
        history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        results.append((model.get_weights(), history.history))
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert set(results[0][1]) == {"loss", "mse", "accuracy"}
    np.testing.assert_allclose(results[0][1]["mse"], results[1][1]["mse"], rtol=1e-5)


def test_fit_progress_bar_and_callbacks(capsys):
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    seen = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append((epoch, sorted(logs))))
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x, y), callbacks=[callback],
              verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 2/2" in out and "val_loss:" in out and " - mae: " in out
    assert seen == [(0, ["loss", "mae", "val_loss", "val_mae"]),
                    (1, ["loss", "mae", "val_loss", "val_mae"])]


@requires_tf_keras
@pytest.mark.parametrize("case", sorted(CASES))
def test_eager_fit_matches_tf_keras(case, tmp_path):
    check_training_matches_tf_keras(case, tmp_path)


SUBCLASSED_ON_DATASET = """
class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation='relu')
        self.norm = keras.layers.BatchNormalization()
        self.out = keras.layers.Dense(1)

    def call(self, inputs, training=None):
        return self.out(self.norm(self.hidden(inputs), training=training))

model = Net()
model(np.zeros((1, 3), np.float32))
model.set_weights([np.load(f'w{i}.npy') for i in range(8)])
model.compile(optimizer=keras.optimizers.Adam(0.02), loss='mse', metrics=['mae'])
x, y = np.load('x.npy'), np.load('y.npy')
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
history = model.fit(data.repeat(), steps_per_epoch=3, epochs=3, verbose=0, validation_data=data)
print(json.dumps({'history': history.history, 'predictions': model.predict(x).tolist(),
                  'weights': [w.tolist() for w in model.get_weights()]}))
"""


@requires_tf_keras
def test_subclassed_model_fit_on_dataset_matches_tf_keras(tmp_path):
    x, y = linear_problem()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    rng = np.random.RandomState(5)
    # Dense: kernel, bias; BatchNormalization: gamma, beta, moving mean and variance; Dense.
    values = [rng.uniform(-0.5, 0.5, s).astype(np.float32)
              for s in [(3, 4), (4,), (4,), (4,), (4,), (4,), (4, 1), (1,)]]
    values[2] += 1.0
    values[5] = np.abs(values[5]) + 0.5
    for i, value in enumerate(values):
        np.save(tmp_path / f"w{i}.npy", value)
    ours, theirs = run_both(SUBCLASSED_ON_DATASET, tmp_path)
    assert set(ours["history"]) == set(theirs["history"]) == {"loss", "mae", "val_loss",
                                                              "val_mae"}
    for key in theirs["history"]:
        np.testing.assert_allclose(ours["history"][key], theirs["history"][key], rtol=1e-3,
                                   atol=1e-5, err_msg=key)
    np.testing.assert_allclose(ours["predictions"], theirs["predictions"], rtol=1e-3, atol=1e-5)
    for a, b in zip(ours["weights"], theirs["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


# --- tf.data ----------------------------------------------------------------------------------
def test_fit_evaluate_predict_on_datasets():
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    kernel0, bias0 = model.get_weights()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = model.fit(dataset.repeat(), steps_per_epoch=1, epochs=2, verbose=0,
                        validation_data=dataset)
    kernel, bias = sgd_reference(x, y, kernel0, bias0, 0.1, 2)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), kernel, rtol=1e-5, atol=1e-6)
    assert sorted(history.history) == ["loss", "val_loss"]
    # An epoch without steps_per_epoch ends where the dataset does.
    model.fit(dataset, epochs=1, verbose=0)
    kernel, bias = sgd_reference(x, y, kernel, bias, 0.1, 1)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), bias, rtol=1e-5, atol=1e-6)
    error = x @ kernel + bias - y
    assert model.evaluate(dataset, verbose=0) == pytest.approx(float((error ** 2).mean()),
                                                                rel=1e-4)
    weighted = tf.data.Dataset.from_tensor_slices((x, y, np.ones(16, np.float32))).batch(4)
    assert model.evaluate(weighted, verbose=0) == pytest.approx(float((error ** 2).mean()),
                                                                 rel=1e-4)
    predictions = model.predict(tf.data.Dataset.from_tensor_slices(x).batch(5), verbose=0)
    np.testing.assert_allclose(predictions, x @ kernel + bias, rtol=1e-5, atol=1e-6)


def test_save_and_load_h5_in_eager_mode(tmp_path):
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(3,)),
                              keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=1, verbose=0)
    model.save(str(tmp_path / "m.h5"))
    model.save_weights(str(tmp_path / "w.h5"))
    loaded = keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    loaded.fit(x, y, epochs=1, verbose=0)
    loaded.load_weights(str(tmp_path / "w.h5"))
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_tensorboard_callback_writes_scalars_and_histograms(tmp_path):
    x, y = linear_problem()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer="sgd", loss="mse")
    board = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[board])
    (events,) = os.listdir(tmp_path)
    scalars, histograms = {}, set()
    for event in tf.train.summary_iterator(str(tmp_path / events)):
        for value in event.summary.value:
            if value.tag == "epoch_loss":
                scalars[event.step] = tf.make_ndarray(value.tensor) if value.HasField(
                    "tensor") else value.simple_value
            else:
                histograms.add((value.tag, event.step))
    assert sorted(scalars) == [0, 1]
    np.testing.assert_allclose([float(scalars[0]), float(scalars[1])],
                               history.history["loss"], rtol=1e-6)
    assert ("dense/kernel_0", 1) in histograms


REGULARIZED = """
model = keras.Sequential([
    keras.layers.Dense(4, activation='tanh', input_shape=(3,),
                       kernel_regularizer=keras.regularizers.l2(0.01),
                       activity_regularizer=keras.regularizers.l1(0.001)),
    keras.layers.Dropout(0.0), keras.layers.Dense(1, bias_regularizer='l1')])
model.set_weights([np.load(f'w{i}.npy') for i in range(4)])
model.compile(optimizer=keras.optimizers.RMSprop(0.01), loss='mse')
history = model.fit(np.load('x.npy'), np.load('y.npy'), batch_size=4, epochs=3, shuffle=False,
                    verbose=0)
print(json.dumps({'history': history.history, 'evaluate': model.evaluate(
    np.load('x.npy'), np.load('y.npy'), verbose=0)}))
"""


@requires_tf_keras
def test_regularized_fit_matches_tf_keras(tmp_path):
    x, y = linear_problem()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    rng = np.random.RandomState(6)
    for i, shape in enumerate([(3, 4), (4,), (4, 1), (1,)]):
        np.save(tmp_path / f"w{i}.npy", rng.uniform(-0.5, 0.5, shape).astype(np.float32))
    ours, theirs = run_both(REGULARIZED, tmp_path)
    np.testing.assert_allclose(ours["history"]["loss"], theirs["history"]["loss"], rtol=1e-3)
    np.testing.assert_allclose(ours["evaluate"], theirs["evaluate"], rtol=1e-3)
