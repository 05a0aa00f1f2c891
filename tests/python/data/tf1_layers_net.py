"""A small TF1 network built with contrib-style layers, run the same way under real TensorFlow
(tf_slim, the oracle) and under Flowstone (tf.contrib.layers, or tf_slim through the import
hook); it prints its variables, outputs and training losses as JSON for the tests to compare.

    python tf1_layers_net.py slim|contrib [save|restore CHECKPOINT]

With `save`, the trained model is saved to CHECKPOINT; with `restore`, a fresh session restores
it (a checkpoint the other runtime wrote) and reports its logits.
"""

import json
import sys
import zlib

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

if sys.argv[1] == "slim":
    try:
        # TensorFlow 2.21 looks its TF1 layers up as tf_keras.legacy_tf_layers, which tf_keras
        # 2.21 ships as tf_keras.src.legacy_tf_layers (only real TensorFlow gets here).
        import tf_keras.src.legacy_tf_layers as legacy_tf_layers
        sys.modules.setdefault("tf_keras.legacy_tf_layers", legacy_tf_layers)
    except ImportError:
        pass
    import tf_slim as slim
    layers, arg_scope, losses = slim, slim.arg_scope, slim.losses
    create_train_op = slim.learning.create_train_op
else:
    layers, arg_scope, losses = tf.contrib.layers, tf.contrib.framework.arg_scope, tf.losses

    def create_train_op(loss, optimizer):
        return tf.contrib.layers.optimize_loss(loss, tf.train.get_or_create_global_step(),
                                               None, optimizer)


def values_for(variable):
    """Deterministic values from the variable's name, so both runtimes start equal."""
    rng = np.random.RandomState(zlib.crc32(variable.op.name.encode()))
    shape = variable.shape.as_list()
    if "moving_variance" in variable.op.name:
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return rng.uniform(-0.3, 0.3, shape).astype(np.float32)


images = tf.placeholder(tf.float32, [4, 8, 8, 3])
labels = tf.placeholder(tf.int64, [4])
with arg_scope([layers.conv2d, layers.fully_connected],
               weights_regularizer=layers.l2_regularizer(0.01)):
    net = layers.conv2d(images, 6, [3, 3])
    net = layers.max_pool2d(net, [2, 2])
    net = layers.conv2d(net, 5, [3, 3], stride=2, normalizer_fn=layers.batch_norm,
                        normalizer_params={"is_training": True, "scale": True, "decay": 0.9})
    net = layers.avg_pool2d(net, [2, 2], stride=1, padding="SAME")
    net = layers.separable_conv2d(net, 4, [2, 2], depth_multiplier=2)
    net = layers.separable_conv2d(net, None, [3, 3], rate=2, scope="depthwise")
    net = layers.flatten(net)
    net = layers.fully_connected(net, 7, scope="hidden")
    logits = layers.fully_connected(net, 3, activation_fn=None, scope="logits")
xent = tf.losses.sparse_softmax_cross_entropy(labels, logits)
total = tf.losses.get_total_loss()
train_op = create_train_op(total, tf.train.GradientDescentOptimizer(0.1))

rng = np.random.RandomState(0)
feed = {images: rng.uniform(-1, 1, [4, 8, 8, 3]).astype(np.float32), labels: [0, 1, 2, 1]}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    model = [v for v in tf.global_variables() if "global_step" not in v.op.name
             and "learning_rate" not in v.op.name]
    for v in model:
        v.load(values_for(v), sess)
    first_logits = sess.run(logits, feed)
    steps = [float(sess.run(train_op, feed)) for _ in range(3)]
    result = {
        "variables": {v.op.name: v.shape.as_list() for v in model},
        "model_variables": sorted(v.op.name for v in tf.model_variables()),
        "trainable": sorted(v.op.name for v in tf.trainable_variables()),
        "regularization_losses": len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)),
        "logits": first_logits.tolist(),
        "losses": steps,
        "moving_mean": sess.run(
            [v for v in model if v.op.name.endswith("moving_mean")][0]).tolist(),
        "moving_variance": sess.run(
            [v for v in model if v.op.name.endswith("moving_variance")][0]).tolist(),
        "trained_logits": sess.run(logits, feed).tolist(),
    }
    if sys.argv[2:3] == ["save"]:
        tf.train.Saver(model).save(sess, sys.argv[3])
if sys.argv[2:3] == ["restore"]:
    with tf.Session() as sess:
        tf.train.Saver(model).restore(sess, sys.argv[3])
        result["restored_logits"] = sess.run(logits, feed).tolist()
print("RESULT " + json.dumps(result))
