"""tf.data's whole-dataset queries and stateful transformations in graph mode: cardinality,
get_single_element, scan, take_while, unique, counter. Values and cardinalities are compared with
TensorFlow's where its peer venv is installed; the rest come from plain Python."""

import json
import os
import sys

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import requires_tensorflow, run_tensorflow  # noqa: E402

Dataset = tf.data.Dataset


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _drain(next_element, sess, limit=10000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError as e:
            assert "End of sequence" in str(e)
            return out
    raise AssertionError("the iterator did not end")


def _values(dataset):
    with tf.Session() as sess:
        return _drain(tf.data.make_one_shot_iterator(dataset).get_next(), sess)


def _cardinality(dataset):
    with tf.Session() as sess:
        return int(sess.run(dataset.cardinality()))


# Pipelines over `D` (tf.data.Dataset) whose cardinality Flowstone and TensorFlow must agree on.
CARDINALITY_PIPELINES = {
    "D.range(10)": 10, "D.range(2, 9, 2)": 4, "D.range(9, 2, -3)": 3, "D.range(5, 5)": 0,
    "D.range(0, -5)": 0, "D.from_tensors([1, 2])": 1,
    "D.from_tensor_slices([[1, 2], [3, 4], [5, 6]])": 3,
    "D.range(10).repeat(3)": 30, "D.range(10).repeat()": -1, "D.range(0).repeat()": 0,
    "D.range(10).repeat(0)": 0, "D.range(10).take(3)": 3, "D.range(10).take(30)": 10,
    "D.range(10).take(-1)": 10, "D.range(10).repeat().take(7)": 7, "D.range(10).skip(3)": 7,
    "D.range(10).skip(30)": 0, "D.range(10).skip(-1)": 0, "D.range(10).repeat().skip(4)": -1,
    "D.range(10).shard(3, 0)": 4, "D.range(10).shard(3, 1)": 3, "D.range(10).shard(3, 2)": 3,
    "D.range(10).batch(3)": 4, "D.range(10).batch(3, drop_remainder=True)": 3,
    "D.range(9).batch(3)": 3, "D.range(10).padded_batch(4)": 3,
    "D.range(10).padded_batch(4, drop_remainder=True)": 2, "D.range(10).shuffle(4)": 10,
    "D.range(10).prefetch(2)": 10, "D.range(10).cache()": 10,
    "D.range(10).map(lambda x: x + 1)": 10,
    "D.range(10).map(lambda x: x * 2, num_parallel_calls=2)": 10,
    "D.range(10).filter(lambda x: x > 3)": -2,
    "D.range(10).flat_map(lambda x: D.from_tensors(x))": -2,
    "D.range(10).interleave(lambda x: D.from_tensors(x), cycle_length=2)": -2,
    "D.zip((D.range(10), D.range(4)))": 4, "D.zip((D.range(10), D.range(4).repeat()))": 10,
    "D.zip((D.range(3).repeat(), D.range(4).repeat()))": -1,
    "D.zip((D.range(10), D.range(4).filter(lambda x: x > 1)))": -2,
    "D.range(3).concatenate(D.range(4))": 7, "D.range(3).concatenate(D.range(4).repeat())": -1,
    "D.range(3).filter(lambda x: x > 1).concatenate(D.range(4))": -2,
    "D.range(3).repeat().concatenate(D.range(4).filter(lambda x: x > 1))": -1,
    "D.range(10).batch(4).unbatch()": -2, "D.range(12).batch(4, drop_remainder=True).unbatch()": 12,
    "D.range(10).window(3)": 4, "D.range(10).window(3, drop_remainder=True)": 3,
    "D.range(10).window(3, shift=2, stride=2, drop_remainder=True)": 3,
    "D.range(10).window(4, shift=3)": 4, "D.range(10).enumerate()": 10,
    "D.range(10).ignore_errors()": -2, "D.range(10).repeat().enumerate()": -1,
    "D.range(10).filter(lambda x: x > 3).repeat()": -1,
    "D.range(10).filter(lambda x: x > 3).take(2)": -2,
    "D.range(10).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s))": 10, "D.counter()": -1,
    "D.range(10).take_while(lambda x: x < 4)": -2, "D.range(10).unique()": -2,
    "D.from_generator(lambda: iter([1, 2]), output_types=tf.int64)": -2,
    "D.range(5).group_by_window(lambda x: x % 2, lambda k, w: w.batch(2), 2)": -2,
    "D.choose_from_datasets([D.range(3), D.range(4)], D.range(2))": -2,
    "D.choose_from_datasets([D.range(3), D.range(4).repeat()], D.range(2))": -1,
    "D.sample_from_datasets([D.range(3), D.range(4)])": -2, "D.random(3)": -1,
}


def test_cardinality_of_every_kind_of_dataset():
    got = {}
    for source in CARDINALITY_PIPELINES:
        tf.reset_default_graph()
        got[source] = _cardinality(eval(source, {"D": Dataset, "tf": tf, "np": np}))  # noqa: S307 (test data)
    assert got == CARDINALITY_PIPELINES
    assert tf.data.INFINITE_CARDINALITY == tf.data.experimental.INFINITE_CARDINALITY == -1
    assert tf.data.UNKNOWN_CARDINALITY == tf.data.experimental.UNKNOWN_CARDINALITY == -2
    tf.reset_default_graph()
    card = tf.data.experimental.cardinality(Dataset.range(7).batch(2))
    assert card.dtype == tf.int64 and card.shape.as_list() == []
    with tf.Session() as sess:
        assert sess.run(card) == 4


def test_cardinality_follows_a_fed_count():
    count = tf.placeholder(tf.int64, [])
    card = Dataset.range(10).take(count).cardinality()
    with tf.Session() as sess:
        assert sess.run(card, {count: 4}) == 4
        assert sess.run(card, {count: -1}) == 10


@requires_tensorflow
def test_cardinality_equals_tensorflows():
    theirs = json.loads(run_tensorflow(f"""
        import json
        import tensorflow as tf
        D = tf.data.Dataset
        print(json.dumps({{s: int(eval(s).cardinality()) for s in {list(CARDINALITY_PIPELINES)!r}}}))
    """).strip().splitlines()[-1])
    assert theirs == CARDINALITY_PIPELINES


def test_map_keeps_cardinality_so_an_end_from_its_function_is_an_error():
    def stop(_):
        raise StopIteration

    ds = Dataset.range(3).map(lambda x: tf.py_func(stop, [x], tf.int64))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Function invocation produced OutOfRangeError"):
            sess.run(tf.data.make_one_shot_iterator(ds).get_next())
    # from_generator's own map may still end its dataset.
    assert [int(v) for v in _values(Dataset.from_generator(lambda: iter([4, 5]), tf.int64))] == [
        4, 5]


def test_get_single_element_of_a_structure():
    ds = Dataset.from_tensors(({"a": tf.constant([1.5, 2.5])}, tf.constant(b"s")))
    element = ds.get_single_element()
    assert element[0]["a"].shape.as_list() == [2] and element[1].dtype == tf.string
    same = tf.data.experimental.get_single_element(Dataset.range(5).skip(4).map(lambda x: x * 3))
    with tf.Session() as sess:
        got = sess.run(element)
        assert got[0]["a"].tolist() == [1.5, 2.5] and got[1] == b"s"
        assert sess.run(same) == 12


def test_get_single_element_errors():
    empty = Dataset.range(0).get_single_element()
    two = Dataset.range(2).get_single_element()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty"):
            sess.run(empty)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Dataset had more than one element"):
            sess.run(two)
    with pytest.raises(TypeError, match="Expected a `tf.data.Dataset`"):
        tf.data.experimental.get_single_element([1, 2])


def test_scan_running_sum_with_a_structured_state():
    ds = Dataset.range(1, 6).scan((tf.constant(0, tf.int64), tf.constant(1, tf.int64)),
                                  lambda s, x: ((s[0] + x, s[1] * x), (s[0] + x, s[1] * x)))
    assert ds.output_types == (tf.int64, tf.int64)
    assert [(int(a), int(b)) for a, b in _values(ds)] == [(1, 1), (3, 2), (6, 6), (10, 24),
                                                          (15, 120)]
    # A state whose shape grows is traced again with the shape relaxed, as TF does.
    grow = Dataset.range(3).scan(tf.constant([], tf.int64),
                                 lambda s, x: (tf.concat([s, [x]], 0), tf.size(s)))
    assert [int(v) for v in _values(grow)] == [0, 1, 2]
    assert [int(v) for v in _values(Dataset.range(4).apply(tf.data.experimental.scan(
        tf.constant(10, tf.int64), lambda s, x: (s - x, s))))] == [10, 10, 9, 7]


def test_scan_errors():
    with pytest.raises(TypeError, match="`scan_func` should return a pair"):
        Dataset.range(3).scan(tf.constant(0, tf.int64), lambda s, x: s + x)
    with pytest.raises(TypeError, match="must match the initial state"):
        Dataset.range(3).scan(tf.constant(0, tf.int64), lambda s, x: (tf.cast(s, tf.float32), x))


def test_counter_and_enumerate():
    first = _values(Dataset.counter(5, 3).take(4))
    assert [int(v) for v in first] == [5, 8, 11, 14]
    floats = Dataset.counter(0.5, 0.25, dtype=tf.float32).take(3)
    assert floats.output_types == tf.float32
    assert [float(v) for v in _values(floats)] == [0.5, 0.75, 1.0]
    assert [int(v) for v in _values(tf.data.experimental.Counter(2).take(2))] == [2, 3]
    pairs = _values(Dataset.from_tensor_slices([b"a", b"b"]).enumerate(start=7))
    assert [(int(i), s) for i, s in pairs] == [(7, b"a"), (8, b"b")]
    pairs = _values(Dataset.range(3, 5).apply(tf.data.experimental.enumerate_dataset()))
    assert [(int(i), int(x)) for i, x in pairs] == [(0, 3), (1, 4)]


def test_take_while_stops_for_good_at_the_first_false():
    ds = Dataset.from_tensor_slices([1, 3, 5, 2, 7, 1]).take_while(lambda x: tf.equal(x % 2, 1))
    assert [int(v) for v in _values(ds)] == [1, 3, 5]
    pairs = Dataset.zip((Dataset.range(10), Dataset.range(10, 20)))
    got = _values(pairs.apply(tf.data.experimental.take_while(lambda a, b: a + b < 15)))
    assert [(int(a), int(b)) for a, b in got] == [(0, 10), (1, 11), (2, 12)]
    with pytest.raises(ValueError, match="must return a `tf.bool` scalar"):
        Dataset.range(3).take_while(lambda x: x)


def test_unique_of_ints_and_strings():
    ints = Dataset.from_tensor_slices(np.array([3, 1, 3, 2, 1, 5], np.int32)).unique()
    assert [int(v) for v in _values(ints)] == [3, 1, 2, 5]
    words = Dataset.from_tensor_slices([b"b", b"a", b"b", b"", b"a"]).apply(
        tf.data.experimental.unique())
    assert _values(words) == [b"b", b"a", b""]
    rows = Dataset.from_tensor_slices(np.array([[1, 2], [1, 2], [2, 1]], np.int64)).unique()
    assert [v.tolist() for v in _values(rows)] == [[1, 2], [2, 1]]
    with pytest.raises(TypeError, match="does not support type"):
        Dataset.range(3).map(lambda x: tf.cast(x, tf.float32)).unique()
    with pytest.raises(TypeError, match="does not support type"):
        Dataset.zip((Dataset.range(2), Dataset.range(2))).unique()


def test_graph_mode_refuses_eager_only_methods():
    ds = Dataset.range(3)
    with pytest.raises(RuntimeError, match="only supported in eager mode"):
        ds.as_numpy_iterator()
    with pytest.raises(TypeError, match="only supports `len` in eager mode"):
        len(ds)
    assert ds  # a dataset is true even though len() is refused


# Pipelines whose elements Flowstone and TensorFlow must agree on.
VALUE_PIPELINES = [
    "D.range(1, 8).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s * 2))",
    "D.from_tensor_slices([1, 3, 5, 2, 7]).take_while(lambda x: tf.equal(x % 2, 1))",
    "D.from_tensor_slices([4, 1, 4, 4, 9, 1, 0]).unique()",
    "D.counter(3, -2).take(5)",
    "D.range(3).enumerate(start=4).map(lambda i, x: i * 10 + x)",
    "D.from_tensor_slices(tf.constant([5, 2, 8, 1, 3, 9, 4, 7, 6], tf.int64)).group_by_window("
    "lambda x: x % 3, lambda k, w: w.batch(4), window_size=2)",
    "D.from_tensor_slices(tf.constant([5, 2, 8, 1, 3, 9, 4, 7, 6], tf.int64)).group_by_window("
    "lambda x: x % 3, lambda k, w: w.batch(4).map(lambda b: b * 10 + k), "
    "window_size_func=lambda k: k + 2)",
    "D.from_generator(lambda: ([1] * n for n in [3, 1, 5, 2, 7, 4, 6, 2]), "
    "output_signature=tf.TensorSpec([None], tf.int32)).bucket_by_sequence_length("
    "lambda x: tf.shape(x)[0], [3, 5], [2, 2, 3])",
    "D.from_generator(lambda: ([1] * n for n in [3, 1, 5, 2, 7, 4, 6, 2]), "
    "output_signature=tf.TensorSpec([None], tf.int32)).bucket_by_sequence_length("
    "lambda x: tf.shape(x)[0], [3, 8], [2, 2, 3], pad_to_bucket_boundary=True)",
    "D.range(7).map(lambda x: tf.stack([x, x])).bucket_by_sequence_length("
    "lambda x: tf.cast(x[0], tf.int32), [2, 4], [2, 3, 1], no_padding=True, "
    "drop_remainder=True)",
    "D.choose_from_datasets([D.range(3), D.range(10, 12)], "
    "D.from_tensor_slices(tf.constant([0, 1, 1, 1, 0, 0, 0], tf.int64)))",
    "D.choose_from_datasets([D.range(3), D.range(10, 12)], "
    "D.from_tensor_slices(tf.constant([0, 1, 1, 1, 0, 0, 0], tf.int64)), "
    "stop_on_empty_dataset=False)",
    "tf.data.experimental.choose_from_datasets([D.range(3), D.range(10, 12).repeat()], "
    "D.from_tensor_slices(tf.constant([0, 1, 1, 1, 0, 0, 0], tf.int64)))",
]


@requires_tensorflow
def test_values_equal_tensorflows():
    ours = {}
    for source in VALUE_PIPELINES:
        tf.reset_default_graph()
        ours[source] = [np.asarray(v).tolist() for v in _values(eval(source, {"D": Dataset, "tf": tf, "np": np}))]  # noqa: S307
    theirs = json.loads(run_tensorflow(f"""
        import json
        import numpy as np
        import tensorflow as tf
        D = tf.data.Dataset
        print(json.dumps({{s: [np.asarray(v).tolist() for v in eval(s).as_numpy_iterator()]
                          for s in {VALUE_PIPELINES!r}}}))
    """).strip().splitlines()[-1])
    assert ours == theirs


def test_group_by_window_errors():
    with pytest.raises(ValueError, match="Either the `window_size` argument or the "
                                         "`window_size_func`"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w)
    with pytest.raises(ValueError, match="`key_func` must return a single `tf.int64`"):
        Dataset.range(3).group_by_window(lambda x: tf.cast(x, tf.int32), lambda k, w: w, 2)
    with pytest.raises(TypeError, match="must return a `tf.data.Dataset`"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: k, 2)
    zero = Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w, window_size_func=lambda k: k)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Window size must be greater than zero, but got 0"):
            sess.run(tf.data.make_one_shot_iterator(zero).get_next())
    with pytest.raises(ValueError, match="must equal `len.bucket_boundaries. \\+ 1`"):
        Dataset.range(3).bucket_by_sequence_length(lambda x: x, [2, 4], [1, 2])


def test_choose_from_datasets_errors():
    with pytest.raises(ValueError, match="`datasets` should not be empty"):
        Dataset.choose_from_datasets([], Dataset.range(2))
    with pytest.raises(TypeError, match="must be scalar `tf.int64` tensors"):
        Dataset.choose_from_datasets([Dataset.range(2)], Dataset.range(2).map(
            lambda x: tf.cast(x, tf.int32)))
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        Dataset.choose_from_datasets([Dataset.range(2), Dataset.from_tensors(1.5)],
                                     Dataset.range(2))
    bad = Dataset.choose_from_datasets([Dataset.range(2)], Dataset.from_tensors(np.int64(3)))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Selector index out of range"):
            sess.run(tf.data.make_one_shot_iterator(bad).get_next())


def test_sample_from_datasets_draws_by_weight_and_repeats_with_a_seed():
    ones, twos = Dataset.from_tensors(np.int64(1)).repeat(), Dataset.from_tensors(
        np.int64(2)).repeat()
    sampled = Dataset.sample_from_datasets([ones, twos], weights=[0.8, 0.2], seed=11).take(2000)
    first = [int(v) for v in _values(sampled)]
    assert 0.75 < first.count(1) / len(first) < 0.85
    assert [int(v) for v in _values(sampled)] == first  # seeded: the same draws again
    uniform = [int(v) for v in _values(tf.data.experimental.sample_from_datasets(
        [ones, twos], seed=5).take(2000))]
    assert 0.45 < uniform.count(1) / len(uniform) < 0.55
    # Weights given as a dataset: all of one input, then all of the other.
    weights = Dataset.from_tensors(tf.constant([1.0, 0.0])).repeat(3).concatenate(
        Dataset.from_tensors(tf.constant([0.0, 1.0])).repeat(2))
    assert [int(v) for v in _values(Dataset.sample_from_datasets(
        [ones, twos], weights=weights, seed=1))] == [1, 1, 1, 2, 2]
    # The inputs end: the rest come from the others (stop_on_empty_dataset=False).
    finite = Dataset.sample_from_datasets([Dataset.range(3), Dataset.range(10, 13)], seed=2)
    assert sorted(int(v) for v in _values(finite)) == [0, 1, 2, 10, 11, 12]
    with pytest.raises(ValueError, match="should have the same length as `datasets`"):
        Dataset.sample_from_datasets([ones, twos], weights=[1.0])
    assert Dataset.sample_from_datasets([ones]) is ones


def test_random_dataset_is_endless_int64_and_seeded():
    ds = Dataset.random(seed=4).take(5)
    assert ds.output_types == tf.int64 and ds.output_shapes.as_list() == []
    first = [int(v) for v in _values(ds)]
    assert len(set(first)) == 5
    assert [int(v) for v in _values(Dataset.random(seed=4).take(5))] == first
    assert [int(v) for v in _values(tf.data.experimental.RandomDataset(4).take(5))] == first


def test_assert_cardinality():
    ds = Dataset.range(4).filter(lambda x: x < 10).apply(
        tf.data.experimental.assert_cardinality(4))
    assert _cardinality(ds) == 4
    assert [int(v) for v in _values(ds)] == [0, 1, 2, 3]
    for expected, message in [(3, "expected to contain 3 elements but contained at least 4 "
                                   "elements"),
                              (5, "expected to contain 5 elements but contained only 4 "
                                  "elements"),
                              (-1, "an infinite number of elements but contained only 4")]:
        tf.reset_default_graph()
        bad = Dataset.range(4).apply(tf.data.experimental.assert_cardinality(expected))
        with pytest.raises(tf.errors.FailedPreconditionError, match=message):
            _values(bad)


def test_batch_takes_tf2s_parallel_arguments():
    ds = Dataset.range(5).batch(2, num_parallel_calls=2, deterministic=True)
    assert [v.tolist() for v in _values(ds)] == [[0, 1], [2, 3], [4]]
