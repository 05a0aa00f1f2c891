"""A Keras MNIST-style classifier on scikit-learn's bundled 8x8 digits, written exactly as a
tf.keras user would (only the import differs): a small CNN trained with fit (with the live
progress bar and a validation split), evaluated on held-out digits, saved to HDF5, reloaded, and
checked to predict the same.

    python examples/keras_mnist.py [--epochs 15] [--logdir runs/digits]

With --logdir, a TensorBoard callback logs the graph, the epoch metrics and weight histograms
there (`tensorboard --logdir runs` shows them).
"""

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf


def load_data(seed=0):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # [n, 8, 8, 1] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    return (images[train], labels[train]), (images[test], labels[test])


def build_model():
    model = tf.keras.models.Sequential([
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--logdir", help="write TensorBoard event files here")
    args = parser.parse_args()
    tf.set_random_seed(0)
    (x_train, y_train), (x_test, y_test) = load_data()
    model = build_model()
    model.summary()
    callbacks = []
    if args.logdir:
        callbacks.append(tf.keras.callbacks.TensorBoard(args.logdir, histogram_freq=1))
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, validation_split=0.1,
              callbacks=callbacks)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test loss {loss:.4f}, test accuracy {accuracy:.4f}")

    predictions = model.predict(x_test, verbose=0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "digits.h5")
        model.save(path)
        restored = tf.keras.models.load_model(path)
        same = np.allclose(restored.predict(x_test, verbose=0), predictions, atol=1e-6)
    print(f"reloaded from HDF5: predictions {'identical' if same else 'DIFFER'}")
    return 0 if accuracy >= 0.97 and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
