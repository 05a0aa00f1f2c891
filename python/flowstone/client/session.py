"""tf.Session and tf.InteractiveSession."""

import collections
import threading
import warnings

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.protos import ConfigProto

__all__ = ["Session", "InteractiveSession", "get_default_session"]


class _DefaultSessionStack(threading.local):
    def __init__(self):
        super().__init__()
        self.stack = []


_default_session_stack = _DefaultSessionStack()


def get_default_session():
    """The innermost session entered with `with sess.as_default():` (or None)."""
    stack = _default_session_stack.stack
    return stack[-1] if stack else None


def _session_for_eval(graph, session, what):
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(f"Cannot {what} using `eval()`: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "`eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError(f"Cannot use the given session to {what}: the tensor's graph is "
                         "different from the session's graph. Pass an explicit session to "
                         "`eval(session=sess)`.")
    return session


def _eval_using_default_session(tensor, feed_dict, graph, session=None):
    return _session_for_eval(graph, session, "evaluate tensor").run(tensor, feed_dict)


def _run_using_default_session(operation, feed_dict, graph, session=None):
    _session_for_eval(graph, session, "execute operation").run(operation, feed_dict)


# The rewrite options a session takes, at DEFAULT (graph functions start from these).
DEFAULT_REWRITE_OPTIONS = {"constant_folding": 0, "arithmetic_optimization": 0,
                           "dependency_optimization": 0, "common_subgraph_elimination": 0,
                           "remapping": 0, "disable_meta_optimizer": False}


def rewrite_overrides(options):
    """What tf.config.optimizer.set_experimental_options sets among the rewrite options that
    `options` (a session's) has and leaves at DEFAULT."""
    from flowstone import tf_config
    return {name: value for name, value in tf_config._rewrite_overrides().items()
            if name in options and not options[name]}


def _config_to_options(config):
    options = {
        "inter_op_threads": config.inter_op_parallelism_threads,
        "intra_op_threads": config.intra_op_parallelism_threads,
        "allow_soft_placement": config.allow_soft_placement,
        "log_device_placement": config.log_device_placement,
        "device_count": dict(config.device_count),
        "cpu_memory_limit_bytes": int(config.experimental.cpu_memory_limit_mb) * (1 << 20),
        "operation_timeout_in_ms": int(config.operation_timeout_in_ms),
    }
    rewrites = config.graph_options.rewrite_options
    for toggle in ("constant_folding", "arithmetic_optimization", "dependency_optimization",
                   "common_subgraph_elimination", "remapping"):
        options[toggle] = int(getattr(rewrites, toggle))
    options["disable_meta_optimizer"] = bool(rewrites.disable_meta_optimizer)
    # tf.config.optimizer.set_experimental_options fills in what the ConfigProto left at DEFAULT.
    options.update(rewrite_overrides(options))
    if int(rewrites.meta_optimizer_timeout_ms) > 0:
        options["fold_time_budget_ms"] = int(rewrites.meta_optimizer_timeout_ms)
    max_folded = int(config.graph_options.optimizer_options.max_folded_constant_in_bytes)
    if max_folded > 0:
        options["max_folded_constant_bytes"] = max_folded
    gpu = config.gpu_options
    options["gpu_visible_device_list"] = str(gpu.visible_device_list)
    options["gpu_memory_fraction"] = float(gpu.per_process_gpu_memory_fraction)
    options["gpu_allow_growth"] = bool(gpu.allow_growth)
    virtual = list(gpu.experimental.virtual_devices)
    if virtual:
        limits = list(virtual[0].memory_limit_mb)
        gpus_wanted = options["device_count"].get("GPU", 1) != 0
        if gpus_wanted and (len(limits) > 1 or len(virtual) > 1):
            raise _errors.UnimplementedError(
                None, None, "Flowstone gives each GPU one logical device: "
                "virtual_devices may hold one memory_limit_mb for the first GPU.")
        if limits:
            options["gpu_memory_limit_bytes"] = int(limits[0]) << 20
    return options


class _FetchMapper:
    """Flattens a fetch structure (any nesting of lists, tuples, namedtuples and dicts of
    Tensors, Operations and names) into unique fetches, and rebuilds the caller's structure."""

    def __init__(self, graph, fetches):
        self.fetch_tensors = []   # unique Tensors to fetch
        self.targets = []         # unique Operations to run
        self._tensor_index = {}
        self._target_ids = set()
        self._graph = graph
        self._build = self._compile(fetches)

    def _element(self, fetch):
        try:
            element = self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a "
                            "string or Tensor. (Can not convert a "
                            f"{type(fetch).__name__} into a Tensor or Operation.)") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})"
                             ) from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. "
                             f"({e.args[0]})") from None
        return element

    def _compile(self, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        if isinstance(fetch, (list, tuple)):
            builders = [self._compile(f) for f in fetch]
            if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
                cls = type(fetch)
                return lambda values: cls(*[b(values) for b in builders])
            if isinstance(fetch, tuple):
                return lambda values: tuple(b(values) for b in builders)
            return lambda values: [b(values) for b in builders]
        if isinstance(fetch, dict):
            keys = list(fetch.keys())
            builders = [self._compile(fetch[k]) for k in keys]
            cls = type(fetch)

            def build_dict(values):
                out = cls() if cls is not collections.defaultdict else cls(fetch.default_factory)
                for k, b in zip(keys, builders):
                    out[k] = b(values)
                return out
            return build_dict
        components = getattr(fetch, "_fetch_components", None)
        if components is not None:  # a composite such as tf.SparseTensor
            parts, rebuild = components()
            builders = [self._compile(p) for p in parts]
            return lambda values: rebuild([b(values) for b in builders])
        post = getattr(fetch, "_fetch_postprocess", None)
        element = self._element(fetch)
        if isinstance(element, _ops.Operation):
            if id(element) not in self._target_ids:
                self._target_ids.add(id(element))
                self.targets.append(element)
            return lambda values: None
        index = self._tensor_index.get(id(element))
        if index is None:
            index = len(self.fetch_tensors)
            self._tensor_index[id(element)] = index
            self.fetch_tensors.append(element)
        if post is not None:
            return lambda values: post(values[index])
        return lambda values: values[index]

    def build(self, values):
        return self._build(values)


class _CompiledRun:
    """A compiled (fetch structure, feed keys) pair: a C++ callable and the Python glue."""

    __slots__ = ("callable", "mapper", "feed_np_dtypes", "feed_tensors")

    def __init__(self, callable_, mapper, feed_tensors):
        self.callable = callable_
        self.mapper = mapper
        self.feed_tensors = feed_tensors
        self.feed_np_dtypes = [t.dtype.as_numpy_dtype for t in feed_tensors]


def _short_repr(value, limit=200):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _convert_feed(value, tensor, np_dtype):
    if isinstance(value, _ops.Tensor):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        "TensorHandles. For reference, the tensor object was "
                        f"{value!r} which was passed to the argument `feed_dict` with key "
                        f"{tensor!r}.")
    if type(value) is np.ndarray and value.dtype == np_dtype:
        return value
    try:
        arr = np.asarray(value, dtype=np_dtype)
    except OverflowError:
        raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible "
                        f"with Tensor type {tensor.dtype.name}. Try explicitly setting the "
                        "type of the feed tensor to a larger type (e.g. int64).") from None
    except (TypeError, ValueError) as e:
        # numpy's class is TF's: ValueError for ragged lists and unparsable strings, TypeError
        # for values of the wrong kind.
        error = ValueError if isinstance(e, ValueError) else TypeError
        raise error(f"Cannot feed value {_short_repr(value)} of type {type(value).__name__} "
                      f"for Tensor {tensor.name!r} with dtype {tensor.dtype.name}: {e}") from None
    if isinstance(value, int) and not isinstance(value, bool) and arr.item() != value:
        raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible "
                        f"with Tensor type {tensor.dtype.name}. Try explicitly setting the "
                        "type of the feed tensor to a larger type (e.g. int64).")
    return arr


def _expand_composite_feeds(feed_dict):
    """A composite key (a SparseTensor, fed a SparseTensorValue or an (indices, values,
    dense_shape) tuple) becomes one feed per component tensor."""
    expanded = {}
    for key, value in feed_dict.items():
        components = getattr(key, "_fetch_components", None)
        if components is None:
            expanded[key] = value
            continue
        parts, _ = components()
        feed_components = getattr(key, "_feed_components", None)
        if feed_components is not None:  # a RaggedTensor, fed a RaggedTensorValue or lists
            expanded.update(zip(parts, feed_components(value)))
            continue
        if not isinstance(value, (tuple, list)) or len(value) != len(parts):
            raise TypeError(f"The feed of {key!r} must be a value of its {len(parts)} "
                            f"components (a SparseTensorValue), got {type(value).__name__}")
        expanded.update(zip(parts, value))
    return expanded


# A function (callable_, options, run_metadata, values) -> outputs that runs every Session.run and
# make_callable call in the process instead of the plain path, or None (the usual case).
# `python -m flowstone profile` sets it to trace a script's runs (flowstone/profile_script.py).
_run_interceptor = None


def set_run_interceptor(interceptor):
    """Routes every run through `interceptor` (None restores the plain path); returns the
    previous one."""
    global _run_interceptor
    previous, _run_interceptor = _run_interceptor, interceptor
    return previous


def run_with_options(callable_, options, run_metadata, values):
    """Runs a compiled callable with a RunOptions' deadline, OOM report setting and trace level;
    a traced run's step statistics go to `run_metadata` (cleared first, as in TensorFlow)."""
    timeout_in_ms, report_oom, trace_level = 0, False, 0
    if options is not None:
        timeout_in_ms = max(int(options.timeout_in_ms), 0)
        report_oom = bool(options.report_tensor_allocations_upon_oom)
        # Without a RunMetadata to fill, a trace would be collected for nothing.
        trace_level = int(options.trace_level) if run_metadata is not None else 0
    outputs, step_stats = callable_.call_with_options(timeout_in_ms, report_oom, trace_level,
                                                      *values)
    if run_metadata is not None:
        run_metadata.Clear()
        if step_stats:
            run_metadata.step_stats.ParseFromString(step_stats)
    return outputs


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        if isinstance(target, ConfigProto):
            raise TypeError(f"target must be a string, but got {type(target)}. Did you do "
                            "\"Session(config)\" instead of \"Session(config=config)\"?")
        if not isinstance(target, str):
            raise TypeError(f"target must be a string, but got {type(target)}")
        if target:
            raise _errors.UnimplementedError(
                None, None, f"Session target {target!r}: Flowstone runs sessions in-process; "
                "use target='' (distributed training uses MPI, not a session target).")
        if graph is None:
            graph = _ops.get_default_graph()
        elif not isinstance(graph, _ops.Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if config is None:
            config = ConfigProto()
        elif not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._graph = graph
        self._config = config
        self._closed = False
        self._cache = {}
        self._signature_cache = {}
        self._lock = threading.Lock()
        self._entered = False
        self._default_session_cm = None
        self._default_graph_cm = None
        from flowstone import tf_config
        tf_config._mark_devices_initialized()
        try:
            self._c = _C.Session.create(graph._c, _config_to_options(config))
        except _C.StatusError as e:
            raise _errors.from_status_error(e, graph) from None
        _C.refresh_interrupt_hook()

    graph = property(lambda self: self._graph)
    sess_str = property(lambda self: "")

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    def list_devices(self):
        return [_DeviceAttributes(name, device_type, limit)
                for name, device_type, limit in self._c.list_devices()]

    def close(self):
        if self._closed:
            return
        self._closed = True
        self._cache.clear()
        self._signature_cache.clear()
        self._c.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - TensorFlow swallows errors in __del__ too
            pass

    def as_default(self):
        return _session_default_controller(self)

    def _compile(self, fetches, feed_keys):
        mapper = _FetchMapper(self._graph, fetches)
        feed_tensors = []
        for key in feed_keys:
            feed_tensors.append(self._feed_tensor(key))
        signature = (tuple(id(t) for t in mapper.fetch_tensors),
                     tuple(id(op) for op in mapper.targets),
                     tuple(id(t) for t in feed_tensors))
        callable_ = self._signature_cache.get(signature)
        if callable_ is None:
            try:
                callable_ = self._c.make_callable(
                    [t._as_node_output() for t in feed_tensors],
                    [t._as_node_output() for t in mapper.fetch_tensors],
                    [op._node for op in mapper.targets])
            except _C.StatusError as e:
                raise _errors.from_status_error(e, self._graph) from None
            self._signature_cache[signature] = callable_
            # A handler installed with signal.signal since the session was made replaced the
            # Ctrl-C hook; a compile (not the per-run path) is where it is checked again.
            _C.refresh_interrupt_hook()
        return _CompiledRun(callable_, mapper, feed_tensors)

    def _feed_tensor(self, key):
        try:
            tensor = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (KeyError, ValueError) as e:
            message = e.args[0] if e.args else str(e)
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {message}") from None
        except TypeError as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        if tensor.dtype == _dtypes.resource:
            raise ValueError(f"Tensor {tensor.name} may not be fed.")
        return tensor

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops needed for `fetches`, feeding `feed_dict`, and returns the fetched values
        in the structure of `fetches` (numpy arrays; None for Operations)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if feed_dict and any(hasattr(k, "_fetch_components") for k in feed_dict):
            feed_dict = _expand_composite_feeds(feed_dict)
        feed_keys = tuple(feed_dict) if feed_dict else ()
        try:
            key = (fetches, feed_keys)
            compiled = self._cache.get(key)
        except TypeError:  # an unhashable fetch structure (a list or dict)
            key = None
            compiled = None
        if compiled is None:
            if not self._graph._ops:
                raise RuntimeError("The Session graph is empty. Add operations to the graph "
                                   "before calling run().")
            compiled = self._compile(fetches, feed_keys)
            if key is not None:
                with self._lock:
                    self._cache[key] = compiled
        if feed_keys:
            values = [_convert_feed(feed_dict[k], t, d) for k, t, d in
                      zip(feed_keys, compiled.feed_tensors, compiled.feed_np_dtypes)]
        else:
            values = ()
        try:
            if _run_interceptor is not None:
                outputs = _run_interceptor(compiled.callable, options, run_metadata, values)
            elif options is not None or run_metadata is not None:
                outputs = run_with_options(compiled.callable, options, run_metadata, values)
            else:
                outputs = compiled.callable(*values)
        except _C.StatusError as e:
            raise _errors.from_status_error(e, self._graph) from None
        return compiled.mapper.build(outputs)

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A Python callable running `fetches` with positional values for `feed_list`."""
        feed_list = list(feed_list or [])
        compiled = self._compile(fetches, feed_list)
        run_callable = compiled.callable
        feed_tensors = compiled.feed_tensors
        dtypes_ = compiled.feed_np_dtypes
        build = compiled.mapper.build
        graph = self._graph

        def call(*args, **kwargs):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(args) != len(feed_tensors):
                raise TypeError(f"This callable expects {len(feed_tensors)} feed values, got "
                                f"{len(args)}.")
            values = [_convert_feed(v, t, d) for v, t, d in zip(args, feed_tensors, dtypes_)]
            options = kwargs.get("options") if accept_options else None
            run_metadata = kwargs.get("run_metadata") if accept_options else None
            try:
                if _run_interceptor is not None:
                    return build(_run_interceptor(run_callable, options, run_metadata, values))
                if options is not None or run_metadata is not None:
                    return build(run_with_options(run_callable, options, run_metadata, values))
                return build(run_callable(*values))
            except _C.StatusError as e:
                raise _errors.from_status_error(e, graph) from None
        return call

    def partial_run_setup(self, fetches, feeds=None):
        raise _errors.UnimplementedError(None, None, "partial_run is not supported; run the "
                                         "fetches in one sess.run call.")

    def partial_run(self, handle, fetches, feed_dict=None):
        raise _errors.UnimplementedError(None, None, "partial_run is not supported.")


_DeviceAttributes = collections.namedtuple(
    "_DeviceAttributes", ["name", "device_type", "memory_limit_bytes"])


class _session_default_controller:  # noqa: N801
    def __init__(self, session):
        self._session = session
        self._graph_cm = None

    def __enter__(self):
        _default_session_stack.stack.append(self._session)
        self._graph_cm = self._session.graph.as_default()
        self._graph_cm.__enter__()
        return self._session

    def __exit__(self, *exc):
        self._graph_cm.__exit__(*exc)
        stack = _default_session_stack.stack
        if stack and stack[-1] is self._session:
            stack.pop()
        elif self._session in stack:
            stack.remove(self._session)
        return False


class Session(BaseSession):
    """A TF1 session: `with tf.Session() as sess: sess.run(...)`."""

    def __enter__(self):
        if self._entered:
            raise RuntimeError("Session context managers are not re-entrant. Use "
                               "`Session.as_default()` if you want to enter a session multiple "
                               "times.")
        self._entered = True
        self._default_session_cm = self.as_default()
        self._default_session_cm.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            self._default_session_cm.__exit__(exc_type, exc_value, traceback)
        finally:
            self._entered = False
            self.close()
        return False

    @staticmethod
    def reset(target, containers=None, config=None):
        """Sessions here are in-process; there is no server-side state to reset."""


class InteractiveSession(BaseSession):
    """A session that installs itself as the default, for shells and notebooks."""

    _active_count = 0
    _count_lock = threading.Lock()

    def __init__(self, target="", graph=None, config=None):
        if config is None:
            config = ConfigProto()
            config.gpu_options.allow_growth = True
        super().__init__(target, graph, config)
        with InteractiveSession._count_lock:
            if InteractiveSession._active_count:
                warnings.warn("An interactive session is already active. This can cause "
                              "out-of-memory errors in some cases. You must explicitly call "
                              "`InteractiveSession.close()` to release resources held by the "
                              "other session(s).")
            InteractiveSession._active_count += 1
        self._explicitly_closed = False
        self._default_session_cm = self.as_default()
        self._default_session_cm.__enter__()

    def close(self):
        if not self._closed:
            with InteractiveSession._count_lock:
                InteractiveSession._active_count -= 1
            try:
                self._default_session_cm.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - closing from another thread or at exit
                pass
        super().close()
