"""The optimizer update ops of src/ops/training/update_rule_ops.cc, run directly: each against its
formula written in numpy over several steps, in float64 and float32, and their input checks.
(The formulas were also compared with TensorFlow's raw ops when they were written.)"""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import ops as _ops

RNG = np.random.default_rng(7)
VAR0 = RNG.uniform(-1.0, 1.0, 6)
SLOT0 = RNG.uniform(0.1, 1.0, 6)
GRADS = [RNG.uniform(-1.0, 1.0, 6) for _ in range(3)]


def adadelta(v, g, lr, rho, epsilon):
    var, accum, accum_update = v
    accum = rho * accum + (1 - rho) * g * g
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * g
    return [var - lr * update, accum, rho * accum_update + (1 - rho) * update * update]


def adamax(v, g, beta1_power, lr, beta1, beta2, epsilon):
    var, m, u = v
    m = beta1 * m + (1 - beta1) * g
    u = np.maximum(beta2 * u, np.abs(g))
    return [var - lr / (1 - beta1_power) * m / (u + epsilon), m, u]


def proximal(prox, lr, l1, l2):
    return np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)


def proximal_gd(v, g, alpha, l1, l2):
    return [proximal(v[0] - alpha * g, alpha, l1, l2)]


def proximal_adagrad(v, g, lr, l1, l2):
    accum = v[1] + g * g
    lr_t = lr / np.sqrt(accum)
    return [proximal(v[0] - lr_t * g, lr_t, l1, l2), accum]


def adagrad_da(v, g, lr, l1, l2, global_step):
    total, total_sq = v[1] + g, v[2] + g * g
    shrunk = np.sign(-total) * np.maximum(np.abs(total) - l1 * global_step, 0)
    return [shrunk * lr / (l2 * global_step * lr + np.sqrt(total_sq)), total, total_sq]


def ftrl(v, g, lr, l1, l2, lr_power, l2_shrinkage=0.0, multiply_linear_by_lr=False):
    var, accum, linear = v
    shrink_g = g + 2 * l2_shrinkage * var
    accum_new = accum + g * g
    sigma = accum_new ** -lr_power - accum ** -lr_power
    if multiply_linear_by_lr:
        linear = linear + shrink_g * lr - sigma * var
        quadratic = accum_new ** -lr_power + 2 * l2 * lr
        l1 = l1 * lr
    else:
        linear = linear + shrink_g - sigma / lr * var
        quadratic = accum_new ** -lr_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0.0)
    return [var, accum_new, linear]


def ftrl_v2(v, g, lr, l1, l2, l2_shrinkage, lr_power, multiply_linear_by_lr=False):
    return ftrl(v, g, lr, l1, l2, lr_power, l2_shrinkage, multiply_linear_by_lr)


def add_sign(v, g, lr, alpha, sign_decay, beta):
    m = beta * v[1] + (1 - beta) * g
    return [v[0] - lr * (alpha + sign_decay * np.sign(g) * np.sign(m)) * g, m]


def power_sign(v, g, lr, logbase, sign_decay, beta):
    m = beta * v[1] + (1 - beta) * g
    return [v[0] - lr * np.exp(logbase * sign_decay * np.sign(g) * np.sign(m)) * g, m]


# op, number of variables, input names after the variables (the gradient is "grad" or "delta"),
# hyper-parameters, numpy rule, attrs.
RULES = [
    ("ResourceApplyAdadelta", 3, ["lr", "rho", "epsilon", "grad"],
     dict(lr=0.5, rho=0.9, epsilon=1e-3), adadelta, {}),
    ("ResourceApplyAdaMax", 3, ["beta1_power", "lr", "beta1", "beta2", "epsilon", "grad"],
     dict(beta1_power=0.81, lr=0.1, beta1=0.9, beta2=0.99, epsilon=1e-3), adamax, {}),
    ("ResourceApplyProximalGradientDescent", 1, ["alpha", "l1", "l2", "delta"],
     dict(alpha=0.3, l1=0.2, l2=0.1), proximal_gd, {}),
    ("ResourceApplyProximalAdagrad", 2, ["lr", "l1", "l2", "grad"],
     dict(lr=0.3, l1=0.2, l2=0.1), proximal_adagrad, {}),
    ("ResourceApplyAdagradDA", 3, ["grad", "lr", "l1", "l2", "global_step"],
     dict(lr=0.3, l1=0.2, l2=0.1, global_step=3), adagrad_da, {}),
    ("ResourceApplyFtrl", 3, ["grad", "lr", "l1", "l2", "lr_power"],
     dict(lr=0.3, l1=0.05, l2=0.1, lr_power=-0.5), ftrl, {}),
    ("ResourceApplyFtrl", 3, ["grad", "lr", "l1", "l2", "lr_power"],
     dict(lr=0.3, l1=0.05, l2=0.1, lr_power=-0.5), ftrl, {"multiply_linear_by_lr": True}),
    ("ResourceApplyFtrlV2", 3, ["grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"],
     dict(lr=0.3, l1=0.05, l2=0.1, l2_shrinkage=0.2, lr_power=-0.6), ftrl_v2, {}),
    ("ResourceApplyFtrlV2", 3, ["grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"],
     dict(lr=0.3, l1=0.05, l2=0.1, l2_shrinkage=0.2, lr_power=-0.6), ftrl_v2,
     {"multiply_linear_by_lr": True}),
    ("ResourceApplyAddSign", 2, ["lr", "alpha", "sign_decay", "beta", "grad"],
     dict(lr=0.3, alpha=1.0, sign_decay=0.5, beta=0.9), add_sign, {}),
    ("ResourceApplyPowerSign", 2, ["lr", "logbase", "sign_decay", "beta", "grad"],
     dict(lr=0.3, logbase=0.7, sign_decay=0.5, beta=0.9), power_sign, {}),
]


def _build(op, num_vars, inputs, hyper, attrs, dtype, grad_shape=None):
    variables = [tf.Variable((VAR0 if k == 0 else SLOT0).astype(dtype)) for k in range(num_vars)]
    grad = tf.placeholder(dtype, grad_shape)
    args = [v.handle for v in variables]
    for name in inputs:
        if name in ("grad", "delta"):
            args.append(grad)
        elif name == "global_step":
            args.append(tf.constant(np.int64(hyper[name])))
        else:
            args.append(tf.constant(np.asarray(hyper[name], dtype)))
    return variables, grad, _ops.apply_op(op, args, attrs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("op,num_vars,inputs,hyper,rule,attrs", RULES,
                         ids=[f"{r[0]}{'-' + ','.join(r[5]) if r[5] else ''}" for r in RULES])
def test_rule_matches_formula(op, num_vars, inputs, hyper, rule, attrs, dtype):
    with tf.Graph().as_default():
        variables, grad, update = _build(op, num_vars, inputs, hyper, attrs, dtype)
        expected = [VAR0] + [SLOT0] * (num_vars - 1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for g in GRADS:
                assert sess.run(update, {grad: g.astype(dtype)}) is None
                expected = rule(expected, g, **hyper, **attrs)
                got = sess.run(variables)
                tol = 1e-12 if dtype == np.float64 else 2e-5
                for k in range(num_vars):
                    np.testing.assert_allclose(got[k], expected[k], rtol=tol, atol=tol)


def test_gradient_of_wrong_shape_is_invalid_argument_and_session_survives():
    op, num_vars, inputs, hyper, _, attrs = RULES[0]
    with tf.Graph().as_default():
        variables, grad, update = _build(op, num_vars, inputs, hyper, attrs, np.float64,
                                         grad_shape=None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Gradient of shape \[4\] "
                               r"does not match variable shape \[6\]"):
                sess.run(update, {grad: np.ones(4)})
            sess.run(update, {grad: np.ones(6)})
            assert np.all(sess.run(variables[0]) < VAR0)


def test_non_scalar_hyper_parameter_is_invalid_argument():
    with tf.Graph().as_default():
        var = tf.Variable(VAR0)
        lr = tf.placeholder(tf.float64)
        update = _ops.apply_op("ResourceApplyProximalGradientDescent",
                               [var.handle, lr, np.float64(0), np.float64(0), np.ones(6)])
        with tf.Session() as sess:
            sess.run(var.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Input 1 of ResourceApplyProximalGradientDescent must be a "
                                     r"scalar, got shape \[2\]"):
                sess.run(update, {lr: [0.1, 0.2]})


def test_uninitialized_slot_is_failed_precondition():
    with tf.Graph().as_default():
        var, slot = tf.Variable(VAR0), tf.Variable(SLOT0, name="never_initialized")
        update = _ops.apply_op("ResourceApplyProximalAdagrad",
                               [var.handle, slot.handle] +
                               [np.float64(x) for x in (0.1, 0, 0)] + [np.ones(6)])
        with tf.Session() as sess:
            sess.run(var.initializer)
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="uninitialized value never_initialized"):
                sess.run(update)


# The rows with a ResourceSparseApply* form, and where `indices` goes: right after the gradient.
SPARSE = [r for r in RULES if r[0] in {
    "ResourceApplyAdadelta", "ResourceApplyProximalGradientDescent",
    "ResourceApplyProximalAdagrad", "ResourceApplyAdagradDA", "ResourceApplyFtrl",
    "ResourceApplyFtrlV2"}]
ROWS = np.array([2, 0, 2], np.int32)   # row 2 twice: updated once per occurrence, in order
VAR0_2D, SLOT0_2D = VAR0.reshape(3, 2), SLOT0.reshape(3, 2)


def _build_sparse(op, num_vars, inputs, hyper, attrs, grad_value, indices):
    variables = [tf.Variable(VAR0_2D if k == 0 else SLOT0_2D) for k in range(num_vars)]
    args = [v.handle for v in variables]
    for name in inputs:
        if name in ("grad", "delta"):
            args += [tf.constant(grad_value), tf.constant(indices)]
        elif name == "global_step":
            args.append(tf.constant(np.int64(hyper[name])))
        else:
            args.append(tf.constant(np.float64(hyper[name])))
    return variables, _ops.apply_op(op.replace("ResourceApply", "ResourceSparseApply"), args,
                                    attrs)


@pytest.mark.parametrize("op,num_vars,inputs,hyper,rule,attrs", SPARSE,
                         ids=[f"{r[0]}{'-' + ','.join(r[5]) if r[5] else ''}" for r in SPARSE])
def test_sparse_rule_updates_the_indexed_rows_in_order(op, num_vars, inputs, hyper, rule, attrs):
    grad = RNG.uniform(-1.0, 1.0, (3, 2))
    with tf.Graph().as_default():
        variables, update = _build_sparse(op, num_vars, inputs, hyper, attrs, grad, ROWS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update)
            got = sess.run(variables)
    expected = [VAR0_2D.copy()] + [SLOT0_2D.copy() for _ in range(num_vars - 1)]
    for g_row, r in zip(grad, ROWS):
        updated = rule([e[r] for e in expected], g_row, **hyper, **attrs)
        for k in range(num_vars):
            expected[k][r] = updated[k]
    for k in range(num_vars):
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-12, atol=1e-12)


def test_sparse_rule_input_errors():
    op, num_vars, inputs, hyper, _, attrs = SPARSE[0]
    with tf.Graph().as_default():
        _, out_of_range = _build_sparse(op, num_vars, inputs, hyper, attrs, np.ones((1, 2)),
                                        np.array([3], np.int32))
        _, wrong_rows = _build_sparse(op, num_vars, inputs, hyper, attrs, np.ones((2, 2)),
                                      np.array([0], np.int32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"indices\[0\] = 3 is not in \[0, 3\)"):
                sess.run(out_of_range)
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"grad must be \[1\] \+ var.shape\[1:\]"):
                sess.run(wrong_rows)
