"""Assertions, check_numerics and tf.Print: TensorFlow's messages (checked against TF 2.x's
compat.v1), the summarized data, static failures, and bypassing by not depending on them."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import ops as ops_lib


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _fails(op, feed, pattern):
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(op, feed)
        # The session stays usable after a failed assertion.
        sess.run(tf.constant(1.0))
    assert pattern in info.value.message, info.value.message
    return info.value


def test_assert_lists_the_data_summarized():
    p = tf.placeholder(tf.float32, [3], name="p")
    check = tf.Assert(tf.reduce_min(p) > 0, ["p must be positive", p], summarize=2)
    assert check.type == "Assert" and check.name == "Assert/Assert"
    _fails(check, {p: [1, -2, np.nan]}, "assertion failed: [p must be positive] [1 -2...]")
    with tf.Session() as sess:
        sess.run(check, {p: [1, 2, 3]})


def test_binary_assertions_match_tensorflow_messages():
    p = tf.placeholder(tf.float32, [3], name="p")
    target = tf.constant([1.0, 2.0, 3.0], name="target")
    equal = tf.assert_equal(p, target, message="custom")
    _fails(equal, {p: [1, -2, np.nan]},
           "assertion failed: [custom] [Condition x == y did not hold element-wise:] "
           "[x (p:0) = ] [1 -2 nan] [y (target:0) = ] [1 2 3]")
    less = tf.debugging.assert_less(p, 2.0)
    _fails(less, {p: [1, -2, 3]}, "[Condition x < y did not hold element-wise:] [x (p:0) = ] "
           "[1 -2 3] [y (assert_less/y:0) = ] [2]")
    with tf.Session() as sess:
        sess.run(equal, {p: [1, 2, 3]})
        sess.run(less, {p: [1, -2, 1.5]})


def test_sign_assertions():
    p = tf.placeholder(tf.float32, [3], name="p")
    positive = tf.assert_positive(p)
    non_negative = tf.debugging.assert_non_negative(p, message="weights")
    assert positive.name == "assert_positive/assert_less/Assert/Assert"
    _fails(positive, {p: [1, -2, 3]},
           "assertion failed: [] [Condition x > 0 did not hold element-wise:] [x (p:0) = ] "
           "[1 -2 3]")
    _fails(non_negative, {p: [1, -2, 3]}, "[weights.  ] [Condition x >= 0 did not hold")
    with tf.Session() as sess:
        sess.run([positive, non_negative], {p: [1, 2, 3]})
        sess.run(non_negative, {p: [0, 2, 3]})


def test_assert_near():
    p = tf.placeholder(tf.float64, [2], name="p")
    near = tf.debugging.assert_near(p, tf.constant([1.0, 2.0], tf.float64), atol=0.01, rtol=0.0)
    with tf.Session() as sess:
        sess.run(near, {p: [1.005, 2.0]})
    _fails(near, {p: [1.0, 2.1]}, "x and y not equal to tolerance")


def test_static_failures_raise_while_building():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.assert_less(tf.constant([1, 5], name="a"), tf.constant([2, 3], name="b"))
    assert info.value.message == ("Condition x < y did not hold element-wise:\nx (a:0) = \n"
                                  "[1 5]\ny (b:0) = \n[2 3]")
    p = tf.placeholder(tf.float32, [3], name="p")
    with pytest.raises(ValueError, match=r"msg.  Tensor p:0 must have rank 2.  Received rank "
                                         r"1, shape \(3,\)"):
        tf.debugging.assert_rank(p, 2, message="msg")
    with pytest.raises(TypeError, match="p:0 must be of type tf.int32; got tf.float32"):
        tf.debugging.assert_type(p, tf.int32)
    with pytest.raises(ValueError, match="dimension 1 must have size 2"):
        tf.debugging.assert_shapes([(p[None], ("N", 2))])


def test_dynamic_rank_and_shape_checks():
    q = tf.placeholder(tf.float32, None, name="q")
    rank = tf.debugging.assert_rank(q, 2)
    _fails(rank, {q: [1.0, 2.0, 3.0]},
           "assertion failed: [] [Tensor q:0 must have rank] [2] [Received shape: ] [3]")
    r = tf.placeholder(tf.float32, [None, None], name="r")
    s = tf.placeholder(tf.float32, [None], name="s")
    shapes = tf.debugging.assert_shapes([(r, ("N", 2)), (s, ("N",))])
    with tf.Session() as sess:
        sess.run(shapes, {r: np.zeros((3, 2)), s: np.zeros(3)})
    _fails(shapes, {r: np.zeros((3, 2)), s: np.zeros(4)}, "did not hold")


def test_assertions_run_only_when_depended_on():
    p = tf.placeholder(tf.float32, [2])
    check = tf.assert_positive(p)
    unguarded = p * 2.0
    with tf.control_dependencies([check]):
        guarded = tf.identity(p * 2.0)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(unguarded, {p: [-1, 1]}), [-2, 2])
    _fails(guarded, {p: [-1, 1]}, "Condition x > 0")


def test_check_numerics_and_its_gradient():
    p = tf.placeholder(tf.float64, [3], name="p")
    checked = tf.debugging.check_numerics(p, "bad p")
    assert checked.op.type == "CheckNumerics"
    _fails(checked, {p: [1, np.nan, 3]}, "bad p : Tensor had NaN values")
    _fails(checked, {p: [1, np.inf, np.nan]}, "bad p : Tensor had Inf and NaN values")
    grad = tf.gradients(tf.reduce_sum(checked * 3.0), p)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad, {p: [1, 2, 3]}), [3, 3, 3])
    logged = tf.gradients(tf.reduce_sum(tf.log(checked)), p)[0]
    _fails(logged, {p: [0.0, 1.0, 2.0]},
           "Not a number (NaN) or infinity (Inf) values detected in gradient. bad p : Tensor "
           "had Inf values")


def test_debugging_names_of_the_finite_checks():
    p = tf.placeholder(tf.float32, [3])
    checked = tf.debugging.assert_all_finite(p, "bad p")  # TF1's verify_tensor_all_finite
    _fails(checked, {p: [1, np.inf, 3]}, "bad p : Tensor had Inf values")
    flags = [tf.debugging.is_finite(p), tf.debugging.is_nan(p), tf.debugging.is_inf(p)]
    with tf.Session() as sess:
        got = sess.run(flags, {p: [1, np.nan, -np.inf]})
    assert [g.tolist() for g in got] == [[True, False, False], [False, True, False],
                                         [False, False, True]]
    assert tf.debugging.is_numeric_tensor(p) and not tf.debugging.is_numeric_tensor(3.0)


def test_add_check_numerics_ops_finds_the_first_bad_tensor():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.log(x, name="y")
    tf.identity(y * 2.0, name="z")
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        sess.run(check, {x: [1.0, 2.0]})
    _fails(check, {x: [-1.0, 2.0]}, "y:0 : Tensor had NaN values")


def test_print_writes_to_stderr_with_first_n_and_summarize(capfd):
    x = tf.constant([[1.5, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = tf.Print(x, [x, tf.constant(7), tf.constant([1, 2, 3, 4, 5], tf.int64), "text",
                     tf.constant(0.1, tf.float64)], message="hello: ", first_n=2, summarize=4)
    with tf.Session() as sess:
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(y), [[1.5, 2, 3], [4, 5, 6]])
    err = capfd.readouterr().err
    line = "hello: [[1.5 2 3][4...]...][7][1 2 3 4...][text][0.1]"
    assert err.count(line) == 2, err
    grad = tf.gradients(tf.reduce_sum(y * 2.0), x)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), np.full((2, 3), 2.0))


def test_tf_print_formats_like_tensorflow(capfd, tmp_path):
    import sys
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4)
    op = tf.print("x is", x, tf.constant(True), tf.constant(7), [1, 2],
                  {"a": tf.constant(0.1, tf.float64)}, summarize=2, output_stream=sys.stdout,
                  sep="|", end="!\n")
    assert op.type == "PrintFormatted" and op.name == "PrintV2"
    elided = tf.print(tf.range(10), tf.constant(3.0))
    path = tmp_path / "log.txt"
    to_file = tf.print("value:", tf.constant([[1, 2], [3, 4]]), output_stream=f"file://{path}")
    with tf.Session() as sess:
        sess.run(op)
        sess.run(elided)
        sess.run(to_file)
        sess.run(to_file)
    captured = capfd.readouterr()
    # The text TensorFlow 2.x prints for the same program.
    assert captured.out == ("x is|[[[0 0.25 0.5 0.75]\n  [1 1.25 1.5 1.75]\n  [2 2.25 2.5 2.75]]"
                            "\n\n [[3 3.25 3.5 3.75]\n  [4 4.25 4.5 4.75]\n  [5 5.25 5.5 5.75]]]"
                            "|1|7|[1, 2]|{'a': 0.1}!\n")
    assert captured.err.endswith("[0 1 2 ... 7 8 9] 3\n")
    assert path.read_text() == "value: [[1 2]\n [3 4]]\n" * 2
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print(x, output_stream="nowhere")


def test_strings_format_and_print_v2_as_tensorflow_builds_tf_print(capfd):
    formatted = tf.strings.format("x={} and y={}", [tf.constant([1, 2, 3, 4, 5, 6, 7]),
                                                  tf.constant("hi")])
    matrix = tf.strings.format("m: {}", tf.reshape(tf.range(12.0), [3, 4]), summarize=1)
    printed = ops_lib.apply_op("PrintV2", [formatted], {"end": "!\n"})
    escaped = tf.strings.format("{}", tf.constant([b'a"b', b"c\nd", b"\xff\x01", "é".encode()]))
    with tf.Session() as sess:
        # Strings are quoted and C-escaped, bytes from 0x80 up kept (UTF-8), as in TensorFlow.
        assert sess.run(escaped) == b'["a\\"b" "c\\nd" "\xff\\001" "\xc3\xa9"]'
        sess.run(tf.print(tf.constant("hi")))
        assert capfd.readouterr().err == '"hi"\n'
    with tf.Session() as sess:
        # The strings TensorFlow 2.21 gives for the same calls.
        assert sess.run(formatted) == b'x=[1 2 3 ... 5 6 7] and y="hi"'
        assert sess.run(matrix) == b"m: [[0 ... 3]\n ...\n [8 ... 11]]"
        sess.run(printed)
    assert capfd.readouterr().err.endswith('x=[1 2 3 ... 5 6 7] and y="hi"!\n')
    with pytest.raises(ValueError, match="num placeholders in template and num inputs must "
                                         "match: 2 vs. 1"):
        tf.strings.format("{} {}", tf.constant(1))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be scalar"):
            sess.run(ops_lib.apply_op("PrintV2", [tf.constant(["a", "b"])], {}))
