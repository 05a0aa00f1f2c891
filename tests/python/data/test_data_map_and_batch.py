"""A parallel map followed by a batch runs fused (TensorFlow's default map_and_batch_fusion): the
map's workers write each result into its row of the batch. The batches must equal those of the
sequential map then batch, at any number of calls; errors come out as TensorFlow's MapAndBatch
gives them (compared with real TensorFlow where it is installed). Expected values come from plain
Python and numpy. Closing the session during fused calls is tested beside the unfused case, in
test_data_parallel_map.py."""

import os
import re
import sys
import time

import numpy as np
import pytest

import flowstone as tf
from dataset_drain import drain

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import requires_tensorflow, run_tensorflow  # noqa: E402

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.experimental.AUTOTUNE


def _sleep_on_odd(v):
    time.sleep(0.001 * (v % 2))
    return v


def _element(x):
    """An element of three components (float image, int64 label, string) whose calls finish
    out of order (the odd ones sleep)."""
    x = tf.py_func(_sleep_on_odd, [x], tf.int64)
    x.set_shape([])
    image = tf.reshape(tf.cast(tf.range(4 * 5 * 3) * tf.cast(x + 1, tf.int32), tf.float32),
                       [4, 5, 3])
    return tf.reverse(image, [1]), x * 10, tf.strings.as_string(x)


def _expected(n, batch, drop_remainder):
    rows = [(np.arange(60, dtype=np.float32).reshape(4, 5, 3)[:, ::-1] * (i + 1), i * 10,
             str(i).encode()) for i in range(n)]
    out = []
    for start in range(0, n, batch):
        chunk = rows[start:start + batch]
        if len(chunk) < batch and drop_remainder:
            break
        out.append((np.stack([r[0] for r in chunk]), np.array([r[1] for r in chunk]),
                    np.array([r[2] for r in chunk], dtype=object)))
    return out


@pytest.mark.parametrize("calls", [2, 3, 8, AUTOTUNE])
@pytest.mark.parametrize("n,batch,drop_remainder", [(23, 4, False), (23, 4, True), (8, 4, False),
                                                    (3, 5, False), (3, 5, True), (0, 2, False),
                                                    (40, 1, False)])
def test_fused_batches_equal_map_then_batch(calls, n, batch, drop_remainder):
    ds = Dataset.range(n).map(_element, num_parallel_calls=calls).batch(
        batch, drop_remainder=drop_remainder)
    got = drain(ds)
    want = _expected(n, batch, drop_remainder)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for gc, wc in zip(g, w):
            np.testing.assert_array_equal(gc, wc)
            assert gc.dtype == wc.dtype


def test_map_and_batch_api_and_prefetch_give_the_same_batches():
    ds = Dataset.range(10).apply(tf.data.experimental.map_and_batch(
        _element, 3, num_parallel_calls=2)).prefetch(2)
    got = drain(ds)
    want = _expected(10, 3, False)
    assert [g[1].tolist() for g in got] == [w[1].tolist() for w in want]
    assert [g[2].tolist() for g in got] == [w[2].tolist() for w in want]


def _fail_at(failing):
    """A map function giving 100 + x, and failing (a Gather of index -x) at the elements in
    `failing`."""
    table = tf.constant(np.arange(100, 120))

    def f(x):
        bad = tf.reduce_any(tf.equal(x, tf.constant(failing, tf.int64)))
        return tf.gather(table, tf.where(bad, -x, x))

    return f


def test_function_error_fails_its_batch_with_the_first_error_and_the_next_batch_goes_on():
    # Elements 1, 2 and 6 fail: the first batch gives element 1's error (not 2's), the second
    # element 6's; as in TensorFlow's MapAndBatch, the batch after an error starts at the next
    # multiple of the batch size.
    ds = Dataset.range(10).map(_fail_at([1, 2, 6]), num_parallel_calls=3).batch(4)
    got = drain(ds)
    assert len(got) == 3
    for error, index in zip(got[:2], (-1, -6)):
        assert error.startswith("error: InvalidArgumentError"), error
        assert f"{index} is not in [0, 20)" in error and "ParallelMapDatasetV2" in error
    np.testing.assert_array_equal(got[2], [108, 109])


FAILING_PIPELINE = """
table = tf.constant(np.arange(100, 120))

def f(x):
    bad = tf.reduce_any(tf.equal(x, tf.constant([1, 2, 6], tf.int64)))
    return tf.gather(table, tf.where(bad, -x, x))

ds = tf.data.Dataset.range(10).map(f, num_parallel_calls=3).batch(4)
nxt = tf.data.make_one_shot_iterator(ds).get_next()
with tf.Session() as sess:
    while True:
        try:
            print(sess.run(nxt).tolist())
        except tf.errors.OutOfRangeError:
            break
        except tf.errors.OpError as e:
            print(type(e).__name__)
"""


@requires_tensorflow
def test_function_errors_fail_the_same_batches_as_in_tensorflow():
    want = run_tensorflow("import numpy as np\nimport tensorflow.compat.v1 as tf\n"
                          "tf.disable_eager_execution()\n" + FAILING_PIPELINE)
    got = []
    for element in drain(Dataset.range(10).map(_fail_at([1, 2, 6]), num_parallel_calls=3)
                         .batch(4)):
        got.append(element.split(":")[1].strip() if isinstance(element, str)
                   else str(element.tolist()))
    assert got == want.split("\n")[:-1]


def test_elements_of_different_shapes_fail_their_batch_as_batch_reports_them():
    # Element 5 has 2 values, the others 1: batch [4, 8) fails with BatchDatasetV2's message
    # naming the first element that differs from the batch's first.
    ds = Dataset.range(10).map(lambda x: tf.fill(tf.where(tf.equal(x, 5), [2], [1]), x),
                               num_parallel_calls=2).batch(4)
    ds_unfused = Dataset.range(10).map(lambda x: tf.fill(tf.where(tf.equal(x, 5), [2], [1]), x)
                                       ).batch(4)
    got, unfused = drain(ds), drain(ds_unfused)
    assert len(got) == len(unfused) == 3
    want_error = ("Cannot batch tensors with different shapes in component 0. First element had "
                  "shape [1] and element 1 had shape [2].")
    for error in (got[1], unfused[1]):
        assert error.startswith("error: InvalidArgumentError") and want_error in error
        assert "BatchDatasetV2" in error
    for batch, want in ((got[0], [[0], [1], [2], [3]]), (got[2], [[8], [9]])):
        np.testing.assert_array_equal(batch, want)


def test_input_errors_fail_their_batch_and_the_batch_after_starts_behind_them():
    # The input (a sequential map) fails at its elements 1, 2 and 5. An input error ends the
    # batch being read (which gives it), so the batches are those of map then batch unfused.
    ds = Dataset.range(8).map(_fail_at([1, 2, 5])).map(lambda y: y * 2, num_parallel_calls=2)
    def shown(dataset):
        return [g.splitlines()[0] if isinstance(g, str) else g.tolist() for g in drain(dataset)]

    fused = shown(ds.batch(2))
    assert len(fused) == 5
    for error, index in zip((fused[0], fused[1], fused[3]), (-1, -2, -5)):
        assert error == f"error: InvalidArgumentError: indices = {index} is not in [0, 20)"
    assert fused[2] == [206, 208] and fused[4] == [212, 214]
    assert shown(Dataset.range(8).map(_fail_at([1, 2, 5])).map(lambda y: y * 2).batch(2)) == fused


def _stop_at(n):
    def f(x):
        def raise_at_n(v):
            if v == n:
                raise StopIteration
            return v
        y = tf.py_func(raise_at_n, [x], tf.int64)
        y.set_shape([])
        return y
    return f


def test_function_raising_out_of_range_is_an_error_as_in_tf():
    ds = Dataset.range(10).map(_stop_at(5), num_parallel_calls=2).batch(4)
    got = drain(ds)
    assert got[0].tolist() == [0, 1, 2, 3]
    assert got[1].startswith("error: InvalidArgumentError")
    assert "Function invocation produced OutOfRangeError" in got[1]
    assert got[2].tolist() == [8, 9] and len(got) == 3


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_function_ending_the_map_ends_the_batches_at_that_element(drop_remainder):
    # A map that may end (from_generator's kind: preserve_cardinality is false) ends at the
    # element whose call raised OutOfRange: the rows before it are the last batch.
    ds = Dataset.range(20)._map(_stop_at(6), 3, None, False).batch(
        4, drop_remainder=drop_remainder)
    got = [g.tolist() for g in drain(ds)]
    assert got == ([[0, 1, 2, 3]] if drop_remainder else [[0, 1, 2, 3], [4, 5]])


def test_reinitialized_iterator_starts_over_with_calls_in_flight():
    limit = tf.compat.v1.placeholder(tf.int64, [])
    ds = Dataset.range(limit).map(lambda x: x + 100, num_parallel_calls=4).batch(3)
    it = tf.compat.v1.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    with tf.Session() as sess:
        for n, taken in ((50, 1), (7, None), (2, None), (9, 2)):
            sess.run(it.initializer, {limit: n})
            got = []
            while taken is None or len(got) < taken:
                try:
                    got.append(sess.run(nxt).tolist())
                except tf.errors.OutOfRangeError:
                    break
            want = [list(range(100 + i, 100 + min(i + 3, n))) for i in range(0, n, 3)]
            assert got == want[:len(got)] and (taken is not None or len(got) == len(want))


def test_a_run_deadline_ends_the_wait_for_a_batch():
    def spin(x):
        return tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [x])

    ds = Dataset.range(10).map(spin, num_parallel_calls=2).batch(4)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(nxt, options=tf.compat.v1.RunOptions(timeout_in_ms=200))


def test_results_written_in_their_rows_equal_those_copied_there():
    # Static shapes: each batch is allocated before its calls, whose kernels write their outputs
    # in the batch's rows (rows of 5 floats: only every 64th-byte-aligned row is written in
    # place, the others are copied). Outputs that no kernel allocates (a constant, the input
    # itself, a tensor returned twice, one also read by another output) are copied.
    def f(x):
        v = tf.cast(tf.fill([5], x), tf.float32) * 3.0
        normalized = (tf.cast(tf.fill([7, 3], x), tf.uint8) - 1) * 2
        return v, v, v * 2.0, x, tf.constant([1.5, 2.5]), tf.cast(normalized, tf.float32) / 0.25

    got = drain(Dataset.range(37).map(f, num_parallel_calls=3).batch(16))
    assert [len(g[0]) for g in got] == [16, 16, 5]
    x = np.arange(37)
    v = np.repeat(x[:, None], 5, 1).astype(np.float32) * 3
    want = [v, v, v * 2, x, np.tile([1.5, 2.5], (37, 1)),
            ((np.full((37, 7, 3), 1, np.uint8) * x[:, None, None].astype(np.uint8) - 1) * 2
             ).astype(np.float32) / 0.25]
    for c, w in enumerate(want):
        np.testing.assert_array_equal(np.concatenate([g[c] for g in got]), w)


def test_rows_of_shapes_known_only_at_run_time_are_written_after_the_first():
    # The map's output shape is unknown until a call ends: the first call to end allocates the
    # batch, and the calls that start after it write in their rows.
    def f(x):
        return tf.py_func(lambda v: np.full(4, v), [x], tf.int64) * 2

    got = drain(Dataset.range(50).map(f, num_parallel_calls=2).batch(16))
    assert [g.shape for g in got] == [(16, 4), (16, 4), (16, 4), (2, 4)]
    np.testing.assert_array_equal(np.concatenate(got), np.repeat(np.arange(50)[:, None], 4, 1) * 2)


def test_map_and_batch_is_tensorflows_fused_op_with_batch_size_calls_by_default():
    ds = Dataset.range(10).apply(tf.data.experimental.map_and_batch(_element, 4))
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    ops = {op.type: op for op in tf.get_default_graph().get_operations()}
    assert "MapAndBatchDataset" in ops and "BatchDatasetV2" not in ops
    assert ds.element_spec[0].shape.as_list() == [None, 4, 5, 3]
    with tf.Session() as sess:
        assert sess.run(ops["MapAndBatchDataset"].inputs[-2]) == 4  # num_parallel_calls
        got = [sess.run(nxt) for _ in range(3)]
    for g, w in zip(got, _expected(10, 4, False)):
        for gc, wc in zip(g, w):
            np.testing.assert_array_equal(gc, wc)


def test_map_and_batch_errors_on_a_bad_batch_size_or_number_of_calls():
    for kwargs, message in [({"batch_size": 0}, "batch_size must be greater than zero, got 0"),
                            ({"batch_size": 2, "num_parallel_calls": -3},
                             "num_parallel_calls must be positive or AUTOTUNE (-1), got -3")]:
        ds = Dataset.range(4).apply(tf.data.experimental.map_and_batch(lambda x: x, **kwargs))
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
                sess.run(nxt)


TENSORFLOW_MAP_AND_BATCH_GRAPH = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
table = tf.constant(np.arange(100, 120))

def f(x):
    bad = tf.reduce_any(tf.equal(x, tf.constant([1, 2, 6], tf.int64)))
    return tf.gather(table, tf.where(bad, -x, x)), tf.cast(x, tf.float32) * 0.5

ds = tf.data.Dataset.range(10).apply(
    tf.data.experimental.map_and_batch(f, 4, num_parallel_calls=3))
iterator = tf.data.make_initializable_iterator(ds)
nxt = iterator.get_next(name="next")
tf.io.write_graph(tf.get_default_graph().as_graph_def(), ".", "map_and_batch.pb", as_text=False)
with tf.Session() as sess:
    sess.run(iterator.initializer)
    while True:
        try:
            print(repr([v.tolist() for v in sess.run(nxt)]))
        except tf.errors.OutOfRangeError:
            break
        except tf.errors.OpError as e:
            print(type(e).__name__)
"""


@requires_tensorflow
def test_a_tensorflow_graph_with_map_and_batch_imports_and_gives_its_batches(tmp_path):
    want = run_tensorflow(TENSORFLOW_MAP_AND_BATCH_GRAPH, workdir=tmp_path).splitlines()
    graph_def = tf.GraphDef()
    graph_def.ParseFromString((tmp_path / "map_and_batch.pb").read_bytes())
    tf.import_graph_def(graph_def, name="")
    graph = tf.get_default_graph()
    assert "MapAndBatchDataset" in {op.type for op in graph.get_operations()}
    nxt = [graph.get_tensor_by_name("next:0"), graph.get_tensor_by_name("next:1")]
    got = []
    with tf.Session() as sess:
        sess.run(graph.get_operation_by_name("MakeIterator"))
        while True:
            try:
                got.append(repr([v.tolist() for v in sess.run(nxt)]))
            except tf.errors.OutOfRangeError:
                break
            except tf.errors.OpError as e:
                got.append(type(e).__name__)
    assert got == want == ["InvalidArgumentError", "InvalidArgumentError",
                           "[[108, 109], [4.0, 4.5]]"]
