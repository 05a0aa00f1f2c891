"""A canned DNNClassifier on scikit-learn's bundled 8x8 digits, written as a TensorFlow 1 user
would (only the import differs): numpy_input_fn, feature columns, train, evaluate, predict.

Run it twice with the same --model_dir: the second run resumes from the checkpoint the first
one left, and its global step continues.

    python examples/estimator_digits.py --model_dir /tmp/digits --steps 500
"""

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf


def load_data(seed=0):
    digits = load_digits()
    pixels = (digits.data / 16.0).astype(np.float32)  # [n, 64] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    return (pixels[train], labels[train]), (pixels[test], labels[test])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default=os.path.join(tempfile.gettempdir(),
                                                            "flowstone_estimator_digits"))
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    tf.logging.set_verbosity(tf.logging.WARN)

    (x_train, y_train), (x_test, y_test) = load_data()
    pixels = tf.feature_column.numeric_column("pixels", shape=(64,))
    classifier = tf.estimator.DNNClassifier(
        hidden_units=[128, 64], feature_columns=[pixels], n_classes=10,
        optimizer=tf.train.AdamOptimizer(learning_rate=0.002), dropout=0.1,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=0, save_checkpoints_steps=100))

    latest = classifier.latest_checkpoint()
    if latest is not None:
        print(f"resuming from global step {classifier.get_variable_value('global_step')}")
    train_input = tf.estimator.inputs.numpy_input_fn(
        {"pixels": x_train}, y_train, batch_size=32, num_epochs=None, shuffle=True)
    classifier.train(train_input, steps=args.steps)

    test_input = tf.estimator.inputs.numpy_input_fn(
        {"pixels": x_test}, y_test, batch_size=len(y_test), num_epochs=1, shuffle=False)
    metrics = classifier.evaluate(test_input)
    print(f"global step {metrics['global_step']}: test accuracy {metrics['accuracy']:.4f}, "
          f"average loss {metrics['average_loss']:.4f}")

    predict_input = tf.estimator.inputs.numpy_input_fn({"pixels": x_test[:8]}, shuffle=False)
    predicted = [int(p["class_ids"][0]) for p in classifier.predict(predict_input)]
    print(f"first predictions {predicted}, labels {y_test[:8].tolist()}")


if __name__ == "__main__":
    main()
