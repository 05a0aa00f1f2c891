"""hvd.init() and the process's place in the job."""

import atexit

from flowstone import _C
from flowstone import errors as _errors


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


_atexit_registered = False


def init(comm=None, process_sets=None):
    """Starts Horovod: MPI when a launcher (mpirun, flowstone-run) started this process, else a
    single process of size 1 (with a one-line note). Later calls do nothing."""
    global _atexit_registered
    if comm is not None or process_sets is not None:
        raise _errors.UnimplementedError(
            None, None, "hvd.init(comm=..., process_sets=...) is not supported by "
            "flowstone.horovod: every rank of MPI_COMM_WORLD takes part (see docs/COMPAT.md)")
    _call(_C.collectives_init)
    if not _atexit_registered:
        # MPI must be finalized before the process exits, or the launcher reports a failure.
        atexit.register(shutdown)
        _atexit_registered = True


def shutdown():
    """Stops the background thread: collectives still pending on any rank fail with
    AbortedError. MPI is finalized, so this process cannot init() again under a launcher."""
    _call(_C.collectives_shutdown)


def is_initialized():
    return _C.collectives_initialized()


def _topology(key):
    if not _C.collectives_initialized():
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    return _call(_C.collectives_topology)[key]


def rank():
    """This process's rank in [0, size())."""
    return _topology("rank")


def size():
    """The number of processes in the job."""
    return _topology("size")


def local_rank():
    """This process's rank among those on its machine."""
    return _topology("local_rank")


def local_size():
    """The number of processes on this machine."""
    return _topology("local_size")


def cross_rank():
    """The index of this machine among the machines (rank among processes of equal
    local_rank)."""
    return _topology("cross_rank")


def cross_size():
    """The number of machines (processes of this local_rank)."""
    return _topology("cross_size")


def mpi_threads_supported():
    """Whether MPI was started with MPI_THREAD_MULTIPLE."""
    return _topology("threads_supported")


def mpi_enabled():
    """Whether the collectives run on MPI (a launcher started this job)."""
    return is_initialized() and _topology("transport") != "local (no launcher)"


def mpi_built():
    """Whether the MPI plugin was built with this Flowstone."""
    import os
    return os.path.exists(os.path.join(os.path.dirname(_C.__file__), "libflowstone_mpi.so"))


def gloo_enabled():
    return False


def gloo_built():
    return False


def nccl_built():
    """Whether GPU tensors' collectives can run on NCCL: the CUDA plugin loaded and found
    libnccl.so.2 (it is loaded at run time, never linked)."""
    discovery = _C.gpu_discovery()
    return bool(discovery["backend"]["loaded"] and any(
        lib["name"] == "NCCL" and lib["loaded"] for lib in discovery["libraries"]))
