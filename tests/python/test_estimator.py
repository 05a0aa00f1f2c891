"""tf.estimator: Estimator with a custom model_fn (train, resume, evaluate, predict, export),
the input functions, train_and_evaluate, the canned estimators (TensorFlow 1.15's v1 heads:
losses summed over the batch, their metric and prediction keys and variable names) and the
errors TensorFlow raises. TensorFlow 2.21 (the oracle) no longer ships tf.estimator, so numbers
are checked against numpy and tf.metrics, and behaviour against TensorFlow 1.15's documentation."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fc = tf.feature_column

X = np.linspace(-1, 1, 64, dtype=np.float32)
Y = (3 * X + 0.5).astype(np.float32)


def linear_model_fn(features, labels, mode, params):
    """y = w * x + b with a mean squared error and a mean absolute error metric."""
    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
    predictions = w * features["x"] + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions,
                                                             "x": features["x"]})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.train.get_global_step())
    metrics = {"mae": tf.metrics.mean_absolute_error(labels, predictions)}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      eval_metric_ops=metrics)


def train_input(batch_size=16, num_epochs=None, shuffle=True):
    return tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=batch_size,
                                              num_epochs=num_epochs, shuffle=shuffle)


def make_linear(model_dir, **config):
    return tf.estimator.Estimator(linear_model_fn, model_dir=str(model_dir),
                                  params={"learning_rate": 0.1},
                                  config=tf.estimator.RunConfig(**config))


def test_train_reduces_the_loss_and_resumes_from_the_checkpoint(tmp_path):
    est = make_linear(tmp_path, tf_random_seed=1)
    before = est.evaluate(train_input(64, 1, False))
    assert before["global_step"] == 0
    est.train(train_input(), steps=40)
    assert est.get_variable_value("global_step") == 40
    assert est.latest_checkpoint().endswith("model.ckpt-40")
    after = est.evaluate(train_input(64, 1, False))
    assert after["loss"] < before["loss"] / 10
    # A new Estimator on the same model_dir continues from step 40.
    est2 = make_linear(tmp_path)
    est2.train(train_input(), steps=10)
    assert est2.get_variable_value("global_step") == 50
    # max_steps already reached: nothing to do.
    est2.train(train_input(), max_steps=30)
    assert est2.get_variable_value("global_step") == 50
    est2.train(train_input(), max_steps=55)
    assert est2.get_variable_value("global_step") == 55
    assert set(est2.get_variable_names()) >= {"w", "b", "global_step"}


def test_train_stops_at_the_end_of_the_input(tmp_path):
    est = make_linear(tmp_path)
    est.train(train_input(batch_size=16, num_epochs=2))  # 64 examples, 2 epochs: 8 steps
    assert est.get_variable_value("global_step") == 8


def test_checkpoints_every_n_steps_keep_the_newest(tmp_path):
    est = make_linear(tmp_path, save_checkpoints_steps=5, keep_checkpoint_max=2)
    est.train(train_input(), steps=20)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-15", "model.ckpt-20"]


def test_evaluate_metrics_equal_tf_metrics_by_hand(tmp_path):
    est = make_linear(tmp_path)
    est.train(train_input(), steps=15)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    results = est.evaluate(train_input(16, 1, False), name="holdout")
    predictions = w * X + b
    batches = np.split(np.square(predictions - Y), 4)
    np.testing.assert_allclose(results["loss"], np.mean([b.mean() for b in batches]), rtol=1e-5)
    np.testing.assert_allclose(results["mae"], np.mean(np.abs(predictions - Y)), rtol=1e-5)
    assert results["global_step"] == 15
    assert os.path.isdir(tmp_path / "eval_holdout")
    assert est.eval_dir("holdout") == str(tmp_path / "eval_holdout")
    # steps limits the number of batches evaluated.
    two = est.evaluate(train_input(16, 1, False), steps=2)
    np.testing.assert_allclose(two["mae"], np.mean(np.abs(predictions - Y)[:32]), rtol=1e-5)


def test_predict_yields_single_examples_or_batches(tmp_path):
    est = make_linear(tmp_path)
    est.train(train_input(), steps=5)
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    predict_input = tf.estimator.inputs.numpy_input_fn({"x": X[:10]}, batch_size=4,
                                                       shuffle=False)
    examples = list(est.predict(predict_input))
    assert len(examples) == 10 and sorted(examples[0]) == ["x", "y"]
    np.testing.assert_allclose([e["y"] for e in examples], w * X[:10] + b, rtol=1e-6)
    only_y = list(est.predict(predict_input, predict_keys=["y"]))
    assert sorted(only_y[0]) == ["y"]
    batches = list(est.predict(predict_input, yield_single_examples=False))
    assert [len(batch["y"]) for batch in batches] == [4, 4, 2]
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        list(est.predict(predict_input, predict_keys=["nope"]))


def test_input_fn_may_return_a_dataset(tmp_path):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(8)

    est = make_linear(tmp_path)
    est.train(input_fn, steps=3)
    assert est.get_variable_value("global_step") == 3


def test_export_saved_model_loads_back_and_predicts_the_same(tmp_path):
    est = make_linear(tmp_path / "model")
    est.train(train_input(), steps=10)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None], name="x")})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver_fn)
    assert isinstance(export_dir, bytes) and os.path.isdir(export_dir)
    expected = [p["y"] for p in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:5]}, shuffle=False))]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          export_dir.decode())
        signature = meta.signature_def["serving_default"]
        x = sess.graph.get_tensor_by_name(signature.inputs["x"].name)
        y = sess.graph.get_tensor_by_name(signature.outputs["y"].name)
        np.testing.assert_allclose(sess.run(y, {x: X[:5]}), expected, rtol=1e-6)


def test_model_fn_and_spec_errors(tmp_path):
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda inputs, labels, mode: None)
    with pytest.raises(ValueError, match="does not include params argument, but params"):
        tf.estimator.Estimator(lambda features, labels, mode: None, params={"a": 1})
    with pytest.raises(ValueError, match="has following not expected args: \\['extra'\\]"):
        tf.estimator.Estimator(lambda features, labels, extra: None)
    with pytest.raises(ValueError, match="model_dir are set both in constructor and "
                                         "`RunConfig`, but with different values"):
        tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"), params={},
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "b")))

    def no_loss(features, labels, mode):
        tf.train.get_or_create_global_step()
        return tf.estimator.EstimatorSpec(mode, train_op=tf.no_op())

    with pytest.raises(ValueError, match="Missing loss."):
        tf.estimator.Estimator(no_loss, model_dir=str(tmp_path / "c")).train(train_input(),
                                                                             steps=1)
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="Missing train_op."):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="Missing predictions."):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="Values in export_outputs must be ExportOutput"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT, predictions=loss,
                                       export_outputs={"out": loss})
        with pytest.raises(TypeError, match="Values of eval_metric_ops must be"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=loss,
                                       eval_metric_ops={"m": loss})
    est = make_linear(tmp_path / "d")
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        est.train(train_input(), steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        est.train(train_input(), steps=0)
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
        est.train(train_input(), hooks=["not a hook"], steps=1)
    with pytest.raises(ValueError, match="Couldn't find trained model at"):
        est.export_saved_model(str(tmp_path / "e"), lambda: None)
    with pytest.raises(ValueError, match="Can not provide both save_checkpoints_steps and "
                                         "save_checkpoints_secs."):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)


def test_run_config_defaults_and_replace():
    config = tf.estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    assert (config.save_summary_steps, config.keep_checkpoint_max) == (100, 5)
    assert config.is_chief and config.num_worker_replicas == 1
    steps = config.replace(save_checkpoints_steps=10, tf_random_seed=3)
    assert (steps.save_checkpoints_secs, steps.save_checkpoints_steps) == (None, 10)
    assert steps.tf_random_seed == 3 and config.tf_random_seed is None
    with pytest.raises(ValueError, match="Replacing \\['nope'\\] is not supported"):
        config.replace(nope=1)


def test_numpy_input_fn_batches_and_errors():
    x = {"a": np.arange(5), "b": np.arange(5) * 10}
    with tf.Graph().as_default():
        features, labels = tf.estimator.inputs.numpy_input_fn(
            x, np.arange(5) * 100, batch_size=2, num_epochs=2, shuffle=False)()
        got = []
        with tf.Session() as sess:
            while True:
                try:
                    got.append(sess.run((features, labels)))
                except tf.errors.OutOfRangeError:
                    break
    assert [len(l) for _, l in got] == [2, 2, 2, 2, 2]
    assert np.concatenate([f["a"] for f, _ in got]).tolist() == [0, 1, 2, 3, 4] * 2
    assert np.concatenate([l for _, l in got]).tolist() == [0, 100, 200, 300, 400] * 2
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as "
                                         "boolean"):
        tf.estimator.inputs.numpy_input_fn(x)
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        tf.estimator.inputs.numpy_input_fn(x, np.arange(4), shuffle=False)()
    with pytest.raises(ValueError, match="1 duplicate keys are found in both x and y"):
        tf.estimator.inputs.numpy_input_fn(x, {"a": np.arange(5)}, shuffle=False)()
    assert tf.compat.v1.estimator.inputs.numpy_input_fn is tf.estimator.inputs.numpy_input_fn


def test_pandas_input_fn():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6]})
    with tf.Graph().as_default():
        features, labels = tf.estimator.inputs.pandas_input_fn(
            frame, pd.Series([7, 8, 9]), batch_size=3, shuffle=False)()
        with tf.Session() as sess:
            f, l = sess.run((features, labels))
    assert f["a"].tolist() == [1.0, 2.0, 3.0] and l.tolist() == [7, 8, 9]


def test_train_and_evaluate_locally(tmp_path):
    est = make_linear(tmp_path, save_checkpoints_steps=10)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None])})
    train_spec = tf.estimator.TrainSpec(train_input(), max_steps=30)
    eval_spec = tf.estimator.EvalSpec(train_input(64, 1, False), steps=None, throttle_secs=0,
                                      exporters=tf.estimator.FinalExporter("final", receiver_fn))
    metrics, exports = tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    assert metrics["global_step"] == 30 and metrics["loss"] < 0.5
    assert len(exports) == 1 and tf.saved_model.contains_saved_model(exports[0].decode())
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        tf.estimator.TrainSpec(train_input(), max_steps=0)


# --- canned estimators --------------------------------------------------------------------------

RNG = np.random.RandomState(0)
FEATURES = RNG.randn(200, 2).astype(np.float32)
BINARY = (FEATURES[:, 0] + FEATURES[:, 1] > 0).astype(np.int64)


def canned_input(labels, num_epochs=None, shuffle=True, batch_size=32, extra=None):
    x = {"f": FEATURES}
    x.update(extra or {})
    return tf.estimator.inputs.numpy_input_fn(x, labels, batch_size=batch_size,
                                              num_epochs=num_epochs, shuffle=shuffle)


BINARY_METRICS = {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall",
                  "average_loss", "label/mean", "loss", "precision", "prediction/mean",
                  "recall", "global_step"}


def test_dnn_classifier_binary_metrics_predictions_and_variable_names(tmp_path):
    columns = [fc.numeric_column("f", shape=(2,))]
    est = tf.estimator.DNNClassifier([8, 4], columns, model_dir=str(tmp_path),
                                     optimizer=tf.train.AdamOptimizer(0.05),
                                     config=tf.estimator.RunConfig(tf_random_seed=2))
    est.train(canned_input(BINARY), steps=60)
    names = set(est.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_1/kernel",
            "dnn/logits/kernel", "dnn/logits/bias", "global_step"} <= names
    assert est.get_variable_value("dnn/hiddenlayer_0/kernel").shape == (2, 8)
    # One evaluation batch: the loss is the summed (Reduction.SUM) cross-entropy.
    metrics = est.evaluate(canned_input(BINARY, 1, False, batch_size=200))
    assert set(metrics) == BINARY_METRICS
    assert metrics["accuracy"] > 0.9 and metrics["auc"] > 0.95
    np.testing.assert_allclose(metrics["loss"], metrics["average_loss"] * 200, rtol=1e-4)
    np.testing.assert_allclose(metrics["label/mean"], BINARY.mean(), rtol=1e-6)
    np.testing.assert_allclose(metrics["accuracy_baseline"],
                               max(BINARY.mean(), 1 - BINARY.mean()), rtol=1e-6)
    predictions = list(est.predict(canned_input(None, 1, False)))
    first = predictions[0]
    assert sorted(first) == ["all_class_ids", "all_classes", "class_ids", "classes", "logistic",
                             "logits", "probabilities"]
    probabilities = np.array([p["probabilities"] for p in predictions])
    logistic = np.array([p["logistic"][0] for p in predictions])
    np.testing.assert_allclose(probabilities[:, 1], logistic, rtol=1e-5)
    np.testing.assert_allclose(logistic, 1 / (1 + np.exp(-np.array(
        [p["logits"][0] for p in predictions]))), rtol=1e-5)
    class_ids = np.array([p["class_ids"][0] for p in predictions])
    assert [p["classes"][0] for p in predictions[:3]] == [str(c).encode() for c in class_ids[:3]]
    np.testing.assert_allclose(metrics["accuracy"], np.mean(class_ids == BINARY), rtol=1e-6)
    # average_loss is the mean sigmoid cross-entropy of the predictions.
    p = np.clip(logistic, 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(metrics["average_loss"],
                               -np.mean(BINARY * np.log(p) + (1 - BINARY) * np.log(1 - p)),
                               rtol=1e-3)


def test_dnn_classifier_multiclass_with_vocabulary_and_weights(tmp_path):
    labels = np.array(["low", "mid", "high"])[np.digitize(FEATURES[:, 0], [-0.5, 0.5])]
    weights = np.where(labels == "mid", 2.0, 1.0).astype(np.float32)
    est = tf.estimator.DNNClassifier(
        [16], [fc.numeric_column("f", shape=(2,))], model_dir=str(tmp_path), n_classes=3,
        label_vocabulary=["low", "mid", "high"], weight_column="w", dropout=0.1,
        optimizer="Adam", config=tf.estimator.RunConfig(tf_random_seed=3))
    est.train(canned_input(labels, extra={"w": weights}), steps=100)
    metrics = est.evaluate(canned_input(labels, 1, False, 200, extra={"w": weights}))
    assert set(metrics) == {"accuracy", "average_loss", "loss", "global_step"}
    predictions = list(est.predict(canned_input(None, 1, False, extra={"w": weights})))
    assert sorted(predictions[0]) == ["all_class_ids", "all_classes", "class_ids", "classes",
                                      "logits", "probabilities"]
    classes = np.array([p["classes"][0].decode() for p in predictions])
    assert predictions[0]["all_classes"].tolist() == [b"low", b"mid", b"high"]
    correct = (classes == labels).astype(np.float64)
    np.testing.assert_allclose(metrics["accuracy"], np.sum(correct * weights) / np.sum(weights),
                               rtol=1e-5)
    assert metrics["accuracy"] > 0.8
    probabilities = np.array([p["probabilities"] for p in predictions])
    ids = np.array([["low", "mid", "high"].index(v) for v in labels])
    nll = -np.log(probabilities[np.arange(200), ids])
    np.testing.assert_allclose(metrics["average_loss"], np.sum(nll * weights) / np.sum(weights),
                               rtol=1e-4)
    np.testing.assert_allclose(metrics["loss"], np.sum(nll * weights), rtol=1e-4)


def test_linear_regressor_learns_and_names_its_variables(tmp_path):
    targets = (2 * FEATURES[:, 0] - FEATURES[:, 1] + 1).astype(np.float32)
    # The loss is summed over the batch of 10: a small rate.
    est = tf.estimator.LinearRegressor([fc.numeric_column("f", shape=(2,))],
                                       model_dir=str(tmp_path),
                                       optimizer=tf.train.GradientDescentOptimizer(0.01))
    est.train(canned_input(targets, batch_size=10), steps=200)
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/f/weights")[:, 0],
                               [2, -1], atol=0.05)
    np.testing.assert_allclose(est.get_variable_value("linear/linear_model/bias_weights"),
                               [1], atol=0.05)
    metrics = est.evaluate(canned_input(targets, 1, False, 200))
    assert set(metrics) == {"average_loss", "label/mean", "loss", "prediction/mean",
                            "global_step"}
    np.testing.assert_allclose(metrics["label/mean"], targets.mean(), rtol=1e-5)
    predictions = np.array([p["predictions"][0] for p in est.predict(canned_input(None, 1,
                                                                                  False))])
    np.testing.assert_allclose(metrics["average_loss"], np.mean((predictions - targets) ** 2),
                               rtol=1e-4)


def test_linear_classifier_with_categorical_columns(tmp_path):
    words = np.array(["yes", "no"])[BINARY]
    columns = [fc.categorical_column_with_vocabulary_list("word", ["no", "yes"]),
               fc.categorical_column_with_hash_bucket("word2", 5)]
    est = tf.estimator.LinearClassifier(columns, model_dir=str(tmp_path))
    est.train(canned_input(BINARY, extra={"word": words, "word2": words}), steps=20)
    assert est.get_variable_value("linear/linear_model/word/weights").shape == (2, 1)
    assert est.get_variable_value("linear/linear_model/word2/weights").shape == (5, 1)
    metrics = est.evaluate(canned_input(BINARY, 1, False, 200,
                                        extra={"word": words, "word2": words}))
    assert metrics["accuracy"] == 1.0


def test_dnn_linear_combined_trains_both_parts(tmp_path):
    words = np.array(["a", "b"])[BINARY]
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path),
        linear_feature_columns=[fc.categorical_column_with_vocabulary_list("word", ["a", "b"])],
        dnn_feature_columns=[fc.numeric_column("f", shape=(2,))], dnn_hidden_units=[4],
        linear_optimizer=tf.train.FtrlOptimizer(0.5),
        dnn_optimizer=lambda: tf.train.AdagradOptimizer(0.1),
        config=tf.estimator.RunConfig(tf_random_seed=4))
    est.train(canned_input(BINARY, extra={"word": words}), steps=30)
    assert est.get_variable_value("global_step") == 30
    assert np.any(est.get_variable_value("linear/linear_model/word/weights") != 0)
    assert est.get_variable_value("dnn/hiddenlayer_0/kernel").shape == (2, 4)
    assert {"dnn/logits/kernel", "linear/linear_model/bias_weights"} <= set(
        est.get_variable_names())
    metrics = est.evaluate(canned_input(BINARY, 1, False, 200, extra={"word": words}))
    assert set(metrics) == BINARY_METRICS and metrics["accuracy"] > 0.95
    regressor = tf.estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path / "r"), dnn_feature_columns=[fc.numeric_column("f", shape=(2,))],
        dnn_hidden_units=[3])
    regressor.train(canned_input(FEATURES[:, 0]), steps=2)
    assert regressor.get_variable_value("global_step") == 2


def test_canned_estimator_errors(tmp_path):
    columns = [fc.numeric_column("f", shape=(2,))]
    with pytest.raises(ValueError, match="Unsupported optimizer name: Nope"):
        tf.estimator.DNNClassifier([2], columns, model_dir=str(tmp_path),
                                   optimizer="Nope").train(canned_input(BINARY), steps=1)
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.DNNClassifier([2], columns, n_classes=1)
    with pytest.raises(NotImplementedError, match="Reduction.SUM"):
        tf.estimator.DNNRegressor([2], columns,
                                  loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE)
    est = tf.estimator.DNNClassifier([2], columns, model_dir=str(tmp_path / "b"), n_classes=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must be in \\[0, "
                                                             "n_classes - 1\\]"):
        est.train(canned_input(BINARY + 2), steps=1)


def test_canned_export_serves_the_predict_signature(tmp_path):
    est = tf.estimator.DNNClassifier([4], [fc.numeric_column("f", shape=(2,))],
                                     model_dir=str(tmp_path / "m"))
    est.train(canned_input(BINARY), steps=5)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"f": tf.placeholder(tf.float32, [None, 2])})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    expected = np.array([p["probabilities"] for p in est.predict(canned_input(None, 1, False))])
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        # The classify signatures need serialized examples: only "predict" is exported.
        assert sorted(meta.signature_def) == ["predict"]
        signature = meta.signature_def["predict"]
        got = sess.run(signature.outputs["probabilities"].name,
                       {signature.inputs["f"].name: FEATURES})
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_estimator_digits_example_trains_and_resumes(tmp_path):
    pytest.importorskip("sklearn")
    script = os.path.join(ROOT, "examples", "estimator_digits.py")

    def run():
        proc = subprocess.run([sys.executable, script, "--model_dir", str(tmp_path),
                               "--steps", "150"], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc.stdout

    first = run()
    assert "global step 150" in first
    second = run()
    assert "resuming from global step 150" in second and "global step 300" in second
    accuracy = float(re.search(r"test accuracy ([0-9.]+),", second).group(1))
    assert accuracy > 0.85


def test_baseline_estimators_learn_the_label_distribution_and_mean(tmp_path):
    labels = (np.arange(200) % 4 == 0).astype(np.int64)  # a quarter positive
    classifier = tf.estimator.BaselineClassifier(model_dir=str(tmp_path / "c"),
                                                 optimizer=tf.train.AdamOptimizer(0.05))
    classifier.train(canned_input(labels), steps=200)
    assert classifier.get_variable_value("baseline/bias").shape == (1,)
    probabilities = [p["probabilities"] for p in classifier.predict(canned_input(None, 1, False))]
    np.testing.assert_allclose(probabilities[0], [0.75, 0.25], atol=0.03)
    np.testing.assert_allclose(probabilities[0], probabilities[-1])
    targets = np.full(200, 4.0, np.float32)
    regressor = tf.estimator.BaselineRegressor(model_dir=str(tmp_path / "r"),
                                               optimizer=tf.train.AdamOptimizer(0.1))
    regressor.train(canned_input(targets), steps=200)
    np.testing.assert_allclose(regressor.get_variable_value("baseline/bias"), [4.0], atol=0.1)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_exported_wide_and_deep_model_serves_in_tensorflow(tmp_path):
    """The exported graph (hash buckets, crosses, vocabulary lookups, a DNN) runs in real
    TensorFlow's loader and predicts what Flowstone predicts."""
    words = np.array(["apple", "kiwi", "fig", "plum"])[np.arange(200) % 4]
    extra = {"word": words}
    word = fc.categorical_column_with_hash_bucket("word", 10)
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "m"),
        linear_feature_columns=[word, fc.crossed_column(["word", fc.bucketized_column(
            fc.numeric_column("f", shape=(2,)), [0.0])], 20)],
        dnn_feature_columns=[fc.numeric_column("f", shape=(2,)), fc.embedding_column(word, 3),
                             fc.indicator_column(fc.categorical_column_with_vocabulary_list(
                                 "word", ["fig", "kiwi"]))],
        dnn_hidden_units=[5])
    est.train(canned_input(BINARY, extra=extra), steps=5)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn({
        "f": tf.placeholder(tf.float32, [None, 2]), "word": tf.placeholder(tf.string, [None])})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    expected = np.array([p["probabilities"] for p in est.predict(canned_input(None, 1, False,
                                                                              extra=extra))])
    np.save(tmp_path / "expected.npy", expected)
    np.save(tmp_path / "f.npy", FEATURES)
    np.save(tmp_path / "word.npy", words.astype(object), allow_pickle=True)
    script = f"""
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_eager_execution()
with tf1.Session() as sess:
    meta = tf1.saved_model.loader.load(sess, ["serve"], {export_dir!r})
    sig = meta.signature_def["predict"]
    feed = {{sig.inputs["f"].name: np.load("f.npy"),
            sig.inputs["word"].name: np.load("word.npy", allow_pickle=True)}}
    got = sess.run(sig.outputs["probabilities"].name, feed)
np.testing.assert_allclose(got, np.load("expected.npy"), rtol=1e-5, atol=1e-6)
print("ok")
"""
    proc = subprocess.run([PEER_PYTHON, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_warm_start_copies_trainable_variables_from_another_model(tmp_path):
    source = make_linear(tmp_path / "source")
    source.train(train_input(), steps=10)
    target = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "target"),
                                    params={"learning_rate": 0.0},
                                    warm_start_from=str(tmp_path / "source"))
    target.train(train_input(), steps=2)
    for name in ("w", "b"):
        assert target.get_variable_value(name) == source.get_variable_value(name)
    assert target.get_variable_value("global_step") == 2
    only_w = tf.estimator.Estimator(
        linear_model_fn, model_dir=str(tmp_path / "only_w"), params={"learning_rate": 0.0},
        warm_start_from=tf.estimator.WarmStartSettings(str(tmp_path / "source"), "w"))
    only_w.train(train_input(), steps=1)
    assert only_w.get_variable_value("w") == source.get_variable_value("w")
    assert only_w.get_variable_value("b") == 0.0


def test_estimator_char_lstm_example_trains_and_resumes(tmp_path):
    script = os.path.join(ROOT, "examples", "estimator_char_lstm.py")

    def run():
        proc = subprocess.run([sys.executable, script, "--model_dir", str(tmp_path),
                               "--steps", "40"], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc.stdout

    first = run()
    assert "global step 40:" in first
    loss = float(re.search(r"loss ([0-9.]+),", first).group(1))
    second = run()
    assert "resuming from global step 40" in second and "global step 80:" in second
    assert float(re.search(r"loss ([0-9.]+),", second).group(1)) < loss
    assert "'Beautiful is better th' -> " in second


def test_add_metrics_extends_a_canned_estimator(tmp_path):
    est = tf.estimator.LinearClassifier([fc.numeric_column("f", shape=(2,))],
                                        model_dir=str(tmp_path))
    est.train(canned_input(BINARY), steps=10)

    def metric_fn(labels, predictions):
        return {"mean_logistic": tf.metrics.mean(predictions["logistic"]),
                "positives": tf.metrics.true_positives(labels, predictions["class_ids"])}

    extended = tf.estimator.add_metrics(est, metric_fn)
    metrics = extended.evaluate(canned_input(BINARY, 1, False, 200))
    assert set(metrics) == BINARY_METRICS | {"mean_logistic", "positives"}
    np.testing.assert_allclose(metrics["mean_logistic"], metrics["prediction/mean"], rtol=1e-6)
    predictions = list(est.predict(canned_input(None, 1, False)))
    class_ids = np.array([p["class_ids"][0] for p in predictions])
    assert metrics["positives"] == np.sum((class_ids == 1) & (BINARY == 1))
    with pytest.raises(ValueError, match="has following not expected args: \\['weights'\\]"):
        tf.estimator.add_metrics(est, lambda labels, weights: {})


def test_features_as_one_tensor_train_and_export_with_a_tensor_receiver(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
        predictions = w * features
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.reduce_mean(tf.square(predictions - labels))
        train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    est.train(tf.estimator.inputs.numpy_input_fn(X, 3 * X, batch_size=16, num_epochs=None,
                                                 shuffle=True), steps=30)
    assert abs(est.get_variable_value("w") - 3.0) < 0.1

    def receiver_fn():
        serialized = tf.placeholder(tf.float32, [None], name="x")
        return tf.estimator.export.TensorServingInputReceiver(serialized, {"x": serialized})

    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        signature = meta.signature_def["serving_default"]
        got = sess.run(signature.outputs["output"].name, {signature.inputs["x"].name: [1.0, 2.0]})
    np.testing.assert_allclose(got, est.get_variable_value("w") * np.array([1.0, 2.0]),
                               rtol=1e-6)


def test_training_writes_the_loss_summary_for_tensorboard(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    x = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path),
                                       config=tf.estimator.RunConfig(save_summary_steps=1))
    estimator.train(tf.estimator.inputs.numpy_input_fn({"x": x}, 2 * x, batch_size=4,
                                                       num_epochs=1, shuffle=False))
    events = [e for f in tmp_path.glob("events.out.tfevents.*")
              for e in tf.train.summary_iterator(str(f))]
    losses = {e.step: v.simple_value for e in events for v in e.summary.value if v.tag == "loss"}
    # Step 1's batch is x = 0 .. 3/8 with w = 0: the loss is mean((2x)^2).
    assert sorted(losses) == [1, 2]
    assert losses[1] == pytest.approx(float(np.mean((2 * x[:4]) ** 2)))
