"""Saving: HDF5 in Keras 2's layout (both ways with tf-keras), SavedModel directories (written
from graph and eager models, read back by load_model), weights in HDF5 and checkpoint format,
JSON configs, custom objects, and crash safety."""

import json
import os

import numpy as np
import pytest

import flowstone as tf

import tf_keras_peer

h5py = pytest.importorskip("h5py")
keras = tf.keras
X = np.random.RandomState(0).rand(6, 4).astype(np.float32)


def small_functional():
    inputs = keras.Input((4,), name="features")
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    normed = keras.layers.BatchNormalization(name="norm")(hidden)
    outputs = keras.layers.Dense(3, activation="softmax", name="probs")(normed)
    model = keras.Model(inputs, outputs, name="classifier")
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(X, np.array([0, 1, 2, 0, 1, 2]), epochs=2, verbose=0)
    return model


def _saved_and_reloaded(path):
    """small_functional() saved at `path`, then loaded in a cleared session: the loaded model,
    checked to predict as the saved one did, with its layers and optimizer."""
    model = small_functional()
    model.save(path)
    expected = model.predict(X, verbose=0)
    keras.backend.clear_session()
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), expected, rtol=1e-6)
    assert [layer.name for layer in loaded.layers] == ["features", "hidden", "norm", "probs"]
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    return loaded


def test_save_and_load_model_round_trip(tmp_path):
    loaded = _saved_and_reloaded(str(tmp_path / "m.h5"))
    assert loaded.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    assert loaded.evaluate(X, np.array([0, 1, 2, 0, 1, 2]), verbose=0)[1] >= 0.0


def test_hdf5_layout_is_keras_2s(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile("sgd", "mse")
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["model_config"])
        assert config["class_name"] == "Sequential"
        assert [layer["class_name"] for layer in config["config"]["layers"]] == ["InputLayer",
                                                                                 "Dense"]
        training = json.loads(f.attrs["training_config"])
        assert training["loss"] == "mse"
        assert training["optimizer_config"]["class_name"] == "SGD"
        group = f["model_weights"]
        assert [n.decode() for n in group.attrs["layer_names"]] == ["dense"]
        names = [n.decode() for n in group["dense"].attrs["weight_names"]]
        assert names == ["dense/kernel:0", "dense/bias:0"]
        np.testing.assert_array_equal(group["dense"]["dense/kernel:0"][()],
                                      model.get_weights()[0])
    assert not [n for n in os.listdir(tmp_path) if n != "m.h5"]  # no temp file left behind


def test_save_weights_load_weights_hdf5_and_checkpoint(tmp_path):
    model = small_functional()
    weights = model.get_weights()
    for path in (str(tmp_path / "w.h5"), str(tmp_path / "ckpt")):
        model.save_weights(path)
        model.set_weights([np.zeros_like(w) for w in weights])
        model.load_weights(path)
        for got, want in zip(model.get_weights(), weights):
            np.testing.assert_array_equal(got, want)


def test_load_weights_mismatch_is_a_value_error(tmp_path):
    path = str(tmp_path / "w.h5")
    keras.Sequential([keras.layers.Dense(2, input_shape=(4,))]).save_weights(path)
    other = keras.Sequential([keras.layers.Dense(3, input_shape=(4,))])
    with pytest.raises(ValueError, match=r"Shape mismatch in layer dense_1 for weight "
                                         r"dense_1/kernel:0. Weight expects shape \(4, 3\). "
                                         r"Received saved weight with shape \(4, 2\)"):
        other.load_weights(path)


def test_json_round_trip_and_custom_objects(tmp_path):
    class Doubler(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2.0

    def shift(x):
        return x + 1.0

    inputs = keras.Input((2,))
    outputs = keras.layers.Lambda(shift)(Doubler(name="doubler")(inputs))
    model = keras.Model(inputs, outputs)
    text = model.to_json()
    with pytest.raises(ValueError, match="Unknown layer: 'Doubler'"):
        keras.models.model_from_json(text)
    clone = keras.models.model_from_json(text, custom_objects={"Doubler": Doubler,
                                                               "shift": shift})
    np.testing.assert_allclose(clone.predict(np.ones((1, 2)), verbose=0), [[3.0, 3.0]])
    path = str(tmp_path / "custom.h5")
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"Doubler": Doubler, "shift": shift})
    np.testing.assert_allclose(loaded.predict(np.ones((1, 2)), verbose=0), [[3.0, 3.0]])


def test_a_failed_save_leaves_the_previous_file(tmp_path, monkeypatch):
    from flowstone.keras.saving import hdf5_format
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile("sgd", "mse")
    path = str(tmp_path / "m.h5")
    model.save(path)
    before = open(path, "rb").read()

    def crash(group, model):
        raise OSError("disk full")

    monkeypatch.setattr(hdf5_format, "save_weights_to_group", crash)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["m.h5"]


def test_missing_h5py_is_a_clear_import_error(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "h5py", None)
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    with pytest.raises(ImportError, match="need h5py, which is not installed. Install it with "
                                          "`pip install h5py`"):
        model.save(str(tmp_path / "m.h5"))


def test_savedmodel_format_writes_a_serving_signature(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(2)])
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    want = model.predict(x)
    model.save(str(tmp_path / "saved_model_dir"))
    model.save(str(tmp_path / "saved_model_dir"))  # overwrites
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "saved_model_dir"))
        signature = meta.signature_def["serving_default"]
        assert list(signature.inputs) == [model.input_names[0]]
        got = sess.run(signature.outputs[model.output_names[0]].name,
                       {signature.inputs[model.input_names[0]].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        model.save(str(tmp_path / "saved_model_dir"), overwrite=False)


def test_load_model_reads_the_savedmodel_directory_model_save_wrote(tmp_path):
    path = str(tmp_path / "saved_model_dir")
    loaded = _saved_and_reloaded(path)
    loaded.fit(X, np.array([0, 1, 2, 0, 1, 2]), epochs=1, verbose=0)  # compiled and trainable
    uncompiled = keras.models.load_model(path, compile=False)
    assert getattr(uncompiled, "optimizer", None) is None


def _eager_model_saved(path):
    """An eager, compiled Sequential saved as a SavedModel directory, and its predictions."""
    tf.enable_eager_execution()
    try:
        model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,)),
                                  keras.layers.Dense(2)])
        model.compile(keras.optimizers.SGD(0.1), "mse")
        model.fit(X, np.ones((6, 2), np.float32), epochs=1, verbose=0)
        model.save(path)
        return model.predict(X, verbose=0)
    finally:
        tf.disable_eager_execution()


def test_an_eager_model_saves_as_a_graph_savedmodel_that_loads_back(tmp_path):
    path = str(tmp_path / "eager_dir")
    expected = _eager_model_saved(path)
    assert os.path.exists(os.path.join(path, "variables", "variables.index"))
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), expected, rtol=1e-6)
    assert isinstance(loaded.optimizer, keras.optimizers.SGD)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        (name,) = signature.inputs
        got = sess.run(next(iter(signature.outputs.values())).name,
                       {signature.inputs[name].name: X})
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_an_eager_subclassed_model_without_a_config_cannot_be_a_savedmodel(tmp_path):
    class Doubler(keras.Model):
        def call(self, x):
            return x * 2.0

    tf.enable_eager_execution()
    try:
        model = Doubler()
        model(np.ones((1, 2), np.float32))
        with pytest.raises(NotImplementedError, match="needs its get_config.*save_weights"):
            model.save(str(tmp_path / "sub"))
    finally:
        tf.disable_eager_execution()


def test_load_model_of_a_directory_without_a_keras_model_says_what_to_use(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.saved_model.simple_save(sess, str(tmp_path / "plain"), {"x": x}, {"y": x * 2})
    with pytest.raises(tf.errors.UnimplementedError,
                       match="holds no Keras model .* tf.saved_model.load"):
        keras.models.load_model(str(tmp_path / "plain"))


# --- both directions with tf-keras -------------------------------------------------------------
needs_peer = pytest.mark.skipif(not tf_keras_peer.available(), reason=tf_keras_peer.SKIP_REASON)


@needs_peer
def test_tf_keras_loads_a_flowstone_file_with_the_same_predictions(tmp_path):
    model = small_functional()
    model.save(str(tmp_path / "ours.h5"))
    np.save(tmp_path / "x.npy", X)
    tf_keras_peer.run(
        "m = keras.models.load_model('ours.h5')\n"
        "np.save('theirs_pred.npy', m.predict(np.load('x.npy'), verbose=0))\n"
        "print(type(m.optimizer).__name__, [l.name for l in m.layers])\n", cwd=tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "theirs_pred.npy"),
                               model.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


@needs_peer
def test_flowstone_loads_a_tf_keras_file_with_the_same_predictions(tmp_path):
    np.save(tmp_path / "x.npy", X)
    tf_keras_peer.run(
        "keras.utils.set_random_seed(1)\n"
        "inp = keras.Input((4,))\n"
        "h = keras.layers.Dense(5, activation='tanh')(inp)\n"
        "h = keras.layers.Dropout(0.2)(h)\n"
        "seq = keras.Sequential([keras.layers.Dense(3, input_shape=(5,)),"
        " keras.layers.LayerNormalization()])\n"
        "out = keras.layers.Dense(2, activation='sigmoid')(seq(h))\n"
        "m = keras.Model(inp, out)\n"
        "m.compile(keras.optimizers.RMSprop(0.01), 'binary_crossentropy', metrics=['accuracy'])\n"
        "x = np.load('x.npy')\n"
        "m.fit(x, (x[:, :2] > 0.5).astype('float32'), epochs=2, verbose=0)\n"
        "m.save('theirs.h5')\n"
        "np.save('theirs_pred.npy', m.predict(x, verbose=0))\n", cwd=tmp_path)
    loaded = keras.models.load_model(str(tmp_path / "theirs.h5"))
    np.testing.assert_allclose(loaded.predict(X, verbose=0),
                               np.load(tmp_path / "theirs_pred.npy"), rtol=1e-5, atol=1e-6)
    assert isinstance(loaded.optimizer, keras.optimizers.RMSprop)
    loaded.fit(X, (X[:, :2] > 0.5).astype(np.float32), epochs=1, verbose=0)


@needs_peer
def test_a_tf_keras_savedmodel_directory_gets_a_clear_error(tmp_path):
    tf_keras_peer.run("m = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])\n"
                      "m.save('theirs_dir')\n", cwd=tmp_path)
    with pytest.raises(tf.errors.UnimplementedError,
                       match="a SavedModel that tf-keras wrote.*model.save\\('model.h5'\\)"):
        keras.models.load_model(str(tmp_path / "theirs_dir"))
