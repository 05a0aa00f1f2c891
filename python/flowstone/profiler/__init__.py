"""tf.profiler (TF1's tfprof front end): `profile`, `Profiler` and `ProfileOptionBuilder` over
the step statistics of traced runs. Names are placed by flowstone.util.tf_export."""

from flowstone.profiler.model_analyzer import (GraphNodeProto, MultiGraphNodeProto, Profiler,
                                               profile)
from flowstone.profiler.option_builder import ProfileOptionBuilder

__all__ = ["GraphNodeProto", "MultiGraphNodeProto", "ProfileOptionBuilder", "Profiler", "profile"]
