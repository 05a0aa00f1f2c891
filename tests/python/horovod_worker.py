"""One rank of a multi-process Horovod test, started by test_horovod.py under mpirun:

    mpirun -np 2 python horovod_worker.py CASE OUT_DIR

Each case writes what it observed to OUT_DIR/rank<R>.npz (arrays) or rank<R>.json, which the
test compares across ranks and with the expected values.
"""

import json
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_digits

import flowstone as tf
import flowstone.horovod as hvd


def _save_json(out_dir, **values):
    with open(os.path.join(out_dir, f"rank{hvd.rank()}.json"), "w") as f:
        json.dump(values, f)


def collectives(out_dir):
    """Allreduce (sum, average, fp16, grouped), allgather with different first dimensions,
    broadcast, alltoall and the rank ops, with their gradients."""
    r, n = hvd.rank(), hvd.size()
    x = tf.constant(np.full([2, 3], r + 1.0, np.float32))
    xi = tf.constant(np.arange(4, dtype=np.int64) * (r + 1))
    rows = tf.constant(np.full([r + 1, 2], float(r), np.float64))
    var = tf.Variable(np.full([r + 1, 2], r + 1.0), dtype=tf.float64)
    weights = tf.constant(np.arange(sum(range(1, n + 1)) * 2, dtype=np.float64).reshape(-1, 2))
    gathered_var = hvd.allgather(var)
    grad_gather = tf.gradients(tf.reduce_sum(gathered_var * weights), var)[0]
    bvar = tf.Variable(np.full([3], r + 1.0), dtype=tf.float64)
    grad_bcast = tf.gradients(tf.reduce_sum(hvd.broadcast(bvar, 1) * 2.0), bvar)[0]
    avar = tf.Variable(np.full([2], r + 1.0), dtype=tf.float64)
    grad_allreduce = tf.gradients(tf.reduce_sum(hvd.allreduce(avar, op=hvd.Sum) * 3.0), avar)[0]
    splits = [r + 1] * n  # rank r sends r+1 rows to each rank
    send = tf.constant(np.full([(r + 1) * n, 2], float(r), np.float32))
    a2a, received = hvd.alltoall(send, splits=splits)
    grouped = hvd.grouped_allreduce([x, tf.constant(np.full([5], r, np.float32))], op=hvd.Sum)
    fetch = {
        "sum": hvd.allreduce(x, op=hvd.Sum),
        "average": hvd.allreduce(x),
        "average_flag": hvd.allreduce(x, average=False),
        "int_sum": hvd.allreduce(xi, op=hvd.Sum),
        "fp16": hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16),
        "scaled": hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5),
        "gathered": hvd.allgather(rows),
        "broadcast": hvd.broadcast(x, root_rank=1),
        "alltoall": a2a,
        "received": received,
        "grouped0": grouped[0],
        "grouped1": grouped[1],
        "rank_op": hvd.rank_op(),
        "size_op": hvd.size_op(),
        "grad_gather": grad_gather,
        "grad_bcast": grad_bcast,
        "grad_allreduce": grad_allreduce,
    }
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(fetch)
        # A second run of the same plan reuses the node names.
        again = sess.run(fetch["sum"])
    got["again"] = again
    got["fp16_dtype"] = np.array(str(fetch["fp16"].dtype.name))
    np.savez(os.path.join(out_dir, f"rank{r}.npz"), **got)


def _digits_cnn(x):
    """The digits CNN (8x8x1 images, two 3x3 convolutions, max pooling, a dense layer), its
    weights starting from fixed values on every rank."""
    init = np.random.RandomState(7)

    def var(shape, scale, name):
        return tf.Variable((init.randn(*shape) * scale).astype(np.float32), name=name)

    k1, b1 = var([3, 3, 1, 8], 0.3, "k1"), var([8], 0.0, "b1")
    k2, b2 = var([3, 3, 8, 16], 0.1, "k2"), var([16], 0.0, "b2")
    w, b = var([4 * 4 * 16, 10], 0.05, "w"), var([10], 0.0, "b")
    net = tf.nn.relu(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME") + b1)
    net = tf.nn.max_pool(net, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    net = tf.nn.relu(tf.nn.conv2d(net, k2, [1, 1, 1, 1], "SAME") + b2)
    logits = tf.matmul(tf.reshape(net, [-1, 4 * 4 * 16]), w) + b
    return logits, [k1, b1, k2, b2, w, b]


def _data(global_batch):
    digits = load_digits()
    xs = (digits.images[:global_batch] / 16.0).astype(np.float32)[..., None]
    return xs, digits.target[:global_batch].astype(np.int64)


def _train(opt_fn, xs, ys, steps, distributed, passes=1, **options):
    """The digits CNN's weights after `steps` optimizer steps on (xs, ys); with passes=N each
    step is N backward passes over equal slices of the batch (backward_passes_per_step=N)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        y = tf.placeholder(tf.int64, [None])
        logits, params = _digits_cnn(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        opt = opt_fn()
        if distributed:
            opt = hvd.DistributedOptimizer(opt, backward_passes_per_step=passes, **options)
        train = opt.minimize(loss)
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        bcast = hvd.broadcast_global_variables(0) if distributed else None
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        if bcast is not None:
            sess.run(bcast)
        micro = len(xs) // passes
        for _ in range(steps):
            for p in range(passes):
                part = slice(p * micro, (p + 1) * micro)
                sess.run(train, {x: xs[part], y: ys[part]})
        return sess.run(params)


def _digits_cnn_initial():
    with tf.Graph().as_default():
        _, params = _digits_cnn(tf.placeholder(tf.float32, [None, 8, 8, 1]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(params[0])


def training(out_dir):
    """DistributedOptimizer training the digits CNN on each rank's slice of a global batch,
    against one process training on the whole batch (computed here too, without
    collectives)."""
    r, n = hvd.rank(), hvd.size()
    per_rank = 8
    xs, ys = _data(per_rank * n)
    mine = slice(r * per_rank, (r + 1) * per_rank)
    out = {}
    for name, opt_fn in [("sgd", lambda: tf.train.GradientDescentOptimizer(0.5)),
                         ("adam", lambda: tf.train.AdamOptimizer(0.05))]:
        dist = _train(opt_fn, xs[mine], ys[mine], 5, distributed=True)
        single = _train(opt_fn, xs, ys, 5, distributed=False)
        for i, (d, s) in enumerate(zip(dist, single)):
            out[f"{name}_dist{i}"] = d
            out[f"{name}_single{i}"] = s
        out[f"{name}_initial0"] = _digits_cnn_initial()
    # Two backward passes per step over halves of each rank's slice, their gradients averaged
    # (and predivided, which must not change the result): the same steps as above.
    sgd = lambda: tf.train.GradientDescentOptimizer(0.5)  # noqa: E731
    accumulated = _train(sgd, xs[mine], ys[mine], 5, distributed=True, passes=2,
                         average_aggregated_gradients=True, gradient_predivide_factor=2.0)
    for i, a in enumerate(accumulated):
        out[f"accumulated{i}"] = a
    np.savez(os.path.join(out_dir, f"rank{r}.npz"), **out)


def _error_of(fn):
    try:
        fn()
    except tf.errors.OpError as e:
        return {"class": type(e).__name__, "message": str(e)}
    return {"class": None, "message": ""}


def mismatch(out_dir):
    """Each rank submits the same name with a different shape, then a different dtype."""
    r = hvd.rank()
    shape_t = hvd.allreduce(tf.constant(np.ones([2 + r], np.float32)), name="mismatch_shape")
    dtype_t = hvd.allreduce(tf.constant(np.ones([2], [np.float32, np.float64][r % 2])),
                            name="mismatch_dtype")
    ok_t = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum, name="after")
    with tf.Session() as sess:
        shape_err = _error_of(lambda: sess.run(shape_t))
        dtype_err = _error_of(lambda: sess.run(dtype_t))
        after = sess.run(ok_t).tolist()  # the job goes on after a mismatch
    _save_json(out_dir, shape=shape_err, dtype=dtype_err, after=after)


def stall(out_dir):
    """Rank 1 never submits the tensor rank 0 waits for; rank 0 must fail, naming rank 1."""
    r = hvd.rank()
    t = hvd.allreduce(tf.constant([1.0]), name="only_rank0")
    start = time.time()
    with tf.Session() as sess:
        err = _error_of(lambda: sess.run(t)) if r == 0 else {"class": None, "message": ""}
        if r != 0:
            # Stays alive (and silent in collectives) past the stall limit.
            time.sleep(float(os.environ["FLOWSTONE_HOROVOD_TIMEOUT_SECONDS"]) + 2)
            err = _error_of(lambda: sess.run(t))
    _save_json(out_dir, error=err, seconds=time.time() - start)


def killed(out_dir):
    """Rank 2 kills itself in the middle of training; the others must fail in bounded time."""
    r = hvd.rank()
    v = tf.Variable(np.zeros([4], np.float32))
    step = v.assign_add(hvd.allreduce(tf.ones([4]), op=hvd.Sum))
    start = None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        err = {"class": None, "message": ""}
        for i in range(100000):
            if r == 2 and i == 5:
                os.kill(os.getpid(), 9)
            if i == 5:
                start = time.time()
            try:
                sess.run(step)
            except tf.errors.OpError as e:
                err = {"class": type(e).__name__, "message": str(e)}
                break
    _save_json(out_dir, error=err, seconds=time.time() - start)
    sys.stdout.flush()
    # MPI cannot be finalized with a rank missing: leave without waiting for it.
    os._exit(0)


def raises(out_dir):
    """Rank 1 raises in the middle of training; rank 0's next collective must fail at once."""
    r = hvd.rank()
    t = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum)
    with tf.Session() as sess:
        sess.run(t)
        if r == 1:
            raise RuntimeError("rank 1 fails on purpose")
        start = time.time()
        err = {"class": None, "message": ""}
        try:
            for _ in range(1000):
                sess.run(t)
        except tf.errors.OpError as e:
            err = {"class": type(e).__name__, "message": str(e)}
    _save_json(out_dir, error=err, seconds=time.time() - start)


def timeline(out_dir):
    r = hvd.rank()
    ts = [hvd.allreduce(tf.constant(np.full([3], r, np.float32)), name=f"tl_{i}")
          for i in range(3)]
    with tf.Session() as sess:
        sess.run(ts)
    hvd.shutdown()  # closes the timeline's JSON array
    with open(os.path.join(out_dir, f"rank{r}.json"), "w") as f:
        json.dump({"done": True}, f)


def eager(out_dir):
    """DistributedGradientTape in eager mode: each rank's gradient of (rank+1) * sum(w * w)
    averaged over the ranks, and eager collectives."""
    tf.enable_eager_execution()
    r, n = hvd.rank(), hvd.size()
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = (r + 1.0) * tf.reduce_sum(w * w)
    tape = hvd.DistributedGradientTape(tape)
    grad = tape.gradient(loss, [w])[0]
    summed = hvd.allreduce(tf.constant([float(r)]), op=hvd.Sum)
    gathered = hvd.allgather(tf.constant([[float(r)]] * (r + 1)))
    np.savez(os.path.join(out_dir, f"rank{r}.npz"), grad=grad.numpy(), summed=summed.numpy(),
             gathered=gathered.numpy())


def keras(out_dir):
    """tf.keras fit with hvd.keras's DistributedOptimizer and callbacks, each rank on its own
    data: the weights must agree across ranks and the logged metrics must be averages."""
    import flowstone.horovod.keras as hvd_keras
    r = hvd.rank()
    rng = np.random.RandomState(r)
    xs = rng.randn(32, 4).astype(np.float32)
    ys = (xs.sum(axis=1, keepdims=True) * (r + 1)).astype(np.float32)
    tf.set_random_seed(r)  # different initial weights: the broadcast makes them agree
    model = tf.keras.models.Sequential([tf.keras.layers.Dense(8, activation="tanh",
                                                              input_shape=(4,)),
                                        tf.keras.layers.Dense(1)])
    opt = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.05))
    model.compile(optimizer=opt, loss="mse")
    callbacks = [hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd_keras.callbacks.MetricAverageCallback(),
                 hvd_keras.callbacks.LearningRateWarmupCallback(0.05, warmup_epochs=2,
                                                                steps_per_epoch=4)]
    history = model.fit(xs, ys, batch_size=8, epochs=3, verbose=0, callbacks=callbacks)
    weights = model.get_weights()
    np.savez(os.path.join(out_dir, f"rank{r}.npz"), loss=np.array(history.history["loss"]),
             lr=np.array(history.history["lr"]), **{f"w{i}": w for i, w in enumerate(weights)})


def topology(out_dir):
    _save_json(out_dir, rank=hvd.rank(), size=hvd.size(), local_rank=hvd.local_rank(),
               local_size=hvd.local_size(), cross_rank=hvd.cross_rank(),
               cross_size=hvd.cross_size(), threads=hvd.mpi_threads_supported(),
               mpi_enabled=hvd.mpi_enabled(), initialized=hvd.is_initialized())


if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    hvd.init()
    globals()[case](out)
