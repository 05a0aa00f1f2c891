"""tf.keras.backend: the session Keras runs in, the learning phase, and Keras's math helpers.

Keras in graph mode (as in TF 1.15) builds every layer into the default graph and runs it in one
session per graph; `get_session` creates that session lazily and initializes the variables Keras
created before handing it out, so user code never calls `global_variables_initializer`.
"""

import builtins
import collections
import weakref

import numpy as np

import flowstone as tf
from flowstone.framework import ops as ops_module
from flowstone.framework.eager import EagerTensor
from flowstone.framework.func_graph import FuncGraph
from flowstone.util.tf_export import tf_export

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"

_SESSION = None                       # the session set_session gave or get_session made
_GRAPH_STATE = weakref.WeakKeyDictionary()   # graph -> _GraphState


class _GraphState:
    """Per-graph Keras bookkeeping: name counters, the learning phase, variables to initialize."""

    def __init__(self):
        self.uids = collections.defaultdict(int)
        self.learning_phase = None
        self.fixed_learning_phase = None
        self.uninitialized = []
        self.created = []     # every variable Keras made in this graph, in order
        self.assigners = {}   # variable -> (placeholder, assign op), for set_value


def _state(graph=None):
    graph = graph or get_graph()
    state = _GRAPH_STATE.get(graph)
    if state is None:
        state = _GRAPH_STATE[graph] = _GraphState()
    return state


# --- eager mode --------------------------------------------------------------------------------
_KERAS_GRAPH = None   # eager mode: the private graph Keras tensors (tf.keras.Input) live in


def _is_eager_variable(variable):
    return bool(getattr(variable, "_eager", False))


@tf_export("keras.backend.get_graph")
def get_graph():
    """The graph Keras builds symbolic models in: the default graph in graph mode; while
    executing eagerly, a private function graph of its own (as tf-keras's), whose variables are
    made eagerly and read there as captures. A model built in it runs on eager tensors by calling
    its layers again, eagerly or inside a tf.function trace."""
    global _KERAS_GRAPH
    if not tf.executing_eagerly():
        return tf.get_default_graph()
    if _KERAS_GRAPH is None:
        outer = ops_module.Graph()
        outer._eager_outer = True   # variables made in it are eager ones (see init_scope)
        _KERAS_GRAPH = FuncGraph("keras_graph", outer)
    return _KERAS_GRAPH


# --- configuration -----------------------------------------------------------------------------
@tf_export("keras.backend.floatx")
def floatx():
    return _FLOATX


@tf_export("keras.backend.set_floatx")
def set_floatx(value):
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown `floatx` value: {value}. Expected one of {{'float16', "
                         "'float32', 'float64'}")
    _FLOATX = str(value)


@tf_export("keras.backend.epsilon")
def epsilon():
    return _EPSILON


@tf_export("keras.backend.set_epsilon")
def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


@tf_export("keras.backend.image_data_format")
def image_data_format():
    return _IMAGE_DATA_FORMAT


@tf_export("keras.backend.set_image_data_format")
def set_image_data_format(data_format):
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown `data_format`: {data_format}. Expected one of "
                         "{'channels_first', 'channels_last'}")
    _IMAGE_DATA_FORMAT = str(data_format)


@tf_export("keras.backend.get_uid")
def get_uid(prefix=""):
    """1, 2, 3... per prefix and graph: the counter behind layer names ('dense', 'dense_1')."""
    state = _state()
    state.uids[prefix] += 1
    return state.uids[prefix]


@tf_export("keras.backend.reset_uids")
def reset_uids():
    _state().uids.clear()


# --- the learning phase ------------------------------------------------------------------------
@tf_export("keras.backend.learning_phase")
def learning_phase():
    """A scalar bool placeholder (False unless fed), or the value set_learning_phase fixed;
    while executing eagerly, that value or 0 (inference), as in tf-keras."""
    if tf.executing_eagerly():
        return learning_phase_value()
    state = _state()
    if state.fixed_learning_phase is not None:
        return state.fixed_learning_phase
    if state.learning_phase is None:
        graph = tf.get_default_graph()
        with graph.name_scope(None), graph.control_dependencies(None):
            state.learning_phase = tf.placeholder_with_default(
                False, shape=[], name="keras_learning_phase")
    return state.learning_phase


def learning_phase_value():
    """The learning phase eager mode runs layers in: the one set_learning_phase fixed, else 0."""
    fixed = None if _KERAS_GRAPH is None else _state(_KERAS_GRAPH).fixed_learning_phase
    return 0 if fixed is None else fixed


@tf_export("keras.backend.set_learning_phase")
def set_learning_phase(value):
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _state().fixed_learning_phase = int(value)


def symbolic_learning_phase():
    """The placeholder itself, even when set_learning_phase fixed a value (what fit feeds)."""
    state = _state()
    fixed, state.fixed_learning_phase = state.fixed_learning_phase, None
    try:
        return learning_phase()
    finally:
        state.fixed_learning_phase = fixed


@tf_export("keras.backend.in_train_phase")
def in_train_phase(x, alt, training=None):
    """`x` in the training phase, else `alt`; a fixed phase picks statically (no cond op)."""
    if training is None:
        training = learning_phase()
    if isinstance(training, (bool, int)):
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    x_value = x() if callable(x) else x
    alt_value = alt() if callable(alt) else alt
    return tf.cond(training, lambda: tf.identity(x_value), lambda: tf.identity(alt_value))


@tf_export("keras.backend.in_test_phase")
def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


# --- the session -------------------------------------------------------------------------------
def track_variable(variable):
    """Remembers a variable Keras made, so get_session initializes it before first use (eager
    variables are initialized when made)."""
    if _is_eager_variable(variable):
        return
    state = _state(variable.graph)
    state.uninitialized.append(variable)
    state.created.append(variable)


def created_variables(graph, start=0):
    """The variables Keras made in `graph` since the `start`-th (see training's plans)."""
    return _state(graph).created[start:]


def _initialize_tracked(session, only=None):
    """Initializes the pending variables (those of `only`, when given). A failed run (out of
    memory, say) leaves them pending, so a smaller model built next can still start."""
    state = _state(session.graph)
    wanted = None if only is None else {id(v) for v in only}
    chosen = [v for v in state.uninitialized if wanted is None or id(v) in wanted]
    if chosen:
        session.run([v.initializer for v in chosen])
        done = {id(v) for v in chosen}
        state.uninitialized = [v for v in state.uninitialized if id(v) not in done]


def _mark_initialized(variables):
    for variable in variables:
        if _is_eager_variable(variable):
            continue
        state = _state(variable.graph)
        state.uninitialized = [v for v in state.uninitialized if v is not variable]


@tf_export("keras.backend.get_session")
def get_session(op_input_list=()):
    """The session of the default graph (the default session if one is entered), with every
    variable Keras created initialized."""
    session = _current_session()
    _initialize_tracked(session)
    return session


def session_with(variables):
    """The session, with `variables` (only those) initialized: what a training plan needs."""
    session = _current_session()
    _initialize_tracked(session, variables)
    return session


def _current_session():
    global _SESSION
    session = tf.get_default_session()
    if session is None:
        graph = tf.get_default_graph()
        if _SESSION is None or _SESSION.graph is not graph or _SESSION._closed:
            _SESSION = tf.Session(graph=graph)
        session = _SESSION
    return session


@tf_export("keras.backend.set_session")
def set_session(session):
    global _SESSION
    _SESSION = session


@tf_export("keras.backend.clear_session")
def clear_session():
    """Closes Keras's session and starts a fresh default graph (names start again at 'dense')."""
    global _SESSION, _KERAS_GRAPH
    if _SESSION is not None:
        _SESSION.close()
        _SESSION = None
    _KERAS_GRAPH = None
    tf.reset_default_graph()


# --- values ------------------------------------------------------------------------------------
def _assigner(variable):
    state = _state(variable.graph)
    pair = state.assigners.get(variable)
    if pair is None:
        graph = variable.graph
        with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
            value = tf.placeholder(variable.dtype, variable.shape, name="assign_placeholder")
            pair = state.assigners[variable] = (value, variable.assign(value, read_value=False))
    return pair


@tf_export("keras.backend.batch_get_value")
def batch_get_value(tensors):
    if not tensors:
        return []
    tensors = list(tensors)
    if builtins.all(_is_eager_variable(t) or _is_eager_tensor(t) for t in tensors):
        return [np.array(t.numpy()) for t in tensors]
    if builtins.all(isinstance(t, tf.Variable) for t in tensors):
        return session_with(tensors).run(tensors)
    return get_session().run(tensors)


@tf_export("keras.backend.get_value")
def get_value(x):
    if isinstance(x, (int, float, np.ndarray, np.generic)):
        return x
    return batch_get_value([x])[0]


@tf_export("keras.backend.batch_set_value")
def batch_set_value(tuples):
    tuples = list(tuples)
    if not tuples:
        return
    if builtins.all(_is_eager_variable(v) for v, _ in tuples):
        for variable, value in tuples:
            value = np.asarray(value, dtype=variable.dtype.as_numpy_dtype)
            _check_assignable(variable, value)
            variable.assign(value, read_value=False)
        return
    session = _current_session()
    feeds, ops = {}, []
    for variable, value in tuples:
        placeholder, assign = _assigner(variable)
        value = np.asarray(value, dtype=variable.dtype.as_numpy_dtype)
        _check_assignable(variable, value)
        feeds[placeholder] = value
        ops.append(assign)
    session.run(ops, feeds)
    _mark_initialized([variable for variable, _ in tuples])


def _check_assignable(variable, value):
    if not variable.shape.is_compatible_with(value.shape):
        raise ValueError(f"Cannot assign value to variable '{variable.name}': Shape "
                         f"mismatch. The variable shape {tuple(variable.shape.as_list())}, "
                         f"and the assigned value shape {value.shape} are incompatible.")


def _is_eager_tensor(x):
    return isinstance(x, EagerTensor)


@tf_export("keras.backend.set_value")
def set_value(x, value):
    batch_set_value([(x, value)])


@tf_export("keras.backend.eval")
def eval(x):  # noqa: A001 - Keras's name
    return get_value(x)


@tf_export("keras.backend.variable")
def variable(value, dtype=None, name=None, constraint=None):
    dtype = dtype or floatx()
    v = tf.Variable(np.asarray(value, dtype=tf.as_dtype(dtype).as_numpy_dtype), dtype=dtype,
                    name=name, constraint=constraint)
    track_variable(v)
    return v


@tf_export("keras.backend.placeholder")
def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None, ragged=False):
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    with get_graph().as_default():
        return tf.placeholder(dtype or floatx(), shape=shape, name=name)


@tf_export("keras.backend.int_shape")
def int_shape(x):
    shape = x.shape
    return None if shape.ndims is None else tuple(shape.as_list())


@tf_export("keras.backend.ndim")
def ndim(x):
    return x.shape.ndims


@tf_export("keras.backend.dtype")
def dtype(x):
    return x.dtype.name


@tf_export("keras.backend.count_params")
def count_params(x):
    return int(np.prod(x.shape.as_list()))


@tf_export("keras.backend.is_keras_tensor")
def is_keras_tensor(x):
    from flowstone.keras.engine import node
    return node.history(x) is not None


# --- math (thin names over Flowstone ops, as Keras's backend is over TensorFlow's) -------------
# These names (sum, max, all, abs, round...) shadow Python's builtins in this module: code above
# that needs a builtin calls it as builtins.<name>.
def _keepdims_reduction(op):
    def reduce(x, axis=None, keepdims=False):
        return op(x, axis=axis, keepdims=keepdims)
    return reduce


mean = tf_export("keras.backend.mean")(_keepdims_reduction(tf.reduce_mean))
sum = tf_export("keras.backend.sum")(_keepdims_reduction(tf.reduce_sum))  # noqa: A001
max = tf_export("keras.backend.max")(_keepdims_reduction(tf.reduce_max))  # noqa: A001
min = tf_export("keras.backend.min")(_keepdims_reduction(tf.reduce_min))  # noqa: A001
prod = tf_export("keras.backend.prod")(_keepdims_reduction(tf.reduce_prod))
any = tf_export("keras.backend.any")(  # noqa: A001
    lambda x, axis=None, keepdims=False: tf.reduce_any(tf.cast(x, tf.bool), axis, keepdims))
all = tf_export("keras.backend.all")(  # noqa: A001
    lambda x, axis=None, keepdims=False: tf.reduce_all(tf.cast(x, tf.bool), axis, keepdims))

for _name, _fn in dict(square=tf.square, sqrt=tf.sqrt, exp=tf.exp, log=tf.log, abs=tf.abs,
                       sign=tf.sign, round=tf.round, relu=tf.nn.relu, sigmoid=tf.sigmoid,
                       tanh=tf.tanh, softplus=tf.nn.softplus, softsign=tf.nn.softsign,
                       elu=tf.nn.elu, maximum=tf.maximum, minimum=tf.minimum, pow=tf.pow,
                       equal=tf.equal, not_equal=tf.not_equal, greater=tf.greater,
                       less=tf.less, greater_equal=tf.greater_equal, less_equal=tf.less_equal,
                       cast=tf.cast, reshape=tf.reshape, shape=tf.shape,
                       transpose=tf.transpose, expand_dims=tf.expand_dims, squeeze=tf.squeeze,
                       stack=tf.stack, gather=tf.gather, zeros_like=tf.zeros_like,
                       ones_like=tf.ones_like, identity=tf.identity, tile=tf.tile,
                       one_hot=tf.one_hot, stop_gradient=tf.stop_gradient,
                       l2_normalize=tf.nn.l2_normalize, flatten=lambda x: tf.reshape(x, [-1]),
                       ).items():
    globals()[_name] = tf_export(f"keras.backend.{_name}")(_fn)


@tf_export("keras.backend.clip")
def clip(x, min_value, max_value):
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return tf.clip_by_value(x, min_value, max_value)


@tf_export("keras.backend.dot")
def dot(x, y):
    if x.shape.ndims == 2 and y.shape.ndims == 2:
        return tf.matmul(x, y)
    return tf.tensordot(x, y, [[x.shape.ndims - 1], [y.shape.ndims - 2]])


@tf_export("keras.backend.concatenate")
def concatenate(tensors, axis=-1):
    return tf.concat(list(tensors), axis)


@tf_export("keras.backend.argmax")
def argmax(x, axis=-1):
    return tf.argmax(x, axis)


@tf_export("keras.backend.softmax")
def softmax(x, axis=-1):
    return tf.nn.softmax(x, axis=axis)


@tf_export("keras.backend.zeros")
def zeros(shape, dtype=None, name=None):
    return variable(np.zeros(shape), dtype=dtype, name=name)


@tf_export("keras.backend.ones")
def ones(shape, dtype=None, name=None):
    return variable(np.ones(shape), dtype=dtype, name=name)


@tf_export("keras.backend.constant")
def constant(value, dtype=None, shape=None, name=None):
    return tf.constant(value, dtype=dtype or floatx(), shape=shape, name=name)


@tf_export("keras.backend.random_uniform")
def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return tf.random_uniform(shape, minval, maxval, dtype=dtype or floatx(), seed=seed)


@tf_export("keras.backend.random_normal")
def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return tf.random_normal(shape, mean, stddev, dtype=dtype or floatx(), seed=seed)


@tf_export("keras.backend.function")
def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable running `outputs` (and `updates`) for values of `inputs`: one compiled
    session callable, as Keras's graph-mode GraphExecutionFunction."""
    return GraphFunction(inputs, outputs, updates)


class GraphFunction:
    def __init__(self, inputs, outputs, updates=None):
        self.inputs = list(inputs)
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._single = not isinstance(outputs, (list, tuple))
        self.updates = list(updates or [])
        self._callable = None
        self._session = None

    def __call__(self, inputs):
        session = get_session()
        if self._callable is None or self._session is not session:
            fetches = list(self.outputs)
            if self.updates:
                fetches.append(tf.group(*self.updates))
            self._callable = session.make_callable(fetches, self.inputs)
            self._session = session
        values = self._callable(*inputs)
        values = values[:len(self.outputs)]
        return values[0] if self._single else values
