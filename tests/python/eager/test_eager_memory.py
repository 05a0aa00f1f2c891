"""What eager execution keeps alive: variables live as long as a handle to them, and a gradient
tape holds only the values the backward pass reads. Also the C++ operators' fast path and the
per-shape cache of shape checks, which must not change results or errors."""

import gc

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework import ops


def _collected():
    gc.collect()
    return _C.eager_num_variables()


def test_a_dropped_variable_is_freed():
    before = _collected()
    for i in range(50):
        v = tf.Variable(np.full([64, 64], float(i), np.float32))
        v.assign_add(tf.ones([64, 64]))
        np.testing.assert_array_equal(v.numpy()[0, :2], [i + 1.0, i + 1.0])
        del v
    assert _collected() == before


def test_a_variable_lives_while_its_handle_does():
    before = _collected()
    v = tf.Variable([1.0, 2.0])
    handle = v.handle
    assert _collected() == before + 1
    del v
    # The handle still refers to the variable: reading through it works.
    value = ops.apply_op("ReadVariableOp", [handle], {"dtype": tf.float32}).outputs[0]
    np.testing.assert_array_equal(value.numpy(), [1.0, 2.0])
    assert _collected() == before + 1
    del handle
    assert _collected() == before


def test_a_value_read_from_a_freed_variable_stays_valid():
    v = tf.Variable([3.0, 4.0])
    value = v.read_value()
    array = v.numpy()
    del v
    gc.collect()
    np.testing.assert_array_equal(value.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(array, [3.0, 4.0])


def test_variables_of_a_training_loop_are_freed_with_the_model():
    before = _collected()
    w = tf.Variable(np.ones([3, 2], np.float32))
    opt = tf.train.GradientDescentOptimizer(0.1)
    x = tf.constant(np.ones([4, 3], np.float32))
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, w))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
    np.testing.assert_allclose(w.numpy(), np.full([3, 2], 1 - 3 * 0.4), rtol=1e-6)
    del w, tape, opt
    assert _collected() == before


def _held(tape):
    return set(tape._tape.held_ids)


def test_a_chain_of_adds_holds_no_values():
    x = tf.constant([1.0, 2.0, 3.0])
    c = tf.constant([0.5, 0.5, 0.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(100):
            y = y + c
    assert _held(tape) == set()
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 1.0, 1.0])


def test_a_chain_holds_what_each_gradient_reads():
    x = tf.constant([-2.0, -1.5, -1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        exps = [x]
        for _ in range(3):
            exps.append(tf.exp(exps[-1]))  # d exp(u) = exp(u) du: reads its output
        sines = [exps[-1]]
        for _ in range(5):
            sines.append(tf.sin(sines[-1]))  # d sin(u) = cos(u) du: reads its input
    ids = {t._handle.id: name for name, ts in (("exp", exps), ("sin", sines)) for t in ts}
    held = {ids.get(i, "other") for i in _held(tape)}
    assert held == {"exp", "sin"}
    assert _held(tape) == ({t._handle.id for t in exps[1:]} |
                           {t._handle.id for t in sines[:-1]})
    u = np.array([-2.0, -1.5, -1.0])
    grad = np.ones(3)
    for _ in range(3):
        grad = grad * np.exp(u)
        u = np.exp(u)
    for _ in range(5):
        grad = grad * np.cos(u)
        u = np.sin(u)
    np.testing.assert_allclose(tape.gradient(sines[-1], x).numpy(), grad, rtol=1e-5)


def test_a_broadcast_gradient_is_computed_from_shapes_alone():
    x = tf.constant([1.0, 2.0, 3.0])
    c = tf.constant(np.ones([2, 3], np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x + c  # the gradient sums over the broadcast rows, from the shapes of x and c
    assert _held(tape) == set()
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0, 2.0])


def test_an_unused_output_gets_zeros_from_its_shape():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        first, second = tf.split(x, 2)
        y = tf.reduce_sum(first * 3.0)
    assert second._handle.id not in _held(tape)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0, 0.0, 0.0])


def test_reduce_sum_of_a_square_holds_only_the_factors():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        square = x * x
        y = tf.reduce_sum(square)
    held = _held(tape)
    assert x._handle.id in held
    assert square._handle.id not in held and y._handle.id not in held
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


def test_second_derivatives_with_dropped_values():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x + x
        dy = inner.gradient(y, x)
    assert float(dy) == pytest.approx(13.0)
    assert float(outer.gradient(dy, x)) == pytest.approx(12.0)


def test_operators_run_in_cpp_and_match_the_python_path():
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([4.0, 5.0, 6.0])
    for result, expected in ((a + b, [5.0, 7.0, 9.0]), (a - b, [-3.0, -3.0, -3.0]),
                             (a * b, [4.0, 10.0, 18.0])):
        assert type(result) is type(a)
        assert result.dtype == tf.float32 and result.shape == (3,)
        np.testing.assert_array_equal(result.numpy(), expected)
    assert str(tf.constant([1, 2, 3]) + tf.constant([4, 5, 6])) == (
        "tf.Tensor([5 7 9], shape=(3,), dtype=int32)")
    with tf.device("/cpu:0"):  # a device scope takes the Python path
        assert "CPU:0" in (a + b).device
    np.testing.assert_array_equal((a + 1.0).numpy(), [2.0, 3.0, 4.0])


def test_operator_errors_keep_their_class_and_message():
    a = tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes.*\[Op:AddV2\]"):
        a + tf.constant([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot compute AddV2"):
        a + tf.constant([1, 2, 3])


def test_a_cached_shape_check_still_rejects_other_shapes_and_values():
    a = tf.constant([1.0, 2.0, 3.0])
    for _ in range(3):
        a * a
    with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
        a * tf.constant([1.0, 2.0])
    x = tf.constant(np.arange(6, dtype=np.float32))
    assert tf.reshape(x, [2, 3]).shape == (2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Op:Reshape"):
        tf.reshape(x, [4, 2])
    m = tf.constant(np.ones([2, 3], np.float32))
    for _ in range(2):
        np.testing.assert_array_equal(tf.reduce_sum(m, axis=1).numpy(), [3.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Op:Sum"):
        tf.reduce_sum(m, axis=5)  # same shapes as the calls before, another axis value


def test_integer_inputs_that_change_every_pass_keep_gradients_right():
    # Gather indices are small integer leaves like axes, but new each pass: after a few
    # programs with them as constants, one program reads them as inputs.
    x = tf.constant(np.arange(10, dtype=np.float32))
    for step in range(12):
        indices = [step % 10, (step * 3 + 1) % 10]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.gather(x, tf.constant(indices)) * 2.0)
        expected = np.zeros(10, np.float32)
        np.add.at(expected, indices, 2.0)
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), expected)
    for axis in (0, 1, 0, 1):  # axes: one program per value, reused
        m = tf.constant(np.ones([2, 3], np.float32))
        with tf.GradientTape() as tape:
            tape.watch(m)
            y = tf.reduce_sum(tf.reduce_sum(m * m, axis=axis))
        np.testing.assert_array_equal(tape.gradient(y, m).numpy(), np.full([2, 3], 2.0))
