"""Data-parallel training of a small CNN on scikit-learn's 8x8 digits with Horovod's API, written
as a TF1 Horovod program (only the imports differ):

    flowstone-run -np 2 python examples/horovod_mnist.py [--steps 300] [--checkpoint-dir DIR]
    mpirun -np 2 python examples/horovod_mnist.py    # the same, with Open MPI's launcher

Each rank trains on its own shard of the data; DistributedOptimizer averages the gradients, the
learning rate is scaled by the number of ranks, rank 0's initial (or restored) weights are
broadcast to all, and only rank 0 writes checkpoints, as in Horovod's examples. A second run with
the same --checkpoint-dir resumes from the last checkpoint.
"""

import argparse
import os

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf
import flowstone.horovod as hvd


def load_data(seed=0):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # [n, 8, 8, 1] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    return (images[train], labels[train]), (images[test], labels[test])


def conv_model(images):
    net = tf.layers.conv2d(images, 16, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 64, activation=tf.nn.relu)
    return tf.layers.dense(net, 10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="global steps to train up to")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per rank and step")
    parser.add_argument("--checkpoint-dir", default=None, help="rank 0's checkpoint folder")
    args = parser.parse_args()

    hvd.init()
    tf.set_random_seed(hvd.rank())  # different initial weights: the broadcast makes them agree
    (x_train, y_train), (x_test, y_test) = load_data()
    # Each rank takes every size()-th example.
    x_train, y_train = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]

    images = tf.placeholder(tf.float32, [None, 8, 8, 1])
    labels = tf.placeholder(tf.int64, [None])
    logits = conv_model(images)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(0.001 * hvd.size())
    opt = hvd.DistributedOptimizer(opt)
    train_op = opt.minimize(loss, global_step=global_step)

    hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=args.steps)]
    checkpoint_dir = args.checkpoint_dir if hvd.rank() == 0 else None
    if checkpoint_dir:
        os.makedirs(checkpoint_dir, exist_ok=True)
    rng = np.random.RandomState(hvd.rank())
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks,
                                           save_checkpoint_steps=10) as sess:
        start = sess.run(global_step)
        print(f"rank {hvd.rank()}/{hvd.size()}: {len(x_train)} training examples, "
              f"starting at step {start}", flush=True)
        if start > 0 and hvd.rank() == 0:
            print(f"restored from step {start}", flush=True)
        while not sess.should_stop():
            batch = rng.randint(0, len(x_train), args.batch_size)
            _, step, batch_loss = sess.run([train_op, global_step, loss],
                                           {images: x_train[batch], labels: y_train[batch]})
            if hvd.rank() == 0 and step % 50 == 0:
                print(f"step {step}: loss {batch_loss:.4f}", flush=True)
        if hvd.rank() == 0:
            test_accuracy = sess.run(accuracy, {images: x_test, labels: y_test})
            print(f"test accuracy {test_accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
