"""Conformance cases for the ragged-tensor kernels (src/ops/array/ragged_ops.cc) and the Unicode,
n-gram and keyed-hash string ops (src/ops/string/unicode_ops.cc, ngram_hash_ops.cc). References
are computed here in Python; test_ops_vs_tensorflow.py runs every case through TensorFlow's
raw ops too. SipHash values are checked against TensorFlow there (and in test_ragged_strings.py)."""

import numpy as np

import flowstone as tf
from op_cases import RNG, Case
from op_cases_data import EXAMPLE


def _strings(*values):
    return np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)


def _i64(x):
    return np.array(x, np.int64)


def _i32(x):
    return np.array(x, np.int32)


def _decode(texts, encoding="utf-8"):
    """Row splits, code points and byte offsets of well-formed text."""
    splits, chars, starts = [0], [], []
    for text in texts:
        offset = 0
        for ch in text.decode(encoding):
            chars.append(ord(ch))
            starts.append(offset)
            offset += len(ch.encode(encoding))
        splits.append(len(chars))
    return _i64(splits), _i32(chars), _i64(starts)


TEXT = _strings("héllo", "", "日本語", "a\U0001F600b")
UTF16 = np.array([t.decode().encode("utf-16-be") for t in TEXT], dtype=object)


def _dense(rows, width, fill, dtype):
    out = np.full((len(rows), width), fill, dtype)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row[:width]
    return out


def _rows(values, splits):
    return [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]


VALUES = RNG.uniform(-1, 1, size=(6,))
SPLITS = _i64([0, 2, 2, 5, 6])
VALUES2 = RNG.uniform(-1, 1, size=(5, 2))


def _ngrams(rows, width, sep=b" "):
    out, splits = [], [0]
    for row in rows:
        out += [sep.join(row[i:i + width]) for i in range(len(row) - width + 1)]
        splits.append(len(out))
    return np.array(out, dtype=object), _i64(splits)


TOKENS = _strings("a", "b", "c", "d", "e", "f")
TOKEN_SPLITS = _i64([0, 3, 3, 4, 6])

CASES = [
    # Unicode decoding and encoding (UTF-8, UTF-16-BE; offsets in bytes).
    Case("UnicodeDecode", [TEXT], lambda s: _decode(s)[:2], outputs=2,
         attrs={"input_encoding": "UTF-8"}),
    Case("UnicodeDecodeWithOffsets", [TEXT], lambda s: _decode(s), outputs=3,
         attrs={"input_encoding": "UTF-8"}),
    Case("UnicodeDecodeWithOffsets", [UTF16], lambda s: _decode(s, "utf-16-be"), outputs=3,
         attrs={"input_encoding": "UTF-16-BE"}),
    # Ill-formed UTF-8: a lone continuation byte, a truncated sequence and an overlong lead
    # byte, each one replacement (U+FFFD) or dropped; C0 controls are errors on request.
    Case("UnicodeDecode", [_strings(b"a\x80b", b"\xe6\x97", b"\xc0\xafz", b"x\x01")],
         lambda s: (_i64([0, 3, 4, 7, 9]),
                    _i32([97, 65533, 98, 65533, 65533, 65533, 122, 120, 1])),
         outputs=2, attrs={"input_encoding": "UTF-8"}),
    Case("UnicodeDecode", [_strings(b"a\x80b", b"\xe6\x97", b"\xc0\xafz", b"x\x01")],
         lambda s: (_i64([0, 2, 2, 3, 4]), _i32([97, 98, 122, 120])),
         outputs=2, attrs={"input_encoding": "UTF-8", "errors": "ignore",
                           "replacement_char": 63, "replace_control_characters": True}),
    Case("UnicodeEncode", [_decode(TEXT)[1], _decode(TEXT)[0]], lambda c, s: TEXT,
         attrs={"output_encoding": "UTF-8"}),
    Case("UnicodeEncode", [_decode(TEXT)[1], _decode(TEXT)[0]], lambda c, s: UTF16,
         attrs={"output_encoding": "UTF-16-BE"}),
    # Surrogates and values past U+10FFFF are not characters: replaced.
    Case("UnicodeEncode", [_i32([72, 0xD800, 0x110000, 105]), _i64([0, 2, 4])],
         lambda c, s: _strings("H\ufffd", "\ufffdi"), attrs={"output_encoding": "UTF-8"}),
    Case("UnicodeTranscode", [TEXT], lambda s: UTF16,
         attrs={"input_encoding": "UTF-8", "output_encoding": "UTF-16-BE"}),
    Case("UnicodeTranscode", [UTF16.reshape(2, 2)], lambda s: TEXT.reshape(2, 2),
         attrs={"input_encoding": "UTF-16-BE", "output_encoding": "UTF-8"}),
    # Latin, Greek, Cyrillic, Han, Arabic, Common (digit), invalid.
    Case("UnicodeScript", [_i32([[65, 0x3B1, 0x416], [0x65E5, 0x627, 0x31]])],
         lambda c: _i32([[25, 14, 8], [17, 2, 0]])),
    Case("UnicodeScript", [_i32([-1, 0x110000])], lambda c: _i32([-1, -1])),
    # N-grams, unpadded and padded (an empty row too gets padded n-grams, as in TensorFlow),
    # and a sequence kept whole when too short.
    Case("StringNGrams", [TOKENS, TOKEN_SPLITS],
         lambda d, s: _ngrams([list(r) for r in _rows(d, s)], 2), outputs=2,
         attrs={"separator": " ", "ngram_widths": [2], "left_pad": "", "right_pad": "",
                "pad_width": 0, "preserve_short_sequences": False}),
    Case("StringNGrams", [TOKENS, TOKEN_SPLITS],
         lambda d, s: (_strings("<|<|a", "<|a|b", "a|b|c", "b|c|>", "c|>|>", "<|<|>", "<|>|>",
                                "<|<|d", "<|d|>", "d|>|>", "<|<|e", "<|e|f", "e|f|>", "f|>|>"),
                       _i64([0, 5, 7, 10, 14])),
         outputs=2, attrs={"separator": "|", "ngram_widths": [3], "left_pad": "<",
                           "right_pad": ">", "pad_width": 2, "preserve_short_sequences": False}),
    Case("StringNGrams", [TOKENS, TOKEN_SPLITS],
         lambda d, s: (_strings("a b c", "d", "e f"), _i64([0, 1, 1, 2, 3])),
         outputs=2, attrs={"separator": " ", "ngram_widths": [3], "left_pad": "",
                           "right_pad": "", "pad_width": 0, "preserve_short_sequences": True}),
    # SipHash-2-4 buckets (TensorFlow's values, checked by test_ops_vs_tensorflow.py).
    Case("StringToHashBucketStrong", [_strings("", "a", "hello world", "x" * 20)],
         lambda s: _i64([35, 46, 46, 26]), attrs={"num_buckets": 100, "key": [1, 2]}),
    # TensorFlow's legacy Hash64 buckets (values from TensorFlow 2.21).
    Case("StringToHashBucket", [_strings("", "a", "hello world", "x" * 20, "abcdefgh")],
         lambda s: _i64([899, 868, 655, 341, 306]), attrs={"num_buckets": 1000}),
    # Ragged to dense: padding, cropping to a shape, a default per inner row, two ragged levels.
    Case("RaggedTensorToTensor", [_i64(-1), VALUES, np.float64(9.0), SPLITS],
         lambda sh, v, d, s: _dense(_rows(v, s), 3, 9.0, np.float64),
         attrs={"row_partition_types": ["ROW_SPLITS"]}, grad=[1, 2]),
    Case("RaggedTensorToTensor", [_i64([3, 2]), VALUES, np.float64(0.5), SPLITS],
         lambda sh, v, d, s: _dense(_rows(v, s)[:3], 2, 0.5, np.float64),
         attrs={"row_partition_types": ["ROW_SPLITS"]}, grad=[1, 2]),
    Case("RaggedTensorToTensor", [_i64([-1, -1, 2]), VALUES2, np.array([7.0, 8.0]),
                                  _i64([0, 3, 3, 5])],
         lambda sh, v, d, s: np.stack([
             np.concatenate([v[0:3], np.zeros((0, 2))]),
             np.stack([d, d, d]), np.concatenate([v[3:5], [d]])]),
         attrs={"row_partition_types": ["ROW_SPLITS"]}, grad=[1, 2]),
    Case("RaggedTensorToTensor", [_i64(-1), _i32([1, 2, 3, 4, 5]), _i32(0), _i64(2),
                                  _i64([0, 0, 1]), _i64([0, 0, 1, 2, 2])],
         lambda sh, v, d, n, r1, r2: _i32([[[1, 2], [3, 0]], [[4, 5], [0, 0]]]),
         attrs={"row_partition_types": ["FIRST_DIM_SIZE", "VALUE_ROWIDS", "VALUE_ROWIDS"]}),
    Case("RaggedTensorToSparse", [_i64([0, 2, 3]), _i64([0, 1, 3, 4]), VALUES[:4]],
         lambda s1, s2, v: (_i64([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0]]), v,
                            _i64([2, 2, 2])), outputs=3),
    Case("RaggedTensorToSparse", [SPLITS, _strings(*"abcdef")],
         lambda s, v: (_i64([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2], [3, 0]]), v,
                       _i64([4, 3])), outputs=3),
    Case("RaggedRange", [_i64([0, 5, 8]), _i64([3, 3, 12]), _i64([1, -1, 2])],
         lambda a, b, c: (_i64([0, 3, 5, 7]), _i64([0, 1, 2, 5, 4, 8, 10])), outputs=2),
    Case("RaggedRange", [np.float64(0.5), np.array([2.0, 0.0]), np.float64(0.5)],
         lambda a, b, c: (_i64([0, 3, 3]), np.array([0.5, 1.0, 1.5])), outputs=2),
    Case("RaggedGather", [SPLITS, VALUES, _i32([2, 0, 2])],
         lambda s, v, i: (_i64([0, 3, 5, 8]), v[[2, 3, 4, 0, 1, 2, 3, 4]]), outputs=2,
         attrs={"OUTPUT_RAGGED_RANK": 1}),
    Case("RaggedGather", [SPLITS, VALUES, _i64([[3, 1], [0, 2]])],
         lambda s, v, i: (_i64([0, 2, 4]), _i64([0, 1, 1, 3, 6]), v[[5, 0, 1, 2, 3, 4]]),
         outputs=3, attrs={"OUTPUT_RAGGED_RANK": 2}),
]


def _parse_ragged(serialized):
    """The ParseExampleV2 op of tf.io.parse_example with one tf.io.RaggedFeature."""
    return tf.io.parse_example(serialized, {"label": tf.io.RaggedFeature(tf.int64)})[
        "label"].flat_values.op


CASES.append(
    # A ragged feature: every record's values, then the batch's row splits (op_cases_data's
    # Example holds label [7]).
    Case("ParseExampleV2", [np.array([EXAMPLE, EXAMPLE], dtype=object)],
         lambda s: (_i64([7, 7]), _i64([0, 1, 2])), outputs=2, build=_parse_ragged))

EXEMPT = {}
