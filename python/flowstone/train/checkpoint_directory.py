"""Checkpoint-directory helpers that only read the checkpoint state and the files' names:
waiting for new checkpoints, modification times, removal. They cover both a single-file
checkpoint (the prefix itself) and TensorFlow's V2 layout (prefix.index, prefix.data-*), so they
hold whichever Saver writes."""

import glob
import os
import time

from flowstone import errors
from flowstone.platform import tf_logging as logging
from flowstone.train.saver import latest_checkpoint
from flowstone.util.tf_export import tf_export


def _checkpoint_files(prefix, meta_graph_suffix="meta"):
    """The files that make up the checkpoint at `prefix` and exist."""
    candidates = [prefix, f"{prefix}.index", f"{prefix}.{meta_graph_suffix}"]
    candidates += glob.glob(glob.escape(prefix) + ".data-?????-of-?????")
    return [path for path in candidates if os.path.isfile(path)]


@tf_export("train.get_checkpoint_mtimes")
def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times of the checkpoints at `checkpoint_prefixes` (those that exist)."""
    mtimes = []
    for prefix in checkpoint_prefixes:
        prefix = os.fspath(prefix)
        index = f"{prefix}.index"
        path = index if os.path.isfile(index) else prefix
        if os.path.isfile(path):
            mtimes.append(os.path.getmtime(path))
    return mtimes


@tf_export("train.remove_checkpoint")
def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta"):
    """Deletes the checkpoint files at `checkpoint_prefix`."""
    files = _checkpoint_files(os.fspath(checkpoint_prefix), meta_graph_suffix)
    if not files:
        logging.warning("Couldn't match files for checkpoint %s", checkpoint_prefix)
    for path in files:
        os.remove(path)


def _wait_for_new_checkpoint(checkpoint_dir, last_checkpoint, seconds_to_sleep, timeout):
    deadline = None if timeout is None else time.time() + timeout
    logging.info("Waiting for new checkpoint at %s", checkpoint_dir)
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            logging.info("Found new checkpoint at %s", path)
            return path
        if deadline is not None and time.time() + seconds_to_sleep > deadline:
            return None
        time.sleep(seconds_to_sleep)


@tf_export("train.checkpoints_iterator")
def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new checkpoint path of `checkpoint_dir` as it appears, at most one every
    `min_interval_secs`. After `timeout` seconds without one it ends, unless `timeout_fn()`
    returns False (then it keeps waiting)."""
    if min_interval_secs < 0:
        raise errors.InvalidArgumentError(None, None, "min_interval_secs must be >= 0, got "
                                          f"{min_interval_secs}")
    path = None
    while True:
        new_path = _wait_for_new_checkpoint(checkpoint_dir, path, 1, timeout)
        if new_path is None:
            if not timeout_fn:
                logging.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        path = new_path
        yield path
        time.sleep(max(0.0, start + min_interval_secs - time.time()))
