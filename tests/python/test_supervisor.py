"""tf.train.Supervisor and tf.train.LooperThread: a TF1 training loop under a Supervisor restores
from its logdir, checkpoints, writes summaries and the graph, and ends cleanly or with the loop's
exception, as TensorFlow's does."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

PROGRAM = """
    import os, sys
    import numpy as np
    {import_line}
    logdir = sys.argv[1]
    x = np.linspace(-1, 1, 64).astype(np.float32).reshape(-1, 1)
    y = 3 * x + 0.5
    w = tf.Variable([[0.0]], name="w")
    b = tf.Variable([0.0], name="b")
    gs = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) + b - y))
    tf.summary.scalar("loss", loss)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    sv = tf.train.Supervisor(logdir=logdir, save_model_secs=3600, save_summaries_secs=3600)
    with sv.managed_session() as sess:
        start = sess.run(gs)
        for _ in range(50):
            if sv.should_stop():
                break
            sess.run(train)
        print("start", start, "end", sess.run(gs), "loss %.6f" % sess.run(loss))
        sv.saver.save(sess, sv.save_path, global_step=gs)
    files = os.listdir(logdir)
    print("graph" if "graph.pbtxt" in files else "no graph",
          "checkpoint" if "checkpoint" in files else "no checkpoint",
          "events" if any(f.startswith("events.out.tfevents") for f in files) else "no events")
"""


def _run_flowstone(source, *args):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(source), *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_training_resumes_from_the_logdir_across_processes(tmp_path):
    program = PROGRAM.format(import_line="import flowstone as tf")
    first = _run_flowstone(program, str(tmp_path))
    second = _run_flowstone(program, str(tmp_path))
    assert first.splitlines() == ["start 0 end 50 loss 0.002488", "graph checkpoint events"]
    assert second.splitlines()[0] == "start 50 end 100 loss 0.000002"


@requires_tensorflow
def test_the_same_program_gives_tensorflows_results(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    program = PROGRAM.format(import_line="import flowstone as tf")
    tf_program = PROGRAM.format(import_line="import tensorflow.compat.v1 as tf; "
                                            "tf.disable_eager_execution()")
    for _ in range(2):
        mine = _run_flowstone(program, str(ours))
        script = "import sys; sys.argv = ['p', %r]\n" % str(theirs) + textwrap.dedent(tf_program)
        expected = run_tensorflow(script)
        assert mine.splitlines() == expected.splitlines()


def _scalars(logdir, tag):
    values = []
    for name in os.listdir(logdir):
        if name.startswith("events.out.tfevents"):
            for event in tf.train.summary_iterator(os.path.join(logdir, name)):
                values += [(event.step, v.simple_value) for v in event.summary.value
                           if v.tag == tag]
    return values


def test_services_write_summaries_steps_per_second_and_checkpoints(tmp_path):
    gs = tf.train.get_or_create_global_step()
    v = tf.Variable(1.0)
    tf.summary.scalar("v", v)
    step = tf.group(tf.assign_add(gs, 1), tf.assign_add(v, 1.0))
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0.05,
                             save_model_secs=0.05)
    with sv.managed_session() as sess:
        deadline = time.time() + 60
        while time.time() < deadline and (not _scalars(str(tmp_path), "global_step/sec")
                                          or not tf.train.latest_checkpoint(str(tmp_path))):
            sess.run(step)
            sv.summary_writer.flush()
            time.sleep(0.01)
    summaries = _scalars(str(tmp_path), "v")
    assert summaries and all(value == step + 1 for step, value in summaries)
    assert _scalars(str(tmp_path), "global_step/sec")
    assert tf.train.latest_checkpoint(str(tmp_path)).startswith(str(tmp_path / "model.ckpt-"))
    assert (tmp_path / "graph.pbtxt").exists()


def test_an_exception_in_the_block_stops_the_services_and_propagates(tmp_path):
    tf.Variable(1.0)
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    with pytest.raises(ValueError, match="boom"):
        with sv.managed_session() as sess:
            raise ValueError("boom")
    assert sv.should_stop()
    assert sess._closed


def test_out_of_range_ends_the_block_cleanly(tmp_path):
    dataset = tf.data.Dataset.range(3)
    next_element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    seen = []
    sv = tf.train.Supervisor(logdir=None)
    with sv.managed_session() as sess:
        while not sv.should_stop():
            seen.append(sess.run(next_element))
    assert seen == [0, 1, 2]


def test_the_graph_is_finalized_and_defaults_are_found_or_made(tmp_path):
    gs = tf.train.get_or_create_global_step()
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    assert sv.global_step is gs
    assert sv.saver is tf.get_collection(tf.GraphKeys.SAVERS)[0]
    assert sv.init_op is tf.get_collection(tf.GraphKeys.INIT_OP)[0]
    assert sv.save_path == str(tmp_path / "model.ckpt")
    with pytest.raises(RuntimeError, match="finalized"):
        tf.constant(1.0)
    not_chief = tf.train.Supervisor(graph=tf.Graph(), logdir=None, is_chief=False)
    with pytest.raises(RuntimeError, match="Only chief supervisor can start standard services"):
        not_chief.start_standard_services(None)


def test_looper_thread_runs_on_a_timer_and_stops_with_the_coordinator():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.01, calls.append, args=(1,))
    deadline = time.time() + 30
    while len(calls) < 3 and time.time() < deadline:
        time.sleep(0.01)
    coord.request_stop()
    coord.join([looper])
    assert len(calls) >= 3 and not looper.is_alive()

    coord = tf.train.Coordinator()

    def fail():
        raise ValueError("looper failed")

    looper = tf.train.LooperThread.loop(coord, None, fail)
    with pytest.raises(ValueError, match="looper failed"):
        coord.join([looper])
    with pytest.raises(ValueError, match="must be a Coordinator"):
        tf.train.LooperThread(threading.Event(), 1)

    class Counting(tf.train.LooperThread):
        def __init__(self, coord):
            super().__init__(coord, None)
            self.count = 0

        def run_loop(self):
            self.count += 1
            if self.count == 5:
                self._coord.request_stop()

    coord = tf.train.Coordinator()
    counting = Counting(coord)
    counting.start()
    coord.join([counting])
    assert counting.count == 5
    np.testing.assert_equal(coord.should_stop(), True)
