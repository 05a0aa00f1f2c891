"""Callbacks: checkpoints, early stopping, learning-rate control, logs, custom hooks."""

import csv
import os

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras


def make_model(lr=0.1):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(lr), "mse")
    return model


X = np.random.RandomState(0).rand(32, 2).astype(np.float32)
Y = X.sum(1, keepdims=True)


def test_model_checkpoint_formats_paths_and_saves_best_only(tmp_path):
    pytest.importorskip("h5py")
    model = make_model()
    pattern = str(tmp_path / "weights.{epoch:02d}-{loss:.2f}.h5")
    model.fit(X, Y, epochs=3, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(pattern, monitor="loss",
                                                         save_weights_only=True)])
    names = sorted(os.listdir(tmp_path))
    assert [n[:11] for n in names] == ["weights.01-", "weights.02-", "weights.03-"]
    best = tmp_path / "best.h5"
    saved = []

    class Watch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            saved.append(best.exists() and os.path.getmtime(best))

    model.fit(X, Y, epochs=3, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(best), monitor="loss", save_best_only=True),
        Watch()])
    assert best.exists()
    reloaded = keras.models.load_model(str(best))
    np.testing.assert_allclose(reloaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-5)


def test_early_stopping_restores_the_best_weights():
    model = make_model(lr=0.0)
    losses = iter([5.0, 3.0, 4.0, 4.5, 6.0, 7.0])
    weights_at = {}

    class FakeLoss(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = next(losses)
            model.set_weights([w + 1.0 for w in model.get_weights()])
            weights_at[epoch] = model.get_weights()

    stopper = keras.callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    history = model.fit(X, Y, epochs=10, verbose=0, callbacks=[FakeLoss(), stopper])
    assert len(history.epoch) == 4 and stopper.stopped_epoch == 3
    for got, want in zip(model.get_weights(), weights_at[1]):
        np.testing.assert_array_equal(got, want)


def test_reduce_lr_on_plateau_and_scheduler_change_the_learning_rate():
    model = make_model(lr=0.8)

    class FlatLoss(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["loss"] = 1.0

    reducer = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1,
                                                min_lr=0.3)
    history = model.fit(X, Y, epochs=4, verbose=0, callbacks=[FlatLoss(), reducer])
    # As in Keras, each epoch logs the rate it trained with, then the plateau halves it (down
    # to min_lr): 0.8, 0.8 (-> 0.4), 0.4 (-> 0.3), 0.3.
    assert history.history["lr"] == pytest.approx([0.8, 0.8, 0.4, 0.3])
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    history = model.fit(X, Y, epochs=3, verbose=0, callbacks=[schedule])
    assert history.history["lr"] == pytest.approx([0.1, 0.05, 0.1 / 3])


def test_csv_logger_and_lambda_callback(tmp_path):
    path = tmp_path / "log.csv"
    ends = []
    model = make_model()
    model.fit(X, Y, epochs=2, verbose=0, callbacks=[
        keras.callbacks.CSVLogger(str(path)),
        keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append(epoch))])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [r["epoch"] for r in rows] == ["0", "1"] and set(rows[0]) == {"epoch", "loss"}
    assert ends == [0, 1]


def test_terminate_on_nan_stops_training(capsys):
    model = make_model(lr=1e30)
    big = np.full((32, 2), 1e20, np.float32)
    history = model.fit(big, big[:, :1], epochs=5, batch_size=8, verbose=0,
                        callbacks=[keras.callbacks.TerminateOnNaN()])
    assert len(history.epoch) == 1
    assert "Invalid loss, terminating training" in capsys.readouterr().out


def test_custom_callback_sees_every_hook_in_order():
    events = []

    class Recorder(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            events.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            events.append(f"epoch_begin {epoch}")

        def on_train_batch_end(self, batch, logs=None):
            events.append(f"batch_end {batch} {sorted(logs)}")

        def on_epoch_end(self, epoch, logs=None):
            events.append(f"epoch_end {epoch} {sorted(logs)}")

        def on_train_end(self, logs=None):
            events.append("train_end")

    recorder = Recorder()
    make_model().fit(X[:16], Y[:16], batch_size=8, epochs=1, verbose=0,
                     validation_data=(X, Y), callbacks=[recorder])
    assert events == ["train_begin", "epoch_begin 0", "batch_end 0 ['loss']",
                      "batch_end 1 ['loss']", "epoch_end 0 ['loss', 'val_loss']",
                      "train_end"]
    assert recorder.params["epochs"] == 1 and recorder.params["steps"] == 2
