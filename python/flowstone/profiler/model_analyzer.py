"""tf.profiler.profile and tf.profiler.Profiler: where a traced step's time and memory went, by
name scope ('scope') or by op type ('op'), as text and as TensorFlow's result messages.

    run_meta = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=run_meta)
    tf.profiler.profile(sess.graph, run_meta, cmd="op",
                        options=tf.profiler.ProfileOptionBuilder.time_and_memory())

The numbers come from RunMetadata.step_stats (see flowstone/client/timeline.py for the same data
as a Chrome trace) and, for parameter counts, from the graph's variables. What Flowstone does not
measure (float operations, tensor values, the 'graph' and 'code' views) raises
UnimplementedError naming the option, as docs/COMPAT.md lists.
"""

import re
import sys

from flowstone import errors
from flowstone.client import timeline as _timeline
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos as _tf_protos
from flowstone.profiler import node_stats as _node_stats
from flowstone.profiler.option_builder import ProfileOptionBuilder
from flowstone.util.tf_export import export_value, tf_export

GraphNodeProto = _tf_protos.message_class("GraphNodeProto")
MultiGraphNodeProto = _tf_protos.message_class("MultiGraphNodeProto")
export_value("profiler.GraphNodeProto", GraphNodeProto)
export_value("profiler.MultiGraphNodeProto", MultiGraphNodeProto)

_ROOT = "_TFProfRoot"
_VIEWS = ("scope", "op")
# select attribute -> (column title, formatter of a value) for the text report.
_COLUMNS = {
    "params": ("# parameters", _node_stats.format_count),
    "bytes": ("requested bytes", _node_stats.format_bytes),
    "peak_bytes": ("peak bytes", _node_stats.format_bytes),
    "residual_bytes": ("residual bytes", _node_stats.format_bytes),
    "output_bytes": ("output bytes", _node_stats.format_bytes),
    "micros": ("total execution time", _node_stats.format_micros),
    "accelerator_micros": ("accelerator execution time", _node_stats.format_micros),
    "cpu_micros": ("cpu execution time", _node_stats.format_micros),
}
_OTHER_SELECTS = {"occurrence", "device", "op_types"}
_NOT_MEASURED = {"float_ops": "float operation counts", "tensor_value": "tensor values",
                 "input_shapes": "input shapes"}
# order_by -> the result field it sorts by (descending); "name" sorts by name.
_ORDER_FIELDS = {"micros": "total_exec_micros", "bytes": "total_requested_bytes",
                 "peak_bytes": "total_peak_bytes", "residual_bytes": "total_residual_bytes",
                 "output_bytes": "total_output_bytes", "params": "total_parameters",
                 "accelerator_micros": "total_accelerator_exec_micros",
                 "cpu_micros": "total_cpu_exec_micros", "occurrence": "total_definition_count"}


def _unimplemented(what):
    return errors.UnimplementedError(
        None, None, f"tf.profiler: {what} is not supported by Flowstone's profiler (see "
        "docs/COMPAT.md). Supported: cmd 'scope' or 'op'; select micros, bytes, peak_bytes, "
        "output_bytes, residual_bytes, params, occurrence, device, op_types.")


def _check_options(cmd, options):
    if cmd not in _VIEWS:
        if cmd in ("graph", "code"):
            raise _unimplemented(f"the '{cmd}' view")
        raise errors.InvalidArgumentError(
            None, None, f"tf.profiler.profile: unknown cmd {cmd!r}; use 'scope' or 'op'.")
    for attribute in options.get("select", []):
        if attribute in _NOT_MEASURED:
            raise _unimplemented(f"select '{attribute}' ({_NOT_MEASURED[attribute]})")
        if attribute not in _COLUMNS and attribute not in _OTHER_SELECTS:
            raise errors.InvalidArgumentError(
                None, None, f"tf.profiler: unknown select attribute {attribute!r}; known: "
                f"{sorted(set(_COLUMNS) | _OTHER_SELECTS)}.")
    if options.get("min_float_ops", 0) > 0 or options.get("order_by") == "float_ops":
        raise _unimplemented("float operation counts (min_float_ops, order_by 'float_ops')")
    output = options.get("output", "stdout")
    if output.startswith("pprof"):
        raise _unimplemented("pprof output")


def _node_types(stats, trainable, variables):
    types = {stats.op}
    if stats.name in trainable:
        types.add("_trainable_variables")
    if stats.name in variables:
        types.add("_variables")
    return types


def _graph_nodes(graph, records):
    """Adds the graph's nodes that did not run (for parameter counts and definition counts)
    and sets each variable's parameter count. Returns (trainable names, variable names)."""
    trainable, variables = set(), set()
    if graph is None:
        return trainable, variables
    for op in graph.get_operations():
        if op.name not in records:
            records[op.name] = _node_stats.NodeStats(op.name, op.type)
    for key, names in ((_ops.GraphKeys.TRAINABLE_VARIABLES, trainable),
                       (_ops.GraphKeys.GLOBAL_VARIABLES, variables)):
        for var in graph.get_collection(key):
            name = var.op.name
            names.add(name)
            shape = var.shape
            if name in records and shape.is_fully_defined():
                records[name].parameters = int(shape.num_elements())
    return trainable, variables


def _fill(message, stats):
    """A node's own statistics into a GraphNodeProto."""
    message.name = stats.name
    message.run_count = stats.run_count
    message.exec_micros = message.cpu_exec_micros = int(round(stats.exec_micros))
    message.requested_bytes = int(stats.requested_bytes)
    message.peak_bytes = int(stats.peak_bytes)
    message.output_bytes = int(stats.output_bytes)
    message.parameters = stats.parameters
    message.devices.extend(stats.devices)
    for shape in stats.shapes:
        message.shapes.add().CopyFrom(_shape_proto(shape))


def _shape_proto(shape):
    """A copy field by field: step statistics from TensorFlow's own messages live in another
    descriptor pool, which CopyFrom refuses."""
    out = _tf_protos.TensorShapeProto()
    for dim in shape.dim:
        out.dim.add().size = dim.size
    return out


_TOTALS = [("exec_micros", "total_exec_micros"), ("cpu_exec_micros", "total_cpu_exec_micros"),
           ("accelerator_exec_micros", "total_accelerator_exec_micros"),
           ("requested_bytes", "total_requested_bytes"), ("peak_bytes", "total_peak_bytes"),
           ("residual_bytes", "total_residual_bytes"), ("output_bytes", "total_output_bytes"),
           ("parameters", "total_parameters")]


def _add_totals(into, node):
    for _, total in _TOTALS:
        setattr(into, total, getattr(into, total) + getattr(node, total))


def _set_own_totals(node):
    for own, total in _TOTALS:
        setattr(node, total, getattr(node, own))


def _passes_min(stats, options):
    return (stats.exec_micros >= options.get("min_micros", 0)
            and stats.requested_bytes >= options.get("min_bytes", 0)
            and stats.parameters >= options.get("min_params", 0)
            and stats.peak_bytes >= options.get("min_peak_bytes", 0)
            and stats.output_bytes >= options.get("min_output_bytes", 0))


def _matches(name, regexes):
    return any(re.fullmatch(r, name) for r in regexes)


def _shown(name, options):
    return (_matches(name, options.get("show_name_regexes", [".*"]))
            and _matches(name, options.get("start_name_regexes", [".*"]))
            and not _matches(name, options.get("hide_name_regexes", [])))


def _sort(children, order_by):
    if order_by in _ORDER_FIELDS:
        field = _ORDER_FIELDS[order_by]
        return sorted(children, key=lambda c: (-getattr(c, field), c.name))
    return sorted(children, key=lambda c: c.name)


def _scope_view(accounted, options):
    """A GraphNodeProto tree by name scope: "a/b/c" under "a/b" under "a", the root on top."""
    min_occurrence = options.get("min_occurrence", 0)
    shown = {name: _shown(name, options) and _passes_min(stats, options)
             and stats.run_count >= min_occurrence
             for name, stats in accounted.items()}
    displayed_only = options.get("account_displayed_op_only", False)
    trims = options.get("trim_name_regexes", [])
    tree = {}  # path -> (GraphNodeProto, children paths)
    root = GraphNodeProto(name=_ROOT)
    tree[""] = (root, [])
    for name in sorted(accounted):
        parts = name.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            if path not in tree:
                tree[path] = (GraphNodeProto(name=path), [])
                tree["/".join(parts[:depth - 1])][1].append(path)

    def build(path, depth):
        node, children = tree[path]
        stats = accounted.get(path)
        if stats is not None:
            _fill(node, stats)
            node.total_definition_count = 1
            node.total_run_count = stats.run_count
            if shown[path] or not displayed_only:
                _set_own_totals(node)
        keep = []
        if not (path and _matches(path, trims)):
            for child in children:
                built = build(child, depth + 1)
                if built is None:
                    continue
                _add_totals(node, built)
                node.total_definition_count += built.total_definition_count
                node.total_run_count += built.total_run_count
                keep.append(built)
        visible = path == "" or (stats is not None and shown[path]) or keep
        if not visible:
            return None
        if depth >= options.get("max_depth", 100):
            keep = []
        node.children.extend(_sort(keep, options.get("order_by", "name")))
        return node

    return build("", 0)


def _op_view(accounted, options):
    """A MultiGraphNodeProto per op type under the root, each with its nodes."""
    root = MultiGraphNodeProto(name=_ROOT)
    displayed_only = options.get("account_displayed_op_only", False)
    groups = {}
    for name, stats in accounted.items():
        groups.setdefault(stats.op, []).append(stats)
    children = []
    for op, members in groups.items():
        group = MultiGraphNodeProto(name=op)
        for stats in sorted(members, key=lambda s: s.name):
            node = GraphNodeProto()
            _fill(node, stats)
            _set_own_totals(node)
            group.graph_nodes.append(node)
            for own, total in _TOTALS:
                setattr(group, own, getattr(group, own) + getattr(node, own))
        _set_own_totals(group)
        occurrence = sum(1 for m in members if m.run_count > 0)
        visible = (_shown(op, options) and group.exec_micros >= options.get("min_micros", 0)
                   and group.requested_bytes >= options.get("min_bytes", 0)
                   and group.parameters >= options.get("min_params", 0)
                   and occurrence >= options.get("min_occurrence", 0))
        if visible or not displayed_only:
            _add_totals(root, group)
        if visible:
            children.append(group)
    order_by = options.get("order_by", "name")
    if order_by == "occurrence":
        children.sort(key=lambda g: (-len(g.graph_nodes), g.name))
    else:
        children = _sort(children, order_by)
    root.children.extend(children)
    return root


def _columns(options):
    return [a for a in options.get("select", ["micros"]) if a in _COLUMNS]


def _own_and_total(node, attribute):
    own_field, total_field = {
        "params": ("parameters", "total_parameters"),
        "bytes": ("requested_bytes", "total_requested_bytes"),
        "peak_bytes": ("peak_bytes", "total_peak_bytes"),
        "residual_bytes": ("residual_bytes", "total_residual_bytes"),
        "output_bytes": ("output_bytes", "total_output_bytes"),
        "micros": ("exec_micros", "total_exec_micros"),
        "accelerator_micros": ("accelerator_exec_micros", "total_accelerator_exec_micros"),
        "cpu_micros": ("cpu_exec_micros", "total_cpu_exec_micros"),
    }[attribute]
    return getattr(node, own_field), getattr(node, total_field)


def _scope_text(root, options):
    columns = _columns(options)
    select = options.get("select", [])
    lines = ["node name | " + " | ".join(_COLUMNS[c][0] for c in columns)]

    def visit(node, indent):
        cells = []
        for c in columns:
            own, total = _own_and_total(node, c)
            fmt = _COLUMNS[c][1]
            unit = " params" if c == "params" else ""
            cells.append(f"{'--' if node.name == _ROOT else fmt(own)}/{fmt(total)}{unit}")
        extra = ""
        if "device" in select and node.devices:
            extra += " " + "|".join(node.devices)
        lines.append(f"{'  ' * indent}{node.name} ({', '.join(cells)}){extra}")
        for child in node.children:
            visit(child, indent + 1)

    visit(root, 0)
    return "\n".join(lines) + "\n"


def _op_text(root, options):
    columns = _columns(options)
    select = options.get("select", [])
    titles = [_COLUMNS[c][0] for c in columns]
    if "occurrence" in select:
        titles.append("op occurrence (run|defined)")
    lines = ["node name | " + " | ".join(titles)]
    width = max([len(g.name) for g in root.children] + [9]) + 2
    cumulative = {c: 0 for c in columns}
    for group in root.children:
        cells = []
        for c in columns:
            own, _ = _own_and_total(group, c)
            _, root_total = _own_and_total(root, c)
            cumulative[c] += own
            share = 100.0 * own / root_total if root_total else 0.0
            running = 100.0 * cumulative[c] / root_total if root_total else 0.0
            cells.append(f"{_COLUMNS[c][1](own)} ({running:.2f}%, {share:.2f}%)")
        if "occurrence" in select:
            ran = sum(1 for n in group.graph_nodes if n.run_count > 0)
            cells.append(f"{ran}|{len(group.graph_nodes)}")
        lines.append(group.name.ljust(width) + ", ".join(cells))
    return "\n".join(lines) + "\n"


def _emit(text, options, run_meta_list):
    output = options.get("output", "stdout")
    if output == "none":
        return
    if output == "stdout":
        sys.stdout.write(text)
        return
    kind, _, rest = output.partition(":")
    target = dict(part.split("=", 1) for part in rest.split(",") if "=" in part).get("outfile")
    if kind not in ("file", "timeline") or not target:
        raise errors.InvalidArgumentError(
            None, None, f"tf.profiler: output {output!r} must be 'stdout', 'none', "
            "'file:outfile=<path>' or 'timeline:outfile=<path>'.")
    if kind == "file":
        with open(target, "w") as f:
            f.write(text)
        return
    if not run_meta_list:
        raise errors.InvalidArgumentError(
            None, None, "tf.profiler: timeline output needs run_meta from a traced run.")
    with open(target, "w") as f:
        f.write(_timeline.Timeline(run_meta_list[-1].step_stats).generate_chrome_trace_format())


def _analyze(graph, run_meta_list, cmd, options):
    _check_options(cmd, options)
    records = _node_stats.collect([m.step_stats for m in run_meta_list])
    trainable, variables = _graph_nodes(graph, records)
    account = options.get("account_type_regexes", [".*"])
    accounted = {name: s for name, s in records.items()
                 if any(_matches(t, account) for t in _node_types(s, trainable, variables))}
    if cmd == "scope":
        result = _scope_view(accounted, options)
        text = _scope_text(result, options)
    else:
        result = _op_view(accounted, options)
        text = _op_text(result, options)
    _emit(text, options, run_meta_list)
    return result


@tf_export("profiler.profile")
def profile(graph=None, run_meta=None, op_log=None, cmd="scope", options=None):
    """Profiles `graph` (the default graph if None) with the step statistics of `run_meta` (a
    RunMetadata from a traced run): prints the report `options` ask for and returns it as a
    GraphNodeProto ('scope') or MultiGraphNodeProto ('op'). Without options, the trainable
    variables' parameter counts, as in TensorFlow. `op_log` (extra op types) is accepted and
    not used."""
    del op_log
    if graph is None:
        graph = _ops.get_default_graph()
    if options is None:
        options = ProfileOptionBuilder.trainable_variables_parameter()
    return _analyze(graph, [run_meta] if run_meta is not None else [], cmd, options)


@tf_export("profiler.Profiler")
class Profiler:
    """Profiles several traced steps of one graph: `add_step(step, run_meta)` after each, then
    `profile_name_scope(options)` or `profile_operations(options)`, which average the steps (or
    use the one `options['step']` names)."""

    def __init__(self, graph=None, op_log=None):
        del op_log
        self._graph = graph if graph is not None else _ops.get_default_graph()
        self._steps = {}

    def add_step(self, step, run_meta):
        self._steps[step] = run_meta

    def _run_metas(self, options):
        step = options.get("step", -1)
        if step in (-1, None):
            return list(self._steps.values())
        if step not in self._steps:
            raise errors.InvalidArgumentError(
                None, None, f"tf.profiler.Profiler: no step {step}; added steps: "
                f"{sorted(self._steps)}.")
        return [self._steps[step]]

    def profile_name_scope(self, options):
        return _analyze(self._graph, self._run_metas(options), "scope", options)

    def profile_operations(self, options):
        return _analyze(self._graph, self._run_metas(options), "op", options)

    def profile_graph(self, options):
        raise _unimplemented("the 'graph' view")

    def profile_python(self, options):
        raise _unimplemented("the 'code' view")

    def advise(self, options=None):
        raise _unimplemented("advise")
