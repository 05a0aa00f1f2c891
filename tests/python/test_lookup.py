"""tf.lookup tables in graph mode: static tables and their initializers, vocabulary tables with
out-of-vocabulary buckets (ids checked against TensorFlow's), text file tables, mutable tables,
tables inside Dataset.map, tf.contrib.lookup, and the errors."""

import json

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from peers import requires_tensorflow, run_tensorflow

WORDS = ["emerson", "lake", "palmer", "king", "crimson"]
QUERY = ["lake", "yes", "palmer", "genesis", "", "emerson", "rush"]


def _vocab(tmp_path, lines=WORDS, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_static_hash_table_lookup_size_export():
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], tf.constant([1, 2, 3], tf.int64)),
        default_value=-1)
    ids = table.lookup(tf.constant([["a", "x"], ["c", "b"]]))
    assert ids.shape.as_list() == [2, 2] and ids.dtype == tf.int64
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized."):
            sess.run(ids)
        assert sess.run(table.size()) == 0
        sess.run(tf.tables_initializer())
        sess.run(tf.compat.v1.tables_initializer())  # the same data again: a no-op
        assert sess.run(ids).tolist() == [[1, -1], [3, 2]]
        assert sess.run(table.size()) == 3
        keys, values = sess.run(table.export())
        assert keys.tolist() == [b"a", b"b", b"c"] and values.tolist() == [1, 2, 3]
    assert tf.initializers.tables_initializer is tf.tables_initializer
    assert (table.key_dtype, table.value_dtype) == (tf.string, tf.int64)


def test_static_table_errors():
    init = tf.lookup.KeyValueTensorInitializer(tf.constant([1, 1], tf.int64), [1.0, 2.0])
    table = tf.lookup.StaticHashTable(init, -1.0)
    with pytest.raises(TypeError, match="Dtype of argument `keys` must be int64, received: "
                                        "string"):
        table.lookup(tf.constant(["a"]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="HashTable has different value for same key. Key 1 has 1"):
            sess.run(table.initializer)
        # The op itself checks the key dtype (a graph built by hand or imported).
        find = apply_op("LookupTableFindV2", [table.resource_handle, tf.constant([1], tf.int32),
                                              tf.constant(0.0)],
                        {"Tin": tf.int32, "Tout": tf.float32}).outputs[0]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="keys must be of type int64 but got int32"):
            sess.run(find)
        insert = apply_op("LookupTableInsertV2", [table.resource_handle,
                                                  tf.constant([5], tf.int64), tf.constant([1.0])],
                          {"Tin": tf.int64, "Tout": tf.float32})
        with pytest.raises(tf.errors.UnimplementedError, match="use a MutableHashTable"):
            sess.run(insert)
    with pytest.raises(TypeError, match="Invalid key dtype"):
        init.initialize(tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0))


def test_mismatched_initializer_shapes():
    init = tf.lookup.KeyValueTensorInitializer(tf.constant([1, 2], tf.int64), [1.0, 2.0, 3.0])
    table = tf.lookup.StaticHashTable(init, 0.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
            sess.run(table.initializer)


def _vocabulary_ids(vocab):
    file_table = tf.lookup.StaticVocabularyTable(
        tf.lookup.TextFileInitializer(vocab, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                      tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER), 3)
    tensor_table = tf.lookup.StaticVocabularyTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant([10, 20, 30], tf.int64),
                                            tf.constant([0, 1, 2], tf.int64)), 4)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        string_ids, int_ids, size = sess.run([
            file_table.lookup(tf.constant(QUERY)),
            tensor_table.lookup(tf.constant([20, 5, 30, 999, -7], tf.int64)),
            file_table.size()])
    assert size == 8
    return string_ids.tolist(), int_ids.tolist()


def test_static_vocabulary_table_buckets(tmp_path):
    string_ids, int_ids = _vocabulary_ids(_vocab(tmp_path))
    assert [string_ids[i] for i in (0, 2, 5)] == [1, 2, 0]
    assert all(5 <= string_ids[i] < 8 for i in (1, 3, 4, 6))
    assert [int_ids[0], int_ids[2]] == [1, 2] and all(3 <= i < 7 for i in int_ids[1::2])
    with pytest.raises(ValueError, match="num_oov_buckets` must be > 0"):
        tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(["a"], [0]), 0)


@requires_tensorflow
def test_vocabulary_ids_equal_tensorflows(tmp_path):
    vocab = _vocab(tmp_path)
    string_ids, int_ids = _vocabulary_ids(vocab)
    out = run_tensorflow(f"""
        import json
        import tensorflow as tf
        file_table = tf.lookup.StaticVocabularyTable(
            tf.lookup.TextFileInitializer({vocab!r}, tf.string, -2, tf.int64, -1), 3)
        tensor_table = tf.lookup.StaticVocabularyTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant([10, 20, 30], tf.int64),
                                                tf.constant([0, 1, 2], tf.int64)), 4)
        print(json.dumps([file_table.lookup(tf.constant({QUERY!r})).numpy().tolist(),
                          tensor_table.lookup(tf.constant([20, 5, 30, 999, -7],
                                                          tf.int64)).numpy().tolist()]))
    """, tmp_path)
    assert json.loads(out) == [string_ids, int_ids]


def test_text_file_columns_vocab_size_and_errors(tmp_path):
    pairs = _vocab(tmp_path, ["a\t1\t0.5", "b\t2\t1.5", "c\t3\t2.5"], "pairs.tsv")
    by_column = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(pairs, tf.string, 0, tf.float32, 2), -1.0)
    ints = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(pairs, tf.int64, 1, tf.string, 0, vocab_size=2), "?")
    too_many = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(pairs, tf.string, 0, tf.int64, 1, vocab_size=9), -1)
    missing_column = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(pairs, tf.string, 0, tf.int64, 5), -1)
    not_a_number = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(pairs, tf.string, 1, tf.int64, 0), -1)
    gap = _vocab(tmp_path, ["a", "", "b"], "gap.txt")
    empty_line = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(gap, tf.string, -2, tf.int64, -1), -1)
    missing_file = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(tmp_path / "nope"), tf.string, -2, tf.int64, -1), -1)
    with tf.Session() as sess:
        sess.run([by_column.initializer, ints.initializer])
        assert sess.run(by_column.lookup(tf.constant(["b", "c", "z"]))).tolist() == [1.5, 2.5,
                                                                                      -1.0]
        assert sess.run(ints.lookup(tf.constant([1, 2, 3], tf.int64))).tolist() == [b"a", b"b",
                                                                                      b"?"]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Invalid vocab_size in .*pairs.tsv: expected 9 but got 3"):
            sess.run(too_many.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid number of columns"):
            sess.run(missing_column.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Field a in line 0 is not a "
                                                                 "valid int64"):
            sess.run(not_a_number.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Invalid content in .*gap.txt: empty line found at position 3"):
            sess.run(empty_line.initializer)
        with pytest.raises(tf.errors.NotFoundError, match="nope"):
            sess.run(missing_file.initializer)
    with pytest.raises(ValueError, match="must be int64"):
        tf.lookup.TextFileInitializer(pairs, tf.string, tf.lookup.TextFileIndex.LINE_NUMBER,
                                      tf.int64, 0)


def test_mutable_tables():
    table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.string, "none")
    vectors = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, [0.0, 0.0])
    dense = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0,
                                                  deleted_key=-1)
    with tf.Session() as sess:
        sess.run(table.insert(tf.constant([1, 2, 3], tf.int64), tf.constant(["a", "b", "c"])))
        sess.run(table.remove(tf.constant([2, 9], tf.int64)))
        assert sess.run(table.lookup(tf.constant([1, 2, 3], tf.int64))).tolist() == [
            b"a", b"none", b"c"]
        assert sess.run(table.size()) == 2
        keys, values = sess.run(table.export())
        assert keys.tolist() == [1, 3] and values.tolist() == [b"a", b"c"]
        sess.run(vectors.insert(tf.constant(["p"]), tf.constant([[1.0, 2.0]])))
        assert sess.run(vectors.lookup(tf.constant(["p", "q"]))).tolist() == [[1.0, 2.0],
                                                                               [0.0, 0.0]]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Expected shape \[1,2\] for value"):
            sess.run(vectors.insert(tf.constant(["p"]), tf.constant([[1.0, 2.0, 3.0]])))
        sess.run(dense.insert(tf.constant([5, 6], tf.int64), tf.constant([50, 60], tf.int64)))
        assert sess.run(dense.lookup(tf.constant([6, 7], tf.int64))).tolist() == [60, -1]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Using the empty_key as a table key"):
            sess.run(dense.insert(tf.constant([0], tf.int64), tf.constant([1], tf.int64)))
        sess.run(table.import_(tf.constant([7], tf.int64), tf.constant(["g"])))
        assert sess.run(table.size()) == 1


def test_table_in_dataset_map(tmp_path):
    table = tf.lookup.StaticVocabularyTable(
        tf.lookup.TextFileInitializer(_vocab(tmp_path), tf.string, -2, tf.int64, -1), 2)
    dataset = tf.data.Dataset.from_tensor_slices(["king", "lake", "crimson"]).map(table.lookup)
    iterator = tf.data.make_initializable_iterator(dataset)
    element = iterator.get_next()
    with tf.Session() as sess:
        sess.run([tf.tables_initializer(), iterator.initializer])
        assert [sess.run(element) for _ in range(3)] == [3, 1, 4]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element)


def test_contrib_lookup(tmp_path):
    ids = tf.contrib.lookup.index_table_from_tensor(tf.constant(["x", "y", "z"]),
                                                    default_value=-5)
    words = tf.contrib.lookup.index_to_string_table_from_tensor(["x", "y", "z"])
    from_file = tf.contrib.lookup.index_table_from_file(_vocab(tmp_path), num_oov_buckets=1)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(ids.lookup(tf.constant(["z", "w", "x"]))).tolist() == [2, -5, 0]
        assert sess.run(words.lookup(tf.constant([1, 7], tf.int64))).tolist() == [b"y", b"UNK"]
        assert sess.run(from_file.lookup(tf.constant(["palmer", "??"]))).tolist() == [2, 5]
    assert isinstance(ids, tf.contrib.lookup.HashTable)


def test_saver_saves_mutable_tables_under_tensorflows_keys(tmp_path):
    with tf.Graph().as_default():
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1, name="vocab")
        v = tf.Variable([1.0], name="v")
        insert = table.insert(tf.constant(["a", "b"]), tf.constant([3, 4], tf.int64))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run([v.initializer, insert])
            path = saver.save(sess, str(tmp_path / "model"))
    assert tf.train.list_variables(path) == [("v", [1]), ("vocab-keys", [2]),
                                             ("vocab-values", [2])]
    with tf.Graph().as_default():
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1, name="vocab")
        tf.Variable([0.0], name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(table.lookup(tf.constant(["b", "a", "c"]))).tolist() == [4, 3, -1]


@requires_tensorflow
def test_tensorflow_saver_checkpoint_with_a_table_restores(tmp_path):
    run_tensorflow("""
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, 0.0, name="t")
        insert = table.insert(tf.constant([7, 8], tf.int64), tf.constant([0.5, 1.5]))
        with tf.compat.v1.Session() as sess:
            sess.run(insert)
            tf.compat.v1.train.Saver().save(sess, "./tf1")
    """, tmp_path)
    table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, 0.0, name="t")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, str(tmp_path / "tf1"))
        assert sess.run(table.lookup(tf.constant([8, 7, 1], tf.int64))).tolist() == [1.5, 0.5,
                                                                                      0.0]


@requires_tensorflow
def test_tensorflow_saved_model_with_vocabulary_tables_runs(tmp_path):
    (tmp_path / "vocab.txt").write_text("red\ngreen\nblue\n")
    expected = run_tensorflow("""
        import json
        import tensorflow as tf

        class Model(tf.Module):
            def __init__(self):
                self.ids = tf.lookup.StaticVocabularyTable(
                    tf.lookup.TextFileInitializer("vocab.txt", tf.string, -2, tf.int64, -1), 2)
                self.scores = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1.5, 2.5])),
                    -1.0)

            @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
            def __call__(self, words):
                return {"ids": self.ids.lookup(words), "scores": self.scores.lookup(words)}

        model = Model()
        tf.saved_model.save(model, "saved", signatures=model.__call__)
        out = model(tf.constant(["green", "zz", "a"]))
        print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
    """, tmp_path)
    (tmp_path / "vocab.txt").unlink()  # the SavedModel reads its own copy, in assets/
    with tf.Graph().as_default():
        loaded = tf.saved_model.load(str(tmp_path / "saved"))
        out = loaded.signatures["serving_default"](
            words=np.array([b"green", b"zz", b"a"], dtype=object))
    assert {k: v.tolist() for k, v in out.items()} == json.loads(expected)


def test_sparse_keys_keep_their_indices():
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64)), 0)
    keys = tf.SparseTensor([[0, 1], [2, 0]], tf.constant(["b", "q"]), [3, 2])
    ids = table.lookup(keys)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        value = sess.run(ids)
    assert value.indices.tolist() == [[0, 1], [2, 0]] and value.values.tolist() == [2, 0]
    assert value.dense_shape.tolist() == [3, 2]
