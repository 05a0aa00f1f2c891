"""tf.test: what the build and the machine offer."""

from flowstone import _C, tf_config

__all__ = ["is_gpu_available", "is_built_with_cuda", "is_built_with_gpu_support",
           "gpu_device_name"]


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """True when a GPU can be used (and has at least the given (major, minor) capability)."""
    gpus = _C.visible_gpus()
    if min_cuda_compute_capability is not None:
        wanted = tuple(min_cuda_compute_capability)
        gpus = [g for g in gpus
                if tuple(int(p) for p in g["compute_capability"].split(".")) >= wanted]
    return bool(gpus)


def is_built_with_cuda():
    """True when the CUDA backend plugin was built (it may still find no GPU at run time)."""
    return bool(_C.build_info()["built_with_cuda"])


is_built_with_gpu_support = is_built_with_cuda


def gpu_device_name():
    gpus = tf_config.list_logical_devices("GPU")
    return gpus[0].name.replace("/job:localhost/replica:0/task:0", "") if gpus else ""
