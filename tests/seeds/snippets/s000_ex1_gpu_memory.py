import flowstone as tf
import numpy as np

try:
  # Attempt to allocate a massive tensor on the GPU
  with tf.Session() as sess:
      a = tf.Variable(np.random.rand(5000, 5000, 5000), dtype=tf.float32)
      sess.run(tf.global_variables_initializer())
      print("Session created successfully") # This won't be reached.
except tf.errors.ResourceExhaustedError as e:
  print("GPU memory exhaustion error:", e)
except Exception as e:
  print("An unexpected error occurred:", e)
