"""tf.train.warm_start / VocabInfo (and Estimator's WarmStartSettings on it),
generate_checkpoint_state_proto, match_filenames_once and string variables."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _write_source(tmp_path):
    """A checkpoint of an old model: an embedding over the old vocabulary, a dense layer."""
    (tmp_path / "old_vocab.txt").write_text("apple\nbanana\ncherry\n")
    (tmp_path / "new_vocab.txt").write_text("cherry\ndate\napple\n")
    with tf.Graph().as_default():
        emb = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="emb")
        kernel = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="dense/kernel")
        old_bias = tf.Variable([0.5, -0.5], name="old_bias")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver([emb, kernel, old_bias]).save(sess, str(tmp_path / "src"))


def test_warm_start_renames_and_remaps_vocabulary_rows(tmp_path):
    ckpt = _write_source(tmp_path)
    emb = tf.Variable(tf.ones([4, 2]), name="emb")  # 3 words + 1 OOV bucket
    kernel = tf.Variable(tf.zeros([2, 2]), name="dense/kernel")
    bias = tf.Variable(tf.zeros([2]), name="bias")
    untouched = tf.Variable(7.0, name="other", trainable=False)
    vocab = tf.train.VocabInfo(new_vocab=str(tmp_path / "new_vocab.txt"), new_vocab_size=3,
                               num_oov_buckets=1, old_vocab=str(tmp_path / "old_vocab.txt"),
                               backup_initializer=tf.constant_initializer(-1.0))
    tf.train.warm_start(ckpt, vars_to_warm_start="dense|bias",
                        var_name_to_vocab_info={"emb": vocab},
                        var_name_to_prev_var_name={"bias": "old_bias"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        e, k, b, u = sess.run([emb, kernel, bias, untouched])
    # cherry was old row 2, date is new (backup), apple was old row 0, then the OOV bucket.
    np.testing.assert_array_equal(e, [[4, 5], [-1, -1], [0, 1], [-1, -1]])
    np.testing.assert_array_equal(k, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(b, [0.5, -0.5])
    assert u == 7.0


def test_warm_start_errors_name_what_is_wrong(tmp_path):
    ckpt = _write_source(tmp_path)
    tf.Variable(tf.zeros([3]), name="dense/kernel")
    with pytest.raises(ValueError, match=r"Shape of variable dense/kernel \(\(3,\)\) doesn't "
                       r"match with shape of tensor dense/kernel \(\[2, 2\]\)"):
        tf.train.warm_start(ckpt, "dense")
    tf.reset_default_graph()
    tf.Variable(tf.zeros([2]), name="fresh")
    with pytest.raises(ValueError, match="Tensor fresh .* is not found in"):
        tf.train.warm_start(ckpt, "fresh")
    with pytest.raises(ValueError, match=r"var_name_to_prev_var_name that were not used: "
                       r"\['nope'\]"):
        tf.train.warm_start(ckpt, None, var_name_to_prev_var_name={"nope": "old_bias"})
    with pytest.raises(ValueError, match="supported values for the axis argument are 0 and 1"):
        tf.train.VocabInfo("a", 1, 0, "b", axis=2)


def test_estimator_warm_start_settings_use_vocab_info(tmp_path):
    ckpt = _write_source(tmp_path)
    emb = tf.Variable(tf.zeros([3, 2]), name="emb")
    vocab = tf.estimator.VocabInfo(str(tmp_path / "new_vocab.txt"), 3, 0,
                                   str(tmp_path / "old_vocab.txt"))
    tf.estimator.WarmStartSettings(ckpt, vars_to_warm_start=None,
                                   var_name_to_vocab_info={"emb": vocab}).apply()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(emb), [[4, 5], [0, 0], [0, 1]])


@requires_tensorflow
def test_remapping_matches_tensorflows(tmp_path):
    ckpt = _write_source(tmp_path)
    script = f"""
        import json
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        emb = tf.get_variable("emb", [4, 2], initializer=tf.zeros_initializer())
        vocab = tf.train.VocabInfo({str(tmp_path / "new_vocab.txt")!r}, 3, 1,
                                   {str(tmp_path / "old_vocab.txt")!r},
                                   backup_initializer=tf.ones_initializer())
        tf.train.warm_start({ckpt!r}, vars_to_warm_start=None,
                            var_name_to_vocab_info={{"emb": vocab}})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(json.dumps(sess.run(emb).tolist()))
    """
    expected = json.loads(run_tensorflow(script).splitlines()[-1])
    emb = tf.Variable(tf.zeros([4, 2]), name="emb")
    vocab = tf.train.VocabInfo(str(tmp_path / "new_vocab.txt"), 3, 1,
                               str(tmp_path / "old_vocab.txt"),
                               backup_initializer=tf.ones_initializer())
    tf.train.warm_start(ckpt, vars_to_warm_start=None, var_name_to_vocab_info={"emb": vocab})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(emb), expected)


def test_generate_checkpoint_state_proto_relative_and_absolute():
    state = tf.train.generate_checkpoint_state_proto("dir", "dir/model-2", ["dir/model-1"])
    assert state.model_checkpoint_path == "model-2"
    assert list(state.all_model_checkpoint_paths) == ["model-1", "model-2"]
    state = tf.train.generate_checkpoint_state_proto("/abs", "/abs/model-2")
    assert state.model_checkpoint_path == "/abs/model-2"
    assert list(state.all_model_checkpoint_paths) == ["/abs/model-2"]
    with pytest.raises(ValueError, match="timestamps, if provided, must match"):
        tf.train.generate_checkpoint_state_proto("/abs", "/abs/m", ["/abs/m"],
                                                 all_model_checkpoint_timestamps=[1.0, 2.0])


def test_match_filenames_once_is_a_local_string_variable(tmp_path):
    for name in ("a.csv", "b.csv", "c.txt"):
        (tmp_path / name).write_text("x")
    files = tf.train.match_filenames_once(str(tmp_path / "*.csv"))
    assert files in tf.local_variables() and files not in tf.global_variables()
    assert files.dtype == tf.string
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sorted(sess.run(files)) == [str(tmp_path / "a.csv").encode(),
                                           str(tmp_path / "b.csv").encode()]


def test_string_variables_read_and_assign():
    v = tf.Variable([b"a", b"bc"], name="words")
    update = v.assign([b"x", b"yz"])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [b"a", b"bc"])
        sess.run(update)
        np.testing.assert_array_equal(sess.run(v), [b"x", b"yz"])
        with pytest.raises(tf.errors.InvalidArgumentError, match="dtype float32 to variable 'words' of dtype string"):
            sess.run(tf.raw_ops.AssignVariableOp(resource=v.handle, value=[1.0, 2.0]))
