"""LSTM language-model step time for Flowstone, TensorFlow (compat.v1 graph mode) and PyTorch
(CPU), each framework in its own process, in one run on the same machine.

    .venv/bin/python bench/bench_lstm.py [--peer-python .venv-peers/bin/python] [--models lm,char]

Models (token ids -> embedding -> LSTM -> dense over the vocabulary -> sparse softmax cross
entropy, Adam):
  lm    the issue's word-level model: 2 layers of 256 units, 35 steps, batch 20, vocabulary
        10,000, embedding 256;
  char  a character-level model: 1 layer of 256 units, 50 steps, batch 32, vocabulary 64,
        embedding 64 (here the LSTM, not the softmax, is most of the work).
Each model is timed forward only (the loss) and as a training step (forward, backward, Adam),
the median of the step times after warm-up. LSTM variants:
  basic  tf.nn.rnn_cell.BasicLSTMCell (MultiRNNCell for 2 layers) under tf.nn.dynamic_rnn: what
         TF1 programs write; TensorFlow needs tf-keras for these cells (TF_USE_LEGACY_KERAS=1);
  block  tf.contrib.rnn.LSTMBlockCell under dynamic_rnn (Flowstone only: TensorFlow 2 has no
         contrib and no gradient for the LSTMBlockCell op);
  fused  one BlockLSTM op per layer over the whole sequence: Flowstone's
         tf.contrib.rnn.LSTMBlockFusedCell, TensorFlow's tf.raw_ops.BlockLSTM (what TF1's
         LSTMBlockFusedCell called), PyTorch's nn.LSTM.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

CONFIGS = {
    "lm": {"layers": 2, "units": 256, "steps": 35, "batch": 20, "vocab": 10000, "embed": 256},
    "char": {"layers": 1, "units": 256, "steps": 50, "batch": 32, "vocab": 64, "embed": 64},
}
VARIANTS = {"flowstone": ["basic", "block", "fused"], "tensorflow": ["basic", "fused"],
            "pytorch": ["fused"]}
MODES = ["forward", "train"]
WARMUP = 3
TIMED = 15


def data(cfg, seed=0):
    rng = np.random.RandomState(seed)
    tokens = rng.randint(0, cfg["vocab"], size=(cfg["batch"], cfg["steps"] + 1))
    return tokens[:, :-1].astype(np.int32), tokens[:, 1:].astype(np.int64)


def median_ms(step):
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(TIMED):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def tf_block_lstm_layer(tf, x, units, seq_len, name):
    """TensorFlow's fused layer: the BlockLSTM op TF1's LSTMBlockFusedCell ran, time-major."""
    depth = x.shape.as_list()[-1]
    w = tf.get_variable(f"{name}/kernel", [depth + units, 4 * units])
    b = tf.get_variable(f"{name}/bias", [4 * units], initializer=tf.zeros_initializer())
    zeros = tf.zeros([units])
    state = tf.zeros([x.shape.as_list()[1], units])
    return tf.raw_ops.BlockLSTM(seq_len_max=seq_len, x=x, cs_prev=state, h_prev=state, w=w,
                                wci=zeros, wcf=zeros, wco=zeros, b=b, forget_bias=1.0,
                                cell_clip=-1.0, use_peephole=False).h


def lstm_outputs(tf, framework, variant, cfg, x):
    """The top layer's outputs [batch, steps, units] for embedded inputs x [batch, steps, e]."""
    units, layers = cfg["units"], cfg["layers"]
    if variant == "fused":
        h = tf.transpose(x, [1, 0, 2])
        for layer in range(layers):
            if framework == "flowstone":
                h, _ = tf.contrib.rnn.LSTMBlockFusedCell(units, name=f"layer{layer}")(
                    h, dtype=tf.float32)
            else:
                h = tf_block_lstm_layer(tf, h, units, tf.constant(cfg["steps"], tf.int64),
                                        f"layer{layer}")
        return tf.transpose(h, [1, 0, 2])
    if variant == "block":
        cells = [tf.contrib.rnn.LSTMBlockCell(units) for _ in range(layers)]
    else:
        cells = [tf.nn.rnn_cell.BasicLSTMCell(units) for _ in range(layers)]
    cell = cells[0] if layers == 1 else tf.nn.rnn_cell.MultiRNNCell(cells)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return outputs


def tf1_steps(tf, framework, variant, cfg):
    """(forward step, training step) of the model as a TF1 graph."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        tokens = tf.placeholder(tf.int32, [cfg["batch"], cfg["steps"]])
        targets = tf.placeholder(tf.int64, [cfg["batch"], cfg["steps"]])
        embedding = tf.get_variable("embedding", [cfg["vocab"], cfg["embed"]],
                                    initializer=tf.random_uniform_initializer(-0.1, 0.1))
        h = lstm_outputs(tf, framework, variant, cfg, tf.nn.embedding_lookup(embedding, tokens))
        w = tf.get_variable("softmax/w", [cfg["units"], cfg["vocab"]])
        b = tf.get_variable("softmax/b", [cfg["vocab"]], initializer=tf.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(tf.reshape(h, [-1, cfg["units"]]), w), b)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(targets, [-1]), logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    xv, yv = data(cfg)
    feed = {tokens: xv, targets: yv}
    first = sess.run(loss, feed)
    assert np.isfinite(first) and abs(first - np.log(cfg["vocab"])) < 1.0, first
    return lambda: sess.run(loss, feed), lambda: sess.run(train, feed)


def torch_steps(cfg):
    import torch
    from torch import nn
    torch.manual_seed(0)
    embed = nn.Embedding(cfg["vocab"], cfg["embed"])
    lstm = nn.LSTM(cfg["embed"], cfg["units"], num_layers=cfg["layers"], batch_first=True)
    head = nn.Linear(cfg["units"], cfg["vocab"])
    params = list(embed.parameters()) + list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xv, yv = data(cfg)
    x, y = torch.from_numpy(xv.astype(np.int64)), torch.from_numpy(yv).reshape(-1)

    def loss():
        out, _ = lstm(embed(x))
        return loss_fn(head(out.reshape(-1, cfg["units"])), y)

    def forward():
        with torch.no_grad():
            loss()

    def train():
        opt.zero_grad()
        loss().backward()
        opt.step()
    return forward, train


def run_framework(framework, models):
    results = {}
    if framework == "pytorch":
        for model in models:
            forward, train = torch_steps(CONFIGS[model])
            results[f"{model}/fused/forward"] = median_ms(forward)
            results[f"{model}/fused/train"] = median_ms(train)
        return results
    if framework == "flowstone":
        import flowstone as tf
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    for model in models:
        for variant in VARIANTS[framework]:
            forward, train = tf1_steps(tf, framework, variant, CONFIGS[model])
            results[f"{model}/{variant}/forward"] = median_ms(forward)
            results[f"{model}/{variant}/train"] = median_ms(train)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu, tf-keras and torch installed")
    parser.add_argument("--models", default="lm,char", help="comma-separated: lm, char")
    args = parser.parse_args()
    models = args.models.split(",")
    if args.framework:
        print(json.dumps(run_framework(args.framework, models)))
        return
    results = {}
    # TensorFlow 2.16+ has tf.nn.rnn_cell's cells only through tf-keras.
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    for name in ["flowstone", "tensorflow", "pytorch"]:
        python = sys.executable if name == "flowstone" else args.peer_python
        if not python or not os.path.exists(python):
            continue
        proc = subprocess.run([python, __file__, "--framework", name, "--models", args.models],
                              capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
    print(f"{'case':<22}{'framework':<12}{'variant':<8}{'ms':>10}")
    for model in models:
        for mode in MODES:
            for name, variants in VARIANTS.items():
                for variant in variants:
                    value = results.get(name, {}).get(f"{model}/{variant}/{mode}")
                    if value is not None:
                        print(f"{model + ' ' + mode:<22}{name:<12}{variant:<8}{value:>10.2f}")


if __name__ == "__main__":
    main()
