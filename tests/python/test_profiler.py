"""The step profiler: RunOptions(trace_level) + RunMetadata.step_stats, the Chrome trace timeline
(checked against the Trace Event Format, and against real TensorFlow both ways), tf.profiler,
tf.train.ProfilerHook and `python -m flowstone profile`."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone.client import timeline
from flowstone.framework import tf_protos
from flowstone.protos import RewriterConfig
from flowstone.protos import RewriterConfig
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

StepStats = tf_protos.message_class("StepStats")
DT_FLOAT = tf_protos.enum_value("DataType", "DT_FLOAT")


def traced_run(sess, fetches, feed_dict=None, level=tf.RunOptions.FULL_TRACE):
    meta = tf.RunMetadata()
    out = sess.run(fetches, feed_dict, options=tf.RunOptions(trace_level=level),
                   run_metadata=meta)
    return out, meta


def node_stats(step_stats):
    """[(device, NodeExecStats)] of every recorded execution."""
    return [(dev.device, ns) for dev in step_stats.dev_stats for ns in dev.node_stats]


def subgraph(fetch_ops, fed_ops=()):
    """Names of the ops a fetch needs, stopping at fed ops (which do not run)."""
    seen, stack = set(), list(fetch_ops)
    while stack:
        op = stack.pop()
        if op.name in seen or op in fed_ops:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def check_timings(ns):
    assert ns.all_start_nanos > 0 and ns.all_start_micros == ns.all_start_nanos // 1000
    assert 0 <= ns.op_start_rel_nanos <= ns.op_end_rel_nanos <= ns.all_end_rel_nanos
    assert 0 <= ns.op_start_rel_micros <= ns.op_end_rel_micros <= ns.all_end_rel_micros
    assert ns.thread_id > 0


def mlp_graph(batch=64):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):  # one device, whatever the machine has
        x = tf.placeholder(tf.float32, [None, 256], name="x")
        w = tf.constant(np.random.RandomState(0).rand(256, 512).astype(np.float32), name="w")
        y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="act")
        total = tf.reduce_sum(y, name="total")
    feed = {x: np.ones((batch, 256), np.float32)}
    return graph, x, total, feed


def test_full_trace_records_every_node_of_the_fetched_subgraph():
    graph, x, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        value, meta = traced_run(sess, total, feed)
    assert value == pytest.approx(float(np.maximum(feed[x] @ graph.get_tensor_by_name(
        "w:0").op.get_attr("value"), 0).sum()), rel=1e-4)
    records = node_stats(meta.step_stats)
    names = [ns.node_name for _, ns in records]
    assert sorted(names) == sorted(subgraph([total.op], fed_ops=[x.op]))
    assert len(meta.step_stats.dev_stats) == 1
    assert meta.step_stats.dev_stats[0].device.endswith("CPU:0")
    for _, ns in records:
        check_timings(ns)
        op = graph.get_operation_by_name(ns.node_name)
        assert ns.timeline_label.startswith(f"{ns.node_name} = {op.type}(")
    by_name = {ns.node_name: ns for _, ns in records}
    mm = by_name["mm"]
    assert mm.timeline_label == "mm = MatMul(x, w)"
    assert mm.op_end_rel_nanos > mm.op_start_rel_nanos  # a 64x256x512 product takes time
    (out,) = mm.output
    desc = out.tensor_description
    assert out.slot == 0 and desc.dtype == DT_FLOAT
    assert [d.size for d in desc.shape.dim] == [64, 512]
    assert desc.allocation_description.requested_bytes == 64 * 512 * 4
    assert desc.allocation_description.allocator_name
    (memory,) = mm.memory
    assert memory.total_bytes == 64 * 512 * 4 and memory.allocator_bytes_in_use > 0
    scalar = by_name["total"].output[0].tensor_description
    assert list(scalar.shape.dim) == [] and scalar.dtype == DT_FLOAT
    # Constants are not executed; they are recorded with no time, so the trace is complete.
    w = by_name["w"]
    assert w.op_end_rel_nanos == 0 and w.output[0].tensor_description.shape.dim[0].size == 256


@pytest.mark.parametrize("level", [tf.RunOptions.SOFTWARE_TRACE, tf.RunOptions.HARDWARE_TRACE])
def test_every_trace_level_traces_fully(level):
    graph, _, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        _, meta = traced_run(sess, total, feed, level=level)
    assert "mm" in {ns.node_name for _, ns in node_stats(meta.step_stats)}


def test_untraced_runs_leave_step_stats_empty():
    graph, _, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        _, meta = traced_run(sess, total, feed)
        assert meta.step_stats.dev_stats
        # The same RunMetadata, untraced: cleared, as TensorFlow's run does.
        sess.run(total, feed, options=tf.RunOptions(), run_metadata=meta)
        assert not meta.HasField("step_stats") and meta.ByteSize() == 0
        plain = tf.RunMetadata()
        sess.run(total, feed, run_metadata=plain)
        assert plain.ByteSize() == 0
        # A trace asked for without a RunMetadata to fill is not an error.
        sess.run(total, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))


def test_invalid_trace_level_is_rejected():
    graph, _, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="trace_level must be"):
            sess.run(total, feed, options=tf.RunOptions(trace_level=7),
                     run_metadata=tf.RunMetadata())
        assert sess.run(total, feed) > 0  # the session stays usable


def test_make_callable_accepts_run_metadata():
    graph, x, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        call = sess.make_callable(total, [x], accept_options=True)
        meta = tf.RunMetadata()
        call(feed[x], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=meta)
    assert "act" in {ns.node_name for _, ns in node_stats(meta.step_stats)}


def test_parallel_plan_traces_both_branches_with_sane_times():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.ones((256, 256), np.float32))
        a = tf.matmul(x, x, name="left")
        b = tf.matmul(x, tf.transpose(x), name="right")
        out = tf.add(a, b, name="sum")
    # Constant folding would compute the whole graph when the plan is built.
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.constant_folding = RewriterConfig.OFF
    with tf.Session(graph=graph, config=config) as sess:
        for _ in range(3):
            _, meta = traced_run(sess, out)
            stats = {ns.node_name: ns for _, ns in node_stats(meta.step_stats)}
            assert {"left", "right", "sum"} <= set(stats)
            for ns in stats.values():
                check_timings(ns)
            # A consumer starts after its producers end.
            end = max(stats[n].all_start_nanos + stats[n].all_end_rel_nanos
                      for n in ("left", "right"))
            assert stats["sum"].all_start_nanos >= end


def test_function_bodies_are_traced_with_their_function_prefix():
    graph = tf.Graph()
    with graph.as_default():
        result = tf.while_loop(lambda i, v: i < 5,
                               lambda i, v: (i + 1, tf.matmul(v, v, name="square")),
                               [tf.constant(0), tf.eye(4)])
    with tf.Session(graph=graph) as sess:
        _, meta = traced_run(sess, result)
    names = [ns.node_name for _, ns in node_stats(meta.step_stats)]
    body = [n for n in names if n.endswith("/square")]
    # Five iterations of the body, each named after the body function it ran in.
    assert len(body) == 5 and len(set(body)) == 1
    prefix = body[0][:-len("/square")]
    functions = {f.signature.name for f in graph.as_graph_def().library.function}
    assert prefix in functions
    labels = [ns.timeline_label for _, ns in node_stats(meta.step_stats)
              if ns.node_name == body[0]]
    assert labels[0].startswith(f"{body[0]} = MatMul({prefix}/")
    # Each iteration's arrows come from that iteration's producers, never from a later one.
    trace = check_trace_event_format(timeline.Timeline(meta.step_stats)
                                     .generate_chrome_trace_format(show_dataflow=True))
    ends = {}
    for event in trace["traceEvents"]:
        if event["ph"] in "st":
            ends.setdefault(event["id"], {})[event["ph"]] = event["ts"]
    assert sum(1 for e in ends.values() if e["s"] <= e["t"]) == len(ends) > 5


# The Trace Event Format (the JSON that chrome://tracing and Perfetto load): required keys and
# types per phase.
_PHASE_KEYS = {"X": {"ts", "dur"}, "M": {"args"}, "s": {"ts", "id", "cat"},
               "t": {"ts", "id", "cat"}, "f": {"ts", "id", "cat"}, "C": {"ts", "args"}}


def check_trace_event_format(text):
    trace = json.loads(text)
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    flows = {}
    for event in trace["traceEvents"]:
        ph = event["ph"]
        assert ph in _PHASE_KEYS, event
        assert isinstance(event["name"], str)
        assert type(event["pid"]) is int and type(event["tid"]) is int
        assert _PHASE_KEYS[ph] <= set(event), event
        if "ts" in event:
            assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        if ph == "X":
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
        if ph == "M":
            assert event["name"] in ("process_name", "thread_name", "process_sort_index",
                                     "thread_sort_index")
        if ph == "C":
            assert all(isinstance(v, (int, float)) for v in event["args"].values())
        if ph in "stf":
            flows.setdefault(event["id"], []).append(ph)
    for phases in flows.values():
        assert phases[0] == "s" and len(phases) >= 2
    return trace


def test_chrome_trace_follows_the_trace_event_format():
    graph, _, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        _, meta = traced_run(sess, total, feed)
    text = timeline.Timeline(meta.step_stats).generate_chrome_trace_format(
        show_dataflow=True, show_memory=True)
    trace = check_trace_event_format(text)
    events = trace["traceEvents"]
    complete = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert complete["mm"]["name"] == "MatMul" and complete["mm"]["dur"] > 0
    assert complete["mm"]["args"]["input0"] == "x"
    processes = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert any(p.endswith("CPU:0 Compute") for p in processes) and "Allocators" in processes
    flow_names = {e["name"] for e in events if e["ph"] == "s"}
    assert {"w", "mm", "act"} <= flow_names
    assert any(e["ph"] == "C" for e in events)
    plain = check_trace_event_format(timeline.Timeline(meta.step_stats)
                                     .generate_chrome_trace_format(show_dataflow=False))
    assert not any(e["ph"] in "stC" for e in plain["traceEvents"])


_TF_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow.compat.v1 as tf
    from tensorflow.core.framework import step_stats_pb2
    from tensorflow.python.client import timeline
    tf.disable_eager_execution()
    ours, theirs_out, rendered_out = sys.argv[1:4]
    # TensorFlow's timeline renders Flowstone's step stats...
    stats = step_stats_pb2.StepStats()
    with open(ours, "rb") as f:
        stats.ParseFromString(f.read())
    with open(rendered_out, "w") as f:
        f.write(timeline.Timeline(stats).generate_chrome_trace_format(show_dataflow=True,
                                                                      show_memory=True))
    # ... and TensorFlow's own step stats go back for Flowstone's timeline.
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    y = tf.nn.relu(tf.matmul(x, tf.ones([8, 4]), name="mm"), name="act")
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, {x: np.ones((2, 8), np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    with open(theirs_out, "wb") as f:
        f.write(meta.step_stats.SerializeToString())
""")


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_timelines_interoperate_with_tensorflow_both_ways(tmp_path):
    graph, _, total, feed = mlp_graph()
    with tf.Session(graph=graph) as sess:
        _, meta = traced_run(sess, total, feed)
    ours = tmp_path / "ours.pb"
    ours.write_bytes(meta.step_stats.SerializeToString())
    script = tmp_path / "tf_side.py"
    script.write_text(_TF_SCRIPT)
    theirs, rendered = tmp_path / "theirs.pb", tmp_path / "rendered.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([PEER_PYTHON, str(script), str(ours), str(theirs), str(rendered)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # TensorFlow's timeline read every node of ours.
    tf_trace = json.loads(rendered.read_text())
    rendered_nodes = {e["args"]["name"] for e in tf_trace["traceEvents"]
                      if e.get("ph") == "X" and "name" in e.get("args", {})}
    assert {"mm", "act", "total"} <= rendered_nodes
    # Ours renders TensorFlow's.
    their_stats = StepStats.FromString(theirs.read_bytes())
    trace = check_trace_event_format(
        timeline.Timeline(their_stats).generate_chrome_trace_format(show_memory=True))
    ops = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    # TensorFlow's CPU build may run its oneDNN kernel, "_MklMatMul".
    assert "Relu" in ops and any(op.endswith("MatMul") for op in ops)


def trained_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 32], name="x")
        with tf.variable_scope("dense"):
            w = tf.get_variable("kernel", [32, 16])
            b = tf.get_variable("bias", [16], initializer=tf.zeros_initializer())
            y = tf.nn.relu(tf.matmul(x, w) + b)
        loss = tf.reduce_mean(tf.square(y))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return graph, x, train, init


def test_profile_op_view_reports_time_by_op_type(capsys):
    graph, x, train, init = trained_graph()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        _, meta = traced_run(sess, train, {x: np.ones((64, 32), np.float32)})
    opts = tf.profiler.ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0)
    opts["select"] = ["micros", "bytes", "occurrence"]
    result = tf.profiler.profile(graph, run_meta=meta, cmd="op", options=opts)
    text = capsys.readouterr().out
    assert text.startswith("node name | total execution time | requested bytes | op occurrence")
    for op in ("MatMul", "Relu", "ReluGrad"):
        assert op in text
    assert isinstance(result, tf.profiler.MultiGraphNodeProto) and result.name == "_TFProfRoot"
    groups = {g.name: g for g in result.children}
    assert result.total_exec_micros == sum(g.exec_micros for g in groups.values())
    assert result.total_exec_micros > 0
    assert {n.name for n in groups["MatMul"].graph_nodes} >= {"dense/MatMul"}
    # Sorted by time, largest first.
    times = [g.total_exec_micros for g in result.children]
    assert times == sorted(times, reverse=True)


def test_profile_scope_view_and_parameters(capsys, tmp_path):
    graph, x, train, init = trained_graph()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        _, meta = traced_run(sess, train, {x: np.ones((8, 32), np.float32)})
    # TensorFlow's default: trainable parameters by scope.
    params = tf.profiler.profile(graph)
    assert params.total_parameters == 32 * 16 + 16
    dense = next(c for c in params.children if c.name == "dense")
    assert {c.name: c.parameters for c in dense.children} == {"dense/kernel": 512,
                                                             "dense/bias": 16}
    assert "  dense/kernel (512/512 params)" in capsys.readouterr().out
    opts = (tf.profiler.ProfileOptionBuilder(
        tf.profiler.ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0))
        .with_max_depth(1).with_file_output(str(tmp_path / "scope.txt")).build())
    root = tf.profiler.profile(graph, run_meta=meta, cmd="scope", options=opts)
    assert capsys.readouterr().out == ""
    text = (tmp_path / "scope.txt").read_text()
    assert text.splitlines()[1].startswith("_TFProfRoot (--/")
    assert "  dense (" in text and "gradients" in text
    assert root.total_exec_micros == sum(c.total_exec_micros for c in root.children)
    assert all(not c.children for c in root.children)  # max_depth 1
    timeline_opts = (tf.profiler.ProfileOptionBuilder()
                     .with_timeline_output(str(tmp_path / "t.json")).build())
    tf.profiler.profile(graph, run_meta=meta, cmd="scope", options=timeline_opts)
    check_trace_event_format((tmp_path / "t.json").read_text())


def test_profile_rejects_what_it_does_not_measure():
    graph, *_ = trained_graph()
    with pytest.raises(tf.errors.UnimplementedError, match="float operation"):
        tf.profiler.profile(graph, options=tf.profiler.ProfileOptionBuilder.float_operation())
    with pytest.raises(tf.errors.UnimplementedError, match="'code' view"):
        tf.profiler.profile(graph, cmd="code")
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown cmd 'ops'"):
        tf.profiler.profile(graph, cmd="ops")
    bad = tf.profiler.ProfileOptionBuilder().select(["micros", "flops"]).build()
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown select attribute 'flops'"):
        tf.profiler.profile(graph, cmd="op", options=bad)


def test_profiler_averages_added_steps(capsys):
    graph, x, train, init = trained_graph()
    profiler = tf.profiler.Profiler(graph)
    # As written, unfused: fused, dense/MatMul would run inside dense/Relu (a _FusedMatMul).
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for step in range(3):
            _, meta = traced_run(sess, train, {x: np.ones((16, 32), np.float32)})
            profiler.add_step(step, meta)
    opts = (tf.profiler.ProfileOptionBuilder(
        tf.profiler.ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0))
        .with_empty_output().build())
    result = profiler.profile_operations(opts)
    matmuls = {g.name: g for g in result.children}["MatMul"]
    runs = {n.name: n.run_count for n in matmuls.graph_nodes}
    # Per step, averaged over the three: the forward product ran once in each.
    assert runs["dense/MatMul"] == 1 and set(runs.values()) <= {0, 1}
    one = profiler.profile_operations(dict(opts, step=1))
    assert one.total_exec_micros > 0
    with pytest.raises(tf.errors.InvalidArgumentError, match="no step 7"):
        profiler.profile_operations(dict(opts, step=7))
    assert capsys.readouterr().out == ""


def test_profiler_hook_writes_timelines(tmp_path):
    graph, x, train, init = trained_graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        train = tf.group(train, tf.assign_add(step, 1))
        hook = tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(6):
                sess.run(train, {x: np.ones((4, 32), np.float32)})
    files = sorted(os.listdir(tmp_path))
    # As in TensorFlow: the timer starts at the first run (step 0), then every second step.
    assert files == ["timeline-2.json", "timeline-4.json", "timeline-6.json"]
    for name in files:
        trace = check_trace_event_format((tmp_path / name).read_text())
        assert any(e["ph"] == "X" and e["name"] == "MatMul" for e in trace["traceEvents"])


def test_profiler_hook_needs_a_global_step():
    with tf.Graph().as_default():
        hook = tf.train.ProfilerHook(save_steps=1)
        with pytest.raises(RuntimeError, match="Global step should be created"):
            hook.begin()


_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import flowstone as tf
    x = tf.placeholder(tf.float32, [None, 64])
    w = tf.Variable(tf.ones([64, 64]))
    loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
    train = tf.train.GradientDescentOptimizer(1e-4).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(12):
            sess.run(train, {x: np.ones((32, 64), np.float32)})
    print("script args:", sys.argv[1:])
""")


def test_profile_command_prints_top_ops(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    trace = tmp_path / "last.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", "flowstone", "profile", "--warmup", "2",
                           "--steps", "4", "--timeline", str(trace), str(script), "--lr", "3"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "script args: ['--lr', '3']" in out
    assert "Traced 4 runs" in out
    op_table = out.split("Top op types by total time:")[1].split("Top nodes")[0]
    assert "MatMul" in op_table and "ReluGrad" in op_table
    assert "Top nodes by total time:" in out
    check_trace_event_format(trace.read_text())


def test_profile_command_reports_a_failing_script(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("raise SystemExit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", "flowstone", "profile", str(script)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 3
    assert "no Session.run was traced" in done.stdout
