"""The string functions with ragged results (python/flowstone/ops/ragged_string_ops.py): Unicode
decoding, encoding, splitting and transcoding, scripts, bytes_split, ngrams,
to_hash_bucket_strong and the ragged tf.strings.split, checked against Python's codecs and,
where the peer venv has it, against real TensorFlow; and tf.io.RaggedFeature in parse_example
and parse_single_example."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow


def _run(value, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(value, feed_dict)


def _as_list(value):
    if isinstance(value, tf.ragged.RaggedTensorValue):
        return value.to_list()
    return np.asarray(value).tolist()


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield


WORDS = ["héllo", "", "日本語", "a😀b"]


def test_unicode_decode_matches_python_codecs():
    chars = _run(tf.strings.unicode_decode(WORDS, "UTF-8"))
    assert chars.to_list() == [[ord(c) for c in w] for w in WORDS]
    # A scalar gives a Tensor; a matrix a ragged tensor with a uniform outer dimension.
    assert _run(tf.strings.unicode_decode("hé", "UTF-8")).tolist() == [104, 233]
    grid = _run(tf.strings.unicode_decode([["ab", "c"], ["", "d"]], "UTF-8"))
    assert grid.to_list() == [[[97, 98], [99]], [[], [100]]]
    chars, offsets = _run(tf.strings.unicode_decode_with_offsets(WORDS, "UTF-8"))
    assert offsets.to_list() == [[0, 1, 3, 4, 5], [], [0, 3, 6], [0, 1, 5]]
    utf16 = [w.encode("utf-16-be") for w in WORDS]
    assert _run(tf.strings.unicode_decode(utf16, "UTF-16-BE")).to_list() == chars.to_list()


def test_unicode_errors_modes():
    bad = [b"a\xffb"]
    assert _run(tf.strings.unicode_decode(bad, "UTF-8")).to_list() == [[97, 0xFFFD, 98]]
    assert _run(tf.strings.unicode_decode(bad, "UTF-8", errors="ignore")).to_list() == \
        [[97, 98]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid formatting"):
        _run(tf.strings.unicode_decode(bad, "UTF-8", errors="strict"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="UTF-8, UTF-16-BE or UTF-32-BE"):
        _run(tf.strings.unicode_decode(["a"], "Shift_JIS"))


def test_unicode_encode_split_transcode_and_script():
    chars = tf.ragged.constant([[104, 233], [], [0x1F600]])
    assert _run(tf.strings.unicode_encode(chars, "UTF-8")).tolist() == \
        ["hé".encode(), b"", "😀".encode()]
    assert _run(tf.strings.unicode_encode([[104, 105], [106, 107]], "UTF-8")).tolist() == \
        [b"hi", b"jk"]
    assert _run(tf.strings.unicode_encode([104, 105], "UTF-32-BE")) == "hi".encode("utf-32-be")
    pieces = _run(tf.strings.unicode_split(WORDS, "UTF-8"))
    assert pieces.to_list() == [[c.encode() for c in w] for w in WORDS]
    pieces, starts = _run(tf.strings.unicode_split_with_offsets(["aé"], "UTF-8"))
    assert pieces.to_list() == [[b"a", "é".encode()]] and starts.to_list() == [[0, 1]]
    transcoded = _run(tf.strings.unicode_transcode(WORDS, "UTF-8", "UTF-16-BE"))
    assert transcoded.tolist() == [w.encode("utf-16-be") for w in WORDS]
    scripts = _run(tf.strings.unicode_script([ord("a"), ord("α"), ord("日"), ord("1")]))
    assert scripts.tolist() == [25, 14, 17, 0]  # Latin, Greek, Han, Common (ICU's codes)


def test_bytes_split_ngrams_and_split():
    assert _run(tf.strings.bytes_split(["ab", "", "é"])).to_list() == \
        [[b"a", b"b"], [], [b"\xc3", b"\xa9"]]
    assert _run(tf.strings.bytes_split("xy")).tolist() == [b"x", b"y"]
    tokens = tf.ragged.constant([["a", "b", "c"], ["d"]])
    assert _run(tf.strings.ngrams(tokens, 2)).to_list() == [[b"a b", b"b c"], []]
    assert _run(tf.strings.ngrams(tokens, [1, 2], separator="-")).to_list() == \
        [[b"a", b"b", b"c", b"a-b", b"b-c"], [b"d"]]
    assert _run(tf.strings.ngrams(tokens, 2, pad_values="#")).to_list() == \
        [[b"# a", b"a b", b"b c", b"c #"], [b"# d", b"d #"]]
    assert _run(tf.strings.ngrams(["a", "b", "c"], 3)).tolist() == [b"a b c"]
    split = _run(tf.strings.split(["a b", "c"], result_type="RaggedTensor"))
    assert split.to_list() == [[b"a", b"b"], [b"c"]]
    nested = _run(tf.strings.split(tf.ragged.constant([["a b", "c"], []])))
    assert nested.to_list() == [[[b"a", b"b"], [b"c"]], []]
    sparse = _run(tf.strings.split(["a b", "c"]))  # TF1's default: a SparseTensor
    assert sparse.values.tolist() == [b"a", b"b", b"c"]


def test_to_hash_bucket_strong_is_deterministic_and_keyed():
    a = _run(tf.strings.to_hash_bucket_strong(["x", "y", "x"], 1000, [1, 2]))
    b = _run(tf.strings.to_hash_bucket_strong(["x", "y", "x"], 1000, [3, 4]))
    assert a[0] == a[2] and a.tolist() != b.tolist()
    assert all(0 <= v < 1000 for v in a.tolist() + b.tolist())
    with pytest.raises(ValueError, match="key must have 2 elements"):
        tf.strings.to_hash_bucket_strong(["x"], 10, [1])


STRING_EXPRESSIONS = [
    "tf.strings.unicode_decode(['héllo', 'a\\U0001F600', b'\\xe0\\x80x', b'\\xf4\\x90\\x80\\x80'],"
    " 'UTF-8')",
    "tf.strings.unicode_decode([b'\\x00a\\xd8\\x3d\\xde\\x00\\xdc\\x00', b'\\x00'], 'UTF-16-BE')",
    "tf.strings.unicode_decode([b'\\x00\\x00\\x00a\\x00\\x11\\x00\\x00\\x00'], 'UTF-32-BE')",
    "tf.strings.unicode_decode_with_offsets([b'a\\xc3', 'é\\u20ac'], 'UTF-8')[1]",
    "tf.strings.unicode_encode(tf.ragged.constant([[104, 233], [0x1F600, 55296]]), 'UTF-16-BE')",
    "tf.strings.unicode_split(['aé', b'\\xffz'], 'UTF-8')",
    "tf.strings.unicode_transcode([b'a\\xffb', 'é'], 'UTF-8', 'UTF-32-BE')",
    "tf.strings.unicode_script([0x41, 0x5D0, 0x915, 0x3042, 0x30A2, 0xAC00, 0x0E01, 0x300])",
    "tf.strings.bytes_split(['abc', 'é'])",
    "tf.strings.ngrams(tf.ragged.constant([['a', 'b', 'c', 'd'], ['e']]), [2, 3],"
    " pad_values=('<', '>'), padding_width=1)",
    "tf.strings.ngrams(tf.ragged.constant([['a', 'b'], ['c'], []]), 3,"
    " preserve_short_sequences=True)",
    "tf.strings.to_hash_bucket_strong(['', 'a', 'hello world', 'x' * 20, 'é'], 97, [7, 11])",
    "tf.strings.to_hash_bucket_strong(['abc', 'abcdefgh', 'abcdefghi'], 2**62,"
    " [-1, 12345])",
]

TF_SCRIPT = """
import json
import tensorflow as tf
out = []
for expr in json.loads({exprs!r}):
    value = eval(expr)
    value = value.to_list() if isinstance(value, tf.RaggedTensor) else value.numpy().tolist()
    out.append(value)
print(json.dumps(out, default=lambda b: list(b)))
"""


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_string_expressions_equal_tensorflow():
    expected = json.loads(run_tensorflow(TF_SCRIPT.format(
        exprs=json.dumps(STRING_EXPRESSIONS))).strip().splitlines()[-1])
    assert len(expected) == len(STRING_EXPRESSIONS)
    for expr, want in zip(STRING_EXPRESSIONS, expected):
        tf.reset_default_graph()
        got = json.loads(json.dumps(_as_list(_run(eval(expr))), default=lambda b: list(b)))
        assert got == want, expr


# --- tf.io.RaggedFeature ---------------------------------------------------------------------

def _example(**features):
    def feature(values):
        if all(isinstance(v, int) for v in values):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        if all(isinstance(v, float) for v in values):
            return tf.train.Feature(float_list=tf.train.FloatList(value=values))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Example(features=tf.train.Features(feature={
        k: feature(v) for k, v in features.items()})).SerializeToString()


RECORDS = [_example(words=[b"a", b"b", b"c"], lengths=[2, 1], score=[1.5]),
           _example(lengths=[], score=[2.5]),
           _example(words=[b"d"], lengths=[0, 1], score=[0.5])]


def test_parse_example_ragged_features():
    features = {
        "words": tf.io.RaggedFeature(tf.string),
        "nested": tf.io.RaggedFeature(tf.string, value_key="words",
                                      partitions=[tf.io.RaggedFeature.RowLengths("lengths")]),
        "pairs": tf.io.RaggedFeature(tf.string, value_key="words", row_splits_dtype=tf.int64,
                                     partitions=[tf.io.RaggedFeature.UniformRowLength(1)]),
        "score": tf.io.FixedLenFeature([], tf.float32),
    }
    parsed = _run(tf.io.parse_example(RECORDS, features))
    assert parsed["words"].to_list() == [[b"a", b"b", b"c"], [], [b"d"]]
    assert parsed["words"].row_splits.dtype == np.int32
    assert parsed["nested"].to_list() == [[[b"a", b"b"], [b"c"]], [], [[], [b"d"]]]
    assert parsed["pairs"].to_list() == [[[b"a"], [b"b"], [b"c"]], [], [[b"d"]]]
    np.testing.assert_allclose(parsed["score"], [1.5, 2.5, 0.5])


def test_parse_single_example_ragged_partitions():
    record = _example(v=[1, 2, 3, 4, 5], splits=[0, 2, 5], rowids=[0, 0, 1, 1, 1],
                      starts=[0, 3], limits=[3, 5])
    features = {
        "by_splits": tf.io.RaggedFeature(tf.int64, "v", [tf.io.RaggedFeature.RowSplits("splits")]),
        "by_rowids": tf.io.RaggedFeature(tf.int64, "v",
                                         [tf.io.RaggedFeature.ValueRowIds("rowids")]),
        "by_starts": tf.io.RaggedFeature(tf.int64, "v", [tf.io.RaggedFeature.RowStarts("starts")]),
        "by_limits": tf.io.RaggedFeature(tf.int64, "v", [tf.io.RaggedFeature.RowLimits("limits")]),
        "flat": tf.io.RaggedFeature(tf.int64, "v"),
    }
    parsed = _run(tf.io.parse_single_example(record, features))
    assert parsed["by_splits"].to_list() == [[1, 2], [3, 4, 5]]
    assert parsed["by_rowids"].to_list() == [[1, 2], [3, 4, 5]]
    assert parsed["by_starts"].to_list() == [[1, 2, 3], [4, 5]]
    assert parsed["by_limits"].to_list() == [[1, 2, 3], [4, 5]]
    assert parsed["flat"].tolist() == [1, 2, 3, 4, 5]


def test_ragged_feature_type_errors():
    with pytest.raises(ValueError, match="dtype must be one of"):
        tf.io.RaggedFeature(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="words"):
        _run(tf.io.parse_example(RECORDS, {"words": tf.io.RaggedFeature(tf.int64)}))


PARTITIONED = [_example(v=[1, 2, 3, 4, 5], splits=[0, 2, 5], starts=[0, 3], limits=[3, 5]),
               _example(v=[6], splits=[0, 0, 1], starts=[0, 0], limits=[0, 1]),
               _example()]


def test_parse_example_batched_partitions():
    partitions = {"by_splits": tf.io.RaggedFeature.RowSplits("splits"),
                  "by_starts": tf.io.RaggedFeature.RowStarts("starts"),
                  "by_limits": tf.io.RaggedFeature.RowLimits("limits")}
    features = {k: tf.io.RaggedFeature(tf.int64, "v", [p]) for k, p in partitions.items()}
    parsed = _run(tf.io.parse_example(PARTITIONED, features))
    assert parsed["by_splits"].to_list() == [[[1, 2], [3, 4, 5]], [[], [6]], []]
    assert parsed["by_starts"].to_list() == [[[1, 2, 3], [4, 5]], [[], [6]], []]
    assert parsed["by_limits"].to_list() == [[[1, 2, 3], [4, 5]], [[], [6]], []]
    with pytest.raises(ValueError, match="ValueRowIds"):
        tf.io.parse_example(PARTITIONED, {"x": tf.io.RaggedFeature(
            tf.int64, "v", [tf.io.RaggedFeature.ValueRowIds("splits")])})


# (records, features as source text): parsed by Flowstone and by TensorFlow alike.
PARSES = [
    (RECORDS, """{
        "nested": tf.io.RaggedFeature(tf.string, value_key="words",
                                      partitions=[tf.io.RaggedFeature.RowLengths("lengths")]),
        "lengths": tf.io.RaggedFeature(tf.int64),
        "pairs": tf.io.RaggedFeature(tf.string, value_key="words",
                                     partitions=[tf.io.RaggedFeature.UniformRowLength(1)])}"""),
    (PARTITIONED, """{
        k: tf.io.RaggedFeature(tf.int64, "v", [p]) for k, p in {
            "by_splits": tf.io.RaggedFeature.RowSplits("splits"),
            "by_starts": tf.io.RaggedFeature.RowStarts("starts"),
            "by_limits": tf.io.RaggedFeature.RowLimits("limits")}.items()}"""),
]


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_parse_example_ragged_equals_tensorflow(tmp_path):
    (tmp_path / "parses.json").write_text(json.dumps(
        [[[list(r) for r in records], spec] for records, spec in PARSES]))
    script = """
        import json
        import tensorflow as tf
        out = []
        for records, spec in json.load(open("parses.json")):
            parsed = tf.io.parse_example([bytes(r) for r in records], eval(spec))
            out.append({k: v.to_list() for k, v in parsed.items()})
        print(json.dumps(out, default=lambda b: b.decode()))
    """
    want = json.loads(run_tensorflow(script, workdir=str(tmp_path)).strip().splitlines()[-1])
    assert len(want) == len(PARSES)
    for (records, spec), expected in zip(PARSES, want):
        tf.reset_default_graph()
        parsed = _run(tf.io.parse_example(records, eval(spec)))
        got = json.loads(json.dumps({k: v.to_list() for k, v in parsed.items()},
                                    default=lambda b: b.decode()))
        assert got == expected, spec
