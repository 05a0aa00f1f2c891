"""tf.saved_model's TF1 builder-side names: the constants (against real TensorFlow's values),
classification_signature_def, regression_signature_def, is_valid_signature, main_op,
main_op_with_restore, SaveOptions and Asset."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

CONSTANTS = ["ASSETS_KEY", "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB", "CLASSIFY_INPUTS",
             "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "REGRESS_INPUTS",
             "REGRESS_OUTPUTS", "CLASSIFY_METHOD_NAME", "REGRESS_METHOD_NAME"]


@requires_tensorflow
def test_constants_are_tensorflows():
    theirs = json.loads(run_tensorflow(f"""
        import json
        import tensorflow as tf
        print(json.dumps({{n: getattr(tf.compat.v1.saved_model, n) for n in {CONSTANTS!r}}}))
    """).strip().splitlines()[-1])
    assert {n: getattr(tf.saved_model, n) for n in CONSTANTS} == theirs
    assert tf.saved_model.signature_constants.CLASSIFY_OUTPUT_SCORES == "scores"
    assert tf.saved_model.constants.ASSETS_KEY == "saved_model_assets"


def _tensors():
    examples = tf.placeholder(tf.string, [None], name="examples")
    classes = tf.placeholder(tf.string, [None, 3], name="classes")
    scores = tf.placeholder(tf.float32, [None, 3], name="scores")
    return examples, classes, scores


def test_classification_and_regression_signatures():
    examples, classes, scores = _tensors()
    classify = tf.saved_model.classification_signature_def(examples, classes, scores)
    assert classify.method_name == "tensorflow/serving/classify"
    assert classify.inputs["inputs"].name == "examples:0"
    assert set(classify.outputs) == {"classes", "scores"}
    assert classify.outputs["scores"].dtype == tf.float32.as_datatype_enum
    only_scores = tf.saved_model.classification_signature_def(examples, None, scores)
    assert set(only_scores.outputs) == {"scores"}
    regress = tf.saved_model.regression_signature_def(examples, scores[:, 0])
    assert regress.method_name == "tensorflow/serving/regress"
    assert set(regress.inputs) == {"inputs"} and set(regress.outputs) == {"outputs"}
    for signature in (classify, only_scores, regress):
        assert tf.saved_model.is_valid_signature(signature)
    predict = tf.saved_model.predict_signature_def({"x": scores}, {"y": scores})
    assert tf.saved_model.is_valid_signature(predict)


def test_invalid_signatures():
    examples, classes, scores = _tensors()
    assert not tf.saved_model.is_valid_signature(None)
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {"inputs": tf.saved_model.build_tensor_info(scores)},
        {"outputs": tf.saved_model.build_tensor_info(scores)},
        tf.saved_model.REGRESS_METHOD_NAME))  # the examples must be strings
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {"inputs": tf.saved_model.build_tensor_info(examples)},
        {"probabilities": tf.saved_model.build_tensor_info(scores)},
        tf.saved_model.CLASSIFY_METHOD_NAME))  # an output classify does not have
    assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(
        {}, {"y": tf.saved_model.build_tensor_info(scores)},
        tf.saved_model.PREDICT_METHOD_NAME))
    with pytest.raises(ValueError, match="Classification input tensors must be of type string"):
        tf.saved_model.classification_signature_def(scores, classes, None)
    with pytest.raises(ValueError, match="cannot both be None"):
        tf.saved_model.classification_signature_def(examples, None, None)
    with pytest.raises(ValueError, match="Classification scores must be a float Tensor"):
        tf.saved_model.classification_signature_def(examples, None, classes)
    with pytest.raises(ValueError, match="Regression output must be a float Tensor"):
        tf.saved_model.regression_signature_def(examples, classes)
    with pytest.raises(ValueError, match="Regression `examples` must be a string Tensor"):
        tf.saved_model.regression_signature_def("examples", scores)


def test_main_op_initializes_locals_and_tables_then_restores():
    local = tf.Variable(3.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="local")
    # A table initializer stand-in: any op in TABLE_INITIALIZERS.
    table = tf.Variable(0, name="table", collections=[])
    tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, tf.assign(table, 2).op)
    counter = tf.Variable(0, name="counter")
    restore = tf.assign_add(counter, 10).op
    main = tf.saved_model.main_op.main_op()
    with_restore = tf.saved_model.main_op_with_restore(restore.name)
    assert tf.saved_model.main_op.main_op_with_restore is tf.saved_model.main_op_with_restore
    with tf.Session() as sess:
        sess.run(counter.initializer)
        sess.run(main)
        assert sess.run(local) == 3.0 and sess.run(table) == 2
        sess.run(with_restore)
        assert sess.run(counter) == 10


def test_save_options_and_asset(tmp_path):
    options = tf.saved_model.SaveOptions(namespace_whitelist=["Custom"],
                                         function_aliases={"serve": None})
    assert options.namespace_whitelist == ["Custom"] and not options.save_debug_info
    assert options.experimental_custom_gradients is True
    with pytest.raises(AttributeError):
        options.unknown_option = 1
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n")
    asset = tf.saved_model.Asset(str(path))
    assert asset.asset_path.dtype == tf.string
    with tf.Session() as sess:
        assert sess.run(asset.asset_path) == str(path).encode()
    np.testing.assert_equal(tf.saved_model.Asset(asset).asset_path is asset.asset_path, True)
