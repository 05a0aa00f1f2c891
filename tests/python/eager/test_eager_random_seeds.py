"""Random numbers while executing eagerly follow TensorFlow 2's seed rules: with a global seed
each call draws new numbers, setting the seed again (tf.random.set_seed, or TF1's
tf.set_random_seed) replays them, calls with an op seed draw the next numbers of that seed, and
different samplers do not share one stream. Seeded calls reuse one cached op (no growth per
call)."""

import numpy as np

import flowstone as tf
from flowstone import _C


def _draws():
    return [tf.random.uniform([3]).numpy(), tf.random.normal([3]).numpy(),
            tf.random.uniform([3]).numpy(), tf.random.truncated_normal([3]).numpy(),
            tf.random.uniform([4], maxval=100, dtype=tf.int64).numpy(),
            tf.random.uniform([2], seed=7).numpy(), tf.random.uniform([2], seed=7).numpy()]


def test_setting_the_seed_again_replays_every_call():
    tf.random.set_seed(123)
    first = _draws()
    tf.random.set_seed(123)
    second = _draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    tf.set_random_seed(123)  # the TF1 name restarts them too
    np.testing.assert_array_equal(tf.random.uniform([3]).numpy(), first[0])


def test_calls_draw_new_numbers_and_samplers_have_their_own_streams():
    tf.random.set_seed(5)
    uniform_a, normal, uniform_b, truncated, _, seeded_a, seeded_b = _draws()
    assert not np.array_equal(uniform_a, uniform_b)
    assert not np.array_equal(seeded_a, seeded_b)
    # A normal drawn from the same stream as the uniforms would be their Box-Muller transform;
    # its values differ from a normal of a fresh sequence's first call.
    tf.random.set_seed(5)
    first_normal = tf.random.normal([3]).numpy()
    assert not np.array_equal(first_normal, normal)
    assert np.all(np.abs(truncated) <= 2.0)
    tf.random.set_seed(6)
    assert not np.array_equal(tf.random.uniform([3]).numpy(), uniform_a)


def test_seeded_calls_share_one_cached_op():
    tf.random.set_seed(9)
    for _ in range(3):
        tf.nn.dropout(tf.ones([8]), rate=0.5)
        tf.random.normal([4])
    size = _C.eager_cache_size()
    values = set()
    for _ in range(50):
        values.add(tuple(tf.nn.dropout(tf.ones([8]), rate=0.5).numpy()))
        tf.random.normal([4])
    assert _C.eager_cache_size() == size
    assert len(values) > 40  # the masks differ from call to call
