"""tf.train.Checkpoint, CheckpointManager and checkpointed tables in eager mode."""

import gc

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.dense = tf.Module()
        self.dense.kernel = tf.Variable(np.ones((2, 2), np.float32))
        self.steps = [tf.Variable(np.int64(0)), tf.Variable(np.int64(1))]


def test_save_restore_and_counter(tmp_path):
    model = Model()
    ckpt = tf.train.Checkpoint(model=model)
    first = ckpt.save(str(tmp_path / "ckpt"))
    model.dense.kernel.assign(np.full((2, 2), 4.0, np.float32))
    second = ckpt.save(str(tmp_path / "ckpt"))
    assert (first.rsplit("-", 1)[1], second.rsplit("-", 1)[1]) == ("1", "2")
    assert int(ckpt.save_counter.numpy()) == 2
    model.dense.kernel.assign(np.zeros((2, 2), np.float32))
    ckpt.restore(first).assert_consumed()
    np.testing.assert_array_equal(model.dense.kernel.numpy(), np.ones((2, 2)))
    assert int(ckpt.save_counter.numpy()) == 1
    # A new program restores at once, the save counter included.
    fresh = Model()
    restored = tf.train.Checkpoint(model=fresh)
    restored.restore(tf.train.latest_checkpoint(str(tmp_path))).assert_consumed()
    np.testing.assert_array_equal(fresh.dense.kernel.numpy(), np.full((2, 2), 4.0))
    assert int(restored.save_counter.numpy()) == 2
    assert fresh.steps[1].numpy() == 1


def test_shape_mismatch_is_an_error(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "v"))
    with pytest.raises(ValueError, match=r"incompatible tensor with shape \(2,\).*shape \(3,\)"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0, 0.0])).read(path)


def test_manager_in_eager_mode(tmp_path):
    v = tf.Variable(1.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path), max_to_keep=1,
                                         checkpoint_name="model")
    assert manager.restore_or_initialize() is None
    manager.save()
    v.assign(2.0)
    path = manager.save()
    assert manager.checkpoints == [path] and path.endswith("model-2")
    v.assign(0.0)
    assert manager.restore_or_initialize() == path
    assert v.numpy() == 2.0


def test_mutable_hash_table_is_checkpointed(tmp_path):
    table = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
    path = tf.train.Checkpoint(table=table).write(str(tmp_path / "t"))
    names = [name for name, _ in tf.train.list_variables(path)]
    assert "table/.ATTRIBUTES/table-keys" in names
    assert "table/.ATTRIBUTES/table-values" in names
    other = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    other.insert(tf.constant(["z"]), tf.constant([9], tf.int64))
    tf.train.Checkpoint(table=other).read(path).assert_consumed()
    assert other.lookup(tf.constant(["a", "b", "z"])).numpy().tolist() == [1, 2, -1]


@requires_tensorflow
def test_eager_checkpoint_crosses_to_tensorflow_and_back(tmp_path):
    model = Model()
    model.dense.kernel.assign(np.array([[1.5, 2.5], [3.5, 4.5]], np.float32))
    tf.train.Checkpoint(model=model).save(str(tmp_path / "fs"))
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        model = tf.Module()
        model.dense = tf.Module()
        model.dense.kernel = tf.Variable(np.zeros((2, 2), np.float32))
        model.steps = [tf.Variable(np.int64(5)), tf.Variable(np.int64(5))]
        ckpt = tf.train.Checkpoint(model=model)
        ckpt.restore("fs-1").assert_consumed()
        print(model.dense.kernel.numpy().tolist(), [int(s.numpy()) for s in model.steps])
        model.steps[0].assign(42)
        ckpt.write("tf")
    """, tmp_path)
    assert out.strip() == "[[1.5, 2.5], [3.5, 4.5]] [0, 1]"
    fresh = Model()
    tf.train.Checkpoint(model=fresh).restore(str(tmp_path / "tf")).assert_consumed()
    assert fresh.steps[0].numpy() == 42
    np.testing.assert_array_equal(fresh.dense.kernel.numpy(), [[1.5, 2.5], [3.5, 4.5]])


@requires_tensorflow
def test_tensorflow_mutable_hash_table_checkpoint_restores(tmp_path):
    run_tensorflow("""
        import tensorflow as tf
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0)
        table.insert(tf.constant(["x", "y"]), tf.constant([0.5, -1.5]))
        tf.train.Checkpoint(table=table).write("t")
    """, tmp_path)
    table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0)
    tf.train.Checkpoint(table=table).read(str(tmp_path / "t")).assert_consumed()
    assert table.lookup(tf.constant(["y", "x", "q"])).numpy().tolist() == [-1.5, 0.5, 0.0]


def test_static_table_is_tracked_without_values(tmp_path):
    def make():
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer([1, 2], [3, 4], tf.int64, tf.int64), -1)

    path = tf.train.Checkpoint(table=make(), v=tf.Variable(1.0)).write(str(tmp_path / "s"))
    assert [name for name, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "v/.ATTRIBUTES/VARIABLE_VALUE"]
    tf.train.Checkpoint(table=make(), v=tf.Variable(0.0)).read(path).assert_consumed()


def test_objects_made_after_restore_are_restored_when_the_status_is_used(tmp_path, caplog):
    path = tf.train.Checkpoint(model=Model()).write(str(tmp_path / "m"))
    holder = tf.Module()
    ckpt = tf.train.Checkpoint(model=holder)
    status = ckpt.read(path)
    holder.dense = tf.Module()  # built after restore, as a Keras layer is on first call
    holder.dense.kernel = tf.Variable(np.zeros((2, 2), np.float32))
    holder.steps = [tf.Variable(np.int64(7)), tf.Variable(np.int64(7))]
    status.assert_consumed()
    np.testing.assert_array_equal(holder.dense.kernel.numpy(), np.ones((2, 2)))
    assert [int(s.numpy()) for s in holder.steps] == [0, 1]
    # Values nobody took are reported when the status goes away, unless expected.
    with caplog.at_level("WARNING"):
        tf.train.Checkpoint(model=tf.Module()).read(path)
        gc.collect()
    assert "Value in checkpoint could not be found in the restored object: " \
           "(root).model.dense.kernel" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        tf.train.Checkpoint(model=tf.Module()).read(path).expect_partial()
        gc.collect()
    assert "could not be found" not in caplog.text


def test_manager_interval_and_hourly_keeping(tmp_path, monkeypatch):
    from flowstone.train import object_checkpoint

    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path / "i"),
                                         max_to_keep=None, step_counter=step,
                                         checkpoint_interval=10)
    saved = []
    for value in (0, 5, 10, 12, 25):
        step.assign(value)
        saved.append(manager.save() is not None)
    assert saved == [True, False, True, False, True]
    with pytest.raises(ValueError, match="`step_counter` should be passed"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), 1, checkpoint_interval=5)

    clock = [1000.0]
    monkeypatch.setattr(object_checkpoint, "time", type("Clock", (), {
        "time": staticmethod(lambda: clock[0])}))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path / "h"),
                                         max_to_keep=1, keep_checkpoint_every_n_hours=1)
    paths = []
    for _ in range(4):
        clock[0] += 1800  # half an hour between saves
        paths.append(manager.save())
    # Beyond the newest, one checkpoint an hour stays on disk (not in manager.checkpoints).
    on_disk = [p for p in paths if (tmp_path / "h" / (p.rsplit("/", 1)[1] + ".index")).exists()]
    assert manager.checkpoints == [paths[-1]]
    assert on_disk == [paths[1], paths[3]]


@requires_tensorflow
def test_tensorflow_dense_hash_table_checkpoint_restores(tmp_path):
    run_tensorflow("""
        import tensorflow as tf
        table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0,
                                                      deleted_key=-1)
        table.insert(tf.constant([5, 6, 7], tf.int64), tf.constant([50, 60, 70], tf.int64))
        table.remove(tf.constant([6], tf.int64))
        tf.train.Checkpoint(table=table).write("dense")
    """, tmp_path)
    table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0,
                                                  deleted_key=-1)
    tf.train.Checkpoint(table=table).read(str(tmp_path / "dense")).assert_consumed()
    assert table.size().numpy() == 2
    assert table.lookup(tf.constant([5, 6, 7], tf.int64)).numpy().tolist() == [50, -1, 70]


def test_optimizer_slots_are_made_and_restored_before_the_first_step(tmp_path):
    def train_once(w, opt):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    w, opt = tf.Variable([1.0, -2.0]), tf.train.AdamOptimizer(0.1)
    for _ in range(3):
        train_once(w, opt)
    path = tf.train.Checkpoint(w=w, optimizer=opt).write(str(tmp_path / "adam"))
    train_once(w, opt)
    expected = w.numpy()

    w2, opt2 = tf.Variable([0.0, 0.0]), tf.train.AdamOptimizer(0.1)
    tf.train.Checkpoint(w=w2, optimizer=opt2).read(path).assert_consumed()
    np.testing.assert_array_equal(opt2.get_slot(w2, "m").numpy(),
                                  tf.train.load_variable(
                                      path, "w/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/"
                                            "VARIABLE_VALUE"))
    train_once(w2, opt2)
    np.testing.assert_allclose(w2.numpy(), expected, rtol=1e-6)
