"""tf.data: from_generator, unbatch, window (windows are datasets), ignore_errors and the
tf.data.experimental transformations. Expected values come from plain Python."""

import numpy as np
import pytest

import flowstone as tf

Dataset = tf.data.Dataset


def _drain(next_element, sess):
    out = []
    while True:
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError as e:
            assert "End of sequence" in str(e)
            return out


def _values(dataset):
    with tf.Session() as sess:
        return _drain(tf.data.make_one_shot_iterator(dataset).get_next(), sess)


def test_from_generator_with_types_and_shapes():
    def gen():
        for i in range(4):
            yield i, [float(i)] * i

    ds = Dataset.from_generator(gen, (tf.int64, tf.float32), (tf.TensorShape([]),
                                                              tf.TensorShape([None])))
    assert ds.output_types == (tf.int64, tf.float32)
    assert [s.as_list() for s in ds.output_shapes] == [[], [None]]
    got = _values(ds)
    assert [int(i) for i, _ in got] == [0, 1, 2, 3]
    assert [v.tolist() for _, v in got] == [[], [1.0], [2.0, 2.0], [3.0, 3.0, 3.0]]
    assert got[1][1].dtype == np.float32


def test_from_generator_with_output_signature_args_and_strings():
    def gen(n, word):
        for i in range(int(n)):
            yield {"i": i, "word": word.decode() + str(i)}

    ds = Dataset.from_generator(gen, output_signature={
        "i": tf.TensorSpec([], tf.int32), "word": tf.TensorSpec([], tf.string)},
        args=(3, b"w"))
    got = _values(ds.batch(2))
    assert [b["i"].tolist() for b in got] == [[0, 1], [2]]
    assert [b["word"].tolist() for b in got] == [[b"w0", b"w1"], [b"w2"]]


def test_from_generator_restarts_with_the_iterator():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)

    iterator = Dataset.from_generator(gen, tf.int64).make_initializable_iterator()
    nxt = iterator.get_next()
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(iterator.initializer)
            assert [int(v) for v in _drain(nxt, sess)] == [0, 1, 2]
    assert len(calls) == 2


def test_from_generator_of_a_wrong_shape_names_both_shapes():
    ds = Dataset.from_generator(lambda: iter([[1, 2, 3]]), tf.int64, tf.TensorShape([2]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"yielded an element of shape \(3,\) where an element of shape "
                             r"\(2,\) was expected"):
        _values(ds)


def test_from_generator_needs_types():
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(lambda: iter([1]))


def test_unbatch_is_the_inverse_of_batch():
    ds = Dataset.range(7).map(lambda x: (x, x * 2)).batch(3).unbatch()
    assert [s.as_list() for s in ds.output_shapes] == [[], []]
    assert [(int(a), int(b)) for a, b in _values(ds)] == [(i, 2 * i) for i in range(7)]
    ds = Dataset.range(4).batch(2).apply(tf.data.experimental.unbatch())
    assert [int(v) for v in _values(ds)] == [0, 1, 2, 3]


def test_unbatch_refuses_scalars():
    with pytest.raises(ValueError, match="scalar components"):
        Dataset.range(3).unbatch()


@pytest.mark.parametrize("size, shift, stride, drop", [
    (3, None, 1, False), (3, 2, 1, False), (3, 2, 1, True), (2, 3, 2, False), (4, 1, 2, True),
    (2, 5, 1, False)])
def test_window_flat_map_batch_matches_python(size, shift, stride, drop):
    n = 10
    shift_ = size if shift is None else shift
    expected = []
    for start in range(0, n, shift_):
        window = list(range(start, n, stride))[:size]
        if window and (len(window) == size or not drop):
            expected.append(window)
    ds = Dataset.range(n).window(size, shift, stride, drop).flat_map(lambda w: w.batch(size))
    assert [v.tolist() for v in _values(ds)] == expected


def test_window_of_a_tuple_gives_a_tuple_of_datasets():
    ds = Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 10)).window(2)
    assert isinstance(ds.element_spec, tuple)
    assert isinstance(ds.element_spec[0], tf.data.DatasetSpec)
    ds = ds.flat_map(lambda a, b: Dataset.zip((a.batch(2), b.batch(2))))
    got = [(a.tolist(), b.tolist()) for a, b in _values(ds)]
    assert got == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4], [40])]


def test_window_arguments_must_be_positive():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Window shift must be greater"):
        _values(Dataset.range(3).window(2, 0).flat_map(lambda w: w))


def test_ignore_errors_drops_failing_elements():
    ds = Dataset.from_tensor_slices([1.0, 0.0, 2.0, -1.0, 4.0]).map(
        lambda x: tf.debugging.check_numerics(tf.math.log(x), "log"))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _values(ds)
    got = _values(ds.apply(tf.data.experimental.ignore_errors()))
    np.testing.assert_allclose(got, np.log([1.0, 2.0, 4.0]), rtol=1e-6)
    assert len(_values(ds.ignore_errors())) == 3


def test_map_and_batch_equals_map_then_batch():
    ds = Dataset.range(10).apply(tf.data.experimental.map_and_batch(
        lambda x: x * x, 4, num_parallel_calls=tf.data.experimental.AUTOTUNE,
        drop_remainder=True))
    assert ds.output_shapes.as_list() == [4]
    assert [v.tolist() for v in _values(ds)] == [[0, 1, 4, 9], [16, 25, 36, 49]]


def test_parallel_interleave_cycles_through_its_inputs():
    ds = Dataset.range(3).apply(tf.data.experimental.parallel_interleave(
        lambda x: Dataset.from_tensors(x).repeat(2), cycle_length=2, block_length=1))
    assert [int(v) for v in _values(ds)] == [0, 1, 0, 1, 2, 2]


def test_py_func_in_a_map_function_outlives_the_traced_body():
    ds = Dataset.range(3).map(lambda x: tf.py_func(lambda v: v * 10, [x], tf.int64))
    assert [int(v) for v in _values(ds)] == [0, 10, 20]


def test_reduce_folds_every_element_in_cpp():
    ds = Dataset.range(1, 6)
    total = ds.reduce(np.int64(0), lambda s, x: s + x)
    both = ds.map(lambda x: (x, tf.cast(x, tf.float32))).reduce(
        {"n": np.int64(0), "product": np.float32(1)},
        lambda s, e: {"n": s["n"] + 1, "product": s["product"] * e[1]})
    assert _run_value(total) == 15
    got = _run_value(both)
    assert got["n"] == 5 and got["product"] == 120.0


def test_reduce_with_a_growing_state_relaxes_its_shape():
    grown = Dataset.range(4).reduce(tf.zeros([0], tf.int64),
                                    lambda s, x: tf.concat([s, tf.stack([x * x])], 0))
    assert grown.shape.as_list() == [None]
    assert _run_value(grown).tolist() == [0, 1, 4, 9]


def test_reduce_state_must_keep_its_dtype():
    with pytest.raises(TypeError, match="must match the initial state"):
        Dataset.range(3).reduce(np.float32(0), lambda s, x: x)


def _run_value(t):
    with tf.Session() as sess:
        return sess.run(t)
