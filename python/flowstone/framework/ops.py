"""Graphs, operations and tensors: the TF1 graph-building API over the C++ graph."""

import contextlib
import os
import sys
import threading

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import context as _context
from flowstone.framework import tf_protos as _tf_protos
from flowstone.framework.tensor_shape import Dimension, TensorShape, as_shape
from flowstone.util.tf_export import tf_export

__all__ = [
    "Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph", "name_scope",
    "control_dependencies", "device", "colocate_with", "apply_op", "convert_to_tensor",
    "GraphKeys", "add_to_collection", "add_to_collections", "get_collection",
    "get_collection_ref", "set_random_seed", "is_tensor", "register_tensor_conversion",
]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _creation_site(limit=6):
    """Where the user created an op: the innermost frames outside this package, newest first
    reversed into call order, one "File ..., line N, in f" entry per frame."""
    frame = sys._getframe(2)
    frames = []
    while frame is not None and len(frames) < limit:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR) and "importlib" not in filename:
            frames.append(f'  File "{filename}", line {frame.f_lineno}, in {frame.f_code.co_name}')
        frame = frame.f_back
    frames.reverse()
    return "\n".join(frames)


def _short_site(site):
    """'file.py:12' from a creation site, for the one-line node annotation."""
    if not site:
        return ""
    last = site.splitlines()[-1].strip()
    try:
        file_part, line_part, _ = last.split(", ", 2)
        return f"{os.path.basename(file_part[6:-1])}:{line_part[5:]}"
    except ValueError:
        return last


class GraphKeys:
    """Standard collection names (TensorFlow's strings, so that programs filling a collection
    by its literal name meet the same one)."""
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SUMMARIES = "summaries"
    SUMMARY_OP = "summary_op"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    SAVERS = "savers"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES


class Tensor:
    """One output of an Operation: `op.name:index`."""

    # `alias` and `aliases` are set by tf.contrib.layers and tf_slim on the outputs they collect
    # (outputs_collections), as TensorFlow's tensors allow.
    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__", "alias", "aliases")
    # Makes numpy defer to our operators (`np.float32(1) + t`).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = None

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)
    name = property(lambda self: f"{self._op.name}:{self._value_index}")

    @property
    def shape(self):
        if self._shape is None:
            self._shape = TensorShape(self._op._node.output_shape(self._value_index))
        return self._shape

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Narrows the static shape (checked for compatibility, as TensorFlow does). The graph
        records it, so ops built on this tensor afterwards infer their shapes from it."""
        merged = self.shape.merge_with(as_shape(shape))
        if merged.rank is None:
            return  # an unknown shape narrows nothing
        self.graph._c.refine_output_shape(self._op._node, self._value_index, merged.as_list())
        self._shape = merged

    @property
    def ndim(self):
        return self.shape.rank

    def consumers(self):
        return [op for op in self.graph.get_operations()
                if any(t is self for t in op.inputs)]

    def eval(self, feed_dict=None, session=None):
        from flowstone.client.session import _eval_using_default_session
        return _eval_using_default_session(self, feed_dict, self.graph, session)

    def _as_node_output(self):
        return (self._op._node, self._value_index)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self.shape} dtype={self._dtype.name}>"

    __str__ = lambda self: (f'Tensor("{self.name}", shape={self.shape}, '
                            f"dtype={self._dtype.name})")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use "
                        "`if t is not None:` instead of `if t:` to test if a tensor is defined, "
                        "and use TensorFlow ops such as tf.cond to execute subgraphs "
                        "conditioned on the value of a tensor.")

    def __iter__(self):
        shape = self.shape
        if shape.rank is None or shape[0] is None:
            raise TypeError("Cannot iterate over a tensor with unknown first dimension.")
        return (self[i] for i in range(shape[0]))

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors ({self.name}). Use "
                        "tf.shape(t) or t.shape instead.")


class Operation:
    """A node in the graph."""

    __slots__ = ("_graph", "_node", "_outputs", "_inputs", "__weakref__")

    def __init__(self, graph, node):
        self._graph = graph
        self._node = node
        self._inputs = None
        self._outputs = [Tensor(self, i, _dtypes.from_enum(node.output_dtype(i)))
                         for i in range(node.num_outputs)]

    name = property(lambda self: self._node.name)
    type = property(lambda self: self._node.type)
    graph = property(lambda self: self._graph)
    outputs = property(lambda self: list(self._outputs))
    device = property(lambda self: self._node.device)
    _creation_site = property(lambda self: self._node.creation_site)
    _id = property(lambda self: self._node.id)

    @property
    def inputs(self):
        if self._inputs is None:
            ops = self._graph._ops
            self._inputs = [ops[node.id]._outputs[i] for node, i in self._node.inputs]
        return list(self._inputs)

    @property
    def control_inputs(self):
        ops = self._graph._ops
        return [ops[node.id] for node in self._node.control_inputs]

    @property
    def node_def(self):
        """A NodeDef-like description: `.name`, `.op`, `.input`, `.device`, `.attr`."""
        return NodeDef(self)

    def values(self):
        return tuple(self._outputs)

    def colocation_groups(self):
        """The groups this op is colocated with: the "loc:@<name>" entries of its `_class` attr,
        or its own name when it has none."""
        groups = [g for g in self._class_attr() if g.startswith("loc:@")]
        return groups or [f"loc:@{self.name}"]

    def _class_attr(self):
        return self._node.attr("_class") if "_class" in self._node.attr_names() else []

    def get_attr(self, name):
        value = self._node.attr(name)
        if name in ("T", "dtype", "DstT", "SrcT", "out_type", "Tidx", "output_type"):
            return _dtypes.from_enum(value)
        return value

    def run(self, feed_dict=None, session=None):
        from flowstone.client.session import _run_using_default_session
        _run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self):
        return f"<tf.Operation '{self.name}' type={self.type}>"

    def __str__(self):
        return str(self.node_def)


class NodeDef:
    """What TensorFlow's NodeDef proto says about an op, read from the graph: the op's `name`,
    its type as `op`, its inputs as "name:index" ("^name" for control inputs), its requested
    `device`, and `attr`, a dict of attribute values (as Operation.get_attr returns them)."""

    __slots__ = ("name", "op", "input", "device", "attr")

    def __init__(self, operation):
        self.name = operation.name
        self.op = operation.type
        self.input = [t.op.name if t.value_index == 0 else t.name for t in operation.inputs]
        self.input += ["^" + c.name for c in operation.control_inputs]
        self.device = operation.device
        self.attr = {key: operation.get_attr(key) for key in operation._node.attr_names()}

    def __str__(self):
        lines = [f'name: "{self.name}"', f'op: "{self.op}"']
        lines += [f'input: "{name}"' for name in self.input]
        if self.device:
            lines.append(f'device: "{self.device}"')
        for key in sorted(self.attr):
            lines.append(f"attr {{ key: \"{key}\" value: {self.attr[key]!r} }}")
        return "\n".join(lines) + "\n"

    __repr__ = __str__


class Graph:
    """A dataflow graph. Ops are added to the default graph unless another one is made the
    default with `with g.as_default():`."""

    def __init__(self):
        self._c = _C.Graph()
        self._ops = []
        self._collections = {}
        self._lock = threading.RLock()
        self._seed = None
        self._thread_local = threading.local()
        self._variable_store = None  # tf.get_variable's variables (ops/variable_scope.py)
        # op type -> gradient name (tf.RegisterGradient), set by gradient_override_map.
        self._gradient_override_map = {}

    # --- per-thread building context -------------------------------------------------------
    def _ctx(self):
        ctx = self._thread_local
        if not hasattr(ctx, "name_stack"):
            ctx.name_stack = ""
            ctx.control_deps = []
            ctx.device_stack = []
            ctx.colocation_stack = []  # (colocation groups, device) per colocate_with block
            ctx.var_scope_store = None  # this thread's variable scopes (ops/variable_scope.py)
            ctx.variable_creators = []  # tf.variable_creator_scope's, outermost first
        return ctx

    # --- properties ---------------------------------------------------------------------------
    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, value):
        self._seed = value
        self._c.seed = -1 if value is None else int(value)

    @property
    def _last_id(self):
        return len(self._ops)

    @property
    def version(self):
        return len(self._ops)

    @property
    def finalized(self):
        return self._c.finalized

    def finalize(self):
        self._c.finalize()

    def as_default(self):
        return _default_graph_stack.get_controller(self)

    def as_graph_def(self, from_version=None, add_shapes=False):
        """The graph as a TensorFlow GraphDef message (framework/tf_protos.py), converted in
        C++. `from_version` keeps the nodes added since `graph.version` was that number;
        `add_shapes` adds each node's `_output_shapes` attr as TensorFlow does."""
        with self._lock:
            self._sync_ops()
            graph_def = _tf_protos.GraphDef.FromString(_C.graph_to_graph_def(self._c))
            ops = list(self._ops)
        if from_version is not None:
            kept = [(n, op) for n, op in zip(graph_def.node, ops) if op._id >= from_version]
            del graph_def.node[:]
            graph_def.node.extend(n for n, _ in kept)
            ops = [op for _, op in kept]
        if add_shapes:
            for node_def, op in zip(graph_def.node, ops):
                shapes = node_def.attr["_output_shapes"].list.shape
                for tensor in op.outputs:
                    shape = shapes.add()
                    if tensor.shape.ndims is None:
                        shape.unknown_rank = True
                        continue
                    for dim in tensor.shape.as_list():
                        shape.dim.add().size = -1 if dim is None else dim
        return graph_def

    # --- lookup -------------------------------------------------------------------------------
    def get_operations(self):
        return list(self._ops)

    def _operation_by_name_or_none(self, name):
        node = self._c.find_node(name)
        return None if node is None else self._ops[node.id]

    def get_operation_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """Resolves a Tensor, an Operation or a name ('op' or 'op:0') in this graph."""
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            name = obj
            if ":" in name and allow_tensor:
                op_name, _, index = name.rpartition(":")
                try:
                    index = int(index)
                except ValueError:
                    raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not "
                                     "a valid one. Tensor names must be of the form "
                                     "\"<op_name>:<output_index>\".") from None
                op = self._operation_by_name_or_none(op_name)
                if op is None:
                    raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. "
                                   f"The operation, {op_name!r}, does not exist in the graph.")
                if index >= len(op._outputs):
                    raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. "
                                   f"The operation, {op_name!r}, exists but only has "
                                   f"{len(op._outputs)} outputs.")
                return op._outputs[index]
            if ":" in name:
                raise ValueError(f"Name {name!r} appears to refer to a Tensor, not an Operation.")
            op = self._operation_by_name_or_none(name)
            if op is None:
                raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
            if not allow_operation:
                raise ValueError(f"The name {name!r} refers to an Operation, not a Tensor. "
                                 f"Tensor names must be of the form \"<op_name>:<output_index>\".")
            return op
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor),
                                             ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    # --- naming ---------------------------------------------------------------------------------
    def get_name_scope(self):
        return self._ctx().name_stack.rstrip("/")

    def unique_name(self, name, mark_as_used=True):
        """TensorFlow's unique naming: 'x', then 'x_1', 'x_2', ... (prefixed by the scope)."""
        scope = self._ctx().name_stack
        full = scope + name if scope else name
        if not mark_as_used:
            return full
        return self._c.unique_name(full)

    @contextlib.contextmanager
    def name_scope(self, name):
        ctx = self._ctx()
        old = ctx.name_stack
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name  # an existing scope, re-entered exactly
        else:
            new = self.unique_name(name) + "/"
        ctx.name_stack = new
        try:
            yield new
        finally:
            ctx.name_stack = old

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        """Ops of the mapped types created inside use the gradient registered under the mapped
        name with tf.RegisterGradient (recorded in their `_gradient_op_type` attr)."""
        for op_type, gradient in op_type_map.items():
            if not isinstance(op_type, str) or not isinstance(gradient, str):
                raise TypeError("Must pass a dictionary of strings to strings")
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    def _in_eager_mode(self):
        """Whether this is the global default graph while ops run eagerly: it then only holds
        name scopes and device stacks."""
        return self is _global_default_graph and executing_eagerly()

    # --- control dependencies and devices ------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if self._in_eager_mode():
            yield  # eager ops run in program order, as in TensorFlow
            return
        ctx = self._ctx()
        old = ctx.control_deps
        if control_inputs is None:
            ctx.control_deps = []
        else:
            ops = []
            for c in control_inputs:
                if hasattr(c, "_as_graph_element") and not isinstance(c, (Tensor, Operation)):
                    c = c._as_graph_element()
                if isinstance(c, Tensor):
                    c = c.op
                if not isinstance(c, Operation):
                    raise TypeError(f"Control input must be Operation or Tensor: {c!r}")
                ops.append(c)
            ctx.control_deps = old + [op for op in ops if op not in old]
        try:
            yield
        finally:
            ctx.control_deps = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        ctx = self._ctx()
        old = ctx.device_stack
        if device_name_or_function is None:
            ctx.device_stack = [None]
        elif callable(device_name_or_function):
            ctx.device_stack = old + [device_name_or_function]
        else:
            spec = _device_spec_string(device_name_or_function)
            ctx.device_stack = old + [spec]
        # Counted in C++: eager ops skip looking for a device while no scope is open.
        _C.eager_device_scope(1)
        try:
            yield
        finally:
            ctx.device_stack = old
            _C.eager_device_scope(-1)

    def _device_before_functions(self):
        """The device the string scopes inside the innermost device function give, and the
        device functions and scopes left to apply (innermost first), as TensorFlow walks its
        device stack: a string scope fills the fields still unset, a function replaces the
        device, and a `tf.device(None)` scope ends the walk."""
        device = ""
        stack = self._ctx().device_stack
        for depth in range(len(stack) - 1, -1, -1):
            entry = stack[depth]
            if entry is None:
                return device, []
            if callable(entry):
                return device, stack[depth::-1]
            device = _merge_device_strings(entry, device)
        return device, []

    def _apply_device_functions(self, op, remaining):
        """Runs the device functions (and the scopes outside them) on the created `op`, which
        shows each function the device so far, and leaves the result on its node."""
        device = op.device
        for entry in remaining:
            if entry is None:
                break
            if callable(entry):
                device = _device_spec_string(entry(op) or "")
            else:
                device = _merge_device_strings(entry, device)
            if device != op.device:
                self._c.set_device(op._node, device)

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created in the block run on the device of `op` (an Operation, Tensor or
        Variable): they get the attr `_class = ["loc:@<op name>"]`, which the placer honours, and
        `op`'s requested device. Device scopes from outside the block do not apply inside it.
        `ignore_existing=True` drops the colocations of enclosing blocks; with `op=None` it
        clears them."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is "
                             "not True")
        if self._in_eager_mode():
            yield  # TensorFlow ignores colocation when executing eagerly
            return
        entry = None
        target = getattr(op, "handle", op)
        if isinstance(target, Tensor) and target._op is None:
            # An eager tensor (an eager variable's handle) read by a function being traced:
            # the body reads it through a capture, so there is nothing to colocate with.
            yield
            return
        if op is not None:
            op = _op_to_colocate_with(op)
            if op.graph is not self:
                is_ancestor = getattr(self, "_is_ancestor", None)
                if is_ancestor is not None and is_ancestor(op.graph):
                    # A function body (a cond branch) colocating with an op of an outer graph,
                    # as an optimizer's update does with its variable: the body reads that op's
                    # value through a capture, so there is nothing to colocate with here.
                    yield
                    return
                raise ValueError(f"colocate_with: {op!r} is not an element of this graph.")
            entry = (op.colocation_groups(), op.device)
        with self._colocation_scope(entry, ignore_existing):
            yield

    @contextlib.contextmanager
    def _colocation_scope(self, entry, ignore_existing=False):
        """Pushes `entry`, (colocation groups, device) or None, on the colocation stack and
        starts an empty device stack, as TensorFlow does."""
        ctx = self._ctx()
        old_colocation, old_devices = ctx.colocation_stack, ctx.device_stack
        ctx.colocation_stack = ([] if ignore_existing else old_colocation) + (
            [entry] if entry is not None else [])
        ctx.device_stack = []
        try:
            yield
        finally:
            ctx.colocation_stack, ctx.device_stack = old_colocation, old_devices

    def _colocation_attrs(self, attrs, device):
        """Adds the colocation groups in scope to `attrs["_class"]`; an op without a device of
        its own takes the innermost colocated op's device."""
        stack = self._ctx().colocation_stack
        if not stack:
            return attrs, device
        groups = set(attrs.get("_class", []))
        for entry_groups, _ in stack:
            groups.update(entry_groups)
        if not device:
            device = next((d for _, d in reversed(stack) if d), "")
        return dict(attrs, _class=sorted(groups)), device

    # --- collections --------------------------------------------------------------------------
    def add_to_collection(self, name, value):
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for name in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        with self._lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        import re
        pattern = re.compile(scope)
        return [item for item in items if hasattr(item, "name") and pattern.match(item.name)]

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name):
        with self._lock:
            self._collections.pop(name, None)

    # --- building ---------------------------------------------------------------------------------
    # A function body (framework/func_graph.py) captures tensors of outer graphs; a plain graph
    # rejects them.
    _captures_outer_tensors = False

    def _capture(self, tensor, op_type):
        raise ValueError(f"Tensor {tensor!r} must be from the same graph as the other inputs "
                         f"of {op_type}.")

    def _add_op(self, op_type, inputs, attrs, name, exact_name=False):
        ctx = self._ctx()
        with self._lock:
            if name.endswith("/"):
                # TensorFlow's convention: a scope name (as `name_scope` yields it) names the op
                # exactly, so `op(..., name=scope)` gives the scope's own name to its result.
                node_name = name[:-1]
            else:
                node_name = name if exact_name else self.unique_name(name)
            control = [c._node for c in ctx.control_deps]
            device, device_functions = self._device_before_functions()
            attrs, device = self._colocation_attrs(attrs, device)
            if op_type in self._gradient_override_map:
                attrs = dict(attrs, _gradient_op_type=self._gradient_override_map[op_type])
            try:
                node = self._c.add_node(op_type, node_name, inputs, control, attrs, device,
                                        _creation_site())
            except _C.StatusError as e:
                raise _errors.from_status_error(e, as_op_error=False) from None
            self._sync_ops()
            op = self._ops[node.id]
            if device_functions:
                self._apply_device_functions(op, device_functions)
            return op

    def _capture_eager(self, tensor, op_type):
        raise TypeError(f"An eager tensor was passed to {op_type} in a graph; graph ops take "
                        "graph tensors (tf.function bodies capture eager tensors).")

    def _sync_ops(self):
        """Wraps nodes the C++ side added (gradients, for instance) in Operations."""
        with self._lock:
            for node_id in range(len(self._ops), self._c.num_nodes):
                self._ops.append(Operation(self, self._c.node(node_id)))


def _op_to_colocate_with(op):
    """The Operation to colocate with: a Variable's handle op, a Tensor's op."""
    handle = getattr(op, "handle", None)
    if isinstance(handle, Tensor):
        return handle.op
    if hasattr(op, "_as_graph_element") and not isinstance(op, (Tensor, Operation)):
        op = op._as_graph_element()
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, Operation):
        raise TypeError(f"colocate_with expects an Operation, Tensor or Variable, got "
                        f"{type(op).__name__}.")
    return op


def _device_spec_string(spec):
    if hasattr(spec, "to_string"):
        return spec.to_string()
    if not isinstance(spec, str):
        raise TypeError(f"tf.device expects a string or DeviceSpec, got {type(spec).__name__}")
    return _merge_device_strings("", spec)


def _merge_device_strings(outer, inner):
    """Merges nested device scopes field by field (validated by the C++ parser)."""
    try:
        return _C.merge_device_specs(outer, inner)
    except _C.StatusError as e:
        raise _errors.from_status_error(e, as_op_error=False) from None


class _DefaultGraphStack(threading.local):
    def __init__(self):
        super().__init__()
        self.stack = []

    @contextlib.contextmanager
    def get_controller(self, graph):
        self.stack.append(graph)
        try:
            yield graph
        finally:
            if self.stack and self.stack[-1] is graph:
                self.stack.pop()
            elif graph in self.stack:
                self.stack.remove(graph)


_default_graph_stack = _DefaultGraphStack()
_global_default_graph = None


def get_default_graph():
    """The graph new ops go to."""
    if _default_graph_stack.stack:
        return _default_graph_stack.stack[-1]
    return _get_global_default_graph()


def _get_global_default_graph():
    global _global_default_graph
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """Clears the default graph. Not allowed inside a `with g.as_default():` block."""
    global _global_default_graph
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If "
                             "you need a cleared graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()


def set_random_seed(seed):
    """Sets the graph-level random seed of the default graph; executing eagerly, also restarts
    the eager random sequences, so that the program's draws replay (as in TensorFlow)."""
    get_default_graph().seed = seed
    if executing_eagerly():
        from flowstone.ops import random_ops
        random_ops.reset_eager_seeds()


@contextlib.contextmanager
def _name_scope_v1(name, default_name=None, values=None):
    graph = _graph_from_values(values)
    scope_name = default_name if name is None else name
    # tf.name_scope(None) resets to the top scope, a TF1 idiom; with values it is an error.
    if scope_name is None and values is not None:
        raise ValueError("At least one of name (%s) and default_name (%s) must be provided."
                         % (name, default_name))
    with graph.as_default(), graph.name_scope(scope_name) as scope:
        yield scope


class _EagerScopes(threading.local):
    def __init__(self):
        self.stack = []


_eager_scopes = _EagerScopes()


def eager_name_scope():
    """The name scope eager code is in ("a/b/"), as TensorFlow 2 tracks it for summary tags."""
    return _eager_scopes.stack[-1] if _eager_scopes.stack else ""


class name_scope:  # noqa: N801 - TensorFlow's name
    """`with tf.name_scope("layer1") as scope:` prefixes op names with 'layer1/'."""

    def __init__(self, name, default_name=None, values=None):
        self._args = (name, default_name, values)
        self._cm = None
        self._pushed = False

    def __enter__(self):
        if _context.state.on() and executing_eagerly():
            # Eager ops have no names to make unique: the scope is only a string that nests
            # (TensorFlow 2 keeps the stack for tf.summary tags), "" or "x/" restarting it.
            self._cm = None
            name, default_name, _ = self._args
            scope = default_name if name is None else name
            if not scope:
                full = ""
            elif scope.endswith("/"):
                full = scope
            else:
                full = eager_name_scope() + scope + "/"
            _eager_scopes.stack.append(full)
            self._pushed = True
            return full
        self._cm = _name_scope_v1(*self._args)
        return self._cm.__enter__()

    def __exit__(self, *exc):
        if self._pushed:
            _eager_scopes.stack.pop()
            self._pushed = False
        return False if self._cm is None else self._cm.__exit__(*exc)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def executing_eagerly():
    """Whether ops created now run at once: eager execution is on and no graph is being built
    (a `with g.as_default():` block of another graph, or a tf.function being traced). Name scopes
    enter the global default graph, which in eager mode only holds scopes and device stacks."""
    if not _context.state.on():
        return False
    stack = _default_graph_stack.stack
    return not stack or stack[-1] is _global_default_graph


@tf_export("init_scope")
@contextlib.contextmanager
def init_scope():
    """Where variables and their initializers are built, as in TensorFlow: in the outermost
    graph (out of any function body being traced), free of the control dependencies in scope,
    under the current name scope."""
    graph = get_default_graph()
    scope = graph.get_name_scope()
    outer = graph
    while getattr(outer, "outer_graph", None) is not None:
        outer = outer.outer_graph
    if getattr(outer, "_eager_outer", False):
        # A tf.function traced while executing eagerly: variables are made eagerly.
        outer = _get_global_default_graph()
    with outer.as_default(), outer.name_scope(scope + "/" if scope else ""), \
            outer.control_dependencies(None):
        yield


def device(device_name_or_function):
    """Pins ops created in the block to a device; nested scopes merge, None clears."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    """Ops created in the block share a device with `op`; see Graph.colocate_with."""
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def _graph_from_values(values):
    default = get_default_graph()
    if default._captures_outer_tensors:
        return default  # a function body being traced: outer values are captured into it
    if values:
        for v in (values if isinstance(values, (list, tuple)) else [values]):
            if isinstance(v, Tensor) and v._op is not None:  # an EagerTensor has no graph
                return v.graph
            if isinstance(v, Operation):
                return v.graph
    return get_default_graph()


# --- tensor conversion ----------------------------------------------------------------------

_conversion_functions = []


def register_tensor_conversion(cls, fn, priority=100):
    """Registers fn(value, dtype=None, name=None) converting instances of cls to Tensors; lower
    priorities are tried first, and equal ones in registration order."""
    _conversion_functions.append((priority, len(_conversion_functions), cls, fn))
    _conversion_functions.sort(key=lambda entry: entry[:2])


@tf_export("register_tensor_conversion_function")
def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """TensorFlow's form: conversion_func(value, dtype=None, name=None, as_ref=False) returns a
    Tensor for instances of `base_type` (a type or tuple of types)."""
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")

    def convert(value, dtype=None, name=None):
        return conversion_func(value, dtype=dtype, name=name, as_ref=False)

    register_tensor_conversion(base_type, convert, priority)


@tf_export("debugging.is_numeric_tensor", "is_numeric_tensor")
def is_numeric_tensor(tensor):
    """Whether `tensor` is a Tensor of a numeric (floating, integer, complex or quantized)
    dtype."""
    dtype = getattr(tensor, "dtype", None)
    return isinstance(tensor, Tensor) and (dtype.is_floating or dtype.is_integer or
                                           dtype.is_complex or dtype.is_quantized)


def is_tensor(x):
    return isinstance(x, Tensor)


def _string_array(value):
    """An object array of bytes for a (nested) value of bytes and str; str is encoded as UTF-8,
    as TensorFlow does. None when an element is neither."""
    arr = np.asarray(value, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for index, item in np.ndenumerate(arr):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, bytes):
            return None
        out[index] = bytes(item)
    return out


def _dimension_value(dim):
    if dim.value is None:
        raise ValueError(f"Cannot convert an unknown Dimension to a Tensor: {dim}")
    return dim.value


def _without_dimensions(value):
    """A Dimension, or a shape list holding some (TF1's `[-1, x.shape[1]]` after
    tf.disable_v2_tensorshape()), as ints."""
    if isinstance(value, Dimension):
        return _dimension_value(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Dimension) for v in value):
        return [_dimension_value(v) if isinstance(v, Dimension) else v for v in value]
    return value


def _infer_numpy(value, dtype):
    """The numpy array for a Python or numpy value, with TensorFlow's default dtypes: Python
    floats become float32 and Python ints int32 (int64 if they do not fit); bytes and str become
    an object array of bytes (tf.string)."""
    value = _without_dimensions(value)
    if dtype is not None and dtype == _dtypes.string:
        arr = _string_array(value)
        if arr is None:
            raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider "
                            "casting elements to a supported type.")
        return arr
    if dtype is not None:
        np_dtype = dtype.as_numpy_dtype
        if isinstance(value, np.ndarray) or np.isscalar(value) or isinstance(value, (list, tuple)):
            arr = np.asarray(value)
            if arr.dtype.kind in "OUS":
                raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. "
                                f"Contents: {value!r}. Consider casting elements to a "
                                "supported type.")
            if dtype.is_integer and arr.dtype.kind == "f" and not np.all(np.equal(np.mod(arr, 1), 0)):
                raise TypeError(f"Expected {dtype.name}, but got {value!r} of type "
                                f"'{type(value).__name__}' with non-integer values.")
            if dtype.is_integer and arr.dtype.kind in "iu" and arr.size:
                info = np.iinfo(np_dtype)
                if arr.min() < info.min or arr.max() > info.max:
                    raise TypeError(f"Value {value!r} does not fit in {dtype.name}.")
            if dtype.is_bool and arr.dtype.kind != "b":
                raise TypeError(f"Expected bool, but got {value!r} of type "
                                f"'{type(value).__name__}'.")
            return arr.astype(np_dtype, copy=False)
        raise TypeError(f"Failed to convert object of type {type(value)} to Tensor.")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
    else:
        try:
            arr = np.asarray(value)
        except UnicodeDecodeError:  # str mixed with non-ASCII bytes: strings all the same
            arr = np.asarray(value, dtype=object)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype.kind == "i":
            if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
                arr = arr.astype(np.int32)
            else:
                arr = arr.astype(np.int64)
    if arr.dtype.kind in "OUS":
        # The original value, not numpy's coercion (which turns [b"a", 1] into bytes).
        strings = _string_array(value)
        if strings is not None:
            return strings
        raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: "
                        f"{value!r}. Consider casting elements to a supported type.")
    mapped = _dtypes._FROM_NUMPY.get(arr.dtype)
    if mapped is None or mapped._enum is None:
        # Numeric numpy types the core lacks (int16, uint32, ...) map to the nearest one it has.
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float32 if arr.dtype.itemsize <= 4 else np.float64)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int32 if arr.dtype.itemsize < 4 else np.int64)
        else:
            raise TypeError(f"Unsupported numpy dtype {arr.dtype} for a Tensor.")
    return arr


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A Const op holding `value` (a Python scalar or list, or a numpy array)."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if dtype is not None:
        _dtypes.core_enum(dtype)  # a dtype the core lacks fails here, saying so
    arr = _infer_numpy(value, dtype)
    if shape is not None:
        shape = [int(d) for d in as_shape(shape).as_list()]
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif verify_shape and list(arr.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
        else:
            if arr.size != int(np.prod(shape)):
                raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor "
                                f"{arr!r} (converted from {value!r}) has {arr.size} elements, "
                                f"but got `shape` {tuple(shape)} with {int(np.prod(shape))} "
                                "elements).")
            arr = arr.reshape(shape)
    result_dtype = dtype if dtype is not None else _dtypes._FROM_NUMPY[arr.dtype]
    if result_dtype == _dtypes.bfloat16:
        from flowstone.ops import math_ops
        const = apply_op("Const", [], {"value": arr.astype(np.float32), "dtype": _dtypes.float32},
                         name=name).outputs[0]
        return math_ops.cast(const, _dtypes.bfloat16)
    arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
    return apply_op("Const", [], {"value": arr, "dtype": result_dtype},
                    name=name).outputs[0]


def _holds_tensor(value):
    return any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _holds_tensor(v))
               for v in value)


def _first_tensor_dtype(value):
    for v in value:
        if isinstance(v, Tensor):
            return v.dtype
        if isinstance(v, (list, tuple)):
            found = _first_tensor_dtype(v)
            if found is not None:
                return found
    return None


def _autopack(value, dtype, name):
    """A (nested) list holding tensors as one tensor, stacked as TensorFlow's convert_to_tensor
    does: the other entries become constants of the tensors' dtype."""
    dtype = dtype or _first_tensor_dtype(value)

    def pack(items, scope_name):
        # As TensorFlow names them: the Pack op is the scope, the entries inside it by index.
        with name_scope(scope_name) as scope:
            elements = []
            for i, item in enumerate(items):
                if isinstance(item, Tensor):
                    if item.dtype != dtype:
                        raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                        f"{item.dtype!r} to {dtype!r} (Tensor is: {item!r})")
                    elements.append(item)
                elif isinstance(item, (list, tuple)) and _holds_tensor(item):
                    elements.append(pack(item, str(i)))
                else:
                    elements.append(convert_to_tensor(item, dtype=dtype, name=str(i)))
            return apply_op("Pack", [elements], {"axis": 0}, name=scope.rstrip("/"),
                            exact_name=True).outputs[0]

    return pack(value, name or "packed")


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, dtype_hint=None):
    """Converts Tensors, Variables, numpy arrays and Python values to a Tensor."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with "
                             f"dtype {value.dtype.name}: {value!r}")
        return value
    for _, _, cls, fn in _conversion_functions:
        if isinstance(value, cls):
            return fn(value, dtype=dtype, name=name)
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name={name!r}, as_ref=False)")
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return _autopack(value, dtype, name)
    preferred = preferred_dtype or dtype_hint
    if dtype is None and preferred is not None:
        try:
            return constant(value, dtype=_dtypes.as_dtype(preferred), name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def _attr_for_c(value):
    if isinstance(value, _dtypes.DType):
        return _dtypes.core_enum(value)
    if isinstance(value, TensorShape):
        return value.as_proto_dims()
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], _dtypes.DType):
        return [_dtypes.core_enum(v) for v in value]
    return value


# Objects told about each op apply_op makes (tf.debugging.enable_check_numerics adds one):
# `on_input(tensor, op_type)` returns the tensor a graph op reads in its place, and
# `on_output(op_type, op)` sees each op (graph or eager) once made.
_op_callbacks = []


def apply_op(op_type, inputs, attrs=None, name=None, exact_name=False):
    """Adds an op to the graph of its inputs (or the default graph) and returns it.

    `inputs` items are Tensors (anything convert_to_tensor accepts) or lists of them for list
    arguments. The C++ graph checks dtypes, fills attr defaults and infers static shapes.
    """
    if _context.state.on() and executing_eagerly():
        op = _context.state.execute(op_type, inputs, attrs, name)
        for callback in _op_callbacks:
            callback.on_output(op_type, op)
        return op
    flat = []
    for item in inputs:
        if isinstance(item, (list, tuple)):
            for sub in item:
                flat.append(sub)
        else:
            flat.append(item)
    # Inside a function body being traced, ops go to the body, which captures outer tensors.
    graph = get_default_graph()
    if not graph._captures_outer_tensors:
        graph = next((t.graph for t in flat if isinstance(t, Tensor) and t._op is not None),
                     graph)
    converted = []
    for t in flat:
        if not isinstance(t, Tensor):
            with graph.as_default():
                t = convert_to_tensor(t)
        if t._op is None:  # an EagerTensor: a tf.function body captures it
            t = graph._capture_eager(t, op_type)
        elif t.graph is not graph:
            t = graph._capture(t, op_type)
        for callback in _op_callbacks:
            t = callback.on_input(t, op_type)
        converted.append(t._as_node_output())
    c_attrs = {k: _attr_for_c(v) for k, v in (attrs or {}).items() if v is not None}
    op = graph._add_op(op_type, converted, c_attrs, name or op_type, exact_name=exact_name)
    for callback in _op_callbacks:
        callback.on_output(op_type, op)
    return op
