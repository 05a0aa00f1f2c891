import flowstone as tf

# Check if a GPU is available
if tf.test.is_gpu_available():
    device = '/gpu:0'
    print("GPU Available")
else:
    device = '/cpu:0'
    print("No GPU Available")


# Force the operation to run on a GPU (incorrectly if no GPU)
with tf.device(device):
  matrix1 = tf.random_normal(shape=[1000, 1000])
  matrix2 = tf.random_normal(shape=[1000, 1000])
  result = tf.matmul(matrix1, matrix2)


# Create a session
sess = tf.Session()

try:
  # Run the operation
    output = sess.run(result)
except tf.errors.InternalError as e:
    print(f"Error during sess.run(): {e}")
finally:
    sess.close()
