"""Fusion in the graph optimizer (TensorFlow's remapper): Conv2D / MatMul + BiasAdd (or an Add of
a per-channel vector) + activation run as one _FusedConv2D / _FusedMatMul node when nothing else
reads the intermediate results. Fused plans must give bit-identical results to unfused ones
(rewrite_options.remapping OFF), in inference and in training, at any thread count; the fused
nodes are observed in the step statistics of traced runs."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.protos import RewriterConfig

from peers import requires_tensorflow, run_tensorflow
from test_graph_optimizer import bits, config, traced

ON = config()
OFF = config(remapping=RewriterConfig.OFF)
RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def conv_block(x, filters, activation=tf.nn.relu, bias="bias_add", data_format="NHWC",
               dtype=np.float32):
    c_in = int(x.shape[1 if data_format == "NCHW" else -1])
    w = tf.constant(rand(3, 3, c_in, filters, dtype=dtype) * 0.3)
    h = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", data_format=data_format)
    b = tf.constant(rand(filters, dtype=dtype))
    if bias == "bias_add":
        h = tf.nn.bias_add(h, b, data_format=data_format)
    elif bias == "add":
        h = h + b
    elif bias == "add_left":
        h = b + h
    return activation(h) if activation is not None else h


def dense(x, units, activation=tf.nn.relu, bias=True, dtype=np.float32):
    w = tf.constant(rand(int(x.shape[-1]), units, dtype=dtype) * 0.3)
    h = tf.matmul(x, w)
    if bias:
        h = tf.nn.bias_add(h, tf.constant(rand(units, dtype=dtype)))
    return activation(h) if activation is not None else h


def compare(build, feeds, expect_types, on=ON):
    """Runs build()'s fetches fused (config `on`) and unfused: bit-identical values, and the fused
    run shows each op type of expect_types (op type -> count) among its nodes."""
    graph = tf.Graph()
    with graph.as_default():
        fetches, placeholders = build()
    feed_dict = dict(zip(placeholders, feeds))
    fused, ran = traced(graph, fetches, feed_dict, on)
    plain, ran_plain = traced(graph, fetches, feed_dict, OFF)
    assert bits(fused) == bits(plain)
    types = list(ran.values())
    for op_type, count in expect_types.items():
        assert types.count(op_type) == count, (op_type, sorted(ran.items()))
    assert not any(t.startswith("_Fused") for t in ran_plain.values())
    return fused, ran


ACTIVATIONS = {"relu": tf.nn.relu, "relu6": tf.nn.relu6, "elu": tf.nn.elu,
               "leaky_relu": lambda h: tf.nn.leaky_relu(h, alpha=0.3), "none": None}


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("bias", ["bias_add", "add", "add_left", "none"])
def test_conv_chains_fuse_bit_identically(activation, bias):
    act = ACTIVATIONS[activation]
    if act is None and bias == "none":
        pytest.skip("a lone Conv2D has nothing to fuse")

    def build():
        x = tf.placeholder(tf.float32, [None, 9, 9, 3])
        return conv_block(x, 8, activation=act, bias=bias), [x]

    compare(build, [rand(5, 9, 9, 3)], {"_FusedConv2D": 1, "Conv2D": 0})


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_matmul_chains_fuse_bit_identically(activation):
    def build():
        x = tf.placeholder(tf.float32, [None, 20])
        return dense(x, 16, activation=ACTIVATIONS[activation]), [x]

    compare(build, [rand(7, 20)], {"_FusedMatMul": 1, "MatMul": 0})


def test_nchw_conv_and_float64_fuse():
    def build():
        x = tf.placeholder(tf.float32, [None, 3, 8, 8])
        y = tf.placeholder(tf.float64, [None, 8, 8, 2])
        return [conv_block(x, 4, data_format="NCHW"),
                conv_block(y, 4, dtype=np.float64),
                dense(tf.reshape(y, [-1, 128]), 5, dtype=np.float64)], [x, y]

    compare(build, [rand(2, 3, 8, 8), rand(2, 8, 8, 2, dtype=np.float64)],
            {"_FusedConv2D": 2, "_FusedMatMul": 1})


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("activation", ["relu", "none"])
def test_inference_batch_norm_fuses_bit_identically(data_format, activation):
    """Conv2D + FusedBatchNorm(is_training=False) [+ activation], as frozen graphs have it, fused
    as an epilogue (arithmetic_optimization off: on, the constant batch norm is folded into the
    filter instead, which rounds differently; see test_batch_norm_folding.py)."""
    def build():
        shape = [None, 4, 7, 7] if data_format == "NCHW" else [None, 7, 7, 4]
        x = tf.placeholder(tf.float32, shape)
        h = tf.nn.conv2d(x, tf.constant(rand(3, 3, 4, 6)), [1, 1, 1, 1], "SAME",
                         data_format=data_format)
        y, _, _ = tf.nn.fused_batch_norm(
            h, tf.constant(rand(6)), tf.constant(rand(6)), mean=tf.constant(rand(6)),
            variance=tf.constant(np.abs(rand(6)) + 0.5), epsilon=0.001, is_training=False,
            data_format=data_format)
        return (tf.nn.relu(y) if activation == "relu" else y), [x]

    feed = rand(3, 4, 7, 7) if data_format == "NCHW" else rand(3, 7, 7, 4)
    _, ran = compare(build, [feed], {"_FusedConv2D": 1, "Conv2D": 0, "FusedBatchNormV3": 0},
                     on=config(arithmetic_optimization=RewriterConfig.OFF))


def test_add_along_the_wrong_axis_is_not_fused():
    """An Add of a vector to an NCHW convolution adds along the width, not the channels."""
    def build():
        x = tf.placeholder(tf.float32, [None, 3, 8, 8])
        w = tf.constant(rand(3, 3, 3, 8))
        h = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW")
        return tf.nn.relu(h + tf.constant(rand(8))), [x]

    # The activation alone still fuses into the convolution; the Add stays between them.
    _, ran = compare(build, [rand(2, 3, 8, 8)], {"_FusedConv2D": 0, "Conv2D": 1, "Relu": 1})


def test_intermediate_with_another_reader_is_not_fused():
    """A fetched (or otherwise read) intermediate result keeps its own node."""
    def build():
        x = tf.placeholder(tf.float32, [None, 20])
        w = tf.constant(rand(20, 6))
        pre = tf.nn.bias_add(tf.matmul(x, w), tf.constant(rand(6)))
        return [tf.nn.relu(pre), pre], [x]

    # The MatMul + BiasAdd still fuse (the BiasAdd's output is what is fetched); the Relu stays.
    compare(build, [rand(4, 20)], {"_FusedMatMul": 1, "Relu": 1, "MatMul": 0})

    def build_product_read():
        x = tf.placeholder(tf.float32, [None, 20])
        product = tf.matmul(x, tf.constant(rand(20, 6)))
        return [tf.nn.relu(tf.nn.bias_add(product, tf.constant(rand(6)))),
                tf.reduce_sum(product)], [x]

    compare(build_product_read, [rand(4, 20)], {"_FusedMatMul": 0, "MatMul": 1})


def test_fed_intermediate_is_not_fused():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        product = tf.matmul(x, tf.constant(rand(4, 3)))
        out = tf.nn.relu(tf.nn.bias_add(product, tf.constant([1.0, -1.0, 0.5], tf.float32)))
    fed = np.array([[1.0, 2.0, -3.0]], np.float32)
    with tf.Session(graph=graph, config=ON) as sess:
        got = sess.run(out, {product: fed})
    np.testing.assert_array_equal(got, np.maximum(fed + [1.0, -1.0, 0.5], 0))


def test_control_dependency_on_an_intermediate_keeps_it():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        product = tf.matmul(x, tf.constant(rand(4, 3)))
        with tf.control_dependencies([product.op]):
            other = tf.identity(x)
        out = tf.nn.relu(product)
    values, ran = traced(graph, [out, other], {x: rand(2, 4)}, ON)
    assert "_FusedMatMul" not in ran.values()


def training_graph(seed=3):
    """A small CNN with biases (conv + bias + relu twice, dense + bias + relu, logits) and SGD."""
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 12, 12, 1])
        labels = tf.placeholder(tf.int32, [None])

        def var(*shape):
            return tf.Variable(rng.standard_normal(shape).astype(np.float32) * 0.2)

        h = tf.nn.relu(tf.nn.bias_add(
            tf.nn.conv2d(x, var(3, 3, 1, 8), [1, 1, 1, 1], "SAME"), var(8)))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.relu(tf.nn.conv2d(h, var(3, 3, 8, 16), [1, 1, 1, 1], "SAME") + var(16))
        h = tf.reshape(h, [-1, 6 * 6 * 16])
        h = tf.nn.relu(tf.matmul(h, var(576, 32)) + var(32))
        logits = tf.nn.bias_add(tf.matmul(h, var(32, 10)), var(10))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return graph, x, labels, loss, train, init


def train(cfg, steps=4):
    graph, x, labels, loss, train_op, init = training_graph()
    rng = np.random.default_rng(11)
    losses = []
    with tf.Session(graph=graph, config=cfg) as sess:
        sess.run(init)
        for _ in range(steps):
            feed = {x: rng.standard_normal((16, 12, 12, 1)).astype(np.float32),
                    labels: rng.integers(0, 10, 16).astype(np.int32)}
            losses.append(sess.run([loss, train_op], feed)[0])
        weights = sess.run(graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES))
    return losses, weights


def test_training_fuses_and_stays_bit_identical():
    """In training the activations' outputs feed their gradients (ReluGrad reads the Relu's
    output), which the fused node produces; the product and the bias's outputs have no other
    reader, so every layer fuses and the gradients stay exact."""
    graph, x, labels, loss, train_op, init = training_graph()
    with tf.Session(graph=graph, config=ON) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        sess.run(train_op, {x: rand(4, 12, 12, 1), labels: np.arange(4, dtype=np.int32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    types = [ns.timeline_label.split(" = ")[1].split("(")[0]
             for dev in meta.step_stats.dev_stats for ns in dev.node_stats]
    assert types.count("_FusedConv2D") == 2 and types.count("_FusedMatMul") == 2, types
    # Backward: the first convolution's BiasAddGrad(ReluGrad) pair is one node; the logits'
    # BiasAddGrad (no ReLU) and the ReLUs without a BiasAdd keep theirs.
    assert types.count("_ReluGradBiasAddGrad") == 1, types
    assert types.count("BiasAddGrad") == 1 and types.count("ReluGrad") == 2, types
    fused_losses, fused_weights = train(ON)
    plain_losses, plain_weights = train(OFF)
    assert bits(fused_losses) == bits(plain_losses)
    assert bits(fused_weights) == bits(plain_weights)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_relu_grad_and_bias_add_grad_fuse_bit_identically(data_format):
    def build():
        shape = [None, 3, 6, 6] if data_format == "NCHW" else [None, 6, 6, 3]
        x = tf.placeholder(tf.float32, shape)
        b = tf.placeholder(tf.float32, [3])
        y = tf.nn.relu(tf.nn.bias_add(x * 2.0, b, data_format=data_format))
        dx, db = tf.gradients(y * y, [x, b])
        return [dx, db], [x, b]

    feed = rand(300, 3, 6, 6) if data_format == "NCHW" else rand(300, 6, 6, 3)
    compare(build, [feed, rand(3)], {"_ReluGradBiasAddGrad": 1, "BiasAddGrad": 0,
                                     "ReluGrad": 0})


def test_fused_results_do_not_depend_on_threads():
    def run(threads):
        cfg = config()
        cfg.intra_op_parallelism_threads = threads
        cfg.inter_op_parallelism_threads = threads
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [None, 16, 16, 8])
            y = conv_block(conv_block(x, 32), 16, bias="add")
            z = dense(tf.reshape(y, [-1, 16 * 16 * 16]), 64)
        data = np.random.default_rng(5).standard_normal((40, 16, 16, 8)).astype(np.float32)
        out, ran = traced(graph, [y, z], {x: data}, cfg)
        assert list(ran.values()).count("_FusedConv2D") == 2
        return bits(out)

    state = RNG.bit_generator.state  # the same weights in both graphs
    first = run(1)
    RNG.bit_generator.state = state
    assert run(4) == first


def test_fused_ops_run_directly():
    """The ops as TensorFlow's remapper writes them (a graph imported from TensorFlow)."""
    x, f, b = rand(2, 5, 5, 3), rand(3, 3, 3, 4), rand(4)
    a, w = rand(3, 6), rand(6, 4)
    graph = tf.Graph()
    with graph.as_default():
        conv = apply_op("_FusedConv2D", [tf.constant(x), tf.constant(f), [tf.constant(b)]],
                        {"strides": [1, 1, 1, 1], "padding": "VALID", "TArgs": [tf.float32],
                         "fused_ops": ["BiasAdd", "Relu"], "num_args": 1})
        mm = apply_op("_FusedMatMul", [tf.constant(a), tf.constant(w), [tf.constant(b)]],
                      {"fused_ops": ["BiasAdd", "Elu"], "num_args": 1})
        plain_conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, [1, 1, 1, 1], "VALID"), b))
        plain_mm = tf.nn.elu(tf.nn.bias_add(tf.matmul(a, w), b))
    with tf.Session(graph=graph, config=OFF) as sess:
        got = sess.run([conv.outputs[0], mm.outputs[0], plain_conv, plain_mm])
    assert bits(got[0]) == bits(got[2])
    assert bits(got[1]) == bits(got[3])


def test_fused_op_errors_name_the_problem():
    graph = tf.Graph()
    with graph.as_default():
        a, w = tf.constant(rand(3, 6)), tf.constant(rand(6, 4))
        bad_ops = apply_op("_FusedMatMul", [a, w, [tf.constant(rand(4))]],
                           {"fused_ops": ["BiasAdd", "Tanh"], "num_args": 1})
        bad_bias = apply_op("_FusedMatMul", [a, w, [tf.constant(rand(5))]],
                            {"fused_ops": ["BiasAdd"], "num_args": 1})
        bad_count = apply_op("_FusedMatMul", [a, w, [tf.constant(rand(4))]],
                             {"fused_ops": ["Relu"], "num_args": 1})
    with tf.Session(graph=graph, config=OFF) as sess:
        with pytest.raises(tf.errors.UnimplementedError, match=r"fused_ops \[BiasAdd, Tanh\]"):
            sess.run(bad_ops.outputs[0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="vector of the output's 4"):
            sess.run(bad_bias.outputs[0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="takes 0 argument"):
            sess.run(bad_count.outputs[0])


@requires_tensorflow
def test_graph_fused_by_tensorflows_remapper_imports_and_runs(tmp_path):
    """TensorFlow's grappler writes _FusedConv2D / _FusedMatMul (with BiasAdd, FusedBatchNorm
    and activations) into the GraphDef it optimizes; Flowstone runs that GraphDef and matches
    TensorFlow's results for the unoptimized graph."""
    run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
        from tensorflow.python.grappler import tf_optimizer
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        rng = np.random.default_rng(0)
        def const(*shape, low=-1.0):
            return tf.constant(rng.uniform(low, 1.0, shape).astype(np.float32))
        g = tf1.Graph()
        with g.as_default(), tf1.device("/device:CPU:0"):
            x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
            h = tf.nn.conv2d(x, const(3, 3, 3, 4), 1, "SAME")
            h = tf.nn.relu(tf.nn.bias_add(h, const(4)))
            h = tf.nn.conv2d(h, const(3, 3, 4, 6), 1, "VALID")
            h, _, _ = tf1.nn.fused_batch_norm(h, const(6), const(6), mean=const(6),
                                              variance=const(6, low=0.5), is_training=False)
            h = tf.nn.relu6(h)
            h = tf.reshape(h, [2, 216])
            h = tf.nn.bias_add(tf.matmul(h, const(216, 5)), const(5))
            y = tf.identity(tf.nn.elu(h), name="y")
            meta = tf1.train.export_meta_graph(graph=g)
        meta.collection_def["train_op"].node_list.value.append("y")
        cfg = config_pb2.ConfigProto()
        cfg.graph_options.rewrite_options.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
        cfg.graph_options.rewrite_options.min_graph_nodes = -1
        optimized = tf_optimizer.OptimizeGraph(cfg, meta)
        ops = sorted(n.op for n in optimized.node if n.op.startswith("_Fused"))
        assert ops == ["_FusedConv2D", "_FusedConv2D", "_FusedMatMul"], ops
        data = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
        with tf1.Session(graph=g) as sess:
            expected = sess.run(y, {{x: data}})
        with open("{tmp_path}/fused.pb", "wb") as f:
            f.write(optimized.SerializeToString())
        np.save("{tmp_path}/x.npy", data)
        np.save("{tmp_path}/y.npy", expected)
    """)
    graph_def = tf.GraphDef()
    with open(tmp_path / "fused.pb", "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    types = [op.type for op in graph.get_operations()]
    assert types.count("_FusedConv2D") == 2 and types.count("_FusedMatMul") == 1
    with tf.Session(graph=graph) as sess:
        got = sess.run("y:0", {"x:0": np.load(tmp_path / "x.npy")})
    np.testing.assert_allclose(got, np.load(tmp_path / "y.npy"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1000, 6), (37, 9, 7), (300, 1), (5, 63), (700, 64), (3, 70)])
def test_bias_add_grad_sums_few_channels_accurately_and_deterministically(shape):
    """BiasAddGrad with few channels sums several rows at once (a wide accumulator): the result
    stays within float32 rounding of numpy's float64 sum, and the same at any thread count."""
    g = rand(*shape)
    outs = []
    for threads in (1, 3):
        graph = tf.Graph()
        with graph.as_default():
            out = apply_op("BiasAddGrad", [tf.constant(g)], {}).outputs[0]
        cfg = config()
        cfg.intra_op_parallelism_threads = threads
        with tf.Session(graph=graph, config=cfg) as sess:
            outs.append(sess.run(out))
    expected = g.astype(np.float64).reshape(-1, shape[-1]).sum(axis=0)
    np.testing.assert_allclose(outs[0], expected, rtol=1e-5, atol=1e-4)
    assert bits(outs[0]) == bits(outs[1])
