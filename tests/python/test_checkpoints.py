"""Checkpoints: tf.train.Saver, the "checkpoint" state file, readers, errors and crash safety."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C

VALUES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "f64": np.array(3.25, dtype=np.float64),
    "i32": np.array([-1, 0, 7, 2**31 - 1], dtype=np.int32),
    "i64": np.arange(8, dtype=np.int64).reshape(2, 2, 2) * 2**40,
    "u8": np.array([0, 128, 255], dtype=np.uint8),
    "b": np.array([[True, False], [False, True]]),
    "f16": np.array([0.5, -2.0, 65504.0], dtype=np.float16),
    "empty": np.zeros((0, 3), dtype=np.float32),
}


def build_model(zeros=False):
    """Variables of every savable dtype, initialized to VALUES (or to zeros of their shapes)."""
    out = {}
    with tf.variable_scope("model"):
        for name, value in VALUES.items():
            out[name] = tf.Variable(np.zeros_like(value) if zeros else value, name=name)
    return out


def assert_values(sess, variables, zeros=False):
    for name, var in variables.items():
        expected = np.zeros_like(VALUES[name]) if zeros else VALUES[name]
        got = sess.run(var)
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_round_trip_every_dtype_into_fresh_session_and_fresh_graph(tmp_path):
    variables = build_model()
    saver = tf.train.Saver()
    path = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, path) == path
    with tf.Session() as sess:  # no initializer runs: restore creates the values
        saver.restore(sess, path)
        assert_values(sess, variables)

    with tf.Graph().as_default():
        variables = build_model(zeros=True)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert_values(sess, variables, zeros=True)
            saver.restore(sess, path)
            assert_values(sess, variables)


def test_saving_does_not_grow_the_graph_and_reads_see_restored_values(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    read = tf.identity(v)
    saver = tf.train.Saver([v])
    graph = tf.get_default_graph()
    with tf.Session() as sess:
        sess.run(v.initializer)
        count = len(graph.get_operations())
        for step in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
        assert len(graph.get_operations()) == count
        sess.run(v.assign([5.0, 6.0]))
        saver.restore(sess, str(tmp_path / "m-1"))
        np.testing.assert_array_equal(sess.run(read), [1.0, 2.0])


def test_save_path_with_global_step_int_variable_and_padding(tmp_path):
    step = tf.Variable(42, name="global_step", trainable=False)
    saver = tf.train.Saver()
    padded = tf.train.Saver(pad_step_number=True)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(step.initializer)
        assert saver.save(sess, prefix, global_step=100) == prefix + "-100"
        assert saver.save(sess, prefix, global_step=step) == prefix + "-42"
        assert saver.save(sess, prefix, global_step=np.int64(7)) == prefix + "-7"
        assert padded.save(sess, prefix, global_step=step) == prefix + "-00000042"
    assert tf.train.load_variable(prefix + "-100", "global_step") == 42


def test_max_to_keep_deletes_old_checkpoints_after_the_state_file_moves_on(tmp_path):
    v = tf.Variable(0.0, name="v")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(v.initializer)
        for step in range(1, 5):
            sess.run(v.assign(float(step)))
            saver.save(sess, prefix, global_step=step)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index", "model.ckpt-3.meta",
        "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index", "model.ckpt-4.meta"]
    assert saver.last_checkpoints == [prefix + "-3", prefix + "-4"]
    state = (tmp_path / "checkpoint").read_text()
    assert state == (f'model_checkpoint_path: "{prefix}-4"\n'
                     f'all_model_checkpoint_paths: "{prefix}-3"\n'
                     f'all_model_checkpoint_paths: "{prefix}-4"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-4"
    assert tf.train.load_variable(str(tmp_path), "v") == 4.0
    ckpt = tf.train.get_checkpoint_state(str(tmp_path))
    assert ckpt.model_checkpoint_path == prefix + "-4"
    assert ckpt.all_model_checkpoint_paths == [prefix + "-3", prefix + "-4"]

    # Saving the same path again moves it to the end instead of counting it twice.
    with tf.Session() as sess:
        saver.restore(sess, prefix + "-3")
        saver.save(sess, prefix, global_step=3)
    assert saver.last_checkpoints == [prefix + "-4", prefix + "-3"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-3"


def test_max_to_keep_none_keeps_everything_and_recover_last_checkpoints(tmp_path):
    v = tf.Variable(0.0, name="v")
    keep_all = tf.train.Saver(max_to_keep=None)
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(v.initializer)
        for step in range(4):
            keep_all.save(sess, prefix, global_step=step)
        assert len([f for f in os.listdir(tmp_path) if f.endswith(".index")]) == 4
        # A new Saver (say after a restart) takes over the recorded checkpoints.
        saver = tf.train.Saver(max_to_keep=2)
        saver.recover_last_checkpoints([prefix + "-2", prefix + "-3"])
        saver.save(sess, prefix, global_step=4)
    assert not tf.train.checkpoint_exists(prefix + "-2")
    assert not [f for f in os.listdir(tmp_path) if f.startswith("m-2")]
    assert tf.train.checkpoint_exists(prefix + "-0") and tf.train.checkpoint_exists(prefix + "-3")
    assert saver.last_checkpoints == [prefix + "-3", prefix + "-4"]


def test_relative_paths_and_escaped_names_in_the_state_file(tmp_path, monkeypatch):
    v = tf.Variable(1.5, name="v")
    saver = tf.train.Saver()
    odd_dir = tmp_path / 'run "1" é'
    odd_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, os.path.join('run "1" é', "model.ckpt"), global_step=5)
    text = (odd_dir / "checkpoint").read_text()
    assert text.splitlines()[0] == 'model_checkpoint_path: "model.ckpt-5"'
    latest = tf.train.latest_checkpoint('run "1" é')
    assert latest == path
    assert tf.train.load_variable(latest, "v:0") == 1.5
    abs_dir = str(tmp_path / "abs")
    os.mkdir(abs_dir)
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, os.path.join(abs_dir, "model"), latest_filename="state")
    assert tf.train.latest_checkpoint(abs_dir) is None
    assert tf.train.latest_checkpoint(abs_dir, "state") == os.path.join(abs_dir, "model")


def test_state_file_parsing_accepts_tensorflow_files_and_ignores_garbage(tmp_path):
    (tmp_path / "model.ckpt-9").write_bytes(b"")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-9"\n'
        'all_model_checkpoint_paths: "model.ckpt-9"\n'
        "all_model_checkpoint_timestamps: 1650000000.5\n"
        "last_preserved_timestamp: 1649999999.0\n")
    ckpt = tf.train.get_checkpoint_state(str(tmp_path))
    assert ckpt.all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-9")]
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-9")
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: model.ckpt-9 {\n")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # names a file that is not there
    assert tf.train.latest_checkpoint(str(tmp_path / "nowhere")) is None


def test_var_list_dict_renames_and_list_variables(tmp_path):
    a = tf.Variable(np.ones((2, 2), np.float32), name="a")
    b = tf.Variable(np.int64(3), name="b")
    path = str(tmp_path / "ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver({"layer/w": a, "counter": b}).save(sess, path)
    assert tf.train.list_variables(path) == [("counter", []), ("layer/w", [2, 2])]
    reader = tf.train.NewCheckpointReader(path)
    assert reader.has_tensor("layer/w") and not reader.has_tensor("a")
    assert reader.get_variable_to_dtype_map() == {"counter": tf.int64, "layer/w": tf.float32}
    np.testing.assert_array_equal(reader.get_tensor("layer/w"), np.ones((2, 2)))
    with pytest.raises(tf.errors.NotFoundError, match="Key a not found in checkpoint"):
        tf.train.load_variable(path, "a")

    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((2, 2), np.float32), name="other_name")
        with tf.Session() as sess:
            tf.train.Saver({"layer/w": w}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), np.ones((2, 2)))


def test_saver_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    with tf.Session() as sess:
        assert tf.train.Saver(allow_empty=True).save(sess, str(tmp_path / "x")) is None
    v = tf.Variable(1.0, name="v")
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        tf.train.Saver([v.value()])
    with pytest.raises(TypeError, match="dict or a list"):
        tf.train.Saver(v)
    with pytest.raises(ValueError, match="same name: v"):
        tf.train.Saver([v, v])
    saver = tf.train.Saver([v])
    with pytest.raises(TypeError, match="'sess' must be a Session"):
        saver.save(None, str(tmp_path / "x"))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
            saver.save(sess, str(tmp_path / "no" / "x"))
        with pytest.raises(ValueError, match="must not contain path components"):
            saver.save(sess, str(tmp_path / "x"), latest_filename="a/b")
        with pytest.raises(ValueError, match="when it is None"):
            saver.restore(sess, None)
        with pytest.raises(RuntimeError, match="conflicts with path used for checkpoint state"):
            saver.save(sess, str(tmp_path / "checkpoint"))
    with pytest.raises(RuntimeError, match="closed Session"):
        saver.save(sess, str(tmp_path / "x"))
    with tf.Graph().as_default():
        tf.constant(1.0)
        with tf.Session() as other, pytest.raises(ValueError, match="different graph"):
            saver.save(other, str(tmp_path / "x"))


def test_saving_an_uninitialized_variable_names_it(tmp_path):
    tf.Variable(1.0, name="ready")
    with tf.variable_scope("layer"):
        tf.Variable(np.zeros(2, np.float32), name="w")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.get_default_graph().get_operation_by_name("ready/Assign"))
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value layer/w"):
            saver.save(sess, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


@pytest.fixture
def saved(tmp_path):
    """A checkpoint holding layer/w [2,2] float32 = 1..4 and b [2] float32."""
    with tf.Graph().as_default():
        with tf.variable_scope("layer"):
            w = tf.Variable(np.arange(1, 5, dtype=np.float32).reshape(2, 2), name="w")
        b = tf.Variable(np.array([7.0, 8.0], np.float32), name="b")
        path = str(tmp_path / "model.ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver([w, b]).save(sess, path)
    return path


@pytest.fixture
def saved_one_file(tmp_path):
    """The checkpoint of `saved` in Flowstone's earlier one-file format, which is still read."""
    with tf.Graph().as_default():
        with tf.variable_scope("layer"):
            w = tf.Variable(np.arange(1, 5, dtype=np.float32).reshape(2, 2), name="w")
        b = tf.Variable(np.array([7.0, 8.0], np.float32), name="b")
        path = str(tmp_path / "model.ckpt")
        saver = tf.train.Saver([w, b])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _C.save_checkpoint(sess._c, saver._c_vars, path, tensor_bundle=False)
    return path


def restore_error(path, make_vars):
    """The error restoring `path` into the variables `make_vars()` builds; checks that the
    failed restore left every variable at its initial value."""
    with tf.Graph().as_default():
        variables = make_vars()
        saver = tf.train.Saver(variables)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(variables)
            with pytest.raises(tf.errors.OpError) as info:
                saver.restore(sess, path)
            for old, new in zip(before, sess.run(variables)):
                np.testing.assert_array_equal(old, new)
    return info.value


def test_restore_missing_variable_is_not_found_naming_it(saved):
    def make():
        b = tf.Variable(np.zeros(2, np.float32), name="b")
        with tf.variable_scope("layer"):
            missing = tf.Variable(np.zeros(3, np.float32), name="bias")
        return [b, missing]
    error = restore_error(saved, make)
    assert isinstance(error, tf.errors.NotFoundError)
    assert f"Key layer/bias not found in checkpoint {saved}" in error.message


def test_restore_shape_and_dtype_mismatch_are_invalid_argument(saved):
    def wrong_shape():
        b = tf.Variable(np.zeros(2, np.float32), name="b")
        with tf.variable_scope("layer"):
            w = tf.Variable(np.zeros((3, 2), np.float32), name="w")
        return [b, w]
    error = restore_error(saved, wrong_shape)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert "layer/w" in error.message and saved in error.message
    assert "[3,2]" in error.message and "[2,2]" in error.message

    def wrong_dtype():
        return [tf.Variable(np.zeros(2, np.int32), name="b")]
    error = restore_error(saved, wrong_dtype)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert "int32" in error.message and "float32" in error.message and "b" in error.message


def test_restore_missing_file_is_not_found_and_value_error(tmp_path):
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    missing = str(tmp_path / "nope")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint: .*nope"):
            saver.restore(sess, missing)
        with pytest.raises(ValueError):
            saver.restore(sess, missing)
        assert not sess.run(tf.is_variable_initialized(v))
    with pytest.raises(tf.errors.NotFoundError, match="No checkpoint file at .*nope"):
        tf.train.list_variables(missing)
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path))


def damaged_copy(saved, tmp_path, damage):
    data = bytearray(open(saved, "rb").read())
    data = damage(data)
    path = str(tmp_path / "damaged")
    with open(path, "wb") as f:
        f.write(bytes(data))
    return path


def one_var():
    with tf.variable_scope("layer"):
        return [tf.Variable(np.zeros((2, 2), np.float32), name="w")]


@pytest.mark.parametrize("keep", [0, 4, 40, -20, -1])
def test_truncated_file_is_data_loss(saved_one_file, tmp_path, keep):
    path = damaged_copy(saved_one_file, tmp_path, lambda d: d[:keep] if keep >= 0 else d[:len(d) + keep])
    error = restore_error(path, one_var)
    assert isinstance(error, tf.errors.DataLossError)
    assert path in error.message and "truncated" in error.message


def test_flipped_bytes_are_data_loss(saved_one_file, tmp_path):
    size = os.path.getsize(saved_one_file)

    def flip(offset):
        def damage(data):
            data[offset] ^= 0x10
            return data
        return damage

    cases = {
        0: "not a Flowstone checkpoint",  # magic
        40: "index fails the CRC32C check",  # first index entry
        size - 20: "the data of layer/w fails the CRC32C check",  # last value's bytes
        size - 10: "index fails the CRC32C check",  # the stored index CRC
        size - 3: "truncated",  # the end marker
        20: "header describes",  # index size
    }
    for offset, message in cases.items():
        path = damaged_copy(saved_one_file, tmp_path, flip(offset))
        error = restore_error(path, one_var)
        assert isinstance(error, tf.errors.DataLossError), (offset, error)
        assert path in error.message and message in error.message, (offset, error.message)


def test_a_directory_is_not_a_checkpoint(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="is a directory, not a checkpoint file"):
        tf.train.NewCheckpointReader(str(tmp_path))


CRASH_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import flowstone as tf

    prefix, size = sys.argv[1], int(sys.argv[2])
    value = tf.placeholder(tf.float32, [size])
    big = tf.Variable(value, name="big")
    step_var = tf.Variable(0, name="step")
    step_value = tf.placeholder(tf.int32, [])
    set_step = step_var.assign(step_value, read_value=False)
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        for step in range(1, 1000):
            sess.run([big.initializer, set_step],
                     {value: np.full(size, step, np.float32), step_value: step})
            print("saving", step, flush=True)
            saver.save(sess, prefix, global_step=step)
            print("saved", step, flush=True)
""")


def test_sigkill_during_save_leaves_the_previous_checkpoint(tmp_path):
    size = 8 << 20  # 32 MiB of float32, so that a save takes long enough to interrupt
    script = tmp_path / "child.py"
    script.write_text(CRASH_CHILD)
    ckpt_dir = tmp_path / "ckpts"
    ckpt_dir.mkdir()
    prefix = str(ckpt_dir / "model.ckpt")
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(tf.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    child = subprocess.Popen([sys.executable, str(script), prefix, str(size)],
                             stdout=subprocess.PIPE, text=True, env=env)
    saw_temp_file = False
    try:
        for line in child.stdout:
            if line.strip() == "saved 2":
                break
        assert child.stdout.readline().strip() == "saving 3"
        # Kill while the new checkpoint is being written: once its temporary file exists.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not saw_temp_file:
            saw_temp_file = any(".tmp-" in name for name in os.listdir(ckpt_dir))
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert saw_temp_file

    latest = tf.train.latest_checkpoint(str(ckpt_dir))
    assert latest in (prefix + "-2", prefix + "-3")
    names = os.listdir(ckpt_dir)
    # A V2 checkpoint exists once its index is renamed into place, after its data file.
    checkpoints = [n[:-len(".index")] for n in names if n.endswith(".index")]
    assert os.path.basename(latest) in checkpoints
    value = tf.placeholder(tf.float32, [size])
    big = tf.Variable(value, name="big")
    step_var = tf.Variable(0, name="step")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        for name in checkpoints:  # every checkpoint under its name is complete
            step = int(name.rsplit("-", 1)[1])
            saver.restore(sess, str(ckpt_dir / name))
            assert sess.run(step_var) == step
            restored = sess.run(big)
            assert restored.shape == (size,) and np.all(restored == step)
    state = tf.train.get_checkpoint_state(str(ckpt_dir))
    assert all(".tmp-" not in p for p in state.all_model_checkpoint_paths)
