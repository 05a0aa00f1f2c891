"""Per-element costs of Dataset.map functions, the image pipeline's stages one at a time
(issue 9): microseconds per element, wall and process CPU time (all threads), sequential and
with num_parallel_calls=2. Run under Flowstone or TensorFlow to compare:

    .venv/bin/python bench/probe_image_map.py [case,case...]
    .venv-peers/bin/python bench/probe_image_map.py --tensorflow [case,case...]

The record cases read bench_image_pipeline.py's TFRecords (run that once first). Each get_next
runs 64 map calls: `shard(64, 0)` keeps one element in 64, so the fetch costs little.
"""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "build", "bench-data", "jpegs_256.tfrecord")
PER_FETCH = 64

if "--tensorflow" in sys.argv:
    sys.argv.remove("--tensorflow")
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    NAME = "tensorflow"
else:
    import flowstone as tf
    NAME = "flowstone"


def fill_slice(x):
    return tf.slice(tf.fill([224, 224, 3], tf.cast(x, tf.float32)), [1, 1, 0], [200, 200, 3])


def fill_flip(x):
    return tf.reverse(tf.fill([224, 224, 3], tf.cast(x, tf.float32)), [1])


def scalar_adds(x):
    for _ in range(21):
        x = x + 1
    return x


def parse(record):
    features = tf.io.parse_single_example(record, {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64)})
    return features["image"], features["label"]


def decode(record):
    image, label = parse(record)
    return tf.image.decode_jpeg(image, channels=3), label


def crop_flip(record):
    image, label = decode(record)
    image = tf.image.random_crop(image, [224, 224, 3])
    return tf.image.random_flip_left_right(image), label


def full(record):
    image, label = crop_flip(record)
    return (tf.image.convert_image_dtype(image, tf.float32) - 0.5) / 0.25, label


CASES = {"fill_slice": fill_slice, "fill_flip": fill_flip, "scalar_adds": scalar_adds,
         "parse": parse, "decode": decode, "crop_flip": crop_flip, "full": full}
READS_RECORDS = {"parse", "decode", "crop_flip", "full"}


def measure(case, parallel_calls, rounds=5, fetches=5):
    """Medians of wall and CPU microseconds per element."""
    with tf.Graph().as_default():
        if case in READS_RECORDS:
            dataset = tf.data.TFRecordDataset(RECORDS).repeat()
        else:
            dataset = tf.data.Dataset.range(10**9)
        dataset = dataset.map(CASES[case], num_parallel_calls=parallel_calls)
        element = tf.compat.v1.data.make_one_shot_iterator(dataset.shard(PER_FETCH, 0)).get_next()
        target = tf.group(element)
        with tf.Session() as sess:
            sess.run(target)
            walls, cpus = [], []
            for _ in range(rounds):
                start, cpu_start = time.perf_counter(), time.process_time()
                for _ in range(fetches):
                    sess.run(target)
                scale = 1e6 / fetches / PER_FETCH
                walls.append((time.perf_counter() - start) * scale)
                cpus.append((time.process_time() - cpu_start) * scale)
    return statistics.median(walls), statistics.median(cpus)


def main():
    cases = sys.argv[1].split(",") if len(sys.argv) > 1 else list(CASES)
    for case in cases:
        for parallel_calls in (None, 2):
            wall, cpu = measure(case, parallel_calls)
            print(f"{NAME:10} {case:12} parallel_calls={parallel_calls!s:4} "
                  f"{wall:8.1f} us wall {cpu:8.1f} us CPU per element", flush=True)


if __name__ == "__main__":
    main()
