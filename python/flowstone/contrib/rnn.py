"""tf.contrib.rnn: TF1 contrib's names for the RNN cells of tf.nn.rnn_cell and the static
unrolling functions of tf.nn, and the fused LSTMs (LSTMBlockCell, LSTMBlockFusedCell)."""

from flowstone.ops.rnn import static_bidirectional_rnn, static_rnn  # noqa: F401
from flowstone.ops.rnn_cell_impl import (BasicLSTMCell, BasicRNNCell, DeviceWrapper,  # noqa: F401
                                         DropoutWrapper, GRUCell, LSTMCell, LSTMStateTuple,
                                         MultiRNNCell, ResidualWrapper, RNNCell)
from flowstone.ops.lstm_ops import LSTMBlockCell, LSTMBlockFusedCell  # noqa: F401
