"""Conformance cases for the array op family (see op_cases.py): shapes, reshaping, joining and
splitting, slicing and gathering, filling, tiling and padding. tests/python/test_array_ops.py
covers the Python API, static shapes and error paths."""

import numpy as np

from flowstone import dtypes
from op_cases import Case, rand


def _i32(value):
    return np.array(value, np.int32)


def _i64(value):
    return np.array(value, np.int64)


def _segment_sum(data, ids, num):
    out = np.zeros((int(num),) + data.shape[ids.ndim:], data.dtype)
    for k in np.ndindex(ids.shape):
        if ids[k] >= 0:
            out[ids[k]] += data[k]
    return out


def _mirror_pad_grad(grad, paddings, mode):
    """Sums each element of a padded gradient into the element np.pad copied it from."""
    shape = tuple(n - b - a for n, (b, a) in zip(grad.shape, paddings))
    source = np.pad(np.arange(int(np.prod(shape))).reshape(shape), paddings, mode)
    return np.bincount(source.ravel(), grad.ravel(), int(np.prod(shape))).reshape(shape)


def _strided_slice_grad(shape, dy, index):
    out = np.zeros(shape, dy.dtype)
    out[index] = dy
    return out


CASES = [
    # Shapes.
    Case("Shape", [rand(2, 3)], lambda x: _i32(x.shape)),
    Case("Shape", [rand(4, 0, 1)], lambda x: _i64(x.shape), attrs={"out_type": dtypes.int64}),
    Case("Size", [rand(2, 3)], lambda x: _i32(x.size)),
    Case("Rank", [rand(2, 3, 4)], lambda x: _i32(x.ndim)),
    Case("Reshape", [rand(2, 3), _i32([3, -1])], lambda x, s: x.reshape(s), grad=[0]),
    Case("Reshape", [rand(2, 2), _i64([4])], lambda x, s: x.reshape(s), grad=[0]),
    Case("ExpandDims", [rand(2, 3), _i32(-1)], lambda x, d: np.expand_dims(x, int(d)),
         grad=[0]),
    Case("Squeeze", [rand(2, 1, 3, 1)], lambda x: np.squeeze(x, 1), attrs={"squeeze_dims": [1]},
         grad=[0]),
    Case("Squeeze", [rand(1, 3, 1)], np.squeeze, grad=[0]),
    Case("Transpose", [rand(2, 3, 4), _i32([2, 0, 1])], lambda x, p: np.transpose(x, p),
         grad=[0]),
    Case("Transpose", [_i64([[1, 2, 3], [4, 5, 6]]), _i64([1, 0])], lambda x, p: x.T),
    Case("InvertPermutation", [_i32([2, 0, 3, 1])], lambda p: np.argsort(p).astype(np.int32)),
    Case("InvertPermutation", [_i64([0])], lambda p: _i64([0])),
    # Joining and splitting.
    Case("ConcatV2", [rand(2, 3), rand(2, 1), _i32(-1)],
         lambda a, b, axis: np.concatenate([a, b], int(axis)), grad=[0, 1]),
    Case("ConcatV2", [rand(1, 2), rand(3, 2), rand(0, 2), _i64(0)],
         lambda a, b, c, axis: np.concatenate([a, b, c], int(axis)), grad=[0, 1, 2]),
    Case("ConcatOffset", [_i32(1), _i32([2, 3, 5]), _i32([2, 0, 5]), _i32([2, 4, 5])],
         lambda d, *shapes: (_i32([0, 0, 0]), _i32([0, 3, 0]), _i32([0, 3, 0])), outputs=3),
    Case("Pack", [rand(2, 3), rand(2, 3), rand(2, 3)], lambda *v: np.stack(v, 1),
         attrs={"axis": 1}, grad=[0, 1, 2]),
    Case("Unpack", [rand(3, 2)], lambda x: (x[:, 0], x[:, 1]), attrs={"num": 2, "axis": -1},
         outputs=2, grad=[0]),
    Case("Split", [_i32(1), rand(2, 4)], lambda d, x: tuple(np.split(x, 2, 1)),
         attrs={"num_split": 2}, outputs=2, grad=[1]),
    Case("SplitV", [rand(5, 2), _i64([2, -1, 0]), _i32(0)],
         lambda x, s, d: (x[:2], x[2:], x[5:]), attrs={"num_split": 3}, outputs=3),
    # (The gradient check weights output 0 by an array shaped like all outputs: pieces of one
    # shape.)
    Case("SplitV", [rand(4, 3), _i64([-1, 2]), _i32(0)], lambda x, s, d: (x[:2], x[2:]),
         attrs={"num_split": 2}, outputs=2, grad=[0]),
    Case("Tile", [rand(2, 3), _i32([2, 1])], lambda x, m: np.tile(x, m), grad=[0]),
    Case("Tile", [rand(1, 2, 2), _i64([3, 2, 1])], lambda x, m: np.tile(x, m), grad=[0]),
    # Slicing and gathering.
    Case("Slice", [rand(3, 4), _i32([1, 0]), _i32([2, -1])], lambda x, b, s: x[1:3, 0:],
         grad=[0]),
    Case("StridedSlice", [rand(3, 4, 5), _i32([2, 0, 1]), _i32([0, 1, 4]), _i32([-1, 1, 2])],
         lambda x, b, e, s: x[2:0:-1, 0, 1:4:2], attrs={"shrink_axis_mask": 2}, grad=[0]),
    Case("StridedSlice", [rand(3, 4), _i64([0, 0, 1]), _i64([0, 0, 0]), _i64([1, 1, -1])],
         lambda x, b, e, s: x[..., None, 1::-1], attrs={"ellipsis_mask": 1, "new_axis_mask": 2,
                                                       "end_mask": 4}, grad=[0]),
    Case("StridedSliceGrad", [_i32([3, 4, 5]), _i32([2, 0, 1]), _i32([0, 1, 4]), _i32([-1, 1, 2]),
                              rand(2, 2)],
         lambda shape, b, e, s, dy: _strided_slice_grad((3, 4, 5), dy,
                                                        np.s_[2:0:-1, 0, 1:4:2]),
         attrs={"shrink_axis_mask": 2}, grad=[4]),
    Case("StridedSliceGrad", [_i64([3, 4]), _i64([0, 0, 1]), _i64([0, 0, 0]), _i64([1, 1, -1]),
                              rand(3, 1, 2)],
         lambda shape, b, e, s, dy: _strided_slice_grad((3, 4), dy[:, 0], np.s_[..., 1::-1]),
         attrs={"ellipsis_mask": 1, "new_axis_mask": 2, "end_mask": 4}, grad=[4]),
    Case("GatherV2", [rand(5, 3), _i32([[4, 0], [2, 2]]), _i32(0)],
         lambda p, i, a: np.take(p, i, axis=0), grad=[0]),
    Case("GatherV2", [rand(3, 4, 2), _i64([1, 3, 1]), _i32(-2)],
         lambda p, i, a: np.take(p, i, axis=1), grad=[0]),
    Case("GatherV2", [rand(2, 4, 3), _i64([[3, 0], [1, 1]]), _i32(1)],
         lambda p, i, a: np.stack([p[0][i[0]], p[1][i[1]]]), attrs={"batch_dims": 1}, grad=[0]),
    Case("GatherV2", [rand(2, 3, 4), _i32([[0, 3, 3], [1, 2, 0]]), _i64(2)],
         lambda p, i, a: np.stack([p[b][:, i[b]] for b in range(2)]), attrs={"batch_dims": -1},
         grad=[0]),
    Case("UnsortedSegmentSum", [rand(4, 3), _i32([2, -1, 0, 2]), _i32(4)], _segment_sum,
         grad=[0]),
    Case("UnsortedSegmentSum", [rand(2, 3, 2), _i64([[0, 1, 1], [0, 0, 2]]), _i64(3)],
         _segment_sum, grad=[0]),
    # Making tensors.
    Case("Fill", [_i32([2, 3]), np.array(1.5)], lambda d, v: np.full((2, 3), 1.5), grad=[1]),
    Case("ZerosLike", [rand(2, 3)], np.zeros_like),
    Case("OnesLike", [_i64([[1, 2]])], np.ones_like),
    Case("Range", [_i32(1), _i32(10), _i32(3)], lambda a, b, c: np.arange(a, b, c, np.int32)),
    Case("Range", [np.array(1.0), np.array(-1.0), np.array(-0.5)],
         lambda a, b, c: np.arange(a, b, c)),
    Case("OneHot", [_i64([0, 2, -1]), _i32(3), np.array(1.0), np.array(0.0)],
         lambda i, d, on, off: np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], np.float64)),
    # Padding.
    Case("Pad", [rand(2, 3), _i32([[1, 0], [2, 1]])], lambda x, p: np.pad(x, p), grad=[0]),
    Case("PadV2", [rand(2, 3), _i64([[0, 1], [1, 1]]), np.array(-1.0)],
         lambda x, p, c: np.pad(x, p, constant_values=c), grad=[0, 2]),
    Case("MirrorPad", [rand(3, 3), _i32([[2, 1], [1, 2]])], lambda x, p: np.pad(x, p, "reflect"),
         attrs={"mode": "REFLECT"}, grad=[0]),
    Case("MirrorPad", [rand(2, 3), _i32([[2, 1], [0, 3]])],
         lambda x, p: np.pad(x, p, "symmetric"), attrs={"mode": "SYMMETRIC"}, grad=[0]),
    Case("MirrorPadGrad", [rand(6, 6), _i32([[2, 1], [1, 2]])],
         lambda g, p: _mirror_pad_grad(g, p, "reflect"), attrs={"mode": "REFLECT"}, grad=[0]),
    Case("MirrorPadGrad", [rand(5, 6), _i64([[2, 1], [0, 3]])],
         lambda g, p: _mirror_pad_grad(g, p, "symmetric"), attrs={"mode": "SYMMETRIC"},
         grad=[0]),
]

# No gradient defined for these in TensorFlow; the family marks them .NotDifferentiable().
NOT_DIFFERENTIABLE = {"Shape", "Size", "Rank", "ZerosLike", "OnesLike", "Range", "OneHot",
                      "InvertPermutation", "ConcatOffset"}

# Differentiable ops of this family whose gradients are still to be written.
GRADIENT_PENDING = set()
