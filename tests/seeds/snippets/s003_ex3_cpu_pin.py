import flowstone as tf

config = tf.ConfigProto()
config.gpu_options.allow_growth = True
config.log_device_placement = True

with tf.Session(config=config) as sess:
  with tf.device('/cpu:0'): # Explicitly placing on CPU
    a = tf.constant([1.0, 2.0, 3.0], dtype=tf.float32)
    b = tf.constant([4.0, 5.0, 6.0], dtype=tf.float32)
    c = a + b
  result = sess.run(c)
  print(f"Result: {result}")
