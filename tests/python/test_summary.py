"""tf.summary and TensorBoard event files: summary protos checked against hand-decoded bytes,
histograms, images and audio against TensorFlow, event files read back by hand (TFRecord framing
and masked CRC-32C), by summary_iterator, by the real tensorboard package's EventAccumulator and
by a running `tensorboard` server over HTTP."""

import glob
import io
import json
import os
import re
import socket
import struct
import subprocess
import sys
import textwrap
import time
import urllib.request
import wave

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402

DBL_MAX = np.finfo(np.float64).max


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def _parse(summary_bytes):
    return tf.Summary.FromString(summary_bytes)


def _peer(program, timeout=300):
    proc = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(program)], capture_output=True,
                          text=True, timeout=timeout,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- summary protos -----------------------------------------------------------------------------

def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_scalar_summary_bytes_are_tensorflows_wire_format():
    out = _run(tf.summary.scalar("loss", tf.constant(1.5)))
    value = _field(1, b"loss") + b"\x15" + struct.pack("<f", 1.5)  # tag = 1, simple_value = 2
    assert out == _field(1, value)


def test_tags_are_scoped_names_with_family_in_front():
    with tf.name_scope("outer"):
        plain = tf.summary.scalar("loss", 1.0)
        again = tf.summary.scalar("loss", 2.0)
        family = tf.summary.scalar("loss", 3.0, family="fam")
    odd = tf.summary.scalar("/a b:c", 4.0)
    # TensorFlow 1.15 names these the same way (checked against it once, by hand).
    assert family.name == "outer/fam/loss:0"
    assert plain.op.name == "outer/loss" and again.op.name == "outer/loss_1"
    tags = [_parse(s).value[0].tag for s in _run([plain, again, family, odd])]
    assert tags == ["outer/loss", "outer/loss_1", "fam/outer/fam/loss", "a_b_c"]


def test_summaries_join_their_collections_and_merge_all():
    assert tf.summary.merge_all() is None
    a = tf.summary.scalar("a", 1.0)
    b = tf.summary.histogram("b", [1.0, 2.0], collections=["mine"])
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a]
    assert tf.get_collection("mine") == [b]
    merged = tf.summary.merge_all()
    assert merged.name == "Merge/MergeSummary:0"
    assert [v.tag for v in _parse(_run(merged)).value] == ["a"]
    both = tf.summary.merge([a, b])
    assert [v.tag for v in _parse(_run(both)).value] == ["a", "b"]
    assert tf.compat.v1.summary is tf.summary
    assert tf.summary.all_v2_summary_ops() == []


def test_scalar_summary_checks_shapes():
    with pytest.raises(ValueError, match="takes a scalar"):
        tf.summary.scalar("v", [1.0, 2.0])
    tags = tf.placeholder(tf.string, [None])
    op = apply_op("ScalarSummary", [tags, tf.constant([1.0, 2.0, 3.0])]).outputs[0]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"tags and values not the same shape: \[1\] != \[3\] \(tag 'x'\)"):
        _run(op, {tags: np.array([b"x"], object)})


HIST_VALUES = np.concatenate([np.linspace(-3, 5, 50), [0.0, 1e-13, -2e-12, 7e21, 1e-300]])


def test_histogram_summary_fields():
    histo = _parse(_run(tf.summary.histogram("h", HIST_VALUES))).value[0].histo
    assert histo.num == len(HIST_VALUES)
    assert histo.min == HIST_VALUES.min() and histo.max == HIST_VALUES.max()
    assert histo.sum == pytest.approx(HIST_VALUES.sum())
    assert sum(histo.bucket) == len(HIST_VALUES)
    assert list(histo.bucket_limit) == sorted(histo.bucket_limit)
    empty = _parse(_run(tf.summary.histogram("e", tf.zeros([0])))).value[0].histo
    assert (empty.min, empty.max, empty.num) == (DBL_MAX, -DBL_MAX, 0)
    assert list(empty.bucket_limit) == [DBL_MAX] and list(empty.bucket) == [0.0]


@pytest.mark.parametrize("bad, word", [(np.nan, "Nan"), (np.inf, "Infinity")])
def test_histogram_of_nonfinite_values_is_invalid_argument(bad, word):
    h = tf.summary.histogram("h", tf.constant([1.0, bad]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"{word} in summary histogram for: h"):
        _run(h)


def _png_pixels(encoded):
    return _run(tf.image.decode_png(encoded))


def test_image_summary_tags_sizes_and_pixels():
    images = (np.arange(2 * 5 * 4 * 3) * 11 % 256).astype(np.uint8).reshape(2, 5, 4, 3)
    values = _parse(_run(tf.summary.image("img", images))).value
    assert [v.tag for v in values] == ["img/image/0", "img/image/1"]
    for v, image in zip(values, images):
        assert (v.image.height, v.image.width, v.image.colorspace) == (5, 4, 3)
        np.testing.assert_array_equal(_png_pixels(v.image.encoded_image_string), image)
    (one,) = _parse(_run(tf.summary.image("one", images, max_outputs=1))).value
    assert one.tag == "one/image"
    gray = _parse(_run(tf.summary.image("g", np.zeros([1, 2, 2, 1], np.float32)))).value[0]
    assert gray.image.colorspace == 1
    np.testing.assert_array_equal(_png_pixels(gray.image.encoded_image_string), 0)


def test_image_summary_rejects_other_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-D with last dim 1, 3, or 4"):
        _run(tf.summary.image("bad", np.zeros([1, 2, 2, 2], np.uint8)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-zero dims"):
        _run(tf.summary.image("empty", np.zeros([1, 0, 2, 3], np.uint8)))


def test_audio_summary_is_a_wav_file():
    clip = np.array([[[0.5, -1.0], [1.0, 0.25], [-0.75, 2.0]]], np.float32)
    (value,) = _parse(_run(tf.summary.audio("au", clip, 8000, max_outputs=1))).value
    assert value.tag == "au/audio"
    assert (value.audio.sample_rate, value.audio.num_channels, value.audio.length_frames) == (
        8000, 2, 3)
    assert value.audio.content_type == "audio/wav"
    with wave.open(io.BytesIO(value.audio.encoded_audio_string)) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getsampwidth()) == (2, 8000, 2)
        samples = np.frombuffer(wav.readframes(3), "<i2").reshape(3, 2)
    np.testing.assert_array_equal(samples, [[16384, -32768], [32767, 8192], [-24576, 32767]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="sample_rate must be > 0"):
        _run(tf.summary.audio("zero", clip, 0.0))


def test_text_summary_matches_tensorflows_bytes():
    out = _run(tf.summary.text("tx", tf.constant(["a", "bc"])))
    # TensorFlow 2.21's tf.compat.v1.summary.text output for the same input.
    assert out.hex() == ("0a1f0a027478420f0807120412020802420161420262634a080a060a0474657874")
    with pytest.raises(ValueError, match="to have dtype string"):
        tf.summary.text("bad", tf.constant([1.0]))


def test_tensor_summary_holds_the_tensor_and_metadata():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = _run(tf.summary.tensor_summary("t", x, summary_description="desc",
                                         display_name="shown"))
    (value,) = _parse(out).value
    assert value.tag == "t"
    assert value.metadata.summary_description == "desc"
    assert value.metadata.display_name == "shown"
    assert [d.size for d in value.tensor.tensor_shape.dim] == [2, 3]
    np.testing.assert_array_equal(np.frombuffer(value.tensor.tensor_content, np.float32),
                                  x.ravel())


def test_merge_rejects_duplicate_tags_and_non_summaries():
    a = tf.summary.scalar("same", 1.0)
    b = apply_op("ScalarSummary", [tf.constant("same"), tf.constant(2.0)]).outputs[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate tag same found"):
        _run(tf.summary.merge([a, b]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse one of the summary"):
        _run(tf.summary.merge([a, tf.constant(b"\xff\xff")]))


# --- TensorFlow as the oracle -------------------------------------------------------------------

FLOAT_IMAGE = np.array([[[[-1.0, 0.5, 2.0], [0.1, 0.2, 0.3]], [[np.nan, 0, 0], [1.5, -0.5, 0]]],
                        [[[0.0, 0.5, 1.0], [3.0, 2.0, 1.0]], [[np.inf, 1, 1], [0, 0, 0]]]],
                       np.float32)


@pytest.fixture(scope="module")
def tensorflow_results():
    if not HAVE_PEER:
        pytest.skip(SKIP_REASON)
    return _peer(f"""
        import json
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        nan, inf = float("nan"), float("inf")
        hist = np.array({HIST_VALUES.tolist()!r})
        image = np.array({FLOAT_IMAGE.tolist()!r}, np.float32)
        with tf1.Session() as s:
            histo = tf1.Summary.FromString(s.run(tf1.summary.histogram("h", hist))).value[0].histo
            values = tf1.Summary.FromString(s.run(tf1.summary.image("i", image))).value
            pixels = [s.run(tf.image.decode_png(v.image.encoded_image_string)).tolist()
                      for v in values]
        print(json.dumps(dict(
            histo=[histo.min, histo.max, histo.num, histo.sum, histo.sum_squares,
                   list(histo.bucket_limit), list(histo.bucket)],
            image_tags=[v.tag for v in values], pixels=pixels)))
    """)


def test_histogram_buckets_match_tensorflow(tensorflow_results):
    histo = _parse(_run(tf.summary.histogram("h", HIST_VALUES))).value[0].histo
    ours = [histo.min, histo.max, histo.num, histo.sum, histo.sum_squares,
            list(histo.bucket_limit), list(histo.bucket)]
    assert ours == tensorflow_results["histo"]


def test_float_image_scaling_matches_tensorflow(tensorflow_results):
    values = _parse(_run(tf.summary.image("i", FLOAT_IMAGE))).value
    assert [v.tag for v in values] == tensorflow_results["image_tags"]
    for v, theirs in zip(values, tensorflow_results["pixels"]):
        np.testing.assert_array_equal(_png_pixels(v.image.encoded_image_string), theirs)


# --- event files --------------------------------------------------------------------------------

def _crc32c_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def _masked_crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _records_by_hand(path):
    """The records of a TFRecord file, checking both masked CRCs of each."""
    with open(path, "rb") as f:
        data = f.read()
    records, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == _masked_crc32c(header)
        record = data[pos + 12:pos + 12 + length]
        assert struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])[0] == \
            _masked_crc32c(record)
        records.append(record)
        pos += 16 + length
    return records


def _event_files(logdir):
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))


def test_event_file_name_first_record_and_framing(tmp_path):
    before = int(time.time())
    writer = tf.summary.FileWriter(str(tmp_path / "run"), filename_suffix=".v2")
    summary = tf.Summary(value=[tf.Summary.Value(tag="loss", simple_value=0.25)])
    writer.add_summary(summary, global_step=7)
    writer.add_summary(_run(tf.summary.scalar("acc", 0.5)), 8)
    writer.close()
    assert writer.get_logdir() == str(tmp_path / "run")
    (path,) = _event_files(str(tmp_path / "run"))
    match = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2",
                         os.path.basename(path))
    assert match and match.group(2) == socket.gethostname()
    assert int(match.group(3)) == os.getpid()
    assert before <= int(match.group(1)) <= int(time.time())
    events = [tf.Event.FromString(r) for r in _records_by_hand(path)]
    assert events[0].file_version == "brain.Event:2"
    assert events[0].wall_time >= before
    assert [(e.step, e.summary.value[0].tag, e.summary.value[0].simple_value)
            for e in events[1:]] == [(7, "loss", 0.25), (8, "acc", 0.5)]
    assert [e.step for e in tf.train.summary_iterator(path)] == [0, 7, 8]
    assert tf.compat.v1.train.summary_iterator is tf.train.summary_iterator


def test_graph_meta_graph_session_log_and_run_metadata_events(tmp_path):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.identity(x * 2.0, name="y")
    writer = tf.summary.FileWriter(str(tmp_path), graph=tf.get_default_graph())
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 3)
    writer.add_run_metadata(tf.RunMetadata(), "step3", global_step=3)
    with pytest.raises(ValueError, match="already used"):
        writer.add_run_metadata(tf.RunMetadata(), "step3")
    writer.close()
    events = list(tf.train.summary_iterator(_event_files(str(tmp_path))[0]))
    kinds = [e.WhichOneof("what") for e in events]
    assert kinds == ["file_version", "graph_def", "meta_graph_def", "session_log",
                     "tagged_run_metadata"]
    graph_def = tf.GraphDef.FromString(events[1].graph_def)
    assert {"x", "y"} <= {n.name for n in graph_def.node}
    assert "_output_shapes" in next(n for n in graph_def.node if n.name == "y").attr
    meta = tf.MetaGraphDef.FromString(events[2].meta_graph_def)
    assert {n.name for n in meta.graph_def.node} == {n.name for n in graph_def.node}
    assert events[3].session_log.status == tf.SessionLog.START and events[3].step == 3
    assert events[4].tagged_run_metadata.tag == "step3"
    with pytest.raises(TypeError, match="Graph"):
        writer.add_graph("not a graph")


def test_background_flush_writes_without_flush_calls(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=0.05)
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]), 1)
    (path,) = _event_files(str(tmp_path))
    deadline = time.time() + 30
    while len(list(tf.train.summary_iterator(path))) < 2 and time.time() < deadline:
        time.sleep(0.02)
    assert len(list(tf.train.summary_iterator(path))) == 2
    writer.close()


def test_many_events_through_a_small_queue(tmp_path):
    with tf.summary.FileWriter(str(tmp_path), max_queue=2) as writer:
        for step in range(500):
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="s", simple_value=step)]),
                               step)
    events = list(tf.train.summary_iterator(_event_files(str(tmp_path))[0]))
    assert [e.summary.value[0].simple_value for e in events[1:]] == list(range(500))


def test_closed_writer_ignores_events_until_reopened(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.close()
    first = _event_files(str(tmp_path))
    with pytest.warns(UserWarning, match="closed FileWriter"):
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="lost", simple_value=1)]))
    writer.close()  # a second close does nothing
    assert len(list(tf.train.summary_iterator(first[0]))) == 1
    # A reopened writer starts a new file, named by the second it opens in.
    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.05)
    writer.reopen()
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="kept", simple_value=2)]), 1)
    writer.close()
    (second,) = set(_event_files(str(tmp_path))) - set(first)
    events = list(tf.train.summary_iterator(second))
    assert [e.summary.value[0].tag for e in events[1:]] == ["kept"]


def test_bad_logdir_is_failed_precondition(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for logdir in (not_a_dir, not_a_dir / "sub"):
        with pytest.raises(tf.errors.FailedPreconditionError, match="is not a directory|Not a"):
            tf.summary.FileWriter(str(logdir))
    with pytest.raises(TypeError, match="Summary proto"):
        tf.summary.FileWriter(str(tmp_path / "ok")).add_summary(3.0)


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    a = tf.summary.FileWriterCache.get(str(tmp_path))
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is a
    tf.summary.FileWriterCache.clear()
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is not a
    tf.summary.FileWriterCache.clear()


def test_corrupted_event_file_is_data_loss(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1)]), 1)
    (path,) = _event_files(str(tmp_path))
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.train.summary_iterator(path))


# --- training loops write summaries -------------------------------------------------------------

def test_monitored_training_session_writes_summaries(tmp_path):
    step = tf.train.get_or_create_global_step()
    tf.summary.scalar("loss", tf.constant(0.5))
    train_op = tf.assign_add(step, 1)
    with tf.train.MonitoredTrainingSession(summary_dir=str(tmp_path), save_summaries_steps=2,
                                           log_step_count_steps=None) as sess:
        for _ in range(5):
            sess.run(train_op)
    events = list(tf.train.summary_iterator(_event_files(str(tmp_path))[0]))
    assert any(e.WhichOneof("what") == "graph_def" for e in events)
    starts = [e.step for e in events if e.WhichOneof("what") == "session_log"]
    assert starts == [1]
    written = [(e.step, e.summary.value[0].simple_value) for e in events
               if e.WhichOneof("what") == "summary" and e.summary.value[0].tag == "loss"]
    # Written on the first run, then once the step is two past the last write.
    assert written == [(1, 0.5), (3, 0.5), (5, 0.5)]
    tf.summary.FileWriterCache.clear()


def test_checkpoint_saver_hook_logs_each_checkpoint(tmp_path):
    step = tf.train.get_or_create_global_step()
    train_op = tf.assign_add(step, 1)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                                           save_summaries_steps=None,
                                           log_step_count_steps=None) as sess:
        for _ in range(3):
            sess.run(train_op)
    tf.summary.FileWriterCache.clear()
    events = list(tf.train.summary_iterator(_event_files(str(tmp_path))[0]))
    logs = [(e.step, e.session_log.checkpoint_path) for e in events
            if e.WhichOneof("what") == "session_log"]
    path = os.path.join(str(tmp_path), "model.ckpt")
    assert logs == [(0, path), (2, path), (3, path)]
    assert all(e.session_log.status == tf.SessionLog.CHECKPOINT for e in events
               if e.WhichOneof("what") == "session_log")
    assert any(e.WhichOneof("what") == "graph_def" for e in events)


def test_summary_saver_hook_needs_exactly_one_source():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1, output_dir="x")


def test_keras_tensorboard_callback_writes_scalars_histograms_and_graph(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    callback = tf.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1,
                                              update_freq="batch")
    model.fit(x, x[:, :1], epochs=2, batch_size=4, verbose=0, callbacks=[callback])
    events = [e for path in _event_files(str(tmp_path))
              for e in tf.train.summary_iterator(path)]
    tags = [(v.tag, e.step) for e in events if e.WhichOneof("what") == "summary"
            for v in e.summary.value]
    # TF 1's steps: batches by index; epochs by samples seen once batches are written (a
    # batch without a 'size' in its logs counts as one sample).
    assert [s for t, s in tags if t == "batch_loss"] == [0, 1, 2, 3]
    assert [s for t, s in tags if t == "epoch_loss"] == [2, 4]
    assert sum(1 for t, _ in tags if "kernel" in t) == 2
    assert any(e.WhichOneof("what") == "graph_def" for e in events)
    by_epoch = tmp_path / "by_epoch"
    model.fit(x, x[:, :1], epochs=2, batch_size=4, verbose=0,
              callbacks=[tf.keras.callbacks.TensorBoard(str(by_epoch), write_graph=False)])
    events = [e for e in tf.train.summary_iterator(_event_files(str(by_epoch))[0])
              if e.WhichOneof("what") == "summary"]
    assert [(e.step, [v.tag for v in e.summary.value]) for e in events] == [
        (0, ["epoch_loss"]), (1, ["epoch_loss"])]


# --- the real TensorBoard -----------------------------------------------------------------------

def _write_run(logdir):
    """A run with scalars, a histogram, an image and the graph: what TensorBoard should show."""
    x = tf.placeholder(tf.float32, [None, 4], name="inputs")
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("weights", x)
    tf.summary.image("picture", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=1)
    merged = tf.summary.merge_all()
    written = []
    with tf.Session() as sess, tf.summary.FileWriter(logdir, sess.graph) as writer:
        for step in range(3):
            batch = np.arange(8, dtype=np.float32).reshape(2, 4) + step
            summary = sess.run(merged, {x: batch})
            writer.add_summary(summary, step)
            written.append(_parse(summary))
    return written


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_tensorboard_event_accumulator_reads_our_files(tmp_path):
    written = _write_run(str(tmp_path))
    theirs = _peer(f"""
        import json
        from tensorboard.backend.event_processing import event_accumulator as ea
        acc = ea.EventAccumulator({str(tmp_path)!r}, size_guidance={{
            ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0}})
        acc.Reload()
        tags = acc.Tags()
        print(json.dumps(dict(
            scalars=[[e.step, e.value] for e in acc.Scalars("loss")],
            histograms=[[e.step, e.histogram_value.num, list(e.histogram_value.bucket_limit),
                         list(e.histogram_value.bucket)] for e in acc.Histograms("weights")],
            images=[[e.step, e.width, e.height, e.encoded_image_string.hex()]
                    for e in acc.Images("picture/image")],
            graph=sorted(n.name for n in acc.Graph().node),
            has_graph=tags["graph"], meta_graph=tags["meta_graph"])))
    """)
    assert theirs["scalars"] == [[s, float(np.mean(np.arange(8) + s))] for s in range(3)]
    assert theirs["histograms"] == [
        [s, w.value[1].histo.num, list(w.value[1].histo.bucket_limit),
         list(w.value[1].histo.bucket)] for s, w in enumerate(written)]
    assert theirs["images"] == [[s, 2, 2, w.value[2].image.encoded_image_string.hex()]
                                for s, w in enumerate(written)]
    assert theirs["has_graph"] and theirs["meta_graph"]
    assert "inputs" in theirs["graph"] and "loss" in theirs["graph"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_tensorboard_server_serves_our_scalars(tmp_path):
    _write_run(str(tmp_path))
    port = _free_port()
    tensorboard = os.path.join(os.path.dirname(PEER_PYTHON), "tensorboard")
    server = subprocess.Popen(
        [tensorboard, "--logdir", str(tmp_path), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=.&tag=loss"
    try:
        scalars, deadline = None, time.time() + 240
        while time.time() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    scalars = json.loads(response.read())
                if scalars:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        assert server.poll() is None, server.stderr.read().decode()[-3000:]
        assert [[step, value] for _, step, value in scalars] == [
            [s, float(np.mean(np.arange(8) + s))] for s in range(3)]
    finally:
        server.kill()
        server.wait()
