"""The same small models, trained with the same initial weights, data and hyperparameters in
Flowstone's tf.keras and in tf-keras (on TensorFlow, in the peer venv): final losses agree within
a tolerance and parameter counts exactly."""

import contextlib
import io
import json
import os

import numpy as np
import pytest

import flowstone as tf

import tf_keras_peer

pytestmark = pytest.mark.skipif(not tf_keras_peer.available(),
                                reason=tf_keras_peer.SKIP_REASON)
keras = tf.keras

# Each case: the model as Keras code (evaluated with `keras` bound to either implementation),
# compile arguments, and the data. The code runs unchanged in both.
CASES = {
    "mlp_adam_sparse_cce": (
        "keras.Sequential([keras.layers.Dense(16, activation='relu', input_shape=(6,)),"
        " keras.layers.Dense(3, activation='softmax')])",
        "optimizer=keras.optimizers.Adam(0.01), loss='sparse_categorical_crossentropy',"
        " metrics=['accuracy']", "classes"),
    "cnn_sgd_nesterov_bce": (
        "keras.Sequential([keras.layers.Conv2D(4, 3, activation='relu', input_shape=(6, 6, 1)),"
        " keras.layers.MaxPooling2D(), keras.layers.Flatten(),"
        " keras.layers.Dense(1, activation='sigmoid')])",
        "optimizer=keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),"
        " loss='binary_crossentropy', metrics=['accuracy']", "images"),
    "bn_rmsprop_mse": (
        "keras.Sequential([keras.layers.Dense(8, input_shape=(6,)),"
        " keras.layers.BatchNormalization(), keras.layers.Activation('tanh'),"
        " keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.RMSprop(0.01), loss='mse', metrics=['mae']", "regression"),
    "functional_huber_adamax": (
        "(lambda i: keras.Model(i, keras.layers.Dense(2)(keras.layers.Concatenate()("
        "[keras.layers.Dense(4, activation='elu')(i), i]))))(keras.Input((6,)))",
        "optimizer=keras.optimizers.Adamax(0.02), loss=keras.losses.Huber()", "regression"),
    "lstm_adam_cce": (
        "keras.Sequential([keras.layers.LSTM(5, input_shape=(4, 3)),"
        " keras.layers.Dense(3, activation='softmax')])",
        "optimizer=keras.optimizers.Adam(0.01), loss='categorical_crossentropy'", "sequences"),
    "gru_adadelta_mse": (
        "keras.Sequential([keras.layers.GRU(4, return_sequences=True, input_shape=(4, 3)),"
        " keras.layers.SimpleRNN(3), keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.Adadelta(1.0), loss='mse'", "sequences_regression"),
}


def make_data(kind):
    rng = np.random.RandomState(0)
    if kind == "classes":
        x = rng.rand(64, 6).astype(np.float32)
        return x, (x[:, 0] * 3).astype(np.int64).clip(0, 2)
    if kind == "images":
        x = rng.rand(64, 6, 6, 1).astype(np.float32)
        return x, (x.mean(axis=(1, 2, 3)) > 0.5).astype(np.float32)[:, None]
    if kind == "regression":
        x = rng.rand(64, 6).astype(np.float32)
        return x, np.stack([x.sum(1), x[:, 0] - x[:, 1]], 1).astype(np.float32)
    x = rng.rand(64, 4, 3).astype(np.float32)
    if kind == "sequences":
        return x, np.eye(3, dtype=np.float32)[x[:, -1].argmax(1)]
    return x, np.stack([x.sum((1, 2)), x[:, 0, 0]], 1).astype(np.float32)


TRAIN = ("model = {model}\n"
         "model.compile({compile})\n"
         "params = model.count_params()\n"
         "model.set_weights([np.load(f'w{{i}}.npy') for i in range(len(model.get_weights()))])\n"
         "history = model.fit(np.load('x.npy'), np.load('y.npy'), batch_size=16, epochs=4,"
         " shuffle=False, verbose=0)\n"
         "print(json.dumps({{'params': params, 'history': history.history}}))\n")


def flowstone_run(model_code, compile_code, folder):
    namespace = {"keras": keras, "np": np, "json": json}
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(TRAIN.format(model=model_code, compile=compile_code), namespace)
        lines = out.getvalue().splitlines()
    finally:
        os.chdir(cwd)
    return json.loads(lines[-1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_matches_tf_keras(case, tmp_path):
    check_training_matches_tf_keras(case, tmp_path)


def check_training_matches_tf_keras(case, tmp_path):
    """Trains CASES[case] in this process (graph or eager mode, whichever is on) and in tf-keras
    from the same initial weights and data, and compares the histories."""
    compare_training(*CASES[case], tmp_path, label=case)


def compare_training(model_code, compile_code, data_kind, tmp_path, seed=1, rtol=2e-3,
                     atol=2e-4, label=""):
    """Trains the model `model_code` builds, compiled with `compile_code`, on make_data(data_kind)
    here and in tf-keras from the same initial weights (uniform, from `seed`), and compares the
    parameter counts and the histories."""
    x, y = make_data(data_kind)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    # Initial weights drawn once here, loaded by both (Keras's initializers differ in their
    # random streams, not in their distributions).
    template = eval(model_code, {"keras": keras})  # noqa: S307 - the test's own table
    rng = np.random.RandomState(seed)
    for i, weight in enumerate(template.weights):
        value = rng.uniform(-0.5, 0.5, weight.shape.as_list()).astype(np.float32)
        if "moving_variance" in weight.name:
            value = np.abs(value) + 0.5
        np.save(tmp_path / f"w{i}.npy", value)
    keras.backend.clear_session()
    ours = flowstone_run(model_code, compile_code, tmp_path)
    theirs = json.loads(tf_keras_peer.run(
        "import json\n" + TRAIN.format(model=model_code, compile=compile_code),
        cwd=tmp_path).strip().splitlines()[-1])
    assert ours["params"] == theirs["params"]
    assert set(ours["history"]) == set(theirs["history"])
    for key in theirs["history"]:
        np.testing.assert_allclose(ours["history"][key], theirs["history"][key], rtol=rtol,
                                   atol=atol, err_msg=f"{label}: {key}")


def test_parameter_counts_match_tf_keras():
    models = [
        "keras.Sequential([keras.layers.Embedding(100, 8, input_length=10),"
        " keras.layers.Bidirectional(keras.layers.LSTM(6, return_sequences=True)),"
        " keras.layers.GRU(5), keras.layers.Dense(1)])",
        "keras.Sequential([keras.layers.SeparableConv2D(8, 3, input_shape=(12, 12, 3)),"
        " keras.layers.DepthwiseConv2D(3), keras.layers.Conv2DTranspose(4, 3, strides=2),"
        " keras.layers.BatchNormalization(), keras.layers.PReLU(),"
        " keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(2)])",
        "keras.Sequential([keras.layers.Conv1D(6, 3, input_shape=(20, 4)),"
        " keras.layers.LayerNormalization(), keras.layers.TimeDistributed("
        "keras.layers.Dense(3)), keras.layers.SimpleRNN(7)])",
    ]
    script = "import json\nprint(json.dumps([{}]))\n".format(
        ", ".join(f"({m}).count_params()" for m in models))
    theirs = json.loads(tf_keras_peer.run(script, cwd=None).strip().splitlines()[-1])
    ours = [eval(m, {"keras": keras}).count_params() for m in models]  # noqa: S307
    assert ours == theirs
