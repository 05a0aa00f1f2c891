"""Concurrency scenarios for `make stress` (tests/stress/run_stress.py runs them under load).

Each scenario runs FLOWSTONE_STRESS_ITERATIONS units of work (runs, sessions, closes, resets)
from several threads, checks every result against numpy or a count, and records how many units
it did in the FLOWSTONE_STRESS_REPORT file (JSON lines) for docs/RELIABILITY.md. Without the
variables the scenarios run a few hundred units each, as a smoke test.
"""

import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from build_tree import find_built  # noqa: E402

ITERATIONS = int(os.environ.get("FLOWSTONE_STRESS_ITERATIONS", "400"))
REPORT = os.environ.get("FLOWSTONE_STRESS_REPORT")
THREADS = 8


def record(scenario, units, unit_name, **extra):
    if REPORT:
        with open(REPORT, "a") as f:
            f.write(json.dumps({"scenario": scenario, "units": units, "unit": unit_name,
                                **extra}) + "\n")


def run_threads(target, count=THREADS):
    """Runs target(k) on `count` threads; re-raises the first exception any of them raised."""
    errors = []

    def wrapped(k):
        try:
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported below with the thread's index
            errors.append((k, e))

    workers = [threading.Thread(target=wrapped, args=(k,)) for k in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        k, e = errors[0]
        raise AssertionError(f"thread {k} failed ({len(errors)} threads failed)") from e


def _dense_graph():
    w_value = np.random.default_rng(3).normal(size=(16, 8)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 16])
    y = tf.nn.relu(tf.matmul(x, tf.constant(w_value)) + 0.5)
    return x, y, lambda v: np.maximum(v @ w_value + 0.5, 0)


def test_many_threads_on_one_session():
    x, y, reference = _dense_graph()
    per_thread = ITERATIONS // THREADS
    with tf.Session() as sess:
        def worker(k):
            rng = np.random.default_rng(k)
            for _ in range(per_thread):
                value = rng.normal(size=(rng.integers(1, 9), 16)).astype(np.float32)
                np.testing.assert_allclose(sess.run(y, {x: value}), reference(value), rtol=1e-5,
                                           atol=1e-5)
        run_threads(worker)
    record("many threads on one session", per_thread * THREADS, "runs", threads=THREADS)


def test_many_sessions_on_one_graph():
    x, y, reference = _dense_graph()
    v = tf.Variable(tf.zeros([4]))
    bump = v.assign_add(tf.ones([4]))
    init = tf.global_variables_initializer()
    per_thread = ITERATIONS // 4
    value = np.ones((2, 16), np.float32)

    def worker(k):
        for _ in range(per_thread):
            with tf.Session() as sess:
                sess.run(init)
                got, bumped = sess.run([y, bump], {x: value})
                np.testing.assert_allclose(got, reference(value), rtol=1e-5)
                assert bumped.tolist() == [1.0] * 4  # each session has its own variables
    run_threads(worker, 4)
    record("many sessions on one graph", per_thread * 4, "sessions", threads=4)


def _closed_session_error(e):
    """The errors a run may see when another thread closes its session."""
    if isinstance(e, RuntimeError) and "closed Session" in str(e):
        return True
    # A run in flight is cancelled by close() (docs/RELIABILITY.md, "Close during run").
    if isinstance(e, tf.errors.CancelledError) and e.message == "Run call was cancelled":
        return True
    return isinstance(e, tf.errors.FailedPreconditionError) and "close" in str(e).lower()


def test_close_during_run():
    a = tf.constant(np.full((96, 96), 0.01, np.float32))
    y = a
    for _ in range(8):
        y = tf.matmul(y, a)
    expected = None
    outcomes = {"completed": 0, "refused": 0}
    for i in range(ITERATIONS):
        sess = tf.Session()
        if expected is None:
            expected = sess.run(y)
        started = threading.Event()
        failures = []

        def runner():
            while True:
                try:
                    got = sess.run(y)
                except Exception as e:  # noqa: BLE001 - sorted below
                    if not _closed_session_error(e):
                        failures.append(e)
                    outcomes["refused"] += 1
                    return
                finally:
                    started.set()
                np.testing.assert_allclose(got, expected, rtol=1e-5)
                outcomes["completed"] += 1

        worker = threading.Thread(target=runner)
        worker.start()
        started.wait()
        if i % 2:
            threading.Event().wait(random.random() * 1e-4)
        sess.close()
        worker.join()
        assert failures == [], failures
    record("close() during run()", ITERATIONS, "sessions closed under a running thread",
           **outcomes)


def test_reset_default_graph_while_another_graph_runs():
    graph = tf.Graph()
    with graph.as_default():
        x, y, reference = _dense_graph()
    stop = threading.Event()
    runs = []
    sess = tf.Session(graph=graph)

    def runner():
        value = np.ones((3, 16), np.float32)
        count = 0
        while not stop.is_set():
            np.testing.assert_allclose(sess.run(y, {x: value}), reference(value), rtol=1e-5)
            count += 1
        runs.append(count)

    workers = [threading.Thread(target=runner) for _ in range(2)]
    for w in workers:
        w.start()
    try:
        for i in range(ITERATIONS):
            z = tf.placeholder(tf.float32, [2])
            w = tf.Variable([1.0, 2.0], name="w")
            out = z * w + float(i)
            assert out.graph is tf.get_default_graph()
            tf.reset_default_graph()
            assert tf.get_default_graph().get_operations() == []
    finally:
        stop.set()
        for w in workers:
            w.join()
        sess.close()
    record("reset_default_graph while another graph runs", ITERATIONS, "resets",
           concurrent_runs=sum(runs))


def test_variables_read_and_assigned_from_several_threads():
    v = tf.Variable(tf.zeros([64]))
    add = v.assign_add(tf.ones([64]), read_value=False)
    assign = v.assign(v.read_value() * 1.0, read_value=False)  # rewrites the same value
    read = v.read_value()
    writers, readers = 4, 4
    per_thread = ITERATIONS // (writers + readers)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())

        def worker(k):
            last = -1.0
            for i in range(per_thread):
                if k < writers:
                    sess.run(add)
                else:
                    value = sess.run(read)
                    # A read sees one whole value (no torn write) that only grows.
                    assert (value == value[0]).all(), value
                    assert value[0] >= last
                    last = value[0]
                    if i % 8 == 0:
                        sess.run(assign)
        run_threads(worker, writers + readers)
        assert sess.run(read).tolist() == [float(writers * per_thread)] * 64
    record("variables read and assigned from several threads",
           per_thread * (writers + readers), "variable ops", threads=writers + readers)


def test_failing_and_succeeding_runs_interleaved():
    params = tf.constant(np.arange(10, dtype=np.float32))
    index = tf.placeholder(tf.int32, [None])
    gathered = tf.gather(params, index)
    numbers = tf.placeholder(tf.float32, [None])
    checked = tf.reshape(numbers, [2])
    per_thread = ITERATIONS // THREADS
    runs = []
    with tf.Session() as sess:
        def worker(k):
            for i in range(per_thread):
                runs.append(1 + (i + k) % 2)
                if (i + k) % 2:
                    assert sess.run(gathered, {index: [k % 10, 9]}).tolist() == [k % 10, 9.0]
                    assert sess.run(checked, {numbers: [1.0, float(i)]}).tolist() == [1.0, i]
                elif i % 4 == 0:
                    with pytest.raises(tf.errors.InvalidArgumentError,
                                       match=r"indices\[1\] = 10 is not in \[0, 10\)"):
                        sess.run(gathered, {index: [0, 10]})
                else:
                    with pytest.raises(tf.errors.InvalidArgumentError,
                                       match=r"Cannot reshape a tensor with 3 elements to "
                                             r"shape \[2\] \(2 elements\)"):
                        sess.run(checked, {numbers: [1.0, 2.0, float(i)]})
        run_threads(worker)
    record("failing and succeeding runs interleaved", sum(runs), "runs",
           threads=THREADS)


FAKE_GPU = find_built(os.path.join("tests", "fake_gpu", "libflowstone_fake_gpu.so"),
                      env_override="FLOWSTONE_TEST_FAKE_GPU")


@pytest.mark.skipif(FAKE_GPU is None, reason="the fake GPU plugin is not built")
def test_fake_gpu_transfers_from_many_threads():
    program = textwrap.dedent(f"""
        import threading
        import numpy as np
        import flowstone as tf
        x = tf.placeholder(tf.float32, [None, 32])
        with tf.device("/gpu:0"):
            h = tf.matmul(x, tf.ones([32, 32])) + 1.0   # host -> device, constant copied once
        with tf.device("/cpu:0"):
            c = tf.reduce_sum(h, axis=1)                 # device -> host
        with tf.device("/gpu:0"):
            out = c * 2.0                                # host -> device -> fetched to host
        per_thread = {ITERATIONS} // 4
        errors = []
        with tf.Session() as sess:
            def worker(k):
                try:
                    value = np.full((4, 32), float(k), np.float32)
                    want = (value.sum(axis=1) * 32 + 32) * 2
                    for _ in range(per_thread):
                        got = sess.run(out, {{x: value}})
                        if not np.allclose(got, want):
                            errors.append((k, got))
                except Exception as e:
                    errors.append((k, repr(e)))
            threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
            [t.start() for t in threads]
            [t.join() for t in threads]
        assert errors == [], errors[:3]
        print("runs", per_thread * 4)
    """)
    env = dict(os.environ, FLOWSTONE_GPU_PLUGIN=FAKE_GPU, FLOWSTONE_FAKE_GPU_COUNT="1",
               FLOWSTONE_FAKE_GPU_MEMORY_MB="256")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = int(proc.stdout.split("runs")[-1])
    record("fake GPU plugin transfers from many threads", runs, "runs", threads=4)


def test_input_pipeline_shared_iterator_across_threads():
    # Threads pull from one iterator of a mapped, shuffled, batched and prefetched pipeline: every
    # element arrives exactly once, whichever thread gets it, and the end is OutOfRangeError for
    # every thread.
    count = max(ITERATIONS, 64) * 4
    dataset = (tf.data.Dataset.range(count).map(lambda x: (x, x * 3), num_parallel_calls=3)
               .shuffle(64, seed=5).batch(4).prefetch(2))
    iterator = dataset.make_initializable_iterator()
    values, tripled = iterator.get_next()
    seen = [[] for _ in range(THREADS)]
    with tf.Session() as sess:
        for _ in range(2):  # the second epoch checks re-initialization under the same load
            sess.run(iterator.initializer)
            for s in seen:
                s.clear()

            def worker(k):
                while True:
                    try:
                        v, t = sess.run((values, tripled))
                    except tf.errors.OutOfRangeError:
                        return
                    np.testing.assert_array_equal(t, v * 3)
                    seen[k].extend(int(x) for x in v)

            run_threads(worker)
            assert sorted(x for s in seen for x in s) == list(range(count))
    record("input pipeline: one iterator shared by threads", 2 * count, "elements",
           threads=THREADS)


def test_input_pipeline_sessions_closed_while_prefetching():
    # Sessions closed while their prefetch threads run a map function: close joins them, and
    # nothing they were using is freed under them.
    dataset = tf.data.Dataset.range(10**9).map(lambda x: x * 2).prefetch(8)
    next_value = dataset.make_one_shot_iterator().get_next()
    closes = max(ITERATIONS // 20, 5)
    for i in range(closes):
        sess = tf.Session()
        assert int(sess.run(next_value)) == 0
        assert int(sess.run(next_value)) == 2
        sess.close()
    record("input pipeline: sessions closed while prefetching", closes, "closes")


def test_control_flow_cond_from_many_threads():
    # Both branches are functions called by If; the true branch also updates a variable, so
    # each run's branch choice is counted twice: in its result and in the variable.
    x = tf.placeholder(tf.float32, [None])
    pred = tf.placeholder(tf.bool, [])
    taken = tf.Variable(0, dtype=tf.int64)

    def true_branch():
        with tf.control_dependencies([taken.assign_add(1)]):
            return x * 2.0 + 1.0

    out = tf.cond(pred, true_branch, lambda: x - 3.0)
    per_thread = ITERATIONS // THREADS
    trues = [0] * THREADS
    with tf.Session() as sess:
        sess.run(taken.initializer)

        def worker(k):
            rng = np.random.default_rng(100 + k)
            for _ in range(per_thread):
                value = rng.normal(size=rng.integers(0, 6)).astype(np.float32)
                branch = bool(rng.integers(2))
                got = sess.run(out, {x: value, pred: branch})
                np.testing.assert_array_equal(got, value * 2.0 + 1.0 if branch else value - 3.0)
                trues[k] += branch
        run_threads(worker)
        assert sess.run(taken) == sum(trues)
    record("tf.cond from many threads", per_thread * THREADS, "runs", threads=THREADS)


def test_control_flow_while_loop_from_many_threads():
    # A loop whose trip count is fed: the sum 0 + 1 + ... + (n - 1) and x * 2**n, with the
    # gradient of the second (2**n) through the loop.
    n = tf.placeholder(tf.int32, [])
    x = tf.placeholder(tf.float64, [3])
    _, total, doubled = tf.while_loop(lambda i, t, v: i < n,
                                      lambda i, t, v: (i + 1, t + i, v * 2.0),
                                      [tf.constant(0), tf.constant(0), x])
    grad = tf.gradients(tf.reduce_sum(doubled), x)[0]
    per_thread = ITERATIONS // THREADS
    with tf.Session() as sess:
        def worker(k):
            rng = np.random.default_rng(200 + k)
            for _ in range(per_thread):
                trips = int(rng.integers(0, 20))
                value = rng.normal(size=3)
                got_total, got_doubled, got_grad = sess.run([total, doubled, grad],
                                                            {n: trips, x: value})
                assert got_total == trips * (trips - 1) // 2
                np.testing.assert_array_equal(got_doubled, value * 2.0**trips)
                np.testing.assert_array_equal(got_grad, np.full(3, 2.0**trips))
        run_threads(worker)
    record("tf.while_loop (and its gradient) from many threads", per_thread * THREADS, "runs",
           threads=THREADS)


def test_control_flow_loops_on_many_sessions_closed_while_running():
    # Sessions closed from another thread while a long loop runs in them: the run stops with
    # CancelledError (or, when close() came first, never starts).
    steps = tf.placeholder(tf.int32, [])
    _, out = tf.while_loop(lambda i, a: i < steps, lambda i, a: (i + 1, a + 1.0),
                           [tf.constant(0), tf.constant(0.0)])
    sessions = max(ITERATIONS // 20, 10)
    outcomes = {"cancelled": 0, "closed first": 0}
    for _ in range(sessions):
        sess = tf.Session()
        started = threading.Event()
        result = []

        def run(sess=sess, started=started, result=result):
            started.set()
            try:
                result.append(sess.run(out, {steps: 10**9}))
            except tf.errors.CancelledError:
                result.append("cancelled")
            except RuntimeError as e:
                assert "Attempted to use a closed Session." in str(e)
                result.append("closed first")

        thread = threading.Thread(target=run)
        thread.start()
        started.wait()
        time.sleep(0.005)  # mostly lands inside the loop (the loop runs for minutes)
        sess.close()
        thread.join()
        assert result in (["cancelled"], ["closed first"]), result
        outcomes[result[0]] += 1
    record("sessions closed during a tf.while_loop", sessions, "sessions", **outcomes)


def test_input_pipeline_own_iterators_from_many_threads():
    # Each thread restarts its own iterator of one pipeline (generator, window, unbatch, parse of
    # tf.train.Examples, ignore_errors) in one shared session: every thread sees exactly its
    # records, in order, epoch after epoch.
    records = [tf.train.Example(features=tf.train.Features(feature={
        "v": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i]))})).SerializeToString()
        for i in range(12)]

    def make_iterator(k):
        ds = (tf.data.Dataset.from_generator(lambda: iter(records), tf.string)
              .window(4).flat_map(lambda w: w.batch(4))
              .map(lambda s: tf.io.parse_example(s, {"v": tf.io.VarLenFeature(tf.int64)})["v"]
                   .values + k)
              .apply(tf.data.experimental.ignore_errors()))
        return ds.make_initializable_iterator()

    iterators = [make_iterator(k) for k in range(THREADS)]
    nexts = [it.get_next() for it in iterators]
    expected = [i * s for i in range(12) for s in (1, -1)]
    epochs = max(ITERATIONS // 50, 4)
    with tf.Session() as sess:
        def worker(k):
            for _ in range(epochs):
                sess.run(iterators[k].initializer)
                got = []
                while True:
                    try:
                        got.extend(int(v) - k for v in sess.run(nexts[k]))
                    except tf.errors.OutOfRangeError:
                        break
                assert got == expected

        run_threads(worker)
    record("input pipeline: own iterators restarted from many threads", epochs * THREADS,
           "epochs", threads=THREADS)


def test_input_pipeline_sessions_closed_during_get_next():
    # get_next on a pipeline that searches forever (a filter nothing passes) is running when
    # another thread closes the session: the run ends with CancelledError (or, when close() came
    # first, never starts), and close() returns.
    next_value = (tf.data.Dataset.range(10**12).filter(lambda x: x < 0)
                  .make_one_shot_iterator().get_next())
    sessions = max(ITERATIONS // 20, 10)
    outcomes = {"cancelled": 0, "closed first": 0}
    for _ in range(sessions):
        sess = tf.Session()
        started = threading.Event()
        result = []

        def run(sess=sess, started=started, result=result):
            started.set()
            try:
                result.append(sess.run(next_value))
            except Exception as e:  # noqa: BLE001 - sorted below
                result.append("closed first" if isinstance(e, RuntimeError) else
                              "cancelled" if _closed_session_error(e) else e)

        thread = threading.Thread(target=run)
        thread.start()
        started.wait()
        time.sleep(0.005)
        sess.close()
        thread.join(timeout=60)
        assert not thread.is_alive(), "get_next kept running after Session.close()"
        assert result in (["cancelled"], ["closed first"]), result
        outcomes[result[0]] += 1
    record("input pipeline: sessions closed during get_next", sessions, "sessions", **outcomes)


def _resident_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_input_pipeline_large_shuffle_buffer_memory_over_ten_epochs():
    # 1 KiB elements through a shuffle buffer of half an epoch for ten epochs: what is resident
    # after the first epoch must not grow with the epochs (tests/python/data has the short one).
    per_epoch, batch = max(ITERATIONS * 10, 4000), 500
    dataset = (tf.data.Dataset.range(per_epoch).map(lambda x: tf.fill([128], x))
               .shuffle(per_epoch // 2, seed=2).repeat(10).batch(batch))
    next_batch = dataset.make_one_shot_iterator().get_next()
    seen, after_first_epoch = 0, None
    with tf.Session() as sess:
        while True:
            try:
                values = sess.run(next_batch)
            except tf.errors.OutOfRangeError:
                break
            assert (values == values[:, :1]).all()
            seen += len(values)
            if after_first_epoch is None and seen >= 2 * per_epoch:
                after_first_epoch = _resident_bytes()
    assert seen == 10 * per_epoch
    growth = _resident_bytes() - after_first_epoch
    assert growth < 32 * 2**20, f"resident memory grew by {growth / 2**20:.1f} MiB over 8 epochs"
    record("input pipeline: large shuffle buffer over 10 epochs", 10 * per_epoch, "elements",
           buffer=per_epoch // 2, growth_mib=round(growth / 2**20, 1))
