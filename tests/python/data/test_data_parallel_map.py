"""The image pipeline's fast paths (issue 9): Dataset.map with num_parallel_calls runs its calls
on worker threads ahead of the consumer, and strided copies of short contiguous runs (flipping
the width of an RGB image) copy whole rows at once. Results must not depend on either: expected
values come from plain Python and numpy."""

import threading
import time

import numpy as np
import pytest

import flowstone as tf
from dataset_drain import drain


@pytest.mark.parametrize("calls", [1, 2, 3, 8, tf.data.experimental.AUTOTUNE])
def test_parallel_map_keeps_order_for_any_number_of_calls(calls):
    # Calls that finish out of order (the even ones sleep) still come out in input order.
    def sleep_on_even(v):
        time.sleep(0.002 * (v % 2 == 0))
        return v

    def slow_square(x):
        x = tf.py_func(sleep_on_even, [x], tf.int64)
        return x * x

    got = drain(tf.data.Dataset.range(23).map(slow_square, num_parallel_calls=calls))
    assert [int(v) for v in got] == [i * i for i in range(23)]


def test_parallel_map_of_images_equals_the_sequential_map():
    def augment(x):
        image = tf.reshape(tf.cast(tf.range(5 * 7 * 3) + tf.cast(x, tf.int32), tf.float32),
                           [5, 7, 3])
        return tf.reverse(image, [1])[1:4], x

    sequential = drain(tf.data.Dataset.range(9).map(augment).batch(4))
    parallel = drain(tf.data.Dataset.range(9).map(augment, num_parallel_calls=3).batch(4))
    assert len(sequential) == len(parallel) == 3
    for (a, la), (b, lb) in zip(sequential, parallel):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)


def test_parallel_map_error_is_reported_at_its_element_and_iteration_goes_on():
    ds = tf.data.Dataset.range(6).map(lambda x: tf.gather(tf.constant([10, 11, 12]), x - 2),
                                      num_parallel_calls=2)
    with tf.Session() as sess:
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        for _ in range(2):  # x - 2 = -2, -1: out of range
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(nxt)
            assert "ParallelMapDatasetV2" in str(info.value) and "in function" in str(info.value)
        assert [int(sess.run(nxt)) for _ in range(3)] == [10, 11, 12]
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in \\[0, 3\\)"):
            sess.run(nxt)
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(nxt)


def test_parallel_map_function_raising_out_of_range_is_an_error_as_in_tf():
    def stop_at_3(x):
        def f(v):
            if v == 3:
                raise StopIteration
            return v
        return tf.py_func(f, [x], tf.int64)

    ds = tf.data.Dataset.range(6).map(stop_at_3, num_parallel_calls=2)
    with tf.Session() as sess:
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        assert [int(sess.run(nxt)) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Function invocation produced OutOfRangeError"):
            sess.run(nxt)


def test_parallel_map_reinitialized_iterator_starts_over():
    limit = tf.compat.v1.placeholder(tf.int64, [])
    ds = tf.data.Dataset.range(limit).map(lambda x: x + 100, num_parallel_calls=4)
    it = tf.compat.v1.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    with tf.Session() as sess:
        for n in (5, 2, 7):
            sess.run(it.initializer, {limit: n})
            got = []
            while True:
                try:
                    got.append(int(sess.run(nxt)))
                except tf.errors.OutOfRangeError:
                    break
            assert got == [100 + i for i in range(n)]


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("batched", [False, True])  # batched: map and batch run fused
def test_closing_the_session_stops_a_parallel_map_with_calls_in_flight(prefetch, batched):
    # Endless loops in flight: closing the session cancels the waiting run, then the workers.
    def spin(x):
        return tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [x])

    ds = tf.data.Dataset.range(10).map(spin, num_parallel_calls=2)
    if batched:
        ds = ds.batch(4)
    if prefetch:
        ds = ds.prefetch(2)
    sess = tf.Session()
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    errors = []

    def run():
        try:
            sess.run(nxt)
        except tf.errors.OpError as e:
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    sess.close()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], tf.errors.CancelledError)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64, np.complex128])
@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5])
def test_reverse_of_short_rows_equals_numpy(dtype, channels):
    rng = np.random.default_rng(channels)
    image = (rng.integers(0, 200, (6, 9, channels)) * (1 + 1j if dtype == np.complex128 else 1))
    image = image.astype(dtype)
    x = tf.constant(image)
    axes = [[1], [0], [0, 1], [1, 2], [2], [-2]]
    with tf.Session() as sess:
        got = sess.run([tf.reverse(x, a) for a in axes])
    for a, g in zip(axes, got):
        np.testing.assert_array_equal(g, np.flip(image, a))
        assert g.dtype == image.dtype


def test_short_row_copies_of_slices_transposes_and_broadcasts_equal_numpy():
    a = np.arange(5 * 7 * 3, dtype=np.float32).reshape(5, 7, 3)
    b = np.arange(5 * 3, dtype=np.int16).reshape(5, 1, 3)
    c = np.arange(2 * 8 * 4 * 2, dtype=np.uint8).reshape(2, 8, 4, 2)
    ops = {
        "slice of the last dim": (tf.slice(tf.constant(a), [0, 0, 1], [5, 7, 2]), a[:, :, 1:]),
        "strided slice": (tf.constant(a)[1:, ::2, :], a[1:, ::2, :]),
        "reversed strided slice": (tf.constant(a)[::-1, 5:1:-2], a[::-1, 5:1:-2]),
        "transpose keeping the last dim": (tf.transpose(tf.constant(a), [1, 0, 2]),
                                           a.transpose(1, 0, 2)),
        "broadcast of the middle dim": (tf.broadcast_to(tf.constant(b), [5, 4, 3]),
                                        np.broadcast_to(b, (5, 4, 3))),
        "4-d flip of the width": (tf.reverse(tf.constant(c), [2]), c[:, :, ::-1]),
        "one row": (tf.reverse(tf.constant(a[0]), [0]), a[0, ::-1]),
    }
    with tf.Session() as sess:
        got = sess.run({k: v[0] for k, v in ops.items()})
    for name, (_, want) in ops.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_random_flip_in_a_parallel_map_matches_the_image_or_its_mirror():
    images = np.arange(4 * 6 * 5 * 3, dtype=np.uint8).reshape(4, 6, 5, 3)
    ds = tf.data.Dataset.from_tensor_slices(images).map(
        lambda im: tf.image.random_flip_left_right(im, seed=3), num_parallel_calls=2)
    got = drain(ds)
    assert len(got) == 4
    for image, out in zip(images, got):
        assert (np.array_equal(out, image) or np.array_equal(out, image[:, ::-1]))


def test_input_errors_come_out_in_input_order():
    # The input (a sequential map) fails at its elements 0, 1 and 5; the parallel map after it
    # gives each error where the element would have been, and goes on after it.
    ds = (tf.data.Dataset.range(6).map(lambda x: tf.gather(tf.constant([10, 11, 12]), x - 2))
          .map(lambda y: y * 2, num_parallel_calls=2))
    got = []
    with tf.Session() as sess:
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        while True:
            try:
                got.append(int(sess.run(nxt)))
            except tf.errors.InvalidArgumentError as e:
                assert "MapDataset" in str(e)
                got.append("error")
            except tf.errors.OutOfRangeError:
                break
    assert got == ["error", "error", 20, 22, 24, "error"]
