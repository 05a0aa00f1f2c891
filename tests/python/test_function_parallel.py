"""Function bodies with independent expensive nodes run them at once on the inter-op pool when
called off its threads (a tf.function from eager code, a call op on the thread that called
Session.run), while their side effects keep the order they were written in, as TensorFlow's
automatic control dependencies keep a tf.function's."""

import numpy as np

import flowstone as tf
from flowstone.framework.func_graph import FuncGraph
from flowstone.framework.ops import apply_op

RNG = np.random.RandomState(7)
A = RNG.randn(64, 64).astype(np.float32)
B = RNG.randn(64, 64).astype(np.float32)


def _two_products(x):
    # Two MatMuls at the same depth: the plan of this body runs in parallel.
    return tf.matmul(x, tf.constant(A)), tf.matmul(x, tf.constant(B))


def _session(threads=2):
    config = tf.ConfigProto(inter_op_parallelism_threads=threads)
    return tf.Session(config=config)


def _products_function(name):
    """The function `name` of the default graph: x -> (x @ A, x @ B)."""
    body = FuncGraph(name, tf.get_default_graph())
    x = body.add_input(tf.float32, [64, 64])
    with body.as_default():
        outputs = list(_two_products(x))
    body.add_to_library([x], outputs)

    def call(value):
        return apply_op("PartitionedCall", [[value]],
                        {"f": name, "Tout": [tf.float32, tf.float32]}).outputs
    return call


def test_independent_products_of_a_function_run_on_two_threads_with_exact_results():
    products = _products_function("products")
    x = tf.placeholder(tf.float32, [64, 64])
    p, q = products(x)
    value = RNG.randn(64, 64).astype(np.float32)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    meta = tf.RunMetadata()
    with _session() as sess:
        got_p, got_q = sess.run([p, q], {x: value}, options=options, run_metadata=meta)
        again = sess.run([p, q], {x: value})
    np.testing.assert_allclose(got_p, value @ A, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_q, value @ B, rtol=1e-5, atol=1e-4)
    # Bit-identical from run to run, whichever thread ran which product.
    np.testing.assert_array_equal(again[0], got_p)
    np.testing.assert_array_equal(again[1], got_q)
    stats = [ns for dev in meta.step_stats.dev_stats for ns in dev.node_stats]
    threads = {ns.thread_id for ns in stats
               if ns.node_name in ("products/MatMul", "products/MatMul_1")}
    assert len(threads) == 2, [(ns.node_name, ns.thread_id) for ns in stats]


def test_one_inter_op_thread_runs_the_function_in_order_with_the_same_results():
    products = _products_function("products_one_thread")
    x = tf.placeholder(tf.float32, [64, 64])
    p, q = products(x)
    value = RNG.randn(64, 64).astype(np.float32)
    with _session(threads=2) as sess:
        two = sess.run([p, q], {x: value})
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    meta = tf.RunMetadata()
    with _session(threads=1) as sess:
        one = sess.run([p, q], {x: value}, options=options, run_metadata=meta)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


def test_a_parallel_function_called_inside_a_parallel_run_and_from_a_loop_body():
    products = _products_function("products_nested")
    x = tf.placeholder(tf.float32, [64, 64])
    # Two calls side by side: the pool's threads run one of them, in order, the caller's thread
    # the other, in parallel.
    left = products(x)
    right = products(x * 2.0)
    # And a call inside a while loop's body.
    _, looped = tf.while_loop(lambda i, acc: i < 3,
                              lambda i, acc: (i + 1, acc + products(x)[0]),
                              [tf.constant(0), tf.zeros([64, 64])])
    value = RNG.randn(64, 64).astype(np.float32)
    with _session() as sess:
        for _ in range(20):
            got_left, got_right, got_looped = sess.run([left, right, looped], {x: value})
    np.testing.assert_allclose(got_left[1], value @ B, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_right[0], 2.0 * value @ A, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(got_looped, 3.0 * (value @ A), rtol=1e-5, atol=1e-3)


def _eagerly(fn):
    tf.reset_default_graph()
    tf.enable_eager_execution()
    try:
        return fn()
    finally:
        tf.disable_eager_execution()
        tf.reset_default_graph()


def test_a_parallel_tf_function_keeps_its_side_effects_in_written_order():
    value = RNG.randn(64, 64).astype(np.float32)

    def run():
        v = tf.Variable(0.0)

        @tf.function
        def step(x):
            p, q = _two_products(x)
            # The writes wait for the products; the reads, which need nothing else, must still
            # wait for the writes written before them.
            v.assign(tf.reduce_sum(p) * 0.0 + 1.0)
            first = v.read_value()
            v.assign_add(tf.reduce_sum(q) * 0.0 + 2.0)
            second = v.read_value()
            return first, second, tf.reduce_sum(p) + tf.reduce_sum(q)

        seen = set()
        for _ in range(200):
            v.assign(0.0)
            first, second, total = step(tf.constant(value))
            seen.add((float(first.numpy()), float(second.numpy())))
        return seen, float(v.numpy()), float(total.numpy())

    seen, final, total = _eagerly(run)
    assert seen == {(1.0, 3.0)}
    assert final == 3.0
    expected = (value @ A).sum(dtype=np.float64) + (value @ B).sum(dtype=np.float64)
    np.testing.assert_allclose(total, expected, rtol=1e-4)


def test_eager_tf_function_training_step_equals_the_session_step():
    layers = [(20, 32), (32, 32), (32, 4)]
    weights = [RNG.randn(i, o).astype(np.float32) * 0.1 for i, o in layers]
    inputs = RNG.randn(16, 20).astype(np.float32)
    targets = RNG.randn(16, 4).astype(np.float32)

    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.Variable(w) for w in weights]
        h = tf.constant(inputs)
        for i, w in enumerate(variables):
            h = tf.matmul(h, w)
            if i < len(variables) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean((h - tf.constant(targets)) ** 2)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            expected = [sess.run([loss, train])[0] for _ in range(5)]
            expected_weights = sess.run(variables)

    def run():
        variables = [tf.Variable(w) for w in weights]
        xs, ys = tf.constant(inputs), tf.constant(targets)
        opt = tf.train.GradientDescentOptimizer(0.1)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                h = xs
                for i, w in enumerate(variables):
                    h = tf.matmul(h, w)
                    if i < len(variables) - 1:
                        h = tf.nn.relu(h)
                loss = tf.reduce_mean((h - ys) ** 2)
            grads = tape.gradient(loss, variables)
            opt.apply_gradients(zip(grads, variables))
            return loss

        return [float(step().numpy()) for _ in range(5)], [v.numpy() for v in variables]

    losses, final = _eagerly(run)
    np.testing.assert_allclose(losses, expected, rtol=1e-6)
    for got, want in zip(final, expected_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
