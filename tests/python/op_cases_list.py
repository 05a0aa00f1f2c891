"""Conformance cases for the TensorList ops (see op_cases.py). A list is a variant, which can be
neither fed nor fetched, so each case builds a small graph around its op (`build`) from fed
tensors to a fetched one, and gradients flow through the list ops back to the fed tensors.
tests/python/test_tensor_array.py covers tf.TensorArray, value semantics and the error paths."""

import numpy as np

from flowstone import dtypes
from flowstone.ops import array_ops, list_ops, math_ops
from flowstone.ops.basic_ops import identity
from op_cases import Case, rand

F64 = dtypes.float64


def _stack(handle, shape, dtype=F64):
    return list_ops.tensor_list_stack(handle, dtype, element_shape=shape).op


def _rows(x):
    return list_ops.tensor_list_from_tensor(x, x.shape[1:])


def _set_row(x, i, y):
    out = x.copy()
    out[i] = y
    return out


def _pop_last(x):
    _, last = list_ops.tensor_list_pop_back(_rows(x), F64, element_shape=[3])
    # PopBack's first output is a list, which cannot be fetched.
    return identity(last).op


def _get_two(x):
    handle = _rows(x)
    first = list_ops.tensor_list_get_item(handle, 0, F64, element_shape=[3])
    second = list_ops.tensor_list_get_item(handle, 2, F64, element_shape=[3])
    # Two reads of one list: their list gradients add up through AddN over variants.
    return math_ops.multiply(first, second).op


CASES = [
    Case("TensorListFromTensor", [rand(4, 3)], lambda x: x, grad=[0],
         build=lambda x: _stack(_rows(x), [3])),
    Case("TensorListStack", [rand(3)], lambda x: np.stack([x, np.zeros(3)]), grad=[0],
         build=lambda x: _stack(list_ops.tensor_list_set_item(
             list_ops.tensor_list_reserve([3], 2, F64), 0, x), [3])),
    Case("EmptyTensorList", [rand(2, 2), rand(2, 2)], lambda a, b: np.stack([a, b]),
         grad=[0, 1],
         build=lambda a, b: _stack(list_ops.tensor_list_push_back(
             list_ops.tensor_list_push_back(list_ops.empty_tensor_list([2, 2], F64), a), b),
             [2, 2])),
    Case("TensorListPushBack", [rand(3, 2), rand(2)], lambda x, y: np.concatenate([x, y[None]]),
         grad=[0, 1],
         build=lambda x, y: _stack(list_ops.tensor_list_push_back(_rows(x), y), [2])),
    Case("TensorListPopBack", [rand(4, 3)], lambda x: x[-1], grad=[0], build=_pop_last),
    Case("TensorListReserve", [rand(2)], lambda x: np.stack([np.zeros(2), x, np.zeros(2)]),
         grad=[0],
         build=lambda x: _stack(list_ops.tensor_list_set_item(
             list_ops.tensor_list_reserve([2], 3, F64), 1, x), [2])),
    Case("TensorListGetItem", [rand(4, 3)], lambda x: x[2], grad=[0],
         build=lambda x: list_ops.tensor_list_get_item(_rows(x), 2, F64,
                                                       element_shape=[3]).op),
    Case("TensorListGetItem", [rand(3, 3)], lambda x: x[0] * x[2], grad=[0], build=_get_two),
    Case("TensorListSetItem", [rand(3, 2), rand(2)], lambda x, y: _set_row(x, 1, y),
         grad=[0, 1],
         build=lambda x, y: _stack(list_ops.tensor_list_set_item(_rows(x), 1, y), [2])),
    Case("TensorListLength", [rand(5, 2)], lambda x: np.int32(5),
         build=lambda x: list_ops.tensor_list_length(_rows(x)).op),
    Case("TensorListElementShape", [rand(5, 2, 3)], lambda x: np.array([2, 3], np.int32),
         build=lambda x: list_ops.tensor_list_element_shape(_rows(x)).op),
    Case("TensorListElementShape", [rand(2)], lambda x: np.int64(-1),
         build=lambda x: list_ops.tensor_list_element_shape(
             list_ops.empty_tensor_list(None, F64), dtypes.int64).op),
    Case("TensorListGather", [rand(4, 2)], lambda x: x[[3, 0, 1]], grad=[0],
         build=lambda x: list_ops.tensor_list_gather(_rows(x), [3, 0, 1], F64,
                                                     element_shape=[2]).op),
    Case("TensorListScatterV2", [rand(2, 3)], lambda x: np.stack([x[1], np.zeros(3), x[0]]),
         grad=[0],
         build=lambda x: _stack(list_ops.tensor_list_scatter(x, [2, 0], element_shape=[3]),
                                [3])),
    Case("TensorListScatterIntoExistingList", [rand(3, 2), rand(2, 2)],
         lambda x, y: np.stack([y[1], x[1], y[0]]), grad=[0, 1],
         build=lambda x, y: _stack(list_ops.tensor_list_scatter(y, [2, 0],
                                                                input_handle=_rows(x)), [2])),
    Case("TensorListConcatV2", [rand(5, 2)], lambda x: x, grad=[0],
         build=lambda x: list_ops.tensor_list_concat(
             list_ops.tensor_list_split(x, [None, 2], np.array([2, 0, 3], np.int64)), F64,
             element_shape=[None, 2]).op),
    Case("TensorListSplit", [rand(5, 2)], lambda x: x[2:], grad=[0],
         build=lambda x: list_ops.tensor_list_get_item(
             list_ops.tensor_list_split(x, [None, 2], np.array([2, 3], np.int64)), 1, F64,
             element_shape=[3, 2]).op),
    Case("ZerosLike", [rand(3, 2)], lambda x: np.zeros((3, 2)),
         build=lambda x: _stack(array_ops.zeros_like(_rows(x)), [2])),
]
