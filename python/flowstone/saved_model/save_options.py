"""tf.saved_model.SaveOptions and tf.saved_model.Asset: the options of a TF2 SavedModel save
and a file that travels with a SavedModel."""

from flowstone import dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


@tf_export("saved_model.SaveOptions")
class SaveOptions:
    """Options for tf.saved_model.save, kept as given (TensorFlow's fields and defaults)."""

    __slots__ = ("namespace_whitelist", "save_debug_info", "function_aliases",
                 "experimental_debug_stripper", "experimental_io_device",
                 "experimental_variable_policy", "experimental_custom_gradients",
                 "experimental_image_format", "experimental_skip_saver",
                 "experimental_sharding_callback", "extra_tags")

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None,
                 experimental_variable_policy=None, experimental_custom_gradients=True,
                 experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        self.namespace_whitelist = list(namespace_whitelist or [])
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases if function_aliases else {}
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = extra_tags


@tf_export("saved_model.Asset")
class Asset:
    """A file a SavedModel carries (a vocabulary, say): `asset_path` is a string tensor with
    its path."""

    def __init__(self, path):
        if isinstance(path, Asset):
            path = path.asset_path
        self.asset_path = _ops.convert_to_tensor(path, dtype=dtypes.string, name="asset_path")
