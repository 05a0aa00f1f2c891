"""Variable scopes and tf.get_variable, as TF1 has them.

A graph keeps one variable store (full name -> Variable) shared by its threads, and per thread a
variable-scope store: the current VariableScope and how often each scope name was opened. The
counts give `default_name` scopes their unique names ("dense", "dense_1", ...); leaving a named
scope resets the counts of its sub-scopes, so a network built twice under
`variable_scope("net")` and then `variable_scope("net", reuse=True)` finds the same
"net/dense/kernel" both times, as in TensorFlow.
"""

import enum
import functools
import inspect
import traceback

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import as_shape
from flowstone.ops import init_ops as _init_ops
from flowstone.ops import variables as _variables
from flowstone.util.tf_export import export_value, tf_export


class _ReuseMode(enum.Enum):
    """tf.AUTO_REUSE: create a variable when it does not exist, share it when it does."""
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
export_value("AUTO_REUSE", AUTO_REUSE)


@tf_export("VariableScope")
class VariableScope:
    """What tf.get_variable uses in a scope: its name, whether it reuses variables, and the
    defaults (initializer, regularizer, dtype, partitioner, custom getter...) it hands down."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=_dtypes.float32,
                 use_resource=None, constraint=None):
        self._reuse = reuse
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = _dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self):
        """Reuses variables in this scope from now on."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def set_dtype(self, dtype):
        self._dtype = _dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def get_collection(self, name):
        return _ops.get_collection(name, self._name + "/" if self._name else "")

    def trainable_variables(self):
        return self.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self):
        return self.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self):
        return self.get_collection(_ops.GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None):
        """Gets or creates `name` in this scope, filling unset arguments from the scope."""
        regularizer = self._regularizer if regularizer is None else regularizer
        caching_device = self._caching_device if caching_device is None else caching_device
        partitioner = self._partitioner if partitioner is None else partitioner
        custom_getter = self._custom_getter if custom_getter is None else custom_getter
        if reuse is None or reuse is False:
            reuse = self._reuse
        full_name = f"{self._name}/{name}" if self._name else name
        # Variable names depend on the variable scope only, not on the name scope.
        with _ops.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = _ops.convert_to_tensor(initializer).dtype
                if init_dtype != _dtypes.as_dtype(dtype):
                    raise ValueError(f"Initializer type '{_dtype_repr(init_dtype)}' and explicit "
                                     f"dtype '{_dtype_repr(_dtypes.as_dtype(dtype))}' don't "
                                     "match.")
            initializer = self._initializer if initializer is None else initializer
            constraint = self._constraint if constraint is None else constraint
            dtype = self._dtype if dtype is None else dtype
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape,
                use_resource=use_resource, custom_getter=custom_getter, constraint=constraint,
                synchronization=synchronization, aggregation=aggregation)


def _dtype_repr(dtype):
    return f"<dtype: '{dtype.name}'>"


class _VariableStore:
    """The variables tf.get_variable made in one graph, by full name."""

    def __init__(self):
        self._vars = {}

    def get_variable(self, name, shape=None, dtype=_dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None):
        def true_getter(name, shape=None, dtype=_dtypes.float32, initializer=None,
                        regularizer=None, reuse=None, trainable=None, collections=None,
                        caching_device=None, partitioner=None, validate_shape=True,
                        use_resource=None, constraint=None, synchronization=None,
                        aggregation=None):
            if partitioner is not None and not callable(partitioner):
                raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
            return self._get_single_variable(name, shape, dtype, initializer, regularizer,
                                             reuse, trainable, collections, validate_shape,
                                             constraint)

        if custom_getter is None:
            return true_getter(name, shape=shape, dtype=dtype, initializer=initializer,
                               regularizer=regularizer, reuse=reuse, trainable=trainable,
                               collections=collections, caching_device=caching_device,
                               partitioner=partitioner, validate_shape=validate_shape,
                               use_resource=use_resource, constraint=constraint,
                               synchronization=synchronization, aggregation=aggregation)
        if not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        getter_kwargs = dict(getter=true_getter, name=name, shape=shape, dtype=dtype,
                             initializer=initializer, regularizer=regularizer, reuse=reuse,
                             trainable=trainable, collections=collections,
                             caching_device=caching_device, partitioner=partitioner,
                             validate_shape=validate_shape, use_resource=use_resource,
                             synchronization=synchronization, aggregation=aggregation)
        # Getters written before `constraint` existed do not take it, as in TensorFlow.
        if _accepts_argument(custom_getter, "constraint"):
            getter_kwargs["constraint"] = constraint
        return custom_getter(**getter_kwargs)

    def _get_single_variable(self, name, shape, dtype, initializer, regularizer, reuse,
                             trainable, collections, validate_shape, constraint):
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = _dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        existing = self._vars.get(name)
        if existing is not None:
            if reuse is None or reuse is False:
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to "
                                 "set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
            if not shape.is_compatible_with(existing.get_shape()):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} "
                                 f"and found shape {existing.get_shape()}.")
            if not dtype.is_compatible_with(existing.dtype):
                raise ValueError(f"Trying to share variable {name}, but specified dtype "
                                 f"{dtype.name} and found dtype {existing.dtype.name}.")
            return existing
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        if initializer is None:
            initializer = _default_initializer(name, dtype)
        if initializing_from_value:
            init_value, variable_dtype = initializer, None
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape.is_fully_defined():
                dims = shape.as_list()
                init_value = functools.partial(initializer, dims, dtype=dtype)
                variable_dtype = dtype
            elif shape.rank is None and _takes_no_arguments(initializer):
                init_value, variable_dtype = initializer, None
            elif shape.rank is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` "
                                 "argument must be specified.")
            else:
                raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                                 f"instead was {shape}.")
        # TensorFlow would name the variable "<name>_1" and still file it under `name`; a
        # variable whose name differs from its key is a trap, so this is an error here.
        if _store_graph()._operation_by_name_or_none(name) is not None:
            raise ValueError(f"Variable {name} cannot be created: the graph already has an op "
                             f"named {name} that is not a variable made by tf.get_variable.")
        var = _variables.Variable(init_value, trainable=trainable, collections=collections,
                                  name=name, dtype=variable_dtype, validate_shape=validate_shape,
                                  constraint=constraint)
        self._vars[name] = var
        if regularizer:
            with _ops.colocate_with(var), _ops.name_scope(name + "/Regularizer/"):
                loss = regularizer(var)
            if loss is not None:
                _ops.add_to_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, loss)
        return var


def _default_initializer(name, dtype):
    """Glorot uniform for floating variables, zeros for integers and bools, as TensorFlow."""
    if dtype.is_floating:
        return _init_ops.GlorotUniform()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool:
        return _init_ops.Zeros()
    raise ValueError(f"An initializer for variable {name} of {_dtype_repr(dtype)} is required")


def _accepts_argument(fn, name):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                 for p in params.values())


def _takes_no_arguments(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or
               p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
               for p in params)


class _VariableScopeStore:
    """One thread's current variable scope in one graph, and how often each scope name was
    opened (for unique default names)."""

    def __init__(self):
        self.current_scope = VariableScope(False)
        self.variable_scopes_count = {}

    def open_variable_scope(self, scope_name):
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name):
        prefix = scope_name + "/"
        for key in self.variable_scopes_count:
            if key.startswith(prefix):
                self.variable_scopes_count[key] = 0

    def variable_scope_count(self, scope_name):
        return self.variable_scopes_count.get(scope_name, 0)


def _store_graph(graph=None):
    """The graph whose stores `graph` uses: a function body being traced (which has an
    `outer_graph`) uses its outermost graph's, so that scopes and variables opened around a
    tf.cond or tf.while_loop hold inside its branches and body, as in TensorFlow."""
    graph = graph or _ops.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return graph


def _scope_store(graph=None):
    ctx = _store_graph(graph)._ctx()
    if ctx.var_scope_store is None:
        ctx.var_scope_store = _VariableScopeStore()
    return ctx.var_scope_store


def _variable_store(graph=None):
    graph = _store_graph(graph)
    if graph._variable_store is None:
        graph._variable_store = _VariableStore()
    return graph._variable_store


@tf_export("get_variable_scope")
def get_variable_scope():
    """The current VariableScope."""
    return _scope_store().current_scope


def _get_unique_variable_scope(prefix):
    """`prefix`, or `prefix_N` with the first N not yet opened in the current scope."""
    store = _scope_store()
    current = store.current_scope.name
    name = f"{current}/{prefix}" if current else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    index = 1
    while store.variable_scope_count(f"{name}_{index}") > 0:
        index += 1
    return f"{prefix}_{index}"


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """A getter set inside a scope with one already calls through the outer one."""
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped_custom_getter


class _PureVariableScope:
    """Sets the current VariableScope without touching the name scope."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, old_name_scope=None,
                 dtype=_dtypes.float32, use_resource=None, constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._overrides = dict(initializer=initializer, regularizer=regularizer,
                               caching_device=caching_device, partitioner=partitioner,
                               dtype=dtype, use_resource=use_resource)
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._constraint = constraint
        self._store = _scope_store()
        self._old = None
        self._old_subscopes = None
        self._new_name = None
        self._cached_scope = None
        if isinstance(name_or_scope, VariableScope):
            scope = name_or_scope
            self._new_name = scope.name
            self._cached_scope = VariableScope(
                scope.reuse if not reuse else reuse, name=self._new_name,
                initializer=scope.initializer, regularizer=scope.regularizer,
                caching_device=scope.caching_device, partitioner=scope.partitioner,
                dtype=scope.dtype, custom_getter=scope.custom_getter,
                name_scope=scope.original_name_scope, use_resource=scope.use_resource,
                constraint=constraint)
            self._apply_overrides(self._cached_scope, scope.custom_getter)

    def _apply_overrides(self, scope, old_getter):
        for attribute, value in self._overrides.items():
            if value is not None:
                getattr(scope, f"set_{attribute}")(value)
        if self._custom_getter is not None:
            scope.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, old_getter))

    def __enter__(self):
        self._old = self._store.current_scope
        if self._cached_scope is not None:
            self._store.open_variable_scope(self._new_name)
            self._old_subscopes = dict(self._store.variable_scopes_count)
            scope = self._cached_scope
        else:
            old = self._old
            self._new_name = (f"{old.name}/{self._name_or_scope}" if old.name
                              else self._name_or_scope)
            reuse = self._reuse or old.reuse  # reuse is inherited by sub-scopes
            name_scope = (self._name_or_scope if self._old_name_scope is None
                          else self._old_name_scope)
            scope = VariableScope(
                reuse, name=self._new_name, initializer=old.initializer, dtype=old.dtype,
                regularizer=old.regularizer, caching_device=old.caching_device,
                partitioner=old.partitioner, custom_getter=old.custom_getter,
                name_scope=name_scope, use_resource=old.use_resource,
                constraint=old.constraint)
            self._apply_overrides(scope, old.custom_getter)
            self._store.open_variable_scope(self._new_name)
        self._store.current_scope = scope
        return scope

    def __exit__(self, *exc):
        if self._cached_scope is not None:
            self._store.variable_scopes_count = self._old_subscopes
        else:
            self._store.close_variable_subscopes(self._new_name)
        self._store.current_scope = self._old


@tf_export("variable_scope")
class variable_scope:  # noqa: N801 - TensorFlow's name
    """`with tf.variable_scope("layer1"):` prefixes tf.get_variable names (and op names) with
    "layer1/". `reuse=True` shares existing variables, `tf.AUTO_REUSE` shares or creates them;
    a scope's initializer, regularizer, dtype, partitioner and custom getter reach every
    variable created inside it. With `name_or_scope=None` the scope is `default_name`, made
    unique ("dense", "dense_1", ...). Passing a VariableScope re-enters that scope."""

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:
            reuse = None  # False means "inherit", as in TensorFlow
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope}")
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"The custom_getter must be callable, got {custom_getter!r}")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse
        self._scope_args = dict(initializer=initializer, regularizer=regularizer,
                                caching_device=caching_device, partitioner=partitioner,
                                custom_getter=custom_getter, dtype=dtype,
                                use_resource=use_resource, constraint=constraint)
        self._auxiliary_name_scope = auxiliary_name_scope
        self._graph = _ops._graph_from_values(values)
        self._exits = []

    def __enter__(self):
        self._enter(self._graph.as_default())
        try:
            return self._enter_scopes()
        except BaseException:
            self._unwind()
            raise

    def _enter(self, context):
        result = context.__enter__()
        self._exits.append(context.__exit__)
        return result

    def _unwind(self, *exc):
        while self._exits:
            self._exits.pop()(*(exc or (None, None, None)))

    def _name_scope_for(self, name):
        """The name scope this variable scope opens: a fresh one named `name` (made unique),
        or the current one again when auxiliary_name_scope is False."""
        if self._auxiliary_name_scope:
            return self._graph.name_scope(name)
        current = self._graph.get_name_scope()
        return self._graph.name_scope(current + "/" if current else "")

    def _enter_scopes(self):
        scope = self._name_or_scope
        if scope is not None:
            if isinstance(scope, str):
                name_scope = scope
            else:
                name_scope = scope.name.split("/")[-1]
            opened = self._enter(self._name_scope_for(name_scope)) if name_scope else ""
            old_name_scope = opened if isinstance(scope, str) else scope.original_name_scope
            return self._enter(_PureVariableScope(scope, reuse=self._reuse,
                                                  old_name_scope=old_name_scope,
                                                  **self._scope_args))
        if self._reuse is True:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        opened = self._enter(self._name_scope_for(self._default_name))
        unique_name = _get_unique_variable_scope(self._default_name)
        return self._enter(_PureVariableScope(unique_name, old_name_scope=opened,
                                              **self._scope_args))

    def __exit__(self, *exc):
        self._unwind(*exc)
        return False


@tf_export("get_variable")
def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """Gets an existing variable of the current variable scope or creates a new one.

    The scope's reuse setting decides: without reuse an existing name is an error, with
    `reuse=True` a missing name is, and `tf.AUTO_REUSE` allows both. A new variable gets
    `initializer` (a callable taking shape and dtype, or a value whose dtype it then takes),
    else the scope's, else Glorot uniform (floats) or zeros."""
    return get_variable_scope().get_variable(
        _variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint,
        synchronization=synchronization, aggregation=aggregation)


@tf_export("get_local_variable")
def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """get_variable for a variable in LOCAL_VARIABLES (not saved, not trained)."""
    collections = list(collections or []) + [_ops.GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)


@tf_export("no_regularizer")
def no_regularizer(_):
    """Turns the scope's regularizer off for one variable: `regularizer=tf.no_regularizer`."""
    return None


@tf_export("make_template")
def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """Wraps `func_` so that every call shares the variables the first call created with
    tf.get_variable (in a scope named after `name_`, made unique)."""
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)


class Template:
    """A function whose variables are created on the first call and reused afterwards."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func = func
        self._stacktrace = traceback.format_stack()[:-2]
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        if create_scope_now:
            with _PureVariableScope(unique_name or _get_unique_variable_scope(name),
                                    custom_getter=custom_getter) as scope:
                self._variable_scope = scope
        self._variables_created = False

    name = property(lambda self: self._name)
    func = property(lambda self: self._func)
    variable_scope = property(lambda self: self._variable_scope)

    @property
    def variable_scope_name(self):
        """The scope's name with a trailing "/", so that "t" does not match "t_1"'s variables."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _variables_in(self, key):
        if self._variable_scope is None:
            return []
        return _ops.get_collection(key, self.variable_scope_name)

    @property
    def variables(self):
        return self.global_variables + self.local_variables

    @property
    def trainable_variables(self):
        return self._variables_in(_ops.GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def global_variables(self):
        return self._variables_in(_ops.GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self):
        return self._variables_in(_ops.GraphKeys.LOCAL_VARIABLES)

    def _call_func(self, args, kwargs):
        try:
            if not self._variables_created:
                result = self._func(*args, **kwargs)
                self._variables_created = True
                return result
            trainable_at_start = len(_ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES))
            result = self._func(*args, **kwargs)
            trainable = _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES)
            if len(trainable) != trainable_at_start:
                raise ValueError("Trainable variable created when calling a template after the "
                                 "first time, perhaps you used tf.Variable when you meant "
                                 f"tf.get_variable: {trainable[trainable_at_start:]}")
            return result
        except Exception as exc:
            # Says where the template was made, as TensorFlow does.
            first = exc.args[0] if exc.args else ""
            exc.args = (f"{first}\n\noriginally defined at:\n{''.join(self._stacktrace)}",
                        *exc.args[1:])
            raise

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=self._variables_created or None):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, self._name,
                            custom_getter=self._custom_getter) as scope:
            self._variable_scope = scope
            return self._call_func(args, kwargs)

