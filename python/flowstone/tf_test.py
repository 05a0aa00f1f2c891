"""tf.test: what the build and the machine offer."""

from flowstone import tf_config

__all__ = ["is_gpu_available", "is_built_with_cuda", "is_built_with_gpu_support",
           "gpu_device_name"]


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    return bool(tf_config.list_physical_devices("GPU"))


def is_built_with_cuda():
    return False


is_built_with_gpu_support = is_built_with_cuda


def gpu_device_name():
    gpus = tf_config.list_logical_devices("GPU")
    return gpus[0].name.replace("/job:localhost/replica:0/task:0", "") if gpus else ""
