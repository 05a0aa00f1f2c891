"""The graph optimizer a session runs when it compiles a plan: constant folding,
common-subexpression elimination and exact arithmetic simplification, each switched off through
ConfigProto.graph_options.rewrite_options. Results must stay bit-identical with any rewrite on or
off; folding and merging are observed in the step statistics of traced runs (a folded node shows
as a Const, as in TensorFlow; merged and forwarded nodes do not run)."""

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework.ops import apply_op
from flowstone.protos import RewriterConfig

from op_cases import CASES

TOGGLES = ("constant_folding", "arithmetic_optimization", "dependency_optimization",
           "common_subgraph_elimination")


def config(**toggles):
    """A ConfigProto on the CPU with the given RewriterConfig fields."""
    cfg = tf.ConfigProto(device_count={"GPU": 0})
    for name, value in toggles.items():
        setattr(cfg.graph_options.rewrite_options, name, value)
    return cfg


CONFIGS = {
    "default": config(),
    "all_on": config(**{t: RewriterConfig.ON for t in TOGGLES}),
    "disable_meta_optimizer": config(disable_meta_optimizer=True),
    **{f"no_{t}": config(**{t: RewriterConfig.OFF for t in TOGGLES}) for t in TOGGLES},
}
OFF = CONFIGS["disable_meta_optimizer"]


def traced(graph, fetches, feed_dict=None, cfg=None):
    """(values, {node name: op type} of the nodes the run recorded)."""
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=cfg or CONFIGS["default"]) as sess:
        out = sess.run(fetches, feed_dict,
                       options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=meta)
    # The op type is in TensorFlow's timeline label, "name = Type(inputs)".
    ran = {ns.node_name: ns.timeline_label.split(" = ")[1].split("(")[0]
           for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
    return out, ran


def bits(values):
    """Each fetched array's dtype, shape and bytes: equal exactly when bit-identical."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    out = []
    for v in values:
        v = np.asarray(v)
        out.append((v.dtype.str, v.shape, v.tolist() if v.dtype == object else v.tobytes()))
    return out


def run_all_configs(build, feed=None):
    """Runs the graph `build()` returns under every config; all results are bit-identical."""
    results = {}
    for name, cfg in CONFIGS.items():
        graph = tf.Graph()
        with graph.as_default():
            fetches, placeholders = build()
        feed_dict = dict(zip(placeholders, feed or []))
        with tf.Session(graph=graph, config=cfg) as sess:
            results[name] = bits(sess.run(fetches, feed_dict))
    reference = results.pop("disable_meta_optimizer")
    for name, got in results.items():
        assert got == reference, f"{name} differs from the unoptimized plan"
    return reference


# Graphs where every rewrite has something to do, with edge values (-0.0, NaN, inf).
EDGE = np.array([[-0.0, 0.0, np.nan], [np.inf, -np.inf, -1.5]], np.float32)


def preprocessing_graph():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    mean = tf.constant([0.5, -0.25, 2.0], name="mean")
    std = tf.sqrt(tf.constant([4.0, 2.0, 0.5]), name="std")
    scale = tf.reciprocal(std) * tf.constant(2.0)
    y = (x - mean) * scale
    y = tf.identity(tf.identity(y))
    y = y * tf.constant(1.0) + tf.constant(-0.0)
    y = tf.transpose(tf.transpose(y, [1, 0]), [1, 0])
    z = tf.cast(y, tf.float32) - tf.constant(0.0)
    w = x + tf.constant(0.0)  # not exact for -0.0: must stay
    return [y, z, w, x * 2.0, x * 2.0, tf.reshape(x, [2, 3])], [x]


def integer_graph():
    x = tf.placeholder(tf.int32, [None], name="x")
    k = tf.range(5) * 3 + tf.constant(1)
    return [x + 0, 0 + x, x * 1, x - 0, x // 1, k, tf.reduce_sum(k) + x], [x]


def test_rewrites_keep_results_bit_identical():
    run_all_configs(preprocessing_graph, [EDGE])
    run_all_configs(integer_graph, [np.array([7, -3, 2**31 - 1], np.int32)])


def test_x_plus_positive_zero_keeps_negative_zero_exact():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        plus = tf.add(x, tf.constant(0.0), name="plus")
        minus_neg = tf.add(x, tf.constant(-0.0), name="plus_neg")
    (p, n), ran = traced(graph, [plus, minus_neg], {x: [-0.0, 1.0]})
    assert not np.signbit(p[0]) and "plus" in ran  # -0.0 + 0.0 is +0.0: not rewritten
    assert np.signbit(n[0]) and "plus_neg" not in ran  # x + (-0.0) is exactly x: forwarded


def test_constant_subgraph_is_folded_and_shown_as_a_const():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        b = tf.constant(3.0, name="b")
        m = tf.multiply(tf.exp(a, name="e"), b, name="m")
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        y = tf.add(m, x, name="y")
    feed = {x: np.ones((2, 3), np.float32)}
    folded, ran = traced(graph, y, feed)
    plain, ran_off = traced(graph, y, feed, OFF)
    assert bits(folded) == bits(plain)
    assert ran["m"] == "Const" and ran["y"] == "AddV2"
    assert not {"a", "b", "e"} & set(ran)  # the folded node's inputs no longer run
    assert ran_off["m"] == "Mul" and {"a", "b", "e"} <= set(ran_off)
    no_folding = config(constant_folding=RewriterConfig.OFF)
    assert traced(graph, y, feed, no_folding)[1]["m"] == "Mul"


def test_fetching_or_feeding_a_folded_node():
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant([1.0, 2.0], name="c")
        m = tf.square(c, name="m")
        y = tf.add(m, 1.0, name="y")
    with tf.Session(graph=graph, config=CONFIGS["default"]) as sess:
        np.testing.assert_array_equal(sess.run(m), [1.0, 4.0])
        np.testing.assert_array_equal(sess.run(y), [2.0, 5.0])
        np.testing.assert_array_equal(sess.run(y, {m: [10.0, 20.0]}), [11.0, 21.0])
        np.testing.assert_array_equal(sess.run(y, {c: [3.0, 4.0]}), [10.0, 17.0])
        np.testing.assert_array_equal(sess.run([m, y], {c: [0.5, 1.0]}), [[0.25, 1.0], [1.25, 2.0]])


def test_a_node_failing_at_fold_time_fails_at_run_time_with_its_name():
    graph = tf.Graph()
    with graph.as_default():
        params = tf.constant([1.0, 2.0, 3.0])
        bad = tf.gather(params, tf.constant([5]), name="bad_gather")
        good = tf.reduce_sum(params, name="good")
    with tf.Session(graph=graph, config=CONFIGS["default"]) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            sess.run(bad)
        assert err.value.op is not None and err.value.op.name == "bad_gather"
        assert "bad_gather" in str(err.value)
        assert sess.run(good) == 6.0  # the session stays usable


def test_identical_nodes_are_merged():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        a = tf.multiply(x, tf.constant(2.0), name="a")
        b = tf.multiply(x, tf.constant(2.0), name="b")
        c = tf.multiply(x, tf.constant(3.0), name="c")
        sa = tf.sin(a, name="sa")
        sb = tf.sin(b, name="sb")
    feed = {x: [1.0, -2.0, 0.5]}
    out, ran = traced(graph, [sa, sb, c], feed)
    off, ran_off = traced(graph, [sa, sb, c], feed, OFF)
    assert bits(out) == bits(off)
    assert {"a", "sa", "c"} <= set(ran) and not {"b", "sb"} & set(ran)
    assert {"a", "b", "sa", "sb", "c"} <= set(ran_off)
    no_cse = config(common_subgraph_elimination=RewriterConfig.OFF)
    assert {"b", "sb"} <= set(traced(graph, [sa, sb, c], feed, no_cse)[1])


def test_random_ops_are_never_folded_or_merged():
    graph = tf.Graph()
    with graph.as_default():
        r1 = tf.random_uniform([1000], name="r1")
        r2 = tf.random_uniform([1000], name="r2")
        n = tf.random_normal([4], name="n") * 1.0
    with tf.Session(graph=graph, config=CONFIGS["all_on"]) as sess:
        a1, a2, n1 = sess.run([r1, r2, n])
        b1, _, n2 = sess.run([r1, r2, n])
    assert not np.array_equal(a1, a2)  # not merged
    assert not np.array_equal(a1, b1) and not np.array_equal(n1, n2)  # not folded
    _, ran = traced(graph, [r1, r2], cfg=CONFIGS["all_on"])
    assert list(ran.values()).count("RandomUniform") == 2


def test_stateful_ops_and_variables_are_untouched():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(0.0, name="v")
        inc = tf.assign_add(v, 1.0)
        with tf.control_dependencies([inc]):
            after = tf.identity(v.read_value(), name="after")
            again = tf.identity(v.read_value(), name="again")
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=CONFIGS["all_on"]) as sess:
        sess.run(init)
        assert [sess.run(after) for _ in range(3)] == [1.0, 2.0, 3.0]
        assert sess.run([after, again]) == [4.0, 4.0]  # one increment per run
        assert sess.run(v) == 4.0


def test_rewrites_inside_a_cond_branch_and_a_while_loop():
    def build():
        x = tf.placeholder(tf.float32, [3], name="x")
        k = tf.constant([1.0, 2.0, 3.0])
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * tf.exp(k) * 1.0, lambda: x + tf.sqrt(k))
        _, w = tf.while_loop(lambda i, a: i < 3,
                             lambda i, a: (i + 1, a * tf.constant(1.0) + tf.exp(k)),
                             [tf.constant(0), x])
        return [y, w, tf.gradients(tf.reduce_sum(w * w), x)[0]], [x]
    run_all_configs(build, [np.array([0.5, -1.0, 2.0], np.float32)])
    run_all_configs(build, [np.array([-0.5, -1.0, 0.0], np.float32)])


def test_training_step_is_identical_with_and_without_rewrites():
    def build():
        rng = np.random.RandomState(3)
        x = tf.placeholder(tf.float32, [8, 4], name="x")
        w = tf.Variable(rng.randn(4, 3).astype(np.float32))
        b = tf.Variable(np.zeros(3, np.float32))
        logits = tf.matmul((x - tf.constant(0.5)) * tf.constant(2.0), w) + b
        loss = tf.reduce_mean(tf.square(logits - tf.constant(1.0)))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return [step, loss, tf.global_variables_initializer(), w], [x]

    results = {}
    data = np.random.RandomState(4).rand(8, 4).astype(np.float32)
    for name, cfg in CONFIGS.items():
        graph = tf.Graph()
        with graph.as_default():
            (step, loss, init, w), (x,) = build()
        with tf.Session(graph=graph, config=cfg) as sess:
            sess.run(init)
            losses = [sess.run([step, loss], {x: data})[1] for _ in range(3)]
            results[name] = bits([np.array(losses), sess.run(w)])
    assert all(r == results["disable_meta_optimizer"] for r in results.values())


def test_rewriter_config_has_tensorflows_fields():
    cfg = tf.ConfigProto()
    rewrites = cfg.graph_options.rewrite_options
    assert rewrites.constant_folding == RewriterConfig.DEFAULT == 0
    assert (RewriterConfig.ON, RewriterConfig.OFF, RewriterConfig.AGGRESSIVE) == (1, 2, 3)
    cfg.graph_options.rewrite_options.arithmetic_optimization = RewriterConfig.OFF
    assert cfg.graph_options.rewrite_options.arithmetic_optimization == 2
    with pytest.raises(AttributeError, match="no \"constant_fold\" field"):
        rewrites.constant_fold = 1
    with pytest.raises(ValueError, match="must be a Toggle"):
        tf.Session(config=config(constant_folding=9))


def test_max_folded_constant_in_bytes_limits_folding():
    graph = tf.Graph()
    with graph.as_default():
        big = tf.fill([1000], tf.constant(2.0), name="big")
    small = config()
    small.graph_options.optimizer_options.max_folded_constant_in_bytes = 100
    assert traced(graph, big)[1]["big"] == "Const"
    assert traced(graph, big, cfg=small)[1]["big"] == "Fill"


def _constant_case_graph(case):
    graph = tf.Graph()
    with graph.as_default():
        consts = [tf.constant(np.asarray(x)) for x in case.inputs]
        op = apply_op(case.op, consts, case.attrs)
    return graph, op


CONSTANT_CASES = [c for c in CASES if c.build is None and not _C.op_def(c.op)["stateful"]]


def test_conformance_cases_fold_to_the_same_bits():
    """Every stateless conformance case, its inputs made constants: folded (run once by the
    optimizer) and unfolded plans give the same bits."""
    compared = 0
    for case in CONSTANT_CASES:
        results = []
        for cfg in (CONFIGS["default"], OFF):
            graph, op = _constant_case_graph(case)
            try:
                with tf.Session(graph=graph, config=cfg) as sess:
                    results.append(bits(sess.run(op.outputs)))
            except tf.errors.OpError as e:
                results.append(type(e))
        assert results[0] == results[1], f"{case}: folded and unfolded plans differ"
        compared += 1
    assert compared > 100


def test_placement_log_and_timeline_still_name_the_users_nodes(capfd):
    import json
    from flowstone.client import timeline
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant([1.0, 2.0], name="c")
        m = tf.square(c, name="m")
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.add(m, tf.identity(x, name="ident"), name="y")
    cfg = config()
    cfg.log_device_placement = True
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=cfg) as sess:
        out = sess.run(y, {x: [1.0, 1.0]}, run_metadata=meta,
                       options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    np.testing.assert_array_equal(out, [2.0, 5.0])
    log = capfd.readouterr().err
    assert "m: (Square): /job:localhost/replica:0/task:0/device:CPU:0" in log
    assert "y: (AddV2): /job:localhost/replica:0/task:0/device:CPU:0" in log
    # As in TensorFlow, the graph is placed before it is rewritten: nodes that the rewrites
    # remove are placed (and logged) too.
    assert "ident: (Identity)" in log and "c: (Const)" in log
    trace = json.loads(timeline.Timeline(meta.step_stats).generate_chrome_trace_format())
    names = {e["args"]["name"] for e in trace["traceEvents"] if "args" in e and "name" in e["args"]}
    assert {"m", "y"} <= names and "ident" not in names


def test_feeding_one_output_of_a_node_that_others_duplicate():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        first = tf.unstack(x, axis=0, name="first")
        second = tf.unstack(x, axis=0, name="second")  # identical to `first`
        fetches = [first[1], second[0], second[1]]
    data = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    for cfg in (CONFIGS["default"], OFF):
        with tf.Session(graph=graph, config=cfg) as sess:
            got = sess.run(fetches, {x: data, first[0]: [9.0, 9.0]})
        np.testing.assert_array_equal(got, [[3.0, 4.0], [1.0, 2.0], [3.0, 4.0]])


def test_folding_stops_at_its_time_budget_and_leaves_the_rest_to_the_run():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.full((128, 128), 1.0 / 128, np.float32))
        y = x
        for _ in range(200):  # about a GFLOP: far more than a millisecond
            y = tf.matmul(y, x)
        y = tf.negative(y, name="last")
    quick = config(meta_optimizer_timeout_ms=1)
    out, ran = traced(graph, y, cfg=quick)
    assert ran["last"] == "Neg"  # not folded: the budget ran out before it
    assert "Const" in ran.values()    # the first products were folded
    np.testing.assert_array_equal(out, traced(graph, y, cfg=OFF)[0])


def test_tf_config_optimizer_options_fill_in_what_the_config_leaves_default():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        m = tf.multiply(a, 2.0, name="m")
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        y = tf.add(m, x, name="y")
    feed = {x: np.ones((2, 3), np.float32)}
    try:
        tf.config.optimizer.set_experimental_options({"constant_folding": False})
        assert tf.config.optimizer.get_experimental_options() == {"constant_folding": False}
        assert traced(graph, y, feed)[1]["m"] == "Mul"  # not folded
        # An explicit ConfigProto setting wins over the global option.
        explicit = config(constant_folding=RewriterConfig.ON)
        assert traced(graph, y, feed, explicit)[1]["m"] == "Const"
        tf.config.optimizer.set_jit(True)
        assert tf.config.optimizer.get_jit() is True
        with pytest.raises(ValueError, match="Unknown optimizer options"):
            tf.config.optimizer.set_experimental_options({"constant_foldin": True})
    finally:
        from flowstone import tf_config
        tf_config._state["optimizer"].clear()  # no public way back to "never set"
        tf.config.optimizer.set_jit(False)
    assert traced(graph, y, feed)[1]["m"] == "Const"
