import flowstone as tf

tf.compat.v1.enable_eager_execution()

with tf.GradientTape() as tape: #Illustrative example using a context manager
    a = tf.constant([1.0, 2.0])
    b = tf.constant([3.0, 4.0])
    c = a*b

print(c)
gradients = tape.gradient(c, [a, b])
print(gradients)
