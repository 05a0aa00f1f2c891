"""Training gives bit-identical losses at every thread count and from run to run.

Thread pools are sized by a process's first session, so each thread count trains in a
subprocess of its own. The promise is the CPU kernels', so the subprocesses hide any GPU.
"""
import os
import subprocess
import sys
import textwrap

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")

CNN_TRAIN = """
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


# A small LSTM language model (embedding, two fused LSTM layers, softmax projection, sparse
# softmax cross entropy, Adam): the float32 cross entropy, the GEMMs that transpose their B operand
# once for several row tiles, and BlockLSTMGrad's transposed weights must not depend on how the
# work is split.
LM_TRAIN = """
import sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
tf.set_random_seed(3)
batch, steps, vocab, units = 8, 20, 700, 64
rng = np.random.RandomState(0)
tokens = rng.randint(0, vocab, size=(batch, steps + 1))
x = tf.constant(tokens[:, :-1].astype(np.int32))
y = tf.constant(tokens[:, 1:].reshape(-1).astype(np.int64))
embedding = tf.get_variable("embedding", [vocab, 32])
h = tf.transpose(tf.nn.embedding_lookup(embedding, x), [1, 0, 2])
for layer in range(2):
    h, _ = tf.contrib.rnn.LSTMBlockFusedCell(units, name=f"layer{layer}")(h, dtype=tf.float32)
h = tf.reshape(tf.transpose(h, [1, 0, 2]), [-1, units])
logits = tf.layers.dense(h, vocab)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.AdamOptimizer(1e-2).minimize(loss)
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(8):
        value, _ = sess.run([loss, train])
        print(float(value).hex())
"""


def train(program, threads, steps):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(program), str(threads)],
                          capture_output=True, text=True, timeout=300, env=CPU_ONLY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    losses = [float.fromhex(v) for v in proc.stdout.split()]
    assert len(losses) == steps
    return losses


def test_losses_are_bit_identical_across_thread_counts_and_runs():
    reference = train(CNN_TRAIN, 1, 50)
    assert reference[-1] < reference[0]  # it trains
    for threads in (2, 4, 2):
        assert train(CNN_TRAIN, threads, 50) == reference, f"{threads} threads"


def test_lm_losses_are_bit_identical_across_thread_counts():
    reference = train(LM_TRAIN, 1, 8)
    assert reference[-1] < reference[0]  # it trains
    for threads in (2, 4):
        assert train(LM_TRAIN, threads, 8) == reference, f"{threads} threads"


# Convolutions and their two gradients for the shapes of small CNNs, hashed. The last one's filter
# gradient sums partial filters of several chunks of the batch.
CONVOLUTIONS = """
import hashlib, sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
rng = np.random.RandomState(0)
fetches = []
for n, size, depth, k, filters in [(32, 12, 3, 3, 16), (32, 10, 16, 3, 16), (8, 28, 1, 5, 6),
                                   (8, 14, 6, 5, 16), (4, 16, 32, 3, 64), (4, 16, 64, 1, 64),
                                   (24, 8, 64, 3, 128)]:
    x = tf.constant(rng.rand(n, size, size, depth).astype(np.float32))
    f = tf.constant(rng.rand(k, k, depth, filters).astype(np.float32) - 0.5)
    y = tf.nn.conv2d(x, f, [1, 1, 1, 1], "VALID")
    dy = tf.constant(rng.rand(*y.shape.as_list()).astype(np.float32) - 0.5)
    fetches += [y] + tf.gradients(y, [x, f], grad_ys=dy)
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    print(" ".join(hashlib.sha1(v.tobytes()).hexdigest() for v in sess.run(fetches)))
"""


def test_convolutions_are_bit_identical_across_processes_threads_and_load():
    # oneDNN has several implementations of a convolution (the tensors' layouts or blocked
    # ones) that sum in different orders. The kernel used to time them on first use and keep
    # the faster, so a loaded machine could flip the choice from one process to the next: the
    # training above then differed after a few steps (seen at 4 threads in the ASan build).
    # Six processes at once, at 1, 2 and 4 threads, load each other while they choose.
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(CONVOLUTIONS), str(threads)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=CPU_ONLY)
             for threads in (1, 2, 4, 1, 2, 4)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(out.split())
    assert all(len(hashes) == 21 for hashes in outputs), outputs
    for threads, hashes in zip((1, 2, 4, 1, 2, 4), outputs):
        differing = [i for i, (a, b) in enumerate(zip(hashes, outputs[0])) if a != b]
        assert differing == [], f"{threads} threads: outputs {differing} differ from the first"
