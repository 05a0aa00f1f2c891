"""Chrome trace timelines of a traced run (TensorFlow's `tensorflow.python.client.timeline`).

    run_metadata = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=run_metadata)
    trace = timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
    open("timeline.json", "w").write(trace)   # open in chrome://tracing or ui.perfetto.dev

The output is the Trace Event Format's JSON object form: `traceEvents` holds one complete event
(`ph: "X"`) per executed node, on a process per device and a thread lane per executor thread,
named by metadata events (`ph: "M"`). `show_dataflow` adds flow events (`ph: "s"` at the end of
a producer, `ph: "t"` at the start of its consumer) for each tensor edge; `show_memory` adds a
counter track (`ph: "C"`) per allocator with its bytes in use after each node. Any StepStats
message works: Flowstone's, or one produced by TensorFlow.
"""

import json
import re

__all__ = ["Timeline"]

# "name = Op(input, input:1, ^control)": TensorFlow's timeline_label for a CPU node.
_LABEL = re.compile(r"^(.*?) = (.*?)\((.*)\)$")


def _parse_label(label):
    """(op type, [input node names]) from a timeline label; ("unknown", []) for other forms."""
    match = _LABEL.match(label or "")
    if match is None:
        return "unknown", []
    inputs = [i.strip() for i in match.group(3).split(",") if i.strip()]
    # A tensor "x:1" comes from node "x"; control inputs ("^x") carry no data.
    names = [i.split(":")[0] for i in inputs if not i.startswith("^")]
    return match.group(2), names


def _micros(node, field):
    """A time in microseconds, from the nanosecond field when the producer filled it."""
    nanos = getattr(node, field.replace("micros", "nanos"), 0)
    return nanos / 1000.0 if nanos else float(getattr(node, field))


class Timeline:
    """Renders one StepStats (RunMetadata.step_stats) as a Chrome trace. `graph` is accepted for
    TensorFlow's signature; the step statistics alone carry what the trace shows."""

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False):
        """The trace as a JSON string (the Trace Event Format's object form)."""
        events = []
        executions = []  # (start micros, end micros, pid, tid, name, input names)
        pids = {}
        for dev in self._step_stats.dev_stats:
            pid = pids.setdefault(dev.device, len(pids))
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"name": f"{dev.device} Compute"}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"sort_index": pid}})
            tids = set()
            for node in dev.node_stats:
                op, inputs = _parse_label(node.timeline_label)
                start = _micros(node, "all_start_micros")
                duration = max(_micros(node, "all_end_rel_micros"), 0.0)
                tid = int(node.thread_id)
                tids.add(tid)
                args = {"name": node.node_name, "op": op}
                for i, name in enumerate(inputs):
                    args[f"input{i}"] = name
                events.append({"name": op, "cat": "Op", "ph": "X", "pid": pid, "tid": tid,
                               "ts": start, "dur": duration, "args": args})
                executions.append((start, start + duration, pid, tid, node.node_name, inputs))
            for tid in sorted(tids):
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": f"thread {tid}"}})
        if show_dataflow:
            events.extend(self._flow_events(executions))
        if show_memory:
            events.extend(self._memory_events(len(pids)))
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"})

    @staticmethod
    def _flow_events(executions):
        """A flow arrow per data edge whose producer ran in this step, from the producer's
        latest execution before the consumer started (a loop body node runs many times)."""
        events = []
        latest = {}  # node name -> (pid, tid, end micros), in order of start time
        for start, end, pid, tid, name, inputs in sorted(executions, key=lambda e: e[0]):
            for source_name in inputs:
                source = latest.get(source_name)
                if source is None:
                    continue
                flow_id = len(events) // 2
                src_pid, src_tid, src_end = source
                events.append({"name": source_name, "cat": "DataFlow", "ph": "s", "id": flow_id,
                               "pid": src_pid, "tid": src_tid, "ts": src_end})
                # "bp": "e" binds the arrow's head to the consumer's slice, which starts here.
                events.append({"name": source_name, "cat": "DataFlow", "ph": "t",
                               "id": flow_id, "pid": pid, "tid": tid, "ts": start, "bp": "e"})
            latest[name] = (pid, tid, end)
        return events

    def _memory_events(self, pid):
        """An "Allocators" process with one counter per allocator: its bytes in use after each
        node."""
        events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                   "args": {"name": "Allocators"}}]
        samples = []
        for dev in self._step_stats.dev_stats:
            for node in dev.node_stats:
                end = _micros(node, "all_start_micros") + _micros(node, "all_end_rel_micros")
                for memory in node.memory:
                    samples.append((end, memory.allocator_name,
                                    int(memory.allocator_bytes_in_use)))
        for ts, allocator, in_use in sorted(samples):
            events.append({"name": allocator, "cat": "Memory", "ph": "C", "pid": pid, "tid": 0,
                           "ts": ts, "args": {allocator: in_use}})
        return events
