"""keras.layers.Attention and MultiHeadAttention against tf-keras with the same weights: outputs,
attention scores, masks (Keras masks, attention_mask, causal), weight shapes and order, configs,
and training through them in fit()."""

import json

import numpy as np
import pytest

import flowstone as tf

import test_keras_vs_tf_keras as vs
import tf_keras_peer

keras = tf.keras
needs_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                    reason=tf_keras_peer.SKIP_REASON)

RNG = np.random.RandomState(3)
ARRAYS = {
    "q": RNG.randn(2, 4, 3).astype(np.float32),
    "v": RNG.randn(2, 5, 3).astype(np.float32),
    "k": RNG.randn(2, 5, 3).astype(np.float32),
    "q_mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool),
    "v_mask": np.array([[1, 1, 1, 1, 0], [1, 0, 1, 1, 1]], bool),
    "attention_mask": RNG.rand(2, 4, 5) > 0.3,
    "image": RNG.randn(2, 3, 2, 4).astype(np.float32),
    "tokens": np.array([[3, 1, 4, 0, 0], [5, 9, 2, 6, 0]], np.int32),
}

# (name, layer code, call code): `layer` is the layer, arrays are bound by name. The weights are
# drawn here and set in each implementation in the layer's weight order, after a first call.
ATTENTION_CASES = [
    ("dot", "keras.layers.Attention()", "layer([q, v])"),
    ("dot_key_scores", "keras.layers.Attention()",
     "layer([q, v, k], return_attention_scores=True)"),
    ("scaled_masked", "keras.layers.Attention(use_scale=True)",
     "layer([q, v, k], mask=[q_mask, v_mask], return_attention_scores=True)"),
    ("concat", "keras.layers.Attention(score_mode='concat', use_scale=True)",
     "layer([q, v], mask=[None, v_mask])"),
    ("causal", "keras.layers.Attention()",
     "layer([q, q], use_causal_mask=True, return_attention_scores=True)"),
    ("causal_kwarg", "keras.layers.Attention(causal=True)", "layer([v, v])"),
    ("mha_self", "keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)",
     "layer(q, q, return_attention_scores=True)"),
    ("mha_key_value_dims",
     "keras.layers.MultiHeadAttention(3, key_dim=2, value_dim=5, output_shape=7)",
     "layer(q, v, key=k)"),
    ("mha_attention_mask", "keras.layers.MultiHeadAttention(2, 4)",
     "layer(q, v, attention_mask=attention_mask, return_attention_scores=True)"),
    ("mha_causal_no_bias", "keras.layers.MultiHeadAttention(2, 3, use_bias=False)",
     "layer(q, q, use_causal_mask=True, return_attention_scores=True)"),
    ("mha_output_shape_tuple", "keras.layers.MultiHeadAttention(2, 3, output_shape=(2, 3))",
     "layer(q, v)"),
    ("mha_2d_positions", "keras.layers.MultiHeadAttention(2, 3)",
     "layer(image, image, return_attention_scores=True)"),
    ("mha_dropout_inference", "keras.layers.MultiHeadAttention(2, 3, dropout=0.5)",
     "layer(q, v, training=False)"),
]

PEER_SCRIPT = """
import json
arrays = {name: np.load(f'{name}.npy') for name in NAMES}
out = {}
for name, layer_code, call_code in CASES:
    layer = eval(layer_code)
    scope = dict(arrays, layer=layer)
    eval(call_code, scope)
    weights = [np.load(f'{name}_w{i}.npy') for i in range(len(layer.weights))]
    layer.set_weights(weights)
    result = eval(call_code, scope)
    result = result if isinstance(result, tuple) else (result,)
    out[name] = {'outputs': [np.asarray(r).tolist() for r in result],
                 'weights': [[w.name.split('/', 1)[-1], list(w.shape)] for w in layer.weights],
                 'config': sorted(layer.get_config())}
print(json.dumps(out))
"""


def run_ours(layer_code, call_code, weights):
    layer = eval(layer_code, {"keras": keras})  # noqa: S307 - the test's own table
    scope = {name: tf.constant(value) for name, value in ARRAYS.items()}
    scope["layer"] = layer
    eval(call_code, scope)  # noqa: S307
    layer.set_weights(weights)
    result = eval(call_code, scope)  # noqa: S307
    result = result if isinstance(result, (tuple, list)) else (result,)
    return layer, keras.backend.batch_get_value(list(result))


def draw_weights(layer_code, call_code):
    """Weights for the case, from our layer's shapes (tf-keras's must be the same)."""
    layer = eval(layer_code, {"keras": keras})  # noqa: S307
    scope = {name: tf.constant(value) for name, value in ARRAYS.items()}
    scope["layer"] = layer
    eval(call_code, scope)  # noqa: S307
    rng = np.random.RandomState(len(layer_code))
    return [rng.uniform(-0.8, 0.8, w.shape.as_list()).astype(np.float32)
            for w in layer.weights]


@pytest.fixture(scope="module")
def tf_keras_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attention")
    for name, value in ARRAYS.items():
        np.save(folder / f"{name}.npy", value)
    weights = {}
    for name, layer_code, call_code in ATTENTION_CASES:
        weights[name] = draw_weights(layer_code, call_code)
        for i, w in enumerate(weights[name]):
            np.save(folder / f"{name}_w{i}.npy", w)
    script = (f"NAMES = {sorted(ARRAYS)!r}\nCASES = {ATTENTION_CASES!r}\n" + PEER_SCRIPT)
    theirs = json.loads(tf_keras_peer.run(script, cwd=folder).strip().splitlines()[-1])
    return weights, theirs


@needs_tf_keras
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c[0] for c in ATTENTION_CASES])
def test_outputs_match_tf_keras(case, tf_keras_results):
    name, layer_code, call_code = case
    weights, theirs = tf_keras_results
    expected = theirs[name]
    layer, outputs = run_ours(layer_code, call_code, weights[name])
    assert [[w.name.split("/", 1)[-1].rsplit(":", 1)[0], w.shape.as_list()]
            for w in layer.weights] == [[n.rsplit(":", 1)[0], s]
                                        for n, s in expected["weights"]]
    assert len(outputs) == len(expected["outputs"])
    for got, want in zip(outputs, expected["outputs"]):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert sorted(layer.get_config()) == expected["config"]


def test_attention_matches_numpy():
    q, v = ARRAYS["q"].astype(np.float64), ARRAYS["v"].astype(np.float64)
    scores = q @ v.transpose(0, 2, 1)
    scores = np.where(ARRAYS["v_mask"][:, None, :], scores, scores - 1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    want = (weights @ v) * ARRAYS["q_mask"][..., None]
    got = keras.layers.Attention()([tf.constant(ARRAYS["q"]), tf.constant(ARRAYS["v"])],
                                   mask=[tf.constant(ARRAYS["q_mask"]),
                                         tf.constant(ARRAYS["v_mask"])])
    np.testing.assert_allclose(keras.backend.get_value(got), want, rtol=1e-5, atol=1e-6)


def test_masks_flow_from_embedding_in_a_functional_model():
    tokens = keras.Input((5,), dtype="int32")
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    attended = keras.layers.Attention()([embedded, embedded])
    mha = keras.layers.MultiHeadAttention(2, 2)(embedded, embedded)
    model = keras.Model(tokens, [attended, mha])
    table = model.get_weights()[0]
    out, _ = model.predict(ARRAYS["tokens"], verbose=0)
    x = table[ARRAYS["tokens"]].astype(np.float64)
    valid = ARRAYS["tokens"] != 0
    scores = np.where(valid[:, None, :], x @ x.transpose(0, 2, 1), -1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, (weights @ x) * valid[..., None], rtol=1e-5, atol=1e-6)


def test_config_round_trip_and_h5(tmp_path):
    query = keras.Input((4, 3))
    value = keras.Input((5, 3))
    attended = keras.layers.MultiHeadAttention(2, 3, value_dim=4, dropout=0.1)(query, value)
    scored = keras.layers.Attention(use_scale=True)([attended, value])
    model = keras.Model([query, value], scored)
    predictions = model.predict([ARRAYS["q"], ARRAYS["v"]], verbose=0)
    model.save(str(tmp_path / "m.h5"))
    keras.backend.clear_session()
    loaded = keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(loaded.predict([ARRAYS["q"], ARRAYS["v"]], verbose=0),
                               predictions, rtol=1e-6)
    layer = keras.layers.MultiHeadAttention(2, 3, attention_axes=1)
    again = keras.layers.MultiHeadAttention.from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


def test_errors():
    q = tf.constant(ARRAYS["q"])
    with pytest.raises(ValueError, match="must be called on a list of inputs"):
        keras.layers.Attention()(q)
    with pytest.raises(ValueError, match="accepts inputs list of length 2 or 3"):
        keras.layers.Attention()([q])
    with pytest.raises(ValueError, match="Acceptable values are"):
        keras.layers.Attention(score_mode="additive")
    with pytest.raises(NotImplementedError, match="attention_axes=\\(2,\\) is not supported"):
        keras.layers.MultiHeadAttention(2, 3, attention_axes=2)(
            tf.constant(ARRAYS["image"]), tf.constant(ARRAYS["image"]))
    with pytest.raises(TypeError, match="needs `value`"):
        keras.layers.MultiHeadAttention(2, 3)(q)


def test_dropout_applies_only_while_training():
    layer = keras.layers.MultiHeadAttention(1, 3, dropout=0.9)
    q = tf.constant(ARRAYS["q"])
    _, inference = layer(q, q, return_attention_scores=True, training=False)
    _, training = layer(q, q, return_attention_scores=True, training=True)
    # The scores returned are before dropout; the output differs while training.
    np.testing.assert_allclose(keras.backend.get_value(inference),
                               keras.backend.get_value(training), rtol=1e-6)
    out_inference = keras.backend.get_value(layer(q, q, training=False))
    out_training = keras.backend.get_value(layer(q, q, training=True))
    assert not np.allclose(out_inference, out_training)


FIT_CASES = {
    "mha_self_attention": (
        "(lambda i: keras.Model(i, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()("
        "keras.layers.MultiHeadAttention(2, 4)(i, i)))))(keras.Input((4, 3)))",
        "optimizer=keras.optimizers.Adam(0.01), loss='mse'", "sequences_regression"),
    "attention_scaled_causal": (
        "(lambda i: keras.Model(i, keras.layers.Dense(3, activation='softmax')("
        "keras.layers.Flatten()(keras.layers.Attention(use_scale=True)([i, i],"
        " use_causal_mask=True)))))(keras.Input((4, 3)))",
        "optimizer=keras.optimizers.SGD(0.1), loss='categorical_crossentropy'", "sequences"),
}


@needs_tf_keras
@pytest.mark.parametrize("case", sorted(FIT_CASES))
def test_fit_through_attention_matches_tf_keras(case, tmp_path):
    vs.compare_training(*FIT_CASES[case], tmp_path, seed=4, rtol=1e-4, atol=1e-5, label=case)
