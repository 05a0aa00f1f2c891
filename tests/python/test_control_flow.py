"""tf.cond, tf.case and tf.while_loop over graph functions: values against numpy, nested
structures and captures, only the taken branch running, TF1 control-dependency semantics inside
bodies, construction-time errors with TF's messages, and gradients against float64 finite
differences."""

import collections

import numpy as np
import pytest

import flowstone as tf


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _finite_difference(f, x, eps=1e-6):
    """Central differences of scalar f at x (float64)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


# --- tf.cond -----------------------------------------------------------------------------------

def test_cond_runs_the_branch_its_predicate_picks():
    x = tf.placeholder(tf.float32, [3])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    assert y.shape.as_list() == [3]
    assert y.op.type == "Identity" and y.name == "cond/Identity:0"
    xv = np.array([1.0, -2.0, 3.5], np.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: xv, p: True}), xv * 2)
        np.testing.assert_array_equal(sess.run(y, {x: xv, p: False}), xv - 1)


def test_cond_op_mirrors_tf_functional_if():
    x = tf.placeholder(tf.float32, [])
    tf.cond(x > 0, lambda: x * 2.0, lambda: x * 3.0)
    op = tf.get_default_graph().get_operation_by_name("cond")
    assert op.type == "StatelessIf"
    assert op.get_attr("then_branch").startswith("cond_true")
    assert op.get_attr("else_branch").startswith("cond_false")
    # The predicate, then the captured x.
    assert [t.name for t in op.inputs] == ["Greater:0", "Placeholder:0"]


def test_cond_with_nested_structures_and_python_values():
    x = tf.constant(2.0)
    Pair = collections.namedtuple("Pair", "a b")
    out = tf.cond(tf.constant(False),
                  lambda: {"p": Pair(x, x + 1), "n": 1},
                  lambda: {"p": Pair(x * 10, x * 20), "n": 2})
    assert isinstance(out["p"], Pair)
    got = _run(out)
    assert got["n"] == 2 and got["p"].a == 20.0 and got["p"].b == 40.0


def test_nested_conds_capture_through_every_level():
    x = tf.placeholder(tf.float64, [])
    a = tf.placeholder(tf.bool, [])
    b = tf.placeholder(tf.bool, [])
    y = tf.cond(a, lambda: tf.cond(b, lambda: x + 1, lambda: x + 2), lambda: x * 0)
    with tf.Session() as sess:
        for av, bv, expected in [(True, True, 6), (True, False, 7), (False, True, 0)]:
            assert sess.run(y, {x: 5.0, a: av, b: bv}) == expected


def test_untaken_branch_that_would_fail_does_not_run():
    v = tf.Variable(3.0, name="never_initialized")
    zero = tf.placeholder(tf.int32, [])
    p = tf.placeholder(tf.bool, [])
    safe = tf.cond(p, lambda: v.read_value() * 2.0, lambda: tf.constant(1.0))
    ints = tf.cond(p, lambda: tf.constant(7) // zero, lambda: tf.constant(-1))
    with tf.Session() as sess:
        assert sess.run(safe, {p: False}) == 1.0
        assert sess.run(ints, {p: False, zero: 0}) == -1
        with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
            sess.run(safe, {p: True})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(ints, {p: True, zero: 0})
        # The session stays usable.
        assert sess.run(ints, {p: True, zero: 2}) == 3


def test_error_inside_a_branch_names_the_function_and_the_node():
    x = tf.placeholder(tf.float32, None)
    y = tf.cond(tf.constant(True), lambda: tf.reshape(x, [5], name="bad_reshape"),
                lambda: tf.zeros([5]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y, {x: np.zeros(3, np.float32)})
        message = str(info.value)
        assert "bad_reshape" in message
        assert "in function cond_true" in message
        assert "test_control_flow.py" in message  # the inner node's creation site
        assert info.value.op.name == "cond"


def test_cond_branch_mismatch_errors():
    p = tf.constant(True)
    with pytest.raises(ValueError, match="same number, type, and overall structure"):
        tf.cond(p, lambda: (tf.constant(1), tf.constant(2)), lambda: tf.constant(1))
    with pytest.raises(TypeError, match="have different types"):
        tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(1.0))
    with pytest.raises(TypeError, match="'true_fn' must be callable."):
        tf.cond(p, 1, lambda: 1)
    with pytest.raises(TypeError, match="'false_fn' must be callable."):
        tf.cond(p, lambda: 1, None)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: 1, lambda: 2)


def test_control_dependencies_inside_a_branch():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])

    def bump():
        with tf.control_dependencies([v.assign_add(1.0)]):
            return v.read_value() * 1.0

    y = tf.cond(p, bump, lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y, {p: True}) == 1.0
        assert sess.run(y, {p: False}) == -1.0
        assert sess.run(y, {p: True}) == 2.0
        assert sess.run(v) == 2.0


def test_outer_control_dependency_used_inside_a_branch_runs_before_the_call():
    v = tf.Variable(1.0)
    assign = v.assign(5.0)

    def branch():
        with tf.control_dependencies([assign]):
            return v.read_value() + 0.0

    y = tf.cond(tf.constant(True), branch, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 5.0


# --- tf.case -----------------------------------------------------------------------------------

def test_case_picks_the_first_true_predicate_or_the_default():
    x = tf.placeholder(tf.int32, [])
    y = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))],
                default=lambda: tf.constant(100))
    no_default = tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))])
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 100]
        # Without a default, the last callable is the default.
        assert [sess.run(no_default, {x: v}) for v in (-5, 0, 5)] == [-1, 1, 1]
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(x < 0, 1)], default=lambda: 2)


# --- tf.while_loop -----------------------------------------------------------------------------

def test_while_loop_sums_and_returns_a_single_tensor_for_one_loop_var():
    n = tf.placeholder(tf.int32, [])
    i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [0])
    assert isinstance(i, tf.Tensor) and i.dtype == tf.int32
    assert _run(i, {n: 17}) == 17
    op = tf.get_default_graph().get_operation_by_name("while")
    assert op.type == "StatelessWhile"
    assert op.get_attr("cond").startswith("while_cond")
    assert op.get_attr("body").startswith("while_body")


def test_while_loop_with_nested_loop_vars():
    x = tf.constant([1.0, 2.0])
    State = collections.namedtuple("State", "step acc")

    def body(state, extra):
        return State(state.step + 1, state.acc * 2.0 + x), {"k": extra["k"] - 1}

    out = tf.while_loop(lambda s, e: s.step < 3, body,
                        (State(tf.constant(0), tf.zeros([2])), {"k": tf.constant(10)}))
    state, extra = _run(out)
    assert state.step == 3 and extra["k"] == 7
    acc = np.zeros(2)
    for _ in range(3):
        acc = acc * 2 + np.array([1.0, 2.0])
    np.testing.assert_allclose(state.acc, acc)


def test_maximum_iterations_stops_the_loop():
    i, j = tf.while_loop(lambda i, j: True, lambda i, j: (i + 1, j * 2), [0, 1],
                         maximum_iterations=5)
    assert _run([i, j]) == [5, 32]
    k = tf.while_loop(lambda k: k < 3, lambda k: k + 1, [0], maximum_iterations=10)
    assert _run(k) == 3
    # A number as the condition: true while nonzero, as in TF.
    assert _run(tf.while_loop(lambda c: c, lambda c: c - 1, [3])) == 0


def test_shape_invariants_let_a_loop_var_grow():
    x = tf.while_loop(lambda x: tf.shape(x)[0] < 8, lambda x: tf.concat([x, x], 0),
                      [tf.ones([1])], shape_invariants=[tf.TensorShape([None])])
    assert x.shape.as_list() == [None]
    np.testing.assert_array_equal(_run(x), np.ones(8))


def test_malformed_loops_fail_at_construction_with_tf_messages():
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [0, 1])
    with pytest.raises(TypeError, match=r"enters the loop with type <dtype: 'int32'> but has "
                                        r"type <dtype: 'float32'> after 1 iteration"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [0])
    with pytest.raises(ValueError, match=r"enters the loop with shape \(2,\), but has shape "
                                         r"\(4,\) after one iteration"):
        tf.while_loop(lambda x: tf.reduce_sum(x) < 3, lambda x: tf.concat([x, x], 0),
                      [tf.ones([2])])
    with pytest.raises(TypeError, match="'cond' must be callable."):
        tf.while_loop(1, lambda i: i, [0])
    with pytest.raises(TypeError, match="'body' must be callable."):
        tf.while_loop(lambda i: i < 1, None, [0])


def test_variable_assigned_in_the_body_is_read_fresh_each_iteration():
    v = tf.Variable(1.0)

    def body(i, acc):
        with tf.control_dependencies([v.assign_add(1.0)]):
            return i + 1, acc + v.read_value()

    _, acc = tf.while_loop(lambda i, acc: i < 4, body, [0, tf.constant(0.0)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(acc) == 2.0 + 3.0 + 4.0 + 5.0
        assert sess.run(v) == 5.0


def test_loops_in_conds_and_conds_in_loops():
    n = tf.placeholder(tf.int32, [])
    p = tf.placeholder(tf.bool, [])
    in_cond = tf.cond(p, lambda: tf.while_loop(lambda i: i < n, lambda i: i + 2, [0]),
                      lambda: tf.constant(-1))
    collatz_steps = tf.while_loop(
        lambda x, s: x > 1,
        lambda x, s: (tf.cond(tf.equal(x % 2, 0), lambda: x // 2, lambda: 3 * x + 1), s + 1),
        [n, 0])[1]
    with tf.Session() as sess:
        assert sess.run(in_cond, {n: 7, p: True}) == 8
        assert sess.run(in_cond, {n: 7, p: False}) == -1
        assert sess.run(collatz_steps, {n: 27}) == 111


def test_nested_while_loops():
    def outer_body(i, total):
        inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + j), [0, 0])[1]
        return i + 1, total + inner

    total = tf.while_loop(lambda i, t: i < 5, outer_body, [0, 0])[1]
    assert _run(total) == sum(sum(range(i)) for i in range(5))


# --- gradients ---------------------------------------------------------------------------------

def test_gradient_through_cond_matches_finite_differences():
    x = tf.placeholder(tf.float64, [3])
    w = tf.constant([0.5, -1.5, 2.0], tf.float64)
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.reduce_sum(tf.tanh(x) * w), lambda: tf.reduce_sum(x * x * x))
    (g,) = tf.gradients(y, [x])
    xv = np.array([0.3, -0.7, 1.1])
    with tf.Session() as sess:
        for pv in (True, False):
            expected = _finite_difference(lambda v: sess.run(y, {x: v, p: pv}), xv)
            np.testing.assert_allclose(sess.run(g, {x: xv, p: pv}), expected, rtol=1e-6)


def test_gradient_through_cond_to_an_input_used_in_one_branch_only():
    x = tf.placeholder(tf.float64, [])
    z = tf.placeholder(tf.float64, [])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: x * z, lambda: x * 2.0)
    gx, gz = tf.gradients(y, [x, z])
    with tf.Session() as sess:
        assert sess.run([gx, gz], {x: 3.0, z: 4.0, p: True}) == [4.0, 3.0]
        assert sess.run([gx, gz], {x: 3.0, z: 4.0, p: False}) == [2.0, 0.0]


def test_gradient_through_nested_conds_and_variables():
    v = tf.Variable(np.array([1.0, 2.0]), dtype=tf.float64)
    x = tf.placeholder(tf.float64, [2])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.cond(p, lambda: tf.reduce_sum(tf.exp(v) * x),
                                   lambda: tf.constant(0.0, tf.float64)),
                lambda: tf.reduce_sum(v))
    gv, gx = tf.gradients(y, [v, x])
    xv = np.array([0.5, -0.25])
    with tf.Session() as sess:
        sess.run(v.initializer)
        got_v, got_x = sess.run([gv, gx], {x: xv, p: True})
        np.testing.assert_allclose(got_v, np.exp([1.0, 2.0]) * xv, rtol=1e-12)
        np.testing.assert_allclose(got_x, np.exp([1.0, 2.0]), rtol=1e-12)
        np.testing.assert_allclose(sess.run(gv, {x: xv, p: False}), [1.0, 1.0])


def test_second_derivative_through_cond():
    x = tf.placeholder(tf.float64, [])
    y = tf.cond(x > 0, lambda: x * x * x, lambda: -x)
    (g,) = tf.gradients(y, [x])
    (h,) = tf.gradients(g, [x])
    with tf.Session() as sess:
        assert sess.run([g, h], {x: 2.0}) == [12.0, 12.0]
        assert sess.run([g, h], {x: -2.0})[0] == -1.0


def test_gradient_through_while_loop_matches_finite_differences():
    x = tf.placeholder(tf.float64, [2, 2])
    w = tf.placeholder(tf.float64, [2, 2])
    n = tf.placeholder(tf.int32, [])
    # The body uses a captured tensor (w) and an integer loop variable (i).
    _, y = tf.while_loop(lambda i, h: i < n,
                         lambda i, h: (i + 1, tf.tanh(tf.matmul(w, h)) + tf.cast(i, tf.float64)),
                         [0, x])
    loss = tf.reduce_sum(y * tf.constant([[1.0, -2.0], [0.5, 3.0]], tf.float64))
    gx, gw = tf.gradients(loss, [x, w])
    xv = np.array([[0.2, -0.4], [0.7, 0.1]])
    wv = np.array([[0.9, -0.3], [0.4, 0.6]])
    with tf.Session() as sess:
        for steps in (0, 1, 4):
            got_x, got_w = sess.run([gx, gw], {n: steps, x: xv, w: wv})
            fd_x = _finite_difference(lambda v: sess.run(loss, {x: v, w: wv, n: steps}), xv)
            fd_w = _finite_difference(lambda v: sess.run(loss, {x: xv, w: v, n: steps}), wv)
            np.testing.assert_allclose(got_x, fd_x, rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(got_w, fd_w, rtol=1e-6, atol=1e-9)


def test_gradient_through_while_loop_with_maximum_iterations_and_a_variable():
    v = tf.Variable(np.array([0.5, -1.0]), dtype=tf.float64)
    x = tf.placeholder(tf.float64, [2])
    y = tf.while_loop(lambda a: tf.reduce_sum(a) < 100.0, lambda a: a * v.read_value() + 1.0,
                      [x], maximum_iterations=3)
    gx, gv = tf.gradients(tf.reduce_sum(y), [x, v])
    xv = np.array([1.5, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        got_x, got_v = sess.run([gx, gv], {x: xv})
        vv = np.array([0.5, -1.0])
        np.testing.assert_allclose(got_x, vv ** 3, rtol=1e-12)
        # y = x v^3 + v^2 + v + 1 per element.
        np.testing.assert_allclose(got_v, 3 * xv * vv ** 2 + 2 * vv + 1, rtol=1e-12)


def test_back_prop_false_stops_gradients_at_the_loop():
    x = tf.placeholder(tf.float64, [])
    y = tf.while_loop(lambda a: a < 10.0, lambda a: a * 2.0, [x], back_prop=False)
    (g,) = tf.gradients(y * x, [x])
    with tf.Session() as sess:
        # d(y x)/dx with y held constant; with back_prop the loop's y = 4x would give 24.
        assert sess.run([y, g], {x: 3.0}) == [12.0, 12.0]


def test_loop_gradient_run_records_during_the_forward_loop():
    """A run that fetches a loop's result and its gradient runs the forward loop once: the
    gradient's recording loop stands in for it (graph/loop_stand_in.h). The counter the body
    increments shows how many loop iterations ran."""
    counter = tf.Variable(0, name="counter")
    x = tf.constant(1.5, tf.float64)

    def body(i, y):
        with tf.control_dependencies([counter.assign_add(1)]):
            return i + 1, y * tf.sin(y) + 0.1

    _, y = tf.while_loop(lambda i, y: i < 5, body, [0, x])
    grad = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        sess.run(counter.initializer)

        def iterations_run(fetches):
            before = sess.run(counter)
            values = sess.run(fetches)
            return sess.run(counter) - before, values

        forward_only, y_value = iterations_run(y)
        gradient_only, g_value = iterations_run(grad)
        both, (y_both, g_both) = iterations_run([y, grad])
    assert forward_only == 5
    assert both == gradient_only  # no separate forward loop
    assert y_both == y_value and g_both == g_value


def test_optimizer_updates_built_in_a_cond_branch_run_only_when_it_is_taken():
    v = tf.Variable(1.0)
    opt = tf.train.AdamOptimizer(0.5)
    grads = opt.compute_gradients(v * 2.0, var_list=[v])
    pred = tf.placeholder(tf.bool, [])

    def apply():
        with tf.control_dependencies([opt.apply_gradients(grads)]):
            return tf.constant(1)

    step = tf.cond(pred, apply, lambda: tf.constant(0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(step, {pred: False}) == 0
        assert sess.run(v) == 1.0
        assert sess.run(step, {pred: True}) == 1
        np.testing.assert_allclose(sess.run(v), 0.5, rtol=1e-5)  # Adam's first step: lr * sign


def test_minimize_inside_a_cond_branch_differentiates_the_outer_variables():
    v = tf.Variable(1.0)
    unused = tf.Variable(5.0)
    pred = tf.placeholder(tf.bool, [])

    def train():
        loss = tf.square(v) * 2.0
        step = tf.train.GradientDescentOptimizer(0.25).minimize(loss, var_list=[v])
        with tf.control_dependencies([step]):
            return tf.identity(loss)

    step = tf.cond(pred, train, lambda: tf.constant(-1.0))
    grads = tf.cond(pred, lambda: tf.gradients(tf.square(v) * 3.0, [v])[0],
                    lambda: tf.constant(0.0))
    with pytest.raises(ValueError, match="No gradients provided"):
        tf.cond(pred, lambda: tf.train.GradientDescentOptimizer(0.1).minimize(
            tf.square(v), var_list=[unused]), lambda: tf.no_op())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(step, {pred: False}) == -1.0 and sess.run(v) == 1.0
        assert sess.run(grads, {pred: True}) == 6.0
        assert sess.run(step, {pred: True}) == 2.0
        assert sess.run(v) == 0.0  # 1 - 0.25 * d(2 v^2)/dv


def test_branches_returning_operations_give_the_predicate_after_running_them():
    # TF1 code writes tf.cond(pred, lambda: train_op_fn(), tf.no_op): the cond's value is the
    # predicate, read after the taken branch's Operation ran.
    v = tf.Variable(0.0)
    pred = tf.placeholder(tf.bool, [])
    step = tf.cond(pred, lambda: v.assign_add(1.0).op, tf.no_op)
    mixed = tf.cond(pred, lambda: (tf.no_op(), tf.constant(1)),
                    lambda: (v.assign_add(10.0).op, tf.constant(2)))
    outer = v.assign_add(100.0).op
    before = tf.cond(pred, lambda: outer, tf.no_op)
    assert step.dtype == tf.bool
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(step, {pred: True}) is np.True_ and sess.run(v) == 1.0
        assert sess.run(step, {pred: False}) is np.False_ and sess.run(v) == 1.0
        assert sess.run(mixed, {pred: False}) == (False, 2) and sess.run(v) == 11.0
        # An Operation made outside the branch runs before the cond, whichever branch is taken.
        assert not sess.run(before, {pred: False}) and sess.run(v) == 111.0
