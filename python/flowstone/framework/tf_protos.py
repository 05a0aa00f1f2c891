"""TensorFlow's protocol buffer messages (GraphDef, NodeDef, MetaGraphDef, Example, ...).

The classes are built at import from `tf_protos.desc`, the FileDescriptorSet that the build
generates from the repository's proto/ files (TensorFlow's field numbers, package
`flowstone.proto`), in a descriptor pool of their own. They are ordinary protobuf messages
(the `protobuf` package): `SerializeToString`, `ParseFromString`, `text_format`, and the bytes
are TensorFlow's wire format, so a GraphDef written here parses as `tf.compat.v1.GraphDef` in
TensorFlow and the other way round. Building them from descriptors rather than from protoc's
generated Python keeps the package independent of which protoc generated what.
"""

import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from flowstone.util.tf_export import tf_export


def _load_pool():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tf_protos.desc")
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


_POOL = _load_pool()


def message_class(name):
    """The class of message `name` ("GraphDef", "MetaGraphDef.MetaInfoDef", ...)."""
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"flowstone.proto.{name}"))


def enum_value(enum_name, value_name):
    """The number of `value_name` in enum `enum_name` ("DataType", "DT_FLOAT" -> 1)."""
    return _POOL.FindEnumTypeByName(f"flowstone.proto.{enum_name}").values_by_name[value_name].number


GraphDef = tf_export("GraphDef")(message_class("GraphDef"))
NodeDef = tf_export("NodeDef")(message_class("NodeDef"))
AttrValue = tf_export("AttrValue")(message_class("AttrValue"))
NameAttrList = tf_export("NameAttrList")(message_class("NameAttrList"))
TensorProto = message_class("TensorProto")
TensorShapeProto = message_class("TensorShapeProto")
VersionDef = message_class("VersionDef")
FunctionDefLibrary = message_class("FunctionDefLibrary")
MetaGraphDef = tf_export("MetaGraphDef")(message_class("MetaGraphDef"))
CollectionDef = message_class("CollectionDef")
SignatureDef = message_class("SignatureDef")
TensorInfo = tf_export("TensorInfo")(message_class("TensorInfo"))
SaverDef = tf_export("train.SaverDef")(message_class("SaverDef"))
SavedModel = message_class("SavedModel")
VariableDef = message_class("VariableDef")
Example = tf_export("train.Example")(message_class("Example"))
SequenceExample = tf_export("train.SequenceExample")(message_class("SequenceExample"))
Features = tf_export("train.Features")(message_class("Features"))
Feature = tf_export("train.Feature")(message_class("Feature"))
FeatureList = tf_export("train.FeatureList")(message_class("FeatureList"))
FeatureLists = tf_export("train.FeatureLists")(message_class("FeatureLists"))
BytesList = tf_export("train.BytesList")(message_class("BytesList"))
FloatList = tf_export("train.FloatList")(message_class("FloatList"))
Int64List = tf_export("train.Int64List")(message_class("Int64List"))
Summary = tf_export("Summary", "summary.Summary")(message_class("Summary"))
SummaryMetadata = tf_export("SummaryMetadata")(message_class("SummaryMetadata"))
SummaryDescription = tf_export("summary.SummaryDescription")(message_class("SummaryDescription"))
HistogramProto = tf_export("HistogramProto")(message_class("HistogramProto"))
Event = tf_export("Event", "summary.Event")(message_class("Event"))
SessionLog = tf_export("SessionLog", "summary.SessionLog")(message_class("SessionLog"))
TaggedRunMetadata = tf_export("summary.TaggedRunMetadata")(message_class("TaggedRunMetadata"))
LogMessage = tf_export("LogMessage")(message_class("LogMessage"))
