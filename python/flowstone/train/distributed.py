"""tf.train.ClusterSpec and tf.train.Server: TensorFlow's parameter-server runtime (gRPC between
tasks) is not part of Flowstone. Data-parallel training across processes and machines runs on
MPI with Horovod's API instead (flowstone.horovod), so both raise UnimplementedError naming it."""

from flowstone import errors
from flowstone.util.tf_export import tf_export

_USE_HOROVOD = (
    "Flowstone has no gRPC parameter-server runtime. For data-parallel training across "
    "processes and machines use Horovod's API: `import flowstone.horovod as hvd`, hvd.init(), "
    "hvd.DistributedOptimizer(opt), hvd.BroadcastGlobalVariablesHook(0), and start the program "
    "with `flowstone-run -np N python train.py` (see README.md, 'Training on several "
    "machines')")


@tf_export("train.ClusterSpec")
class ClusterSpec:
    """Unimplemented: see flowstone.horovod."""

    def __init__(self, cluster=None):
        raise errors.UnimplementedError(None, None, f"tf.train.ClusterSpec: {_USE_HOROVOD}")


@tf_export("train.Server")
class Server:
    """Unimplemented: see flowstone.horovod."""

    def __init__(self, server_or_cluster_def=None, job_name=None, task_index=None,
                 protocol=None, config=None, start=True):
        raise errors.UnimplementedError(None, None, f"tf.train.Server: {_USE_HOROVOD}")
