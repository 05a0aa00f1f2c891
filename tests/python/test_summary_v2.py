"""TensorFlow 2's tf.summary: create_file_writer, as_default and steps, eagerly, in tf.function
and in a TF1 graph (initialize, all_v2_summary_ops); record_if; the TF1 forms still build
summary ops; and TensorBoard reads the files."""

import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


def _events(logdir):
    out = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            for value in event.summary.value:
                out.append((event.step, value))
    return out


def _scalars(logdir, tag):
    return [(step, float(tf.make_ndarray(v.tensor)) if v.HasField("tensor") else v.simple_value)
            for step, v in _events(logdir) if v.tag == tag]


def _run(source, *args):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(source), *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


EAGER_PROGRAM = """
    import sys
    import flowstone as tf
    tf.enable_eager_execution()
    writer = tf.summary.create_file_writer(sys.argv[1])
    with writer.as_default():
        for step in range(3):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
            tf.summary.histogram("weights", tf.constant([1.0, 2.0, 2.0, 5.0]), step=step)
        tf.summary.text("note", "hello", step=0)
        tf.summary.image("picture", tf.zeros([1, 4, 4, 3]), step=0)
        with tf.name_scope("train"):
            tf.summary.experimental.set_step(7)
            tf.summary.scalar("lr", 0.5)  # the default step
        with tf.summary.record_if(False):
            tf.summary.scalar("hidden", 1.0, step=0)

    @tf.function
    def train_step(x, step):
        with writer.as_default():
            tf.summary.scalar("in_function", x * 2.0, step=step)
        return x + 1.0

    for i in range(2):
        train_step(tf.constant(float(i)), tf.constant(10 + i, tf.int64))
    writer.flush()
    print("written", tf.summary.scalar("no_writer", 1.0).numpy())
"""


def test_eager_and_function_writes_land_at_their_steps(tmp_path):
    out = _run(EAGER_PROGRAM, str(tmp_path))
    assert out.strip().splitlines()[-1] == "written False"
    np.testing.assert_allclose(_scalars(str(tmp_path), "loss"),
                               [(0, 1.0), (1, 0.5), (2, 1.0 / 3)], rtol=1e-6)
    assert _scalars(str(tmp_path), "train/lr") == [(7, 0.5)]
    assert _scalars(str(tmp_path), "in_function") == [(10, 0.0), (11, 2.0)]
    assert _scalars(str(tmp_path), "hidden") == []
    values = {v.tag: v for _, v in _events(str(tmp_path))}
    assert values["loss"].metadata.plugin_data.plugin_name == "scalars"
    assert values["note"].metadata.plugin_data.plugin_name == "text"
    assert values["weights"].histo.num == 4 and values["weights"].histo.max == 5.0
    assert any(tag.startswith("picture") and v.image.width == 4 for tag, v in values.items())


def test_a_tf1_graph_initializes_its_writers(tmp_path):
    step = tf.compat.v1.train.get_or_create_global_step()
    loss = tf.compat.v1.placeholder(tf.float32, [])
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        written = tf.summary.scalar("loss", loss, step=step)
    increment = tf.compat.v1.assign_add(step, 1)
    assert tf.summary.all_v2_summary_ops() == [written.op]
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        with pytest.raises(tf.errors.FailedPreconditionError, match="run its init op first"):
            sess.run(written, {loss: 1.0})
        tf.compat.v1.summary.initialize(session=sess)
        for value in (3.0, 2.0):
            assert sess.run(written, {loss: value})
            sess.run(increment)
        sess.run(writer.flush())
    assert _scalars(str(tmp_path), "loss") == [(0, 3.0), (1, 2.0)]


def test_write_scalar_raw_proto_and_close(tmp_path):
    """The ops tf.contrib.summary and write_raw_pb use, and a writer closed then reopened."""
    with tf.Graph().as_default():
        writer = tf.summary.create_file_writer(str(tmp_path))
        handle = writer._handle
        v1_summary = tf.compat.v1.summary.scalar("from_v1", tf.constant(4.0))
        scalar = tf.raw_ops.WriteScalarSummary(writer=handle, step=3, tag="simple",
                                               value=tf.constant(1.5))
        with writer.as_default():
            raw = tf.summary.experimental.write_raw_pb(v1_summary, step=9)
        with tf.compat.v1.Session() as sess:
            sess.run(writer.init())
            sess.run([scalar, raw])
            sess.run(writer.close())
            with pytest.raises(tf.errors.FailedPreconditionError, match="no event file"):
                sess.run(scalar)
            sess.run(writer.init())  # a new file in the same directory
            sess.run(scalar)
            sess.run(writer.flush())
    assert _scalars(str(tmp_path), "simple") == [(3, 1.5), (3, 1.5)]
    assert _scalars(str(tmp_path), "from_v1") == [(9, 4.0)]
    assert len(glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*.v2"))) == 2


def test_the_tf1_forms_still_build_summary_ops():
    tf.reset_default_graph()
    x = tf.constant(2.0)
    op = tf.summary.scalar("x", x)
    assert op.dtype == tf.string and op in tf.get_collection(tf.GraphKeys.SUMMARIES)
    with pytest.raises(ValueError, match="No step set"):
        with tf.summary.create_file_writer("/tmp/unused_summary_dir").as_default():
            tf.summary.scalar("x", x)


@requires_tensorflow
def test_tensorboard_reads_the_files(tmp_path):
    _run(EAGER_PROGRAM, str(tmp_path))
    out = run_tensorflow(f"""
        from tensorboard.backend.event_processing import event_accumulator
        from tensorboard.util import tensor_util
        acc = event_accumulator.EventAccumulator({str(tmp_path)!r},
                                                 size_guidance={{"tensors": 0}})
        acc.Reload()
        tags = acc.Tags()
        print(sorted(tags["tensors"]))
        print(sorted(tags["histograms"]), sorted(tags["images"]))
        print([round(float(tensor_util.make_ndarray(e.tensor_proto)), 4)
               for e in acc.Tensors("loss")])
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "['in_function', 'loss', 'note', 'train/lr']"
    assert lines[1].startswith("['weights']") and "picture" in lines[1]
    assert lines[2] == "[1.0, 0.5, 0.3333]"
