"""RunConfig: where and how often an Estimator saves, logs and seeds (local training only)."""

import copy

from flowstone.util.tf_export import tf_export

_DEFAULT_SAVE_CHECKPOINTS_SECS = 600
_REPLACEABLE = {"model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
                "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
                "device_fn", "eval_distribute", "experimental_max_worker_delay_secs",
                "session_creation_timeout_secs", "checkpoint_save_graph_def"}


@tf_export("estimator.RunConfig")
class RunConfig:
    """An Estimator's settings. Checkpoints are saved every 600 seconds unless
    save_checkpoints_steps or save_checkpoints_secs says otherwise (not both). Only the local,
    single-process configuration exists (is_chief, no cluster)."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=None, session_config=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None, session_creation_timeout_secs=7200,
                 checkpoint_save_graph_def=True):
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_secs = _DEFAULT_SAVE_CHECKPOINTS_SECS
        for name, value in (("save_summary_steps", save_summary_steps),
                            ("keep_checkpoint_max", keep_checkpoint_max),
                            ("log_step_count_steps", log_step_count_steps),
                            ("save_checkpoints_steps", save_checkpoints_steps),
                            ("save_checkpoints_secs", save_checkpoints_secs)):
            if value is not None and value < 0:
                raise ValueError(f"{name} should be >= 0, given: {value}")
        if train_distribute is not None or eval_distribute is not None or \
                experimental_distribute is not None:
            raise NotImplementedError("RunConfig: distribution strategies are not supported; "
                                      "Estimators train in one process.")
        self._model_dir = None if model_dir is None else str(model_dir)
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._device_fn = device_fn
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def
        self._train_distribute = self._eval_distribute = None
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        del protocol

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    device_fn = property(lambda self: self._device_fn)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    train_distribute = property(lambda self: None)
    eval_distribute = property(lambda self: None)
    # The local process is the whole cluster.
    is_chief = property(lambda self: True)
    master = property(lambda self: "")
    evaluation_master = property(lambda self: "")
    cluster_spec = property(lambda self: None)
    task_type = property(lambda self: "worker")
    task_id = property(lambda self: 0)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    global_id_in_cluster = property(lambda self: 0)
    service = property(lambda self: None)

    def replace(self, **kwargs):
        """A copy with the given properties replaced."""
        unknown = sorted(set(kwargs) - _REPLACEABLE)
        if unknown:
            raise ValueError(f"Replacing {unknown} is not supported. Allowed properties are "
                             f"{sorted(_REPLACEABLE)}.")
        new = copy.copy(self)
        steps = kwargs.get("save_checkpoints_steps", self._save_checkpoints_steps)
        secs = kwargs.get("save_checkpoints_secs", self._save_checkpoints_secs)
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs and \
                steps is not None:
            secs = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs and \
                secs is not None:
            steps = None
        if steps is not None and secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        for key, value in kwargs.items():
            setattr(new, f"_{key}", value)
        new._save_checkpoints_steps, new._save_checkpoints_secs = steps, secs
        return new

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in sorted(_REPLACEABLE)
                           if hasattr(self, k))
        return f"RunConfig({fields})"
