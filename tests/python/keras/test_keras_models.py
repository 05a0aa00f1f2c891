"""Sequential, functional and subclassed models: structure, summary, weights, trainable."""

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras


def summary_lines(model):
    lines = []
    model.summary(print_fn=lines.append)
    return lines


def test_sequential_summary_matches_keras_table():
    model = keras.models.Sequential([
        keras.layers.Dense(1024, activation="relu", input_shape=(784,)),
        keras.layers.Dense(10)])
    # The table tf-keras 2.21 prints for the same model.
    assert summary_lines(model) == [
        'Model: "sequential"',
        "_" * 65,
        " Layer (type)                Output Shape              Param #   ",
        "=" * 65,
        " dense (Dense)               (None, 1024)              803840    ",
        " " * 65,
        " dense_1 (Dense)             (None, 10)                10250     ",
        " " * 65,
        "=" * 65,
        "Total params: 814090 (3.11 MB)",
        "Trainable params: 814090 (3.11 MB)",
        "Non-trainable params: 0 (0.00 Byte)",
        "_" * 65,
    ]


def test_functional_summary_with_connections_and_wrapped_names():
    i = keras.Input((8,))
    j = keras.Input((3,), name="aux")
    d = keras.layers.Dense(4)(i)
    c = keras.layers.Concatenate()([d, j])
    o = keras.layers.Dense(1)(c)
    model = keras.Model([i, j], o)
    assert summary_lines(model) == [
        'Model: "model"',
        "_" * 98,
        " Layer (type)                Output Shape                 Param #   Connected to     "
        "             ",
        "=" * 98,
        " input_1 (InputLayer)        [(None, 8)]                  0         []               "
        "             ",
        " " * 98,
        " dense (Dense)               (None, 4)                    36        ['input_1[0][0]']"
        "             ",
        " " * 98,
        " aux (InputLayer)            [(None, 3)]                  0         []               "
        "             ",
        " " * 98,
        " concatenate (Concatenate)   (None, 7)                    0         ['dense[0][0]',  "
        "             ",
        "                                                                     'aux[0][0]']    "
        "             ",
        " " * 98,
        " dense_1 (Dense)             (None, 1)                    8         ['concatenate[0]["
        "0]']         ",
        " " * 98,
        "=" * 98,
        "Total params: 44 (176.00 Byte)",
        "Trainable params: 44 (176.00 Byte)",
        "Non-trainable params: 0 (0.00 Byte)",
        "_" * 98,
    ]


def test_long_class_names_wrap_like_keras():
    model = keras.models.Sequential([keras.layers.Dense(4, input_shape=(3,)),
                                     keras.layers.BatchNormalization()])
    lines = summary_lines(model)
    assert lines[6] == " batch_normalization (Batch  (None, 4)                 16        "
    assert lines[7] == " Normalization)                                                  "
    assert lines[-4:-1] == ["Total params: 32 (128.00 Byte)", "Trainable params: 24 (96.00 Byte)",
                            "Non-trainable params: 8 (32.00 Byte)"]


def test_sequential_add_pop_and_deferred_build():
    model = keras.Sequential()
    model.add(keras.layers.Dense(3))
    model.add(keras.layers.Dense(2))
    assert not model.built
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    model.compile("sgd", "mse")
    x = np.ones((4, 5), np.float32)
    assert model.predict(x, verbose=0).shape == (4, 2)
    assert model.built and [w.shape.as_list() for w in model.weights] == [[5, 3], [3], [3, 2],
                                                                           [2]]
    assert model.layers[0].input_shape == (None, 5)
    model.pop()
    assert [layer.name for layer in model.layers] == ["dense"]
    assert model.output_shape == (None, 3)
    with pytest.raises(TypeError, match="The added layer must be an instance of class Layer"):
        model.add("dense")


def test_sequential_add_calls_only_the_new_layer():
    # tf-keras names these weights dense/... and dense_1/...; re-calling the first layer when
    # the second was added had created its ops twice and named the second layer's dense_1_1.
    model = keras.models.Sequential([
        keras.layers.Dense(4, activation="relu", input_shape=(3,)),
        keras.layers.Dense(2)])
    assert [w.name for w in model.weights] == ["dense/kernel:0", "dense/bias:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    graph_ops = [op.name for op in tf.compat.v1.get_default_graph().get_operations()]
    assert sum(op.endswith("/MatMul") for op in graph_ops) == 2
    model.add(keras.layers.Dense(1))
    assert model.output_shape == (None, 1)
    x = np.random.RandomState(0).rand(5, 3).astype(np.float32)
    k1, b1, k2, b2, k3, b3 = model.get_weights()
    expected = (np.maximum(x @ k1 + b1, 0) @ k2 + b2) @ k3 + b3
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)


def test_sequential_add_of_a_layer_that_does_not_fit_leaves_the_model_as_it_was():
    model = keras.models.Sequential([keras.layers.Dense(4, input_shape=(3,))])
    with pytest.raises(ValueError):
        model.add(keras.layers.Reshape((3, 3)))
    assert [layer.name for layer in model.layers] == ["dense"]
    assert model.output_shape == (None, 4)


def test_pop_of_an_empty_model():
    with pytest.raises(TypeError, match="There are no layers in the model."):
        keras.Sequential().pop()


def test_functional_multiple_inputs_outputs_and_shared_layer():
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    shared = keras.layers.Dense(3, name="shared")
    sa, sb = shared(a), shared(b)
    out1 = keras.layers.Add(name="sum")([sa, sb])
    out2 = keras.layers.Dense(1, name="score")(sa)
    model = keras.Model(inputs=[a, b], outputs=[out1, out2])
    assert model.input_names == ["a", "b"] and model.output_names == ["sum", "score"]
    assert len(model.weights) == 4  # shared kernel/bias once, score kernel/bias
    xa = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    xb = np.random.RandomState(1).rand(5, 4).astype(np.float32)
    got_sum, got_score = model.predict([xa, xb], verbose=0)
    kernel, bias, score_kernel, score_bias = model.get_weights()
    # float32 sums of terms of either sign: an absolute tolerance for results near zero.
    np.testing.assert_allclose(got_sum, xa @ kernel + xb @ kernel + 2 * bias, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(got_score, (xa @ kernel + bias) @ score_kernel + score_bias,
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        shared.output  # noqa: B018


def test_graph_disconnected_is_a_value_error():
    a, b = keras.Input((2,)), keras.Input((2,), name="other")
    out = keras.layers.Add()([a, b])
    with pytest.raises(ValueError, match='Graph disconnected: cannot obtain value for tensor '
                                         '.* at layer "other"'):
        keras.Model(a, out)


def test_model_called_on_new_inputs_shares_weights():
    inner_in = keras.Input((3,))
    inner = keras.Model(inner_in, keras.layers.Dense(2)(inner_in), name="inner")
    outer_in = keras.Input((3,))
    outer = keras.Model(outer_in, keras.layers.Dense(1)(inner(outer_in)))
    assert [layer.name for layer in outer.layers] == ["input_2", "inner", "dense_1"]
    assert len(outer.weights) == 4
    x = np.ones((2, 3), np.float32)
    k1, b1, k2, b2 = outer.get_weights()
    np.testing.assert_allclose(outer.predict(x, verbose=0), (x @ k1 + b1) @ k2 + b2, rtol=1e-5)


class Scale(keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones",
                                 regularizer=keras.regularizers.l2(0.5))

    def call(self, inputs):
        return inputs * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class TwoLayerNet(keras.Model):
    def __init__(self):
        super().__init__(name="two_layer_net")
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.scale = Scale(3.0)
        self.out = keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.scale(self.hidden(inputs)))


def test_subclassed_layer_build_add_weight_losses_and_config():
    layer = Scale(3.0, name="scale")
    x = keras.Input((2,))
    y = layer(x)
    assert y.shape.as_list() == [None, 2]
    assert [w.name for w in layer.weights] == ["scale/w:0"]
    assert len(layer.losses) == 1
    assert keras.backend.get_value(layer.losses[0]) == pytest.approx(0.5 * 2)
    config = layer.get_config()
    assert config == {"name": "scale", "trainable": True, "dtype": "float32", "factor": 3.0}
    assert Scale.from_config(config).factor == 3.0


def test_subclassed_model_trains_and_tracks_its_layers():
    model = TwoLayerNet()
    model.compile(keras.optimizers.SGD(0.05), "mse")
    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    history = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert [layer.name for layer in model.layers] == ["dense", "scale", "dense_1"]
    assert len(model.trainable_weights) == 5
    assert len(model.losses) == 1  # Scale's regularizer


def test_get_set_weights_and_errors():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    kernel = np.arange(6, dtype=np.float32).reshape(3, 2)
    model.set_weights([kernel, np.array([1.0, -1.0], np.float32)])
    np.testing.assert_array_equal(model.get_weights()[0], kernel)
    np.testing.assert_allclose(model.predict(np.ones((1, 3)), verbose=0), [[7.0, 8.0]])
    layer = model.layers[0]
    with pytest.raises(ValueError, match='on layer "dense" with a weight list of length 1, but '
                                         "the layer was expecting 2 weights"):
        layer.set_weights([kernel])
    with pytest.raises(ValueError, match=r"Layer dense weight shape \(3, 2\) is not compatible "
                                         r"with provided weight shape \(2, 2\)"):
        layer.set_weights([np.zeros((2, 2)), np.zeros(2)])


def test_frozen_layer_is_not_trained():
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(1)])
    model.layers[0].trainable = False
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2
    model.compile("adam", "mse")
    frozen_before = model.layers[0].get_weights()
    trained_before = model.layers[1].get_weights()
    model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, verbose=0)
    for before, after in zip(frozen_before, model.layers[0].get_weights()):
        np.testing.assert_array_equal(before, after)
    assert not np.allclose(trained_before[0], model.layers[1].get_weights()[0])


def test_layer_names_are_unique_per_graph():
    names = [keras.layers.Dense(1).name for _ in range(3)]
    assert names == ["dense", "dense_1", "dense_2"]
    keras.backend.clear_session()
    assert keras.layers.Dense(1).name == "dense"


def test_import_does_not_load_keras():
    import subprocess
    import sys
    code = "import sys, flowstone; print('flowstone.keras' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import flowstone as tf; print(tf.keras.layers.Dense.__name__, tf.compat.v1.keras.Model)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("Dense <class")
