"""tf.Session: fetch structures, feeds, errors, lifecycle, callables and threads."""

import collections
import gc
import threading

import numpy as np
import pytest

import flowstone as tf


def test_fetch_structures_are_preserved():
    a = tf.constant([1.0, 2.0], name="a")
    b = tf.constant(3, name="b")
    noop = tf.no_op()
    Pair = collections.namedtuple("Pair", ["x", "y"])
    with tf.Session() as sess:
        assert sess.run(noop) is None
        out = sess.run({"a": a, "nested": [b, (a, noop)], "pair": Pair(a, b), "name": "b:0"})
        np.testing.assert_array_equal(out["a"], [1.0, 2.0])
        assert out["nested"][0] == 3
        assert isinstance(out["nested"][1], tuple) and out["nested"][1][1] is None
        assert isinstance(out["pair"], Pair) and out["pair"].y == 3
        assert out["name"] == 3
        assert sess.run("a:0").dtype == np.float32
        assert sess.run("b") is None  # an operation name runs the op
        first, again = sess.run([a, a])  # duplicates are fetched once
        np.testing.assert_array_equal(first, again)


def test_scalars_are_fetched_as_numpy_scalars_as_in_tensorflow():
    # Numpy scalars (not 0-d arrays) are hashable and print like TF's: {sess.run(step): ...}.
    with tf.Session() as sess:
        values = sess.run([tf.constant(1.5), tf.constant(True), tf.constant(3, tf.int64),
                           tf.constant(2.0, tf.bfloat16), tf.constant(b"x"),
                           tf.constant([1.0])])
    assert [type(v) for v in values[:5]] == [np.float32, np.bool_, np.int64, np.float32, bytes]
    assert values[:5] == [1.5, True, 3, 2.0, b"x"] and hash(values[2]) == hash(3)
    assert isinstance(values[5], np.ndarray) and values[5].shape == (1,)


def test_feeds_by_tensor_and_name_and_value_kinds():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [[1, 2, 3]]}), [[1, 2, 3]])
        np.testing.assert_array_equal(sess.run(y, {"x:0": np.ones((2, 3))}), np.ones((2, 3)))
        s = tf.placeholder(tf.int64, [])
        assert sess.run(tf.identity(s), {s: 7}) == 7
        # A fetch that is fed returns the fed value.
        np.testing.assert_array_equal(sess.run(x, {x: np.zeros((1, 3))}), np.zeros((1, 3)))


def test_wrong_feed_shape_is_value_error_and_invalid_argument():
    x = tf.placeholder(tf.float32, shape=[None, 224, 224, 3])
    y = tf.identity(x)
    images = np.zeros((32, 224, 224), np.float32)
    with tf.Session() as sess:
        expected = ("Cannot feed value of shape (32, 224, 224) for Tensor 'Placeholder:0', "
                    "which has shape '(?, 224, 224, 3)'")
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y, {x: images})
        assert expected in str(info.value)
        assert isinstance(info.value, ValueError)
        # The session stays usable.
        assert sess.run(y, {x: np.zeros((1, 224, 224, 3))}).shape == (1, 224, 224, 3)


def test_missing_feed_names_the_placeholder():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.identity(x, name="y")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y)
        err = info.value
        assert ("You must feed a value for placeholder tensor 'x' with dtype float and shape "
                "[?,3]") in err.message
        assert err.op is x.op
        assert err.error_code == tf.errors.INVALID_ARGUMENT
        assert "test_session.py" in str(err)  # where the op was created
        assert "/job:localhost/replica:0/task:0/device:CPU:0" in err.message



def test_control_dependency_on_a_fed_placeholder_is_satisfied_by_the_feed():
    # tf.metrics.mean(x) does this: its count update waits on the (fed) values.
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.control_dependencies([x]):
        y = tf.constant(1.0) + 1.0
    with tf.Session() as sess:
        assert sess.run(y, {x: [3.0]}) == 2.0
        # Unfed, the control dependency still needs the placeholder's value.
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for "
                           "placeholder tensor 'x'"):
            sess.run(y)

def test_feed_errors():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="The value of a feed cannot be a tf.Tensor"):
            sess.run(x, {x: tf.constant([1.0, 2.0])})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor: The name "
                                            "'nope:0' refers to a Tensor which does not exist"):
            sess.run(x, {"nope:0": [1.0, 2.0]})
        with pytest.raises(ValueError, match="Cannot feed value .*could not convert string to "
                                             "float: 'a'"):
            sess.run(x, {x: ["a", "b"]})
        i = tf.placeholder(tf.int32, [])
        with pytest.raises(TypeError, match="not compatible with Tensor type int32"):
            sess.run(i, {i: 2**40})


def test_fetch_errors():
    with tf.Session() as sess:
        tf.constant(1.0)
        with pytest.raises(TypeError, match="Fetch argument None has invalid type"):
            sess.run(None)
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("missing:0")
        with pytest.raises(TypeError, match="has invalid type"):
            sess.run(3.5)


def test_closed_session_and_empty_graph():
    with pytest.raises(RuntimeError, match="The Session graph is empty"):
        tf.Session().run([])
    c = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    sess.close()  # idempotent
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.run(c)


def test_constructor_argument_errors():
    with pytest.raises(TypeError, match=r'Session\(config=config\)'):
        tf.Session(tf.ConfigProto())
    with pytest.raises(TypeError, match="graph must be a tf.Graph"):
        tf.Session(graph=3)


def test_context_manager_sets_defaults_and_is_not_reentrant():
    c = tf.constant([5, 7, 9])
    g = tf.Graph()
    with g.as_default():
        d = tf.constant(2.0)
    sess = tf.Session(graph=g)
    with sess:
        assert tf.get_default_session() is sess
        assert tf.get_default_graph() is g
        assert d.eval() == 2.0
        with pytest.raises(RuntimeError, match="not re-entrant"):
            sess.__enter__()
    assert tf.get_default_session() is None
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with tf.Session() as s2:
        np.testing.assert_array_equal(c.eval(session=s2), [5, 7, 9])


def test_interactive_session_and_operation_run():
    v = tf.Variable(1.0)
    sess = tf.InteractiveSession()
    try:
        tf.global_variables_initializer().run()
        assert v.eval() == 1.0
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_fetched_values_outlive_the_session():
    c = tf.constant(np.arange(1000, dtype=np.float32))
    x = tf.placeholder(tf.float32, [None])
    y = tf.identity(x)
    sess = tf.Session()
    a = sess.run(c)
    b = sess.run(y, {x: np.arange(5, dtype=np.float32)})
    sess.close()
    del sess
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(1000))
    np.testing.assert_array_equal(b, np.arange(5))
    a[0] = 42.0  # writable, and writing does not touch the graph's constant
    with tf.Session() as sess:
        assert sess.run(c)[0] == 0.0


def test_make_callable():
    x = tf.placeholder(tf.float32, [None])
    y = tf.identity(x)
    with tf.Session() as sess:
        f = sess.make_callable([y], feed_list=[x])
        np.testing.assert_array_equal(f([1.0, 2.0])[0], [1.0, 2.0])
        g = sess.make_callable(y, feed_list=["Placeholder:0"])
        np.testing.assert_array_equal(g(np.ones(3)), np.ones(3))
        with pytest.raises(TypeError, match="expects 1 feed values"):
            g()


def test_many_threads_share_one_session():
    x = tf.placeholder(tf.float32, [None])
    y = tf.identity(x)
    v = tf.Variable(0.0)
    inc = v.assign_add(1.0, read_value=False)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    errors = []

    def worker(k):
        for i in range(200):
            out, _ = sess.run([y, inc], {x: [k, i]})
            if out.tolist() != [k, i]:
                errors.append((k, i, out))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sess.run(v) == 1600.0
    sess.close()


def test_list_devices():
    tf.constant(1.0)
    with tf.Session() as sess:
        devices = sess.list_devices()
        assert devices[0].name == "/job:localhost/replica:0/task:0/device:CPU:0"
        assert devices[0].device_type == "CPU"
        assert devices[0].memory_limit_bytes > 0


def test_session_memory_limit_from_config():
    x = tf.placeholder(tf.float32, [None])
    y = tf.identity(x)
    config = tf.ConfigProto()
    config.experimental.cpu_memory_limit_mb = 1
    with tf.Session(config=config) as sess:
        assert sess.list_devices()[0].memory_limit_bytes == 1 << 20
        np.testing.assert_array_equal(sess.run(y, {x: [1.0]}), [1.0])
