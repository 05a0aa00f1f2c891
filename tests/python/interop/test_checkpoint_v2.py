"""Checkpoints in TensorFlow's V2 format (the tensor bundle): Saver, the readers, damage, and
round trips with real TensorFlow both ways."""

import logging
import os

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from tf_oracle import requires_tensorflow, run_tensorflow

VALUES = {
    "dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "dense/bias": np.array([0.5, -1.5, 2.25, 0.0], np.float32),
    "step": np.array(42, np.int64),
    "counts": np.array([1, -2, 3], np.int32),
    "wide": np.array([[1e-300, -2.5]], np.float64),
    "flags": np.array([True, False, True]),
}


def make_variables():
    return {key: tf.Variable(value, name=key) for key, value in VALUES.items()}


def save_flowstone(prefix):
    with tf.Graph().as_default():
        variables = make_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, prefix)


def test_saver_writes_an_index_and_one_data_file(tmp_path):
    prefix = save_flowstone(str(tmp_path / "model.ckpt"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt.data-00000-of-00001",
                                            "model.ckpt.index", "model.ckpt.meta"]
    assert tf.train.checkpoint_exists(prefix)
    # The data file holds exactly the tensors' bytes.
    assert os.path.getsize(prefix + ".data-00000-of-00001") == sum(
        v.nbytes for v in VALUES.values())


def test_readers_and_restore(tmp_path):
    prefix = save_flowstone(str(tmp_path / "model.ckpt"))
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in VALUES.items()}
    assert reader.get_variable_to_dtype_map()["step"] == tf.int64
    for key, value in VALUES.items():
        np.testing.assert_array_equal(reader.get_tensor(key), value)
    assert tf.train.list_variables(str(tmp_path)) == sorted(
        (k, list(v.shape)) for k, v in VALUES.items())
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "dense/bias:0"),
                                  VALUES["dense/bias"])
    with tf.Graph().as_default():
        variables = {key: tf.Variable(np.zeros_like(v), name=key) for key, v in VALUES.items()}
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, prefix)
            for key, value in VALUES.items():
                np.testing.assert_array_equal(sess.run(variables[key]), value)


def test_var_list_dict_renames(tmp_path):
    prefix = str(tmp_path / "renamed.ckpt")
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            tf.train.Saver({"model/weights": v}).save(sess, prefix)
    assert tf.train.list_variables(prefix) == [("model/weights", [2])]
    with tf.Graph().as_default():
        other = tf.Variable([0.0, 0.0], name="other")
        with tf.Session() as sess:
            tf.train.Saver({"model/weights": other}).restore(sess, prefix)
            np.testing.assert_array_equal(sess.run(other), [1.0, 2.0])


def test_missing_key_is_not_found(tmp_path):
    prefix = save_flowstone(str(tmp_path / "model.ckpt"))
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found in checkpoint"):
        tf.train.load_variable(prefix, "nope")


def test_old_one_file_checkpoints_still_restore_with_a_note(tmp_path, caplog):
    path = str(tmp_path / "old.ckpt")
    with tf.Graph().as_default():
        v = tf.Variable([3.0, 4.0], name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            _C.save_checkpoint(sess._c, saver._c_vars, path, tensor_bundle=False)
        with tf.Session() as sess, caplog.at_level(logging.WARNING):
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])
    assert "old one-file format" in caplog.text and "re-save" in caplog.text


def test_init_from_checkpoint_by_name_by_variable_and_by_scope(tmp_path):
    prefix = save_flowstone(str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        with tf.variable_scope("new"):
            kernel = tf.get_variable("kernel", [3, 4])
            bias = tf.get_variable("bias", [4])
        counts = tf.Variable(np.zeros(3, np.int32), name="my_counts")
        untouched = tf.Variable(5.0, name="untouched")
        tf.train.init_from_checkpoint(str(tmp_path), {"dense/": "new/"})
        tf.train.init_from_checkpoint(prefix, {"counts": counts})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(kernel), VALUES["dense/kernel"])
            np.testing.assert_array_equal(sess.run(bias), VALUES["dense/bias"])
            np.testing.assert_array_equal(sess.run(counts), VALUES["counts"])
            assert sess.run(untouched) == 5.0
        with pytest.raises(ValueError, match="Tensor nope is not found"):
            tf.train.init_from_checkpoint(prefix, {"nope": "my_counts"})
        with pytest.raises(ValueError, match="doesn't match with shape of tensor"):
            tf.train.init_from_checkpoint(prefix, {"dense/bias": "my_counts"})


# --- damage: DataLoss naming the file, and the variables unchanged --------------------------------


@pytest.fixture
def saved(tmp_path):
    return save_flowstone(str(tmp_path / "model.ckpt"))


def restore_error(prefix):
    with tf.Graph().as_default():
        variables = {key: tf.Variable(np.zeros_like(v), name=key) for key, v in VALUES.items()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.OpError) as info:
                tf.train.Saver().restore(sess, prefix)
            for key, value in VALUES.items():
                np.testing.assert_array_equal(sess.run(variables[key]), np.zeros_like(value))
    return info.value


def rewrite(path, damage):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    with open(path, "wb") as f:
        f.write(bytes(damage(data)))


def test_index_pointing_past_the_data_file(saved):
    rewrite(saved + ".data-00000-of-00001", lambda d: d[:-5])
    error = restore_error(saved)
    assert isinstance(error, tf.errors.DataLossError)
    assert "but the data file" in error.message and saved in error.message


def test_flipped_data_byte_fails_the_checksum(saved):
    def flip(data):
        data[3] ^= 0x40
        return data
    rewrite(saved + ".data-00000-of-00001", flip)
    error = restore_error(saved)
    assert isinstance(error, tf.errors.DataLossError)
    assert "Checksum does not match" in error.message


def test_missing_data_file(saved):
    os.remove(saved + ".data-00000-of-00001")
    error = restore_error(saved)
    assert isinstance(error, tf.errors.DataLossError) and "is missing" in error.message


@pytest.mark.parametrize("keep", [0, 10, 47, -1, -49])
def test_truncated_index(saved, keep):
    rewrite(saved + ".index", lambda d: d[:keep] if keep >= 0 else d[:len(d) + keep])
    error = restore_error(saved)
    assert isinstance(error, tf.errors.DataLossError)
    assert saved + ".index" in error.message


def test_every_flipped_index_byte_is_data_loss_or_harmless(saved):
    original = open(saved + ".index", "rb").read()
    outcomes = set()
    for offset in range(len(original)):
        def flip(data, offset=offset):
            data[offset] ^= 0x01
            return data
        rewrite(saved + ".index", lambda d: flip(bytearray(original)))
        try:
            tf.train.NewCheckpointReader(saved).get_tensor("dense/kernel")
            outcomes.add("ok")  # a flip in the footer's padding changes nothing
        except tf.errors.DataLossError:
            outcomes.add("data loss")
    assert "data loss" in outcomes


def test_garbage_index(saved):
    rewrite(saved + ".index", lambda d: bytearray(os.urandom(len(d))))
    error = restore_error(saved)
    assert isinstance(error, tf.errors.DataLossError)


# --- TensorFlow both ways -------------------------------------------------------------------------

TF_MODEL = """
    import numpy as np
    import tensorflow as tf
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    values = {
        "dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        "dense/bias": np.array([0.5, -1.5, 2.25, 0.0], np.float32),
        "step": np.array(42, np.int64),
        "counts": np.array([1, -2, 3], np.int32),
        "wide": np.array([[1e-300, -2.5]], np.float64),
        "flags": np.array([True, False, True]),
    }
"""


@requires_tensorflow
def test_checkpoint_written_by_tensorflow_restores_in_flowstone(tmp_path):
    run_tensorflow(TF_MODEL + """
    variables = [tf1.Variable(v, name=k) for k, v in values.items()]
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        tf1.train.Saver().save(sess, "./tf_model.ckpt", global_step=7)
    """, tmp_path)
    prefix = tf.train.latest_checkpoint(str(tmp_path))
    assert prefix == str(tmp_path / "tf_model.ckpt-7")
    reader = tf.train.load_checkpoint(str(tmp_path))
    for key, value in VALUES.items():
        got = reader.get_tensor(key)
        assert got.dtype == value.dtype
        np.testing.assert_array_equal(got, value)
    with tf.Graph().as_default():
        variables = {key: tf.Variable(np.zeros_like(v), name=key) for key, v in VALUES.items()}
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, prefix)
            for key, value in VALUES.items():
                np.testing.assert_array_equal(sess.run(variables[key]), value)


@requires_tensorflow
def test_checkpoint_written_by_flowstone_restores_in_tensorflow(tmp_path):
    save_flowstone(str(tmp_path / "fs_model.ckpt"))
    out = run_tensorflow(TF_MODEL + """
    prefix = tf1.train.latest_checkpoint(".")
    print(sorted(name for name, _ in tf1.train.list_variables(prefix)))
    variables = {k: tf1.Variable(np.zeros_like(v), name=k) for k, v in values.items()}
    with tf1.Session() as sess:
        tf1.train.Saver().restore(sess, prefix)
        for k, v in values.items():
            got = sess.run(variables[k])
            assert got.dtype == v.dtype and np.array_equal(got, v), k
    reader = tf1.train.NewCheckpointReader(prefix)
    assert np.array_equal(reader.get_tensor("dense/kernel"), values["dense/kernel"])
    print("restored")
    """, tmp_path)
    assert out.splitlines() == [str(sorted(VALUES)), "restored"]


@requires_tensorflow
def test_indexes_of_several_table_blocks_in_both_directions(tmp_path):
    # Keys of 200 bytes that share little: an index of three 256 KiB data blocks.
    names = [f"{i:05d}/" + "k" * 200 for i in range(3000)]
    with tf.Graph().as_default():
        variables = [tf.Variable(np.full([3], i, np.float32), name=n) for i, n in enumerate(names)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(variables).save(sess, str(tmp_path / "fs.ckpt"))
    assert os.path.getsize(tmp_path / "fs.ckpt.index") > 2 * 256 * 1024
    run_tensorflow("""
    import numpy as np
    import tensorflow as tf
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    reader = tf1.train.load_checkpoint("fs.ckpt")
    names = sorted(reader.get_variable_to_shape_map())
    assert len(names) == 3000, len(names)
    copies = {"copy/" + n: tf1.Variable(reader.get_tensor(n)) for n in names}
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        tf1.train.Saver(copies).save(sess, "./tf.ckpt")
    """, tmp_path)
    reader = tf.train.NewCheckpointReader(str(tmp_path / "tf.ckpt"))
    assert len(reader.get_variable_to_shape_map()) == 3000
    for i in (0, 1, 1234, 2999):
        np.testing.assert_array_equal(reader.get_tensor("copy/" + names[i]), np.full([3], i))
