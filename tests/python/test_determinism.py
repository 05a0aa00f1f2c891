"""Training gives bit-identical losses at every thread count and from run to run.

Thread pools are sized by a process's first session, so each thread count trains in a
subprocess of its own.
"""
import subprocess
import sys
import textwrap

TRAIN = """
import sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
tf.set_random_seed(7)
rng = np.random.RandomState(0)
images = rng.rand(32, 12, 12, 3).astype(np.float32)
labels = rng.randint(0, 5, size=32).astype(np.int64)
x = tf.placeholder(tf.float32, [None, 12, 12, 3])
y = tf.placeholder(tf.int64, [None])
h = tf.layers.conv2d(x, 16, 3, activation=tf.nn.relu)
h = tf.layers.conv2d(h, 16, 3, activation=tf.nn.relu)
h = tf.layers.dense(tf.layers.flatten(h), 64, activation=tf.nn.relu)
logits = tf.layers.dense(h, 5)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.AdamOptimizer(1e-3).minimize(loss)
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(50):
        value, _ = sess.run([loss, train], {x: images, y: labels})
        print(float(value).hex())
"""


def train(threads):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(TRAIN), str(threads)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    losses = [float.fromhex(v) for v in proc.stdout.split()]
    assert len(losses) == 50
    return losses


def test_losses_are_bit_identical_across_thread_counts_and_runs():
    reference = train(1)
    assert reference[-1] < reference[0]  # it trains
    for threads in (2, 4, 2):
        assert train(threads) == reference, f"{threads} threads"
