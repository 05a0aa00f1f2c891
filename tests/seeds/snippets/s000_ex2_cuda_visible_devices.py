import flowstone as tf
import os

try:
    # Force CPU to illustrate problem due to driver/lib issue on CUDA enabled GPU.
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    config = tf.ConfigProto()
    with tf.Session(config=config) as sess:
        a = tf.constant(1.0)
        print(sess.run(a))
    print("Session created successfully (CPU ONLY)") #This will execute in this case.

except tf.errors.NotFoundError as e:
    print("CUDA/cuDNN version error:", e)
except Exception as e:
    print("Unexpected Error:", e)
