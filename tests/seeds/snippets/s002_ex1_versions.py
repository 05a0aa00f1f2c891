import flowstone as tf
import os

print(f"TensorFlow version: {tf.__version__}")

#Check if CUDA is enabled. This is not a direct CUDA version check, but gives insight if CUDA has been configured properly for TF.
print(f"CUDA enabled: {tf.config.list_physical_devices('GPU')}")

cuda_path = os.environ.get('CUDA_PATH')
if cuda_path:
    print(f"CUDA path detected: {cuda_path}")  # Explore this path for version information, usually a file or directory named version or similar.
else:
    print("CUDA path not found in environment variables.")

# cuDNN version check requires querying the CUDA libraries directly (system-dependent).
#  This might involve inspecting the cuDNN library file itself or using external tools if the system allows.
# This is platform-dependent and beyond direct TensorFlow's scope.
print("Note: cuDNN version check requires external tools and depends on your system's CUDA installation.")
