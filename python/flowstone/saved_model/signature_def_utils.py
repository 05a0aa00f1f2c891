"""Signatures: the named inputs and outputs of a SavedModel's graph, as TensorInfo protos."""

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
