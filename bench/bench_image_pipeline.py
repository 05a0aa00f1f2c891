"""An image input pipeline (issue 9): TFRecords of 2,000 JPEGs (256x256), parsed, decoded,
randomly cropped to 224, flipped, normalized, batched by 64 and prefetched, in Flowstone and in
TensorFlow (compat.v1 graph mode, the same code) in one run. Also a small CNN's training step,
on one cached batch and fed by the pipeline: with the pipeline overlapping the step, the two
times should be close.

    .venv/bin/python bench/bench_image_pipeline.py --peer-python .venv-peers/bin/python

The records are made once (by Flowstone's encoder) under build/bench-data and read by both.
Figures are medians of milliseconds per batch of 64 (wall time, and for the pipeline also the
CPU time of all the process's threads); the speedup column is TensorFlow's time over
Flowstone's.
"""

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare_main  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "build", "bench-data", "jpegs_256.tfrecord")
IMAGES, SIZE, CROP, BATCH = 2000, 256, 224, 64
CASES = ["pipeline, ms per batch", "pipeline, CPU ms per batch", "cnn step, cached batch",
         "cnn step, fed by pipeline"]


def _make_records():
    """2,000 smooth random images (a 16x16 pattern scaled up, plus noise) as JPEG records."""
    import flowstone as tf
    os.makedirs(os.path.dirname(RECORDS), exist_ok=True)
    rng = np.random.default_rng(0)
    pixels = tf.compat.v1.placeholder(tf.uint8, [SIZE, SIZE, 3])
    encoded = tf.image.encode_jpeg(pixels, quality=90)
    partial = RECORDS + ".partial"
    with tf.Session() as sess, tf.io.TFRecordWriter(partial) as writer:
        for i in range(IMAGES):
            pattern = np.kron(rng.integers(0, 256, (16, 16, 3)), np.ones((16, 16, 1)))
            image = np.clip(pattern + rng.normal(0, 8, pattern.shape), 0, 255).astype(np.uint8)
            example = tf.train.Example(features=tf.train.Features(feature={
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[sess.run(encoded, {pixels: image})])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 10]))}))
            writer.write(example.SerializeToString())
    os.replace(partial, RECORDS)


def _pipeline(tf):
    def parse(record):
        features = tf.io.parse_single_example(record, {
            "image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)})
        image = tf.image.decode_jpeg(features["image"], channels=3)
        image = tf.image.random_crop(image, [CROP, CROP, 3])
        image = tf.image.random_flip_left_right(image)
        image = tf.image.convert_image_dtype(image, tf.float32)
        return (image - 0.5) / 0.25, features["label"]

    autotune = tf.data.experimental.AUTOTUNE
    return (tf.data.TFRecordDataset(RECORDS).repeat().map(parse, num_parallel_calls=autotune)
            .batch(BATCH, drop_remainder=True).prefetch(autotune))


def _cnn_step(tf, images, labels):
    x = tf.layers.conv2d(images, 16, 5, strides=4, activation=tf.nn.relu)
    x = tf.layers.max_pooling2d(x, 2, 2)
    x = tf.layers.conv2d(x, 32, 3, strides=2, activation=tf.nn.relu)
    logits = tf.layers.dense(tf.reduce_mean(x, [1, 2]), 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    return tf.train.AdamOptimizer(1e-3).minimize(loss)


def _median_ms(sess, target, rounds=5, steps=10):
    """Medians of the wall and the process's CPU milliseconds (all its threads) per run: on a
    shared machine the CPU time shows the work done whatever the other processes take."""
    sess.run(target)  # warm-up
    times, cpu_times = [], []
    for _ in range(rounds):
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(steps):
            sess.run(target)
        times.append((time.perf_counter() - start) / steps * 1e3)
        cpu_times.append((time.process_time() - cpu_start) / steps * 1e3)
    return statistics.median(times), statistics.median(cpu_times)


def run_framework(tf):
    if not os.path.exists(RECORDS):
        raise SystemExit(f"missing {RECORDS}: run this script under Flowstone first")
    results = {}
    with tf.Graph().as_default():
        images, labels = tf.compat.v1.data.make_one_shot_iterator(_pipeline(tf)).get_next()
        with tf.Session() as sess:
            results[CASES[0]], results[CASES[1]] = _median_ms(sess, images)
    with tf.Graph().as_default():
        images, labels = tf.compat.v1.data.make_one_shot_iterator(_pipeline(tf)).get_next()
        cached_images = tf.Variable(tf.zeros([BATCH, CROP, CROP, 3]), trainable=False)
        cached_labels = tf.Variable(tf.zeros([BATCH], tf.int64), trainable=False)
        cache = tf.group(cached_images.assign(images), cached_labels.assign(labels))
        with tf.variable_scope("cnn"):
            cached_step = _cnn_step(tf, cached_images, cached_labels)
        with tf.variable_scope("cnn", reuse=True):
            fed_step = _cnn_step(tf, images, labels)
        with tf.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(cache)
            results[CASES[2]] = _median_ms(sess, cached_step)[0]
            results[CASES[3]] = _median_ms(sess, fed_step)[0]
    return results


if __name__ == "__main__":
    if "--framework" not in sys.argv and not os.path.exists(RECORDS):
        _make_records()
    compare_main(__doc__.splitlines()[0], os.path.abspath(__file__), run_framework, CASES,
                 ("Flowstone ms", "TensorFlow ms"), (28, 14, 15))
