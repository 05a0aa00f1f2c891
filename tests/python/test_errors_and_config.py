"""tf.errors classes, ConfigProto/GPUOptions, tf.config, tf.test and the runtime's memory."""

import numpy as np
import pytest

import flowstone as tf


def test_sixteen_error_classes_with_codes():
    names = ["CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
             "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
             "ResourceExhaustedError", "FailedPreconditionError", "AbortedError",
             "OutOfRangeError", "UnimplementedError", "InternalError", "UnavailableError",
             "DataLossError", "UnauthenticatedError"]
    for code, name in enumerate(names, start=1):
        cls = getattr(tf.errors, name)
        assert issubclass(cls, tf.errors.OpError)
        err = cls(None, None, "boom")
        assert err.error_code == code and err.message == "boom" and err.op is None
        assert tf.errors.exception_type_from_error_code(code) is cls
        assert tf.errors.error_code_from_exception_type(cls) == code


def test_config_proto_fields_users_set():
    config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                            device_count={"GPU": 0, "CPU": 1},
                            intra_op_parallelism_threads=2, inter_op_parallelism_threads=2,
                            gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.5))
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = "0"
    config.gpu_options.experimental.virtual_devices.append(
        tf.GPUOptions.Experimental.VirtualDevices(memory_limit_mb=[1024]))
    config.graph_options.place_pruned_graph = True
    config.operation_timeout_in_ms = 1000
    assert config.gpu_options.per_process_gpu_memory_fraction == 0.5
    assert config.device_count["GPU"] == 0
    with pytest.raises(AttributeError, match='ConfigProto has no "allow_growth" field'):
        config.allow_growth = True
    copy = tf.ConfigProto()
    copy.CopyFrom(config)
    assert copy == config
    options = tf.RunOptions(report_tensor_allocations_upon_oom=True,
                            trace_level=tf.RunOptions.FULL_TRACE)
    tf.constant(1.0)
    with tf.Session(config=config) as sess:
        assert sess.run(tf.constant(2.0), options=options, run_metadata=tf.RunMetadata()) == 2.0


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                    reason="this machine has a GPU (tests/gpu covers tf.config with one)")
def test_tf_config_and_tf_test_without_gpus():
    assert tf.config.list_physical_devices("GPU") == []
    cpus = tf.config.list_physical_devices("CPU")
    assert cpus[0].device_type == "CPU"
    assert tf.test.is_gpu_available() is False
    assert tf.test.gpu_device_name() == ""
    assert tf.config.list_logical_devices("CPU")[0].name == \
        "/job:localhost/replica:0/task:0/device:CPU:0"
    info = tf.config.experimental.get_memory_info("CPU:0")
    assert set(info) == {"current", "peak"}
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpus[0], True)


def test_compat_v1_is_the_same_namespace():
    assert tf.compat.v1.Session is tf.Session
    assert tf.compat.v1.placeholder is tf.placeholder
    assert isinstance(tf.__version__, str)


def test_steady_state_runs_do_not_call_the_system_allocator():
    x = tf.placeholder(tf.float32, [None])
    y = tf.identity(x)
    v = tf.Variable(np.zeros(1000, np.float32))
    update = v.assign_add(np.ones(1000, np.float32), read_value=False)
    with tf.Session() as sess:
        sess.run(v.initializer)
        feed = np.ones(50000, np.float32)
        for _ in range(5):
            sess.run([y, update], {x: feed})
        before = tf._C.cpu_memory_info()["system_allocations"]
        for _ in range(50):
            sess.run([y, update], {x: feed})
        after = tf._C.cpu_memory_info()["system_allocations"]
        assert after == before
        assert sess.run(v)[0] == 55.0
