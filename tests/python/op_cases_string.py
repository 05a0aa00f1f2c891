"""Conformance cases for string tensors (see op_cases.py): the array ops that move string
elements (Identity, Reshape, GatherV2, ConcatV2, Pack, ...) with numpy object arrays of bytes as
inputs and references, as TensorFlow feeds and fetches them."""

import numpy as np

from op_cases import Case


def _strings(*values):
    """An object array of bytes; a tuple of nested lists gives a multi-dimensional one."""
    return np.array(values, dtype=object)


def _i32(x):
    return np.array(x, np.int32)


# Elements of different lengths, an empty one, one past the small-string buffer and one with a
# NUL byte, so that copies of every kind of std::string are checked.
WORDS = _strings(b"alpha", b"", b"a much longer string than sixteen bytes", b"nul\x00byte",
                 "\u00e9t\u00e9".encode("utf-8"), b"z")
GRID = WORDS.reshape(2, 3)


def _select(c, t, e):
    return np.where(c, t, e)


CASES = [
    Case("Identity", [GRID], lambda x: x),
    Case("Reshape", [WORDS, _i32([3, 2])], lambda x, s: x.reshape(3, 2)),
    Case("ExpandDims", [GRID, _i32(1)], lambda x, d: np.expand_dims(x, 1)),
    Case("Squeeze", [WORDS.reshape(1, 6, 1)], lambda x: x.reshape(6)),
    Case("GatherV2", [GRID, _i32([[1, 0], [1, 1]]), _i32(0)],
         lambda p, i, a: np.take(p, i, axis=0)),
    Case("GatherV2", [GRID, _i32([2, 0, 2]), _i32(1)], lambda p, i, a: np.take(p, i, axis=1)),
    Case("ConcatV2", [GRID, GRID[:, :1], _i32(1)],
         lambda a, b, axis: np.concatenate([a, b], axis=1)),
    Case("ConcatV2", [GRID, GRID[::-1], _i32(0)], lambda a, b, axis: np.concatenate([a, b])),
    Case("Pack", [WORDS[:3], WORDS[3:]], lambda a, b: np.stack([a, b], axis=1),
         attrs={"axis": 1}),
    Case("Unpack", [GRID], lambda x: (x[:, 0], x[:, 1], x[:, 2]),
         attrs={"num": 3, "axis": 1}, outputs=3),
    Case("Split", [_i32(1), GRID], lambda d, x: tuple(np.split(x, 3, 1)),
         attrs={"num_split": 3}, outputs=3),
    Case("SplitV", [GRID, _i32([2, 1]), _i32(1)], lambda x, s, d: (x[:, :2], x[:, 2:]),
         attrs={"num_split": 2}, outputs=2),
    Case("Tile", [GRID, _i32([2, 2])], lambda x, m: np.tile(x, (2, 2))),
    Case("Fill", [_i32([2, 3]), np.array(b"fill me, a string longer than the inline buffer",
                                          dtype=object)],
         lambda d, v: np.full((2, 3), v, dtype=object)),
    Case("SelectV2", [np.array([True, False, True]), GRID, _strings(b"else")], _select),
]
