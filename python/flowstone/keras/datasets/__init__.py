"""tf.keras.datasets: the Keras data sets, read from ~/.keras/datasets."""

from flowstone.keras.datasets import cifar10, fashion_mnist, imdb, mnist  # noqa: F401
