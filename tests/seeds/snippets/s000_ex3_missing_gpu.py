import flowstone as tf

try:
    # Attempt to place an op on a nonexistent GPU device
    with tf.device("/gpu:2"):
        a = tf.constant(1.0)

    with tf.Session() as sess:
        print(sess.run(a))
    print("Session created successfully") #This won't be reached
except tf.errors.InvalidArgumentError as e:
     print("Device placement error:", e)
except Exception as e:
    print("An unexpected error occurred:", e)
