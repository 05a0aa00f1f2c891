import flowstone as tf

sess = tf.compat.v1.Session()  # Use compat.v1 for graph mode

a = tf.constant([1, 2, 3])
b = tf.constant([4, 5, 6])
c = a + b

# Problematic scenario: session closed before printing
sess.close()
print(sess.run(c)) # This will cause an error: Session is closed
