# The third seed's Keras example with x_train and y_train defined (the article leaves them out):
# it trains. KERAS_SEED_MEMORY_LIMIT_MB caps the CPU's memory to show the OOM path.
import os

import numpy as np

import flowstone as tf

limit = os.environ.get("KERAS_SEED_MEMORY_LIMIT_MB")
if limit:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(memory_limit=int(limit))])
rng = np.random.RandomState(0)
x_train = rng.rand(512, 784).astype("float32")
y_train = rng.rand(512, 1024).astype("float32")

try:
    # Your TensorFlow code here, e.g., model training or inference.
    model = tf.keras.models.Sequential([tf.keras.layers.Dense(1024, activation='relu', input_shape=(784,))])
    model.compile(optimizer='adam', loss='mse')
    # ...
    model.fit(x_train, y_train, batch_size=128, epochs=10) #Adjust batch size if you get OOM error

except tf.errors.ResourceExhaustedError as e:
    print(f"CUDA out of memory error: {e}")
    print("Try reducing batch size or model complexity.")
    # Consider strategies like model parallelism or gradient accumulation.
    small = tf.keras.models.Sequential([tf.keras.layers.Dense(8, activation='relu', input_shape=(784,)),
                                        tf.keras.layers.Dense(1024)])
    small.compile(optimizer='adam', loss='mse')
    history = small.fit(x_train, y_train, batch_size=32, epochs=2, verbose=2)
    print("smaller model trained, final loss", history.history["loss"][-1])
except Exception as e:
    print(f"An error occurred: {e}")
