"""Inference latency of the model zoo (bench/model_zoo.py: MobileNetV2, ResNet50, a 4-block
BERT-style encoder, frozen by TensorFlow) at batch 1 and batch 32, in Flowstone, TensorFlow and
ONNX Runtime, in one run:

    .venv/bin/python bench/bench_model_zoo.py --peer-python .venv-peers/bin/python \\
        [--onnx-python build/onnx-venv/bin/python] [--models resnet50,...] [--rounds 7]

Each framework runs the same frozen GraphDef: Flowstone imports it (this process); TensorFlow
imports it into a compat.v1 graph and session (Grappler on), in the peer Python; ONNX Runtime runs
the graph converted by tf2onnx (`tf2onnx.convert.from_graph_def`, opset 17) in a Python that has
tf2onnx and onnxruntime (`--onnx-python`; `make bench` makes build/onnx-venv, which sees the
peer's TensorFlow through a .pth file). All three get the machine's cores (intra-op threads =
cores, one inter-op thread). Each figure is the median of --rounds runs after two warm-up runs,
in milliseconds: the wall time (the latency), and the CPU time of the process (all its threads),
which on a shared, loaded machine says more about the work than the wall time, most of which is
then waiting for a core. The frameworks run one after another, so compare them within one run of
the script.

    .venv/bin/python bench/bench_model_zoo.py --ablation [--models ...] [--rounds 7]

times Flowstone alone with the optimizer's switches: everything on (the default), batch norm
folding off (arithmetic_optimization OFF), fusion off (remapping OFF, which also stops folding)
and all rewrites off (disable_meta_optimizer), one session each, their runs alternating so that
all four see the same load.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import model_zoo  # noqa: E402

BATCHES = (1, 32)
THREADS = os.cpu_count()


def _timed(run):
    """(wall ms, CPU ms) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def _median_ms(run, rounds):
    """[median wall ms, median CPU ms] of `rounds` calls after two warm-up calls."""
    for _ in range(2):
        run()
    times = [_timed(run) for _ in range(rounds)]
    return [statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)]


def _time_graph_sessions(tf, graph_def_from_bytes, models, rounds):
    """{"<model> b<batch>": ms} for Flowstone or TensorFlow's compat.v1 (the same code)."""
    results = {}
    for name in models:
        data, meta, _, _ = model_zoo.load(name)
        graph = tf.Graph()
        with graph.as_default():
            tf.import_graph_def(graph_def_from_bytes(data), name="")
        cfg = tf.ConfigProto(intra_op_parallelism_threads=THREADS, inter_op_parallelism_threads=1)
        with tf.Session(graph=graph, config=cfg) as sess:
            for batch in BATCHES:
                feed = {meta["input"]: model_zoo.batch_input(meta, batch)}
                results[f"{name} b{batch}"] = _median_ms(
                    lambda: sess.run(meta["output"], feed), rounds)
    return results


def run_flowstone(models, rounds):
    import flowstone as tf

    def parse(data):
        graph_def = tf.GraphDef()
        graph_def.ParseFromString(data)
        return graph_def
    return _time_graph_sessions(tf, parse, models, rounds)


def run_tensorflow(models, rounds):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()

    def parse(data):
        graph_def = tf.GraphDef()
        graph_def.ParseFromString(data)
        return graph_def
    return _time_graph_sessions(tf, parse, models, rounds)


def onnx_model(name):
    """The tf2onnx conversion of a cached frozen graph, cached beside it as <name>.onnx."""
    path = os.path.join(model_zoo.CACHE_DIR, name + ".onnx")
    if not os.path.exists(path):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        import tf2onnx
        data, meta, _, _ = model_zoo.load(name)
        graph_def = tf.compat.v1.GraphDef()
        graph_def.ParseFromString(data)
        proto, _ = tf2onnx.convert.from_graph_def(
            graph_def, input_names=[meta["input"]], output_names=[meta["output"]], opset=17)
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    return path


def run_onnxruntime(models, rounds):
    import onnxruntime as ort
    results = {}
    for name in models:
        _, meta, x, y = model_zoo.load(name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        sess = ort.InferenceSession(onnx_model(name), options,
                                    providers=["CPUExecutionProvider"])
        (input_name,) = [i.name for i in sess.get_inputs()]
        # The converted graph must compute what TensorFlow did, or its timing means nothing.
        np.testing.assert_allclose(sess.run(None, {input_name: x})[0], y, rtol=1e-4, atol=1e-5)
        for batch in BATCHES:
            feed = {input_name: model_zoo.batch_input(meta, batch)}
            results[f"{name} b{batch}"] = _median_ms(lambda: sess.run(None, feed), rounds)
    return results


def run_ablation(models, rounds):
    """{config: {"<model> b<batch>": ms}} for Flowstone under each rewrite setting."""
    import flowstone as tf
    from flowstone.protos import RewriterConfig

    def config(**rewrites):
        cfg = tf.ConfigProto(intra_op_parallelism_threads=THREADS, inter_op_parallelism_threads=1)
        for name, value in rewrites.items():
            setattr(cfg.graph_options.rewrite_options, name, value)
        return cfg
    configs = {"default": config(),
               "no folding": config(arithmetic_optimization=RewriterConfig.OFF),
               "no fusion": config(remapping=RewriterConfig.OFF),
               "no rewrites": config(disable_meta_optimizer=True)}
    results = {c: {} for c in configs}
    for name in models:
        data, meta, _, _ = model_zoo.load(name)
        graph_def = tf.GraphDef()
        graph_def.ParseFromString(data)
        graph = tf.Graph()
        with graph.as_default():
            tf.import_graph_def(graph_def, name="")
        sessions = {c: tf.Session(graph=graph, config=cfg) for c, cfg in configs.items()}
        for batch in BATCHES:
            feed = {meta["input"]: model_zoo.batch_input(meta, batch)}
            times = {c: [] for c in configs}
            for i in range(rounds + 2):
                for c, sess in sessions.items():
                    t = _timed(lambda: sess.run(meta["output"], feed))
                    if i >= 2:  # two warm-up runs
                        times[c].append(t)
            for c in configs:
                results[c][f"{name} b{batch}"] = [statistics.median(t[0] for t in times[c]),
                                                  statistics.median(t[1] for t in times[c])]
        for sess in sessions.values():
            sess.close()
    return results


RUNNERS = {"flowstone": run_flowstone, "tensorflow": run_tensorflow,
           "onnxruntime": run_onnxruntime}


def _in_peer(python, framework, models, rounds):
    if not python or not os.path.exists(python):
        return None, "not installed"
    proc = subprocess.run([python, os.path.abspath(__file__), "--framework", framework,
                           "--models", ",".join(models), "--rounds", str(rounds)],
                          capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=None, help="a Python with tensorflow-cpu")
    parser.add_argument("--onnx-python", default=None,
                        help="a Python with tensorflow-cpu, tf2onnx and onnxruntime")
    parser.add_argument("--models", default=",".join(model_zoo.MODELS))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ablation", action="store_true",
                        help="time Flowstone alone with rewrites switched off one by one")
    args = parser.parse_args()
    models = args.models.split(",")
    if args.ablation:
        results = run_ablation(models, args.rounds)
        print(f"load average {os.getloadavg()[0]:.1f}, {THREADS} threads, median ms of "
              f"{args.rounds} runs, wall / CPU")
        print("| model | batch | " + " | ".join(results) + " |")
        print("|---|---:|" + "---:|" * len(results))
        for name in models:
            for batch in BATCHES:
                key = f"{name} b{batch}"
                print(f"| {name} | {batch} | "
                      + " | ".join(f"{r[key][0]:.1f} / {r[key][1]:.1f}" for r in results.values())
                      + " |")
        return
    if args.framework:
        print(json.dumps(RUNNERS[args.framework](models, args.rounds)))
        return
    if not args.peer_python or not os.path.exists(args.peer_python):
        print("the model zoo needs TensorFlow to build its graphs: pass --peer-python")
        return
    model_zoo.ensure_zoo(args.peer_python)
    columns = {"Flowstone": (run_flowstone(models, args.rounds), None)}
    columns["TensorFlow"] = _in_peer(args.peer_python, "tensorflow", models, args.rounds)
    columns["ONNX Runtime"] = _in_peer(args.onnx_python, "onnxruntime", models, args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f}, {THREADS} threads, median ms of "
          f"{args.rounds} runs")
    for column, (_, error) in columns.items():
        if error:
            print(f"{column}: {error}")
    for index, what in enumerate(["wall time (latency)", "CPU time"]):
        print(f"\n{what}:")
        print("| model | batch | " + " | ".join(f"{c} ms" for c in columns)
              + " | TF / Flowstone | ORT / Flowstone |")
        print("|---|---:|" + "---:|" * (len(columns) + 2))
        for name in models:
            for batch in BATCHES:
                key = f"{name} b{batch}"
                values = [res[key][index] if res else None for res, _ in columns.values()]
                cells = [f"{v:.2f}" if v is not None else "n/a" for v in values]
                ratios = [f"{v / values[0]:.2f}x" if v is not None else "-" for v in values[1:]]
                print(f"| {name} | {batch} | " + " | ".join(cells + ratios) + " |")


if __name__ == "__main__":
    main()
