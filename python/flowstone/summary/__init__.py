"""tf.summary (TensorFlow 1's): summary ops that build serialized `Summary` protos in the graph
(summary_ops.py), the FileWriter that writes them into TensorBoard event files (writer.py, over
the C++ events writer) and summary_iterator, which reads event files back (reader.py); and
TensorFlow 2's writers and step-based writes (summary_v2.py).
`tf.compat.v1.summary` is this same module. Names are placed by util/tf_export."""

from flowstone.summary import reader, summary_ops, summary_v2, writer  # noqa: F401
