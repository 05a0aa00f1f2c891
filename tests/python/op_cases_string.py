"""Conformance cases for string tensors (see op_cases.py): the array ops that move string
elements (Identity, Reshape, GatherV2, ConcatV2, Pack, ...) and the string ops (StringJoin,
Substr, RegexReplace, ...), with numpy object arrays of bytes as inputs and references, as
TensorFlow feeds and fetches them. The file ops are tested with files of their own."""

import base64
import re

import numpy as np

import flowstone as tf
from flowstone import dtypes
from op_cases import Case


def _strings(*values):
    """An object array of bytes; a tuple of nested lists gives a multi-dimensional one."""
    return np.array(values, dtype=object)


def _scalar(value):
    """A 0-d object array holding one bytes value."""
    return np.array(value, dtype=object)


def _i32(x):
    return np.array(x, np.int32)


# Elements of different lengths, an empty one, one past the small-string buffer and one with a
# NUL byte, so that copies of every kind of std::string are checked.
WORDS = _strings(b"alpha", b"", b"a much longer string than sixteen bytes", b"nul\x00byte",
                 "\u00e9t\u00e9".encode("utf-8"), b"z")
GRID = WORDS.reshape(2, 3)


def _select(c, t, e):
    return np.where(c, t, e)


def _sparse_tokens(rows):
    """The (indices, values, shape) of a SparseTensor holding each row's tokens."""
    indices = [[r, j] for r, row in enumerate(rows) for j in range(len(row))]
    values = [token for row in rows for token in row]
    return (np.array(indices, np.int64).reshape(-1, 2), np.array(values, dtype=object),
            np.array([len(rows), max((len(r) for r in rows), default=0)], np.int64))


CASES = [
    # Joining by segment (results checked with TensorFlow 2.21).
    Case("UnsortedSegmentJoin", [_strings(b"a", b"b", b"c", b"d"), np.array([1, 0, 1, 3], np.int32),
                                 np.array(4, np.int32)],
         lambda s, i, n: _strings(b"b", b"a-c", b"", b"d"), attrs={"separator": "-"}),
    Case("UnsortedSegmentJoin", [_strings([b"a", b"b"], [b"c", b"d"], [b"e", b"f"]),
                                 np.array([1, 0, 1], np.int64), np.array(2, np.int64)],
         lambda s, i, n: _strings([b"c", b"d"], [b"a:e", b"b:f"]), attrs={"separator": ":"}),
    # Splitting (results checked with TensorFlow 2.21's raw ops).
    Case("StringSplit", [_strings(b"a b  c", b"", b"x,y"), _scalar(b" ,")],
         lambda s, d: _sparse_tokens([[b"a", b"b", b"c"], [], [b"x", b"y"]]), outputs=3),
    Case("StringSplit", [_strings(b"a b  c", b"", b"x,y"), _scalar(b" ,")],
         lambda s, d: _sparse_tokens([[b"a", b"b", b"", b"c"], [], [b"x", b"y"]]),
         attrs={"skip_empty": False}, outputs=3),
    Case("StringSplit", [_strings(b"abc", "é".encode()), _scalar(b"")],
         lambda s, d: _sparse_tokens([[b"a", b"b", b"c"], [b"\xc3", b"\xa9"]]), outputs=3),
    Case("StringSplitV2", [_strings(b"  a  b ", b"a<>b<><>c", b""), _scalar(b"")],
         lambda s, d: _sparse_tokens([[b"a", b"b"], [b"a<>b<><>c"], []]), outputs=3),
    Case("StringSplitV2", [_strings(b"a<>b<><>c", b"", b"<>"), _scalar(b"<>")],
         lambda s, d: _sparse_tokens([[b"a", b"b", b"", b"c"], [b""], [b"", b""]]), outputs=3),
    # TensorFlow's whitespace split with maxsplit: the rest is one more token, even empty.
    Case("StringSplitV2", [_strings(b" a  b c ", b"a<>b<><>c"), _scalar(b"")],
         lambda s, d: _sparse_tokens([[b"a", b"b c "], [b"a<>b<><>c", b""]]),
         attrs={"maxsplit": 1}, outputs=3),
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
    Case("Fill", [_i32([2, 3]), _scalar(b"fill me, a string longer than the inline buffer")],
         lambda d, v: np.full((2, 3), v, dtype=object)),
    Case("SelectV2", [np.array([True, False, True]), GRID, _strings(b"else")], _select),
]


def _map(fn, *arrays, otype=object):
    """fn over the elements of arrays of one shape (scalars broadcast), as an array."""
    shape = np.broadcast(*arrays).shape
    out = np.empty(shape, dtype=otype)
    for index in np.ndindex(*shape):
        out[index] = fn(*[a[index] if np.ndim(a) else a[()] for a in arrays])
    return out


NUMBERS = _strings(b"1.5", b"-2", b"3e2", b" 7")
TEXT = _strings(b"Hello World", b"abc-123", b"", b"\xc3\xa9t\xc3\xa9 \xc3\xa0")


def _b64(s):
    return base64.urlsafe_b64encode(s)


def _re_sub(pattern, rewrite, count=0):
    return lambda s: re.sub(pattern.encode(), rewrite.encode(), s, count=count)


CASES += [
    Case("StringJoin", [GRID, _scalar(b"|"), GRID], lambda a, sep, b: _map(
        lambda x, y, z: x + b"," + y + b"," + z, a, sep, b), attrs={"separator": ","}),
    Case("StringLength", [TEXT], lambda s: _map(len, s, otype=np.int32)),
    Case("StringLength", [TEXT], lambda s: _map(lambda x: len(x.decode()), s, otype=np.int32),
         attrs={"unit": "UTF8_CHAR"}),
    Case("StringUpper", [TEXT], lambda s: _map(lambda x: re.sub(
        rb"[a-z]", lambda m: m.group().upper(), x), s)),
    Case("StringLower", [TEXT], lambda s: _map(lambda x: re.sub(
        rb"[A-Z]", lambda m: m.group().lower(), x), s)),
    Case("StringStrip", [_strings(b"  a b \t", b"\n\x0b\x0cx\r", b"", b" \xc3\xa9 ")],
         lambda s: _map(lambda x: x.strip(b" \t\n\x0b\x0c\r"), s)),
    Case("Substr", [TEXT[:2], _i32([1, 2]), _i32(3)], lambda s, p, n: _map(
        lambda x, a, b: x[a:a + b], s, p, n)),
    Case("StringToNumber", [NUMBERS], lambda s: np.array([1.5, -2, 300, 7], np.float32)),
    Case("StringToNumber", [_strings(b"12", b"-7")], lambda s: np.array([12, -7], np.int64),
         attrs={"out_type": dtypes.int64}),
    Case("AsString", [np.array([1.5, -2.25], np.float32)],
         lambda x: _strings(b"1.500000", b"-2.250000")),
    Case("AsString", [np.array([7, -12], np.int64)], lambda x: _strings(b"0007", b"-012"),
         attrs={"width": 4, "fill": "0"}),
    Case("ReduceJoin", [GRID, _i32([1])],
         lambda s, a: np.array([b"/".join(row) for row in s], dtype=object),
         attrs={"separator": "/"}),
    Case("RegexReplace", [TEXT, _scalar(b"[aeiou]"), _scalar(b"<\\0>")],
         lambda s, p, r: _map(_re_sub("[aeiou]", "<\\g<0>>"), s)),
    Case("StaticRegexReplace", [TEXT], lambda s: _map(_re_sub("l+", "L", count=1), s),
         attrs={"pattern": "l+", "rewrite": "L", "replace_global": False}),
    Case("RegexFullMatch", [TEXT, _scalar(b"[a-z]+-\\d+")],
         lambda s, p: _map(lambda x: re.fullmatch(rb"[a-z]+-\d+", x) is not None, s,
                           otype=bool)),
    Case("StaticRegexFullMatch", [TEXT], lambda s: _map(
        lambda x: re.fullmatch(rb"H.*d", x) is not None, s, otype=bool),
         attrs={"pattern": "H.*d"}),
    Case("EncodeBase64", [TEXT], lambda s: _map(lambda x: _b64(x).rstrip(b"="), s)),
    Case("EncodeBase64", [TEXT], lambda s: _map(_b64, s), attrs={"pad": True}),
    Case("DecodeBase64", [_map(_b64, TEXT)], lambda s: TEXT),
    Case("DecodeRaw", [_strings(np.arange(4, dtype="<i4").tobytes(),
                                np.arange(4, 8, dtype="<i4").tobytes())],
         lambda b: np.arange(8, dtype=np.int32).reshape(2, 4), attrs={"out_type": dtypes.int32}),
    Case("DecodeRaw", [_strings(np.array([1.5, -2.0], ">f8").tobytes())],
         lambda b: np.array([[1.5, -2.0]]), attrs={"out_type": dtypes.float64,
                                                       "little_endian": False}),
]

CSV = _strings(b'1,a,2.5', b'3,"b,""c""",', b'-4,,1e3')
CASES += [
    Case("DecodeCSV", [CSV, _i32([0]), _strings(b"default"), np.array([9.0], np.float32)],
         lambda r, a, b, c: (_i32([1, 3, -4]), _strings(b"a", b'b,"c"', b"default"),
                             np.array([2.5, 9.0, 1000.0], np.float32)), outputs=3),
]

# The hashing ops of feature columns. References are real TensorFlow's values (FarmHash
# Fingerprint64, FingerprintCat64 from the default key); tests/python/test_feature_column.py
# compares many more with the TensorFlow oracle.
CROSS_WORDS = _strings([b"alpha", b""], [b"a much longer string than sixteen bytes", b"z"])
CROSS_IDS = np.array([[7], [-2]], np.int64)


def _sparse_cross_op(hashed):
    def build(words, ids):
        crossed = (tf.sparse.cross_hashed([words, ids], num_buckets=100) if hashed
                   else tf.sparse.cross([words, ids]))
        return crossed.values.op
    return build


def _crossed(values):
    return (np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.int64), values,
            np.array([2, 2], np.int64))


CASES += [
    Case("Equal", [GRID, _strings(b"alpha", b"x", b"nul\x00byte")],
         lambda a, b: np.array(a == b, bool)),
    Case("NotEqual", [GRID, _scalar(b"")], lambda a, b: np.array(a != b, bool)),
    Case("StringToHashBucketFast", [WORDS], lambda s: np.array([466, 263, 689, 643, 534, 137],
                                                               np.int64),
         attrs={"num_buckets": 1000}),
    Case("SparseCross", [CROSS_WORDS, CROSS_IDS],
         lambda w, i: _crossed(np.array([35, 51, 80, 67], np.int64)), outputs=3,
         build=_sparse_cross_op(hashed=True)),
    Case("SparseCross", [CROSS_WORDS, CROSS_IDS],
         lambda w, i: _crossed(_strings(b"alpha_X_7", b"_X_7",
                                        b"a much longer string than sixteen bytes_X_-2",
                                        b"z_X_-2")), outputs=3,
         build=_sparse_cross_op(hashed=False)),
]

EXEMPT = {
    "ReadFile": "tests/python/data/test_data_files.py (reads the files the test writes)",
    "WriteFile": "tests/python/data/test_data_files.py",
    "MatchingFiles": "tests/python/data/test_data_files.py (globs in a temporary directory)",
    "TFRecordDataset": "tests/python/data/test_data_files.py (and against TensorFlow's files)",
    "TextLineDataset": "tests/python/data/test_data_files.py",
    "FixedLengthRecordDatasetV2": "tests/python/data/test_data_files.py",
}
