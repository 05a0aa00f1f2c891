"""tf.function: traces per signature, runs the compiled PartitionedCall plan."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf


def test_retraces_on_new_shapes_dtypes_and_python_values():
    v = tf.Variable(2.0)

    @tf.function
    def f(x, n=2):
        return x * v + n

    assert float(f(tf.constant(3.0))) == 8.0
    assert float(f(tf.constant(4.0))) == 10.0
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [4.0, 6.0])
    assert f.experimental_get_tracing_count() == 2
    assert float(f(tf.constant(1.0), n=5)) == 7.0
    assert f.experimental_get_tracing_count() == 3
    v.assign(10.0)  # variables are read when the function runs, not when it was traced
    assert float(f(tf.constant(1.0))) == 12.0
    assert f.experimental_get_tracing_count() == 3


def test_input_signature():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def total(x):
        return tf.reduce_sum(x)

    assert float(total(tf.constant([1.0, 2.0]))) == 3.0
    assert float(total(tf.constant([1.0, 2.0, 3.0]))) == 6.0
    assert float(total([1, 2])) == 3.0  # converted to the signature's dtype
    assert float(total(np.array([0.5, 0.25], np.float32))) == 0.75
    assert total.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="Python inputs incompatible with input_signature"):
        total(tf.constant([[1.0]]))


def test_get_concrete_function_and_nested_calls():
    @tf.function
    def inner(x):
        return x * 2.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    concrete = outer.get_concrete_function(tf.TensorSpec([], tf.float32))
    assert float(concrete(tf.constant(3.0))) == 7.0
    assert float(outer(tf.constant(3.0))) == 7.0
    assert len(concrete.inputs) == 1


def test_variables_only_on_the_first_call():
    class Model:
        def __init__(self):
            self.w = None

        @tf.function
        def __call__(self, x):
            if self.w is None:
                self.w = tf.Variable(tf.ones([3, 2]))
            return tf.matmul(x, self.w)

    m = Model()
    np.testing.assert_array_equal(m(tf.ones([1, 3])).numpy(), [[3.0, 3.0]])
    np.testing.assert_array_equal(m(tf.ones([2, 3])).numpy(), [[3.0, 3.0]] * 2)

    @tf.function
    def makes_a_variable_each_trace(x):
        return tf.Variable(2.0) * x

    assert float(makes_a_variable_each_trace(tf.constant(1.0))) == 2.0
    with pytest.raises(ValueError, match="tf.function only supports singleton tf.Variables "
                                         "created on the first call"):
        makes_a_variable_each_trace(tf.constant([1.0]))


def test_cond_inside_a_function():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: x * 2.0, lambda: -x)

    assert float(f(tf.constant(3.0))) == 6.0
    assert float(f(tf.constant(-3.0))) == 3.0


def test_training_step_matches_eager_step():
    def make():
        w = tf.Variable([[1.0], [2.0]])
        return w, tf.train.GradientDescentOptimizer(0.1)

    x, y = tf.constant([[1.0, 1.0]]), tf.constant([[1.0]])

    def step(w, opt):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
        grads = tape.gradient(loss, [w])
        opt.apply_gradients(zip(grads, [w]))
        return loss

    w_eager, opt_eager = make()
    w_fn, opt_fn = make()
    traced = tf.function(lambda: step(w_fn, opt_fn))
    for expected_loss in (4.0, 1.44):
        assert float(step(w_eager, opt_eager)) == pytest.approx(expected_loss)
        assert float(traced()) == pytest.approx(expected_loss)
    np.testing.assert_allclose(w_fn.numpy(), w_eager.numpy())
    np.testing.assert_allclose(w_fn.numpy().ravel(), [0.36, 1.36], rtol=1e-6)


def test_function_errors_are_tf_errors():
    @tf.function
    def bad(x):
        return tf.matmul(x, x)

    with pytest.raises(ValueError, match="Dimensions must be equal"):
        bad(tf.ones([2, 3]))


def test_contrib_eager_helpers():
    v = tf.contrib.eager.Variable(3.0)
    grads_and_vars = tf.contrib.eager.implicit_gradients(lambda: v * v)()
    assert float(grads_and_vars[0][0]) == 6.0 and grads_and_vars[0][1] is v
    value, _ = tf.contrib.eager.implicit_value_and_gradients(lambda: v * v)()
    assert float(value) == 9.0
    grads = tf.contrib.eager.gradients_function(lambda a, b: a * b)(2.0, 5.0)
    assert [float(g) for g in grads] == [5.0, 2.0]
    assert tf.contrib.eager.defun is tf.function


def test_virtual_devices_are_fixed_after_the_first_eager_op():
    script = textwrap.dedent("""
        import flowstone as tf
        tf.enable_eager_execution()
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
        tf.constant(1.0) + 1.0
        try:
            tf.config.set_logical_device_configuration(cpu, None)
        except RuntimeError as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Virtual devices cannot be modified after being initialized\n"


def test_a_function_called_under_a_tape_is_differentiated():
    w = tf.Variable([1.0, 2.0])

    @tf.function
    def loss(x):
        return tf.reduce_sum(w * x * x)

    x = tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_allclose(gx.numpy(), [6.0, 16.0])  # 2 w x
    np.testing.assert_allclose(gw.numpy(), [9.0, 16.0])  # x^2


def test_a_tape_inside_a_function_watches_its_argument():
    @tf.function
    def grad_of_cube(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * x * x)
        return tape.gradient(y, x)

    np.testing.assert_allclose(grad_of_cube(tf.constant([1.0, -2.0])).numpy(), [3.0, 12.0])


def test_run_functions_eagerly_runs_the_python_body_each_call():
    calls = []

    @tf.function
    def f(x):
        calls.append(x.numpy() if hasattr(x, "numpy") else None)
        return x * 2.0

    assert not tf.config.functions_run_eagerly()
    f(tf.constant(1.0))
    f(tf.constant(2.0))
    assert len(calls) == 1 and calls[0] is None  # traced once: x was a symbolic tensor
    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        assert float(f(tf.constant(3.0))) == 6.0
        assert calls[1:] == [3.0]  # the body ran with an eager tensor
    finally:
        tf.config.run_functions_eagerly(False)
    assert float(f(tf.constant(4.0))) == 8.0 and len(calls) == 2


def test_py_function_in_eager_mode_and_in_a_tf_function():
    def double(a):
        assert type(a).__name__ == "EagerTensor"
        return a * 2.0

    assert float(tf.py_function(double, [tf.constant(3.0)], tf.float32)) == 6.0

    @tf.function
    def traced(x):
        return tf.py_function(double, [x], tf.float32) + 1.0

    assert float(traced(tf.constant(4.0))) == 9.0
