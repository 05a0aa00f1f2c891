"""tf.train.SessionManager: creates a session that is restored from a checkpoint or initialized,
and checks that the model is ready."""

import time

from flowstone.client.session import Session
from flowstone.platform import tf_logging as logging
from flowstone.train.saver import get_checkpoint_state
from flowstone.util.tf_export import tf_export


def _names(values):
    return ", ".join(v.decode() if isinstance(v, bytes) else str(v) for v in values)


@tf_export("train.SessionManager")
class SessionManager:
    """Creates sessions for `graph`: restored from a checkpoint when one is given and exists,
    otherwise initialized by an init op or function; then runs the local init op and checks
    `ready_op` (an op listing what is still uninitialized; empty means ready)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        from flowstone.framework import ops as _ops
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or _ops.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(f"If you pass a ready_for_local_init_op you must also pass a "
                             f"local_init_op , ready_for_local_init_op [{ready_for_local_init_op}]")

    def _restore_checkpoint(self, master, saver, checkpoint_dir, checkpoint_filename_with_path,
                            wait_for_checkpoint, max_wait_secs, config):
        """A new session, and whether a checkpoint was restored into it."""
        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        if saver is None or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0
        state = get_checkpoint_state(checkpoint_dir)
        while not (state and state.model_checkpoint_path):
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A ready session: restored from the latest checkpoint if there is one, else
        initialized with `init_op` / `init_fn`. Raises RuntimeError if it is not ready then."""
        sess, is_loaded = self._restore_checkpoint(master, saver, checkpoint_dir,
                                                   checkpoint_filename_with_path,
                                                   wait_for_checkpoint, max_wait_secs, config)
        if not is_loaded:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, message = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  "
                               f"Init op: {_op_name(init_op)}, init fn: {init_fn}, error: "
                               f"{message}")
        ready, message = self._model_ready(sess)
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                               f"{_op_name(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{self._local_init_op}, error: {message}")
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """(session, whether it was restored and is ready)."""
        sess, is_loaded = self._restore_checkpoint(master, saver, checkpoint_dir,
                                                   checkpoint_filename_with_path,
                                                   wait_for_checkpoint, max_wait_secs, config)
        if not is_loaded:
            return sess, False
        ok, message = self._try_run_local_init_op(sess)
        if not ok:
            logging.info("Restoring model from %s did not make model ready for local init: %s",
                         checkpoint_dir or checkpoint_filename_with_path, message)
            return sess, False
        ready, message = self._model_ready(sess)
        if not ready:
            logging.info("Restoring model from %s did not make model ready: %s",
                         checkpoint_dir or checkpoint_filename_with_path, message)
            return sess, False
        return sess, True

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A session once another process has made the model ready, or None after
        `max_wait_secs`."""
        deadline = time.time() + max_wait_secs
        while True:
            sess = Session(master, graph=self._graph, config=config)
            ok, _ = self._try_run_local_init_op(sess)
            if ok and self._model_ready(sess)[0]:
                return sess
            sess.close()
            if time.time() + self._recovery_wait_secs > deadline:
                return None
            time.sleep(self._recovery_wait_secs)

    def _ready(self, op, sess, what):
        if op is None:
            return True, None
        uninitialized = sess.run(op)
        if len(uninitialized) == 0:
            return True, None
        return False, f"{what}: {_names(uninitialized)}"

    def _model_ready(self, sess):
        return self._ready(self._ready_op, sess, "Variables not initialized")

    def _try_run_local_init_op(self, sess):
        if self._local_init_op is None:
            return True, None
        ready, message = self._ready(self._ready_for_local_init_op, sess,
                                     "Variables not initialized")
        if not ready:
            return False, message
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        return True, None


def _op_name(op):
    return None if op is None else op.name
