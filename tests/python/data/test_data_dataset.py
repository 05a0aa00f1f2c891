"""tf.data in graph mode: sources, transformations, iterators, element specs and errors. Every
pipeline runs in the C++ dataset ops; expected values come from plain Python."""

import collections

import numpy as np
import pytest

import flowstone as tf


def _drain(next_element, sess, limit=10000):
    """Every element until OutOfRangeError (which must say "End of sequence")."""
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


def _ints(dataset):
    return [int(v) for v in _values(dataset)]


def test_from_tensor_slices_of_a_tuple_and_a_dict():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(6).reshape(3, 2), [b"a", b"b", b"c"]))
    assert ds.output_types == (tf.int64, tf.string)
    assert [s.as_list() for s in ds.output_shapes] == [[2], []]
    got = _values(ds)
    assert [(list(x), s) for x, s in got] == [([0, 1], b"a"), ([2, 3], b"b"), ([4, 5], b"c")]
    ds = tf.data.Dataset.from_tensor_slices({"x": [1.5, 2.5], "y": [[1], [2]]})
    assert ds.output_types == {"x": tf.float32, "y": tf.int32}
    got = _values(ds)
    assert [(float(e["x"]), e["y"].tolist()) for e in got] == [(1.5, [1]), (2.5, [2])]


def test_from_tensors_and_element_spec():
    ds = tf.data.Dataset.from_tensors(([1, 2, 3], "s"))
    assert ds.element_spec == (tf.TensorSpec([3], tf.int32), tf.TensorSpec([], tf.string))
    got = _values(ds)
    assert len(got) == 1 and got[0][0].tolist() == [1, 2, 3] and got[0][1] == b"s"


def test_range_forms():
    assert _ints(tf.data.Dataset.range(4)) == [0, 1, 2, 3]
    assert _ints(tf.data.Dataset.range(2, 5)) == [2, 3, 4]
    assert _ints(tf.data.Dataset.range(10, 0, -3)) == [10, 7, 4, 1]
    assert tf.data.Dataset.range(3).output_types == tf.int64


def test_map_with_a_captured_tensor_and_a_tuple_element():
    scale = tf.constant(10, tf.int64)
    ds = tf.data.Dataset.range(4).map(lambda x: (x * scale, tf.cast(x, tf.float32) / 2))
    assert ds.output_types == (tf.int64, tf.float32)
    ds = ds.map(lambda a, b: a + tf.cast(b * 2, tf.int64))
    assert _ints(ds) == [0, 11, 22, 33]


def test_parallel_map_keeps_input_order():
    ds = tf.data.Dataset.range(50).map(lambda x: x * x, num_parallel_calls=4)
    assert _ints(ds) == [i * i for i in range(50)]
    ds = tf.data.Dataset.range(20).map(lambda x: x + 1,
                                       num_parallel_calls=tf.data.experimental.AUTOTUNE,
                                       deterministic=False)
    assert _ints(ds) == list(range(1, 21))


def test_filter_flat_map_and_interleave():
    assert _ints(tf.data.Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0))) == [0, 3, 6, 9]
    flat = tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.range(x))
    assert _ints(flat) == [0, 0, 1]
    inter = tf.data.Dataset.range(1, 4).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(3), cycle_length=2, block_length=2)
    # TensorFlow's order for this pipeline (checked with TF 2): blocks of two from the datasets
    # of 1 and 2, their last elements, then 3's dataset in the freed slot.
    assert _ints(inter) == [1, 1, 2, 2, 1, 2, 3, 3, 3]


def test_filter_predicate_must_return_a_scalar_bool():
    with pytest.raises(ValueError, match="must return a `tf.bool` scalar"):
        tf.data.Dataset.range(3).filter(lambda x: x)


def test_batch_with_and_without_remainder():
    ds = tf.data.Dataset.range(7).batch(3)
    assert ds.output_shapes.as_list() == [None]
    assert [b.tolist() for b in _values(ds)] == [[0, 1, 2], [3, 4, 5], [6]]
    ds = tf.data.Dataset.range(7).batch(3, drop_remainder=True)
    assert ds.output_shapes.as_list() == [3]
    assert [b.tolist() for b in _values(ds)] == [[0, 1, 2], [3, 4, 5]]
    strings = tf.data.Dataset.from_tensor_slices([b"a", b"bb", b"ccc"]).batch(2)
    assert [b.tolist() for b in _values(strings)] == [[b"a", b"bb"], [b"ccc"]]


def test_batch_of_different_shapes_names_the_component_and_the_transformation():
    ds = tf.data.Dataset.range(1, 3).map(lambda x: tf.fill([x], x)).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _values(ds)
    message = str(info.value)
    assert "Cannot batch tensors with different shapes in component 0" in message
    assert "BatchDatasetV2" in message


def test_repeat_take_skip_shard_concatenate_zip_enumerate():
    r = tf.data.Dataset.range(3)
    assert _ints(r.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert _ints(r.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert _ints(r.skip(1)) == [1, 2]
    assert _ints(r.take(-1)) == [0, 1, 2]
    assert _ints(tf.data.Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert _ints(r.concatenate(tf.data.Dataset.range(5, 7))) == [0, 1, 2, 5, 6]
    zipped = _values(tf.data.Dataset.zip((r, tf.data.Dataset.range(10, 20))))
    assert [(int(a), int(b)) for a, b in zipped] == [(0, 10), (1, 11), (2, 12)]
    numbered = _values(tf.data.Dataset.from_tensor_slices([b"x", b"y"]).enumerate(5))
    assert [(int(i), v) for i, v in numbered] == [(5, b"x"), (6, b"y")]
    assert _ints(tf.data.Dataset.range(0).repeat()) == []


def test_shuffle_is_a_permutation_reproducible_with_a_seed_and_reshuffled_per_epoch():
    ds = tf.data.Dataset.range(100).shuffle(20, seed=7)
    first = _ints(ds)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    assert _ints(tf.data.Dataset.range(100).shuffle(20, seed=7)) == first
    epochs = _ints(tf.data.Dataset.range(30).shuffle(30, seed=3).repeat(2))
    assert sorted(epochs[:30]) == sorted(epochs[30:]) == list(range(30))
    assert epochs[:30] != epochs[30:]
    fixed = _ints(tf.data.Dataset.range(30).shuffle(30, seed=3, reshuffle_each_iteration=False)
                  .repeat(2))
    assert fixed[:30] == fixed[30:]
    # A buffer of one keeps the order.
    assert _ints(tf.data.Dataset.range(5).shuffle(1)) == [0, 1, 2, 3, 4]


def test_prefetch_gives_every_element_in_order():
    ds = tf.data.Dataset.range(200).map(lambda x: x * 2).prefetch(
        tf.data.experimental.AUTOTUNE)
    assert _ints(ds) == [2 * i for i in range(200)]
    assert _ints(tf.data.Dataset.range(3).prefetch(0)) == [0, 1, 2]


def test_initializable_iterator_restarts_with_a_new_feed():
    limit = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(limit).map(lambda x: x + 100).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer, {limit: 3})
        assert [int(v) for v in _drain(nxt, sess)] == [100, 101, 102]
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(nxt)
        sess.run(it.initializer, {limit: 2})
        assert [int(v) for v in _drain(nxt, sess)] == [100, 101]


def test_reinitializable_iterator_from_structure():
    train = tf.data.Dataset.range(3).map(lambda x: (x, tf.cast(x, tf.float32)))
    test = tf.data.Dataset.range(10, 12).map(lambda x: (x, tf.cast(x, tf.float32)))
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    a, b = it.get_next()
    assert a.dtype == tf.int64 and b.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(it.make_initializer(train))
        assert [int(v) for v, _ in _drain((a, b), sess)] == [0, 1, 2]
        sess.run(it.make_initializer(test))
        assert [float(f) for _, f in _drain((a, b), sess)] == [10.0, 11.0]
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(tf.data.Dataset.range(2).map(lambda x: (x, x)))
    with pytest.raises(ValueError, match="does not have an initializer"):
        it.initializer  # noqa: B018


def test_one_shot_iterator_copies_constants_and_rejects_placeholders():
    table = tf.constant([5, 6, 7])
    assert _ints(tf.data.Dataset.from_tensor_slices(table)) == [5, 6, 7]
    p = tf.placeholder(tf.int32, [3])
    with pytest.raises(ValueError, match="make_initializable_iterator"):
        tf.data.Dataset.from_tensor_slices(p).make_one_shot_iterator()


def test_two_sessions_iterate_independently():
    nxt = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
    with tf.Session() as a, tf.Session() as b:
        assert int(a.run(nxt)) == 0 and int(a.run(nxt)) == 1
        assert int(b.run(nxt)) == 0


def test_a_failing_map_function_names_the_transformation_and_its_node():
    ds = tf.data.Dataset.range(3).map(lambda x: tf.gather(tf.constant([1, 2]), x))
    with tf.Session() as sess:
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        assert int(sess.run(nxt)) == 1
        assert int(sess.run(nxt)) == 2
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(nxt)
        message = str(info.value)
        assert "indices = 2 is not in [0, 2)" in message
        assert "MapDataset" in message and "in function" in message
        # The session stays usable, and the iterator goes on after the failed element.
        assert int(sess.run(tf.constant(1))) == 1
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(nxt)


def test_namedtuple_elements_keep_their_type():
    Point = collections.namedtuple("Point", ["x", "y"])
    ds = tf.data.Dataset.from_tensor_slices(Point([1, 2], [3, 4])).map(
        lambda p: Point(p.y, p.x))
    assert isinstance(ds.output_types, Point)
    got = _values(ds)
    assert [(int(p.x), int(p.y)) for p in got] == [(3, 1), (4, 2)]


def _resident_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_shuffle_with_a_large_buffer_keeps_memory_bounded_over_ten_epochs():
    # 2 KiB elements through a 10000-element buffer (about 20 MiB) for ten epochs: what stays
    # resident after the first epoch must not grow with the epochs.
    per_epoch, batch = 20000, 500
    dataset = (tf.data.Dataset.range(per_epoch).map(lambda x: tf.fill([256], x))
               .shuffle(10000, seed=1).repeat(10).batch(batch))
    next_batch = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        seen = 0
        after_first_epoch = None
        while True:
            try:
                values = sess.run(next_batch)
            except tf.errors.OutOfRangeError:
                break
            seen += len(values)
            assert (values == values[:, :1]).all()  # every row is one repeated value
            if seen == 2 * per_epoch:
                after_first_epoch = _resident_bytes()
        assert seen == 10 * per_epoch
        growth = _resident_bytes() - after_first_epoch
    assert growth < 32 * 2**20, f"resident memory grew by {growth / 2**20:.1f} MiB over 8 epochs"


def test_padded_batch_pads_to_the_largest_or_to_the_given_shape():
    ragged = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x))
    got = [b.tolist() for b in _values(ragged.padded_batch(2, padded_shapes=[None]))]
    assert got == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    fixed = ragged.padded_batch(3, padded_shapes=[4], padding_values=tf.constant(-1, tf.int64))
    assert fixed.output_shapes.as_list() == [None, 4]
    assert [b.tolist() for b in _values(fixed)] == [[[1, -1, -1, -1], [2, 2, -1, -1],
                                                     [3, 3, 3, -1]]]
    words = tf.data.Dataset.from_tensor_slices(([b"a", b"b"], [[1, 2], [3, 4]])).map(
        lambda w, v: (tf.fill([tf.size(v)], w), v[:1]))
    strings, numbers = _values(words.padded_batch(2, padded_shapes=([3], [2])))[0]
    assert strings.tolist() == [[b"a", b"a", b""], [b"b", b"b", b""]]
    assert numbers.tolist() == [[1, 0], [3, 0]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="pad to a smaller size"):
        _values(ragged.padded_batch(3, padded_shapes=[2]))


def test_cache_runs_its_input_once_across_epochs():
    # A stateful input (a counter variable incremented per element) shows whether the second
    # epoch re-ran it.
    counter = tf.Variable(0, dtype=tf.int64)

    def count(x):
        with tf.control_dependencies([counter.assign_add(1)]):
            return tf.identity(x)

    dataset = tf.data.Dataset.range(4).map(count).cache().repeat(3)
    iterator = dataset.make_initializable_iterator()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), iterator.initializer])
        values = [int(v) for v in _drain(iterator.get_next(), sess)]
        assert values == [0, 1, 2, 3] * 3
        assert int(sess.run(counter)) == 4
    with pytest.raises(tf.errors.UnimplementedError, match="only the in-memory cache"):
        _ints(tf.data.Dataset.range(2).cache("/tmp/cache-file"))


def test_options_are_carried_merged_and_checked_as_in_tensorflow(caplog):
    options = tf.data.Options()
    options.experimental_deterministic = False  # TensorFlow's older name of `deterministic`
    options.threading.private_threadpool_size = 2
    dataset = tf.data.Dataset.range(4).with_options(options).map(lambda x: x * 2)
    got = dataset.options()
    assert got.deterministic is False and got.threading.private_threadpool_size == 2
    assert got.experimental_threading.private_threadpool_size == 2
    again = tf.data.Options()
    again.deterministic = True
    with caplog.at_level("WARNING"):
        assert dataset.with_options(again).options().deterministic is True
    assert "Changing the value of option deterministic from False to True" in caplog.text
    with pytest.raises(AttributeError, match="Cannot set the property nonexistent on Options"):
        options.nonexistent = 1
    with pytest.raises(TypeError, match="must be a tf.data.Options"):
        dataset.with_options({"deterministic": False})
    # The options change no values: the pipeline stays deterministic.
    element = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(element) for _ in range(4)] == [0, 2, 4, 6]
    assert (tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY) == (-1, -2)
