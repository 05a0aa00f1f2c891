"""Reading a whole dataset in a session, for the pipeline tests."""

import flowstone as tf


def drain(dataset, limit=10000, raise_errors=False):
    """The elements of `dataset`, with "error: <class>: <message>" for each failing one (or,
    with raise_errors, the first failure raised)."""
    with tf.Session() as sess:
        nxt = tf.data.make_one_shot_iterator(dataset).get_next()
        out = []
        for _ in range(limit):
            try:
                out.append(sess.run(nxt))
            except tf.errors.OutOfRangeError as e:
                assert "End of sequence" in str(e)
                return out
            except tf.errors.OpError as e:
                if raise_errors:
                    raise
                out.append(f"error: {type(e).__name__}: {e.message}")
    raise AssertionError("the iterator did not end")
