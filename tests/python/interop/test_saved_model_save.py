"""tf.saved_model.save: Flowstone writes TensorFlow 2 SavedModels that real TensorFlow loads
(restored functions, signatures, variables, TF 1's loader and saved_model_cli), and that Flowstone
loads back."""

import json
import os
import subprocess

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import tf_protos
from flowstone.saved_model import revive
from peers import PEER_PYTHON
from tf_oracle import requires_tensorflow, run_tensorflow

X = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 0.25]], np.float32)


@pytest.fixture(autouse=True)
def eager_mode():
    tf.reset_default_graph()
    tf.enable_eager_execution()
    yield
    tf.disable_eager_execution()
    tf.reset_default_graph()


class Dense(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0, 2.0], [3.0, -4.0]], name="w")
        self.b = tf.Variable(0.5, trainable=False, name="b")
        self.layers = [tf.Variable([1.5, -0.5], name="scale")]

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def __call__(self, x):
        return tf.matmul(x, self.w) * self.layers[0] + self.b

    @tf.function
    def double(self, x):
        return {"twice": 2.0 * x + self.b, "sum": tf.reduce_sum(x)}


def expected(x):
    w = np.array([[1.0, 2.0], [3.0, -4.0]], np.float32)
    return (x @ w) * np.array([1.5, -0.5], np.float32) + 0.5


def save_dense(path):
    model = Dense()
    model.double(tf.constant(X))  # one trace, saved as the function's concrete function
    tf.saved_model.save(model, str(path))
    return model


@requires_tensorflow
def test_tensorflow_loads_functions_signatures_and_variables(tmp_path):
    model = save_dense(tmp_path / "m")
    ours = model(tf.constant(X)).numpy()
    np.testing.assert_allclose(ours, expected(X), rtol=1e-6)
    np.save(tmp_path / "x.npy", X)
    out = run_tensorflow(f"""
        import json
        import numpy as np
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        sig = m.signatures["serving_default"]
        print(json.dumps({{
            "call": m(tf.constant(x)).numpy().tolist(),
            "serving": {{k: v.numpy().tolist() for k, v in sig(x=tf.constant(x)).items()}},
            "double": {{k: v.numpy().tolist() for k, v in m.double(tf.constant(x)).items()}},
            "w": m.w.numpy().tolist(), "b": float(m.b.numpy()), "trainable": m.b.trainable,
            "scale": m.layers[0].numpy().tolist(),
            "inputs": sorted(sig.structured_input_signature[1]),
            "outputs": sorted(sig.structured_outputs),
        }}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got["call"], ours, rtol=1e-5)
    np.testing.assert_allclose(got["serving"]["output_0"], ours, rtol=1e-5)
    twice = model.double(tf.constant(X))
    np.testing.assert_allclose(got["double"]["twice"], twice["twice"].numpy(), rtol=1e-5)
    np.testing.assert_allclose(got["double"]["sum"], twice["sum"].numpy(), rtol=1e-5)
    np.testing.assert_array_equal(got["w"], model.w.numpy())
    assert got["b"] == 0.5 and got["trainable"] is False
    np.testing.assert_array_equal(got["scale"], [1.5, -0.5])
    assert got["inputs"] == ["x"] and got["outputs"] == ["output_0"]


@requires_tensorflow
def test_saved_model_cli_shows_the_signature(tmp_path):
    save_dense(tmp_path / "m")
    cli = os.path.join(os.path.dirname(PEER_PYTHON), "saved_model_cli")
    proc = subprocess.run([cli, "show", "--dir", str(tmp_path / "m"), "--all"],
                          capture_output=True, text=True, timeout=300,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
                               "PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "signature_def['serving_default']" in text
    assert "inputs['x'] tensor_info:" in text and "name: serving_default_x:0" in text
    assert "outputs['output_0'] tensor_info:" in text and "shape: (-1, 2)" in text
    assert "Method name is: tensorflow/serving/predict" in text
    assert "Concrete Functions:" in text and "Function Name: 'double'" in text
    assert "x: TensorSpec(shape=(None, 2), dtype=tf.float32, name='x')" in text


@requires_tensorflow
def test_tensorflow_v1_loader_runs_the_signature(tmp_path):
    model = save_dense(tmp_path / "m")
    np.save(tmp_path / "x.npy", X)
    out = run_tensorflow(f"""
        import json
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = np.load({str(tmp_path / "x.npy")!r})
        with tf1.Session(graph=tf.Graph()) as sess:
            meta = tf1.saved_model.loader.load(sess, ["serve"], {str(tmp_path / "m")!r})
            sig = meta.signature_def["serving_default"]
            y = sess.run(sig.outputs["output_0"].name, {{sig.inputs["x"].name: x}})
        print(json.dumps(y.tolist()))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got, model(tf.constant(X)).numpy(), rtol=1e-5)


def test_flowstone_loads_what_it_saved(tmp_path):
    model = save_dense(tmp_path / "m")
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    result = loaded.signatures["serving_default"](x=tf.constant(X))
    np.testing.assert_allclose(result["output_0"].numpy(), model(tf.constant(X)).numpy(),
                               rtol=1e-6)
    reader = tf.train.load_checkpoint(str(tmp_path / "m" / "variables" / "variables"))
    np.testing.assert_array_equal(reader.get_tensor("w/.ATTRIBUTES/VARIABLE_VALUE"),
                                  model.w.numpy())
    np.testing.assert_array_equal(reader.get_tensor("layers/0/.ATTRIBUTES/VARIABLE_VALUE"),
                                  [1.5, -0.5])


def test_flowstone_v1_loader_restores_the_variables(tmp_path):
    model = save_dense(tmp_path / "m")
    want = model(tf.constant(X)).numpy()
    tf.disable_eager_execution()
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
        signature = meta.signature_def["serving_default"]
        got = sess.run(signature.outputs["output_0"].name, {signature.inputs["x"].name: X})
    np.testing.assert_allclose(got, want, rtol=1e-6)


class Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.k = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32),
                                  tf.TensorSpec([None], tf.float32)])
    def combine(self, a, b):
        return {"sum": a * self.k + b, "diff": a - b}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def count(self, n):
        return tf.range(n) * 2

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def powers(self, x):
        """Control flow in a saved function: its branch and loop bodies travel in the library."""
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * self.k, lambda: -x)
        _, z = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * 2.0), [0, y])
        return z


@requires_tensorflow
def test_explicit_signatures_with_dict_outputs_and_int_inputs(tmp_path):
    model = Scaler()
    tf.saved_model.save(model, str(tmp_path / "m"),
                        signatures={"combine": model.combine,
                                    "count": model.count.get_concrete_function()})
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        c = m.signatures["combine"](a=tf.constant([1.0, 2.0]), b=tf.constant([0.5, 4.0]))
        n = m.signatures["count"](n=tf.constant(4))
        print(json.dumps({{"sigs": sorted(m.signatures), "sum": c["sum"].numpy().tolist(),
                          "diff": c["diff"].numpy().tolist(),
                          "count": n["output_0"].numpy().tolist(),
                          "up": m.powers(tf.constant([1.0, 2.0])).numpy().tolist(),
                          "down": m.powers(tf.constant([-1.0, -2.0])).numpy().tolist()}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["sigs"] == ["combine", "count"]
    ours = model.combine(tf.constant([1.0, 2.0]), tf.constant([0.5, 4.0]))
    np.testing.assert_allclose(got["sum"], ours["sum"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(got["diff"], ours["diff"].numpy(), rtol=1e-6)
    assert got["count"] == [0, 2, 4, 6]
    assert got["up"] == [24.0, 48.0] and got["down"] == [8.0, 16.0]
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.powers(tf.constant([1.0, 2.0])).numpy().tolist() == [24.0, 48.0]
    assert loaded.signatures["count"](n=tf.constant(3))["output_0"].numpy().tolist() == [0, 2, 4]


def test_unsaveable_objects_raise_tensorflows_error(tmp_path):
    for obj in (object(), [1, 2]):
        with pytest.raises(ValueError, match="Expected an object of type `Trackable`"):
            tf.saved_model.save(obj, str(tmp_path / "m"))


def test_signature_function_needs_an_input_signature(tmp_path):
    model = Dense()
    with pytest.raises(ValueError, match="Only `tf.functions` with an input signature or "
                                         "concrete functions can be used as a signature"):
        tf.saved_model.save(model, str(tmp_path / "m"), signatures=model.double)


def test_export_dir_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(tf.errors.FailedPreconditionError, match="is not a directory"):
        tf.saved_model.save(Dense(), str(path))


def test_function_capturing_an_untracked_variable(tmp_path):
    module = tf.Module()
    hidden = tf.Variable(2.0)
    module.f = tf.function(lambda x: x * hidden,
                           input_signature=[tf.TensorSpec([], tf.float32)])
    with pytest.raises(AssertionError, match="references an 'untracked' resource"):
        tf.saved_model.save(module, str(tmp_path / "m"))


def test_non_tensor_signature_output(tmp_path):
    module = tf.Module()
    module.f = tf.function(lambda x: (x, {"a": x * 2.0}),
                           input_signature=[tf.TensorSpec([], tf.float32)])
    with pytest.raises(ValueError, match="for key 'output_1' .* must be a single Tensor"):
        tf.saved_model.save(module, str(tmp_path / "m"), signatures=module.f)


def test_flowstone_restores_the_objects(tmp_path):
    model = save_dense(tmp_path / "m")
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.w.numpy(), model.w.numpy())
    assert loaded.b.numpy() == 0.5 and not loaded.b.trainable and loaded.w.trainable
    np.testing.assert_array_equal(loaded.layers[0].numpy(), [1.5, -0.5])
    want = model(tf.constant(X)).numpy()
    np.testing.assert_allclose(loaded(tf.constant(X)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(loaded.signatures["serving_default"](x=X)["output_0"].numpy(),
                               want, rtol=1e-6)
    twice = loaded.double(tf.constant(X))
    np.testing.assert_allclose(twice["twice"].numpy(), 2.0 * X + 0.5, rtol=1e-6)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.double(tf.constant([1.0]))
    # The functions read the restored variables: an assignment is seen by the next call.
    loaded.b.assign(1.5)
    np.testing.assert_allclose(loaded(tf.constant(X)).numpy(), want + 1.0, rtol=1e-6)


@requires_tensorflow
def test_flowstone_restores_the_objects_of_a_tensorflow_savedmodel(tmp_path):
    run_tensorflow(f"""
        import tensorflow as tf
        class M(tf.Module):
            def __init__(self):
                super().__init__()
                self.v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
                self.parts = {{"bias": tf.Variable(0.25)}}
                self.step = tf.Variable(7, dtype=tf.int64)
            @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
            def __call__(self, x):
                return tf.matmul(x, self.v) + self.parts["bias"]
        tf.saved_model.save(M(), {str(tmp_path / "tf")!r})
    """)
    loaded = tf.saved_model.load(str(tmp_path / "tf"))
    v = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_array_equal(loaded.v.numpy(), v)
    assert loaded.parts["bias"].numpy() == 0.25
    assert loaded.step.dtype == tf.int64 and loaded.step.numpy() == 7
    np.testing.assert_allclose(loaded(tf.constant(X)).numpy(), X @ v + 0.25, rtol=1e-6)
    np.testing.assert_allclose(
        loaded.signatures["serving_default"](x=X)["output_0"].numpy(), X @ v + 0.25, rtol=1e-6)


@requires_tensorflow
def test_keras_model_saved_to_a_directory_serves_in_tensorflow(tmp_path):
    tf.disable_eager_execution()  # Flowstone's Keras builds graphs
    keras = tf.keras
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(2,)),
                              keras.layers.Dense(1)])
    want = model.predict(X)
    model.save(str(tmp_path / "keras"), save_format="tf")
    np.save(tmp_path / "x.npy", X)
    out = run_tensorflow(f"""
        import json
        import numpy as np
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "keras")!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        out = m.signatures["serving_default"]({model.input_names[0]}=tf.constant(x))
        print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got[model.output_names[0]], want, rtol=1e-5)


@requires_tensorflow
def test_estimator_export_serves_in_tensorflow(tmp_path):
    tf.disable_eager_execution()

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.5))
        y = features["x"] * w + 1.0
        return tf.estimator.EstimatorSpec(
            mode, predictions={"y": y},
            export_outputs={"serving_default": tf.estimator.export.PredictOutput({"y": y})})

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "model"))
    os.makedirs(tmp_path / "model", exist_ok=True)
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        tf.get_variable("w", [], initializer=tf.constant_initializer(2.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, str(tmp_path / "model" / "model.ckpt"))
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None], name="x")})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver).decode()
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        m = tf.saved_model.load({export_dir!r})
        y = m.signatures["serving_default"](x=tf.constant([1.0, -2.0]))["y"]
        print(json.dumps(y.numpy().tolist()))
    """)
    assert json.loads(out.strip().splitlines()[-1]) == [3.5, -4.0]


@requires_tensorflow
def test_function_without_signature_or_trace_saves_without_concrete_functions(tmp_path):
    model = Dense()  # `double` is never called: nothing to save for it, as in TensorFlow
    tf.saved_model.save(model, str(tmp_path / "m"))
    out = run_tensorflow(f"""
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        try:
            m.double(tf.constant([1.0]))
        except ValueError as e:
            print("ValueError", e)
    """)
    assert "ValueError Found zero restored functions for caller function" in out
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.double(tf.constant([1.0]))


def test_checkpoint_root_and_function_attributes(tmp_path):
    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0])
    module.scale = tf.function(lambda x: x * module.v,
                               input_signature=[tf.TensorSpec([2], tf.float32)])
    root = tf.train.Checkpoint(model=module)
    tf.saved_model.save(root, str(tmp_path / "m"), signatures=module.scale)
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.model.v.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(loaded.model.scale(tf.constant([3.0, 4.0])).numpy(), [3.0, 8.0])
    result = loaded.signatures["serving_default"](x=tf.constant([1.0, 1.0]))
    np.testing.assert_array_equal(result["output_0"].numpy(), [1.0, 2.0])


@requires_tensorflow
def test_captured_eager_constants_are_saved(tmp_path):
    offset = tf.constant([10.0, 20.0])
    module = tf.Module()
    module.v = tf.Variable(2.0)
    module.f = tf.function(lambda x: x * module.v + offset,
                           input_signature=[tf.TensorSpec([2], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / "m"))
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        print(json.dumps(m.f(tf.constant([1.0, 2.0])).numpy().tolist()))
    """)
    assert json.loads(out.strip().splitlines()[-1]) == [12.0, 24.0]
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.f(tf.constant([1.0, 2.0])).numpy().tolist() == [12.0, 24.0]
    assert loaded.signatures["serving_default"](x=[0.0, 0.0])["output_0"].numpy().tolist() == \
        [10.0, 20.0]


def test_dangling_references_in_the_object_graph(tmp_path):
    save_dense(tmp_path / "m")
    path = tmp_path / "m" / "saved_model.pb"
    saved_model = tf_protos.SavedModel.FromString(path.read_bytes())
    graph = saved_model.meta_graphs[0].object_graph_def
    next(iter(graph.concrete_functions.values())).bound_inputs.append(999)
    path.write_bytes(saved_model.SerializeToString())
    meta = saved_model.meta_graphs[0]
    prefix = str(tmp_path / "m" / "variables" / "variables")
    with pytest.raises(ValueError, match="refers to node 999, but the graph has"):
        revive.revive(meta, prefix)
    # tf.saved_model.load warns and keeps the signatures.
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    result = loaded.signatures["serving_default"](x=X)["output_0"]
    np.testing.assert_allclose(np.asarray(result), expected(X), rtol=1e-6)


@requires_tensorflow
def test_objects_flowstone_cannot_rebuild_fall_back_to_the_signatures(tmp_path):
    run_tensorflow(f"""
        import tensorflow as tf
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2]), default_value=0)
        module = tf.Module()
        module.table = table
        module.f = tf.function(lambda x: table.lookup(x),
                               input_signature=[tf.TensorSpec([None], tf.string)])
        tf.saved_model.save(module, {str(tmp_path / "tf")!r})
    """)
    loaded = tf.saved_model.load(str(tmp_path / "tf"))
    assert not hasattr(loaded, "f")  # the table is a resource: signatures only
    result = loaded.signatures["serving_default"](x=np.array([b"b", b"z"], object))
    assert np.asarray(result["output_0"]).tolist() == [2, 0]


@requires_tensorflow
def test_module_with_an_optimizer_and_its_slots(tmp_path):
    model = Dense()
    model.opt = tf.train.AdamOptimizer(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model.w * model.w)
    model.opt.apply_gradients(zip(tape.gradient(loss, [model.w]), [model.w]))
    tf.saved_model.save(model, str(tmp_path / "m"))
    reader = tf.train.load_checkpoint(str(tmp_path / "m" / "variables" / "variables"))
    assert "w/.OPTIMIZER_SLOT/opt/m/.ATTRIBUTES/VARIABLE_VALUE" in \
        reader.get_variable_to_shape_map()
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        print(json.dumps({{"w": m.w.numpy().tolist(), "beta1": float(m.opt.beta1_power.numpy())}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got["w"], model.w.numpy(), rtol=1e-6)
    assert got["beta1"] == pytest.approx(0.81)


@requires_tensorflow
def test_function_aliases(tmp_path):
    model = Dense()
    options = tf.saved_model.SaveOptions(function_aliases={"fwd": model.__call__})
    tf.saved_model.save(model, str(tmp_path / "m"), options=options)
    out = run_tensorflow(f"""
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r}, options=tf.saved_model.LoadOptions(
            experimental_load_function_aliases=True))
        print(sorted(m.function_aliases), m.function_aliases["fwd"](tf.ones([1, 2])).numpy())
    """)
    assert out.strip().splitlines()[-1] == "['fwd'] [[6.5 1.5]]"


class Outer(tf.Module):
    def __init__(self):
        super().__init__()
        self.inner = Scaler()
        self.shared = self.inner.k  # one variable reached twice is one node

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return self.inner.combine(x, x)["sum"] + self.shared


@requires_tensorflow
def test_nested_modules_keep_their_functions(tmp_path):
    model = Outer()
    tf.saved_model.save(model, str(tmp_path / "m"))
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        x = tf.constant([1.0, 2.0])
        m.shared.assign(4.0)
        print(json.dumps({{"outer": m(x).numpy().tolist(),
                          "inner": m.inner.combine(x, x)["sum"].numpy().tolist(),
                          "same": m.shared is m.inner.k}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {"outer": [9.0, 14.0], "inner": [5.0, 10.0], "same": True}
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.shared is loaded.inner.k
    assert loaded(tf.constant([1.0, 2.0])).numpy().tolist() == [7.0, 11.0]


@requires_tensorflow
def test_saving_again_over_a_savedmodel_with_any_signature_key(tmp_path):
    model = Scaler()
    tf.saved_model.save(model, str(tmp_path / "m"), signatures={"count": model.count})
    model.k.assign(5.0)
    tf.saved_model.save(model, str(tmp_path / "m"), signatures={"combine-v2.x": model.combine})
    out = run_tensorflow(f"""
        import tensorflow as tf
        m = tf.saved_model.load({str(tmp_path / "m")!r})
        out = m.signatures["combine-v2.x"](a=tf.constant([1.0]), b=tf.constant([2.0]))
        print(sorted(m.signatures), out["sum"].numpy().tolist())
    """)
    assert out.strip().splitlines()[-1] == "['combine-v2.x'] [7.0]"
