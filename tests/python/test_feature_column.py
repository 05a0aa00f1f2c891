"""tf.feature_column against real TensorFlow (tf.compat.v1.feature_column, the oracle): the same
program runs on both and every column's output, the variable names and shapes, the hashed and
crossed buckets and the linear model's logits must agree. Also the hashing ops on their own and
the errors TensorFlow raises."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

fc = tf.feature_column

_ORACLE_PROGRAM = textwrap.dedent('''
    import json, sys
    import numpy as np
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    fc = tf.feature_column
    vocab_file = sys.argv[2]
    features = {
        "price": tf.constant([[1.0, 7.5], [-3.0, 20.0], [4.0, 0.0]]),
        "age": tf.constant([18.0, 35.0, 67.0]),
        "color": tf.constant([["red", "blue"], ["green", ""], ["purple", "red"]]),
        "word": tf.SparseTensor(indices=[[0, 0], [0, 1], [2, 0]], values=["apple", "kiwi", "fig"],
                                dense_shape=[3, 2]),
        "id": tf.constant([[3], [0], [9]], dtype=tf.int64),
        "code": tf.constant([[17, 4], [-1, 250], [88, 3]], dtype=tf.int64),
        "id_weight": tf.constant([[0.5], [2.0], [1.5]]),
        "city": tf.constant([["paris"], ["tokyo"], ["lima"]]),
        "id2": tf.constant([[1, 2], [5, 5], [7, 0]], dtype=tf.int64),
        "color2": tf.constant([["red", "blue"], ["green", ""], ["purple", "red"]]),
    }
    age = fc.numeric_column("age", normalizer_fn=lambda x: x / 10.0)
    price = fc.numeric_column("price", shape=(2,))
    age_b = fc.bucketized_column(age, [2.0, 4.0, 6.0])
    price_b = fc.bucketized_column(price, [0.0, 5.0])
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"],
                                                       num_oov_buckets=2)
    color_default = fc.categorical_column_with_vocabulary_list("color2", ["blue", "red"],
                                                               default_value=1)
    word = fc.categorical_column_with_hash_bucket("word", 7)
    code = fc.categorical_column_with_hash_bucket("code", 11, dtype=tf.int64)
    ident = fc.categorical_column_with_identity("id", 10)
    weighted = fc.weighted_categorical_column(ident, "id_weight")
    city = fc.categorical_column_with_vocabulary_file("city", vocab_file, num_oov_buckets=1)
    cross = fc.crossed_column(["city", color], 13)
    cross3 = fc.crossed_column([age_b, "city", ident], 17)
    dense_columns = [
        age, price, age_b, price_b,
        fc.indicator_column(color), fc.indicator_column(word), fc.indicator_column(code),
        fc.indicator_column(weighted), fc.indicator_column(cross), fc.indicator_column(cross3),
        fc.indicator_column(color_default),
        fc.embedding_column(ident, 3, combiner="sum", initializer=tf.constant_initializer(0.1)),
        fc.embedding_column(word, 2, combiner="mean"),
        fc.embedding_column(city, 4, combiner="sqrtn"),
        fc.embedding_column(weighted, 2, combiner="sqrtn"),
    ] + fc.shared_embedding_columns([fc.categorical_column_with_identity("id2", 10), ident], 2,
                                    combiner="sum")
    out = {}
    layer = {}
    for column in dense_columns:
        with tf.variable_scope(None, default_name="single"):
            layer[column.name] = fc.input_layer(features, [column])
    everything = fc.input_layer(features, dense_columns)
    linear = fc.linear_model(features, [age, price_b, color, word, cross, weighted], units=2)
    variables = sorted(tf.global_variables(), key=lambda v: v.name)
    out["variables"] = [[v.name, v.shape.as_list()] for v in variables]
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        for i, v in enumerate(variables):
            n = int(np.prod(v.shape.as_list()))
            value = (np.arange(n, dtype=np.float32).reshape(v.shape.as_list()) * 0.1 + i) % 3
            sess.run(v.assign(value))
        values = sess.run({"layer": layer, "everything": everything, "linear": linear})
    for k, v in values["layer"].items():
        out["layer/" + k] = v.tolist()
    out["everything"] = values["everything"].tolist()
    out["linear"] = values["linear"].tolist()
    print(json.dumps(out))
''')


def _run_program(python, which, tmp_path, program, *args):
    script = tmp_path / f"program_{which}.py"
    script.write_text(program)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([python, str(script), which, *args], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_columns_match_tensorflow(tmp_path):
    vocabulary = tmp_path / "cities.txt"
    vocabulary.write_text("lima\nparis\nrome\n")
    ours = _run_program(sys.executable, "flowstone", tmp_path, _ORACLE_PROGRAM, str(vocabulary))
    theirs = _run_program(PEER_PYTHON, "tensorflow", tmp_path, _ORACLE_PROGRAM,
                          str(vocabulary))
    assert ours.pop("variables") == theirs.pop("variables")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-5, err_msg=key)


_HASH_PROGRAM = textwrap.dedent('''
    import json, sys
    import numpy as np
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    rng = np.random.RandomState(7)
    # Every length class of the fingerprint: 0-3, 4-7, 8-16, 17-32, 33-64 and the 64-byte loop.
    texts = [bytes(rng.randint(0, 256, size=n).astype(np.uint8))
             for n in list(range(0, 70)) + [127, 128, 129, 200, 1000]]
    ids = tf.constant(np.array([[5, -3], [0, 7]], np.int64))
    words = tf.sparse.from_dense(tf.constant([[b"a", b"bb"], [b"", b"ccc"]]))
    out = {}
    with tf.Session() as sess:
        out["buckets"] = sess.run(tf.strings.to_hash_bucket_fast(texts, 2**62)).tolist()
        out["small"] = sess.run(tf.string_to_hash_bucket_fast(texts, 10)).tolist()
        for name, crossed in [
                ("hashed", tf.sparse.cross_hashed([words, ids], num_buckets=1000)),
                ("hashed_key", tf.sparse.cross_hashed([ids, words], hash_key=12345)),
                ("text", tf.sparse.cross([ids, words]))]:
            value = sess.run(crossed)
            values = [v.decode() if isinstance(v, bytes) else int(v) for v in value.values]
            out[name] = [value.indices.tolist(), values, value.dense_shape.tolist()]
    print(json.dumps(out))
''')


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_hash_buckets_and_crosses_match_tensorflow(tmp_path):
    ours = _run_program(sys.executable, "flowstone", tmp_path, _HASH_PROGRAM)
    theirs = _run_program(PEER_PYTHON, "tensorflow", tmp_path, _HASH_PROGRAM)
    assert ours == theirs


def test_sparse_cross_orders_sparse_inputs_first_and_varies_the_last_fastest():
    dense = tf.constant([["x", "y"], ["z", "w"]])
    sparse = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant([1, 2, 3], tf.int64), [2, 2])
    with tf.Session() as sess:
        value = sess.run(tf.sparse.cross([dense, sparse]))
    assert [v.decode() for v in value.values] == ["1_X_x", "1_X_y", "2_X_z", "2_X_w", "3_X_z",
                                                  "3_X_w"]
    assert value.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [1, 3]]
    assert value.dense_shape.tolist() == [2, 4]


def test_sparse_cross_rejects_mismatched_batches():
    a = tf.constant([["x"], ["y"]])
    b = tf.constant([["z"], ["w"], ["v"]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
            sess.run(tf.sparse.cross([a, b]).values)


def test_hash_bucket_needs_positive_buckets():
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_buckets must be positive"):
            sess.run(tf.strings.to_hash_bucket_fast(["a"], 0))


def _run(value, features=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(value, features)


def test_input_layer_sorts_columns_by_name_and_counts_ids():
    features = {"b": [[1.0], [2.0]], "a": tf.constant([["x", "y"], ["y", "y"]])}
    columns = [fc.numeric_column("b"),
               fc.indicator_column(fc.categorical_column_with_vocabulary_list("a", ["y", "x"]))]
    out = _run(fc.input_layer(features, columns))
    # "a_indicator" comes before "b": y counts twice in the second row.
    np.testing.assert_array_equal(out, [[1, 1, 1], [2, 0, 2]])


def test_embedding_combiners_against_numpy():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    column = fc.categorical_column_with_identity("ids", 6)
    expected = {"sum": [table[1] + table[4], [0, 0], table[5]],
                "mean": [(table[1] + table[4]) / 2, [0, 0], table[5]],
                "sqrtn": [(table[1] + table[4]) / np.sqrt(2), [0, 0], table[5]]}
    for combiner, want in expected.items():
        with tf.Graph().as_default():
            ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([1, 4, 5], tf.int64),
                                  [3, 2])
            embedded = fc.input_layer({"ids": ids}, [fc.embedding_column(
                column, 2, combiner=combiner, initializer=tf.constant_initializer(table))])
            np.testing.assert_allclose(_run(embedded), want, rtol=1e-6, err_msg=combiner)


def test_embedding_weights_are_trained_through_the_lookup():
    ids = tf.constant([[0], [2]], tf.int64)
    column = fc.embedding_column(fc.categorical_column_with_identity("ids", 3), 2,
                                 initializer=tf.zeros_initializer())
    out = fc.input_layer({"ids": ids}, [column])
    (table,) = tf.trainable_variables()
    assert table.name == "input_layer/ids_embedding/embedding_weights:0"
    grad = tf.convert_to_tensor(tf.gradients(tf.reduce_sum(out * [[1.0, 2.0], [3.0, 4.0]]),
                                             table)[0])
    np.testing.assert_allclose(_run(grad), [[1, 2], [0, 0], [3, 4]])


def test_identity_column_out_of_range_fails_at_run_time():
    column = fc.indicator_column(fc.categorical_column_with_identity("ids", 3))
    out = fc.input_layer({"ids": tf.constant([[1], [5]], tf.int64)}, [column])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        _run(out)


def test_errors_match_tensorflow():
    with pytest.raises(ValueError, match="boundaries must be a sorted list"):
        fc.bucketized_column(fc.numeric_column("x"), [3.0, 1.0])
    with pytest.raises(ValueError, match="source_column must be a column generated with "
                                         "numeric_column"):
        fc.bucketized_column(fc.categorical_column_with_identity("x", 3), [1.0])
    with pytest.raises(ValueError, match="hash_bucket_size must be at least 1"):
        fc.categorical_column_with_hash_bucket("x", 0)
    with pytest.raises(ValueError, match="Items of feature_columns must be a _DenseColumn"):
        fc.input_layer({"x": [["a"]]}, [fc.categorical_column_with_hash_bucket("x", 3)])
    with pytest.raises(ValueError, match="Duplicate feature column name"):
        fc.input_layer({"x": [[1.0]]}, [fc.numeric_column("x"), fc.numeric_column("x")])
    with pytest.raises(ValueError, match="Hashing before crossing"):
        fc.crossed_column([fc.categorical_column_with_hash_bucket("x", 3), "y"], 10)
    with pytest.raises(ValueError, match="SparseTensor is not supported"):
        fc.input_layer({"x": tf.SparseTensor([[0, 0]], [1.0], [1, 1])}, [fc.numeric_column("x")])
    with pytest.raises(ValueError, match="all categorical_columns must have the same number of "
                                         "buckets"):
        fc.shared_embedding_columns([fc.categorical_column_with_identity("a", 3),
                                     fc.categorical_column_with_identity("b", 4)], 2)
    with pytest.raises(ValueError, match="'missing' is not in the features dictionary"):
        fc.input_layer({"x": [[1.0]]}, [fc.numeric_column("missing")])
