"""tf.keras.datasets.cifar10: 32x32 colour images in 10 classes, from the Python batches."""

import os
import pickle
import tarfile

import numpy as np

from flowstone.keras import backend as K
from flowstone.keras.datasets._files import datasets_dir, get_file
from flowstone.util.tf_export import tf_export

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
DIRNAME = "cifar-10-batches-py"


def _load_batch(path):
    with open(path, "rb") as f:
        batch = pickle.load(f, encoding="bytes")
    data = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
    return data, np.asarray(batch[b"labels"], dtype=np.uint8)


@tf_export("keras.datasets.cifar10.load_data")
def load_data():
    folder = os.path.join(datasets_dir(), DIRNAME)
    if not os.path.isdir(folder):
        archive = get_file(DIRNAME + ".tar.gz", ORIGIN)
        with tarfile.open(archive) as tar:
            tar.extractall(datasets_dir(), filter="data")
    parts = [_load_batch(os.path.join(folder, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts]).reshape(-1, 1)
    x_test, y_test = _load_batch(os.path.join(folder, "test_batch"))
    y_test = y_test.reshape(-1, 1)
    if K.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
