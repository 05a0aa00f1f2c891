"""tf.contrib.training: evaluating a checkpoint once (evaluate_once, StopAfterNEvalsHook,
get_or_create_eval_step). HParams and the queue-based input helpers are not provided."""

from flowstone.train.evaluation import (StopAfterNEvalsHook, evaluate_once,  # noqa: F401
                                        get_or_create_eval_step)
