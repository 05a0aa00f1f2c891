"""tf.contrib.framework: arg_scope, model variables, the global step, restoring part of a model,
and nest."""

from flowstone.contrib.framework.arg_scope import (add_arg_scope, arg_scope,  # noqa: F401
                                                   arg_scope_func_key, arg_scoped_arguments,
                                                   current_arg_scope, has_arg_scope)
from flowstone.contrib.framework.variables import (assign_from_checkpoint_fn,  # noqa: F401
                                                   create_global_step, get_global_step,
                                                   get_local_variables, get_model_variables,
                                                   get_or_create_global_step,
                                                   get_trainable_variables,
                                                   get_unique_variable, get_variables,
                                                   get_variables_by_name,
                                                   get_variables_by_suffix,
                                                   get_variables_to_restore, model_variable,
                                                   variable)
from flowstone.util import nest  # noqa: F401
