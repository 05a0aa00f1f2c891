"""tf.config: devices, logical device configuration, memory and threading settings."""

import collections
import types

from flowstone import _C

__all__ = [
    "PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "list_physical_devices",
    "list_logical_devices", "get_visible_devices", "set_visible_devices",
    "get_logical_device_configuration", "set_logical_device_configuration", "experimental",
    "threading", "optimizer", "set_soft_device_placement", "get_soft_device_placement",
]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(
        collections.namedtuple("LogicalDeviceConfiguration",
                               ["memory_limit", "experimental_priority",
                                "experimental_device_ordinal"])):
    """A logical device carved out of a physical one; memory_limit is in MB."""

    def __new__(cls, memory_limit=None, experimental_priority=None,
                experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority,
                               experimental_device_ordinal)


VirtualDeviceConfiguration = LogicalDeviceConfiguration

_state = {
    "initialized": False,
    "visible": None,          # None = all physical devices
    "logical": {},            # physical device name -> [LogicalDeviceConfiguration]
    "memory_growth": {},
    "intra_op": 0,
    "inter_op": 0,
    "optimizer": {},          # tf.config.optimizer.set_experimental_options
    "jit": False,
}


def _mark_devices_initialized():
    _state["initialized"] = True


def _devices_initialized():
    """After a session was created or an op ran eagerly, devices are fixed (as in TF)."""
    return _state["initialized"] or _C.eager_initialized()


def _physical_devices():
    """The CPU and, after GPU discovery (which runs on the first call), each GPU found."""
    gpus = [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU")
            for i in range(len(_C.gpu_discovery()["devices"]))]
    return [PhysicalDevice("/physical_device:CPU:0", "CPU")] + gpus


def _gpu_index(device):
    return int(device.name.rsplit(":", 1)[1])


def list_physical_devices(device_type=None):
    devices = _physical_devices()
    if device_type is None:
        return devices
    return [d for d in devices if d.device_type == device_type.upper()]


def get_visible_devices(device_type=None):
    visible = _state["visible"] if _state["visible"] is not None else _physical_devices()
    if device_type is None:
        return list(visible)
    return [d for d in visible if d.device_type == device_type.upper()]


def _check_not_initialized(what):
    if _devices_initialized():
        raise RuntimeError(f"{what} cannot be modified after being initialized")


def set_visible_devices(devices, device_type=None):
    """Chooses the devices the runtime may use; only before devices are initialized."""
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    physical = _physical_devices()
    for d in devices:
        if d not in physical:
            raise ValueError(f"Unrecognized device: {d!r}")
    if device_type is not None:
        devices = [d for d in devices if d.device_type == device_type.upper()]
        kept = [d for d in get_visible_devices() if d.device_type != device_type.upper()]
        devices = kept + list(devices)
    if _devices_initialized() and list(devices) != get_visible_devices():
        raise RuntimeError("Visible devices cannot be modified after being initialized")
    if not any(d.device_type == "CPU" for d in devices):
        raise ValueError("The CPU must remain visible.")
    _state["visible"] = list(devices)
    _C.set_visible_gpus([_gpu_index(d) for d in devices if d.device_type == "GPU"])


def list_logical_devices(device_type=None):
    out = []
    next_index = collections.Counter()  # logical ids count across physical devices of a type
    for physical in get_visible_devices():
        configs = _state["logical"].get(physical.name) or [LogicalDeviceConfiguration()]
        for _ in configs:
            kind = physical.device_type
            out.append(LogicalDevice(f"/job:localhost/replica:0/task:0/device:"
                                     f"{kind}:{next_index[kind]}", kind))
            next_index[kind] += 1
    if device_type is None:
        return out
    return [d for d in out if d.device_type == device_type.upper()]


def get_logical_device_configuration(device):
    return _state["logical"].get(device.name)


def set_logical_device_configuration(device, logical_devices):
    """Splits a physical device into logical ones. For the CPU, each configuration is one
    logical CPU device, and `memory_limit` (MB) caps the process's CPU memory."""
    if _devices_initialized() and _state["logical"].get(device.name) != logical_devices:
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    logical_devices = list(logical_devices) if logical_devices is not None else None
    _state["logical"][device.name] = logical_devices
    if device.device_type == "CPU":
        configs = logical_devices or [LogicalDeviceConfiguration()]
        _C.set_num_logical_cpus(len(configs))
        limits = [c.memory_limit for c in configs if c.memory_limit is not None]
        _C.set_cpu_memory_limit(int(sum(limits) * (1 << 20)) if limits else 0)
    elif device.device_type == "GPU":
        configs = logical_devices or [LogicalDeviceConfiguration()]
        if len(configs) > 1:
            _state["logical"][device.name] = None
            raise ValueError("Flowstone gives each GPU one logical device; pass a list with one "
                             "LogicalDeviceConfiguration(memory_limit=MB).")
        limit = configs[0].memory_limit
        _C.set_gpu_memory_limit(_gpu_index(device), int(limit * (1 << 20)) if limit else 0)


def set_soft_device_placement(enabled):
    """Whether an eagerly run op whose tf.device has no kernel for it (or names no device)
    runs on another device (on: TensorFlow 2's default) or fails with InvalidArgumentError.
    Sessions follow their ConfigProto's allow_soft_placement instead."""
    _C.eager_set_soft_device_placement(bool(enabled))


def get_soft_device_placement():
    """Whether soft device placement is on for eager ops (set_soft_device_placement)."""
    return _C.eager_soft_device_placement()


def _get_memory_info(device):
    name = device if device.startswith("/") or ":" not in device else "/device:" + device
    try:
        spec = _C.merge_device_specs("", name)
    except _C.StatusError:
        raise ValueError(f"Invalid device name: {device!r}") from None
    if "/device:GPU:" in spec:
        index = spec.rsplit(":", 1)[1]
        try:
            info = _C.gpu_memory_info(0 if index == "*" else int(index))
        except _C.StatusError as e:
            raise ValueError(str(e)) from None
    elif "/device:CPU:" in spec:
        info = _C.cpu_memory_info()
    else:
        raise ValueError(f"No memory information for device {device!r}: name a CPU or GPU "
                         "device, e.g. 'GPU:0'.")
    return {"current": info["current"], "peak": info["peak"]}


def _set_memory_growth(device, enable):
    if device.device_type != "GPU":
        raise ValueError("Cannot set memory growth on non-GPU devices")
    _check_not_initialized("Memory growth")
    _state["memory_growth"][device.name] = bool(enable)
    _C.set_gpu_memory_growth(_gpu_index(device), bool(enable))


def _get_memory_growth(device):
    if device.device_type != "GPU":
        raise ValueError("Cannot get memory growth on non-GPU devices")
    return _state["memory_growth"].get(device.name, False)


def _namespace(name, **members):
    """A submodule of tf.config (TensorFlow's are modules, not plain objects)."""
    module = types.ModuleType(f"{__name__}.{name}")
    module.__dict__.update(members)
    return module


experimental = _namespace(
    "experimental",
    list_physical_devices=list_physical_devices,
    list_logical_devices=list_logical_devices,
    get_visible_devices=get_visible_devices,
    set_visible_devices=set_visible_devices,
    set_virtual_device_configuration=set_logical_device_configuration,
    get_virtual_device_configuration=get_logical_device_configuration,
    VirtualDeviceConfiguration=VirtualDeviceConfiguration,
    set_memory_growth=_set_memory_growth,
    get_memory_growth=_get_memory_growth,
    get_memory_info=_get_memory_info,
    get_memory_usage=lambda device: _get_memory_info(device)["current"],
)


def _set_threads(key, n):
    _check_not_initialized("Thread pools")
    _state[key] = int(n)


# TensorFlow's optimizer option names (tf.config.optimizer.set_experimental_options). Flowstone's
# plan optimizer acts on those of _REWRITE_TOGGLES (docs/architecture/graph-optimizer.md); the
# others are kept and reported, as TensorFlow keeps those its Grappler build lacks.
_OPTIMIZER_OPTIONS = (
    "layout_optimizer", "constant_folding", "shape_optimization", "remapping",
    "arithmetic_optimization", "dependency_optimization", "loop_optimization",
    "function_optimization", "debug_stripper", "disable_model_pruning",
    "scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
    "auto_mixed_precision", "auto_mixed_precision_onednn_bfloat16", "disable_meta_optimizer",
    "min_graph_nodes", "common_subgraph_elimination", "auto_parallel")
_REWRITE_TOGGLES = ("constant_folding", "arithmetic_optimization", "dependency_optimization",
                    "common_subgraph_elimination", "remapping")
_ON, _OFF = 1, 2  # RewriterConfig.Toggle


def _set_optimizer_options(options):
    unknown = sorted(set(options) - set(_OPTIMIZER_OPTIONS))
    if unknown:
        raise ValueError(f"Unknown optimizer options {unknown}; TensorFlow's are "
                         f"{sorted(_OPTIMIZER_OPTIONS)}")
    _state["optimizer"].update(options)


def _rewrite_overrides():
    """The session options (client/session.py's names) that set_experimental_options chose for
    the rewrites a ConfigProto leaves at DEFAULT: {"constant_folding": ON or OFF, ...}."""
    chosen = _state["optimizer"]
    overrides = {name: _ON if chosen[name] else _OFF for name in _REWRITE_TOGGLES
                 if name in chosen}
    if "disable_meta_optimizer" in chosen:
        overrides["disable_meta_optimizer"] = bool(chosen["disable_meta_optimizer"])
    return overrides


def _set_jit(enabled):
    """Flowstone has no XLA: the setting is kept and reported, and changes nothing."""
    if enabled not in (True, False, "autoclustering"):
        raise ValueError(f"tf.config.optimizer.set_jit takes True, False or "
                         f"'autoclustering', got {enabled!r}")
    _state["jit"] = enabled


optimizer = _namespace(
    "optimizer",
    set_experimental_options=_set_optimizer_options,
    get_experimental_options=lambda: dict(_state["optimizer"]),
    set_jit=_set_jit,
    get_jit=lambda: _state["jit"],
)


threading = _namespace(
    "threading",
    get_intra_op_parallelism_threads=lambda: _state["intra_op"],
    set_intra_op_parallelism_threads=lambda n: _set_threads("intra_op", n),
    get_inter_op_parallelism_threads=lambda: _state["inter_op"],
    set_inter_op_parallelism_threads=lambda n: _set_threads("inter_op", n),
)
