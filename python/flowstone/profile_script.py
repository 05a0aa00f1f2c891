"""`flowstone profile script.py [args]`: runs a script with every Session.run traced after a
warm-up, then prints where the time went, by op type and by node.

Each distinct run (a fetch and feed signature, or a make_callable callable) runs `warmup` times
untraced first, so compiling and first allocations stay out of the numbers; its next `steps`
runs are traced (RunOptions FULL_TRACE) and the rest run untraced again. The tables add up the
kernels' time over all traced runs; `--timeline` also writes the last traced run as a Chrome trace.
"""

import runpy
import sys
import traceback

from flowstone.client import session as _session
from flowstone.client import timeline as _timeline
from flowstone.profiler import node_stats as _node_stats
from flowstone.protos import RunMetadata, RunOptions


class RunTracer:
    """The session interceptor: traces runs after each signature's warm-up and keeps their
    StepStats."""

    def __init__(self, warmup, steps):
        self.warmup = warmup
        self.steps = steps
        self.runs = {}  # callable -> runs so far
        self.step_stats = []

    def __call__(self, callable_, options, run_metadata, values):
        count = self.runs.get(callable_, 0)
        self.runs[callable_] = count + 1
        if not self.warmup <= count < self.warmup + self.steps:
            return _session.run_with_options(callable_, options, run_metadata, values)
        traced = RunOptions(trace_level=RunOptions.FULL_TRACE)
        if options is not None:
            traced.timeout_in_ms = options.timeout_in_ms
            traced.report_tensor_allocations_upon_oom = options.report_tensor_allocations_upon_oom
        metadata = run_metadata if run_metadata is not None else RunMetadata()
        outputs = _session.run_with_options(callable_, traced, metadata, values)
        recorded = RunMetadata()
        recorded.step_stats.CopyFrom(metadata.step_stats)
        self.step_stats.append(recorded.step_stats)
        return outputs


def report(step_stats, top):
    """The two tables as text: op types and nodes by total kernel time, `top` rows each."""
    nodes = _node_stats.collect(step_stats)
    runs = len(step_stats)
    # collect() averages over runs; the tables show totals over all traced runs.
    total = sum(n.exec_micros for n in nodes.values()) * runs
    lines = [f"Traced {runs} runs: {_node_stats.format_micros(total)} in kernels "
             f"({_node_stats.format_micros(total / max(runs, 1))} per run)."]
    by_op = {}
    for n in nodes.values():
        micros, executions, count = by_op.get(n.op, (0.0, 0, 0))
        by_op[n.op] = (micros + n.exec_micros * runs, executions + n.run_count * runs, count + 1)

    def share(micros):
        return f"{100.0 * micros / total:6.2f}%" if total else "   n/a"

    lines += ["", "Top op types by total time:",
              f"{'op type':<28} {'nodes':>6} {'runs':>8} {'total':>10} {'share':>7} "
              f"{'per run':>9}"]
    for op, (micros, executions, count) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"{op:<28} {count:>6} {executions:>8} "
                     f"{_node_stats.format_micros(micros):>10} {share(micros)} "
                     f"{_node_stats.format_micros(micros / max(executions, 1)):>9}")
    lines += ["", "Top nodes by total time:",
              f"{'node':<48} {'op type':<20} {'runs':>6} {'total':>10} {'share':>7}"]
    for n in sorted(nodes.values(), key=lambda n: -n.exec_micros)[:top]:
        micros = n.exec_micros * runs
        name = n.name if len(n.name) <= 48 else "..." + n.name[-45:]
        lines.append(f"{name:<48} {n.op:<20} {n.run_count * runs:>6} "
                     f"{_node_stats.format_micros(micros):>10} {share(micros)}")
    return "\n".join(lines) + "\n"


def run(script, args, warmup=5, steps=20, top=15, timeline=None):
    """Runs `script` with `args` as sys.argv[1:] and prints the report; returns the exit
    status (the script's own on SystemExit, 1 when it raised)."""
    tracer = RunTracer(warmup, steps)
    previous = _session.set_run_interceptor(tracer)
    saved_argv = sys.argv
    sys.argv = [script] + list(args)
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:  # noqa: BLE001 - the script's error is shown, then the profile
        traceback.print_exc()
        status = 1
    finally:
        sys.argv = saved_argv
        _session.set_run_interceptor(previous)
    if not tracer.step_stats:
        print(f"flowstone profile: no Session.run was traced ({sum(tracer.runs.values())} runs, "
              f"each signature's first {warmup} are warm-up). Lower --warmup or run more "
              "steps.")
        return status or 1
    print(report(tracer.step_stats, top), end="")
    if timeline:
        with open(timeline, "w") as f:
            f.write(_timeline.Timeline(tracer.step_stats[-1]).generate_chrome_trace_format())
        print(f"Wrote the last traced run's timeline to {timeline} (chrome://tracing, Perfetto).")
    return status
