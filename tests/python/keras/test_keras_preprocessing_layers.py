"""keras.layers.Rescaling, Normalization (adapt, axis, mean=/variance=, invert), Resizing and
CenterCrop against numpy and tf-keras: outputs, weights, parameter counts, configs and saving."""

import json

import numpy as np
import pytest

import flowstone as tf

import tf_keras_peer

keras = tf.keras
needs_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                    reason=tf_keras_peer.SKIP_REASON)

RNG = np.random.RandomState(5)
DATA = {
    "table": (RNG.rand(40, 3) * [1.0, 10.0, 100.0] + [0.0, -5.0, 50.0]).astype(np.float32),
    "images": (RNG.rand(12, 4, 5, 2) * 255).astype(np.float32),
}

# (name, layer code, data name): `adapt` runs on the data when the layer has no mean.
CASES = [
    ("adapt_last_axis", "keras.layers.Normalization()", "table"),
    ("adapt_channels", "keras.layers.Normalization(axis=-1)", "images"),
    ("adapt_two_axes", "keras.layers.Normalization(axis=(1, 2))", "images"),
    ("adapt_scalar", "keras.layers.Normalization(axis=None)", "table"),
    ("adapt_invert", "keras.layers.Normalization(invert=True)", "table"),
    ("given_stats", "keras.layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 0.0, 9.0])",
     "table"),
    ("given_scalar_stats", "keras.layers.Normalization(axis=None, mean=3.0, variance=2.0,"
     " invert=True)", "images"),
    ("rescaling", "keras.layers.Rescaling(1.0 / 255)", "images"),
    ("rescaling_offset", "keras.layers.Rescaling(scale=2.0, offset=-1.0)", "table"),
    ("resize_bilinear", "keras.layers.Resizing(3, 7)", "images"),
    ("resize_nearest", "keras.layers.Resizing(6, 8, interpolation='nearest')", "images"),
    ("resize_bicubic", "keras.layers.Resizing(5, 3, interpolation='bicubic')", "images"),
    ("resize_area", "keras.layers.Resizing(2, 3, interpolation='area')", "images"),
    ("resize_crop_to_aspect", "keras.layers.Resizing(3, 3, crop_to_aspect_ratio=True)",
     "images"),
    ("center_crop", "keras.layers.CenterCrop(3, 3)", "images"),
    ("center_crop_upsizes", "keras.layers.CenterCrop(6, 4)", "images"),
]

PEER_SCRIPT = """
import json
out = {}
for name, code, data_name in CASES:
    data = np.load(data_name + '.npy')
    layer = eval(code)
    if hasattr(layer, 'adapt') and layer.input_mean is None:
        layer.adapt(data)
    result = layer(data)
    out[name] = {'output': np.asarray(result).tolist(),
                 'weights': [np.asarray(w).tolist() for w in layer.get_weights()],
                 'params': layer.count_params(),
                 'config': json.loads(json.dumps(layer.get_config()))}
print(json.dumps(out))
"""


def run_ours(code, data):
    layer = eval(code, {"keras": keras})  # noqa: S307 - the test's own table
    if isinstance(layer, keras.layers.Normalization) and layer.input_mean is None:
        layer.adapt(data)
    output = keras.backend.get_value(layer(tf.constant(data)))
    return layer, output


@pytest.fixture(scope="module")
def tf_keras_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("preprocessing")
    for name, value in DATA.items():
        np.save(folder / f"{name}.npy", value)
    script = f"CASES = {CASES!r}\n" + PEER_SCRIPT
    return json.loads(tf_keras_peer.run(script, cwd=folder).strip().splitlines()[-1])


@needs_tf_keras
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_tf_keras(case, tf_keras_results):
    name, code, data_name = case
    theirs = tf_keras_results[name]
    layer, output = run_ours(code, DATA[data_name])
    np.testing.assert_allclose(output, np.asarray(theirs["output"]), rtol=2e-5, atol=2e-5)
    weights = layer.get_weights()
    assert len(weights) == len(theirs["weights"])
    for got, want in zip(weights, theirs["weights"]):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5)
    assert layer.count_params() == theirs["params"]
    # tf-keras names the layers in one session (normalization_1...), and its adapt records a
    # batch_input_shape of Nones.
    config = json.loads(json.dumps(layer.get_config()))
    for key in ("name", "batch_input_shape"):
        config.pop(key, None)
        theirs["config"].pop(key, None)
    assert config == theirs["config"]


def test_normalization_matches_numpy():
    data = DATA["images"].astype(np.float64)
    layer = keras.layers.Normalization(axis=(1, 2))
    layer.adapt(DATA["images"])
    mean, variance = data.mean(axis=(0, 3)), data.var(axis=(0, 3))
    np.testing.assert_allclose(layer.get_weights()[0], mean, rtol=1e-5)
    np.testing.assert_allclose(layer.get_weights()[1], variance, rtol=1e-5)
    assert layer.get_weights()[2] == 12 * 2
    got = keras.backend.get_value(layer(tf.constant(DATA["images"])))
    want = (data - mean[None, :, :, None]) / np.sqrt(variance)[None, :, :, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # invert undoes the normalization.
    inverse = keras.layers.Normalization(axis=(1, 2), mean=mean, variance=variance,
                                         invert=True)
    np.testing.assert_allclose(keras.backend.get_value(inverse(tf.constant(got))),
                               data, rtol=1e-4, atol=1e-3)


def test_adapt_takes_a_dataset_and_trains_in_a_model(tmp_path):
    table = DATA["table"]
    normalize = keras.layers.Normalization()
    normalize.adapt(tf.data.Dataset.from_tensor_slices(table).batch(7))
    np.testing.assert_allclose(normalize.get_weights()[0], table.mean(0), rtol=1e-5)
    model = keras.Sequential([keras.Input((3,)), normalize, keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    target = table @ np.array([[0.5], [0.1], [0.01]], np.float32)
    model.fit(table, target, epochs=2, verbose=0)
    # The statistics are not trained.
    np.testing.assert_allclose(normalize.get_weights()[0], table.mean(0), rtol=1e-5)
    predictions = model.predict(table, verbose=0)
    model.save(str(tmp_path / "m.h5"))
    keras.backend.clear_session()
    loaded = keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(loaded.predict(table, verbose=0), predictions, rtol=1e-6)


def test_image_layers_in_a_model_with_unknown_sizes():
    images = keras.Input((None, None, 2))
    cropped = keras.layers.CenterCrop(3, 4)(images)
    resized = keras.layers.Resizing(2, 2, interpolation="nearest")(cropped)
    assert cropped.shape.as_list() == [None, 3, 4, 2]
    assert resized.shape.as_list() == [None, 2, 2, 2]
    model = keras.Model(images, [cropped, resized])
    small = DATA["images"][:, :2, :3]   # smaller than the crop: centre-crop to 3:4, resize up
    big_out, _ = model.predict(DATA["images"], verbose=0)
    np.testing.assert_array_equal(big_out, DATA["images"][:, 0:3, 0:4])
    small_out, _ = model.predict(small, verbose=0)
    assert small_out.shape == (12, 3, 4, 2)
    with pytest.raises(NotImplementedError, match="interpolation='lanczos3'"):
        keras.layers.Resizing(2, 2, interpolation="lanczos3")


def test_errors():
    with pytest.raises(ValueError, match="both `mean` and `variance` must be set"):
        keras.layers.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="Cannot `adapt` a Normalization layer that is "
                                         "initialized with static `mean` and `variance`"):
        keras.layers.Normalization(mean=1.0, variance=1.0).adapt(DATA["table"])
    with pytest.raises(ValueError, match="All `axis` values must be in the range"):
        keras.layers.Normalization(axis=3).adapt(DATA["table"])
    layer = keras.layers.Normalization()
    layer.adapt(DATA["table"])
    with pytest.raises(ValueError, match="is not compatible|incompatible"):
        layer.adapt(DATA["table"][:, :2])
