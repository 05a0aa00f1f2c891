"""Conformance cases (see op_cases.py) for the indexing families in src/ops/array/: GatherNd and
the scatters, segment reductions, scans, reversals, partition and stitch, unique values,
searching and counting, Roll, BroadcastTo, SpaceToDepth / DepthToSpace and SpaceToBatchND /
BatchToSpaceND, ExtractImagePatches.
tests/python/test_indexing_ops.py covers the Python API, the variable scatters, error paths and
thread-count determinism."""

import numpy as np

from op_cases import RNG, Case, rand


def _i32(value):
    return np.array(value, np.int32)


def _i64(value):
    return np.array(value, np.int64)


def _gather_nd(params, indices):
    return params[tuple(np.moveaxis(indices, -1, 0))]


def _scatter_into(base, indices, updates, combine):
    out = base.copy()
    rows = indices.reshape(-1, indices.shape[-1])
    slices = updates.reshape((rows.shape[0],) + out.shape[rows.shape[1]:])
    for row, update in zip(rows, slices):
        out[tuple(row)] = combine(out[tuple(row)], update)
    return out


def _scatter_nd(indices, updates, shape):
    return _scatter_into(np.zeros(tuple(shape), updates.dtype), indices, updates, np.add)


def _tensor_scatter(combine):
    return lambda tensor, indices, updates: _scatter_into(tensor, indices, updates, combine)


def _segment(reduce, empty, sorted_ids=True):
    """A reference for the segment ops: reduce(rows) per segment, `empty` for empty ones."""
    def ref(data, ids, num=None):
        n = (int(ids.max()) + 1 if ids.size else 0) if num is None else int(num)
        out = np.full((n,) + data.shape[ids.ndim:], empty, data.dtype)
        rows = data.reshape((-1,) + data.shape[ids.ndim:])
        for s in range(n):
            chosen = rows[ids.reshape(-1) == s]
            if len(chosen):
                out[s] = reduce(chosen)
        return out
    return ref


def _sparse_segment(scale):
    def ref(data, indices, ids):
        n = int(ids.max()) + 1
        out = np.zeros((n,) + data.shape[1:], data.dtype)
        for s in range(n):
            chosen = data[indices[ids == s]]
            if len(chosen):
                out[s] = chosen.sum(0) / scale(len(chosen))
        return out
    return ref


def _scan(fn, identity, exclusive=False, reverse=False):
    def ref(x, axis):
        axis = int(axis)
        y = np.flip(x, axis) if reverse else x
        out = fn(y, axis)
        if exclusive:
            pad = np.full_like(np.take(out, [0], axis), identity)
            out = np.concatenate([pad, np.delete(out, -1, axis)], axis)
        return (np.flip(out, axis) if reverse else out).astype(x.dtype)
    return ref


def _logcumsumexp(x, axis):
    return np.log(np.cumsum(np.exp(x), axis))


def _reverse_sequence(seq_dim, batch_dim):
    def ref(x, lengths):
        out = x.copy()
        for b, n in enumerate(lengths):
            index = [slice(None)] * x.ndim
            index[batch_dim] = b
            index[seq_dim] = slice(0, n)
            # Indexing by the batch removes that dim, which moves seq_dim down when it follows.
            out[tuple(index)] = np.flip(x[tuple(index)], seq_dim - (seq_dim > batch_dim))
        return out
    return ref


def _space_to_depth(x, bs):
    b, h, w, c = x.shape
    blocks = x.reshape(b, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return blocks.reshape(b, h // bs, w // bs, bs * bs * c)


def _depth_to_space(x, bs):
    b, h, w, c = x.shape
    pixels = x.reshape(b, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return pixels.reshape(b, h * bs, w * bs, c // (bs * bs))


def _space_to_batch(x, block, paddings):
    m = len(block)
    padded = np.pad(x, [(0, 0)] + [tuple(p) for p in paddings] + [(0, 0)] * (x.ndim - m - 1))
    shape = [padded.shape[0]]
    for j in range(m):
        shape += [padded.shape[j + 1] // block[j], block[j]]
    blocks = padded.reshape(shape + list(x.shape[m + 1:]))
    # [n, i1, o1, ..., iM, oM, rest] -> [o1, ..., oM, n, i1, ..., iM, rest]
    order = [2 + 2 * j for j in range(m)] + [0] + [1 + 2 * j for j in range(m)]
    order += list(range(2 * m + 1, blocks.ndim))
    moved = blocks.transpose(order)
    return moved.reshape([-1] + [shape[1 + 2 * j] for j in range(m)] + list(x.shape[m + 1:]))


def _batch_to_space(x, block, crops):
    m = len(block)
    batch = x.shape[0] // int(np.prod(block))
    blocks = x.reshape(list(block) + [batch] + list(x.shape[1:]))
    # [o1, ..., oM, n, i1, ..., iM, rest] -> [n, i1, o1, ..., iM, oM, rest]
    order = [m]
    for j in range(m):
        order += [m + 1 + j, j]
    order += list(range(2 * m + 1, blocks.ndim))
    full = blocks.transpose(order).reshape(
        [batch] + [x.shape[j + 1] * block[j] for j in range(m)] + list(x.shape[m + 1:]))
    index = [slice(None)] + [slice(c[0], full.shape[j + 1] - c[1]) for j, c in enumerate(crops)]
    return full[tuple(index)]


def _patches(ksize, stride, rate, padding):
    """A reference for ExtractImagePatches with TensorFlow's SAME/VALID output sizes."""
    def ref(x):
        b, h, w, c = x.shape
        sizes, pads = [], []
        for n, k, s, r in zip((h, w), ksize, stride, rate):
            eff = (k - 1) * r + 1
            out = -(-n // s) if padding == "SAME" else -(-(n - eff + 1) // s)
            sizes.append(out)
            pads.append(max((out - 1) * s + eff - n, 0) // 2 if padding == "SAME" else 0)
        out = np.zeros((b, sizes[0], sizes[1], ksize[0] * ksize[1] * c), x.dtype)
        for i, j, ki, kj in np.ndindex(sizes[0], sizes[1], ksize[0], ksize[1]):
            y = i * stride[0] + ki * rate[0] - pads[0]
            z = j * stride[1] + kj * rate[1] - pads[1]
            if 0 <= y < h and 0 <= z < w:
                k = (ki * ksize[1] + kj) * c
                out[:, i, j, k:k + c] = x[:, y, z]
        return out
    return ref


def _partition(data, partitions, num=3):
    rows = data.reshape((-1,) + data.shape[partitions.ndim:])
    return tuple(rows[partitions.reshape(-1) == p] for p in range(num))


def _stitch(*args):
    n = len(args) // 2
    indices, data = args[:n], args[n:]
    rows = max(int(i.max()) for i in indices) + 1
    out = np.zeros((rows,) + data[0].shape[indices[0].ndim:], data[0].dtype)
    for i, d in zip(indices, data):
        out[i.reshape(-1)] = d.reshape((-1,) + out.shape[1:])
    return out


def _groups(dense=None, sparse=None):
    """{group index tuple: set of values} of a dense set tensor or a (indices, values, shape)
    sparse one."""
    if dense is not None:
        return {key: set(dense[key].tolist()) for key in np.ndindex(dense.shape[:-1])}
    indices, values, _ = sparse
    groups = {}
    for index, value in zip(indices.tolist(), values.tolist()):
        groups.setdefault(tuple(index[:-1]), set()).add(value)
    return groups


def _set_result(a, b, operation, group_dims, dtype):
    """The SparseTensor (indices, values, shape) tf.sets gives for two {group: set} maps."""
    combine = {"a-b": lambda x, y: x - y, "b-a": lambda x, y: y - x,
               "intersection": set.intersection, "union": set.union}[operation]
    indices, values, widest = [], [], 0
    for key in sorted(set(a) | set(b)):
        result = sorted(combine(a.get(key, set()), b.get(key, set())))
        widest = max(widest, len(result))
        for j, value in enumerate(result):
            indices.append(list(key) + [j])
            values.append(value)
    rank = len(group_dims) + 1
    return (np.array(indices, np.int64).reshape(-1, rank), np.array(values, dtype),
            np.array(list(group_dims) + [widest], np.int64))


def _dense_sets(operation):
    return lambda x, y: _set_result(_groups(x), _groups(y), operation, x.shape[:-1],
                                    x.dtype)


def _dense_sparse_sets(operation):
    return lambda x, i, v, s: _set_result(_groups(x), _groups(sparse=(i, v, s)), operation,
                                          x.shape[:-1], x.dtype)


def _sparse_sets(operation):
    return lambda i1, v1, s1, i2, v2, s2: _set_result(
        _groups(sparse=(i1, v1, s1)), _groups(sparse=(i2, v2, s2)), operation, s1[:-1],
        v1.dtype)


def _unique(x, counts=False):
    y, first, inverse, count = np.unique(x, return_index=True, return_inverse=True,
                                         return_counts=True)
    order = np.argsort(first)  # distinct values in order of first appearance
    rank = np.argsort(order)
    result = (y[order], rank[inverse].astype(np.int32))
    return result + (count[order].astype(np.int32),) if counts else result


def _bound(side):
    return lambda s, v: np.stack([np.searchsorted(r, q, side) for r, q in zip(s, v)]
                                 ).astype(np.int32)


def _histogram(values, value_range, nbins):
    lo, hi = value_range
    bins = np.clip(np.floor((values - lo) / (hi - lo) * nbins), 0, nbins - 1).astype(int)
    return np.bincount(bins, minlength=int(nbins)).astype(np.int32)


_SEGMENT_DATA = rand(5, 2)
_WITH_ZEROS = np.array([[2.0, 0.0], [0.5, 0.0], [0.0, 3.0], [1.5, -2.0]])

CASES = [
    # Gathering and scattering by index vectors.
    Case("GatherNd", [rand(4, 3), _i32([[1], [3], [1]])], _gather_nd, grad=[0]),
    Case("GatherNd", [rand(3, 4, 2), _i64([[0, 1], [2, 3]])], _gather_nd, grad=[0]),
    Case("GatherNd", [_i64([[1, 2, 3], [4, 5, 6]]), _i32([[[0, 2]], [[1, 0]]])], _gather_nd),
    Case("GatherNd", [rand(2, 3), np.zeros((2, 0), np.int32)],
         lambda p, i: np.stack([p, p])),
    Case("GatherNd", [np.array([[b"a", b"bb"], [b"ccc", b""]], dtype=object),
                      _i32([[1, 0], [0, 1], [1, 0]])], _gather_nd),
    Case("ScatterNd", [_i32([[1], [3], [1]]), rand(3, 2), _i32([5, 2])], _scatter_nd, grad=[1]),
    Case("ScatterNd", [_i64([[0, 1], [2, 0]]), _i32([7, 8]), _i64([3, 2])], _scatter_nd),
    Case("TensorScatterUpdate", [rand(4, 2), _i32([[2], [0]]), rand(2, 2)],
         _tensor_scatter(lambda old, new: new), grad=[0, 2]),
    Case("TensorScatterUpdate", [np.array([True, False, True]), _i64([[1]]), np.array([True])],
         _tensor_scatter(lambda old, new: new)),
    Case("TensorScatterAdd", [rand(4, 2), _i32([[1], [3], [1]]), rand(3, 2)],
         _tensor_scatter(np.add), grad=[0, 2]),
    Case("TensorScatterSub", [rand(3, 2, 2), _i64([[1, 0], [2, 1]]), rand(2, 2)],
         _tensor_scatter(np.subtract), grad=[0, 2]),
    Case("TensorScatterMax", [rand(5), _i32([[1], [3], [4]]), rand(3)],
         _tensor_scatter(np.maximum), grad=[0, 2]),
    Case("TensorScatterMin", [rand(5), _i32([[1], [3], [4]]), rand(3)],
         _tensor_scatter(np.minimum), grad=[0, 2]),
    Case("TensorScatterMax", [_i32([1, 5, 3]), _i32([[0], [2], [0]]), _i32([4, 2, 6])],
         _tensor_scatter(np.maximum)),
    # Sorted segments (segment 1 is empty).
    Case("SegmentSum", [_SEGMENT_DATA, _i32([0, 0, 2, 3, 3])], _segment(lambda r: r.sum(0), 0),
         grad=[0]),
    Case("SegmentSum", [_i32([[1, 2], [3, 4], [5, 6]]), _i64([1, 1, 2])],
         _segment(lambda r: r.sum(0), 0)),
    Case("SegmentMean", [_SEGMENT_DATA, _i32([0, 0, 2, 3, 3])],
         _segment(lambda r: r.mean(0), 0), grad=[0]),
    Case("SegmentMax", [_SEGMENT_DATA, _i32([0, 0, 2, 3, 3])], _segment(lambda r: r.max(0), 0),
         grad=[0]),
    Case("SegmentMin", [_SEGMENT_DATA, _i64([0, 0, 2, 3, 3])], _segment(lambda r: r.min(0), 0),
         grad=[0]),
    Case("SegmentProd", [_SEGMENT_DATA, _i32([0, 0, 2, 3, 3])],
         _segment(lambda r: r.prod(0), 1), grad=[0]),
    Case("SegmentProd", [_WITH_ZEROS, _i32([0, 0, 1, 1])], _segment(lambda r: r.prod(0), 1),
         grad=[0]),
    # Unsorted segments: a negative id drops its row; empty segments get the identity.
    Case("UnsortedSegmentMax", [_SEGMENT_DATA, _i32([2, -1, 0, 1, 0]), _i32(3)],
         _segment(lambda r: r.max(0), 0), grad=[0]),
    Case("UnsortedSegmentMax", [_SEGMENT_DATA, _i32([2, -1, 0, 2, 0]), _i32(4)],
         _segment(lambda r: r.max(0), np.finfo(np.float64).min)),
    Case("UnsortedSegmentMin", [rand(2, 3, 2), _i64([[0, 1, 1], [0, 2, 1]]), _i32(3)],
         _segment(lambda r: r.min(0), 0), grad=[0]),
    Case("UnsortedSegmentMin", [_i32([4, 2, 9]), _i32([1, 1, 1]), _i64(3)],
         _segment(lambda r: r.min(0), np.iinfo(np.int32).max)),
    Case("UnsortedSegmentProd", [_SEGMENT_DATA, _i32([2, -1, 0, 2, 0]), _i32(4)],
         _segment(lambda r: r.prod(0), 1), grad=[0]),
    Case("UnsortedSegmentProd", [_WITH_ZEROS, _i32([1, 1, 0, 0]), _i32(3)],
         _segment(lambda r: r.prod(0), 1), grad=[0]),
    # Sparse segments: rows chosen by indices (segment 2 is empty).
    Case("SparseSegmentSum", [rand(4, 3), _i32([0, 2, 2, 3]), _i32([0, 0, 1, 3])],
         _sparse_segment(lambda n: 1), grad=[0]),
    Case("SparseSegmentMean", [rand(4, 3), _i64([0, 2, 2, 3]), _i32([0, 0, 1, 3])],
         _sparse_segment(lambda n: n), grad=[0]),
    Case("SparseSegmentSqrtN", [rand(4, 3), _i32([0, 2, 2, 3]), _i64([0, 0, 1, 3])],
         _sparse_segment(np.sqrt), grad=[0]),
    # Scans.
    Case("Cumsum", [rand(3, 4), _i32(1)], _scan(np.cumsum, 0), grad=[0]),
    Case("Cumsum", [rand(3, 4), _i32(0)], _scan(np.cumsum, 0, exclusive=True, reverse=True),
         attrs={"exclusive": True, "reverse": True}, grad=[0]),
    Case("Cumsum", [_i64([[1, 2, 3], [4, 5, 6]]), _i64(-1)], _scan(np.cumsum, 0, reverse=True),
         attrs={"reverse": True}),
    Case("Cumprod", [rand(2, 4), _i32(-1)], _scan(np.cumprod, 1), grad=[0]),
    Case("Cumprod", [rand(4, 2), _i32(0)], _scan(np.cumprod, 1, exclusive=True),
         attrs={"exclusive": True}, grad=[0]),
    Case("Cumprod", [_i32([2, 3, 4]), _i32(0)], _scan(np.cumprod, 1, reverse=True),
         attrs={"reverse": True}),
    Case("CumulativeLogsumexp", [rand(3, 4), _i32(1)], _scan(_logcumsumexp, -np.inf),
         grad=[0]),
    Case("CumulativeLogsumexp", [rand(5), _i32(0)], _scan(_logcumsumexp, -np.inf, reverse=True),
         attrs={"reverse": True}, grad=[0]),
    Case("CumulativeLogsumexp", [rand(4).astype(np.float32), _i32(0)],
         _scan(_logcumsumexp, -np.inf, exclusive=True), attrs={"exclusive": True}),
    # Reversals.
    Case("ReverseV2", [rand(2, 3, 4), _i32([0, 2])], lambda x, a: np.flip(x, (0, 2)), grad=[0]),
    Case("ReverseV2", [np.array([[True, False, False]]), _i64([-1])], lambda x, a: x[:, ::-1]),
    Case("ReverseV2", [rand(3), np.zeros(0, np.int32)], lambda x, a: x),
    Case("ReverseSequence", [rand(3, 5, 2), _i64([2, 5, 0])], _reverse_sequence(1, 0),
         attrs={"seq_dim": 1, "batch_dim": 0}, grad=[0]),
    Case("ReverseSequence", [rand(4, 2, 3), _i32([1, 4, 3])], _reverse_sequence(0, 2),
         attrs={"seq_dim": 0, "batch_dim": 2}, grad=[0]),
    Case("Roll", [rand(3, 4), _i32([1, -5, 2]), _i32([0, 1, 1])],
         lambda x, s, a: np.roll(x, (1, -3), (0, 1)), grad=[0]),
    Case("Roll", [_i64([1, 2, 3, 4]), _i64(6), _i64(-1)], lambda x, s, a: np.roll(x, 6)),
    Case("BroadcastTo", [rand(3, 1), _i32([2, 3, 4])], lambda x, s: np.broadcast_to(x, s),
         grad=[0]),
    Case("BroadcastTo", [np.array([True, False]), _i64([2, 2])],
         lambda x, s: np.broadcast_to(x, s)),
    Case("SpaceToDepth", [rand(2, 4, 6, 3)], lambda x: _space_to_depth(x, 2),
         attrs={"block_size": 2}, grad=[0]),
    Case("SpaceToDepth", [_i32(np.arange(36).reshape(1, 3, 3, 4))],
         lambda x: _space_to_depth(x, 3), attrs={"block_size": 3}),
    Case("DepthToSpace", [rand(2, 2, 3, 8)], lambda x: _depth_to_space(x, 2),
         attrs={"block_size": 2}, grad=[0]),
    Case("SpaceToBatchND", [rand(2, 3, 4, 2), _i32([2, 2]), _i32([[1, 0], [0, 2]])],
         _space_to_batch, grad=[0]),
    Case("SpaceToBatchND", [_i64(np.arange(12).reshape(1, 6, 2)), _i64([3]), _i64([[0, 0]])],
         _space_to_batch),
    Case("BatchToSpaceND", [rand(8, 2, 3, 2), _i32([2, 2]), _i32([[1, 0], [0, 2]])],
         _batch_to_space, grad=[0]),
    Case("ExtractImagePatches", [rand(2, 5, 4, 3)], _patches((2, 2), (2, 1), (1, 1), "SAME"),
         attrs={"ksizes": [1, 2, 2, 1], "strides": [1, 2, 1, 1], "rates": [1, 1, 1, 1],
                "padding": "SAME"}, grad=[0]),
    Case("ExtractImagePatches", [rand(1, 6, 6, 2)], _patches((2, 3), (2, 2), (2, 1), "VALID"),
         attrs={"ksizes": [1, 2, 3, 1], "strides": [1, 2, 2, 1], "rates": [1, 2, 1, 1],
                "padding": "VALID"}, grad=[0]),
    # Partitioning and stitching.
    Case("DynamicPartition", [rand(5, 2), _i32([1, 0, 1, 2, 0])], _partition,
         attrs={"num_partitions": 3}, outputs=3, grad=[0]),
    Case("DynamicPartition", [_i64([[1, 2], [3, 4]]), _i32([[2, 0], [0, 0]])], _partition,
         attrs={"num_partitions": 3}, outputs=3),
    Case("DynamicStitch", [_i32([0, 2]), _i32([1, 3]), rand(2, 2), rand(2, 2)], _stitch,
         attrs={"N": 2}, grad=[2, 3]),
    Case("DynamicStitch", [_i32([[0, 1]]), _i32([1]), _i64([[5, 6]]), _i64([7])], _stitch,
         attrs={"N": 2}),
    Case("ParallelDynamicStitch", [_i32([3, 0]), _i32([2, 1]), rand(2), rand(2)], _stitch,
         attrs={"N": 2}, grad=[2, 3]),
    # Unique values and set difference.
    Case("Unique", [_i32([3, 1, 3, 2, 1])], _unique, outputs=2),
    Case("Unique", [np.array([0.5, -1.0, 0.5, 2.0])], _unique, outputs=2),
    Case("UniqueWithCounts", [_i64([7, 7, 1, 7, 2])], lambda x: _unique(x, counts=True),
         outputs=3),
    Case("ListDiff", [_i32([1, 2, 3, 4, 5, 6]), _i32([1, 3, 5, 9])],
         lambda x, y: (_i32([2, 4, 6]), _i32([1, 3, 5])), outputs=2),
    # Sets in the last dimension (tf.sets).
    Case("DenseToDenseSetOperation", [_i32([[1, 2, 3], [4, 5, 4]]), _i32([[2, 3, 7], [4, 9, 9]])],
         _dense_sets("intersection"), attrs={"set_operation": "intersection"}, outputs=3),
    Case("DenseToDenseSetOperation", [_i64([[[5, 1], [2, 2]]]), _i64([[[1, 6], [2, 3]]])],
         _dense_sets("union"), attrs={"set_operation": "union"}, outputs=3),
    Case("DenseToDenseSetOperation",
         [np.array([[b"a", b"b"], [b"c", b"c"]], dtype=object),
          np.array([[b"b", b"x"], [b"c", b"d"]], dtype=object)],
         _dense_sets("a-b"), attrs={"set_operation": "a-b"}, outputs=3),
    Case("DenseToSparseSetOperation",
         [np.array([[1, 2], [3, 3]], np.uint8), _i64([[0, 0], [0, 3], [1, 1]]),
          np.array([7, 1, 3], np.uint8), _i64([2, 4])],
         _dense_sparse_sets("b-a"), attrs={"set_operation": "b-a"}, outputs=3),
    Case("SparseToSparseSetOperation",
         [_i64([[0, 0], [0, 1], [2, 0]]), _i32([4, 2, 9]), _i64([3, 2]),
          _i64([[0, 0], [1, 0]]), _i32([2, 8]), _i64([3, 5])],
         _sparse_sets("union"), attrs={"set_operation": "union"}, outputs=3),
    Case("SetSize", [_i64([[0, 0, 0], [0, 0, 1], [1, 1, 0], [1, 1, 2]]), _i64([3, 3, 5, 6]),
                     _i64([2, 2, 4])],
         lambda i, v, s: np.array([[1, 0], [0, 2]], np.int32)),  # repeats count once
    # Searching and counting.
    Case("LowerBound", [np.array([[1.0, 3.0, 3.0, 5.0], [0.0, 0.0, 1.0, 2.0]]),
                        np.array([[3.0, 6.0, 0.0], [0.0, 1.5, -3.0]])], _bound("left")),
    Case("UpperBound", [_i32([[1, 3, 3, 5], [0, 0, 1, 2]]), _i32([[3, 6, 0], [0, 1, 2]])],
         _bound("right")),
    Case("Bincount", [_i32([1, 1, 3, 0, 7]), _i32(5), np.zeros(0, np.float32)],
         lambda a, s, w: np.bincount(a[a < s], minlength=5).astype(np.float32)),
    Case("Bincount", [_i32([2, 0, 2]), _i32(4), np.array([0.5, 1.0, 2.0])],
         lambda a, s, w: np.bincount(a, w, minlength=4)),
    Case("HistogramFixedWidth", [RNG.uniform(-1, 1, size=20), np.array([-0.5, 0.5]), _i32(4)],
         _histogram),
    Case("HistogramFixedWidth", [_i32([1, 2, 3, 9, -4]), _i32([0, 10]), _i32(3)], _histogram),
    Case("UnravelIndex", [_i32([5, 1, 0]), _i32([2, 3])],
         lambda i, d: np.stack(np.unravel_index(i, d)).astype(np.int32)),
    Case("UnravelIndex", [_i64(7), _i64([2, 2, 3])],
         lambda i, d: np.array(np.unravel_index(int(i), d), np.int64)),
]

# The variable scatters update session state: tests/python/test_indexing_ops.py runs them
# against numpy on variables.
EXEMPT = {
    op: "tests/python/test_indexing_ops.py (variable scatters against numpy)"
    for op in ["ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub",
               "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMax",
               "ResourceScatterMin", "ResourceScatterNdUpdate", "ResourceScatterNdAdd",
               "ResourceScatterNdSub"]
}
EXEMPT["ResourceStridedSliceAssign"] = ("tests/python/test_variable_slice_assign.py (v[...].assign "
                                        "against numpy, graph and eager, strings, errors)")
