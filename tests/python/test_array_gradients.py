"""Gradients of the array op family through tf.gradients: reshaping, transposing, joining,
splitting, slicing, gathering, tiling, padding and filling with shapes known only at run time,
repeated gather indices, second derivatives, and the helper ops the gradients use.
(Every op's gradient is also checked against finite differences by test_op_conformance.py.)

Most tests take loss = sum(y * w) for a weight tensor w fed at run time, so that the gradient
with respect to x is w sent back through the op, which numpy states directly."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops import nn_impl

RNG = np.random.default_rng(11)


def _rand(*shape):
    return RNG.uniform(-1.0, 1.0, shape)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _weighted_grads(y, xs):
    """The gradients of sum(y * w) for xs, and the placeholder w (of unknown shape)."""
    w = tf.placeholder(y.dtype, None)
    return tf.gradients(tf.reduce_sum(y * w), xs), w


def test_reshape_expand_dims_squeeze_with_unknown_dims():
    x = tf.placeholder(tf.float64, [None, 6])
    y = tf.squeeze(tf.expand_dims(tf.reshape(x, [-1, 2, 3]), 1), [1])
    (g,), w = _weighted_grads(y, [x])
    assert g.shape.as_list() == [None, 6]
    wv = _rand(4, 2, 3)
    np.testing.assert_array_equal(_run(g, {x: _rand(4, 6), w: wv}), wv.reshape(4, 6))


@pytest.mark.parametrize("fed_perm", [False, True])
def test_transpose_sends_the_gradient_back_through_the_inverse_permutation(fed_perm):
    x = tf.placeholder(tf.float64, [None, None, 4])
    perm = tf.placeholder(tf.int32, [3]) if fed_perm else [2, 0, 1]
    (g,), w = _weighted_grads(tf.transpose(x, perm), [x])
    feed = {x: _rand(2, 3, 4), w: (wv := _rand(4, 2, 3))}
    if fed_perm:
        feed[perm] = [2, 0, 1]
    else:
        assert g.shape.as_list() == [None, None, 4]
    np.testing.assert_array_equal(_run(g, feed), np.transpose(wv, [1, 2, 0]))


@pytest.mark.parametrize("axis", [1, -1])
def test_concat_slices_the_gradient_by_run_time_shapes(axis):
    a = tf.placeholder(tf.float64, [None, None])
    b = tf.placeholder(tf.float64, [None, 3])
    c = tf.placeholder(tf.float64, None)
    axis_t = tf.placeholder(tf.int64, [])
    (ga, gb, gc), w = _weighted_grads(tf.concat([a, b, c], axis_t), [a, b, c])
    wv = _rand(2, 6)
    got = _run([ga, gb, gc], {a: _rand(2, 2), b: _rand(2, 3), c: _rand(2, 1), axis_t: axis,
                              w: wv})
    for g, expected in zip(got, np.split(wv, [2, 5], axis=1)):
        np.testing.assert_array_equal(g, expected)


def test_concat_of_one_input_used_twice_accumulates():
    x = tf.placeholder(tf.float64, [None])
    (g,), w = _weighted_grads(tf.concat([x, x * 2.0], 0), [x])
    wv = _rand(6)
    np.testing.assert_allclose(_run(g, {x: _rand(3), w: wv}), wv[:3] + 2 * wv[3:])


def test_stack_unstack_and_split_with_unused_outputs_give_zeros():
    x = tf.placeholder(tf.float64, [None, 4])
    y = tf.placeholder(tf.float64, [None, 4])
    rows = tf.unstack(tf.stack([x, y], axis=1), num=2, axis=1)
    first, _ = tf.split(rows[0], 2, axis=1)
    _, second, _ = tf.split(rows[1], [1, -1, 1], axis=1)
    loss = tf.reduce_sum(first * 3.0) + tf.reduce_sum(second)
    gx, gy = tf.gradients(loss, [x, y])
    got_x, got_y = _run([gx, gy], {x: _rand(2, 4), y: _rand(2, 4)})
    np.testing.assert_array_equal(got_x, [[3, 3, 0, 0]] * 2)
    np.testing.assert_array_equal(got_y, [[0, 1, 1, 0]] * 2)


def test_strided_slice_gradient_scatters_into_zeros():
    x = tf.placeholder(tf.float64, [None, None])
    (g,), w = _weighted_grads(x[1:, ::2], [x])
    wv = _rand(3, 3)
    expected = np.zeros((4, 5))
    expected[1:, ::2] = wv
    np.testing.assert_array_equal(_run(g, {x: _rand(4, 5), w: wv}), expected)


@pytest.mark.parametrize("index", [
    np.s_[::-1, 2],
    np.s_[..., None, 1:-1],
    np.s_[-1, ::-2, None],
    np.s_[1:1],
])
def test_strided_slice_gradient_with_every_mask(index):
    x = tf.placeholder(tf.float64, [None, None, None])
    xv = _rand(3, 4, 5)
    (g,), w = _weighted_grads(x[index], [x])
    wv = _rand(*xv[index].shape)
    expected = np.zeros_like(xv)
    expected[index] = wv
    np.testing.assert_array_equal(_run(g, {x: xv, w: wv}), expected)


def test_slice_gradient_pads_with_fed_begin():
    x = tf.placeholder(tf.float64, [None, None])
    begin = tf.placeholder(tf.int64, [2])
    (g,), w = _weighted_grads(tf.slice(x, begin, [2, -1]), [x])
    wv = _rand(2, 3)
    expected = np.zeros((4, 5))
    expected[1:3, 2:] = wv
    np.testing.assert_array_equal(_run(g, {x: _rand(4, 5), begin: [1, 2], w: wv}), expected)


def test_gather_gradient_accumulates_repeated_indices():
    params = tf.placeholder(tf.float64, [None, 3])
    indices = tf.placeholder(tf.int32, None)
    (g,), w = _weighted_grads(tf.gather(params, indices), [params])
    assert g.shape.as_list() == [None, 3]
    iv = np.array([[4, 0, 4], [4, 1, 0]])
    wv = _rand(2, 3, 3)
    expected = np.zeros((5, 3))
    np.add.at(expected, iv, wv)
    np.testing.assert_allclose(_run(g, {params: _rand(5, 3), indices: iv, w: wv}), expected)


@pytest.mark.parametrize("axis", [1, -1, 2])
def test_gather_gradient_along_other_axes(axis):
    params = tf.placeholder(tf.float64, [None, None, None])
    pv = _rand(2, 3, 3)
    iv = np.array([2, 0, 2, 2])
    (g,), w = _weighted_grads(tf.gather(params, iv, axis=axis), [params])
    wv = _rand(*np.take(pv, iv, axis=axis).shape)
    expected = np.zeros_like(pv)
    a = axis % 3
    for k, i in enumerate(iv):
        target = [slice(None)] * 3
        source = [slice(None)] * 3
        target[a], source[a] = i, k
        expected[tuple(target)] += wv[tuple(source)]
    np.testing.assert_allclose(_run(g, {params: pv, w: wv}), expected)


def test_gather_gradient_with_batch_dims():
    params = tf.placeholder(tf.float64, [None, None, 2])
    indices = tf.placeholder(tf.int64, [None, None])
    (g,), w = _weighted_grads(tf.gather(params, indices, axis=1, batch_dims=1), [params])
    iv = np.array([[1, 1, 0], [2, 0, 0]])
    wv = _rand(2, 3, 2)
    expected = np.zeros((2, 3, 2))
    for b in range(2):
        np.add.at(expected[b], iv[b], wv[b])
    np.testing.assert_allclose(_run(g, {params: _rand(2, 3, 2), indices: iv, w: wv}), expected)


def test_embedding_lookup_gradient_reaches_a_variable():
    table = tf.Variable(np.zeros((4, 2)), dtype=tf.float64)
    ids = tf.constant([3, 1, 3])
    loss = tf.reduce_sum(nn_impl.embedding_lookup(table, ids))
    (g,) = tf.gradients(loss, [table])
    assert g.shape.as_list() == [4, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(g), [[0, 0], [1, 1], [0, 0], [2, 2]])


def test_indices_and_shape_arguments_get_no_gradient():
    x = tf.placeholder(tf.float64, [3, 4])
    idx = tf.placeholder(tf.int32, [2])
    shape = tf.placeholder(tf.int32, [2])
    loss = tf.reduce_sum(tf.gather(x, idx)) + tf.reduce_sum(tf.reshape(x, shape))
    assert tf.gradients(loss, [idx, shape]) == [None, None]


def test_tile_gradient_sums_the_copies():
    x = tf.placeholder(tf.float64, [None, None])
    multiples = tf.placeholder(tf.int32, [2])
    (g,), w = _weighted_grads(tf.tile(x, multiples), [x])
    assert g.shape.as_list() == [None, None]
    wv = _rand(6, 2)
    expected = wv.reshape(3, 2, 1, 2).sum(axis=(0, 2))
    np.testing.assert_allclose(_run(g, {x: _rand(2, 2), multiples: [3, 1], w: wv}), expected)


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_gradients_with_unknown_shapes(mode):
    x = tf.placeholder(tf.float64, [None, None])
    paddings = [[2, 1], [1, 2]]
    (g,), w = _weighted_grads(tf.pad(x, paddings, mode), [x])
    xv = _rand(3, 3)
    wv = _rand(6, 6)
    # np.pad on element numbers says which input element each output element came from.
    elements = np.arange(9).reshape(3, 3)
    if mode == "CONSTANT":
        source = np.pad(elements, paddings, constant_values=-1)
    else:
        source = np.pad(elements, paddings, mode.lower())
    expected = np.zeros(9)
    np.add.at(expected, source[source >= 0], wv[source >= 0])
    np.testing.assert_allclose(_run(g, {x: xv, w: wv}), expected.reshape(3, 3))


def test_pad_constant_value_gets_the_padding_gradient():
    x = tf.placeholder(tf.float64, [2, 2])
    c = tf.placeholder(tf.float64, [])
    (gx, gc), w = _weighted_grads(tf.pad(x, [[1, 0], [0, 1]], constant_values=c), [x, c])
    wv = _rand(3, 3)
    got_x, got_c = _run([gx, gc], {x: _rand(2, 2), c: 0.5, w: wv})
    np.testing.assert_allclose(got_x, wv[1:, :2])
    np.testing.assert_allclose(got_c, wv.sum() - wv[1:, :2].sum())


def test_fill_value_gets_the_sum_of_the_gradient():
    n = tf.placeholder(tf.int32, [])
    value = tf.placeholder(tf.float64, [])
    (g,), w = _weighted_grads(tf.fill([n, 3], value), [value])
    wv = _rand(4, 3)
    np.testing.assert_allclose(_run(g, {n: 4, value: 2.0, w: wv}), wv.sum())


def test_second_derivative_through_the_slice_gradient():
    x = tf.placeholder(tf.float64, [None, 4])
    u = tf.placeholder(tf.float64, [None, 2])
    (gx,) = tf.gradients(tf.reduce_sum(x[:, 1:3] * u), [x])  # u scattered into zeros
    v = tf.placeholder(tf.float64, [None, 4])
    (gu,) = tf.gradients(tf.reduce_sum(gx * v), [u])
    vv = _rand(3, 4)
    np.testing.assert_array_equal(_run(gu, {x: _rand(3, 4), u: _rand(3, 2), v: vv}),
                                  vv[:, 1:3])


def test_gradient_of_float32_stays_float32():
    x = tf.placeholder(tf.float32, [None, 4])
    (g,) = tf.gradients(tf.reduce_sum(tf.gather(tf.transpose(x)[1:], [0, 0], axis=1)), [x])
    assert g.dtype == tf.float32
    np.testing.assert_array_equal(_run(g, {x: np.zeros((2, 4), np.float32)}),
                                  [[0, 2, 2, 2], [0, 0, 0, 0]])


# --- helper ops ---------------------------------------------------------------------------------

def test_invert_permutation():
    np.testing.assert_array_equal(_run(tf.invert_permutation([3, 0, 2, 1])), [1, 3, 2, 0])
    x = tf.placeholder(tf.int64, [None])
    assert tf.invert_permutation(x).dtype == tf.int64
    with pytest.raises(tf.errors.InvalidArgumentError, match="2 is duplicated in the input"):
        _run(tf.invert_permutation(x), {x: [2, 2, 0]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 is not between 0 and 3"):
        _run(tf.invert_permutation(x), {x: [0, 3, 1]})
    with pytest.raises(ValueError, match="must be rank 1"):
        tf.invert_permutation([[0]])


def test_unsorted_segment_sum():
    data = np.arange(12.0).reshape(4, 3)
    got = _run(tf.unsorted_segment_sum(data, [1, -1, 1, 0], 3))
    np.testing.assert_array_equal(got, [data[3], data[0] + data[2], np.zeros(3)])
    n = tf.placeholder(tf.int32, [])
    ids = tf.placeholder(tf.int32, [None])
    out = tf.unsorted_segment_sum(data, ids, n)
    assert out.shape.as_list() == [None, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[2\] = 3 is out of "
                                                             r"range \[0, 3\)"):
        _run(out, {ids: [0, 1, 3, 0], n: 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not start with"):
        _run(out, {ids: [0, 1], n: 3})
    with pytest.raises(ValueError, match="does not start with segment_ids.shape"):
        tf.unsorted_segment_sum(data, [[0, 1]], 2)
    with pytest.raises(ValueError, match="num_segments must be non-negative"):
        tf.unsorted_segment_sum(data, [0, 0, 0, 0], -1)


def test_concat_offset_errors():
    shapes = [tf.placeholder(tf.int32, [None]) for _ in range(2)]
    dim = tf.placeholder(tf.int32, [])
    offsets = apply_op("ConcatOffset", [dim, shapes]).outputs
    assert _run(offsets, {dim: -1, shapes[0]: [2, 3], shapes[1]: [2, 4]})[1].tolist() == [0, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="All dimensions except 1 must "
                                                             "match. Input 1 has shape"):
        _run(offsets, {dim: 1, shapes[0]: [2, 3], shapes[1]: [3, 4]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Concat dim is out of range"):
        _run(offsets, {dim: 2, shapes[0]: [2, 3], shapes[1]: [2, 4]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="input 1 should contain 2 elements"):
        _run(offsets, {dim: 0, shapes[0]: [2, 3], shapes[1]: [2, 4, 1]})


def test_strided_slice_grad_checks_dy():
    dy = tf.placeholder(tf.float64, None)
    out = apply_op("StridedSliceGrad", [tf.constant([4, 5]), tf.constant([1, 0]),
                                        tf.constant([0, 0]), tf.constant([1, 2]), dy],
                   {"end_mask": 3}).outputs[0]
    assert out.shape.as_list() == [4, 5]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape of dy was \[3,2\] instead "
                                                             r"of \[3,3\]"):
        _run(out, {dy: _rand(3, 2)})


def test_mirror_pad_grad_checks_paddings():
    grad = tf.placeholder(tf.float64, [None, 4])
    out = apply_op("MirrorPadGrad", [grad, tf.constant([[1, 1], [1, 1]])],
                   {"mode": "REFLECT"}).outputs[0]
    assert out.shape.as_list() == [None, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="paddings must be less than"):
        _run(out, {grad: _rand(2, 4)})  # rows: 2 - 1 - 1 = 0, too few to mirror
    with pytest.raises(ValueError, match="exceed its size 4"):
        apply_op("MirrorPadGrad", [grad, tf.constant([[0, 0], [3, 2]])], {"mode": "SYMMETRIC"})


def test_gather_gradient_with_params_of_unknown_rank():
    params = tf.placeholder(tf.float64, None)
    (g,), w = _weighted_grads(tf.gather(params, [1, 1], axis=1), [params])
    wv = _rand(2, 2, 3)
    expected = np.zeros((2, 3, 3))
    expected[:, 1] = wv.sum(axis=1)
    np.testing.assert_allclose(_run(g, {params: _rand(2, 3, 3), w: wv}), expected)


def test_gather_gradient_needs_the_indices_rank_for_negative_batch_dims():
    params = tf.placeholder(tf.float64, [2, 3])
    indices = tf.placeholder(tf.int32, None)
    y = tf.gather(params, indices, axis=1, batch_dims=-1)
    with pytest.raises(ValueError, match="needs indices of known rank"):
        tf.gradients(tf.reduce_sum(y), [params])
