"""compile / fit / evaluate / predict: losses, metrics and optimizer steps against numpy, data
sources, weights, and the progress bar's exact text."""

import re

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras
RNG = np.random.RandomState(0)


def linear_model(units=1, inputs=3, **compile_args):
    model = keras.Sequential([keras.layers.Dense(units, input_shape=(inputs,))])
    model.compile(**compile_args)
    return model


def forward(model, x):
    kernel, bias = model.get_weights()
    return x @ kernel + bias


# --- losses ---------------------------------------------------------------------------------
def _probabilities(shape):
    p = RNG.rand(*shape).astype(np.float32) + 0.1
    return p / p.sum(-1, keepdims=True)


LOSS_CASES = [
    ("mse", lambda t, p: np.mean((p - t) ** 2, -1)),
    ("mae", lambda t, p: np.mean(np.abs(p - t), -1)),
    ("binary_crossentropy",
     lambda t, p: -np.mean(t * np.log(p + 1e-7) + (1 - t) * np.log(1 - p + 1e-7), -1)),
    ("categorical_crossentropy", lambda t, p: -np.sum(t * np.log(p), -1)),
    ("kld", lambda t, p: np.sum(np.clip(t, 1e-7, 1) * np.log(np.clip(t, 1e-7, 1) / p), -1)),
    (keras.losses.Huber(delta=0.5),
     lambda t, p: np.mean(np.where(np.abs(p - t) <= 0.5, 0.5 * (p - t) ** 2,
                                   0.5 * np.abs(p - t) - 0.125), -1)),
]


@pytest.mark.parametrize("loss,reference", LOSS_CASES,
                         ids=[str(c[0]) if isinstance(c[0], str) else "huber"
                              for c in LOSS_CASES])
def test_losses_match_numpy(loss, reference):
    y_true = _probabilities((6, 4))
    y_pred = _probabilities((6, 4))
    got = keras.backend.get_value(keras.losses.get(loss)(tf.constant(y_true),
                                                         tf.constant(y_pred)))
    want = reference(y_true.astype(np.float64), y_pred.astype(np.float64))
    np.testing.assert_allclose(got, want.mean() if np.ndim(got) == 0 else want, rtol=1e-4)


def test_sparse_categorical_crossentropy_from_logits_and_probabilities():
    logits = RNG.randn(5, 3).astype(np.float32)
    labels = np.array([0, 2, 1, 1, 0])
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -log_softmax[np.arange(5), labels]
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                      reduction=keras.losses.Reduction.NONE)
    np.testing.assert_allclose(keras.backend.get_value(loss(labels, tf.constant(logits))), want,
                               rtol=1e-5)
    probs = np.exp(log_softmax).astype(np.float32)
    got = keras.backend.get_value(keras.losses.sparse_categorical_crossentropy(
        labels[:, None], tf.constant(probs)))
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_loss_reduction_with_sample_weight_is_sum_over_batch_size():
    y_true = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    y_pred = np.zeros((4, 1), np.float32)
    weights = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    got = keras.backend.get_value(keras.losses.MeanSquaredError()(y_true, y_pred, weights))
    assert got == pytest.approx((1 * 1 + 0 + 9 * 2 + 16 * 0.5) / 4)


# --- metrics ------------------------------------------------------------------------------------
def evaluate_metric(metric, y_true, y_pred, sample_weight=None):
    update = metric.update_state(tf.constant(y_true), tf.constant(y_pred),
                                 None if sample_weight is None else tf.constant(sample_weight))
    with tf.control_dependencies([update]):
        result = metric.result()
    return keras.backend.get_value(result)


def test_accuracy_resolution_follows_keras():
    rng = np.random.RandomState(1)
    x = rng.rand(40, 3).astype(np.float32)
    sparse = rng.randint(0, 4, size=40)
    onehot = np.eye(4, dtype=np.float32)[sparse]
    binary = (rng.rand(40, 1) > 0.5).astype(np.float32)
    for y, units, loss, activation in ((sparse, 4, "sparse_categorical_crossentropy", "softmax"),
                                       (onehot, 4, "categorical_crossentropy", "softmax"),
                                       (binary, 1, "binary_crossentropy", "sigmoid")):
        keras.backend.clear_session()
        model = keras.Sequential([keras.layers.Dense(units, activation=activation,
                                                     input_shape=(3,))])
        model.compile("sgd", loss, metrics=["accuracy"])
        _, accuracy = model.evaluate(x, y, verbose=0)
        pred = model.predict(x, verbose=0)
        if units == 1:
            want = np.mean((pred > 0.5) == binary)
        else:
            want = np.mean(pred.argmax(-1) == sparse)
        assert accuracy == pytest.approx(want), loss
        assert model.metrics_names == ["loss", "accuracy"]


def test_auc_precision_recall_against_sklearn():
    from sklearn.metrics import precision_score, recall_score, roc_auc_score
    rng = np.random.RandomState(2)
    y_true = (rng.rand(200) > 0.5).astype(np.float32)
    y_pred = np.clip(y_true * 0.3 + rng.rand(200) * 0.7, 0, 1).astype(np.float32)
    auc = evaluate_metric(keras.metrics.AUC(num_thresholds=1000), y_true, y_pred)
    assert auc == pytest.approx(roc_auc_score(y_true, y_pred), abs=2e-3)
    precision = evaluate_metric(keras.metrics.Precision(), y_true, y_pred)
    assert precision == pytest.approx(precision_score(y_true, y_pred > 0.5), rel=1e-5)
    recall = evaluate_metric(keras.metrics.Recall(), y_true, y_pred)
    assert recall == pytest.approx(recall_score(y_true, y_pred > 0.5), rel=1e-5)


def test_mean_iou_and_top_k():
    y_true = np.array([0, 0, 1, 1, 2], np.int32)
    y_pred = np.array([0, 1, 1, 1, 0], np.int32)
    # IoU per class: 1/3, 2/3, 0/1 -> mean 1/3.
    assert evaluate_metric(keras.metrics.MeanIoU(3), y_true, y_pred) == pytest.approx(1 / 3)
    scores = np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]], np.float32)
    labels = np.array([2, 2])
    got = evaluate_metric(keras.metrics.SparseTopKCategoricalAccuracy(k=2), labels, scores)
    assert got == pytest.approx(0.5)


def test_mean_metric_accumulates_with_weights_and_resets():
    metric = keras.metrics.Mean()
    values = tf.placeholder(tf.float32, [None])
    weights = tf.placeholder(tf.float32, [None])
    update = metric.update_state(values, weights)
    session = keras.backend.get_session()
    session.run(update, {values: [1.0, 2.0], weights: [1.0, 3.0]})
    session.run(update, {values: [4.0], weights: [1.0]})
    assert keras.backend.get_value(metric.result()) == pytest.approx((1 + 6 + 4) / 5)
    metric.reset_state()
    assert keras.backend.get_value(metric.result()) == 0.0


# --- optimizers: one step against the update rule ---------------------------------------------
def one_step(optimizer, steps=2):
    """(weights before, gradients, weights after `steps` steps) of mse on a linear model."""
    x = RNG.rand(8, 3).astype(np.float32)
    y = RNG.rand(8, 1).astype(np.float32)
    model = linear_model(optimizer=optimizer, loss="mse")
    history = [model.get_weights()]
    grads = []
    for _ in range(steps):
        kernel, bias = model.get_weights()
        err = 2 * (x @ kernel + bias - y) / len(x)
        grads.append([x.T @ err, err.sum(0)])
        model.train_on_batch(x, y)
        history.append(model.get_weights())
    return history, grads


def check_rule(optimizer, rule, state):
    history, grads = one_step(optimizer)
    weights = [w.astype(np.float64) for w in history[0]]
    for step, g in enumerate(grads, start=1):
        weights = [rule(w, gi.astype(np.float64), state[i], step)
                   for i, (w, gi) in enumerate(zip(weights, g))]
        for got, want in zip(history[step], weights):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_sgd_plain_momentum_and_nesterov():
    check_rule(keras.optimizers.SGD(0.1), lambda w, g, s, t: w - 0.1 * g, [{}, {}])

    def momentum(nesterov):
        def rule(w, g, s, t):
            s["v"] = 0.9 * s.get("v", 0) - 0.1 * g
            return w + (0.9 * s["v"] - 0.1 * g if nesterov else s["v"])
        return rule
    keras.backend.clear_session()
    check_rule(keras.optimizers.SGD(0.1, momentum=0.9), momentum(False), [{}, {}])
    keras.backend.clear_session()
    check_rule(keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True), momentum(True), [{}, {}])


def test_adam_rmsprop_adagrad_rules():
    def adam(w, g, s, t):
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
        lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        return w - lr * s["m"] / (np.sqrt(s["v"]) + 1e-7)
    check_rule(keras.optimizers.Adam(0.01), adam, [{}, {}])

    def rmsprop(w, g, s, t):
        s["ms"] = 0.9 * s.get("ms", 0) + 0.1 * g * g
        return w - 0.01 * g / np.sqrt(s["ms"] + 1e-7)
    keras.backend.clear_session()
    check_rule(keras.optimizers.RMSprop(0.01), rmsprop, [{}, {}])

    def adagrad(w, g, s, t):
        s["acc"] = s.get("acc", 0.1) + g * g
        return w - 0.1 * g / np.sqrt(s["acc"])
    keras.backend.clear_session()
    check_rule(keras.optimizers.Adagrad(0.1), adagrad, [{}, {}])


def test_adadelta_adamax_nadam_rules():
    def adadelta(w, g, s, t):
        s["acc"] = 0.95 * s.get("acc", 0) + 0.05 * g * g
        update = np.sqrt(s.get("upd", 0) + 1e-7) / np.sqrt(s["acc"] + 1e-7) * g
        s["upd"] = 0.95 * s.get("upd", 0) + 0.05 * update * update
        return w - 1.0 * update
    check_rule(keras.optimizers.Adadelta(1.0), adadelta, [{}, {}])

    def adamax(w, g, s, t):
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["u"] = np.maximum(0.999 * s.get("u", 0), np.abs(g))
        return w - 0.01 / (1 - 0.9 ** t) * s["m"] / (s["u"] + 1e-7)
    keras.backend.clear_session()
    check_rule(keras.optimizers.Adamax(0.01), adamax, [{}, {}])

    product = {"u": 1.0, "t": 0}

    def nadam(w, g, s, t):
        u_t = 0.9 * (1 - 0.5 * 0.96 ** t)
        u_next = 0.9 * (1 - 0.5 * 0.96 ** (t + 1))
        if product["t"] != t:   # the schedule's product advances once per step
            product["u"], product["t"] = product["u"] * u_t, t
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
        m_hat = u_next * s["m"] / (1 - product["u"] * u_next) + (1 - u_t) * g / (1 - product["u"])
        v_hat = s["v"] / (1 - 0.999 ** t)
        return w - 0.01 * m_hat / (np.sqrt(v_hat) + 1e-7)
    keras.backend.clear_session()
    check_rule(keras.optimizers.Nadam(0.01), nadam, [{}, {}])


def test_optimizer_by_name_and_learning_rate_variable():
    model = linear_model(optimizer="Adam", loss="mse")
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    model.train_on_batch(np.ones((2, 3)), np.ones((2, 1)))
    keras.backend.set_value(model.optimizer.lr, 0.5)
    assert keras.backend.get_value(model.optimizer.learning_rate) == pytest.approx(0.5)
    assert model.optimizer.get_config()["learning_rate"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier: nadamx"):
        keras.optimizers.get("nadamx")


# --- fit and data -------------------------------------------------------------------------------
def test_fit_learns_a_linear_function_and_returns_history():
    rng = np.random.RandomState(3)
    x = rng.rand(256, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    # Seeded: the initial weights (graph seed) and the epochs' shuffles (numpy's global RNG) would
    # otherwise depend on the tests before this one, and a few starts end above the bound below.
    tf.set_random_seed(3)
    np.random.seed(3)
    model = linear_model(optimizer=keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=32, epochs=30, validation_split=0.25, verbose=0)
    assert set(history.history) == {"loss", "mae", "val_loss", "val_mae"}
    assert history.epoch == list(range(30))
    # The last epochs of Adam at this rate oscillate a little (on a GPU, whose reductions sum in
    # varying order, the trajectory differs from the CPU's).
    assert min(history.history["val_loss"][-3:]) < 1e-3
    np.testing.assert_allclose(model.get_weights()[0].ravel(), [1.0, -2.0, 0.5], atol=0.1)
    loss, mae = model.evaluate(x, y, verbose=0)
    pred = model.predict(x, batch_size=50, verbose=0)
    assert loss == pytest.approx(np.mean((pred - y) ** 2), rel=1e-3)
    assert mae == pytest.approx(np.mean(np.abs(pred - y)), rel=1e-3)


def test_epoch_loss_is_the_sample_weighted_mean_of_batch_losses():
    x = RNG.rand(10, 3).astype(np.float32)
    y = RNG.rand(10, 1).astype(np.float32)
    model = linear_model(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert history.history["loss"][0] == pytest.approx(np.mean((forward(model, x) - y) ** 2),
                                                       rel=1e-5)


def test_sample_weight_and_class_weight_weight_the_loss():
    x = RNG.rand(6, 3).astype(np.float32)
    y = np.array([0, 1, 1, 0, 1, 0], np.float32)[:, None]
    model = linear_model(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    err = (forward(model, x) - y)[:, 0] ** 2
    weights = np.array([1, 2, 0, 1, 3, 1], np.float32)
    got = model.evaluate(x, y, sample_weight=weights, batch_size=6, verbose=0)
    assert got == pytest.approx(np.sum(err * weights) / 6, rel=1e-5)
    history = model.fit(x, y, class_weight={0: 1.0, 1: 3.0}, batch_size=6, verbose=0)
    class_weights = np.where(y[:, 0] == 1, 3.0, 1.0)
    assert history.history["loss"][0] == pytest.approx(np.sum(err * class_weights) / 6,
                                                       rel=1e-5)


def test_generators_sequences_and_validation_data():
    x = RNG.rand(64, 3).astype(np.float32)
    y = x.sum(1, keepdims=True)

    def batches():
        while True:
            for i in range(0, 64, 16):
                yield x[i:i + 16], y[i:i + 16]

    class Batches(keras.utils.Sequence):
        epochs_ended = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return x[i * 16:(i + 1) * 16], y[i * 16:(i + 1) * 16]

        def on_epoch_end(self):
            Batches.epochs_ended += 1

    model = linear_model(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(batches(), steps_per_epoch=4, epochs=2, validation_data=(x, y),
                        verbose=0)
    assert len(history.history["val_loss"]) == 2
    history = model.fit(Batches(), epochs=3, verbose=0)
    assert Batches.epochs_ended == 3
    assert history.history["loss"][-1] < history.history["loss"][0]
    with pytest.raises(ValueError, match="you must specify `steps_per_epoch`"):
        model.fit(batches(), epochs=1, verbose=0)
    assert model.predict(Batches(), verbose=0).shape == (64, 1)


def test_on_batch_methods_and_dict_inputs():
    a = keras.Input((2,), name="a")
    b = keras.Input((1,), name="b")
    out = keras.layers.Dense(1, name="out")(keras.layers.Concatenate()([a, b]))
    model = keras.Model([a, b], out)
    model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    data = {"a": np.ones((4, 2), np.float32), "b": np.zeros((4, 1), np.float32)}
    y = np.full((4, 1), 2.0, np.float32)
    before = model.test_on_batch(data, y)
    model.train_on_batch(data, y)
    after = model.test_on_batch(data, y, return_dict=True)
    assert set(after) == {"loss", "mae"} and after["loss"] < before[0]
    np.testing.assert_allclose(model.predict_on_batch(data), model.predict(data, verbose=0))


def test_multiple_outputs_with_loss_weights_report_per_output_losses():
    x_in = keras.Input((3,))
    first = keras.layers.Dense(1, name="first")(x_in)
    second = keras.layers.Dense(2, name="second")(x_in)
    model = keras.Model(x_in, [first, second])
    model.compile("sgd", loss={"first": "mse", "second": "mae"},
                  loss_weights={"first": 2.0, "second": 0.5})
    x = RNG.rand(5, 3).astype(np.float32)
    y1, y2 = RNG.rand(5, 1).astype(np.float32), RNG.rand(5, 2).astype(np.float32)
    logs = model.evaluate(x, [y1, y2], verbose=0, return_dict=True)
    p1, p2 = model.predict(x, verbose=0)
    mse, mae = np.mean((p1 - y1) ** 2), np.mean(np.abs(p2 - y2))
    assert logs["first_loss"] == pytest.approx(mse, rel=1e-5)
    assert logs["second_loss"] == pytest.approx(mae, rel=1e-5)
    assert logs["loss"] == pytest.approx(2 * mse + 0.5 * mae, rel=1e-5)


def test_regularization_losses_join_the_total():
    model = keras.Sequential([keras.layers.Dense(
        1, input_shape=(2,), kernel_regularizer=keras.regularizers.l2(0.1))])
    model.compile("sgd", "mse")
    x = np.ones((3, 2), np.float32)
    y = np.zeros((3, 1), np.float32)
    kernel, bias = model.get_weights()
    want = np.mean((x @ kernel + bias - y) ** 2) + 0.1 * np.sum(kernel ** 2)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(want, rel=1e-5)


def test_data_errors_are_keras_value_errors():
    model = linear_model(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"Data cardinality is ambiguous:\n  x sizes: 5\n  "
                                         r"y sizes: 4\nMake sure all arrays contain the same "
                                         "number of samples."):
        model.fit(np.ones((5, 3)), np.ones((4, 1)), verbose=0)
    with pytest.raises(ValueError, match='Input 0 of layer "dense" is incompatible with the '
                                         "layer: expected axis -1 of input shape to have value "
                                         r"3, but received input with shape \(None, 100\)"):
        model.fit(np.ones((5, 100)), np.ones((5, 1)), verbose=0)
    uncompiled = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    with pytest.raises(RuntimeError, match="You must compile your model before training"):
        uncompiled.fit(np.ones((2, 3)), np.ones((2, 1)), verbose=0)


# --- the progress bar ---------------------------------------------------------------------------
BAR_FINAL = re.compile(r"^(\d+)/(\d+) \[=+\] - \d+s \d+(ms|us|s)/step(?P<logs>( - [a-z_]+: "
                       r"[0-9.e+-]+)*)$")


def test_progress_bar_lines_when_stdout_is_not_a_terminal(capsys):
    x = RNG.rand(100, 3).astype(np.float32)
    y = RNG.rand(100, 1).astype(np.float32)
    model = linear_model(optimizer="sgd", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=32, epochs=2, validation_split=0.2)
    out = capsys.readouterr().out
    assert "\r" not in out and "\b" not in out
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2"
    epoch2 = lines.index("Epoch 2/2")
    final = BAR_FINAL.match(lines[epoch2 - 1])
    assert final and final.group(1) == final.group(2) == "3", lines[epoch2 - 1]
    assert re.fullmatch(r" - loss: [0-9.e+-]+ - mae: [0-9.e+-]+ - val_loss: [0-9.e+-]+ - "
                        r"val_mae: [0-9.e+-]+", final.group("logs"))
    for line in lines[1:epoch2 - 1]:
        assert re.fullmatch(r"[123]/3 \[[=>.]{30}\] - ETA: \d+s - loss: [0-9.e+-]+ - mae: "
                            r"[0-9.e+-]+", line), line


def test_progress_bar_verbose_2_and_on_a_terminal():
    import io
    from flowstone.keras.utils.progbar import Progbar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = Progbar(4, stream=stream, interval=0.0)
    bar.update(1, [("loss", 0.5)])
    bar.update(4, [("loss", 0.25)])
    text = stream.getvalue()
    assert text.startswith("\r1/4 [======>.......................] - ETA: ")
    assert "\b" * len(text.split("\b")[0].lstrip("\r")) in text
    # A value passed to a standalone bar is averaged over steps: (0.5 * 1 + 0.25 * 3) / 4.
    assert re.search(r"\r4/4 \[==============================\] - \d+s \d+(us|ms|s)/step - "
                     r"loss: 0\.3125\n$", text), repr(text)
    stream = io.StringIO()
    bar = Progbar(4, verbose=2, stream=stream)
    bar.update(2, [("loss", 1.0)])
    bar.update(4, [("loss", 1.0)])
    assert re.fullmatch(r"4/4 - \d+s - loss: 1\.0000 - \d+(us|ms|s)/epoch - \d+(us|ms|s)/step\n",
                        stream.getvalue())


def test_verbose_2_prints_one_line_per_epoch(capsys):
    model = linear_model(optimizer="sgd", loss="mse")
    model.fit(np.ones((64, 3)), np.ones((64, 1)), epochs=3, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    for line in lines[1::2]:
        assert re.fullmatch(r"2/2 - \d+s - loss: [0-9.e+-]+ - \d+(us|ms|s)/epoch - "
                            r"\d+(us|ms|s)/step", line), line


def test_one_session_call_per_training_step(monkeypatch):
    """The step is a compiled plan: fit calls its cached session callable once per batch and
    runs nothing else but the metric resets at each epoch's start."""
    model = linear_model(optimizer="adam", loss="mse", metrics=["mae"])
    x, y = np.ones((96, 3), np.float32), np.ones((96, 1), np.float32)
    session_type = type(keras.backend.get_session())
    made, calls, runs = [], [], []
    original_make = session_type.make_callable
    original_run = session_type.run

    def counting_make(self, *args, **kwargs):
        made.append(1)
        fn = original_make(self, *args, **kwargs)
        return lambda *a, **k: calls.append(1) or fn(*a, **k)

    monkeypatch.setattr(session_type, "make_callable", counting_make)
    monkeypatch.setattr(session_type, "run",
                        lambda self, *a, **k: runs.append(1) or original_run(self, *a, **k))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert len(made) == 1 and len(calls) == 3
    made.clear(), calls.clear(), runs.clear()
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    assert made == [] and len(calls) == 6 and len(runs) == 2


def test_initial_epoch_steps_per_epoch_and_validation_freq():
    model = linear_model(optimizer="sgd", loss="mse")
    seen = []
    counter = keras.callbacks.LambdaCallback(
        on_batch_end=lambda batch, logs: seen.append(batch))
    history = model.fit(np.ones((64, 3)), np.ones((64, 1)), batch_size=8, epochs=5,
                        initial_epoch=2, steps_per_epoch=3, validation_data=(np.ones((4, 3)),
                                                                             np.ones((4, 1))),
                        validation_freq=2, shuffle="batch", verbose=0, callbacks=[counter])
    assert history.epoch == [2, 3, 4]
    assert seen == [0, 1, 2] * 3
    # Validation runs after epochs whose number (from 1) is a multiple of validation_freq.
    assert [len(v) for v in (history.history["loss"], history.history["val_loss"])] == [3, 1]
