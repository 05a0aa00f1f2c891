"""tf.saved_model: TensorFlow 1's SavedModel API (builder, loader, simple_save and the
signature helpers) and TensorFlow 2's save / load (save.py, revive.py), each a module named as
TensorFlow names it."""

from flowstone.saved_model import builder  # noqa: F401
from flowstone.saved_model import constants  # noqa: F401
from flowstone.saved_model import loader  # noqa: F401
from flowstone.saved_model import main_op  # noqa: F401
from flowstone.saved_model import save  # noqa: F401
from flowstone.saved_model import save_options  # noqa: F401
from flowstone.saved_model import signature_def_utils  # noqa: F401
