"""tf.autograph's entry points in graph mode: to_graph (converted functions building tf.cond and
tf.while_loop in a graph a Session runs), to_code, do_not_convert, the Feature flags, and what
happens to functions that cannot be converted."""

import logging

import numpy as np
import pytest

import flowstone as tf


def collatz_steps(n):
    steps = 0
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def test_to_graph_builds_a_while_loop_a_session_runs():
    converted = tf.autograph.to_graph(collatz_steps)
    n = tf.placeholder(tf.int32, [])
    steps = converted(n)
    assert any(op.type in ("While", "StatelessWhile")
               for op in tf.get_default_graph().get_operations())
    with tf.Session() as sess:
        assert [sess.run(steps, {n: v}) for v in (1, 6, 7, 27)] == [0, 8, 16, 111]
    assert converted(27) == 111  # Python values still run as Python


def test_to_code_returns_the_converted_source():
    code = tf.autograph.to_code(collatz_steps)
    assert code.startswith("def collatz_steps(n):")
    assert "ag__.while_stmt(" in code and "ag__.if_stmt(" in code
    compile(code, "<to_code>", "exec")


def test_to_graph_of_a_method_and_a_tf_function():
    class Clipper:
        limit = 2.0

        def clip(self, x):
            if x > self.limit:
                x = tf.constant(self.limit)
            return x

    clip = tf.autograph.to_graph(Clipper().clip)
    wrapped = tf.autograph.to_graph(tf.function(collatz_steps))
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        assert sess.run(clip(x), {x: 5.0}) == 2.0 and sess.run(clip(x), {x: 1.5}) == 1.5
        assert sess.run(wrapped(tf.constant(6))) == 8


def test_tf_function_in_graph_mode_is_converted():
    @tf.function
    def relu_sum(x):
        total = 0.0
        for v in x:
            if v > 0:
                total += v
        return total

    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        assert sess.run(relu_sum(x), {x: [1.0, -2.0, 3.0]}) == 4.0
        assert sess.run(relu_sum(x), {x: []}) == 0.0


def test_do_not_convert_with_and_without_parentheses_keeps_the_function():
    @tf.autograph.experimental.do_not_convert
    def double(x):
        return x * 2.0

    @tf.autograph.experimental.do_not_convert()
    def triple(x):
        return x * 3.0

    assert double.__name__ == "double" and triple.__name__ == "triple"
    assert tf.autograph.do_not_convert is tf.autograph.experimental.do_not_convert
    traced = tf.function(lambda x: double(x) + triple(x))
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(traced(x), {x: [1.0, 2.0]}), [5.0, 10.0])


def test_verbosity_and_feature_flags():
    before = tf.autograph.get_verbosity()
    tf.autograph.set_verbosity(3)
    assert tf.autograph.get_verbosity() == 3
    tf.autograph.set_verbosity(before)
    assert tf.autograph.experimental.Feature.ALL.value == "ALL"
    assert tf.autograph.experimental.Feature.LISTS.name == "LISTS"
    tf.autograph.experimental.set_loop_options(maximum_iterations=3)  # outside a loop: nothing


def test_set_loop_options_maximum_iterations_bounds_a_tensor_loop():
    def count(n):
        i = 0
        while i < n:
            tf.autograph.experimental.set_loop_options(maximum_iterations=4)
            i += 1
        return i

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(count)(tf.constant(10))) == 4


def test_a_function_without_source_runs_unconverted_with_a_warning(caplog):
    namespace = {"tf": tf}
    exec("def no_source(x):\n    return x + 1.0\n", namespace)  # noqa: S102 - no file behind it
    traced = tf.function(namespace["no_source"])
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        with tf.Session() as sess:
            assert sess.run(traced(tf.constant(1.0))) == 2.0
    assert any("AutoGraph could not transform" in r.getMessage() and "run it as-is" in
               r.getMessage() for r in caplog.records)
    with pytest.raises(Exception, match="could not get source code"):
        tf.autograph.to_graph(namespace["no_source"])


def test_builtins_and_lambdas_run_as_they_are():
    @tf.function
    def f(x):
        scale = (lambda v: v * 2.0)(x)
        return max(1.0, 2.0) * scale + len([1, 2])

    with tf.Session() as sess:
        assert sess.run(f(tf.constant(1.0))) == 6.0


def test_an_undefined_loop_variable_gets_tensorflows_message():
    def f(x):
        for v in x:
            total = total + v  # noqa: F821 - defined nowhere before the loop
        return total

    with pytest.raises(ValueError, match="'total' must be defined before the loop\n"
                                         "Note: AutoGraph tried to define it automatically"):
        tf.autograph.to_graph(f)(tf.constant([1.0, 2.0]))


def test_len_of_tensors_static_and_dynamic():
    @tf.function
    def f(x):
        return len(x)

    x = tf.placeholder(tf.float32, [None, 3])
    with tf.Session() as sess:
        assert sess.run(f(x), {x: np.zeros((5, 3))}) == 5
    assert f(tf.zeros([4, 2])) == 4  # known statically: a Python int


def test_a_lambda_traced_by_tf_function_is_converted():
    def clip(v):
        if v > 1.0:
            v = tf.constant(1.0)
        return v

    traced = tf.function(lambda x: clip(x) * 2.0 if x > 0 else x)
    with tf.Session() as sess:
        assert [sess.run(traced(tf.constant(v))) for v in (5.0, 0.25, -3.0)] == [2.0, 0.5, -3.0]


def test_lazy_and_keeps_an_index_in_range():
    def count_positive_prefix(x):
        i = 0
        n = tf.shape(x)[0]
        while i < n and x[i] > 0:
            i += 1
        return i

    x = tf.placeholder(tf.float32, [None])
    count = tf.autograph.to_graph(count_positive_prefix)(x)
    with tf.Session() as sess:
        assert sess.run(count, {x: [1.0, 2.0, -1.0, 3.0]}) == 2
        assert sess.run(count, {x: [1.0, 2.0]}) == 2  # x[2] is never read


def test_continue_break_and_nested_functions_in_a_tensor_loop():
    def f(n):
        def odd(i):
            return i % 2 == 1

        total = 0
        i = 0
        while i < n:
            i += 1
            if odd(i):
                continue
            if i > 8:
                break
            total += i
        return total

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(f)(tf.constant(20))) == 2 + 4 + 6 + 8
    assert f(20) == 20


def test_a_dataset_loop_with_a_break():
    def f(ds):
        total = tf.constant(0, tf.int64)
        for x in ds:
            if x > 3:
                break
            total += x
        return total

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(f)(tf.data.Dataset.range(10))) == 6


def test_super_in_a_converted_method():
    class Base:
        def scale(self, x):
            return x * 2.0

    class Child(Base):
        def scale(self, x):
            y = super().scale(x)
            if y > 4.0:
                y = y - 4.0
            return y

    traced = tf.function(Child().scale)
    with tf.Session() as sess:
        assert sess.run(traced(tf.constant(3.0))) == 2.0
        assert sess.run(traced(tf.constant(1.0))) == 2.0


def test_nonlocal_and_global_names_are_not_loop_state():
    calls = []

    def f(x):
        seen = 0

        def note(v):
            nonlocal seen
            if v > 0:
                seen += 1
            calls.append(v)
            return seen

        for k in range(3):
            note(k)
        if x > 0:
            x = x + seen
        return x

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(f)(tf.constant(1))) == 3
    assert calls == [0, 1, 2]


def test_a_python_while_whose_test_becomes_a_tensor_continues_as_a_loop_op():
    def f(limit):
        i = 0
        bound = 2
        while i < bound:
            i += 1
            bound = limit  # a tensor from the second test on
        return i

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(f)(tf.constant(7))) == 7


def test_print_in_a_graph_prints_when_the_op_runs(capfd):
    def f(x):
        print("x is", x, sep=" ")
        return x

    printed = tf.autograph.to_graph(f)
    x = tf.placeholder(tf.float32, [2])
    out = printed(x)
    printing = [op for op in tf.get_default_graph().get_operations() if "print" in op.name]
    with tf.Session() as sess:
        sess.run([out] + printing, {x: [1.5, 2.5]})
    assert "x is [1.5 2.5]" in capfd.readouterr().out


def test_a_function_under_a_user_decorator_is_converted_with_its_wrapper():
    import functools

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            calls.append(fn.__name__)
            return fn(*args)
        return wrapper

    calls = []

    @logged
    def halve_if_big(x):
        if x > 10.0:
            x = x / 2.0
        return x

    traced = tf.function(halve_if_big)
    with tf.Session() as sess:
        assert sess.run(traced(tf.constant(30.0))) == 15.0
        assert sess.run(traced(tf.constant(3.0))) == 3.0
    assert calls == ["halve_if_big", "halve_if_big"]


def test_a_keras_call_with_a_tensor_if_fits_in_graph_mode():
    class SignFlip(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1, kernel_initializer="ones")

        def call(self, x, training=None):
            y = self.dense(x)
            if training:
                y = y * 1.0
            if tf.reduce_sum(x) > 0:
                y = -y
            return y

    model = SignFlip()
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((4, 2), np.float32)
    model.fit(x, np.zeros((4, 1), np.float32), epochs=1, verbose=0)
    kernel, bias = model.dense.get_weights()
    expected_positive = -(x @ kernel + bias)
    expected_negative = -x @ kernel + bias
    np.testing.assert_allclose(model.predict(x), expected_positive, rtol=1e-5)
    np.testing.assert_allclose(model.predict(-x), expected_negative, rtol=1e-5)


def test_a_tf_function_given_to_dataset_map_is_converted():
    @tf.function
    def clip(x):
        if x > 2:
            x = tf.constant(2, tf.int64)
        return x

    element = tf.data.Dataset.range(5).map(clip).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(element) for _ in range(5)] == [0, 1, 2, 2, 2]


def test_while_true_with_a_tensor_break_and_a_return_in_a_try():
    def first_multiple(n, k):
        i = 1
        while True:
            if i * k >= n:
                break
            i += 1
        try:
            if i > 100:
                return -1
            return i * k
        except ZeroDivisionError:
            return -2

    with tf.Session() as sess:
        assert sess.run(tf.autograph.to_graph(first_multiple)(tf.constant(20), 3)) == 21
    assert first_multiple(20, 3) == 21
