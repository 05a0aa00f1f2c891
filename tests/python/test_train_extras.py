"""tf.train beyond the first optimizers: the proximal/FTRL/Adadelta optimizers end to end, the
cosine-family schedules, ExponentialMovingAverage, and the global-step helpers."""

import math

import numpy as np
import pytest

import flowstone as tf

W0 = np.array([1.0, -2.0, 3.0])
G = np.array([0.5, -1.5, 2.0])   # d loss / d w for loss = sum(w * G)


def _run(optimizer_fn, steps=3):
    w = tf.Variable(W0, dtype=tf.float64, name="w")
    loss = tf.reduce_sum(w * tf.constant(G))
    step = tf.train.get_or_create_global_step()
    optimizer = optimizer_fn(step)
    train = optimizer.minimize(loss, global_step=step)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
            out.append(sess.run(w))
    return optimizer, w, out


def test_adadelta_optimizer():
    opt, w, got = _run(lambda _: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6))
    assert opt.get_slot_names() == ["accum", "accum_update"]
    assert opt.get_slot(w, "accum").name == "w/Adadelta:0"
    var, accum, accum_update = W0.copy(), np.zeros(3), np.zeros(3)
    for k in range(3):
        accum = 0.9 * accum + 0.1 * G * G
        update = np.sqrt(accum_update + 1e-6) / np.sqrt(accum + 1e-6) * G
        accum_update = 0.9 * accum_update + 0.1 * update * update
        var = var - update
        np.testing.assert_allclose(got[k], var, rtol=1e-12)


def _proximal(prox, lr, l1, l2):
    return np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)


def test_proximal_gradient_descent_optimizer():
    _, _, got = _run(lambda _: tf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.5, l2_regularization_strength=0.2))
    var = W0.copy()
    for k in range(3):
        var = _proximal(var - 0.1 * G, 0.1, 0.5, 0.2)
        np.testing.assert_allclose(got[k], var, rtol=1e-12)


def test_proximal_adagrad_optimizer():
    _, _, got = _run(lambda _: tf.train.ProximalAdagradOptimizer(
        0.1, initial_accumulator_value=0.2, l1_regularization_strength=0.05,
        l2_regularization_strength=0.1))
    var, accum = W0.copy(), np.full(3, 0.2)
    for k in range(3):
        accum = accum + G * G
        lr = 0.1 / np.sqrt(accum)
        var = _proximal(var - lr * G, lr, 0.05, 0.1)
        np.testing.assert_allclose(got[k], var, rtol=1e-12)


def test_adagrad_da_optimizer_uses_the_next_global_step():
    _, _, got = _run(lambda step: tf.train.AdagradDAOptimizer(
        0.1, step, l1_regularization_strength=0.01, l2_regularization_strength=0.02))
    total, total_sq = np.zeros(3), np.full(3, 0.1)
    for k in range(3):
        t = k + 1
        total, total_sq = total + G, total_sq + G * G
        var = (np.sign(-total) * np.maximum(np.abs(total) - 0.01 * t, 0) * 0.1 /
               (0.02 * t * 0.1 + np.sqrt(total_sq)))
        np.testing.assert_allclose(got[k], var, rtol=1e-12)


@pytest.mark.parametrize("shrinkage", [0.0, 0.3])
def test_ftrl_optimizer(shrinkage):
    opt, w, got = _run(lambda _: tf.train.FtrlOptimizer(
        0.5, learning_rate_power=-0.5, initial_accumulator_value=0.1,
        l1_regularization_strength=0.01, l2_regularization_strength=0.02,
        l2_shrinkage_regularization_strength=shrinkage))
    assert [opt.get_slot(w, s).name for s in ("accum", "linear")] == ["w/Ftrl:0", "w/Ftrl_1:0"]
    var, accum, linear = W0.copy(), np.full(3, 0.1), np.zeros(3)
    for k in range(3):
        accum_new = accum + G * G
        sigma = (np.sqrt(accum_new) - np.sqrt(accum)) / 0.5
        linear = linear + G + 2 * shrinkage * var - sigma * var
        quadratic = np.sqrt(accum_new) / 0.5 + 2 * 0.02
        var = np.where(np.abs(linear) > 0.01, (np.sign(linear) * 0.01 - linear) / quadratic, 0)
        accum = accum_new
        np.testing.assert_allclose(got[k], var, rtol=1e-12)


def test_optimizer_argument_errors():
    with pytest.raises(ValueError, match="learning_rate_power 0.5 must be less than or equal"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength -1.0 must be greater"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)


STEPS = [0, 3, 7, 10, 13, 25]


def _schedule_values(schedule):
    step = tf.placeholder(tf.int64, [])
    out = schedule(step)
    with tf.Session() as sess:
        return out, [float(sess.run(out, {step: s})) for s in STEPS]


def _cos(x):
    return 0.5 * (1 + math.cos(math.pi * x))


def test_cosine_decay():
    out, got = _schedule_values(lambda s: tf.train.cosine_decay(0.1, s, 10, alpha=0.1))
    want = [0.1 * (0.9 * _cos(min(s, 10) / 10) + 0.1) for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("t_mul,m_mul", [(2.0, 0.5), (1.0, 1.0)])
def test_cosine_decay_restarts(t_mul, m_mul):
    out, got = _schedule_values(lambda s: tf.train.cosine_decay_restarts(
        0.1, s, 4, t_mul=t_mul, m_mul=m_mul, alpha=0.1))
    assert out.op.name == "SGDRDecay"
    want = []
    for s in STEPS:
        start, length, restart = 0, 4, 0
        while s >= start + length:   # walk the periods: 4, 4 t_mul, 4 t_mul^2 ...
            start, length, restart = start + length, length * t_mul, restart + 1
        cosine = m_mul ** restart * _cos((s - start) / length)
        want.append(0.1 * (0.9 * cosine + 0.1))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_linear_cosine_and_natural_exp_decay():
    _, got = _schedule_values(lambda s: tf.train.linear_cosine_decay(0.1, s, 10, alpha=0.1))
    want = [0.1 * ((0.1 + (10 - min(s, 10)) / 10) * _cos(2 * 0.5 * min(s, 10) / 10) + 0.001)
            for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)
    out, got = _schedule_values(
        lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5, staircase=True))
    assert out.op.name == "ExponentialDecay"
    np.testing.assert_allclose(got, [0.1 * math.exp(-0.5 * (s // 10)) for s in STEPS],
                               rtol=1e-6)


def test_noisy_linear_cosine_decay_varies_around_linear_cosine():
    step = tf.placeholder(tf.int64, [])
    noisy = tf.train.noisy_linear_cosine_decay(0.1, step, 100, initial_variance=1e-4)
    plain = tf.train.linear_cosine_decay(0.1, step, 100)
    with tf.Session() as sess:
        values = [sess.run([noisy, plain], {step: 10}) for _ in range(20)]
    noisy_values = np.array([v[0] for v in values])
    assert len(set(noisy_values.tolist())) > 1
    # noise of std sqrt(1e-4 / 11^0.55) ~ 0.0052 on the linear term, scaled by lr * cosine
    np.testing.assert_allclose(noisy_values, values[0][1], atol=0.1 * 5 * 0.0052)


def test_polynomial_decay_cycle():
    _, got = _schedule_values(lambda s: tf.train.polynomial_decay(
        0.1, s, 10, 0.01, power=2.0, cycle=True))
    want = []
    for s in STEPS:
        steps = 10 * max(math.ceil(s / 10), 1)
        want.append((0.1 - 0.01) * (1 - s / steps) ** 2 + 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert tf.train.piecewise_constant_decay is tf.train.piecewise_constant


def test_exponential_moving_average():
    w = tf.Variable([1.0, 2.0], name="w")
    count = tf.Variable(0, trainable=False, name="count")
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=count)
    update = ema.apply([w])
    assert update.name == "ExponentialMovingAverage"
    assert ema.average(w).name == "w/ExponentialMovingAverage:0"
    assert ema.average_name(w) == "w/ExponentialMovingAverage"
    assert tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES) == [w]
    assert ema.variables_to_restore() == {"w/ExponentialMovingAverage": w, "count": count}
    with tf.control_dependencies([update]):
        step = tf.group(w.assign_add([1.0, 1.0]), count.assign_add(1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        shadow, value = np.array([1.0, 2.0]), np.array([1.0, 2.0])
        for n in range(3):
            sess.run(step)
            decay = min(0.9, (1 + n) / (10 + n))
            shadow = shadow - (1 - decay) * (shadow - value)
            value = value + 1
            np.testing.assert_allclose(sess.run(ema.average(w)), shadow, rtol=1e-6)
    with pytest.raises(ValueError, match="Moving average already computed for: w:0"):
        ema.apply([w])
    with pytest.raises(TypeError, match="must be half, float, or double"):
        ema.apply([count])


def test_global_step_helpers():
    step = tf.train.get_or_create_global_step()
    tf.train.assert_global_step(step)
    with pytest.raises(TypeError, match="does not have integer type"):
        tf.train.assert_global_step(tf.Variable(1.0))
    with tf.Session() as sess:
        sess.run(step.initializer)
        assert tf.train.global_step(sess, step) == 0
