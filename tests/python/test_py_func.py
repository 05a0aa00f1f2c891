"""tf.py_func / tf.numpy_function: values, dtypes, errors carrying the Python traceback (with
TensorFlow's error classes), threads, and gradients through gradient_override_map."""

import threading

import numpy as np
import pytest

import flowstone as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_calls_the_function_on_numpy_values():
    seen = []

    def double(x, y):
        seen.append((type(x), type(y)))
        return x * 2

    x = tf.constant(3.0)
    y = tf.constant([1, 2])
    out = tf.py_func(double, [x, y], tf.float32)
    several = tf.numpy_function(lambda a: [a + 1, (a * 10).astype(np.int64)],
                                [tf.constant([1.0, 2.0])], [tf.float32, tf.int64], name="npf")
    assert out.op.type == "PyFunc" and out.op.name == "PyFunc"
    assert several[0].op.name == "npf"
    assert out.shape == tf.TensorShape(None)
    with tf.Session() as sess:
        assert sess.run(out) == 6.0
        a, b = sess.run(several)
    # Scalars arrive as numpy scalars, other values as arrays, as in TensorFlow.
    assert seen[0] == (np.float32, np.ndarray)
    np.testing.assert_array_equal(a, [2.0, 3.0])
    np.testing.assert_array_equal(b, [10, 20])
    assert b.dtype == np.int64


def test_stateless_functions_use_pyfuncstateless():
    out = tf.py_func(lambda x: x, [tf.constant(1.0)], tf.float32, stateful=False)
    assert out.op.type == "PyFuncStateless"


def test_an_exception_becomes_an_error_with_the_traceback():
    def bad(x):
        raise ValueError("bad input")

    def broken(x):
        raise RuntimeError("broken")

    x = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(tf.py_func(bad, [x], tf.float32))
        message = info.value.message
        assert message.startswith("ValueError: bad input")
        assert "Traceback (most recent call last)" in message and 'raise ValueError("bad input")' \
            in message
        # Other exceptions are UnknownError, as in TensorFlow.
        with pytest.raises(tf.errors.UnknownError, match="RuntimeError: broken"):
            sess.run(tf.py_func(broken, [x], tf.float32))
        # The session stays usable.
        assert sess.run(tf.py_func(lambda v: v + 1, [x], tf.float32)) == 2.0


def test_wrong_return_dtype_or_count():
    x = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"0-th value returned by pyfunc_\d+ is double, but expects "
                                 r"float"):
            sess.run(tf.py_func(lambda v: np.float64(1.0), [x], tf.float32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="returned 1 values, but "
                                                                 "expects 2"):
            sess.run(tf.py_func(lambda v: v, [x], [tf.float32, tf.float32]))


def test_runs_from_many_threads_at_once():
    x = tf.placeholder(tf.float64, [100])
    out = tf.py_func(lambda v: np.cumsum(v), [x], tf.float64)
    results = {}
    with tf.Session() as sess:
        def work(k):
            results[k] = sess.run(out, {x: np.full(100, float(k))})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k in range(8):
        np.testing.assert_array_equal(results[k], np.cumsum(np.full(100, float(k))))


def test_gradient_through_gradient_override_map():
    @tf.RegisterGradient("TestPyFuncSquareGrad")
    def _square_grad(op, grad):
        return [grad * 2.0 * op.inputs[0]]

    x = tf.placeholder(tf.float64, [3])
    graph = tf.get_default_graph()
    with graph.gradient_override_map({"PyFunc": "TestPyFuncSquareGrad"}):
        y = tf.py_func(np.square, [x], tf.float64)
    assert y.op.get_attr("_gradient_op_type") == "TestPyFuncSquareGrad"
    loss = tf.reduce_sum(y * np.array([1.0, 2.0, 3.0]))
    grad = tf.gradients(loss, x)[0]
    x0 = np.array([0.5, -1.0, 2.0])
    with tf.Session() as sess:
        got = sess.run(grad, {x: x0})
        eps = 1e-6
        numeric = [(sess.run(loss, {x: x0 + eps * e}) - sess.run(loss, {x: x0 - eps * e}))
                   / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(got, numeric, rtol=1e-6)
    # Without an override, py_func has no gradient (None), as in TensorFlow.
    plain = tf.py_func(np.square, [x], tf.float64)
    assert tf.gradients(tf.reduce_sum(plain), x) == [None]


def test_override_map_on_a_builtin_op_and_registry_errors():
    @tf.RegisterGradient("TestTripleGrad")
    def _triple(op, grad):
        return grad * 3.0

    x = tf.constant([1.0, 2.0])
    with tf.get_default_graph().gradient_override_map({"Square": "TestTripleGrad"}):
        y = tf.square(x)
    np.testing.assert_array_equal(tf.Session().run(tf.gradients(tf.reduce_sum(y), x)[0]),
                                  [3.0, 3.0])
    with pytest.raises(KeyError, match="Registering two gradient with name 'TestTripleGrad'"):
        tf.RegisterGradient("TestTripleGrad")(_triple)
    with tf.get_default_graph().gradient_override_map({"Square": "NoSuchGrad"}):
        z = tf.square(x)
    with pytest.raises(LookupError, match="NoSuchGrad"):
        tf.gradients(z, x)

    @tf.RegisterGradient("TestRaisingGrad")
    def _raising(op, grad):
        raise ZeroDivisionError("from the gradient")

    with tf.get_default_graph().gradient_override_map({"Square": "TestRaisingGrad"}):
        w = tf.square(x)
    with pytest.raises(ZeroDivisionError, match="from the gradient"):
        tf.gradients(w, x)


def test_string_scalars_go_in_as_bytes_and_come_back_from_bytes_or_str():
    scalar = tf.py_func(lambda s: s + b"!", [tf.constant(b"ab")], tf.string)
    strings = tf.py_func(lambda s: np.array(["x", "yz"]), [tf.constant(b"ab")], tf.string)
    with tf.Session() as sess:
        assert sess.run(scalar) == b"ab!"
        assert sess.run(strings).tolist() == [b"x", b"yz"]


def test_py_function_runs_its_body_eagerly_in_a_graph_program():
    seen = []

    def body(a, b):
        seen.append((type(a).__name__, a.numpy().tolist(), b.numpy()))
        return tf.reduce_sum(a * 2.0) + b, 7  # TensorFlow ops run eagerly here

    x = tf.placeholder(tf.float32, [3])
    total, seven = tf.py_function(body, [x, 1.5], [tf.float32, tf.int32])
    upper = tf.py_function(lambda s: tf.strings.upper(s), [tf.constant(b"ab")], tf.string)
    assert not tf.executing_eagerly()
    with tf.Session() as sess:
        got = sess.run([total, seven, upper], {x: [1, 2, 3]})
    assert got == [13.5, 7, b"AB"] and got[1].dtype == np.int32
    assert seen == [("EagerTensor", [1.0, 2.0, 3.0], np.float32(1.5))]
    assert not tf.executing_eagerly()  # the body's eager mode stayed in its thread


def test_py_function_in_a_dataset_map_and_its_errors():
    dataset = tf.data.Dataset.range(3).map(
        lambda i: tf.py_function(lambda v: v * 10, [i], tf.int64))
    element = dataset.make_one_shot_iterator().get_next()
    bad = tf.py_function(lambda: np.float64(1.0), [], tf.float32)
    raising = tf.py_function(lambda v: 1 // 0, [tf.constant(1)], tf.int32)
    with tf.Session() as sess:
        assert [sess.run(element) for _ in range(3)] == [0, 10, 20]
        with pytest.raises(tf.errors.InvalidArgumentError, match="is double, but expects float"):
            sess.run(bad)
        with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError"):
            sess.run(raising)
