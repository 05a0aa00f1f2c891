"""Optimizers: each update rule against its formula over several steps, slots, global step,
and learning-rate schedules."""

import numpy as np
import pytest

import flowstone as tf

W0 = np.array([1.0, -2.0, 3.0])
G = np.array([0.5, -1.5, 2.0])   # d loss / d w for loss = sum(w * G)


def _run(optimizer, steps=3, dtype=tf.float64):
    w = tf.Variable(W0, dtype=dtype, name="w")
    loss = tf.reduce_sum(w * tf.constant(G, dtype=dtype))
    step = tf.train.get_or_create_global_step()
    train = optimizer.minimize(loss, global_step=step)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            assert sess.run(train) is None
            out.append(sess.run(w))
        assert sess.run(step) == steps
    return out


def test_gradient_descent():
    got = _run(tf.train.GradientDescentOptimizer(0.1))
    w = W0.copy()
    for k in range(3):
        w = w - 0.1 * G
        np.testing.assert_allclose(got[k], w, rtol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    got = _run(tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov))
    w, accum = W0.copy(), np.zeros(3)
    for k in range(3):
        accum = 0.9 * accum + G
        w = w - (0.1 * G + 0.1 * 0.9 * accum if nesterov else 0.1 * accum)
        np.testing.assert_allclose(got[k], w, rtol=1e-12)


def test_adam():
    got = _run(tf.train.AdamOptimizer(0.01, 0.9, 0.999, 1e-8))
    w, m, v = W0.copy(), np.zeros(3), np.zeros(3)
    for t in range(1, 4):
        m = 0.9 * m + 0.1 * G
        v = 0.999 * v + 0.001 * G * G
        lr_t = 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        w = w - lr_t * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(got[t - 1], w, rtol=1e-10)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    got = _run(tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, epsilon=1e-10,
                                         centered=centered))
    w, ms, mom, mg = W0.copy(), np.ones(3), np.zeros(3), np.zeros(3)
    for k in range(3):
        ms = 0.9 * ms + 0.1 * G * G
        denom = ms + 1e-10
        if centered:
            mg = 0.9 * mg + 0.1 * G
            denom = ms - mg * mg + 1e-10
        mom = 0.5 * mom + 0.01 * G / np.sqrt(denom)
        w = w - mom
        np.testing.assert_allclose(got[k], w, rtol=1e-10)


def test_adagrad():
    got = _run(tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.1))
    w, acc = W0.copy(), np.full(3, 0.1)
    for k in range(3):
        acc = acc + G * G
        w = w - 0.1 * G / np.sqrt(acc)
        np.testing.assert_allclose(got[k], w, rtol=1e-12)


def test_slots_and_uninitialized_slot_error():
    w = tf.Variable([1.0, 2.0], name="w")
    opt = tf.train.AdamOptimizer()
    train = opt.minimize(tf.reduce_sum(w * w))
    assert opt.get_slot_names() == ["m", "v"]
    assert opt.get_slot(w, "m").name == "w/Adam:0"
    assert opt.get_slot(w, "v").name == "w/Adam_1:0"
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
            sess.run(train)
        sess.run(tf.global_variables_initializer())
        sess.run(train)


def test_no_gradients_error():
    w = tf.Variable(1.0)
    other = tf.Variable(2.0)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        tf.train.GradientDescentOptimizer(0.1).minimize(other * 2.0, var_list=[w])


def test_compute_and_apply_gradients_with_var_list():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(1.0, name="b")
    loss = a * 3.0 + b * 5.0
    opt = tf.train.GradientDescentOptimizer(1.0)
    grads_and_vars = opt.compute_gradients(loss, var_list=[a])
    assert [v for _, v in grads_and_vars] == [a]
    train = opt.apply_gradients(grads_and_vars)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g = sess.run(grads_and_vars[0][0])
        sess.run(train)
        assert g == 3.0
        assert sess.run([a, b]) == [-2.0, 1.0]


def test_learning_rate_schedules():
    step = tf.placeholder(tf.int64, [])
    exp = tf.train.exponential_decay(0.1, step, 10, 0.5)
    stair = tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True)
    piece = tf.train.piecewise_constant(step, [5, 10], [1.0, 0.5, 0.1])
    with tf.Session() as sess:
        for s in [0, 5, 7, 10, 15, 25]:
            e, st, p = sess.run([exp, stair, piece], {step: s})
            np.testing.assert_allclose(e, 0.1 * 0.5 ** (s / 10), rtol=1e-6)
            np.testing.assert_allclose(st, 0.1 * 0.5 ** (s // 10), rtol=1e-6)
            assert p == pytest.approx(1.0 if s <= 5 else 0.5 if s <= 10 else 0.1)


def test_steady_state_training_step_reuses_tensor_memory():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    logits = tf.layers.dense(tf.layers.flatten(h), 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {x: rng.rand(16, 8, 8, 1).astype(np.float32), y: rng.randint(0, 10, 16)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # Independent nodes run in a varying order, so the set of live buffers differs from step to
        # step until the allocator's cache holds every size: steady state is a window of steps
        # with no system allocation at all.
        new_allocations = []
        for _ in range(6):
            before = tf._C.cpu_memory_info()["system_allocations"]
            for _ in range(10):
                sess.run(train, feed)
            new_allocations.append(tf._C.cpu_memory_info()["system_allocations"] - before)
            if new_allocations[-1] == 0:
                break
        assert new_allocations[-1] == 0, new_allocations
