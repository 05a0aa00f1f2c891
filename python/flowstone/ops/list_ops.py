"""Wrappers of the TensorList ops (src/ops/data_structures/list_ops.cc) for TensorArray, map_fn and
the loop gradients. TensorFlow exposes these only as tf.raw_ops, so nothing here is public."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape


def build_element_shape(shape):
    """An element_shape argument: -1 for an unknown rank, else a vector with -1 per unknown dim
    (a tensor is passed through)."""
    if isinstance(shape, _ops.Tensor):
        return shape
    shape = as_shape(shape) if shape is not None else TensorShape(None)
    if shape.rank is None:
        return np.int32(-1)
    return np.array([-1 if d is None else d for d in shape.as_list()], np.int32)


def _apply(op_type, inputs, attrs, name):
    return _ops.apply_op(op_type, inputs, attrs, name=name or op_type)


def empty_tensor_list(element_shape, element_dtype, max_num_elements=None, name=None):
    max_num_elements = -1 if max_num_elements is None else max_num_elements
    return _apply("EmptyTensorList",
                  [build_element_shape(element_shape),
                   _ops.convert_to_tensor(max_num_elements, _dtypes.int32)],
                  {"element_dtype": _dtypes.as_dtype(element_dtype)}, name).outputs[0]


def tensor_list_reserve(element_shape, num_elements, element_dtype, name=None):
    return _apply("TensorListReserve",
                  [build_element_shape(element_shape),
                   _ops.convert_to_tensor(num_elements, _dtypes.int32)],
                  {"element_dtype": _dtypes.as_dtype(element_dtype)}, name).outputs[0]


def tensor_list_from_tensor(tensor, element_shape, name=None):
    return _apply("TensorListFromTensor", [tensor, build_element_shape(element_shape)], {},
                  name).outputs[0]


def tensor_list_stack(input_handle, element_dtype, num_elements=-1, element_shape=None,
                      name=None):
    return _apply("TensorListStack", [input_handle, build_element_shape(element_shape)],
                  {"element_dtype": _dtypes.as_dtype(element_dtype),
                   "num_elements": num_elements}, name).outputs[0]


def tensor_list_get_item(input_handle, index, element_dtype, element_shape=None, name=None):
    return _apply("TensorListGetItem",
                  [input_handle, _ops.convert_to_tensor(index, _dtypes.int32),
                   build_element_shape(element_shape)],
                  {"element_dtype": _dtypes.as_dtype(element_dtype)}, name).outputs[0]


def tensor_list_set_item(input_handle, index, item, resize_if_index_out_of_bounds=False,
                         name=None):
    return _apply("TensorListSetItem",
                  [input_handle, _ops.convert_to_tensor(index, _dtypes.int32), item],
                  {"resize_if_index_out_of_bounds": bool(resize_if_index_out_of_bounds)},
                  name).outputs[0]


def tensor_list_push_back(input_handle, tensor, name=None):
    return _apply("TensorListPushBack", [input_handle, tensor], {}, name).outputs[0]


def tensor_list_pop_back(input_handle, element_dtype, element_shape=None, name=None):
    op = _apply("TensorListPopBack", [input_handle, build_element_shape(element_shape)],
                {"element_dtype": _dtypes.as_dtype(element_dtype)}, name)
    return op.outputs[0], op.outputs[1]


def tensor_list_length(input_handle, name=None):
    return _apply("TensorListLength", [input_handle], {}, name).outputs[0]


def tensor_list_element_shape(input_handle, shape_type=_dtypes.int32, name=None):
    return _apply("TensorListElementShape", [input_handle],
                  {"shape_type": _dtypes.as_dtype(shape_type)}, name).outputs[0]


def tensor_list_gather(input_handle, indices, element_dtype, element_shape=None, name=None):
    return _apply("TensorListGather",
                  [input_handle, _ops.convert_to_tensor(indices, _dtypes.int32),
                   build_element_shape(element_shape)],
                  {"element_dtype": _dtypes.as_dtype(element_dtype)}, name).outputs[0]


def tensor_list_scatter(tensor, indices, element_shape=None, input_handle=None, name=None):
    """Into `input_handle` when given (TensorListScatterIntoExistingList), else a new list."""
    indices = _ops.convert_to_tensor(indices, _dtypes.int32)
    if input_handle is not None:
        return _apply("TensorListScatterIntoExistingList", [input_handle, tensor, indices], {},
                      name).outputs[0]
    return _apply("TensorListScatterV2",
                  [tensor, indices, build_element_shape(element_shape), np.int32(-1)], {},
                  name).outputs[0]


def tensor_list_concat(input_handle, element_dtype, element_shape=None, name=None):
    op = _apply("TensorListConcatV2",
                [input_handle, build_element_shape(element_shape), np.zeros([0], np.int64)],
                {"element_dtype": _dtypes.as_dtype(element_dtype)}, name)
    return op.outputs[0]


def tensor_list_split(tensor, element_shape, lengths, name=None):
    return _apply("TensorListSplit",
                  [tensor, build_element_shape(element_shape),
                   _ops.convert_to_tensor(lengths, _dtypes.int64)], {}, name).outputs[0]
