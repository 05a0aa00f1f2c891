"""Signatures: the named inputs and outputs of a SavedModel's graph, as TensorInfo protos."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.saved_model import constants
from flowstone.util.tf_export import tf_export


@tf_export("saved_model.utils.build_tensor_info", "saved_model.build_tensor_info")
def build_tensor_info(tensor):
    """The TensorInfo (name, dtype, shape) of a tensor."""
    if not isinstance(tensor, _ops.Tensor):
        raise TypeError(f"build_tensor_info takes a Tensor, got {type(tensor).__name__}.")
    info = tf_protos.TensorInfo(name=tensor.name, dtype=tensor.dtype.as_datatype_enum)
    if tensor.shape.ndims is None:
        info.tensor_shape.unknown_rank = True
    else:
        for dim in tensor.shape.as_list():
            info.tensor_shape.dim.add().size = -1 if dim is None else dim
    return info


@tf_export("saved_model.utils.get_tensor_from_tensor_info",
           "saved_model.get_tensor_from_tensor_info")
def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The tensor a TensorInfo names, in `graph` (default: the default graph)."""
    graph = graph or _ops.get_default_graph()
    if tensor_info.WhichOneof("encoding") != "name":
        raise ValueError(f"Invalid TensorInfo.encoding: {tensor_info.WhichOneof('encoding')}; "
                         "only dense tensors are supported.")
    name = tensor_info.name
    if import_scope:
        name = f"{import_scope}/{name}"
    return graph.get_tensor_by_name(name)


@tf_export("saved_model.signature_def_utils.build_signature_def", "saved_model.build_signature_def")
def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None):
    """A SignatureDef from {key: TensorInfo} inputs and outputs."""
    signature = tf_protos.SignatureDef()
    for key, info in (inputs or {}).items():
        signature.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        signature.outputs[key].CopyFrom(info)
    if method_name is not None:
        signature.method_name = method_name
    if defaults:
        raise NotImplementedError("build_signature_def(defaults=...) is not supported.")
    return signature


@tf_export("saved_model.signature_def_utils.predict_signature_def",
           "saved_model.predict_signature_def")
def predict_signature_def(inputs, outputs):
    """A predict SignatureDef from {key: Tensor} inputs and outputs."""
    if not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def(
        {key: build_tensor_info(t) for key, t in inputs.items()},
        {key: build_tensor_info(t) for key, t in outputs.items()},
        constants.PREDICT_METHOD_NAME)


def _string_examples(examples, kind):
    if examples is None:
        raise ValueError(f"{kind} `examples` cannot be None.")
    if not isinstance(examples, _ops.Tensor):
        raise ValueError(f"{kind} `examples` must be a string Tensor. Found `{examples}` of type "
                         f"{type(examples)}.")
    info = build_tensor_info(examples)
    if info.dtype != _dtypes.string.as_datatype_enum:
        raise ValueError(f"{kind} input tensors must be of type string. Found tensors of type "
                         f"{info.dtype}")
    return info


@tf_export("saved_model.signature_def_utils.classification_signature_def",
           "saved_model.classification_signature_def")
def classification_signature_def(examples, classes, scores):
    """A classify SignatureDef: serialized tf.Examples (a string tensor) in; class names (a
    string tensor) and/or scores (a float32 tensor) out."""
    inputs = {constants.CLASSIFY_INPUTS: _string_examples(examples, "Classification")}
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    outputs = {}
    if classes is not None:
        info = build_tensor_info(classes)
        if info.dtype != _dtypes.string.as_datatype_enum:
            raise ValueError(f"Classification classes must be of type string Tensor. Found "
                             f"tensors of type {info.dtype}.`")
        outputs[constants.CLASSIFY_OUTPUT_CLASSES] = info
    if scores is not None:
        info = build_tensor_info(scores)
        if info.dtype != _dtypes.float32.as_datatype_enum:
            raise ValueError("Classification scores must be a float Tensor.")
        outputs[constants.CLASSIFY_OUTPUT_SCORES] = info
    return build_signature_def(inputs, outputs, constants.CLASSIFY_METHOD_NAME)


@tf_export("saved_model.signature_def_utils.regression_signature_def",
           "saved_model.regression_signature_def")
def regression_signature_def(examples, predictions):
    """A regress SignatureDef: serialized tf.Examples (a string tensor) in; predictions (a
    float32 tensor) out."""
    inputs = {constants.REGRESS_INPUTS: _string_examples(examples, "Regression")}
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    info = build_tensor_info(predictions)
    if info.dtype != _dtypes.float32.as_datatype_enum:
        raise ValueError(f"Regression output must be a float Tensor. Found tensor of type "
                         f"{info.dtype}.")
    return build_signature_def(inputs, {constants.REGRESS_OUTPUTS: info},
                               constants.REGRESS_METHOD_NAME)


def _valid_predict(signature):
    return (signature.method_name == constants.PREDICT_METHOD_NAME and bool(signature.inputs)
            and bool(signature.outputs))


def _valid_regress(signature):
    string, float32 = _dtypes.string.as_datatype_enum, _dtypes.float32.as_datatype_enum
    return (signature.method_name == constants.REGRESS_METHOD_NAME
            and set(signature.inputs) == {constants.REGRESS_INPUTS}
            and signature.inputs[constants.REGRESS_INPUTS].dtype == string
            and set(signature.outputs) == {constants.REGRESS_OUTPUTS}
            and signature.outputs[constants.REGRESS_OUTPUTS].dtype == float32)


def _valid_classify(signature):
    string, float32 = _dtypes.string.as_datatype_enum, _dtypes.float32.as_datatype_enum
    outputs = signature.outputs
    expected = {constants.CLASSIFY_OUTPUT_CLASSES: string,
                constants.CLASSIFY_OUTPUT_SCORES: float32}
    return (signature.method_name == constants.CLASSIFY_METHOD_NAME
            and set(signature.inputs) == {constants.CLASSIFY_INPUTS}
            and signature.inputs[constants.CLASSIFY_INPUTS].dtype == string
            and bool(outputs) and not set(outputs) - set(expected)
            and all(outputs[key].dtype == dtype for key, dtype in expected.items()
                    if key in outputs))


@tf_export("saved_model.signature_def_utils.is_valid_signature", "saved_model.is_valid_signature")
def is_valid_signature(signature_def):
    """Whether a SignatureDef is a well-formed predict, classify or regress signature (the
    method names TensorFlow Serving accepts, with their keys and dtypes)."""
    if signature_def is None:
        return False
    return (_valid_classify(signature_def) or _valid_regress(signature_def)
            or _valid_predict(signature_def))
