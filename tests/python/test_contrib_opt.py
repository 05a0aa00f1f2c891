"""tf.contrib.opt: decoupled weight decay (AdamW, MomentumW, extend_with_decoupled_weight_decay),
Nadam, AddSign, PowerSign and LazyAdam, each step against a numpy float64 reference."""

import math

import numpy as np
import pytest

import flowstone as tf

opt = tf.contrib.opt
GRAD = np.array([0.5, -1.0, 0.25])
START = np.array([1.0, 2.0, -3.0])


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _run(optimizer, steps=3, decay_var_list=None, extra_var=False):
    """Minimizes sum(GRAD * var) (a constant gradient) for `steps` steps; returns the values."""
    var = tf.Variable(START, dtype=tf.float64)
    other = tf.Variable(START, dtype=tf.float64) if extra_var else None
    grad = tf.constant(GRAD)
    loss = tf.reduce_sum(grad * var) + (tf.reduce_sum(grad * other) if extra_var else 0.0)
    kwargs = {} if decay_var_list is None else {"decay_var_list": decay_var_list(var, other)}
    train = optimizer.minimize(loss, **kwargs)
    with tf.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        return sess.run(var), (sess.run(other) if extra_var else None)


def _adam(steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8, decay=0.0, nesterov=False):
    var, m, v = START.copy(), np.zeros(3), np.zeros(3)
    for t in range(1, steps + 1):
        var = var - decay * var
        m = b1 * m + (1 - b1) * GRAD
        v = b2 * v + (1 - b2) * GRAD ** 2
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        step_m = b1 * m + (1 - b1) * GRAD if nesterov else m
        var = var - lr_t * step_m / (np.sqrt(v) + eps)
    return var


def test_adamw_decays_then_steps_and_only_the_listed_variables():
    got, other = _run(opt.AdamWOptimizer(0.1, learning_rate=0.01),
                      decay_var_list=lambda var, other: [var], extra_var=True)
    np.testing.assert_allclose(got, _adam(3, decay=0.1), rtol=1e-12)
    np.testing.assert_allclose(other, _adam(3), rtol=1e-12)  # not in decay_var_list


def test_momentumw_and_extend_with_decoupled_weight_decay():
    got, _ = _run(opt.MomentumWOptimizer(0.05, learning_rate=0.1, momentum=0.9))
    var, accum = START.copy(), np.zeros(3)
    for _ in range(3):
        var = var - 0.05 * var
        accum = 0.9 * accum + GRAD
        var = var - 0.1 * accum
    np.testing.assert_allclose(got, var, rtol=1e-12)
    sgdw = opt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    got, _ = _run(sgdw(0.2, 0.5))
    var = START.copy()
    for _ in range(3):
        var = var - 0.2 * var - 0.5 * GRAD
    np.testing.assert_allclose(got, var, rtol=1e-12)


def test_nadam_and_lazy_adam():
    got, _ = _run(opt.NadamOptimizer(learning_rate=0.01))
    np.testing.assert_allclose(got, _adam(3, nesterov=True), rtol=1e-10)
    got, _ = _run(opt.LazyAdamOptimizer(learning_rate=0.01))
    np.testing.assert_allclose(got, _adam(3), rtol=1e-12)


@pytest.mark.parametrize("kind", ["addsign", "powersign"])
def test_sign_optimizers(kind):
    if kind == "addsign":
        optimizer = opt.AddSignOptimizer(learning_rate=0.1, alpha=1.0, beta=0.9)
    else:
        optimizer = opt.PowerSignOptimizer(learning_rate=0.1, base=math.e, beta=0.9)
    got, _ = _run(optimizer)
    var, m = START.copy(), np.zeros(3)
    for _ in range(3):
        m = 0.9 * m + 0.1 * GRAD
        agree = np.sign(GRAD) * np.sign(m)
        scale = (1.0 + agree) if kind == "addsign" else np.exp(agree)
        var = var - 0.1 * scale * GRAD
    np.testing.assert_allclose(got, var, rtol=1e-12)
    with pytest.raises(ValueError, match="needs a global step"):
        tf.reset_default_graph()
        _run(opt.AddSignOptimizer(sign_decay_fn=lambda step: 1.0))
