"""Per-node totals from traced runs' StepStats, and the small formatting helpers shared by
`tf.profiler.profile` and `python -m flowstone profile`."""

import re

# "name = Op(...)": the op type of a node, from its timeline label.
_LABEL_OP = re.compile(r"^.*? = (.*?)\(")


class NodeStats:
    """What the profiled runs recorded for one node, summed over its executions (a node in a
    loop body runs several times per step) and averaged over steps."""

    __slots__ = ("name", "op", "devices", "run_count", "exec_micros", "requested_bytes",
                 "peak_bytes", "output_bytes", "shapes", "parameters")

    def __init__(self, name, op):
        self.name = name
        self.op = op
        self.devices = []
        self.run_count = 0
        self.exec_micros = 0.0
        self.requested_bytes = 0.0
        self.peak_bytes = 0.0
        self.output_bytes = 0.0
        self.shapes = []  # TensorShapeProto-like per output, from the last execution
        self.parameters = 0


def op_type(node_exec_stats):
    """The op type of a NodeExecStats, read from its timeline label ("unknown" if absent)."""
    match = _LABEL_OP.match(node_exec_stats.timeline_label or "")
    return match.group(1) if match else "unknown"


def _exec_micros(ns):
    """The kernel's time: op_end - op_start, in nanoseconds' precision when they are filled."""
    if ns.op_end_rel_nanos or ns.op_start_rel_nanos:
        return max(ns.op_end_rel_nanos - ns.op_start_rel_nanos, 0) / 1000.0
    return float(max(ns.op_end_rel_micros - ns.op_start_rel_micros, 0))


def collect(step_stats_list):
    """{node name: NodeStats} over the given StepStats (one per traced run), with times and
    bytes averaged over the runs, so a row reads as "per step"."""
    stats = {}
    steps = max(len(step_stats_list), 1)
    for step_stats in step_stats_list:
        for dev in step_stats.dev_stats:
            for ns in dev.node_stats:
                node = stats.get(ns.node_name)
                if node is None:
                    node = stats[ns.node_name] = NodeStats(ns.node_name, op_type(ns))
                if dev.device not in node.devices:
                    node.devices.append(dev.device)
                node.run_count += 1
                node.exec_micros += _exec_micros(ns)
                output_bytes = sum(o.tensor_description.allocation_description.requested_bytes
                                   for o in ns.output)
                allocated = sum(m.total_bytes for m in ns.memory)
                node.output_bytes += output_bytes
                node.requested_bytes += allocated
                node.peak_bytes += max((m.peak_bytes for m in ns.memory), default=0)
                node.shapes = [o.tensor_description.shape for o in ns.output]
    for node in stats.values():
        node.exec_micros /= steps
        node.requested_bytes /= steps
        node.peak_bytes /= steps
        node.output_bytes /= steps
        node.run_count = -(-node.run_count // steps)  # ceil: a node that ran at all shows 1
    return stats


def format_micros(micros):
    if micros >= 1e6:
        return f"{micros / 1e6:.2f}sec"
    if micros >= 1e3:
        return f"{micros / 1e3:.2f}ms"
    return f"{micros:.0f}us"


def format_bytes(value):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= size:
            return f"{value / size:.2f}{unit}"
    return f"{value:.0f}B"


def format_count(value):
    for unit, size in (("b", 10 ** 9), ("m", 10 ** 6), ("k", 10 ** 3)):
        if value >= size:
            return f"{value / size:.2f}{unit}"
    return f"{value:.0f}"
