"""tf.train.SessionRunHook and the values MonitoredSession passes to hooks around each run."""

import collections

from flowstone.util.tf_export import tf_export


@tf_export("train.SessionRunHook")
class SessionRunHook:
    """Callbacks around a MonitoredSession: begin() while the graph can still change,
    after_create_session() once, before_run()/after_run() around every run(), end() at close."""

    def begin(self):
        """Called once before the session is created; the graph is not finalized yet."""

    def after_create_session(self, session, coord):
        """Called once the session is created and initialized."""

    def before_run(self, run_context):
        """Returns None or SessionRunArgs: more fetches, feeds and options for this run."""
        return None

    def after_run(self, run_context, run_values):
        """Receives the results of the fetches that before_run asked for."""

    def end(self, session):
        """Called when the monitored session closes without an exception."""


@tf_export("train.SessionRunArgs")
class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches (any structure Session.run takes), feeds, RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


@tf_export("train.SessionRunValues")
class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """A hook's results: the values of the fetches its before_run returned."""


@tf_export("train.SessionRunContext")
class SessionRunContext:
    """The run a hook is called for: the caller's arguments, the session, and a way to stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """Asks the monitored session to stop: should_stop() becomes True after this run."""
        self._stop_requested = True
