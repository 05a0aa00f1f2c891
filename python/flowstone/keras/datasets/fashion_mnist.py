"""tf.keras.datasets.fashion_mnist: 28x28 grey clothing images in Keras's IDX files."""

import gzip
import os

import numpy as np

from flowstone.keras.datasets._files import get_file
from flowstone.util.tf_export import tf_export

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]


@tf_export("keras.datasets.fashion_mnist.load_data")
def load_data():
    paths = [get_file(os.path.join("fashion-mnist", name), BASE + name) for name in FILES]
    with gzip.open(paths[0], "rb") as f:
        y_train = np.frombuffer(f.read(), np.uint8, offset=8)
    with gzip.open(paths[1], "rb") as f:
        x_train = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y_train), 28, 28)
    with gzip.open(paths[2], "rb") as f:
        y_test = np.frombuffer(f.read(), np.uint8, offset=8)
    with gzip.open(paths[3], "rb") as f:
        x_test = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)
