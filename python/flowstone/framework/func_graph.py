"""Tracing Python callables into graph functions.

A FuncGraph is the body of a function while it is being traced: `tf.*` calls made under it add
ops to its own C++ graph, and tensors of outer graphs that those ops use are captured: the body
reads each through a Placeholder of its own, and the caller passes the outer tensor as an extra
input. The finished body is added to the outer graph's function library (shared by every graph
traced under the same root graph), where call ops (If, While, PartitionedCall) refer to it by name.
"""

import contextlib
import weakref

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import ops
from flowstone.framework.tensor_shape import as_shape


# The living FuncGraphs by their C++ graph, so that a gradient function (tf.RegisterGradient,
# tf.custom_gradient) called for a node of a body builds its ops in that body (body_graph_of).
_bodies = weakref.WeakValueDictionary()


def body_graph_of(c_graph):
    """The Python graph of the C++ function body `c_graph`: its FuncGraph while one lives, else
    a plain Graph over it (which captures nothing)."""
    graph = _bodies.get(id(c_graph))
    if graph is None or graph._c is not c_graph:
        graph = ops.Graph()
        graph._c = c_graph
        graph._sync_ops()
    return graph


@contextlib.contextmanager
def sealed(graph, reason):
    """While it lasts, `graph` (a finished FuncGraph, whose signature is fixed) refuses new
    captures, naming `reason` (what is building ops in it) in the error."""
    if not isinstance(graph, FuncGraph):
        yield
        return
    saved, graph.sealed_reason = graph.sealed_reason, reason
    try:
        yield
    finally:
        graph.sealed_reason = saved


class FuncGraph(ops.Graph):
    """The body of one function, traced under `outer_graph`; `base_name` is the name it gets in
    the library (made unique there)."""

    _captures_outer_tensors = True

    def __init__(self, base_name, outer_graph):
        super().__init__()
        self._c = _C.Graph.function_body(outer_graph._c)
        self.base_name = base_name
        self.name = None  # given when the body is added to the library
        self.outer_graph = outer_graph
        self.seed = outer_graph.seed
        self.inputs = []  # Placeholders of the arguments, then of the captures
        self.outputs = []
        self._captures = {}  # id(tensor of outer_graph) -> (that tensor, inner Placeholder)
        self._eager_captures = {}  # id(EagerTensor) -> (that tensor, inner Placeholder)
        self.control_captures = []  # outer ops the body depends on (run before the call)
        # Set while a gradient function builds ops in the finished body: its signature is fixed
        # then, so a new capture cannot be added.
        self.sealed_reason = None
        _bodies[id(self._c)] = self

    @property
    def captures(self):
        """(outer tensor, inner Placeholder) pairs, in the order they were captured."""
        return list(self._captures.values())

    def add_input(self, dtype, shape, name="Placeholder"):
        """A Placeholder argument of the function."""
        placeholder = self._placeholder(dtype, shape, name)
        self.inputs.append(placeholder)
        return placeholder

    def _placeholder(self, dtype, shape, name):
        with self.as_default(), self.control_dependencies(None):
            return ops.apply_op("Placeholder", [], {"dtype": dtype, "shape": as_shape(shape)},
                                name=name).outputs[0]

    def _is_ancestor(self, graph):
        outer = self.outer_graph
        while outer is not None:
            if outer is graph:
                return True
            outer = getattr(outer, "outer_graph", None)
        return False

    def _capture(self, tensor, op_type=None):
        """The Placeholder standing for outer `tensor` in this body (created on first use)."""
        if tensor.graph is self:
            return tensor
        if not self._is_ancestor(tensor.graph):
            raise ValueError(f"Tensor {tensor!r} must be from the same graph as the other inputs "
                             f"of {op_type}.")
        # A tensor of a graph further out is first captured by the graph in between; captures
        # are keyed by that graph's tensor, so a tensor reached both ways is captured once.
        outer_value = tensor
        if tensor.graph is not self.outer_graph:
            outer_value = self.outer_graph._capture(tensor, op_type)
        found = self._captures.get(id(outer_value))
        if found is not None:
            return found[1]
        if self.sealed_reason is not None:
            raise ValueError(f"{self.sealed_reason} reads {tensor!r}, a tensor from outside the "
                             f"body of '{self.name}', which that body does not already read. "
                             "Pass the tensor into the loop or cond (as a loop variable or a "
                             "value its body uses) so that the gradient can read it there.")
        placeholder = self._placeholder(tensor.dtype, tensor.shape, "Placeholder")
        self._captures[id(outer_value)] = (outer_value, placeholder)
        return placeholder

    @property
    def eager_captures(self):
        """(eager tensor, inner Placeholder) pairs for the eager values the body reads (a
        tf.function's variables and constants), in the order they were captured."""
        return list(self._eager_captures.values())

    def _capture_eager(self, tensor, op_type=None):
        """The Placeholder standing for an eager tensor; a nested body reads it through the
        body it is traced in."""
        found = self._eager_captures.get(id(tensor))
        if found is not None:
            return found[1]
        if isinstance(self.outer_graph, FuncGraph) or getattr(self.outer_graph,
                                                               "feeds_eager_tensors", False):
            placeholder = self._capture(self.outer_graph._capture_eager(tensor, op_type), op_type)
        else:
            placeholder = self._placeholder(tensor.dtype, tensor.shape, "Placeholder")
        self._eager_captures[id(tensor)] = (tensor, placeholder)
        return placeholder

    def capture_all(self, outer_tensors):
        """Captures each of `outer_tensors` (already captured ones are kept)."""
        for t in outer_tensors:
            self._capture(t)

    def control_dependencies(self, control_inputs):
        # Ops of outer graphs cannot be control inputs inside the body: the call op waits for
        # them instead (TF's control captures).
        if control_inputs is not None:
            inner = []
            for c in control_inputs:
                op = c.op if isinstance(c, ops.Tensor) else c
                if isinstance(op, ops.Operation) and op.graph is not self:
                    if op not in self.control_captures:
                        self.control_captures.append(op)
                else:
                    inner.append(c)
            control_inputs = inner
        return super().control_dependencies(control_inputs)

    def is_stateful(self):
        """Whether any op of the body is stateful (If vs StatelessIf, as TF chooses)."""
        return any(op._node.is_stateful for op in self.get_operations())

    def add_to_library(self, input_placeholders, outputs):
        """Adds the body to the outer graph's function library as a function taking
        `input_placeholders` and returning `outputs` (tensors of this body)."""
        # Named now, not when tracing began: functions traced inside this body were added first.
        self.name = self.outer_graph._c.unique_function_name(self.base_name)
        try:
            self.outer_graph._c.add_function(
                self.name, self._c, [p._as_node_output() for p in input_placeholders],
                [t._as_node_output() for t in outputs])
        except _C.StatusError as e:
            raise _errors.from_status_error(e, as_op_error=False) from None
        self.outputs = list(outputs)


def function_base_name(graph, kind):
    """TF's `<scope>_<kind>` function name ("cond_true", "while_body"), made unique in the library
    when the function is added."""
    scope = graph.get_name_scope().replace("/", "_")
    return f"{scope}_{kind}" if scope else kind

