"""The names a SavedModel is laid out and tagged with (TensorFlow's values)."""

from flowstone.util.tf_export import export_value

SAVED_MODEL_SCHEMA_VERSION = 1
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"

SERVING = "serve"
TRAINING = "train"
EVAL = "eval"
GPU = "gpu"
TPU = "tpu"

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"

for _name in ("SAVED_MODEL_SCHEMA_VERSION", "SAVED_MODEL_FILENAME_PB",
              "SAVED_MODEL_FILENAME_PBTXT", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME",
              "ASSETS_DIRECTORY", "MAIN_OP_KEY", "LEGACY_INIT_OP_KEY", "ASSETS_KEY",
              "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB"):
    export_value(f"saved_model.constants.{_name}", globals()[_name])
    export_value(f"saved_model.{_name}", globals()[_name])
for _name in ("SERVING", "TRAINING", "EVAL", "GPU", "TPU"):
    export_value(f"saved_model.tag_constants.{_name}", globals()[_name])
    if _name != "EVAL":  # TensorFlow has no tf.saved_model.EVAL
        export_value(f"saved_model.{_name}", globals()[_name])
for _name in ("DEFAULT_SERVING_SIGNATURE_DEF_KEY", "PREDICT_METHOD_NAME", "PREDICT_INPUTS",
              "PREDICT_OUTPUTS", "CLASSIFY_METHOD_NAME", "REGRESS_METHOD_NAME", "CLASSIFY_INPUTS",
              "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "REGRESS_INPUTS",
              "REGRESS_OUTPUTS"):
    export_value(f"saved_model.signature_constants.{_name}", globals()[_name])
    export_value(f"saved_model.{_name}", globals()[_name])
