"""Flowstone's main demo: a TF1 graph-mode CNN on scikit-learn's bundled 8x8 digits.

Written exactly as a TensorFlow 1 user would (only the import differs). It trains with Adam,
shows a progress bar per epoch, reports held-out accuracy, then saves a checkpoint, restores it
in a fresh session and checks that the accuracy is the same.
"""

import os
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf

EPOCHS = 15
BATCH = 32


def load_data(seed=0):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # [n, 8, 8, 1] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    return (images[train], labels[train]), (images[test], labels[test])


def build_model():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    conv1 = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(conv1, 2, 2)
    conv2 = tf.layers.conv2d(pool1, 64, 3, padding="same", activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(conv2, 2, 2)
    flat = tf.layers.flatten(pool2)
    hidden = tf.layers.dense(flat, 128, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(learning_rate=0.002).minimize(loss)
    correct = tf.equal(tf.argmax(logits, 1), y)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return x, y, loss, train_op, accuracy


def progress(epoch, done, total, loss, acc, rate, width=30):
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    sys.stdout.write(f"\repoch {epoch:2d} [{bar}] {done:4d}/{total} loss {loss:.4f} "
                     f"acc {acc:.3f} {rate:7.0f} ex/s")
    sys.stdout.flush()


def evaluate(sess, x, y, accuracy, images, labels):
    return float(sess.run(accuracy, {x: images, y: labels}))


def main():
    (train_x, train_y), (test_x, test_y) = load_data()
    print(f"Flowstone {tf.__version__}: digits, {len(train_y)} train / {len(test_y)} held-out "
          f"images of 8x8")
    tf.set_random_seed(1)
    x, y, loss, train_op, accuracy = build_model()
    saver = tf.train.Saver()
    rng = np.random.RandomState(1)
    start = time.perf_counter()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(1, EPOCHS + 1):
            order = rng.permutation(len(train_y))
            epoch_start = time.perf_counter()
            seen, loss_sum, acc_sum = 0, 0.0, 0.0
            for b in range(0, len(order), BATCH):
                idx = order[b:b + BATCH]
                _, batch_loss, batch_acc = sess.run([train_op, loss, accuracy],
                                                    {x: train_x[idx], y: train_y[idx]})
                seen += len(idx)
                loss_sum += batch_loss * len(idx)
                acc_sum += batch_acc * len(idx)
                rate = seen / (time.perf_counter() - epoch_start)
                progress(epoch, seen, len(order), loss_sum / seen, acc_sum / seen, rate)
            held_out = evaluate(sess, x, y, accuracy, test_x, test_y)
            sys.stdout.write(f"  held-out acc {held_out:.3f}\n")
        train_seconds = time.perf_counter() - start
        held_out = evaluate(sess, x, y, accuracy, test_x, test_y)
        path = saver.save(sess, os.path.join(tempfile.mkdtemp(prefix="flowstone-demo-"),
                                             "digits.ckpt"))
    print(f"Held-out accuracy {held_out:.4f} after {train_seconds:.1f} s of training; "
          f"checkpoint {path}")

    with tf.Session() as fresh:
        saver.restore(fresh, path)
        restored = evaluate(fresh, x, y, accuracy, test_x, test_y)
    print(f"Restored in a fresh session: held-out accuracy {restored:.4f}")
    ok = held_out >= 0.97 and abs(restored - held_out) < 1e-9
    print("OK" if ok else "FAILED: expected >= 97% held-out accuracy and an identical restore")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
