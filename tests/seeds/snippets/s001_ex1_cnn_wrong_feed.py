import flowstone as tf
import numpy as np

# Define placeholders for input data
X = tf.placeholder(tf.float32, shape=[None, 224, 224, 3]) # Placeholder with correct shape
Y = tf.placeholder(tf.int32, shape=[None])

# Build a simple CNN (Illustrative, details not important for the error)
conv1 = tf.layers.conv2d(inputs=X, filters=32, kernel_size=3, padding="same", activation=tf.nn.relu)
flat = tf.layers.flatten(conv1)
logits = tf.layers.dense(inputs=flat, units=10)

# Define loss and optimizer
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=Y, logits=logits))
optimizer = tf.train.AdamOptimizer(learning_rate=0.001).minimize(loss)

# Create a session
sess = tf.Session()
sess.run(tf.global_variables_initializer())

# Generate dummy data, but with incorrect shape
batch_size = 32
images = np.random.rand(batch_size, 224, 224).astype(np.float32)  # Incorrect shape!
labels = np.random.randint(0, 10, size=(batch_size))

try:
    # Attempt training with incorrect input shape
    _, current_loss = sess.run([optimizer, loss], feed_dict={X: images, Y: labels})
except tf.errors.InvalidArgumentError as e:
    print(f"Error during sess.run(): {e}")
finally:
    sess.close()
