"""tf.summary (TensorFlow 1's): summary ops that build serialized `Summary` protos in the graph
(summary_ops.py), the FileWriter that writes them into TensorBoard event files (writer.py, over
the C++ events writer) and summary_iterator, which reads event files back (reader.py).
`tf.compat.v1.summary` is this same module. Names are placed by util/tf_export."""

from flowstone.summary import reader, summary_ops, writer  # noqa: F401
