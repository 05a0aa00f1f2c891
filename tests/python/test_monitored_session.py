"""Hooks, Scaffold, SessionManager, Coordinator and the monitored sessions, with the behaviour
TensorFlow's have (the step counts and checkpoint steps below were compared with TF 2's
tf.compat.v1 when this was written)."""

import os
import threading

import numpy as np
import pytest

import flowstone as tf


def _model():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(5.0, name="w")
    loss = w * w
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return step, w, loss, train


def test_monitored_training_session_stops_saves_and_restores(tmp_path):
    step, w, loss, train = _model()
    final = tf.train.FinalOpsHook(w)
    runs = 0
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
            hooks=[tf.train.StopAtStepHook(last_step=5), final]) as sess:
        while not sess.should_stop():
            sess.run(train)
            runs += 1
    assert runs == 5
    np.testing.assert_allclose(final.final_ops_values, 5.0 * 0.8 ** 5, rtol=1e-6)
    # V2 checkpoints: one .index per checkpoint (with its .data-* and .meta files).
    saved = sorted(f[:-len(".index")] for f in os.listdir(tmp_path)
                   if f.startswith("model.ckpt-") and f.endswith(".index"))
    assert saved == ["model.ckpt-0", "model.ckpt-2", "model.ckpt-4", "model.ckpt-5"]

    tf.reset_default_graph()
    step, w, _, train = _model()
    with tf.train.SingularMonitoredSession(checkpoint_dir=str(tmp_path)) as sess:
        assert sess.run(step) == 5
        np.testing.assert_allclose(sess.run(w), 5.0 * 0.8 ** 5, rtol=1e-6)
        assert sess.raw_session().run(step) == 5
    assert tf.get_default_graph().finalized


def test_stop_at_step_counts_from_the_restored_step():
    step, _, _, train = _model()
    hook = tf.train.StopAtStepHook(num_steps=3)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train)
            runs += 1
        assert runs == 3
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)


def test_hooks_order_fetches_and_feeds():
    x = tf.placeholder(tf.float32, [])
    y = tf.placeholder(tf.float32, [])
    total = x + y
    doubled = total * 2
    calls = []

    class Recorder(tf.train.SessionRunHook):
        def begin(self):
            calls.append("begin")

        def after_create_session(self, session, coord):
            calls.append("after_create_session")
            assert isinstance(coord, tf.train.Coordinator)

        def before_run(self, run_context):
            calls.append("before_run")
            assert run_context.original_args.fetches is total
            return tf.train.SessionRunArgs(doubled)

        def after_run(self, run_context, run_values):
            calls.append(("after_run", float(run_values.results)))
            run_context.request_stop()

        def end(self, session):
            calls.append("end")

    feeder = tf.train.FeedFnHook(lambda: {y: 10.0})
    with tf.train.MonitoredSession(hooks=[Recorder(), feeder]) as sess:
        assert sess.run(total, feed_dict={x: 1.0}) == 11.0
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(total, feed_dict={x: 1.0, y: 2.0})
    assert calls == ["begin", "after_create_session", "before_run", ("after_run", 22.0),
                     "before_run", "end"]


def test_out_of_range_ends_the_with_block_cleanly():
    step, _, _, train = _model()
    end_calls = []

    class End(tf.train.SessionRunHook):
        def end(self, session):
            end_calls.append(session.run(step))

    with tf.train.MonitoredSession(hooks=[End()]) as sess:
        sess.run(train)
        raise tf.errors.OutOfRangeError(None, None, "End of sequence")
    assert end_calls == [1]
    with pytest.raises(ValueError, match="boom"):
        with tf.train.MonitoredSession() as sess:
            raise ValueError("boom")


def test_nan_tensor_hook():
    value = tf.placeholder(tf.float32, [])
    with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(value)]) as sess:
        sess.run(value, {value: 1.0})
        with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
            sess.run(value, {value: float("nan")})
    with tf.train.MonitoredSession(
            hooks=[tf.train.NanTensorHook(value, fail_on_nan_loss=False)]) as sess:
        sess.run(value, {value: float("nan")})
        assert sess.should_stop()


def test_logging_tensor_hook_logs_every_n_iter(caplog):
    counter = tf.Variable(0, name="counter")
    bump = counter.assign_add(1)
    hook = tf.train.LoggingTensorHook({"count": counter.read_value()}, every_n_iter=2)
    with caplog.at_level("INFO"):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(bump)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("count = ")]
    assert len(logged) == 3   # iterations 0, 2 and 4
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        tf.train.LoggingTensorHook({"count": counter}, every_n_iter=2, every_n_secs=1)


def test_step_fn_and_request_stop():
    step, _, _, train = _model()
    with tf.train.MonitoredSession() as sess:
        def step_fn(context):
            context.run_with_hooks(train)
            if context.session.run(step) >= 2:
                context.request_stop()
            return "ran"
        assert sess.run_step_fn(step_fn) == "ran"
        assert sess.run_step_fn(step_fn) is None
        assert sess.should_stop()


def test_session_manager_errors_and_ready_check():
    w = tf.Variable(1.0, name="needs_init")
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op was given"):
        manager.prepare_session("")
    with pytest.raises(RuntimeError, match="Variables not initialized: needs_init"):
        manager.prepare_session("", init_op=tf.no_op())
    sess = manager.prepare_session("", init_op=tf.global_variables_initializer())
    assert sess.run(w) == 1.0


def test_scaffold_defaults_and_collections():
    tf.Variable(1.0)
    scaffold = tf.train.Scaffold().finalize()
    assert tf.get_collection(tf.GraphKeys.INIT_OP) == [scaffold.init_op]
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
    with pytest.raises(RuntimeError, match="More than one item in the collection"):
        tf.add_to_collection("extra", 1)
        tf.add_to_collection("extra", 2)
        tf.train.Scaffold.get_or_default("x", "extra", lambda: None)


def test_coordinator_joins_and_reraises():
    coord = tf.train.Coordinator()

    def worker(fail):
        with coord.stop_on_exception():
            if fail:
                raise ValueError("worker failed")
            coord.wait_for_stop()

    threads = [threading.Thread(target=worker, args=(i == 1,)) for i in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="worker failed"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined
    coord.clear_stop()
    assert not coord.should_stop()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "done"))
    coord.join([])   # a clean-stop exception is not re-raised


def test_checkpoint_directory_helpers(tmp_path):
    step, w, _, train = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        second = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2)
    assert len(tf.train.get_checkpoint_mtimes([first, second, str(tmp_path / "none")])) == 2
    assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == [second]
    tf.train.remove_checkpoint(first)
    assert not tf.train.checkpoint_exists(first) and tf.train.checkpoint_exists(second)
    assert tf.train.get_checkpoint_mtimes([first]) == []


def test_basic_train_loop_runs_until_the_supervisor_stops():
    class Supervisor:
        def __init__(self):
            self.steps = 0

        def managed_session(self, master):
            assert master == "grpc://x"
            return tf.Session()

        def should_stop(self):
            return self.steps >= 3

    supervisor = Supervisor()

    def step_fn(sess, increment):
        supervisor.steps += increment

    tf.train.basic_train_loop(supervisor, step_fn, args=[1], master="grpc://x")
    assert supervisor.steps == 3
