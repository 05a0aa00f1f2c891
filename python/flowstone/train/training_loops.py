"""tf.train.basic_train_loop."""

from flowstone.util.tf_export import tf_export


@tf_export("train.basic_train_loop")
def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Calls train_step_fn(session, *args, **kwargs) until `supervisor` says to stop, in the
    session its managed_session(master) gives."""
    with supervisor.managed_session(master) as sess:
        while not supervisor.should_stop():
            train_step_fn(sess, *(args or []), **(kwargs or {}))

