"""Feedable iterators (TF1's way to switch a model between a training and a validation
pipeline): Iterator.string_handle() names an iterator in the session, and
Iterator.from_string_handle(placeholder, ...) reads whichever iterator's handle is fed. Errors for
handles that are not iterators', of other sessions, or of another structure. Compared with real
TensorFlow where it is installed."""

import os
import sys

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import requires_tensorflow, run_tensorflow  # noqa: E402

SWITCHING_PROGRAM = """
train = tf.data.Dataset.range(100).map(lambda x: (tf.cast(x, tf.float32), x * 2)).batch(4).repeat()
val = tf.data.Dataset.range(1000, 1010).map(lambda x: (tf.cast(x, tf.float32), x * 2)).batch(4)
handle = tf.placeholder(tf.string, shape=[])
iterator = tf.data.Iterator.from_string_handle(handle, tf.data.get_output_types(train),
                                               tf.data.get_output_shapes(train))
x, y = iterator.get_next()
total = tf.reduce_sum(x) + tf.cast(tf.reduce_sum(y), tf.float32)
train_iterator = tf.data.make_one_shot_iterator(train)
val_iterator = tf.data.make_initializable_iterator(val)
printed = []
with tf.Session() as sess:
    train_handle, val_handle = sess.run([train_iterator.string_handle(),
                                         val_iterator.string_handle()])
    printed.append(type(train_handle).__name__)
    for _ in range(2):
        printed.append(sess.run(total, {handle: train_handle}))
    for _ in range(2):
        sess.run(val_iterator.initializer)
        while True:
            try:
                printed.append(sess.run(total, {handle: val_handle}))
            except tf.errors.OutOfRangeError:
                printed.append("end")
                break
    printed.append(sess.run(total, {handle: train_handle}))
"""


def _switching():
    scope = {"tf": tf}
    exec(SWITCHING_PROGRAM, scope)
    return scope["printed"]


def test_one_feedable_iterator_reads_the_training_or_the_validation_iterator():
    printed = _switching()
    # Batches of 4: x sums plus y (= 2x) sums, so 3 * sum(x).
    train = [3 * sum(range(4 * k, 4 * k + 4)) for k in range(3)]
    val = [3 * (1000 * 4 + 6), 3 * (1004 * 4 + 6), 3 * (1008 + 1009)]
    assert printed == ["bytes", train[0], train[1], *val, "end", *val, "end", train[2]]


@requires_tensorflow
def test_the_switching_program_prints_what_tensorflow_prints():
    want = run_tensorflow("import tensorflow.compat.v1 as tf\ntf.disable_eager_execution()\n"
                          + SWITCHING_PROGRAM
                          + "\nprint(repr([v if isinstance(v, str) else float(v) "
                            "for v in printed]))")
    assert repr([v if isinstance(v, str) else float(v) for v in _switching()]) == want.strip()


def _feedable(types=tf.int64, shapes=tf.TensorShape([None])):
    handle = tf.placeholder(tf.string, shape=[])
    iterator = tf.data.Iterator.from_string_handle(handle, types, shapes)
    return handle, iterator.get_next()


def test_a_string_that_is_no_iterators_handle_is_an_invalid_argument():
    handle, nxt = _feedable()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="'nonsense' fed to IteratorFromStringHandleV2 .* is not an "
                                 "iterator's string handle. Feed the value of "
                                 r"sess.run\(iterator.string_handle\(\)\)"):
            sess.run(nxt, {handle: b"nonsense"})


def test_a_handle_from_another_session_is_not_found_and_the_session_goes_on():
    dataset = tf.data.Dataset.range(3).batch(2)
    source = tf.data.make_one_shot_iterator(dataset)
    handle, nxt = _feedable()
    with tf.Session() as first:
        string_handle = first.run(source.string_handle())
        np.testing.assert_array_equal(first.run(nxt, {handle: string_handle}), [0, 1])
    with tf.Session() as second:
        with pytest.raises(tf.errors.NotFoundError,
                           match="No iterator with string handle .* exists in this session"):
            second.run(nxt, {handle: string_handle})
        fresh = second.run(source.string_handle())
        np.testing.assert_array_equal(second.run(nxt, {handle: fresh}), [0, 1])


def test_an_iterator_of_other_types_is_a_type_mismatch():
    source = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(np.float32([1.5])))
    handle, nxt = _feedable(types=tf.int64)
    with tf.Session() as sess:
        string_handle = sess.run(source.string_handle())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Data type mismatch at component 0: expected int64 but got "
                                 "float"):
            sess.run(nxt, {handle: string_handle})


def test_string_handle_of_a_resource_that_is_no_iterator_is_an_invalid_argument():
    v = tf.Variable(1.0, use_resource=True)
    to_handle = tf.raw_ops.IteratorToStringHandle(resource_handle=v.handle)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not an iterator"):
            sess.run(to_handle)
