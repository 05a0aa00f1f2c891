import flowstone as tf

# Define a simple variable
W = tf.Variable(tf.random_normal(shape=[10, 1]), name="Weights") # Variable, but not yet initialized

# Define an operation
output = tf.matmul(tf.random_normal(shape=[1,10]), W)

# Create a session
sess = tf.Session()

try:
    # Attempt to execute the operation before initializing variables
    result = sess.run(output)
except tf.errors.FailedPreconditionError as e:
    print(f"Error during sess.run(): {e}")
finally:
    sess.close()
