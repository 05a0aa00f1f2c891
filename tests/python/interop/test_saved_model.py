"""SavedModels: simple_save, SavedModelBuilder and loader.load, with real TensorFlow on the
other side in both directions; and TensorFlow 2's SavedModels (tf.saved_model.save of a
tf.Module or a Keras model) loaded by loader.load and by tf.saved_model.load."""

import os

import numpy as np
import pytest

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow

FEED = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], np.float32)


def build_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5, name="w")
    b = tf.Variable(np.array([0.5, -0.5], np.float32), name="b")
    y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
    return x, y


def test_simple_save_layout_and_signature(tmp_path):
    export_dir = str(tmp_path / "model")
    x, y = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, inputs={"x": x}, outputs={"y": y})
    assert sorted(os.listdir(export_dir)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(export_dir, "variables"))) == [
        "variables.data-00000-of-00001", "variables.index"]
    assert tf.saved_model.loader.maybe_saved_model_directory(export_dir)


def test_builder_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(AssertionError, match="Export directory already exists, and isn't empty"):
        tf.saved_model.builder.SavedModelBuilder(str(tmp_path))


def test_load_runs_the_signature_with_the_saved_values(tmp_path):
    export_dir = str(tmp_path / "model")
    x, y = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = sess.run(y, {x: FEED})
        builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
        signature = tf.saved_model.signature_def_utils.predict_signature_def(
            inputs={"x": x}, outputs={"y": y})
        builder.add_meta_graph_and_variables(
            sess, [tf.saved_model.tag_constants.SERVING],
            signature_def_map={"serving_default": signature})
        builder.add_meta_graph(["eval"])
        builder.save()
    with tf.Graph().as_default() as graph:
        with tf.Session() as sess:
            meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
            signature = meta.signature_def["serving_default"]
            assert signature.method_name == "tensorflow/serving/predict"
            assert signature.inputs["x"].name == "x:0"
            assert [d.size for d in signature.inputs["x"].tensor_shape.dim] == [-1, 3]
            x2 = tf.saved_model.utils.get_tensor_from_tensor_info(signature.inputs["x"])
            y2 = graph.get_tensor_by_name(signature.outputs["y"].name)
            np.testing.assert_array_equal(sess.run(y2, {x2: FEED}), expected)
    with tf.Graph().as_default():
        with tf.Session() as sess:
            meta = tf.saved_model.loader.load(sess, ["eval"], export_dir)
            assert list(meta.meta_info_def.tags) == ["eval"]
            assert sess.run(tf.global_variables()[0]).shape == (3, 2)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match="could not be found in SavedModel"):
            tf.saved_model.loader.load(sess, ["train"], export_dir)


def test_missing_saved_model(tmp_path):
    with tf.Session() as sess:
        with pytest.raises(IOError, match="SavedModel file does not exist at"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))


@requires_tensorflow
def test_saved_model_written_by_tensorflow_loads_in_flowstone(tmp_path):
    np.save(tmp_path / "feed.npy", FEED)
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2) / 5)
        b = tf1.Variable([0.5, -0.5], name="b")
        y = tf1.nn.softmax(tf1.matmul(x, w) + b, name="y")
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            np.save("expected.npy", sess.run(y, {x: np.load("feed.npy")}))
            tf1.saved_model.simple_save(sess, "model", inputs={"x": x}, outputs={"y": y})
    """, tmp_path)
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "model"))
        signature = meta.signature_def["serving_default"]
        y = graph.get_tensor_by_name(signature.outputs["y"].name)
        got = sess.run(y, {signature.inputs["x"].name: FEED})
    np.testing.assert_allclose(got, np.load(tmp_path / "expected.npy"), rtol=1e-5)


@requires_tensorflow
def test_saved_model_written_by_flowstone_loads_in_tensorflow(tmp_path):
    x, y = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.save(tmp_path / "expected.npy", sess.run(y, {x: FEED}))
        tf.saved_model.simple_save(sess, str(tmp_path / "model"), inputs={"x": x},
                                   outputs={"y": y})
    np.save(tmp_path / "feed.npy", FEED)
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        with tf1.Session() as sess:
            meta = tf1.saved_model.loader.load(sess, ["serve"], "model")
            sig = meta.signature_def["serving_default"]
            got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: np.load("feed.npy")})
        assert np.allclose(got, np.load("expected.npy"), rtol=1e-6), got
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


TF2_MODULE = """
    import numpy as np
    import tensorflow as tf

    class Scorer(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5, name="w")
            self.b = tf.Variable([0.5, -0.5], name="b")
            self.calls = tf.Variable(0, dtype=tf.int64, name="calls")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def __call__(self, x):
            logits = tf.matmul(x, self.w) + self.b
            return {"y": tf.nn.softmax(logits), "top": tf.argmax(logits, axis=1)}

    scorer = Scorer()
    feed = np.load("feed.npy")
    tf.saved_model.save(scorer, "model", signatures=scorer.__call__)
    out = scorer(feed)
    np.save("y.npy", out["y"].numpy())
    np.save("top.npy", out["top"].numpy())
"""


@requires_tensorflow
def test_tensorflow2_module_saved_model_loads_with_both_apis(tmp_path):
    np.save(tmp_path / "feed.npy", FEED)
    run_tensorflow(TF2_MODULE, tmp_path)
    expected_y, expected_top = np.load(tmp_path / "y.npy"), np.load(tmp_path / "top.npy")
    # TensorFlow 1's loader: the signature's tensor names, in a session.
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "model"))
        signature = meta.signature_def["serving_default"]
        got = sess.run({k: v.name for k, v in signature.outputs.items()},
                       {signature.inputs["x"].name: FEED})
        assert graph.get_operations()  # the model's graph is in the session's graph
    np.testing.assert_allclose(got["y"], expected_y, rtol=1e-6)
    np.testing.assert_array_equal(got["top"], expected_top)
    # TensorFlow 2's loader: signatures as callables.
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    assert list(loaded.signatures) == ["serving_default"]
    out = loaded.signatures["serving_default"](x=FEED)
    np.testing.assert_allclose(out["y"], expected_y, rtol=1e-6)
    np.testing.assert_array_equal(out["top"], expected_top)
    with pytest.raises(TypeError, match=r"missing \['x'\]"):
        loaded.signatures["serving_default"](z=FEED)
    with pytest.raises(TypeError, match="by keyword"):
        loaded.signatures["serving_default"](FEED)


@requires_tensorflow
def test_tensorflow2_keras_model_saved_model_serves(tmp_path):
    np.save(tmp_path / "feed.npy", FEED)
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf.keras.utils.set_random_seed(3)
        inputs = tf.keras.Input([3], name="features")
        hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
        outputs = tf.keras.layers.Dense(2, activation="softmax", name="probs")(hidden)
        model = tf.keras.Model(inputs, outputs)
        feed = np.load("feed.npy")
        np.save("expected.npy", model(feed).numpy())
        model.export("model")
    """, tmp_path)
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    out = signature(**{name: FEED})
    (probs,) = out.values()
    np.testing.assert_allclose(probs, np.load(tmp_path / "expected.npy"), rtol=1e-5)
