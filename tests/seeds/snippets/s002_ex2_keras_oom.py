import flowstone as tf

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
except Exception as e:
    print(f"An error occurred: {e}")
