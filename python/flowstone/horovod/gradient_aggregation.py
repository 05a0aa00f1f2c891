"""Local gradient aggregation for hvd.DistributedOptimizer(backward_passes_per_step=N), in
Horovod's design: each run of the training op adds this rank's gradients to local accumulators;
every N-th run allreduces the accumulated sums and applies them, the other runs only count.

As in Horovod, the accumulators and the counter are local variables (GraphKeys.LOCAL_VARIABLES):
`tf.local_variables_initializer()` (or a Scaffold / MonitoredTrainingSession) initializes them.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.indexed_slices import IndexedSlices
from flowstone.horovod.gradient_reduction import densify
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import basic_ops as _basic_ops
from flowstone.ops import control_flow_ops as _control_flow_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import variables as _variables


class LocalGradientAggregation:
    """Accumulates gradients over `passes` runs; `reduce` allreduces them on the last one."""

    def __init__(self, passes, average_aggregated_gradients):
        if int(passes) != passes or passes < 1:
            raise ValueError(f"backward_passes_per_step must be a positive integer, got "
                             f"{passes!r}")
        self.passes = int(passes)
        self.average = average_aggregated_gradients
        self.counter = None
        self._accumulators = []

    def _make_variables(self, grads):
        """The counter and one zero accumulator per gradient, made once, outside any branch."""
        if self.counter is not None:
            return
        with _ops.init_scope():
            local = [_ops.GraphKeys.LOCAL_VARIABLES]
            self.counter = _variables.Variable(
                0, dtype=_dtypes.int32, trainable=False, collections=local,
                name="aggregation_counter")
            for i, grad in enumerate(grads):
                if not grad.shape.is_fully_defined():
                    raise ValueError(
                        f"backward_passes_per_step needs gradients of a known shape to "
                        f"accumulate them; gradient {i} ({grad.name}) has shape {grad.shape}")
                self._accumulators.append(_variables.Variable(
                    _array_ops.zeros(grad.shape.as_list(), dtype=grad.dtype), trainable=False,
                    collections=local, name=f"aggregated_gradient_{i}"))

    def reduce(self, grads, allreduce_fn):
        """`grads` (None entries kept) after this run's accumulation: the allreduced sums (divided
        by the number of passes when averaging) on every `passes`-th run, else `grads` as
        they are (the optimizer does not apply them: see `apply`)."""
        present = [i for i, g in enumerate(grads) if g is not None]
        dense = [_ops.convert_to_tensor(densify(grads[i]) if isinstance(grads[i], IndexedSlices)
                                        else grads[i]) for i in present]
        self._make_variables(dense)
        # A new round starts from zero; the counter says whether this run starts one.
        starts_round = _math_ops.equal(self.counter.read_value(), 0)
        clear = _control_flow_ops.cond(
            starts_round,
            lambda: _basic_ops.group(*[a.assign(_array_ops.zeros_like(a), read_value=False)
                                       for a in self._accumulators]),
            _basic_ops.no_op)
        with _ops.control_dependencies([clear]):
            added = [a.assign_add(g, read_value=False) for a, g in zip(self._accumulators, dense)]
        with _ops.control_dependencies(added):
            counted = self.counter.assign_add(1, read_value=False)
        with _ops.control_dependencies([counted]):
            round_done = _math_ops.equal(self.counter.read_value(), self.passes)

        def allreduce_accumulated():
            reduced = allreduce_fn([a.read_value() for a in self._accumulators])
            with _ops.control_dependencies(reduced):
                reset = self.counter.assign(0, read_value=False)
            with _ops.control_dependencies([reset]):
                divisor = self.passes if self.average else 1
                return [_math_ops.divide(r, _ops.convert_to_tensor(divisor, dtype=r.dtype))
                        for r in reduced]

        def unreduced():
            return [_basic_ops.identity(g) for g in dense]

        chosen = _control_flow_ops.cond(round_done, allreduce_accumulated, unreduced)
        out = list(grads)
        for i, g in zip(present, chosen if isinstance(chosen, (list, tuple)) else [chosen]):
            out[i] = g
        return out

    def apply(self, apply_fn, global_step):
        """An op that applies the gradients (`apply_fn()`) on runs that ended a round (the
        counter was reset to 0), and on the others only advances `global_step` (if any), as
        Horovod does, so that the step counts backward passes."""
        ended_round = _math_ops.equal(self.counter.read_value(), 0)

        def count_step():
            if global_step is None:
                return _basic_ops.no_op()
            return global_step.assign_add(_ops.convert_to_tensor(1, dtype=global_step.dtype),
                                          read_value=False)

        return _control_flow_ops.cond(ended_round, apply_fn, count_step)
