"""Variables: tf.Variable, the variable collections and their initializers (tf.get_variable and
variable scopes are in variable_scope.py).

A variable is a handle op in the graph; its value lives in each session (see variable_ops.cc).
"""

import contextlib
import functools
import inspect
import weakref

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.ops import basic_ops

__all__ = [
    "Variable", "global_variables", "trainable_variables", "local_variables",
    "model_variables", "global_variables_initializer", "initialize_all_variables",
    "local_variables_initializer", "variables_initializer", "report_uninitialized_variables",
    "is_variable_initialized", "assign", "assign_add", "assign_sub",
]


class _VariableMetaclass(type):
    """Sends `tf.Variable(...)` through the creators of tf.variable_creator_scope, innermost
    first; each gets the constructor's arguments as keywords and the next creator to call."""

    def __call__(cls, *args, **kwargs):
        creators = _ops.get_default_graph()._ctx().variable_creators
        if cls is not Variable or not creators:
            return super().__call__(*args, **kwargs)
        arguments = _CONSTRUCTOR.bind(None, *args, **kwargs).arguments
        arguments.pop("self")

        def create(**keywords):
            return type.__call__(cls, **keywords)

        for creator in creators:
            create = functools.partial(creator, create)
        return create(**{name: arguments.get(name, parameter.default)
                         for name, parameter in list(_CONSTRUCTOR.parameters.items())[1:]})


class Variable(metaclass=_VariableMetaclass):
    """A value kept across runs: `w = tf.Variable(tf.zeros([3]), name="w")`."""

    _eager = False  # made while executing eagerly: the value lives in the eager context

    def __init__(self, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        init_from_fn = callable(initial_value)
        self._trainable = True if trainable is None else bool(trainable)
        self._constraint = constraint
        dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        # Like TensorFlow's, a variable ignores the control dependencies in scope and is made
        # in the outermost graph (see init_scope).
        with _ops.init_scope():
            self._eager = _ops.executing_eagerly()
            if self._eager:
                self._init_eager(initial_value, init_from_fn, dtype, shape, validate_shape, name)
            else:
                self._init_from_args(initial_value, init_from_fn, dtype, shape, validate_shape,
                                     name, collections)

    def _init_eager(self, initial_value, init_from_fn, dtype, shape, validate_shape, name):
        """An eager variable: its handle op runs now, under a name no other variable has (the
        value lives in the eager context), and the initial value is assigned at once."""
        global _eager_variable_count
        value = initial_value() if init_from_fn else initial_value
        if isinstance(value, _ops.Tensor) and value._op is not None:
            value = _value_of_traced_tensor(value)
        value = _ops.convert_to_tensor(value, dtype=dtype)
        var_shape = as_shape(shape) if shape is not None else (
            value.shape if validate_shape else TensorShape(None))
        if validate_shape and not var_shape.is_compatible_with(value.shape):
            raise ValueError(f"Shape of initial value {value.shape} is not compatible with "
                             f"the variable shape {var_shape}.")
        self._dtype = value.dtype
        self._shape = var_shape
        self._initial_value = value
        # As in TensorFlow 2, an eager variable's name carries the name scope it was made in
        # (`dense/kernel:0`), not made unique.
        scope = _ops.eager_name_scope() or _ops.get_default_graph().get_name_scope()
        scope = scope.rstrip("/")
        self._name = f"{scope}/{name or 'Variable'}" if scope else (name or "Variable")
        _eager_variable_count += 1
        self._handle = _ops.apply_op(
            "VarHandleOp", [], {"dtype": self._dtype, "shape": var_shape,
                                "shared_name": f"{self._name}_eager_{_eager_variable_count}"},
            name=self._name).outputs[0]
        _ops.apply_op("AssignVariableOp", [self._handle, value], {"dtype": self._dtype})
        eager_variables_by_handle_id[self._handle._handle.id] = self
        self._initializer_op = None
        self._value = None

    def _init_from_args(self, initial_value, init_from_fn, dtype, shape, validate_shape, name,
                        collections):
        graph = _ops.get_default_graph()
        with graph.name_scope(name or "Variable") as scope:
            handle_name = scope[:-1]
            # An initializer built here is colocated with the variable's handle, made below.
            initializer_scope = (graph._colocation_scope(([f"loc:@{handle_name}"], ""))
                                 if init_from_fn else contextlib.nullcontext())
            with initializer_scope, graph.name_scope("Initializer"):
                value = initial_value() if init_from_fn else initial_value
                value = _ops.convert_to_tensor(value, dtype=dtype, name="initial_value")
            if shape is not None:
                var_shape = as_shape(shape)
            elif validate_shape:
                var_shape = value.shape
            else:
                var_shape = TensorShape(None)
            if validate_shape and not var_shape.is_compatible_with(value.shape):
                raise ValueError(f"Shape of initial value {value.shape} is not compatible with "
                                 f"the variable shape {var_shape}.")
            self._dtype = value.dtype
            self._shape = var_shape
            self._initial_value = value
            self._handle = _ops.apply_op(
                "VarHandleOp", [],
                {"dtype": self._dtype, "shape": var_shape, "shared_name": handle_name},
                name=handle_name, exact_name=True).outputs[0]
            self._initializer_op = _ops.apply_op(
                "AssignVariableOp", [self._handle, value], {"dtype": self._dtype},
                name="Assign")
            with graph.name_scope("Read"):
                self._value = self._read(name="ReadVariableOp")
        self._name = handle_name
        if collections is None:
            collections = [_ops.GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if self._trainable and _ops.GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(_ops.GraphKeys.TRAINABLE_VARIABLES)
        graph.add_to_collections(collections, self)

    def _init_from_proto(self, variable_def, import_scope):
        """Wraps the nodes a VariableDef names (an imported MetaGraphDef's variable) without
        adding any."""
        graph = _ops.get_default_graph()

        def element(name, allow_tensor=True):
            scoped = f"{import_scope}/{name}" if import_scope else name
            return graph.as_graph_element(scoped, allow_tensor=allow_tensor,
                                          allow_operation=not allow_tensor)
        self._handle = element(variable_def.variable_name)
        if self._handle.op.type == "ReadVariableOp":
            # A TF1 reference variable, made a resource variable by the importer: its name is
            # the read of the handle (see RewriteRefVariables in src/graph/graph_def.cc).
            self._handle = self._handle.op.inputs[0]
        if self._handle.op.type != "VarHandleOp":
            raise ValueError(f"Variable {variable_def.variable_name} of the VariableDef is a "
                             f"{self._handle.op.type}, not a resource variable's VarHandleOp.")
        self._initializer_op = element(variable_def.initializer_name, allow_tensor=False)
        self._value = element(variable_def.snapshot_name)
        self._initial_value = (element(variable_def.initial_value_name)
                               if variable_def.initial_value_name else None)
        self._dtype = _dtypes.from_enum(self._handle.op._node.attr("dtype"))
        self._shape = as_shape(self._handle.op._node.attr("shape"))
        # The checkpoint key: the VariableDef's name, which for an imported reference variable
        # is not its handle's.
        name = variable_def.variable_name.rsplit(":", 1)[0]
        self._name = f"{import_scope}/{name}" if import_scope else name
        self._trainable = variable_def.trainable
        self._constraint = None

    # --- reading ----------------------------------------------------------------------------
    def _read(self, name="ReadVariableOp"):
        if self._eager:  # eager: tapes watch trainable variables as they are read
            if self._trainable:
                _C.eager_variable_accessed(self._handle._handle)
        return _ops.apply_op("ReadVariableOp", [self._handle], {
            "dtype": self._dtype, "value_shape": self._shape}, name=name).outputs[0]

    def value(self):
        return self._read() if self._eager else self._value

    def read_value(self):
        """A fresh read, ordered after the control dependencies in scope."""
        if self._eager:
            return self._read()
        with self.graph.name_scope("Read"):
            return self._read()

    def numpy(self):
        """The current value (eager variables)."""
        if not self._eager:
            raise NotImplementedError("numpy() is only available when eager execution is "
                                      "enabled.")
        return self._read().numpy()

    def _as_graph_element(self):
        return self.value()

    def _fetch_value(self):
        return self.value()

    # --- properties ---------------------------------------------------------------------------
    name = property(lambda self: f"{self._name}:0")
    op = property(lambda self: self._handle.op)
    handle = property(lambda self: self._handle)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._handle.graph)
    device = property(lambda self: self._handle.device)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)

    def get_shape(self):
        return self._shape

    def eval(self, session=None):
        return self._value.eval(session=session)

    def initialized_value(self):
        with _ops.control_dependencies([self._initializer_op]):
            return self.read_value()

    def is_initialized(self, name=None):
        return _ops.apply_op("VarIsInitializedOp", [self._handle],
                             name=name or f"{self._name}/IsInitialized/VarIsInitializedOp").outputs[0]

    # --- writing ---------------------------------------------------------------------------
    def _update(self, op_type, value, use_locking, name, read_value):
        value = _ops.convert_to_tensor(value, dtype=self._dtype)
        if not self._shape.is_compatible_with(value.shape):
            raise ValueError(f"Cannot assign a value of shape {value.shape} to variable "
                             f"'{self._name}' of shape {self._shape}.")
        op = _ops.apply_op(op_type, [self._handle, value], {"dtype": self._dtype},
                           name=name or op_type)
        if _ops.executing_eagerly():  # the update has happened (in a trace it is an op)
            return self._read() if read_value else None
        if not read_value:
            return op
        with _ops.control_dependencies([op]):
            return self.read_value()

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._update("AssignVariableOp", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignAddVariableOp", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignSubVariableOp", delta, use_locking, name, read_value)

    def count_up_to(self, limit):
        """The value before incrementing this scalar integer variable by one; running it once
        the value reached `limit` raises OutOfRangeError (tf.train.limit_epochs counts with it)."""
        return _ops.apply_op("ResourceCountUpTo", [self._handle],
                             {"limit": int(limit), "T": self._dtype},
                             name="ResourceCountUpTo").outputs[0]

    def load(self, value, session=None):
        from flowstone.client.session import get_default_session
        session = session or get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        placeholder = basic_ops.placeholder(self._dtype, self._shape)
        session.run(self.assign(placeholder, read_value=False), {placeholder: value})

    def __repr__(self):
        if self._eager:
            from flowstone.framework.eager import _numpy_text
            return (f"<tf.Variable '{self.name}' shape={self._shape} "
                    f"dtype={self._dtype.name}, numpy={_numpy_text(self._read(), is_repr=True)}>")
        return (f"<tf.Variable '{self.name}' shape={self._shape} "
                f"dtype={self._dtype.name}>")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __iter__(self):
        return iter(self.value())

    def __array__(self, dtype=None):
        if self._eager:
            return self._read().__array__(dtype)
        raise TypeError(f"Variable {self.name} has no value outside a session; use "
                        "sess.run(var) or var.eval().")


def _value_of_traced_tensor(tensor):
    """The value of a graph tensor given as the initial value of a variable that a tf.function
    creates on its first call (`tf.Variable(tf.ones([3]))` in the traced body): computed by a
    session on the body, which fails when the value depends on the function's arguments."""
    from flowstone.client.session import Session
    with Session(graph=tensor.graph) as session:
        return session.run(tensor)


_CONSTRUCTOR = inspect.signature(Variable.__init__)
# Eager variables made so far: each gets a shared_name of its own in the eager context.
_eager_variable_count = 0


def eager_variable_count():
    """How many eager variables were made so far (tf.function checks it around a trace)."""
    return _eager_variable_count


# Eager variables by the id of their handle tensor, which is what gradient tapes watch.
eager_variables_by_handle_id = weakref.WeakValueDictionary()


def _delegate(name):
    def method(self, *args, **kwargs):
        return getattr(self.value(), name)(*args, **kwargs)
    method.__name__ = name
    return method


# Arithmetic on a variable works on its value, as in TensorFlow.
for _op_name in ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                 "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
                 "__rmod__", "__pow__", "__rpow__", "__neg__", "__abs__", "__matmul__",
                 "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__or__",
                 "__invert__"]:
    setattr(Variable, _op_name, _delegate(_op_name))


# A slice of a variable (`v[1:3]`) is a tensor of its value that can also be assigned to
# (`v[1:3].assign(x)`), as in TensorFlow. The slice's tensor takes one of these classes, which
# add only `assign`; what it slices is kept beside it, by the tensor's id, while it lives.
_variable_slices = {}


class _VariableSliceMixin:
    __slots__ = ()

    def assign(self, value, name=None):
        """Assigns `value` to this slice of the variable; returns the variable's new value."""
        from flowstone.ops import array_ops
        variable, slice_spec = _variable_slices[id(self)]
        return array_ops.strided_slice_assign(variable, slice_spec, value, name=name)


class _GraphVariableSlice(_VariableSliceMixin, _ops.Tensor):
    __slots__ = ()


@functools.lru_cache(maxsize=None)
def _eager_variable_slice_class():
    from flowstone.framework import eager  # loaded with eager mode's machinery

    class _EagerVariableSlice(_VariableSliceMixin, eager.EagerTensor):
        __slots__ = ()

    return _EagerVariableSlice


def _variable_getitem(self, slice_spec):
    from flowstone.framework import eager
    from flowstone.ops import array_ops
    sliced = array_ops._slice_helper(self.value(), slice_spec)
    sliced.__class__ = (_eager_variable_slice_class() if isinstance(sliced, eager.EagerTensor)
                        else _GraphVariableSlice)
    _variable_slices[id(sliced)] = (self, slice_spec)
    weakref.finalize(sliced, _variable_slices.pop, id(sliced), None)
    return sliced


Variable.__getitem__ = _variable_getitem


def _variable_to_tensor(value, dtype=None, name=None):
    if dtype is not None and dtype != value.dtype:
        raise ValueError(f"Incompatible type conversion requested to type '{dtype.name}' for "
                         f"variable of type '{value.dtype.name}'")
    return value.value()


_ops.register_tensor_conversion(Variable, _variable_to_tensor)


# --- collections and initializers ------------------------------------------------------

def global_variables(scope=None):
    return _ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return _ops.get_collection(_ops.GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None):
    return _ops.get_collection(_ops.GraphKeys.MODEL_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op that initializes the given variables."""
    if var_list:
        return basic_ops.group(*[v.initializer for v in var_list], name=name)
    return basic_ops.no_op(name=name)


def global_variables_initializer():
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init_1")


def is_variable_initialized(variable):
    return variable.is_initialized()


class _UninitializedReport:
    """Fetching it gives the names of the uninitialized variables as a numpy array of bytes,
    like TensorFlow's string tensor."""

    def __init__(self, mask, names):
        self._mask = mask
        self._names = np.array([n.encode() for n in names], dtype=object)

    def _as_graph_element(self):
        return self._mask

    def _fetch_postprocess(self, mask):
        return self._names[mask.astype(bool)] if self._names.size else self._names

    op = property(lambda self: self._mask.op)
    name = property(lambda self: self._mask.name)

    def eval(self, session=None):
        return self._fetch_postprocess(self._mask.eval(session=session))


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A fetchable listing the names of the variables without a value."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        mask = _ops.constant(np.zeros([0], dtype=bool), name=name)
        return _UninitializedReport(mask, [])
    mask = _ops.apply_op("ReportUninitializedVariables", [[v.handle for v in var_list]],
                         name=name).outputs[0]
    return _UninitializedReport(mask, [v._name for v in var_list])


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return ref.assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    return ref.assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    return ref.assign_sub(value, name=name)
