"""TF1's queues, readers and queue runners: FIFO, shuffling and padding queues with their blocking
and closing semantics, the readers over a queue of file names, the producers and batchers of
tf.train, QueueRunner with Coordinator, and a whole TFRecord pipeline checked against TensorFlow.

Every test that could hang on a broken wake-up bounds its waits (RunOptions timeouts, thread join
timeouts), so a bug fails the test instead of stalling the suite."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402

SHORT = tf.RunOptions(timeout_in_ms=200)  # for runs expected to block
LONG = tf.RunOptions(timeout_in_ms=20000)  # for runs expected to finish


def _in_thread(fn):
    """Runs fn() on a thread; returns (thread, a list receiving its result or exception)."""
    result = []

    def target():
        try:
            result.append(fn())
        except Exception as e:  # noqa: BLE001 - handed to the test
            result.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, result


# --- Queues -------------------------------------------------------------------------------------


def test_fifo_queue_keeps_order_and_counts():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    enqueue = q.enqueue_many([[1, 2, 3, 4, 5]])
    one = q.dequeue()
    assert one.shape == []
    with tf.Session() as sess:
        sess.run(enqueue)
        assert sess.run(q.size()) == 5
        assert [sess.run(one) for _ in range(3)] == [1, 2, 3]
        assert sess.run(q.size()) == 2
        assert not sess.run(q.is_closed())


def test_tuples_with_names_and_dequeue_many_and_up_to():
    q = tf.queue.FIFOQueue(10, [tf.float32, tf.string], shapes=[[2], []], names=["x", "s"])
    enqueue = q.enqueue({"x": [1.0, 2.0], "s": b"a"})
    enqueue_many = q.enqueue_many({"x": [[3.0, 4.0], [5.0, 6.0]], "s": [b"b", b"c"]})
    many = q.dequeue_many(2)
    up_to = q.dequeue_up_to(5)
    assert many["x"].shape == [2, 2] and many["s"].shape == [2]
    assert up_to["x"].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run([enqueue])
        sess.run(enqueue_many)
        got = sess.run(many)
        np.testing.assert_array_equal(got["x"], [[1, 2], [3, 4]])
        assert list(got["s"]) == [b"a", b"b"]
        sess.run(q.close())
        rest = sess.run(up_to)  # closed: what is left, fewer than asked
        np.testing.assert_array_equal(rest["x"], [[5, 6]])
        with pytest.raises(tf.errors.OutOfRangeError, match="is closed and has insufficient"):
            sess.run(up_to)


def test_closed_queue_drains_then_raises_out_of_range_as_tensorflow():
    q = tf.FIFOQueue(5, tf.int32, name="my_queue")
    with tf.Session() as sess:
        sess.run(q.enqueue(7))
        sess.run(q.close())
        assert sess.run(q.is_closed())
        assert sess.run(q.dequeue()) == 7
        with pytest.raises(tf.errors.OutOfRangeError) as info:
            sess.run(q.dequeue())
        assert ("FIFOQueue 'my_queue' is closed and has insufficient elements (requested 1, "
                "current size 0)") in str(info.value)
        with pytest.raises(tf.errors.OutOfRangeError, match=r"requested 3, current size 0"):
            sess.run(q.dequeue_many(3))
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(q.enqueue(1))


def test_enqueue_checks_dtypes_and_shapes():
    q = tf.FIFOQueue(5, [tf.float32], shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])  # static shape mismatch, caught when built
    x = tf.placeholder(tf.float32, [None])
    enqueue = q.enqueue([x])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[2\], got \[3\]"):
            sess.run(enqueue, {x: [1, 2, 3]})
        assert sess.run(q.size()) == 0


def test_priority_queue_dequeues_the_lowest_priority_first():
    q = tf.PriorityQueue(10, [tf.string], shapes=[()], names=["word"])
    assert q.dtypes == [tf.int64, tf.string] and q.names == ["priority", "word"]
    enqueue = q.enqueue_many({"priority": [3, 1, 2, 1], "word": [b"c", b"a", b"b", b"a2"]})
    one = q.enqueue({"priority": np.int64(0), "word": b"first"})
    batch = q.dequeue_many(5)
    with tf.Session() as sess:
        sess.run(enqueue)
        sess.run(one)
        out = sess.run(batch, options=LONG)
    np.testing.assert_array_equal(out["priority"], [0, 1, 1, 2, 3])
    assert list(out["word"]) == [b"first", b"a", b"a2", b"b", b"c"]  # equal ones in order
    with pytest.raises(ValueError, match="PriorityQueue requires shapes"):
        tf.PriorityQueue(10, [tf.float32])
    floats = tf.PriorityQueue(10, [tf.float32], shapes=[()])
    with pytest.raises(TypeError, match="Expected int64"):
        floats.enqueue([1.5, 1.0])  # a priority is an int64
    raw = tf.raw_ops.QueueEnqueueV2(handle=floats.queue_ref,
                                    components=[tf.constant(1, tf.int32), tf.constant(1.0)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="component 0 expects int64"):
            sess.run(raw)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_priority_queue_order_equals_tensorflows():
    script = textwrap.dedent("""
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        q = tf.PriorityQueue(20, [tf.int32], shapes=[()])
        enqueue = q.enqueue_many(([5, 3, 9, 1, 3, 7, 1], [0, 1, 2, 3, 4, 5, 6]))
        with tf.Session() as sess:
            sess.run(enqueue)
            p, v = sess.run(q.dequeue_many(7))
        print(p.tolist(), v.tolist())
    """)
    done = subprocess.run([PEER_PYTHON, "-c", script], capture_output=True, text=True,
                          timeout=300, env={"TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr
    q = tf.PriorityQueue(20, [tf.int32], shapes=[()])
    enqueue = q.enqueue_many(([5, 3, 9, 1, 3, 7, 1], [0, 1, 2, 3, 4, 5, 6]))
    with tf.Session() as sess:
        sess.run(enqueue)
        p, v = sess.run(q.dequeue_many(7))
    assert f"{p.tolist()} {v.tolist()}" == done.stdout.strip().splitlines()[-1]


def test_random_shuffle_queue_is_a_seeded_permutation():
    def drain(seed):
        graph = tf.Graph()
        with graph.as_default():
            q = tf.RandomShuffleQueue(100, 0, tf.int64, shapes=[[]], seed=seed)
            enqueue = q.enqueue_many([np.arange(50, dtype=np.int64)])
            out = q.dequeue_up_to(100)
            with tf.Session() as sess:
                sess.run(enqueue)
                sess.run(q.close())
                return list(sess.run(out))

    first, again, other = drain(7), drain(7), drain(8)
    assert sorted(first) == list(range(50))
    assert first == again
    assert first != list(range(50)) and first != other


def test_random_shuffle_queue_keeps_min_after_dequeue_while_open():
    q = tf.RandomShuffleQueue(10, 3, tf.int32, shapes=[[]], seed=1)
    dequeue = q.dequeue()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3, 4]]))
        sess.run(dequeue)  # 4 > 3 left to mix from
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(dequeue, options=SHORT)
        sess.run(q.close())  # closed: the rest drains
        assert sorted(sess.run(dequeue) for _ in range(3)) != []
        assert sess.run(q.size()) == 0


def test_padding_fifo_queue_pads_each_batch_to_its_largest_element():
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None, 2], [None]])
    x = tf.placeholder(tf.int32, [None, 2])
    s = tf.placeholder(tf.string, [None])
    enqueue = q.enqueue([x, s])
    batch = q.dequeue_many(2)
    assert batch[0].shape.as_list() == [2, None, 2]
    with tf.Session() as sess:
        sess.run(enqueue, {x: [[1, 2]], s: [b"a", b"b", b"c"]})
        sess.run(enqueue, {x: [[3, 4], [5, 6], [7, 8]], s: []})
        ints, strings = sess.run(batch)
    np.testing.assert_array_equal(ints, [[[1, 2], [0, 0], [0, 0]], [[3, 4], [5, 6], [7, 8]]])
    assert strings.tolist() == [[b"a", b"b", b"c"], [b"", b"", b""]]


def test_dequeue_many_of_varying_shapes_needs_a_padding_queue():
    q = tf.FIFOQueue(10, tf.float32)
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        sess.run(q.enqueue(x), {x: [1.0]})
        sess.run(q.enqueue(x), {x: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="PaddingFIFOQueue"):
            sess.run(q.dequeue_many(2))


def test_blocked_dequeue_is_woken_by_another_threads_enqueue():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    dequeue = q.dequeue()
    enqueue = q.enqueue(4.5)
    with tf.Session() as sess:
        thread, result = _in_thread(lambda: sess.run(dequeue, options=LONG))
        thread.join(0.3)
        assert thread.is_alive()  # blocked: the queue is empty
        sess.run(enqueue)
        thread.join(20)
        assert result == [4.5]


def test_close_wakes_a_blocked_dequeue_with_out_of_range():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    dequeue = q.dequeue_many(2)
    with tf.Session() as sess:
        sess.run(q.enqueue(1.0))
        thread, result = _in_thread(lambda: sess.run(dequeue, options=LONG))
        thread.join(0.3)
        sess.run(q.close())
        thread.join(20)
        assert isinstance(result[0], tf.errors.OutOfRangeError)
        assert "requested 2, current size 1" in str(result[0])


def test_session_close_cancels_a_blocked_dequeue():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    dequeue = q.dequeue()
    sess = tf.Session()
    thread, result = _in_thread(lambda: sess.run(dequeue, options=LONG))
    thread.join(0.3)
    assert thread.is_alive()
    sess.close()
    thread.join(20)
    assert not thread.is_alive()
    assert isinstance(result[0], tf.errors.CancelledError), result


def test_run_timeout_on_an_empty_queue_is_deadline_exceeded():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=SHORT)
        # The queue is intact afterwards.
        sess.run(q.enqueue(2.0))
        assert sess.run(q.dequeue()) == 2.0


def test_full_queue_blocks_enqueue_until_a_close_cancels_it():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    enqueue = q.enqueue(1)
    with tf.Session() as sess:
        sess.run([enqueue])
        sess.run([enqueue])
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enqueue, options=SHORT)
        thread, result = _in_thread(lambda: sess.run(enqueue, options=LONG))
        thread.join(0.3)
        assert thread.is_alive()
        sess.run(q.close(cancel_pending_enqueues=True))
        thread.join(20)
        assert isinstance(result[0], tf.errors.CancelledError), result
        assert sess.run(q.dequeue_many(2)).tolist() == [1, 1]


def test_each_session_has_its_own_queue():
    q = tf.FIFOQueue(5, tf.int32, shapes=[[]])
    enqueue = q.enqueue(3)
    with tf.Session() as a, tf.Session() as b:
        a.run(enqueue)
        assert a.run(q.size()) == 1
        assert b.run(q.size()) == 0


# --- Readers ------------------------------------------------------------------------------------


def _filename_queue(sess, names):
    q = tf.FIFOQueue(10, tf.string, shapes=[[]])
    sess.run(q.enqueue_many([names]))
    sess.run(q.close())
    return q


def _read_all(sess, key, value):
    out = []
    while True:
        try:
            out.append(tuple(sess.run([key, value])))
        except tf.errors.OutOfRangeError:
            return out


def test_text_line_reader_skips_headers_and_keys_lines(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_bytes(b"header\nx,1\r\ny,2")
    b.write_bytes(b"header\nz,3\n")
    with tf.Session() as sess:
        q = _filename_queue(sess, [str(a).encode(), str(b).encode()])
        reader = tf.TextLineReader(skip_header_lines=1)
        key, value = reader.read(q)
        records = _read_all(sess, key, value)
        assert records == [(f"{a}:2".encode(), b"x,1"), (f"{a}:3".encode(), b"y,2"),
                           (f"{b}:2".encode(), b"z,3")]
        assert sess.run(reader.num_records_produced()) == 3
        assert sess.run(reader.num_work_units_completed()) == 2


def test_tfrecord_reader_and_read_up_to(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path, "GZIP") as w:
        for r in [b"one", b"two", b"three"]:
            w.write(r)
    with tf.Session() as sess:
        q = _filename_queue(sess, [path.encode()])
        reader = tf.TFRecordReader(options=tf.io.TFRecordOptions("GZIP"))
        keys, values = reader.read_up_to(q, 2)
        assert sess.run(values).tolist() == [b"one", b"two"]
        k, v = sess.run([keys, values])
        assert v.tolist() == [b"three"]
        assert k.tolist() == [f"{path}:{16 + 3 + 16 + 3}".encode()]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(values)
        sess.run(reader.reset())
        assert sess.run(reader.num_records_produced()) == 0


def test_whole_file_and_fixed_length_readers(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"HH" + b"abcdefgh" + b"F")
    with tf.Session() as sess:
        q = _filename_queue(sess, [str(data).encode()])
        key, value = tf.WholeFileReader().read(q)
        assert _read_all(sess, key, value) == [(str(data).encode(), data.read_bytes())]
        q = _filename_queue(sess, [str(data).encode()])
        key, value = tf.FixedLengthRecordReader(record_bytes=3, header_bytes=2, footer_bytes=1,
                                                hop_bytes=2).read(q)
        assert _read_all(sess, key, value) == [(f"{data}:0".encode(), b"abc"),
                                               (f"{data}:1".encode(), b"cde"),
                                               (f"{data}:2".encode(), b"efg")]


def test_reader_on_a_missing_file_names_it(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with tf.Session() as sess:
        q = _filename_queue(sess, [missing.encode()])
        _, value = tf.TextLineReader().read(q)
        with pytest.raises(tf.errors.NotFoundError, match="nope.txt"):
            sess.run(value)


# --- Producers, batchers and queue runners ------------------------------------------------------


def _run_until_out_of_range(sess, fetch):
    """Runs `fetch` with queue runners under a Coordinator until OutOfRangeError; returns the
    values, after checking that coord.join() leaves no thread behind."""
    before = set(threading.enumerate())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    assert threads
    values = []
    try:
        while not coord.should_stop():
            values.append(sess.run(fetch, options=LONG))
    except tf.errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
    coord.join(threads, stop_grace_period_secs=20)
    assert set(threading.enumerate()) <= before
    return values


def test_string_input_producer_with_epochs_needs_local_init_and_ends():
    queue = tf.train.string_input_producer([b"a", b"b", b"c"], num_epochs=2, shuffle=False)
    name = queue.dequeue()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got = _run_until_out_of_range(sess, name)
    assert got == [b"a", b"b", b"c"] * 2


def test_limit_epochs_raises_out_of_range_at_the_limit():
    x = tf.train.limit_epochs(tf.constant(5), num_epochs=2)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert [sess.run(x), sess.run(x)] == [5, 5]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(x)


def test_slice_and_range_input_producers():
    images = np.arange(12, dtype=np.float32).reshape(6, 2)
    labels = np.arange(6, dtype=np.int64)
    image, label = tf.train.slice_input_producer([images, labels], num_epochs=1, shuffle=True,
                                                seed=3)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        pairs = _run_until_out_of_range(sess, [image, label])
    assert sorted(int(lab) for _, lab in pairs) == list(range(6))
    for img, lab in pairs:
        np.testing.assert_array_equal(img, images[lab])

    numbers = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert _run_until_out_of_range(sess, numbers) == [0, 1, 2, 3]


def test_batch_with_a_smaller_final_batch_and_dynamic_pad():
    ids = tf.train.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
    row = tf.fill(tf.expand_dims(ids, 0), ids)  # [id] * id: varying length
    batch = tf.train.batch([ids, row], batch_size=2, dynamic_pad=True,
                           allow_smaller_final_batch=True)
    assert batch[1].shape.as_list() == [None, None]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        batches = _run_until_out_of_range(sess, batch)
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    np.testing.assert_array_equal(batches[1][1], [[2, 2, 0], [3, 3, 3]])


def test_batch_drops_the_incomplete_final_batch_by_default():
    ids = tf.train.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
    batch = tf.train.batch({"id": ids}, batch_size=2)
    assert batch["id"].shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got = _run_until_out_of_range(sess, batch)
    assert [b["id"].tolist() for b in got] == [[0, 1], [2, 3]]


def test_batch_join_and_maybe_batch():
    a = tf.train.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
    b = tf.train.range_input_producer(3, num_epochs=1, shuffle=False).dequeue() + 10
    joined = tf.train.batch_join([[a], [b]], batch_size=1)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got = _run_until_out_of_range(sess, joined)
    assert sorted(int(x[0][0]) for x in got) == [0, 1, 2, 10, 11, 12]

    c = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
    even = tf.train.maybe_batch([c], keep_input=tf.equal(c % 2, 0), batch_size=1)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert [int(x[0][0]) for x in _run_until_out_of_range(sess, even)] == [0, 2, 4]


def test_shuffle_batch_mixes_every_element_once():
    ids = tf.train.range_input_producer(40, num_epochs=1, shuffle=False).dequeue()
    batch = tf.train.shuffle_batch([ids], batch_size=8, capacity=30, min_after_dequeue=10,
                                   seed=5)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got = np.concatenate([b[0] for b in _run_until_out_of_range(sess, batch)])
    assert sorted(got.tolist()) == list(range(40))
    assert got.tolist() != list(range(40))


def test_queue_runner_errors_reach_coord_join():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    with tf.control_dependencies([tf.Assert(tf.constant(False), ["runner failed"])]):
        value = tf.constant(1.0)
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(value)]))
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        coord.wait_for_stop(20)
        with pytest.raises(tf.errors.InvalidArgumentError, match="runner failed"):
            coord.join(threads, stop_grace_period_secs=20)


def test_request_stop_stops_runners_blocked_on_a_full_queue():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(1)] * 2))
    before = set(threading.enumerate())
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        assert sess.run(q.dequeue(), options=LONG) == 1
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=20)
    assert set(threading.enumerate()) <= before


def test_monitored_session_starts_queue_runners():
    ids = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
    batch = tf.train.batch([ids], batch_size=2)
    before = set(threading.enumerate())
    got = []
    with tf.train.MonitoredSession() as sess:
        while not sess.should_stop():
            got.append(sess.run(batch)[0].tolist())
    assert got == [[0, 1], [2, 3]]
    assert set(threading.enumerate()) <= before


# --- The whole TF1 pipeline ---------------------------------------------------------------------


def _write_examples(directory, files=3, per_file=10):
    paths = []
    for f in range(files):
        path = str(directory / f"part-{f}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for i in range(per_file):
                n = f * per_file + i
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[n, n * 0.5])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[n])),
                }
                w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                        .SerializeToString())
        paths.append(path)
    return paths


SPEC = {"x": tf.io.FixedLenFeature([2], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}


def test_tfrecord_pipeline_trains_until_out_of_range(tmp_path):
    paths = _write_examples(tmp_path)
    filenames = tf.train.string_input_producer(paths, num_epochs=2, seed=1)
    _, record = tf.TFRecordReader().read(filenames)
    example = tf.io.parse_single_example(record, SPEC)
    x, y = tf.train.shuffle_batch([example["x"], example["y"]], batch_size=4, capacity=20,
                                  min_after_dequeue=5, num_threads=2, seed=2,
                                  allow_smaller_final_batch=True)
    # A linear model learns y = 2 * x[0] - 2 * x[1] (= n) from the batches.
    w = tf.Variable(tf.zeros([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x, w), 1) - tf.cast(y, tf.float32)))
    train = tf.train.GradientDescentOptimizer(0.001).minimize(loss)
    seen = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for _, xs, ys in _run_until_out_of_range(sess, [train, x, y]):
            np.testing.assert_allclose(xs[:, 0], ys)
            np.testing.assert_allclose(xs[:, 1], ys * 0.5)
            seen.extend(ys.tolist())
        assert np.isfinite(sess.run(w)).all()
    assert sorted(seen) == sorted(list(range(30)) * 2)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_reader_pipeline_matches_tensorflow(tmp_path):
    paths = _write_examples(tmp_path, files=2, per_file=3)
    text = tmp_path / "lines.txt"
    text.write_bytes(b"h\nalpha\nbeta\r\ngamma")
    program = f"""
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        names = tf.train.string_input_producer({paths!r}, num_epochs=1, shuffle=False)
        key, value = tf.TFRecordReader().read(names)
        ex = tf.io.parse_single_example(value, {{"y": tf.io.FixedLenFeature([], tf.int64)}})
        keys, ys = tf.train.batch([key, ex["y"]], batch_size=2, allow_smaller_final_batch=True)
        lines = tf.train.string_input_producer([{str(text)!r}], num_epochs=1, shuffle=False)
        lkey, lvalue = tf.TextLineReader(skip_header_lines=1).read(lines)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            out = []
            try:
                while True:
                    out.append(sess.run([keys, ys]))
            except tf.errors.OutOfRangeError:
                pass
            try:
                while True:
                    out.append(sess.run([lkey, lvalue]))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
        print(repr([[v.tolist() if hasattr(v, "tolist") else v for v in o] for o in out]))
    """
    proc = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(program)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = eval(proc.stdout.strip().splitlines()[-1])  # noqa: S307 - our own subprocess

    names = tf.train.string_input_producer(paths, num_epochs=1, shuffle=False)
    key, value = tf.TFRecordReader().read(names)
    ex = tf.io.parse_single_example(value, {"y": tf.io.FixedLenFeature([], tf.int64)})
    keys, ys = tf.train.batch([key, ex["y"]], batch_size=2, allow_smaller_final_batch=True)
    lines = tf.train.string_input_producer([str(text)], num_epochs=1, shuffle=False)
    lkey, lvalue = tf.TextLineReader(skip_header_lines=1).read(lines)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        out = []
        for fetch in ([keys, ys], [lkey, lvalue]):
            try:
                while True:
                    out.append(sess.run(fetch, options=LONG))
            except tf.errors.OutOfRangeError:
                pass
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=20)
    got = [[v.tolist() if hasattr(v, "tolist") else v for v in o] for o in out]
    assert got == expected


def test_string_input_producer_refuses_an_empty_input():
    with pytest.raises(ValueError, match="non-null input tensor"):
        tf.train.string_input_producer([])
    names = tf.placeholder(tf.string, [None])
    queue = tf.train.string_input_producer(names)
    runner = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            sess.run(runner.enqueue_ops[0], {names: []})
        sess.run(runner.enqueue_ops[0], {names: [b"f"]})
        assert sess.run(queue.size()) == 1


def test_queues_run_eagerly_and_readers_refuse_as_tensorflow():
    tf.reset_default_graph()
    tf.enable_eager_execution()
    try:
        a = tf.FIFOQueue(3, tf.float32, shapes=[[]])
        b = tf.FIFOQueue(3, tf.float32, shapes=[[]])
        a.enqueue(1.5)
        a.enqueue_many([[2.5, 3.5]])
        assert int(a.size()) == 3 and int(b.size()) == 0  # two queues, not one
        assert float(a.dequeue()) == 1.5
        np.testing.assert_array_equal(a.dequeue_many(2).numpy(), [2.5, 3.5])
        a.close()
        with pytest.raises(tf.errors.OutOfRangeError, match="is closed"):
            a.dequeue()
        with pytest.raises(RuntimeError, match="Readers are not supported"):
            tf.TextLineReader()
    finally:
        tf.disable_eager_execution()
        tf.reset_default_graph()
