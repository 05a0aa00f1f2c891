"""tf.train.Checkpoint and tf.train.CheckpointManager in graph mode (TF1 style, with a session),
and checkpoints crossing to and from real TensorFlow. Eager mode: eager/test_eager_checkpoint.py."""

import os

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from peers import requires_tensorflow, run_tensorflow


class Net(tf.Module):
    def __init__(self, scale=1.0):
        super().__init__()
        self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) * scale, name="w")
        self.sub = tf.Module(name="sub")
        self.sub.b = tf.Variable(np.float64(2.5) * scale, name="b")
        self.layers = [tf.Variable(np.int32(7) * int(scale), name="l0")]
        self.table = {"x": tf.Variable([scale, -scale], name="x")}


def _values(net, sess):
    return sess.run([net.w, net.sub.b, net.layers[0], net.table["x"]])


def test_keys_follow_attribute_paths_as_tensorflow_names_them(tmp_path):
    with tf.Graph().as_default():
        net = Net()
        ckpt = tf.train.Checkpoint(model=net)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = ckpt.save(str(tmp_path / "ckpt"), session=sess)
    assert path == str(tmp_path / "ckpt-1")
    assert tf.train.list_variables(path) == [
        ("_CHECKPOINTABLE_OBJECT_GRAPH", []),
        ("model/layers/0/.ATTRIBUTES/VARIABLE_VALUE", []),
        ("model/sub/b/.ATTRIBUTES/VARIABLE_VALUE", []),
        ("model/table/x/.ATTRIBUTES/VARIABLE_VALUE", [2]),
        ("model/w/.ATTRIBUTES/VARIABLE_VALUE", [2, 3]),
        ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", []),
    ]
    assert tf.train.load_variable(path, "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 1
    # save records the checkpoint in the directory's state file, relative to it.
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert 'model_checkpoint_path: "ckpt-1"' in (tmp_path / "checkpoint").read_text()


def test_graph_mode_restore_runs_in_the_session(tmp_path):
    with tf.Graph().as_default():
        net = Net(scale=3.0)
        ckpt = tf.train.Checkpoint(model=net)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = ckpt.save(str(tmp_path / "ckpt"), session=sess)
            expected = _values(net, sess)
    with tf.Graph().as_default():
        net = Net(scale=1.0)
        ckpt = tf.train.Checkpoint(model=net)
        status = ckpt.restore(path)
        with tf.Session() as sess:
            # Nothing runs before run_restore_ops: the variables are still uninitialized.
            with pytest.raises(tf.errors.FailedPreconditionError):
                sess.run(net.w)
            status.assert_consumed().run_restore_ops(sess)
            for got, want in zip(_values(net, sess), expected):
                np.testing.assert_array_equal(got, want)
            assert sess.run(ckpt.save_counter) == 1
            # The next save continues the restored count.
            assert ckpt.save(str(tmp_path / "ckpt"), session=sess).endswith("ckpt-2")


def test_initialize_or_restore_initializes_what_the_checkpoint_lacks(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(5.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = tf.train.Checkpoint(v=v).write(str(tmp_path / "only_v"), session=sess)
    assert not (tmp_path / "checkpoint").exists()  # write records nothing
    with tf.Graph().as_default():
        v, extra = tf.Variable(0.0), tf.Variable([1.0, 2.0])
        ckpt = tf.train.Checkpoint(v=v, extra=extra)
        status = ckpt.read(path)
        with pytest.raises(AssertionError, match="not bound to checkpointed values"):
            status.assert_consumed()
        with tf.Session() as sess:
            status.initialize_or_restore(sess)
            assert sess.run(v) == 5.0
            assert sess.run(extra).tolist() == [1.0, 2.0]
        status.expect_partial().assert_nontrivial_match()


def test_values_the_program_lacks_fail_assert_consumed(tmp_path):
    with tf.Graph().as_default():
        a, b = tf.Variable(1.0), tf.Variable(2.0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Checkpoint(a=a, b=b).write(str(tmp_path / "ab"), session=sess)
    with tf.Graph().as_default():
        status = tf.train.Checkpoint(a=tf.Variable(0.0)).read(path)
        status.assert_existing_objects_matched()
        with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint .*: "
                                                 r"\(root\)\.b \(b/.ATTRIBUTES/VARIABLE_VALUE\)"):
            status.assert_consumed()
        with pytest.raises(AssertionError, match="Nothing except the root"):
            tf.train.Checkpoint(other=tf.Variable(0.0)).read(path).assert_nontrivial_match()


def test_errors(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0])
        with pytest.raises(ValueError, match="expecting bad to be a trackable object"):
            tf.train.Checkpoint(bad=3)
        ckpt = tf.train.Checkpoint(v=v)
        with pytest.raises(ValueError, match="needs a session"):
            ckpt.write(str(tmp_path / "x"))
        with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint"):
            ckpt.restore(str(tmp_path / "missing"))
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver_path = tf.train.Saver([v]).save(sess, str(tmp_path / "named"))
        with pytest.raises(ValueError, match="no object graph: it was written by a name-based"):
            ckpt.restore(saver_path)
        with pytest.raises(AssertionError, match="No checkpoint specified"):
            ckpt.restore(None).assert_consumed()
    path = _write_v(tmp_path)
    with tf.Graph().as_default():
        wrong = tf.Variable([1.0, 2.0, 3.0])
        with tf.Session() as sess:
            status = tf.train.Checkpoint(v=wrong).restore(path)
            with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
                status.run_restore_ops(sess)


def _write_v(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            return tf.train.Checkpoint(v=v).write(str(tmp_path / "v1"), session=sess)


def test_optimizer_slots_are_saved_under_their_variables(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -2.0], name="w")
        loss = tf.reduce_sum(w * w)
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss)
        ckpt = tf.train.Checkpoint(w=w, optimizer=opt)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            path = ckpt.save(str(tmp_path / "adam"), session=sess)
            m = sess.run(opt.get_slot(w, "m"))
            w_value = sess.run(w)
    names = [name for name, _ in tf.train.list_variables(path)]
    assert "w/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "w/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE" in names
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0], name="w")
        opt = tf.train.AdamOptimizer(0.1)
        opt.minimize(tf.reduce_sum(w * w))
        ckpt = tf.train.Checkpoint(w=w, optimizer=opt)
        with tf.Session() as sess:
            ckpt.restore(path).assert_consumed().run_restore_ops(sess)
            np.testing.assert_array_equal(sess.run(opt.get_slot(w, "m")), m)
            np.testing.assert_array_equal(sess.run(w), w_value)


def test_keras_model_weights_round_trip(tmp_path):
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,)),
                                     tf.keras.layers.Dense(1)])
        sess = tf.keras.backend.get_session()
        path = tf.train.Checkpoint(model=model).save(str(tmp_path / "k"), session=sess)
        weights = sess.run(model.weights)
    names = [name for name, _ in tf.train.list_variables(path)]
    assert "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "model/layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE" in names
    tf.keras.backend.clear_session()
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,)),
                                     tf.keras.layers.Dense(1)])
        sess = tf.keras.backend.get_session()
        tf.train.Checkpoint(model=model).restore(path).run_restore_ops(sess)
        for got, want in zip(sess.run(model.weights), weights):
            np.testing.assert_array_equal(got, want)
    tf.keras.backend.clear_session()


def test_checkpoint_manager_keeps_the_newest(tmp_path):
    directory = str(tmp_path / "run")
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        add = v.assign_add(1.0)
        ckpt = tf.train.Checkpoint(v=v)
        manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=2)
        assert manager.latest_checkpoint is None and manager.checkpoints == []
        with tf.Session() as sess, sess.as_default():
            sess.run(v.initializer)
            paths = []
            for _ in range(3):
                sess.run(add)
                paths.append(manager.save())
            assert paths == [os.path.join(directory, f"ckpt-{n}") for n in (1, 2, 3)]
            assert manager.checkpoints == paths[1:]
            assert manager.latest_checkpoint == paths[-1]
            assert not os.path.exists(paths[0] + ".index")
            assert manager.save(checkpoint_number=100).endswith("ckpt-100")
    state = (tmp_path / "run" / "checkpoint").read_text()
    assert 'model_checkpoint_path: "ckpt-100"' in state
    assert 'all_model_checkpoint_paths: "ckpt-3"' in state
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), directory, max_to_keep=2)
        assert manager.checkpoints == [paths[-1], os.path.join(directory, "ckpt-100")]
        with tf.Session() as sess:
            tf.train.Checkpoint(v=v).restore(manager.latest_checkpoint).run_restore_ops(sess)
            assert sess.run(v) == 3.0
    with pytest.raises(ValueError, match="positive integer or `None`"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), directory, max_to_keep=0)


def test_options_are_accepted(tmp_path):
    options = tf.train.CheckpointOptions(experimental_io_device="/job:localhost")
    with tf.Graph().as_default():
        v = tf.Variable(1.5)
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = tf.train.Checkpoint(v=v).write(str(tmp_path / "o"), options=options,
                                                  session=sess)
    assert tf.train.load_variable(path, "v/.ATTRIBUTES/VARIABLE_VALUE") == 1.5


@requires_tensorflow
def test_tensorflow_checkpoint_restores_in_flowstone(tmp_path):
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        m = tf.Module()
        m.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) * 3)
        m.sub = tf.Module()
        m.sub.b = tf.Variable(np.float64(7.5))
        m.layers = [tf.Variable(np.int32(21))]
        m.table = {"x": tf.Variable([3.0, -3.0])}
        ckpt = tf.train.Checkpoint(model=m)
        ckpt.save("ckpt")
        ckpt.save("ckpt")
    """, tmp_path)
    with tf.Graph().as_default():
        net = Net()
        ckpt = tf.train.Checkpoint(model=net)
        status = ckpt.restore(tf.train.latest_checkpoint(str(tmp_path)))
        with tf.Session() as sess:
            status.assert_consumed().run_restore_ops(sess)
            w, b, layer, x = _values(net, sess)
            assert sess.run(ckpt.save_counter) == 2
    np.testing.assert_array_equal(w, np.arange(6, dtype=np.float32).reshape(2, 3) * 3)
    assert (b, layer, x.tolist()) == (7.5, 21, [3.0, -3.0])


@requires_tensorflow
def test_flowstone_checkpoint_restores_in_tensorflow(tmp_path):
    with tf.Graph().as_default():
        net = Net(scale=2.0)
        opt = tf.train.GradientDescentOptimizer(0.5)
        ckpt = tf.train.Checkpoint(model=net)
        manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)
        with tf.Session() as sess, sess.as_default():
            sess.run(tf.global_variables_initializer())
            manager.save()
            sess.run(opt.minimize(tf.reduce_sum(net.w)))
            manager.save()
            expected = _values(net, sess)
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        m = tf.Module()
        m.w = tf.Variable(np.zeros((2, 3), np.float32))
        m.sub = tf.Module()
        m.sub.b = tf.Variable(np.float64(0))
        m.layers = [tf.Variable(np.int32(0))]
        m.table = {"x": tf.Variable([0.0, 0.0])}
        ckpt = tf.train.Checkpoint(model=m)
        manager = tf.train.CheckpointManager(ckpt, ".", max_to_keep=3)
        print(manager.checkpoints)
        ckpt.restore(manager.latest_checkpoint).assert_consumed()
        print(m.w.numpy().tolist(), float(m.sub.b.numpy()), int(m.layers[0].numpy()),
              m.table["x"].numpy().tolist(), int(ckpt.save_counter.numpy()))
    """, tmp_path)
    lines = out.strip().splitlines()
    assert lines[0] == "['./ckpt-1', './ckpt-2']"
    assert lines[1] == (f"{expected[0].tolist()} {expected[1]} {expected[2]} "
                        f"{expected[3].tolist()} 2")


def _keras_model():
    return tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,)),
                                tf.keras.layers.Dense(1)])


KERAS_WEIGHTS = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2, 3], np.float32),
                 np.array([[0.5], [-0.5], [2.0]], np.float32), np.array([9.0], np.float32)]


@requires_tensorflow
def test_keras_weights_cross_with_tensorflows_keras(tmp_path):
    _write_keras(tmp_path / "from_fs")
    out = run_tensorflow(f"""
        import numpy as np
        import tensorflow as tf
        import tf_keras as keras
        model = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)),
                                  keras.layers.Dense(1)])
        weights = [np.asarray(w, np.float32) for w in {[w.tolist() for w in KERAS_WEIGHTS]!r}]
        model.set_weights(weights)
        tf.train.Checkpoint(model=model).write("from_tf")
        other = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)),
                                  keras.layers.Dense(1)])
        tf.train.Checkpoint(model=other).read("from_fs").assert_existing_objects_matched()
        print([w.tolist() for w in other.get_weights()])
    """, tmp_path)
    assert out.strip() == str([(w * 2).tolist() for w in KERAS_WEIGHTS])
    with tf.Graph().as_default():
        model = _keras_model()
        sess = tf.keras.backend.get_session()
        status = tf.train.Checkpoint(model=model).read(str(tmp_path / "from_tf"))
        status.assert_existing_objects_matched().run_restore_ops(sess)
        for got, want in zip(sess.run(model.weights), KERAS_WEIGHTS):
            np.testing.assert_array_equal(got, want)
    tf.keras.backend.clear_session()


def _write_keras(prefix):
    with tf.Graph().as_default():
        model = _keras_model()
        model.set_weights([w * 2 for w in KERAS_WEIGHTS])
        tf.train.Checkpoint(model=model).write(str(prefix),
                                               session=tf.keras.backend.get_session())
    tf.keras.backend.clear_session()


def test_keras_optimizer_state_round_trips(tmp_path):
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    with tf.Graph().as_default():
        model = _keras_model()
        model.compile(tf.keras.optimizers.Adam(0.1), "mse")
        model.fit(x, y, epochs=2, verbose=0)
        sess = tf.keras.backend.get_session()
        ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
        path = ckpt.write(str(tmp_path / "adam"), session=sess)
        kernel = model.layers[0].kernel
        m = sess.run(model.optimizer._update_optimizer.get_slot(kernel, "m"))
        iterations = sess.run(model.optimizer.iterations)
    tf.keras.backend.clear_session()
    names = [name for name, _ in tf.train.list_variables(path)]
    assert "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert ("model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/"
            "VARIABLE_VALUE") in names
    with tf.Graph().as_default():
        model = _keras_model()
        model.compile(tf.keras.optimizers.Adam(0.1), "mse")
        model.fit(x, y, epochs=1, verbose=0)  # makes the slots
        sess = tf.keras.backend.get_session()
        tf.train.Checkpoint(model=model, optimizer=model.optimizer).read(path) \
            .assert_consumed().run_restore_ops(sess)
        kernel = model.layers[0].kernel
        np.testing.assert_array_equal(
            sess.run(model.optimizer._update_optimizer.get_slot(kernel, "m")), m)
        assert sess.run(model.optimizer.iterations) == iterations == 2
    tf.keras.backend.clear_session()


@requires_tensorflow
def test_tensorflow_optimizer_slots_restore(tmp_path):
    out = run_tensorflow("""
        import tensorflow as tf
        w = tf.Variable([1.0, -2.0])
        opt = tf.compat.v1.train.AdamOptimizer(0.1)
        for _ in range(2):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * w)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        tf.train.Checkpoint(w=w, optimizer=opt).write("adam")
        print(opt.get_slot(w, "m").numpy().tolist(), w.numpy().tolist())
    """, tmp_path)
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0])
        opt = tf.train.AdamOptimizer(0.1)
        opt.minimize(tf.reduce_sum(w * w))
        with tf.Session() as sess:
            tf.train.Checkpoint(w=w, optimizer=opt).read(str(tmp_path / "adam")) \
                .assert_consumed().run_restore_ops(sess)
            assert out.strip() == f"{sess.run(opt.get_slot(w, 'm')).tolist()} " \
                                  f"{sess.run(w).tolist()}"


def test_graph_mode_saves_do_not_grow_the_graph(tmp_path):
    with tf.Graph().as_default() as graph:
        v = tf.Variable(1.0)
        table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.int64, -1)
        ckpt = tf.train.Checkpoint(v=v, table=table)
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(table.insert(tf.constant([1], tf.int64), tf.constant([2], tf.int64)))
            ckpt.restore(ckpt.save(str(tmp_path / "g"), session=sess)).run_restore_ops(sess)
            count = len(graph.get_operations())
            for _ in range(3):
                path = ckpt.save(str(tmp_path / "g"), session=sess)
                ckpt.restore(path).run_restore_ops(sess)
            assert len(graph.get_operations()) == count
            assert path.endswith("g-4")
            assert sess.run(table.lookup(tf.constant([1], tf.int64))).tolist() == [2]


@requires_tensorflow
def test_keras_save_weights_crosses_with_tensorflows_keras(tmp_path):
    with tf.Graph().as_default():
        model = _keras_model()
        model.set_weights(KERAS_WEIGHTS)
        model.save_weights(str(tmp_path / "fs" / "weights"))
    tf.keras.backend.clear_session()
    out = run_tensorflow("""
        import numpy as np
        import tf_keras as keras
        def make():
            return keras.Sequential([keras.layers.Dense(3, input_shape=(2,)),
                                     keras.layers.Dense(1)])
        model = make()
        model.load_weights("fs/weights").assert_existing_objects_matched()
        print([w.tolist() for w in model.get_weights()])
        model.set_weights([w * 3 for w in model.get_weights()])
        model.save_weights("tf/weights")
    """, tmp_path)
    assert out.strip() == str([w.tolist() for w in KERAS_WEIGHTS])
    with tf.Graph().as_default():
        model = _keras_model()
        model.load_weights(str(tmp_path / "tf")).assert_existing_objects_matched()
        for got, want in zip(model.get_weights(), KERAS_WEIGHTS):
            np.testing.assert_array_equal(got, want * 3)
    tf.keras.backend.clear_session()


def test_string_variables_are_saved_and_restored(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(["hello", ""], name="words")
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = tf.train.Checkpoint(v=v).write(str(tmp_path / "s"), session=sess)
            sess.run(v.assign(["bye", "x" * 1000]))
            tf.train.Checkpoint(v=v).read(path).run_restore_ops(sess)
            assert sess.run(v).tolist() == [b"hello", b""]
    assert tf.train.load_variable(path, "v/.ATTRIBUTES/VARIABLE_VALUE").tolist() == [b"hello",
                                                                                       b""]


def test_custom_keras_layer_with_a_private_sublayer(tmp_path):
    class Block(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._inner = tf.keras.layers.Dense(2)
            self.scale = None

        def build(self, input_shape):
            self.scale = self.add_weight("scale", shape=(), initializer="ones")
            super().build(input_shape)

        def call(self, inputs):
            return self._inner(inputs) * self.scale

    with tf.Graph().as_default():
        block = Block()
        block(tf.zeros([1, 3]))
        sess = tf.keras.backend.get_session()
        path = tf.train.Checkpoint(block=block).write(str(tmp_path / "b"), session=sess)
    tf.keras.backend.clear_session()
    assert [name for name, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "block/_inner/bias/.ATTRIBUTES/VARIABLE_VALUE",
        "block/_inner/kernel/.ATTRIBUTES/VARIABLE_VALUE",
        "block/scale/.ATTRIBUTES/VARIABLE_VALUE"]


def test_update_ops_refuse_string_variables():
    with tf.Graph().as_default():
        v = tf.Variable(["a"])
        step = apply_op("ResourceApplyGradientDescent",
                        [v.handle, tf.constant(0.1), tf.constant([1.0])], {"T": tf.float32})
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match="dtype string"):
                sess.run(step)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot update variable"):
                sess.run(apply_op("AssignAddVariableOp", [v.handle, tf.constant([1.0])],
                                  {"dtype": tf.float32}))
            assert sess.run(v).tolist() == [b"a"]


def test_graph_mode_table_alone(tmp_path):
    with tf.Graph().as_default():
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0)
        ckpt = tf.train.Checkpoint(table=table)
        with tf.Session() as sess:
            sess.run(table.insert(tf.constant(["k"]), tf.constant([4.5])))
            path = ckpt.write(str(tmp_path / "t"), session=sess)
    with tf.Graph().as_default():
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0)
        status = tf.train.Checkpoint(table=table).read(path)
        with tf.Session() as sess:
            status.assert_consumed().run_restore_ops(sess)
            assert sess.run(table.lookup(tf.constant(["k", "z"]))).tolist() == [4.5, 0.0]
