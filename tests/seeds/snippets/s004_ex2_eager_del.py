import flowstone as tf

tf.compat.v1.enable_eager_execution() # Enable eager execution

a = tf.constant([1, 2, 3])
b = tf.constant([4, 5, 6])
c = a + b

# Potentially problematic scenario: garbage collection
del a, b  # Removing references to a and b
print(c)  # Might work, might not, depending on garbage collection timing
