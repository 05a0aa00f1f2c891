"""tf.strings, base64, decode_raw and decode_csv: values against Python's own string functions,
error paths by class and message, and CSV parsing against TensorFlow where it is installed."""

import base64
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_join_case_length_and_substr():
    words = tf.constant([b"Hello", b"wOrld"])
    got = _run({
        "join": tf.strings.join([words, "!"], separator=" "),
        "v1_join": tf.string_join(["a", "b"]),
        "upper": tf.strings.upper(words),
        "lower": tf.strings.lower(words),
        "bytes": tf.strings.length("caf\u00e9"),
        "chars": tf.strings.length("caf\u00e9", unit="UTF8_CHAR"),
        "substr": tf.strings.substr(words, [0, 1], 3),
    })
    assert got["join"].tolist() == [b"Hello !", b"wOrld !"]
    assert got["v1_join"] == b"ab"
    assert got["upper"].tolist() == [b"HELLO", b"WORLD"]
    assert got["lower"].tolist() == [b"hello", b"world"]
    assert (got["bytes"], got["chars"]) == (5, 4)
    assert got["substr"].tolist() == [b"Hel", b"Orl"]


def test_substr_past_the_end_names_the_position():
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos 9 out of range"):
        _run(tf.strings.substr(tf.constant(["abc"]), 9, 1))


def test_join_of_different_shapes_is_an_error():
    with pytest.raises(ValueError, match="scalars or all of one shape"):
        tf.strings.join([tf.constant(["a", "b"]), tf.constant(["a", "b", "c"])])


def test_numbers_to_and_from_strings():
    got = _run({
        "float": tf.strings.to_number(["1.25", "-3", "1e-2"]),
        "int": tf.strings.to_number(["42", "-7"], out_type=tf.int64),
        "as": tf.as_string(tf.constant([3.5, -0.25])),
        "precise": tf.strings.as_string(tf.constant([3.14159]), precision=2),
        "bool": tf.as_string(tf.constant([True, False])),
    })
    np.testing.assert_array_equal(got["float"], np.array([1.25, -3, 0.01], np.float32))
    assert got["int"].dtype == np.int64 and got["int"].tolist() == [42, -7]
    assert got["as"].tolist() == [b"3.500000", b"-0.250000"]
    assert got["precise"].tolist() == [b"3.14"]
    assert got["bool"].tolist() == [b"true", b"false"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="StringToNumberOp could not correctly convert string: 1.2.3"):
        _run(tf.strings.to_number(["1.2.3"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="convert string: 99999999999"):
        _run(tf.strings.to_number(["99999999999"], out_type=tf.int32))


def test_reduce_join_over_axes():
    grid = tf.constant([[b"a", b"b"], [b"c", b"d"]])
    got = _run({
        "all": tf.strings.reduce_join(grid),
        "rows": tf.strings.reduce_join(grid, axis=1, separator="-"),
        "cols_kept": tf.reduce_join(grid, axis=0, keep_dims=True),
    })
    assert got["all"] == b"abcd"
    assert got["rows"].tolist() == [b"a-b", b"c-d"]
    assert got["cols_kept"].tolist() == [[b"ac", b"bd"]]


def test_regular_expressions():
    text = tf.constant([b"2024-01-15", b"not a date"])
    got = _run({
        "swap": tf.strings.regex_replace(text, r"(\d+)-(\d+)-(\d+)", r"\3/\2/\1"),
        "first": tf.strings.regex_replace(text, "[0-9]", "#", replace_global=False),
        "dynamic": tf.regex_replace(text, tf.constant("o"), tf.constant("0")),
        "match": tf.strings.regex_full_match(text, r"\d{4}-\d{2}-\d{2}"),
    })
    assert got["swap"].tolist() == [b"15/01/2024", b"not a date"]
    assert got["first"].tolist() == [b"#024-01-15", b"not a date"]
    assert got["dynamic"].tolist() == [b"2024-01-15", b"n0t a date"]
    assert got["match"].tolist() == [True, False]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern: \\(unclosed"):
        _run(tf.strings.regex_full_match(text, tf.constant("(unclosed")))


def test_base64_is_web_safe_and_round_trips():
    raw = bytes(range(256))
    got = _run({"plain": tf.io.encode_base64(raw), "padded": tf.encode_base64(b"ab", pad=True),
                "back": tf.io.decode_base64(tf.io.encode_base64(raw))})
    assert got["plain"] == base64.urlsafe_b64encode(raw).rstrip(b"=")
    assert got["padded"] == b"YWI="
    assert got["back"] == raw
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid character found in base64"):
        _run(tf.io.decode_base64("a+b/"))


def test_decode_raw_little_and_big_endian():
    values = np.array([[1, -2], [3, 40000]], np.int32)
    got = _run({
        "le": tf.io.decode_raw([r.tobytes() for r in values], tf.int32),
        "be": tf.decode_raw(np.array([1.5, 2.5], ">f4").tobytes(), tf.float32,
                            little_endian=False),
    })
    np.testing.assert_array_equal(got["le"], values)
    np.testing.assert_array_equal(got["be"], np.array([1.5, 2.5], np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a multiple of 4"):
        _run(tf.io.decode_raw(b"abc", tf.int32))


CSV_RECORDS = ['1,"quoted, with comma",2.5', '2,"say ""hi""",', '3,plain,-1e3', ',empty,7']


def _decode_csv_locally():
    columns = tf.io.decode_csv(CSV_RECORDS, [[0], [""], [1.5]])
    return [c.tolist() for c in _run(columns)]


def test_decode_csv_quotes_defaults_and_errors():
    ints, texts, floats = _decode_csv_locally()
    assert ints == [1, 2, 3, 0]
    assert texts == [b"quoted, with comma", b'say "hi"', b"plain", b"empty"]
    np.testing.assert_allclose(floats, [2.5, 1.5, -1000.0, 7.0])
    picked = _run(tf.io.decode_csv(["a;1;x", "b;2;y"], [[""], ["?"]], field_delim=";",
                                   select_cols=[0, 2]))
    assert [c.tolist() for c in picked] == [[b"a", b"b"], [b"x", b"y"]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 3 fields but have 2 in record 0"):
        _run(tf.io.decode_csv(["1,2"], [[0], [0], [0]]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Field 1 is required but missing in record 0"):
        _run(tf.io.decode_csv(["1,"], [[0], tf.constant([], tf.int32)]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Field 0 in record 0 is not a valid float: abc"):
        _run(tf.io.decode_csv(["abc"], [[0.0]]))


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_decode_csv_matches_tensorflow():
    program = textwrap.dedent(f"""
        import json
        import tensorflow as tf
        cols = tf.io.decode_csv({CSV_RECORDS!r}, [[0], [""], [1.5]])
        print(json.dumps([[v.decode() if isinstance(v, bytes) else v for v in c.numpy().tolist()]
                          for c in cols]))
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = [[v.decode() if isinstance(v, bytes) else v for v in c] for c in _decode_csv_locally()]
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


def test_string_split_and_strings_split_give_sparse_tensors():
    lines = tf.constant(["hello world", "a  b", ""])
    v1 = tf.string_split(lines)  # TF1's default separator " ", empty tokens dropped
    kept = tf.string_split(lines, delimiter=" ", skip_empty=False)
    chars = tf.string_split(["ab"], "")
    v2 = tf.strings.split(["  x y ", "1,2,,3"], sep=None)
    commas = tf.strings.split(["1,2,,3"], sep=",", maxsplit=2)
    with tf.Session() as sess:
        got = sess.run([v1, kept, chars, v2, commas])
    assert got[0].values.tolist() == [b"hello", b"world", b"a", b"b"]
    assert got[0].indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert got[0].dense_shape.tolist() == [3, 2]
    assert got[1].values.tolist() == [b"hello", b"world", b"a", b"", b"b"]
    assert got[2].values.tolist() == [b"a", b"b"]
    assert got[3].values.tolist() == [b"x", b"y", b"1,2,,3"]
    assert got[4].values.tolist() == [b"1", b"2", b",3"] and got[4].dense_shape.tolist() == [1, 3]
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.string_split(lines, sep=" ", delimiter=",")
    with pytest.raises(ValueError, match="result_type must be 'RaggedTensor' or"):
        tf.strings.split(lines, result_type="Dense")
    with pytest.raises(ValueError, match="use result_type='RaggedTensor'"):
        tf.strings.split(tf.constant([["a b"]]))
    with pytest.raises(ValueError, match="rank 1"):
        tf.string_split(tf.constant("a b"))


def test_unsorted_segment_join_and_its_errors():
    joined = tf.strings.unsorted_segment_join(["a", "b", "c", "d"], [1, 0, 1, 3], 4, separator="-")
    ids = tf.placeholder(tf.int32, [2])
    bad = tf.strings.unsorted_segment_join(["a", "b"], ids, 2)
    with tf.Session() as sess:
        assert sess.run(joined).tolist() == [b"b", b"a-c", b"", b"d"]  # as TensorFlow gives
        for wrong in ([-1, 0], [2, 0]):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="segment_ids are not allowed to exceed num_segments"):
                sess.run(bad, {ids: wrong})
        assert sess.run(bad, {ids: [1, 1]}).tolist() == [b"", b"ab"]
