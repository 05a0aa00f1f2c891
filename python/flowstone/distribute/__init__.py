"""tf.distribute for one replica: TF2 programs written for a strategy run unchanged on one device.

`MirroredStrategy` on one device (the machine's only GPU, or the CPU), `OneDeviceStrategy` and the
default strategy keep TensorFlow's API: `scope()`, `run`, `reduce`, `num_replicas_in_sync`,
`experimental_distribute_dataset`, replica and cross-replica contexts. With one replica there
is nothing to mirror or reduce across, so variables are ordinary variables and the dataset is
the dataset. Strategies over several devices or workers (`MirroredStrategy` over two GPUs,
`MultiWorkerMirroredStrategy`, `ParameterServerStrategy`, `TPUStrategy`) raise
UnimplementedError: Flowstone trains data-parallel with one process per device on MPI and NCCL,
through Horovod's API (flowstone.horovod).
"""

import contextlib
import enum
import threading

from flowstone import errors as _errors
from flowstone import tf_config as _tf_config
from flowstone.framework import ops as _ops

_USE_HOROVOD = (
    "Flowstone does not replicate a model across devices or workers inside one process. Train "
    "data-parallel with one process per device through Horovod's API instead: "
    "`import flowstone.horovod as hvd`, hvd.init(), pin each process to its device "
    "(hvd.local_rank()), wrap the optimizer in hvd.DistributedOptimizer (or the tape in "
    "hvd.DistributedGradientTape), and start the program with `flowstone-run -np N python "
    "train.py` (README.md, 'Training on several machines')")


class ReduceOp(enum.Enum):
    """How values of the replicas combine."""
    SUM = "SUM"
    MEAN = "MEAN"


class InputContext:
    """What a dataset function of `distribute_datasets_from_function` learns about its pipeline."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync


class InputOptions:
    """Accepted as TensorFlow's; one replica has nothing to place or prefetch per device."""

    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode=None,
                 experimental_place_dataset_on_device=False, experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size


class ReplicaContext:
    """The context `Strategy.run` calls its function in: replica 0 of 1."""

    def __init__(self, strategy, replica_id_in_sync_group=0):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return 1

    @property
    def replica_id_in_sync_group(self):
        return _ops.constant(self._replica_id)

    @property
    def devices(self):
        return tuple(self._strategy.extended.worker_devices)

    def all_reduce(self, reduce_op, value, options=None):
        """The sum or mean over one replica: `value` itself."""
        _check_reduce_op(reduce_op)
        return value

    def all_gather(self, value, axis, options=None):
        return value

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs `merge_fn(strategy, *args, **kwargs)` in the cross-replica context."""
        with _cross_replica():
            return merge_fn(self._strategy, *args, **(kwargs or {}))


class StrategyExtended:
    """`strategy.extended`: the devices a one-replica strategy uses."""

    def __init__(self, strategy, device):
        self._strategy = strategy
        self._device = device

    @property
    def worker_devices(self):
        return (self._device,)

    @property
    def parameter_devices(self):
        return (self._device,)

    def colocate_vars_with(self, colocate_with_variable):
        return contextlib.nullcontext()

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Calls `fn(var, *args, **kwargs)`: the one copy of the variable is the variable."""
        return fn(var, *args, **(kwargs or {}))

    def value_container(self, value):
        return value


class _State(threading.local):
    def __init__(self):
        super().__init__()
        self.strategies = []     # entered scopes, innermost last
        self.replica = []        # replica contexts of Strategy.run, innermost last


_STATE = _State()


@contextlib.contextmanager
def _cross_replica():
    _STATE.replica.append(None)
    try:
        yield
    finally:
        _STATE.replica.pop()


def _check_reduce_op(reduce_op):
    if isinstance(reduce_op, str):
        reduce_op = ReduceOp(reduce_op.upper())
    if not isinstance(reduce_op, ReduceOp):
        raise ValueError(f"`reduce_op` must be a tf.distribute.ReduceOp, got {reduce_op!r}")
    return reduce_op


class Strategy:
    """A one-replica strategy on `device` (None: Flowstone's default placement)."""

    def __init__(self, device=None):
        self._device = device
        self._extended = StrategyExtended(self, device or _default_device())

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return 1

    @contextlib.contextmanager
    def scope(self):
        """Makes this the current strategy; ops and variables made inside go to its device."""
        current = _current_strategy()
        if current is not self and current is not _DEFAULT and _STATE.strategies:
            raise ValueError(
                "Mixing different tf.distribute.Strategy objects: "
                f"{type(current).__name__} is already in scope, cannot enter "
                f"{type(self).__name__}")
        _STATE.strategies.append(self)
        try:
            with self._device_scope():
                yield self
        finally:
            _STATE.strategies.pop()

    def _device_scope(self):
        return _ops.device(self._device) if self._device else contextlib.nullcontext()

    def run(self, fn, args=(), kwargs=None, options=None):
        """Calls `fn(*args, **kwargs)` as replica 0 of 1 and returns its result."""
        _STATE.strategies.append(self)
        _STATE.replica.append(ReplicaContext(self))
        try:
            with self._device_scope():
                return fn(*args, **(kwargs or {}))
        finally:
            _STATE.replica.pop()
            _STATE.strategies.pop()

    experimental_run_v2 = run

    def reduce(self, reduce_op, value, axis=None):
        """Combines the replicas' `value`s (one here) and, with `axis`, reduces along it too."""
        reduce_op = _check_reduce_op(reduce_op)
        if axis is None:
            return value
        from flowstone.ops import reduction_ops
        reducer = (reduction_ops.reduce_sum if reduce_op is ReduceOp.SUM
                   else reduction_ops.reduce_mean)
        return reducer(value, axis=axis)

    def gather(self, value, axis):
        return value

    def experimental_local_results(self, value):
        """The per-replica values of `value`: a tuple of one."""
        return (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """The dataset each replica reads: with one replica, the whole dataset."""
        return dataset

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        return dataset_fn(InputContext())

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        return value_fn(experimental.ValueContext())

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} on {self._extended._device}>"


def _default_device():
    gpus = _tf_config.list_logical_devices("GPU")
    return gpus[0].name if gpus else "/job:localhost/replica:0/task:0/device:CPU:0"


class MirroredStrategy(Strategy):
    """Synchronous replicas on the devices of one machine; Flowstone runs one device per process.

    With no `devices`, TensorFlow mirrors over every GPU (or the CPU without one): that is one
    device unless the machine has several GPUs."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            gpus = [d.name for d in _tf_config.list_logical_devices("GPU")]
            devices = gpus or ["/job:localhost/replica:0/task:0/device:CPU:0"]
        devices = list(devices)
        if len(devices) != 1:
            raise _errors.UnimplementedError(
                None, None, f"tf.distribute.MirroredStrategy over {len(devices)} devices "
                f"({', '.join(devices)}): {_USE_HOROVOD}. MirroredStrategy(devices=[one "
                "device]) runs on that device alone.")
        super().__init__(devices[0])


class OneDeviceStrategy(Strategy):
    """Everything on `device`: its variables, the steps of `run`, the ops built in `scope()`."""

    def __init__(self, device):
        super().__init__(device)


class _DefaultStrategy(Strategy):
    """The strategy in effect when no scope is entered."""

    def __repr__(self):
        return "<default tf.distribute.Strategy>"


_DEFAULT = _DefaultStrategy()


def _unimplemented(name):
    class Unimplemented:
        __doc__ = f"Unimplemented: {name} needs several processes or devices; see flowstone.horovod."

        def __init__(self, *args, **kwargs):
            raise _errors.UnimplementedError(None, None, f"tf.distribute.{name}: {_USE_HOROVOD}")
    Unimplemented.__name__ = Unimplemented.__qualname__ = name.rsplit(".", 1)[-1]
    return Unimplemented


MultiWorkerMirroredStrategy = _unimplemented("MultiWorkerMirroredStrategy")
TPUStrategy = _unimplemented("TPUStrategy")
ParameterServerStrategy = _unimplemented("experimental.ParameterServerStrategy")


class CrossDeviceOps:
    """How replicas' values combine; with one replica nothing crosses devices."""

    def __init__(self, *args, **kwargs):
        pass


class NcclAllReduce(CrossDeviceOps):
    pass


class HierarchicalCopyAllReduce(CrossDeviceOps):
    pass


class ReductionToOneDevice(CrossDeviceOps):
    pass


def _current_strategy():
    return _STATE.strategies[-1] if _STATE.strategies else _DEFAULT


def get_strategy():
    """The strategy of the innermost `scope()` (or `run`), else the default strategy."""
    return _current_strategy()


def has_strategy():
    """Whether a strategy other than the default one is in scope."""
    return bool(_STATE.strategies)


def in_cross_replica_context():
    """True inside a strategy's `scope()` but outside its `run`."""
    return bool(_STATE.strategies) and (not _STATE.replica or _STATE.replica[-1] is None)


def get_replica_context():
    """The replica context inside `run`; None in a cross-replica context; outside every scope,
    the default strategy's replica context, as in TensorFlow."""
    if _STATE.replica and _STATE.replica[-1] is not None:
        return _STATE.replica[-1]
    if _STATE.strategies:
        return None
    return ReplicaContext(_DEFAULT)


def get_cross_replica_context():
    """The strategy in a cross-replica context, else None."""
    return _current_strategy() if in_cross_replica_context() else None


def get_loss_reduction():
    """How a loss combines across replicas: `ReduceOp.SUM`, as TensorFlow answers for every
    strategy that does not scale losses for an Estimator."""
    return ReduceOp.SUM


from flowstone.distribute import experimental  # noqa: E402
