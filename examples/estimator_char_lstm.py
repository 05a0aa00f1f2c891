"""A character-level LSTM language model trained by a tf.estimator.Estimator with a custom
model_fn (embedding, LSTMCell through tf.nn.dynamic_rnn, softmax over the next character), on
the Zen of Python. Written as a TensorFlow 1 user would; only the import differs.

Run it twice with the same --model_dir: the second run resumes from the checkpoint the first
one left, and its global step continues.

    python examples/estimator_char_lstm.py --model_dir /tmp/char_lstm --steps 300
"""

import argparse
import codecs
import contextlib
import io
import os
import tempfile

import numpy as np

import flowstone as tf

SEQ_LEN = 32


def load_text():
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
        import this
    return codecs.decode(this.s, "rot13")


def windows(ids):
    """Every SEQ_LEN-character window and the window one character later."""
    starts = np.arange(len(ids) - SEQ_LEN)
    x = np.stack([ids[s:s + SEQ_LEN] for s in starts]).astype(np.int32)
    y = np.stack([ids[s + 1:s + SEQ_LEN + 1] for s in starts]).astype(np.int32)
    return x, y


def model_fn(features, labels, mode, params):
    vocab_size = params["vocab_size"]
    embeddings = tf.get_variable("embeddings", [vocab_size, 16])
    inputs = tf.nn.embedding_lookup(embeddings, features["chars"])
    cell = tf.nn.rnn_cell.LSTMCell(params["units"])
    outputs, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    logits = tf.layers.dense(outputs, vocab_size, name="softmax")
    next_char = tf.argmax(logits, axis=-1, output_type=tf.int32)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={
            "next_char": next_char[:, -1],
            "probabilities": tf.nn.softmax(logits[:, -1]),
        })
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.train.get_global_step())
    metrics = {"accuracy": tf.metrics.accuracy(labels, next_char)}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      eval_metric_ops=metrics)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default=os.path.join(tempfile.gettempdir(),
                                                            "flowstone_char_lstm"))
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    tf.logging.set_verbosity(tf.logging.ERROR)

    text = load_text()
    alphabet = sorted(set(text))
    ids = np.array([alphabet.index(c) for c in text])
    x, y = windows(ids)
    estimator = tf.estimator.Estimator(
        model_fn, model_dir=args.model_dir,
        params={"vocab_size": len(alphabet), "units": 128, "learning_rate": 0.01},
        config=tf.estimator.RunConfig(tf_random_seed=0, save_checkpoints_steps=100))
    if estimator.latest_checkpoint() is not None:
        print(f"resuming from global step {estimator.get_variable_value('global_step')}")

    estimator.train(tf.estimator.inputs.numpy_input_fn(
        {"chars": x}, y, batch_size=32, num_epochs=None, shuffle=True), steps=args.steps)
    metrics = estimator.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"chars": x}, y, batch_size=256, num_epochs=1, shuffle=False))
    print(f"global step {metrics['global_step']}: loss {metrics['loss']:.3f}, perplexity "
          f"{np.exp(metrics['loss']):.2f}, next-character accuracy {metrics['accuracy']:.3f}")

    prompts = ["Beautiful is better th", "Errors should never pass sil", "Now is better th"]
    encoded = np.array([[alphabet.index(c) for c in p.rjust(SEQ_LEN)[-SEQ_LEN:]]
                        for p in prompts], np.int32)
    predictions = estimator.predict(tf.estimator.inputs.numpy_input_fn(
        {"chars": encoded}, shuffle=False))
    for prompt, prediction in zip(prompts, predictions):
        print(f"{prompt!r} -> {alphabet[prediction['next_char']]!r}")


if __name__ == "__main__":
    main()
