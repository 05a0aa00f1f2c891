"""The classic TF1 tutorial CNN of issue 15, as a plain training script to profile:

    .venv/bin/python -m flowstone profile bench/tutorial_cnn.py [--steps 30]

3x3 convolutions with 32/64/128 filters on 28x28x1 inputs (SAME padding, ReLU, 2x2 max pooling
and dropout after each), a 2048-625-10 head, softmax cross entropy, RMSProp(0.001, 0.9), batch
128, random MNIST-shaped data. It runs with Flowstone (`import flowstone as tf`).
"""

import argparse

import numpy as np

import flowstone as tf

BATCH = 128


def build():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
    y = tf.placeholder(tf.float32, [None, 10], name="y")
    keep_conv = tf.placeholder(tf.float32, [], name="keep_conv")
    keep_hidden = tf.placeholder(tf.float32, [], name="keep_hidden")

    def weights(shape, name):
        return tf.Variable(tf.random_normal(shape, stddev=0.01), name=name)

    def conv_block(h, filters_in, filters_out, name):
        with tf.name_scope(name):
            w = weights([3, 3, filters_in, filters_out], "w")
            h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME"))
            h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
            return tf.nn.dropout(h, keep_conv)

    h = conv_block(x, 1, 32, "conv1")      # 14x14x32
    h = conv_block(h, 32, 64, "conv2")     # 7x7x64
    h = conv_block(h, 64, 128, "conv3")    # 4x4x128
    h = tf.reshape(h, [-1, 2048])
    with tf.name_scope("dense"):
        h = tf.nn.dropout(tf.nn.relu(tf.matmul(h, weights([2048, 625], "w"))), keep_hidden)
    with tf.name_scope("logits"):
        logits = tf.matmul(h, weights([625, 10], "w"))
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=y))
    train = tf.train.RMSPropOptimizer(0.001, 0.9).minimize(cost)
    return x, y, keep_conv, keep_hidden, train


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    x, y, keep_conv, keep_hidden, train = build()
    rng = np.random.RandomState(0)
    images = rng.rand(BATCH, 28, 28, 1).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, BATCH)]
    feed = {x: images, y: labels, keep_conv: 0.8, keep_hidden: 0.5}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.steps):
            sess.run(train, feed)


if __name__ == "__main__":
    main()
