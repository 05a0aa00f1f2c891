"""Leaks and resources: training, sessions, graphs and fetched arrays give back what they take.

`make test` runs a short version; `make stress` runs the full one by setting
FLOWSTONE_LEAK_SCALE=10 (10,000 training steps, 1,000 sessions, 1,000 graphs). Memory is read
two ways: the CPU allocator's bytes in use (exact: every tensor buffer is counted, so a leaked
buffer of any size shows) and the process's resident set (catches what the allocator does not
see, with a tolerance for the Python heap and the allocator's size-class cache).
"""

import gc
import os
import threading
import weakref

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C

SCALE = int(os.environ.get("FLOWSTONE_LEAK_SCALE", "1"))
MiB = 1 << 20


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def tensor_bytes_in_use():
    return _C.cpu_memory_info()["current"]


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def threads():
    return len(os.listdir("/proc/self/task"))


def test_a_training_loop_keeps_memory_flat_after_warm_up():
    steps = 1000 * SCALE
    rng = np.random.default_rng(0)
    features = rng.normal(size=(64, 32)).astype(np.float32)
    labels = rng.integers(0, 4, size=64)
    x = tf.placeholder(tf.float32, [None, 32])
    y = tf.placeholder(tf.int64, [None])
    hidden = tf.layers.dense(x, 64, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 4)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: features, y: labels}
        for _ in range(200):  # warm-up: plan compiled, allocator caches filled
            _, value = sess.run([train, loss], feed)  # the fetched loss stays held, as below
        gc.collect()
        tensors_before, rss_before = tensor_bytes_in_use(), rss_bytes()
        for _ in range(steps):
            _, value = sess.run([train, loss], feed)
        gc.collect()
        tensors_after, rss_after = tensor_bytes_in_use(), rss_bytes()
    assert np.isfinite(value)
    # One step's activations are 64 x 64 floats (16 KiB): a leak of one buffer per step would
    # add 16 MiB over 1,000 steps.
    assert tensors_after == tensors_before
    assert rss_after - rss_before < 4 * MiB, (rss_before, rss_after)


def test_sessions_created_and_closed_leave_no_threads_fds_or_memory():
    count = 100 * SCALE
    x = tf.placeholder(tf.float32, [None])
    v = tf.Variable(tf.zeros([256]))
    y = tf.reduce_sum(x * 2.0) + tf.reduce_sum(v)
    init = tf.global_variables_initializer()

    def one_session():
        with tf.Session() as sess:
            sess.run(init)
            assert sess.run(y, {x: np.ones(1000, np.float32)}) == 2000.0

    one_session()  # the process-wide thread pools start with the first session
    gc.collect()
    baseline = (threads(), open_fds(), tensor_bytes_in_use(), rss_bytes())
    for _ in range(count):
        one_session()
    gc.collect()
    after = (threads(), open_fds(), tensor_bytes_in_use(), rss_bytes())
    assert after[:3] == baseline[:3], f"threads, fds, tensor bytes: {baseline[:3]} -> {after[:3]}"
    assert after[3] - baseline[3] < 4 * MiB, (baseline[3], after[3])


def test_sessions_closed_from_other_threads_leave_nothing_behind():
    x = tf.placeholder(tf.float32, [None])
    y = x + 1.0
    sess = tf.Session()
    sess.run(y, {x: [1.0]})
    sess.close()
    gc.collect()
    baseline = (threads(), open_fds())
    def run_and_close(session):
        assert session.run(y, {x: [1.0]}).tolist() == [2.0]
        session.close()

    for _ in range(20 * SCALE):
        worker = threading.Thread(target=run_and_close, args=(tf.Session(),))
        worker.start()
        worker.join()
    gc.collect()
    assert (threads(), open_fds()) == baseline


def test_building_and_resetting_graphs_is_bounded():
    count = 100 * SCALE

    def build():
        x = tf.placeholder(tf.float32, [None, 16])
        for _ in range(10):
            x = tf.nn.relu(tf.layers.dense(x, 16))
        tf.gradients(tf.reduce_sum(x), tf.trainable_variables())
        return weakref.ref(tf.get_default_graph())

    for _ in range(50):  # warm-up: the Python and C++ heaps grow to their working size
        build()
        tf.reset_default_graph()
    gc.collect()
    rss_before = rss_bytes()
    graphs = []
    for _ in range(count):
        graphs.append(build())
        tf.reset_default_graph()
    gc.collect()
    rss_after = rss_bytes()
    assert [g for g in graphs if g() is not None] == []
    assert rss_after - rss_before < 8 * MiB, (rss_before, rss_after)


@pytest.mark.parametrize("shared", [False, True], ids=["zero-copy", "copied"])
def test_fetched_arrays_are_freed_when_python_drops_them(shared):
    size = 1 << 20  # 4 MiB of float32
    x = tf.placeholder(tf.float32, [None])
    y = x * 3.0
    # Fetching y twice in one run shares its buffer, so each array is a copy; once, the array
    # holds the tensor's own buffer (zero-copy).
    fetches = [y, y] if shared else y
    with tf.Session() as sess:
        value = np.ones(size, np.float32)
        sess.run(fetches, {x: value})
        gc.collect()
        before = tensor_bytes_in_use()
        held = sess.run(fetches, {x: value})
        held_bytes = tensor_bytes_in_use() - before
        if not shared:
            assert held_bytes == 4 * size  # the array keeps the tensor's buffer alive
        del held
        gc.collect()
        assert tensor_bytes_in_use() == before
        rss_before = rss_bytes()
        for _ in range(20 * SCALE):
            result = sess.run(fetches, {x: value})
            del result
        gc.collect()
        assert tensor_bytes_in_use() == before
        assert rss_bytes() - rss_before < 16 * MiB
