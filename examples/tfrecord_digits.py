"""The digits CNN of demo.py, fed by tf.data from TFRecord files instead of feed_dict.

Written as a TensorFlow 1 user would (only the import differs): it writes scikit-learn's 8x8
digits as tf.train.Examples into GZIP-compressed TFRecord files, then trains from them with
TFRecordDataset -> map(parse_single_example) -> shuffle -> batch -> prefetch through an
initializable iterator, one pass per epoch, and evaluates on the held-out file the same way.

    python examples/tfrecord_digits.py [--epochs 12] [--data_dir DIR]
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf

BATCH = 32


def write_records(data_dir, seed=0):
    """Writes train.tfrecord.gz and test.tfrecord.gz (80/20 split); returns their sizes."""
    digits = load_digits()
    pixels = digits.images.astype(np.uint8)  # values 0..16
    order = np.random.RandomState(seed).permutation(len(pixels))
    split = int(0.8 * len(order))
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    sizes = {}
    for name, rows in (("train", order[:split]), ("test", order[split:])):
        with tf.io.TFRecordWriter(os.path.join(data_dir, f"{name}.tfrecord.gz"), options) as w:
            for i in rows:
                features = tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[pixels[i].tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=[int(digits.target[i])])),
                })
                w.write(tf.train.Example(features=features).SerializeToString())
        sizes[name] = len(rows)
    return sizes


def parse(record):
    parsed = tf.io.parse_single_example(record, {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    })
    image = tf.reshape(tf.io.decode_raw(parsed["image"], tf.uint8), [8, 8, 1])
    return tf.cast(image, tf.float32) / 16.0, parsed["label"]


def dataset(path, training):
    ds = tf.data.TFRecordDataset(path, compression_type="GZIP")
    ds = ds.map(parse, num_parallel_calls=tf.data.experimental.AUTOTUNE)
    if training:
        ds = ds.shuffle(1000, seed=1)
    return ds.batch(BATCH).prefetch(tf.data.experimental.AUTOTUNE)


def build_model(x, y):
    conv1 = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(conv1, 2, 2)
    conv2 = tf.layers.conv2d(pool1, 64, 3, padding="same", activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(conv2, 2, 2)
    hidden = tf.layers.dense(tf.layers.flatten(pool2), 128, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(learning_rate=0.002).minimize(loss)
    correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.int64))
    return loss, train_op, correct


def run_epoch(sess, init, fetches):
    """Runs `fetches` over one pass of the iterator; returns the summed results (None for an
    operation's)."""
    sess.run(init)
    totals = None
    while True:
        try:
            values = sess.run(fetches)
        except tf.errors.OutOfRangeError:
            return totals
        totals = values if totals is None else [
            None if v is None else t + v for t, v in zip(totals, values)]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--data_dir", default=None)
    args = parser.parse_args(argv)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="flowstone-tfrecords-")
    sizes = write_records(data_dir)
    print(f"Flowstone {tf.__version__}: wrote {sizes['train']} train and {sizes['test']} "
          f"held-out digits as tf.train.Examples in {data_dir}")

    tf.set_random_seed(1)
    train = dataset(os.path.join(data_dir, "train.tfrecord.gz"), training=True)
    test = dataset(os.path.join(data_dir, "test.tfrecord.gz"), training=False)
    # One iterator for both datasets: each epoch initializes it with one of them.
    iterator = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x, y = iterator.get_next()
    loss, train_op, correct = build_model(x, y)
    train_init, test_init = iterator.make_initializer(train), iterator.make_initializer(test)
    count = tf.size(y, out_type=tf.int64)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(1, args.epochs + 1):
            start = time.perf_counter()
            _, loss_sum, batches = run_epoch(sess, train_init, [train_op, loss, tf.constant(1)])
            right, seen = run_epoch(sess, test_init, [correct, count])
            rate = sizes["train"] / (time.perf_counter() - start)
            print(f"epoch {epoch:2d} loss {loss_sum / batches:.4f} held-out acc "
                  f"{right / seen:.3f} ({rate:.0f} ex/s)")
    accuracy = right / seen
    ok = seen == sizes["test"] and accuracy >= 0.95
    print(f"held-out accuracy {accuracy:.4f} over {seen} records")
    print("OK" if ok else "FAILED: expected every held-out record read and >= 95% accuracy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
