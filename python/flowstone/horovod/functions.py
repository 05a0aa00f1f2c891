"""Broadcasting variables from one rank: broadcast_variables, broadcast_global_variables and
BroadcastGlobalVariablesHook (typically rank 0's initial or restored weights, at the start of
training)."""

from flowstone.framework import ops as _ops
from flowstone.horovod.mpi_ops import broadcast
from flowstone.ops import basic_ops as _basic_ops
from flowstone.ops import variables as _variables
from flowstone.train.session_run_hook import SessionRunHook


def broadcast_variables(variables, root_rank):
    """An op that assigns root_rank's value of each variable to it on every rank."""
    return _basic_ops.group(*[var.assign(broadcast(var, root_rank), read_value=False)
                              for var in variables])


def broadcast_global_variables(root_rank):
    """broadcast_variables over tf.global_variables()."""
    if _ops.executing_eagerly():
        raise RuntimeError("hvd.broadcast_global_variables() does not support eager execution. "
                           "Please use `hvd.broadcast_variables(<model/optimizer variables>)` "
                           "instead.")
    return broadcast_variables(_variables.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(SessionRunHook):
    """Broadcasts root_rank's global variables once the session is created (after they were
    initialized or restored from a checkpoint), so every rank starts from the same weights."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None
        self.device = device

    def begin(self):
        if self.bcast_op is None or self.bcast_op.graph is not _ops.get_default_graph():
            with _ops.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)
