"""tf.test: what the build and the machine offer, and the helpers of TensorFlow's own tests
(TestCase, main, the gradient checker), imported when first used so that `import flowstone`
does not load unittest."""

import atexit
import functools
import importlib
import logging
import shutil
import tempfile
import time

from flowstone import _C, tf_config

__all__ = ["is_gpu_available", "is_built_with_cuda", "is_built_with_gpu_support",
           "gpu_device_name", "is_built_with_rocm", "is_built_with_xla", "get_temp_dir", "main",
           "assert_equal_graph_def", "disable_with_predicate", "with_eager_op_as_function",
           "benchmark_config", "Benchmark", "TestCase", "compute_gradient",
           "compute_gradient_error", "mock", "StubOutForTesting", "is_cpu_target_available",
           "test_src_dir_path", "create_local_cluster"]

# Names defined in other modules, loaded on first access (PEP 562).
_LAZY = {
    "TestCase": ("flowstone.testing.test_case", "TestCase"),
    "compute_gradient": ("flowstone.testing.gradient_checker", "compute_gradient"),
    "compute_gradient_error": ("flowstone.testing.gradient_checker", "compute_gradient_error"),
    "mock": ("unittest.mock", None),
    "StubOutForTesting": ("flowstone.testing.stubout", "StubOutForTesting"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'flowstone.test' has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


_temp_dir = None


def get_temp_dir():
    """A temporary directory for this process's tests, removed when the process exits."""
    global _temp_dir
    if _temp_dir is None:
        _temp_dir = tempfile.mkdtemp(prefix="flowstone_tests_")
        atexit.register(shutil.rmtree, _temp_dir, True)
    return _temp_dir


def main(argv=None):
    """Runs the tests of the __main__ module (unittest's runner)."""
    import unittest
    unittest.main(module="__main__", argv=argv)


def is_cpu_target_available(target):
    """Whether this build runs code for the CPU `target` ("x86" here: Flowstone compiles for the
    machine it is built on, and has no ahead-of-time targets)."""
    import platform
    machine = platform.machine().lower()
    return target.lower() in ("x86", "x86_64", "amd64") and machine in ("x86_64", "amd64") \
        or target.lower() in ("aarch64", "arm64") and machine in ("aarch64", "arm64")


def test_src_dir_path(relative_path):
    """`relative_path` below the directory holding the flowstone package, as TensorFlow's
    resolves "tensorflow/..." paths next to its installed package ("flowstone/include/..."
    names a file the package ships)."""
    import os
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package_parent, relative_path)


def create_local_cluster(num_workers, num_ps, protocol="grpc", worker_config=None,
                         ps_config=None):
    """TensorFlow's in-process gRPC cluster: Flowstone's distributed training is
    flowstone.horovod over MPI, so this raises UnimplementedError as tf.train.Server does."""
    from flowstone import errors
    raise errors.UnimplementedError(
        None, None, "tf.test.create_local_cluster needs TensorFlow's gRPC servers, which "
        "Flowstone does not have; test data-parallel code with flowstone.horovod under "
        "`mpirun -np N` (see docs/architecture/distributed.md).")


def is_built_with_rocm():
    return False


def is_built_with_xla():
    return False


def benchmark_config():
    """A ConfigProto for benchmarks (TensorFlow turns its graph rewrites off in it)."""
    from flowstone.protos import ConfigProto
    return ConfigProto()


def disable_with_predicate(pred, skip_message):
    """A decorator that skips a test method when pred() is true."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)
        return wrapper
    return decorator


def with_eager_op_as_function(cls=None, only_as_function=False):
    """Accepted for TensorFlow's tests: Flowstone runs eager ops one way, so it returns the
    class unchanged."""
    del only_as_function
    return cls if cls is not None else (lambda c: c)


def _node_key(node):
    regular = [i for i in node.input if not i.startswith("^")]
    control = sorted(i for i in node.input if i.startswith("^"))
    attrs = {k: node.attr[k].SerializeToString(deterministic=True) for k in node.attr}
    return node.op, regular, control, node.device, attrs


def assert_equal_graph_def(actual, expected, checkpoint_v2=False,
                           hash_table_shared_name=False):
    """Raises AssertionError unless the GraphDefs hold the same nodes (by name; order, and the
    order of control inputs, do not matter)."""
    del checkpoint_v2, hash_table_shared_name
    for name, value in (("actual", actual), ("expected", expected)):
        if not hasattr(value, "node"):
            raise TypeError(f"Expected tf.GraphDef for {name}, got {type(value).__name__}")
    actual_nodes = {n.name: n for n in actual.node}
    expected_nodes = {n.name: n for n in expected.node}
    for name in expected_nodes:
        if name not in actual_nodes:
            raise AssertionError(f"Did not find expected node '{name}' in actual graph")
    for name in actual_nodes:
        if name not in expected_nodes:
            raise AssertionError(f"Found unexpected node '{name}' in actual graph")
    for name, node in expected_nodes.items():
        got, want = _node_key(actual_nodes[name]), _node_key(node)
        for label, g, w in zip(("op", "inputs", "control inputs", "device", "attrs"), got, want):
            if g != w:
                raise AssertionError(f"Node named '{name}' has different {label}: actual "
                                     f"{g!r}, expected {w!r}")


class Benchmark:
    """tf.test.Benchmark: report_benchmark logs a result; run_op_benchmark times a fetch."""

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None,
                         extras=None, name=None, metrics=None):
        logging.getLogger("flowstone.test").info(
            "Benchmark [%s] iters: %s, wall_time: %s, cpu_time: %s, throughput: %s, "
            "extras: %s, metrics: %s", name or type(self).__name__, iters, wall_time, cpu_time,
            throughput, extras, metrics)

    def run_op_benchmark(self, sess, op_or_tensor, feed_dict=None, burn_iters=2, min_iters=10,
                         store_trace=False, store_memory_usage=True, name=None, extras=None,
                         mbs=0):
        """Runs the fetch burn_iters times, then min_iters timed times; reports and returns
        {"iters", "wall_time" (median seconds per run), "extras", "name"}."""
        del store_trace, store_memory_usage
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        times = []
        for _ in range(min_iters):
            start = time.perf_counter()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            times.append(time.perf_counter() - start)
        wall_time = sorted(times)[len(times) // 2] if times else 0.0
        extras = dict(extras or {})
        if mbs and wall_time:
            extras["throughput_mbs"] = mbs / wall_time
        self.report_benchmark(iters=min_iters, wall_time=wall_time, extras=extras, name=name)
        return {"iters": min_iters, "wall_time": wall_time, "extras": extras, "name": name}

    def evaluate(self, tensors):
        from flowstone.client import session as _session
        sess = _session.get_default_session()
        if sess is None:
            raise ValueError("Benchmark.evaluate needs a default session")
        return sess.run(tensors)


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
