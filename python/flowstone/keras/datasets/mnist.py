"""tf.keras.datasets.mnist: 28x28 grey digits, 60,000 for training and 10,000 for testing."""

import numpy as np

from flowstone.keras.datasets._files import get_file
from flowstone.util.tf_export import tf_export

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"


@tf_export("keras.datasets.mnist.load_data")
def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) as uint8 arrays."""
    with np.load(get_file(path, ORIGIN), allow_pickle=True) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
