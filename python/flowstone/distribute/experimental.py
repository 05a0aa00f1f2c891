"""tf.distribute.experimental: the one-replica value context, communication options accepted as
TensorFlow's, and the multi-worker strategies, which raise UnimplementedError (see
flowstone.distribute)."""

import enum

from flowstone import distribute as _distribute


class ValueContext:
    """What a function of `experimental_distribute_values_from_function` learns: replica 0 of 1."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class CommunicationImplementation(enum.Enum):
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Accepted as TensorFlow's; one replica communicates nothing."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


MultiWorkerMirroredStrategy = _distribute.MultiWorkerMirroredStrategy
ParameterServerStrategy = _distribute.ParameterServerStrategy
TPUStrategy = _distribute.TPUStrategy
CentralStorageStrategy = _distribute._unimplemented("experimental.CentralStorageStrategy")
