"""A small LSTM language model (embedding, two fused LSTM layers, softmax projection, sparse
softmax cross entropy, Adam) trains to bit-identical losses at every thread count: the float32
cross entropy, the GEMMs that transpose their B operand once for several row tiles, and
BlockLSTMGrad's transposed weights must not depend on how the work is split.

Thread pools are sized by a process's first session, so each thread count trains in a subprocess
of its own, on the CPU."""
import os
import subprocess
import sys
import textwrap

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")

TRAIN = """
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


def train(threads):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(TRAIN), str(threads)],
                          capture_output=True, text=True, timeout=300, env=CPU_ONLY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    losses = [float.fromhex(v) for v in proc.stdout.split()]
    assert len(losses) == 8
    return losses


def test_lm_losses_are_bit_identical_across_thread_counts():
    reference = train(1)
    assert reference[-1] < reference[0]  # it trains
    for threads in (2, 4):
        assert train(threads) == reference, f"{threads} threads"
