"""tf.estimator.export: what a served model is fed (ServingInputReceiver and the receiver
functions) and what it returns (PredictOutput, ClassificationOutput, RegressionOutput), turned
into the SignatureDefs of the SavedModel Estimator.export_saved_model writes. Also where
evaluate's results are written."""

import collections
import os
import time

import flowstone as tf
from flowstone.util.tf_export import tf_export

_SINGLE_FEATURE_KEY = "feature"
_SINGLE_RECEIVER_KEY = "input"


def _as_tensor_dict(value, default_key, what):
    if isinstance(value, dict):
        result = dict(value)
    else:
        result = {default_key: value}
    for key, tensor in result.items():
        if not isinstance(key, str):
            raise ValueError(f"{what} keys must be strings: {key}.")
        if not isinstance(tensor, (tf.Tensor, tf.SparseTensor)):
            raise ValueError(f"{what} must be a Tensor, SparseTensor, or dict of string to "
                             f"Tensor or SparseTensor; got {tensor}.")
    return result


@tf_export("estimator.export.ServingInputReceiver")
class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors",
                                 "receiver_tensors_alternatives"])):
    """The features a served model sees, and the tensors (usually placeholders) a request
    feeds."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        features = _as_tensor_dict(features, _SINGLE_FEATURE_KEY, "feature")
        receiver_tensors = _as_tensor_dict(receiver_tensors, _SINGLE_RECEIVER_KEY,
                                           "receiver_tensor")
        return super().__new__(cls, features, receiver_tensors,
                               dict(receiver_tensors_alternatives or {}))


@tf_export("estimator.export.TensorServingInputReceiver")
class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors",
                                       "receiver_tensors_alternatives"])):
    """A receiver whose features are one Tensor, passed to model_fn as is."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if not isinstance(features, (tf.Tensor, tf.SparseTensor)):
            raise ValueError(f"features must be a Tensor or SparseTensor; got {features}.")
        receiver = ServingInputReceiver({_SINGLE_FEATURE_KEY: features}, receiver_tensors,
                                        receiver_tensors_alternatives)
        return super().__new__(cls, features, receiver.receiver_tensors,
                               receiver.receiver_tensors_alternatives)


@tf_export("estimator.export.build_raw_serving_input_receiver_fn")
def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn that feeds each feature through a placeholder of its dtype and shape
    (with a free batch dimension)."""
    def serving_input_receiver_fn():
        receivers = {}
        for name, tensor in features.items():
            shape = tf.TensorShape(tensor.shape)
            dims = [default_batch_size] + shape.as_list()[1:] if shape.ndims else None
            receivers[name] = tf.placeholder(tensor.dtype, dims, name=name)
        return ServingInputReceiver(receivers, dict(receivers))
    return serving_input_receiver_fn


@tf_export("estimator.export.ExportOutput")
class ExportOutput:
    """One signature's outputs."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError


def _single_string_input(receiver_tensors, kind):
    if len(receiver_tensors) != 1:
        raise ValueError(f"{kind} input must be a single string Tensor; got {receiver_tensors}")
    (examples,) = receiver_tensors.values()
    if examples.dtype != tf.string:
        raise ValueError(f"{kind} input must be a single string Tensor; got {receiver_tensors}")
    return examples


@tf_export("estimator.export.PredictOutput")
class PredictOutput(ExportOutput):
    """Named output tensors (a predict signature)."""

    def __init__(self, outputs):
        self.outputs = _as_tensor_dict(outputs, "output", "Prediction output")

    def as_signature_def(self, receiver_tensors):
        return tf.saved_model.predict_signature_def(receiver_tensors, self.outputs)


@tf_export("estimator.export.ClassificationOutput")
class ClassificationOutput(ExportOutput):
    """Scores and/or class names (a classify signature over serialized examples)."""

    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        if classes is not None and classes.dtype != tf.string:
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        outputs = {}
        if self.classes is not None:
            outputs["classes"] = tf.saved_model.build_tensor_info(self.classes)
        if self.scores is not None:
            outputs["scores"] = tf.saved_model.build_tensor_info(self.scores)
        return tf.saved_model.build_signature_def(
            {"inputs": tf.saved_model.build_tensor_info(examples)}, outputs,
            tf.saved_model.CLASSIFY_METHOD_NAME)


@tf_export("estimator.export.RegressionOutput")
class RegressionOutput(ExportOutput):
    """One float value per example (a regress signature over serialized examples)."""

    def __init__(self, value):
        if not isinstance(value, tf.Tensor) or not value.dtype.is_floating:
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        return tf.saved_model.build_signature_def(
            {"inputs": tf.saved_model.build_tensor_info(examples)},
            {"outputs": tf.saved_model.build_tensor_info(self.value)},
            tf.saved_model.REGRESS_METHOD_NAME)


def build_all_signature_defs(receiver_tensors, export_outputs, predictions,
                             receiver_tensors_alternatives=None):
    """{signature key: SignatureDef}: each export output (by default, the predictions under
    "serving_default") over the receiver tensors. Classify and regress signatures need one
    string input; without it they are left out with a log line, as TensorFlow does."""
    if not export_outputs:
        export_outputs = {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                          PredictOutput(predictions)}
    signatures = {}
    receivers = {None: receiver_tensors}
    receivers.update(receiver_tensors_alternatives or {})
    for receiver_name, tensors in receivers.items():
        tensors = _as_tensor_dict(tensors, _SINGLE_RECEIVER_KEY, "receiver_tensor")
        for key, output in export_outputs.items():
            name = key if receiver_name is None else f"{receiver_name}:{key}"
            try:
                signatures[name] = output.as_signature_def(tensors)
            except ValueError as e:
                tf.logging.warning("Signature %s is excluded from the export: %s", name, e)
    if not signatures:
        raise ValueError("Export failed: no valid signature_def_map could be built from the "
                         "export_outputs and the serving input receiver.")
    return signatures


def timestamped_export_dir(export_dir_base):
    """export_dir_base/<seconds since the epoch>, a name not taken yet."""
    stamp = int(time.time())
    while os.path.exists(os.path.join(export_dir_base, str(stamp))):
        stamp += 1
    return os.path.join(export_dir_base, str(stamp))


def write_eval_results(eval_dir, results, global_step):
    """Makes `eval_dir` and writes the scalar results there as a summary at `global_step`, for
    TensorBoard."""
    os.makedirs(eval_dir, exist_ok=True)
    proto = tf.Summary()
    for key, value in sorted(results.items()):
        if key != tf.GraphKeys.GLOBAL_STEP and getattr(value, "ndim", 0) == 0:
            proto.value.add(tag=key, simple_value=float(value))
    writer = tf.summary.FileWriterCache.get(eval_dir)
    writer.add_summary(proto, global_step)
    writer.flush()
