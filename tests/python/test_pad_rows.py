"""Pad and PadV2 write each output row once: trailing unpadded dimensions merge into one block,
rows over the input copy it between their padding, other rows are all padding."""
import numpy as np
import pytest

import flowstone as tf

CASES = [
    ((1, 7, 6, 3), [[0, 0], [3, 3], [3, 3], [0, 0]]),  # ResNet50's first padding, small
    ((2, 5, 4, 8), [[0, 0], [0, 1], [0, 1], [0, 0]]),  # MobileNetV2's before a strided conv
    ((3, 4), [[2, 1], [0, 0]]),  # only the first dimension padded
    ((3, 4), [[0, 0], [1, 2]]),
    ((2, 3, 4), [[1, 0], [0, 2], [3, 1]]),
    ((0, 4), [[1, 1], [0, 0]]),  # an empty input, padded into a non-empty output
    ((2, 0), [[0, 0], [1, 2]]),
    ((5,), [[0, 0]]),  # no padding at all: the input itself
]


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64, np.complex128, np.bool_])
@pytest.mark.parametrize("shape,paddings", CASES, ids=[str(i) for i in range(len(CASES))])
def test_pad_matches_numpy(shape, paddings, dtype):
    rng = np.random.RandomState(4)
    x = (rng.rand(*shape) * 10 - 5).astype(dtype)
    if dtype == np.complex128:
        x = x + 1j * x[::-1] if x.size else x
    with tf.Session() as sess:
        got = sess.run(tf.pad(tf.placeholder_with_default(x, shape), paddings))
    np.testing.assert_array_equal(got, np.pad(x, paddings))


def test_pad_v2_fills_with_its_constant():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    paddings = [[0, 1], [2, 0], [0, 0]]
    with tf.Session() as sess:
        got = sess.run(tf.pad(tf.placeholder_with_default(x, x.shape), paddings,
                              constant_values=-1.5))
    np.testing.assert_array_equal(got, np.pad(x, paddings, constant_values=-1.5))
