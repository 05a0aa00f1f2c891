"""Conformance cases (see op_cases.py) for Horovod's collectives, run in a single process
(hvd.init() without a launcher: size 1), where each is the identity and so are the gradients.
Multi-process behaviour is tested in test_horovod.py."""

import numpy as np

import flowstone.horovod as hvd
from flowstone.framework.ops import apply_op
from op_cases import Case, rand


def _hvd(op_type, attrs=None, extra_inputs=()):
    """Builds the op after hvd.init(): the kernels need the collectives running."""
    def build(*inputs):
        hvd.init()
        return apply_op(op_type, list(inputs) + list(extra_inputs), attrs)
    return build


def _start_done(x, attrs):
    handle = apply_op("HorovodAllreduceStart", [x], attrs).outputs[0]
    return apply_op("HorovodAllreduceDone", [handle, x])


X = rand(2, 3)
CASES = [
    Case("HorovodAllreduce", [X], lambda x: x, grad=(0,),
         build=_hvd("HorovodAllreduce", {"reduce_op": 1})),
    Case("HorovodAllreduce", [X], lambda x: x * 3.0, grad=(0,),
         build=_hvd("HorovodAllreduce", {"reduce_op": 0, "prescale_factor": 2.0,
                                         "postscale_factor": 1.5})),
    Case("HorovodGroupedAllreduce", [X, rand(4)], lambda x, y: (x, y), outputs=2, grad=(0, 1),
         build=lambda x, y: (hvd.init(), apply_op("HorovodGroupedAllreduce", [[x, y]]))[1]),
    # Start returns a variant handle, so both ops are checked through Done's output.
    Case("HorovodAllreduceStart", [X], lambda x: x * 3.0,
         build=lambda x: (hvd.init(), _start_done(x, {"reduce_op": 0, "prescale_factor": 2.0,
                                                      "postscale_factor": 1.5}))[1]),
    Case("HorovodAllreduceDone", [X], lambda x: x,
         build=lambda x: (hvd.init(), _start_done(x, {"reduce_op": 1}))[1]),
    Case("HorovodAllgather", [X], lambda x: x, grad=(0,), build=_hvd("HorovodAllgather")),
    Case("HorovodBroadcast", [X], lambda x: x, grad=(0,),
         build=_hvd("HorovodBroadcast", {"root_rank": 0})),
    Case("HorovodAlltoall", [X, np.array([2], np.int32)],
         lambda x, s: (x, np.array([2], np.int32)), outputs=2, grad=(0,),
         build=_hvd("HorovodAlltoall")),
    Case("HorovodRank", [], lambda: np.int32(0), build=_hvd("HorovodRank")),
    Case("HorovodSize", [], lambda: np.int32(1), build=_hvd("HorovodSize")),
    Case("HorovodLocalRank", [], lambda: np.int32(0), build=_hvd("HorovodLocalRank")),
    Case("HorovodLocalSize", [], lambda: np.int32(1), build=_hvd("HorovodLocalSize")),
]
