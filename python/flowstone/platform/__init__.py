"""TF1's process utilities: tf.logging, tf.flags / tf.app.flags, tf.app.run and tf.gfile.

Every module here is imported by flowstone/__init__.py and places its names with tf_export.
"""
