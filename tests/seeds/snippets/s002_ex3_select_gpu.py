import flowstone as tf

gpus = tf.config.list_physical_devices('GPU')
if gpus:
    try:
        # Select a specific GPU (e.g., the second GPU, index 1). Adapt index as needed.
        tf.config.set_visible_devices(gpus[1], 'GPU')
        logical_gpus = tf.config.list_logical_devices('GPU')
        print(len(gpus), "Physical GPUs,", len(logical_gpus), "Logical GPUs")
        # ... your TensorFlow code ...

    except RuntimeError as e:
        # Visible devices must be set at the beginning of program execution before
        # other TensorFlow operations are performed
        print(f"Error setting visible devices: {e}")

else:
    print("No GPUs found. Running on CPU.")
