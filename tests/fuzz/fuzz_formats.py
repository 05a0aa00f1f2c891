"""Mutation fuzzing of TensorFlow's formats (`make fuzz`): GraphDef import plus one run, V2
checkpoint reading, and TFRecord files (plain, GZIP and ZLIB; event files among them) read by
tf_record_iterator, summary_iterator and TFRecordDataset.

    python tests/fuzz/fuzz_formats.py [--iterations 2000] [--seed 0] [--report out.json]

The corpus is built here from the interop tests' kinds of artifacts: GraphDefs of small models
(serialized by Graph.as_graph_def), V2 checkpoints written by Saver, TFRecord files written by
TFRecordWriter and an event file written by FileWriter. Each iteration mutates one, GraphDefs mostly
at the message level (attrs, shapes, dtypes, inputs, nodes) and otherwise as bytes (flips,
truncation, a repeated or spliced chunk, an inserted huge varint), and feeds it to the importer or
the checkpoint or record readers; an imported graph is run once with small feeds. Every outcome must
be a result or a tf.errors / ValueError / TypeError / NotImplementedError (or, for an event record
that is not an Event, protobuf's DecodeError, as in TensorFlow); anything else is a finding. The
input about to run is written to <report>.last-input first, so a crash leaves its reproducer behind.
Under the Makefile's ASan build, sanitizer reports and huge allocations abort the process, which
fails the target.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
from google.protobuf.message import DecodeError

import flowstone as tf

EXPECTED = (tf.errors.OpError, ValueError, TypeError, NotImplementedError)


def graph_seeds():
    seeds = []
    builders = [
        lambda: tf.nn.relu(tf.matmul(tf.placeholder(tf.float32, [None, 3], name="x"),
                                     tf.constant(np.ones((3, 2), np.float32)), transpose_b=False)),
        lambda: tf.concat(tf.split(tf.placeholder(tf.float32, [4, 6], name="x"), 2, axis=1),
                          axis=0),
        lambda: tf.reduce_mean(tf.nn.conv2d(tf.placeholder(tf.float32, [1, 5, 5, 2], name="x"),
                                            tf.ones([3, 3, 2, 4]), [1, 1, 1, 1], "SAME"),
                               axis=[1, 2]),
        lambda: tf.reshape(tf.transpose(tf.range(24)), [2, 3, 4]) + tf.fill([4], 7),
        lambda: tf.gather(tf.constant(np.arange(10.0, dtype=np.float32)), [1, 3, 5])
        * tf.cast(tf.placeholder(tf.int64, [3], name="i"), tf.float32),
    ]
    for build in builders:
        with tf.Graph().as_default() as graph:
            build()
            seeds.append(graph.as_graph_def().SerializeToString())
    return seeds


def checkpoint_seed(directory):
    with tf.Graph().as_default():
        tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        tf.Variable(np.array([1, 2], np.int64), name="step")
        tf.Variable(np.array([True, False]), name="flags")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, os.path.join(directory, "seed.ckpt"),
                                         write_meta_graph=False, write_state=False)


COMPRESSIONS = ["", "GZIP", "ZLIB"]


def record_seeds(directory):
    """(bytes, compression) of TFRecord files: the same records plain, GZIP'd and ZLIB'd, and an
    event file (a graph, scalars and a histogram written by FileWriter)."""
    records = [b"", b"hello", b"x" * 300, tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(int64_list=tf.train.Int64List(value=[7, -1]))})).SerializeToString()]
    seeds = []
    for compression in COMPRESSIONS:
        path = os.path.join(directory, f"seed{compression}.tfrecord")
        with tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions(compression)) as w:
            for record in records:
                w.write(record)
        seeds.append((open(path, "rb").read(), compression))
    logdir = os.path.join(directory, "events")
    with tf.Graph().as_default() as graph:
        x = tf.constant([1.0, 2.0, 3.0])
        merged = tf.summary.merge([tf.summary.scalar("s", tf.reduce_sum(x)),
                                   tf.summary.histogram("h", x)])
        writer = tf.summary.FileWriter(logdir, graph)
        with tf.Session() as sess:
            writer.add_summary(sess.run(merged), 1)
        writer.close()
    event_file = os.path.join(logdir, sorted(os.listdir(logdir))[0])
    seeds.append((open(event_file, "rb").read(), "events"))
    return seeds


def run_records(data, compression, directory, stats):
    """Reads a (mutated) record file three ways: tf_record_iterator, summary_iterator for event
    files, and a TFRecordDataset in a session."""
    path = os.path.join(directory, "mutant.tfrecord")
    with open(path, "wb") as f:
        f.write(data)
    if compression == "events":
        try:
            stats["records"] += len(list(tf.train.summary_iterator(path)))
        except DecodeError:  # a record that is not an Event: protobuf's error, as in TensorFlow
            pass
        compression = ""
    else:
        options = tf.python_io.TFRecordOptions(compression)
        stats["records"] += len(list(tf.python_io.tf_record_iterator(path, options)))
    with tf.Graph().as_default():
        next_record = tf.data.TFRecordDataset(path, compression).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            try:
                while True:
                    sess.run(next_record)
            except tf.errors.OutOfRangeError:
                pass
    stats["record_files"] += 1


def mutate(data, rng, corpus):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(6)
        if not data:
            data = bytearray(rng.choice(corpus))
        position = rng.randrange(len(data))
        if choice == 0:
            data[position] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[position] = rng.choice([0x00, 0x7f, 0x80, 0xff])
        elif choice == 2:
            del data[position:]
        elif choice == 3:
            end = min(len(data), position + rng.randint(1, 16))
            data[position:position] = data[position:end]
        elif choice == 4:
            other = rng.choice(corpus)
            start = rng.randrange(len(other))
            data[position:position] = other[start:start + rng.randint(1, 32)]
        else:
            data[position:position] = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    return bytes(data)


EDGE_INTS = [0, 1, -1, 2, 3, 7, -2**31, 2**31 - 1, 2**40, -2**62, 2**62]


def mutate_structure(data, rng):
    """A GraphDef changed at the message level: an attr, a shape, a dtype, an input or a node,
    so that most mutants still parse and reach the importer's checks and the kernels."""
    graph_def = tf.GraphDef.FromString(data)
    nodes = graph_def.node
    node = nodes[rng.randrange(len(nodes))]
    choice = rng.randrange(6)
    if choice == 0 and node.attr:
        value = node.attr[rng.choice(sorted(node.attr))]
        kind = value.WhichOneof("value")
        if kind == "i":
            value.i = rng.choice(EDGE_INTS)
        elif kind == "type":
            value.type = rng.randrange(0, 25)
        elif kind == "b":
            value.b = not value.b
        elif kind == "list" and value.list.i:
            value.list.i[rng.randrange(len(value.list.i))] = rng.choice(EDGE_INTS)
        elif kind == "tensor":
            tensor = value.tensor
            if tensor.tensor_shape.dim:
                tensor.tensor_shape.dim[rng.randrange(len(tensor.tensor_shape.dim))].size = \
                    rng.choice(EDGE_INTS)
            else:
                tensor.tensor_shape.dim.add().size = rng.choice(EDGE_INTS)
        elif kind == "shape":
            value.shape.dim.add().size = rng.choice(EDGE_INTS)
        else:
            value.i = rng.choice(EDGE_INTS)
    elif choice == 1 and node.input:
        slot = rng.randrange(len(node.input))
        target = rng.choice(nodes).name
        node.input[slot] = rng.choice([target, f"{target}:{rng.choice(EDGE_INTS)}",
                                       "^" + target])
    elif choice == 2:
        node.op = rng.choice(nodes).op
    elif choice == 3:
        nodes.add().CopyFrom(node)
    elif choice == 4:
        del nodes[rng.randrange(len(nodes))]
    else:
        node.input.append(rng.choice(nodes).name)
    return graph_def.SerializeToString()


def feed_for(op):
    dtype = op.outputs[0].dtype
    shape = op.outputs[0].shape
    dims = [2] if shape.ndims is None else [2 if d is None else min(d, 8) for d in shape.as_list()]
    if dtype == tf.bool:
        return np.zeros(dims, np.bool_)
    return np.ones(dims, dtype.as_numpy_dtype)


def run_graph_def(data, stats):
    try:
        graph_def = tf.GraphDef.FromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: not a message, nothing to import
        stats["unparsable"] += 1
        return
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        stats["imported"] += 1
        ops = graph.get_operations()
        feeds = {op.outputs[0]: feed_for(op) for op in ops
                 if op.type == "Placeholder" and op.outputs[0].dtype.is_numpy_compatible}
        fetches = [t for op in ops[-3:] for t in op.outputs
                   if t.dtype.is_numpy_compatible and t not in feeds]
        if fetches:
            with tf.Session() as sess:
                sess.run(fetches, feeds)
            stats["ran"] += 1


def run_checkpoint(index, data, directory, stats):
    prefix = os.path.join(directory, "mutant.ckpt")
    with open(prefix + ".index", "wb") as f:
        f.write(index)
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(data)
    reader = tf.train.NewCheckpointReader(prefix)
    for key in reader.get_variable_to_shape_map():
        reader.get_tensor(key)
    stats["read"] += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", default="build/fuzz-formats-report.json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="fuzz_formats_")
    last_input = args.report + ".last-input"
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    graphs = graph_seeds()
    prefix = checkpoint_seed(work)
    index = open(prefix + ".index", "rb").read()
    data = open(prefix + ".data-00000-of-00001", "rb").read()
    records = record_seeds(work)
    stats = {"executions": 0, "unparsable": 0, "imported": 0, "ran": 0, "read": 0,
             "record_files": 0, "records": 0, "expected_errors": 0, "findings": []}
    start = time.monotonic()
    try:
        for i in range(args.iterations):
            stats["executions"] += 1
            try:
                if i % 3 == 2:
                    seed, compression = rng.choice(records)
                    mutant = mutate(seed, rng, [seed])
                    with open(last_input, "wb") as f:
                        f.write(mutant)
                    run_records(mutant, compression, work, stats)
                elif i % 3 == 0:
                    seed = rng.choice(graphs)
                    mutant = (mutate_structure(seed, rng) if rng.random() < 0.7
                              else mutate(seed, rng, graphs))
                    with open(last_input, "wb") as f:
                        f.write(mutant)
                    run_graph_def(mutant, stats)
                else:
                    mutant_index = mutate(index, rng, [index]) if rng.random() < 0.7 else index
                    mutant_data = mutate(data, rng, [data]) if rng.random() < 0.5 else data
                    with open(last_input, "wb") as f:
                        f.write(mutant_index)
                    run_checkpoint(mutant_index, mutant_data, work, stats)
            except EXPECTED:
                stats["expected_errors"] += 1
            except Exception as e:  # noqa: BLE001 - anything else is what the fuzzer looks for
                stats["findings"].append(f"iteration {i}: {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stats["seconds"] = round(time.monotonic() - start, 1)
    os.remove(last_input)
    with open(args.report, "w") as f:
        json.dump(stats, f, indent=1)
    print(json.dumps({k: v for k, v in stats.items() if k != "findings"}))
    for finding in stats["findings"]:
        print("FINDING", finding)
    return 1 if stats["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
