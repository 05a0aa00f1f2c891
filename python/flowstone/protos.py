"""ConfigProto, GPUOptions, RunOptions and friends: the TensorFlow protocol messages users set.

RunMetadata, which runs fill, is the real protobuf message (framework/tf_protos.py).

They behave like protobuf messages for the ways users touch them: keyword construction, nested
messages created on access (`config.gpu_options.allow_growth = True`), map and repeated fields,
CopyFrom/MergeFrom, equality, and an error naming the message for an unknown field.
"""

import copy

from flowstone.framework import tf_protos as _tf_protos

__all__ = [
    "ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RewriterConfig",
    "RunOptions", "RunMetadata", "RPCOptions",
]


class _Message:
    # name -> default; a _Message subclass as default means a nested message, dict a map field,
    # list a repeated field.
    _FIELDS = {}

    def __init__(self, **kwargs):
        for name, default in self._FIELDS.items():
            if isinstance(default, type) and issubclass(default, _Message):
                value = default()
            else:
                value = copy.copy(default)
            object.__setattr__(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(f'Protocol message {type(self).__name__} has no "{name}" field.')
        default = self._FIELDS[name]
        if isinstance(default, type) and issubclass(default, _Message):
            if not isinstance(value, default):
                raise TypeError(f"{type(self).__name__}.{name} must be a {default.__name__}")
            value = copy.deepcopy(value)
        elif isinstance(default, dict):
            value = dict(value)
        elif isinstance(default, list):
            value = list(value)
        elif isinstance(default, bool):
            value = bool(value)
        elif isinstance(default, int):
            value = int(value)
        elif isinstance(default, float):
            value = float(value)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise TypeError(f"{type(self).__name__}.{name} must be a str, got "
                                f"{type(value).__name__}")
        object.__setattr__(self, name, value)

    def CopyFrom(self, other):  # noqa: N802 - protobuf's name
        for name in self._FIELDS:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))

    def MergeFrom(self, other):  # noqa: N802
        for name, default in self._FIELDS.items():
            value = getattr(other, name)
            if isinstance(value, _Message):
                getattr(self, name).MergeFrom(value)
            elif value != default:
                object.__setattr__(self, name, copy.deepcopy(value))

    def HasField(self, name):  # noqa: N802
        return getattr(self, name) != self._FIELDS[name] if not isinstance(
            self._FIELDS[name], type) else getattr(self, name) != self._FIELDS[name]()

    def ListFields(self):  # noqa: N802
        out = []
        for name, default in self._FIELDS.items():
            value = getattr(self, name)
            empty = default() if isinstance(default, type) else default
            if value != empty:
                out.append((name, value))
        return out

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __repr__(self):
        lines = []
        for name, value in self.ListFields():
            if isinstance(value, _Message):
                inner = repr(value).replace("\n", "\n  ")
                lines.append(f"{name} {{\n  {inner}\n}}")
            else:
                lines.append(f"{name}: {value!r}")
        return "\n".join(lines)


class OptimizerOptions(_Message):
    L1 = 0
    L0 = -1
    DEFAULT = 0
    OFF = 1
    ON_1 = 2
    ON_2 = 3
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
               "max_folded_constant_in_bytes": 0, "do_function_inlining": False,
               "opt_level": 0, "global_jit_level": 0}


class RewriterConfig(_Message):
    """TensorFlow's RewriterConfig (graph_options.rewrite_options, field 10 of GraphOptions).

    Flowstone acts on constant_folding, arithmetic_optimization, dependency_optimization,
    common_subgraph_elimination, remapping and disable_meta_optimizer
    (docs/architecture/graph-optimizer.md);
    the other fields are accepted and have no effect.
    """
    # Toggle, with TensorFlow's values: every value but OFF leaves a rewrite on.
    DEFAULT = 0
    ON = 1
    OFF = 2
    AGGRESSIVE = 3
    EXPERIMENTAL_MLIR = 4
    EXPERIMENTAL_BOTH = 5
    # MemOptType
    DEFAULT_MEM_OPT = 0
    NO_MEM_OPT = 1
    MANUAL = 2
    HEURISTICS = 3
    # NumIterationsType
    DEFAULT_NUM_ITERS = 0
    ONE = 1
    TWO = 2
    _FIELDS = {"layout_optimizer": 0, "constant_folding": 0, "shape_optimization": 0,
               "remapping": 0, "common_subgraph_elimination": 0, "arithmetic_optimization": 0,
               "dependency_optimization": 0, "loop_optimization": 0,
               "function_optimization": 0, "debug_stripper": 0, "disable_model_pruning": False,
               "scoped_allocator_optimization": 0, "pin_to_host_optimization": 0,
               "implementation_selector": 0, "auto_mixed_precision": 0,
               "disable_meta_optimizer": False, "meta_optimizer_iterations": 0,
               "min_graph_nodes": 0, "memory_optimization": 0,
               "memory_optimizer_target_node_name_scope": "", "meta_optimizer_timeout_ms": 0,
               "fail_on_optimizer_errors": False, "optimizers": []}


class GraphOptions(_Message):
    _FIELDS = {"enable_recv_scheduling": False, "optimizer_options": OptimizerOptions,
               "build_cost_model": 0, "build_cost_model_after": 0, "infer_shapes": False,
               "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
               "timeline_step": 0, "rewrite_options": RewriterConfig}


class VirtualDevices(_Message):
    _FIELDS = {"memory_limit_mb": [], "priority": [], "device_ordinal": []}


class GPUOptionsExperimental(_Message):
    VirtualDevices = VirtualDevices
    _FIELDS = {"virtual_devices": [], "use_unified_memory": False, "num_dev_to_dev_copy_streams": 0,
               "collective_ring_order": "", "timestamped_allocator": False,
               "kernel_tracker_max_interval": 0, "kernel_tracker_max_bytes": 0,
               "kernel_tracker_max_pending": 0}


class GPUOptions(_Message):
    Experimental = GPUOptionsExperimental
    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
               "allocator_type": "", "deferred_deletion_bytes": 0, "visible_device_list": "",
               "polling_active_delay_usecs": 0, "polling_inactive_delay_msecs": 0,
               "force_gpu_compatible": False, "experimental": GPUOptionsExperimental}


class RPCOptions(_Message):
    _FIELDS = {"use_rpc_for_inprocess_master": False, "compression_algorithm": "",
               "compression_level": 0}


class ConfigProtoExperimental(_Message):
    # cpu_memory_limit_mb is Flowstone's own field: a CPU memory limit for one session.
    _FIELDS = {"collective_group_leader": "", "executor_type": "",
               "recv_buf_max_chunk": 0, "use_numa_affinity": False,
               "collective_deterministic_sequential_execution": False,
               "collective_nccl": False, "share_session_state_in_clusterspec_propagation": False,
               "disable_thread_spinning": False, "share_cluster_devices_in_session": False,
               "optimize_for_static_graph": False, "enable_mlir_bridge": False,
               "disable_output_partition_graphs": False, "xla_fusion_autotuner_thresh": 0,
               "cpu_memory_limit_mb": 0}


class ConfigProto(_Message):
    Experimental = ConfigProtoExperimental
    _FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0,
               "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
               "session_inter_op_thread_pool": [], "placement_period": 0, "device_filters": [],
               "gpu_options": GPUOptions, "allow_soft_placement": False,
               "log_device_placement": False, "graph_options": GraphOptions,
               "operation_timeout_in_ms": 0, "rpc_options": RPCOptions,
               "isolate_session_state": False, "share_cluster_devices_in_session": False,
               "experimental": ConfigProtoExperimental}


class RunOptions(_Message):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


# A real protobuf message (TensorFlow's field numbers), so TF's own tools parse its bytes.
RunMetadata = _tf_protos.message_class("RunMetadata")
