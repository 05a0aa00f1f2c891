"""The optimizers canned estimators accept: a name, an Optimizer, or a callable returning one."""

import flowstone as tf

_OPTIMIZERS_BY_NAME = {
    "Adagrad": tf.train.AdagradOptimizer,
    "Adam": tf.train.AdamOptimizer,
    "Ftrl": tf.train.FtrlOptimizer,
    "RMSProp": tf.train.RMSPropOptimizer,
    "SGD": tf.train.GradientDescentOptimizer,
}


def get_optimizer_instance(opt, learning_rate=None):
    """An Optimizer from `opt`: a name ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD") built with
    `learning_rate`, an Optimizer, or a callable that returns one."""
    if isinstance(opt, str):
        if opt not in _OPTIMIZERS_BY_NAME:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: "
                             f"{tuple(sorted(_OPTIMIZERS_BY_NAME))}")
        if not learning_rate:
            raise ValueError("learning_rate must be specified when opt is string.")
        return _OPTIMIZERS_BY_NAME[opt](learning_rate=learning_rate)
    if callable(opt) and not isinstance(opt, tf.train.Optimizer):
        opt = opt()
    if not isinstance(opt, tf.train.Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt
