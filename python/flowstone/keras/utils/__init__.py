"""tf.keras.utils."""
