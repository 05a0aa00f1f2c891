"""tf.keras.preprocessing: helpers that prepare numpy data for Keras models."""

from flowstone.keras.preprocessing import sequence, text  # noqa: F401
