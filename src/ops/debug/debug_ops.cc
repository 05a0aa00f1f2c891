// Assertions and debugging ops: Assert, CheckNumerics and CheckNumericsV2, Print and PrintFormatted
// (tf.print), with TensorFlow's messages.
//
// Flowstone has no string dtype yet, so the strings in an assertion's or a print's data (the
// "Condition x == y did not hold element-wise:" parts) travel in the `string_data` attr, placed
// among the tensors by `string_positions` (the index of each string among all data items).
#include <cmath>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/logging.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// "[item0] [item1] ..." (or without separators for Print): the strings in place, and each tensor
// input from `first_tensor` on summarized to `summarize` values.
std::string FormatData(KernelContext& ctx, int first_tensor, const char* separator) {
  const auto strings = ctx.attrs().GetOr<std::vector<std::string>>("string_data", {});
  const auto positions = ctx.attrs().GetOr<std::vector<int64_t>>("string_positions", {});
  const int64_t summarize = ctx.attrs().GetOr<int64_t>("summarize", 3);
  const int64_t num_items =
      static_cast<int64_t>(ctx.num_inputs() - first_tensor) + static_cast<int64_t>(strings.size());
  std::string out;
  size_t next_string = 0;
  int next_tensor = first_tensor;
  for (int64_t item = 0; item < num_items; ++item) {
    if (item > 0) out += separator;
    out += "[";
    if (next_string < strings.size() && next_string < positions.size() &&
        positions[next_string] == item) {
      out += strings[next_string++];
    } else if (next_tensor < ctx.num_inputs()) {
      out += ctx.input(next_tensor++).SummarizeValue(summarize);
    }
    out += "]";
  }
  return out;
}

Status CheckStringPositions(InferenceContext& ctx, int num_tensors) {
  const auto strings = ctx.attrs().GetOr<std::vector<std::string>>("string_data", {});
  const auto positions = ctx.attrs().GetOr<std::vector<int64_t>>("string_positions", {});
  if (strings.size() != positions.size()) {
    return errors::InvalidArgument(ctx.op_type(), ": string_data has ", strings.size(),
                                   " entries but string_positions has ", positions.size());
  }
  const int64_t num_items = num_tensors + static_cast<int64_t>(strings.size());
  for (size_t k = 0; k < positions.size(); ++k) {
    if (positions[k] < 0 || positions[k] >= num_items ||
        (k > 0 && positions[k] <= positions[k - 1])) {
      return errors::InvalidArgument(ctx.op_type(), ": string_positions must increase within [0, ",
                                     num_items, "), got ", positions[k], " at index ", k);
    }
  }
  return Status::OK();
}

// --- Assert --------------------------------------------------------------------------------------

Status AssertKernel(KernelContext& ctx) {
  const Tensor& condition = ctx.input(0);
  if (condition.dtype() != DType::kBool || condition.num_elements() != 1) {
    return errors::InvalidArgument("In[0] expected to be a scalar bool, got ",
                                   condition.DebugString(), " (Assert)");
  }
  if (*condition.data<bool>()) return Status::OK();
  return errors::InvalidArgument("assertion failed: ", FormatData(ctx, 1, " "));
}

Status AssertShape(InferenceContext& ctx) {
  const PartialShape& condition = ctx.input(0);
  if (condition.known_rank() && condition.rank() != 0) {
    return errors::InvalidArgument("Assert: the condition must be a scalar, got shape ",
                                   condition.ToString());
  }
  return CheckStringPositions(ctx, ctx.num_inputs() - 1);
}

FS_REGISTER_OP(OpBuilder("Assert")
                   .Input("condition", "bool")
                   .InputTypeList("data", "T")
                   .Attr("summarize", 3)
                   .Attr("string_data", AttrValue(std::vector<std::string>{}))
                   .Attr("string_positions", AttrValue(std::vector<int64_t>{}))
                   .Stateful()
                   .Shape(AssertShape)
                   .Kernel("CPU", AssertKernel)
                   .NotDifferentiable()
                   .Doc("Fails with InvalidArgument, listing data, when "
                        "condition is false."));

// --- CheckNumerics -------------------------------------------------------------------------------

// Which non-finite values a tensor holds.
struct NonFinite {
  bool negative_inf = false, positive_inf = false, nan = false;
  bool any() const { return negative_inf || positive_inf || nan; }
};

NonFinite ScanNumerics(const Tensor& x) {
  NonFinite found;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double v = x.ElementAsDouble(i);
    found.nan |= std::isnan(v);
    found.negative_inf |= std::isinf(v) && v < 0;
    found.positive_inf |= std::isinf(v) && v > 0;
  }
  return found;
}

Status CheckNumericsFailure(KernelContext& ctx, const std::string& what) {
  return errors::InvalidArgument(ctx.attrs().GetOr<std::string>("message", ""), " : Tensor had ",
                                 what, " values");
}

// CheckNumerics says "Inf", "NaN" or "Inf and NaN".
Status CheckNumericsKernel(KernelContext& ctx) {
  const NonFinite found = ScanNumerics(ctx.input(0));
  const bool inf = found.negative_inf || found.positive_inf;
  if (found.any()) {
    return CheckNumericsFailure(ctx, inf && found.nan ? "Inf and NaN" : (inf ? "Inf" : "NaN"));
  }
  ctx.SetOutput(0, ctx.input(0));
  return Status::OK();
}

// CheckNumericsV2 (tf.debugging.enable_check_numerics puts one after every floating-point
// output) says which of -Inf, +Inf and NaN it found.
Status CheckNumericsV2Kernel(KernelContext& ctx) {
  const NonFinite found = ScanNumerics(ctx.input(0));
  if (found.any()) {
    std::vector<std::string> names;
    if (found.negative_inf) names.push_back("-Inf");
    if (found.positive_inf) names.push_back("+Inf");
    if (found.nan) names.push_back("NaN");
    std::string what = names[0];
    if (names.size() == 2) what = names[0] + " and " + names[1];
    if (names.size() == 3) what = names[0] + ", " + names[1] + ", and " + names[2];
    return CheckNumericsFailure(ctx, what);
  }
  ctx.SetOutput(0, ctx.input(0));
  return Status::OK();
}

// The gradient is checked too, by the same op, naming the forward check.
Status CheckNumericsGrad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("message", "Not a number (NaN) or infinity (Inf) values detected in gradient. " +
                           ctx.attrs().GetOr<std::string>("message", ""));
  ctx.SetInputGrad(0, ctx.Op(ctx.node().type(), {ctx.output_grad(0)}, attrs));
  return Status::OK();
}

OpBuilder CheckNumericsOp(const char* name, KernelFn kernel, const char* doc) {
  OpBuilder builder(name);
  builder.Input("tensor", "T")
      .Output("output", "T")
      .TypeAttr("T", {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64})
      .RequiredAttr("message", AttrType::kString)
      .Shape(shape_fns::Unchanged)
      .Kernel("CPU", std::move(kernel))
      .Gradient(CheckNumericsGrad)
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(CheckNumericsOp("CheckNumerics", CheckNumericsKernel,
                               "Its input, after checking it has no NaN or Inf; else "
                               "InvalidArgument."));
FS_REGISTER_OP(CheckNumericsOp("CheckNumericsV2", CheckNumericsV2Kernel,
                               "Its input, after checking it has no NaN or infinity; else "
                               "InvalidArgument saying which of -Inf, +Inf and NaN it holds."));

// --- Print ---------------------------------------------------------------------------------------

// Counts runs for first_n once per kernel (per node and session), as TensorFlow does.
class PrintKernel final : public OpKernel {
 public:
  explicit PrintKernel(const Node& node) : OpKernel(node) {}
  Status Compute(KernelContext& ctx) override {
    ctx.SetOutput(0, ctx.input(0));
    const int64_t first_n = ctx.attrs().GetOr<int64_t>("first_n", -1);
    if (first_n >= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (calls_ >= first_n) return Status::OK();
      ++calls_;
    }
    std::string line = ctx.attrs().GetOr<std::string>("message", "") + FormatData(ctx, 1, "");
    static std::mutex stderr_mu;
    std::lock_guard<std::mutex> lock(stderr_mu);
    std::cerr << line << std::endl;
    return Status::OK();
  }

 private:
  std::mutex mu_;
  int64_t calls_ = 0;
};

Status PrintShape(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return CheckStringPositions(ctx, ctx.num_inputs() - 1);
}

FS_REGISTER_OP(OpBuilder("Print")
                   .Input("input", "T")
                   .InputTypeList("data", "U")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .Attr("message", "")
                   .Attr("first_n", -1)
                   .Attr("summarize", 3)
                   .Attr("string_data", AttrValue(std::vector<std::string>{}))
                   .Attr("string_positions", AttrValue(std::vector<int64_t>{}))
                   .Stateful()
                   .Shape(PrintShape)
                   .KernelClass<PrintKernel>("CPU")
                   .Gradient([](GradientContext& ctx) {
                     ctx.SetInputGrad(0, ctx.output_grad(0));
                     return Status::OK();
                   })
                   .Doc("Its input; prints message and the data to stderr when it runs."));

// --- PrintFormatted (tf.print) ---------------------------------------------------------------

// Writes `text` where tf.print's output_stream says: "stderr", "stdout", "log(info)",
// "log(warning)", "log(error)" or "file://<path>" (appended).
Status WriteToStream(const std::string& stream, const std::string& text) {
  static std::mutex stream_mu;
  std::lock_guard<std::mutex> lock(stream_mu);
  if (stream == "stderr" || stream == "stdout") {
    std::ostream& out = stream == "stderr" ? std::cerr : std::cout;
    out << text << std::flush;
    return Status::OK();
  }
  const std::string without_newline =
      !text.empty() && text.back() == '\n' ? text.substr(0, text.size() - 1) : text;
  if (stream == "log(info)") {
    Log(LogSeverity::kInfo, "flowstone/print", without_newline);
  } else if (stream == "log(warning)") {
    Log(LogSeverity::kWarning, "flowstone/print", without_newline);
  } else if (stream == "log(error)") {
    Log(LogSeverity::kError, "flowstone/print", without_newline);
  } else if (stream.rfind("file://", 0) == 0) {
    const std::string path = stream.substr(7);
    std::ofstream file(path, std::ios::app);
    if (!file) {
      return errors::InvalidArgument("tf.print cannot open output_stream file '", path, "'");
    }
    file << text;
  } else {
    return errors::InvalidArgument(
        "Unsupported output stream '", stream,
        "' for tf.print; use stderr, stdout, log(info), log(warning), log(error) or "
        "file://<path>");
  }
  return Status::OK();
}

// The template with each placeholder replaced by the next input, summarized as tf.print
// shows tensors; shared by PrintFormatted and StringFormat.
std::string FormatTemplate(KernelContext& ctx) {
  const std::string format = ctx.attrs().GetOr<std::string>("template", "");
  const std::string placeholder = ctx.attrs().GetOr<std::string>("placeholder", "{}");
  const int64_t summarize = ctx.attrs().GetOr<int64_t>("summarize", 3);
  std::string text;
  size_t start = 0;
  int next = 0;
  while (true) {
    const size_t at = placeholder.empty() ? std::string::npos : format.find(placeholder, start);
    if (at == std::string::npos || next >= ctx.num_inputs()) break;
    text += format.substr(start, at - start);
    text += ctx.input(next++).SummarizeValue(summarize, /*print_v2=*/true);
    start = at + placeholder.size();
  }
  return text + format.substr(start);
}

Status PrintFormattedKernel(KernelContext& ctx) {
  return WriteToStream(ctx.attrs().GetOr<std::string>("output_stream", "stderr"),
                       FormatTemplate(ctx) + ctx.attrs().GetOr<std::string>("end", "\n"));
}

Status PrintFormattedShape(InferenceContext& ctx) {
  const std::string format = ctx.attrs().GetOr<std::string>("template", "");
  const std::string placeholder = ctx.attrs().GetOr<std::string>("placeholder", "{}");
  int placeholders = 0;
  for (size_t at = format.find(placeholder); !placeholder.empty() && at != std::string::npos;
       at = format.find(placeholder, at + placeholder.size())) {
    ++placeholders;
  }
  if (placeholders != ctx.num_inputs()) {
    return errors::InvalidArgument(ctx.op_type(), ": the template has ", placeholders,
                                   " placeholders '", placeholder, "' but there are ",
                                   ctx.num_inputs(), " tensors");
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("PrintFormatted")
                   .InputTypeList("inputs", "T")
                   .Attr("template", "")
                   .Attr("placeholder", "{}")
                   .Attr("summarize", 3)
                   .Attr("output_stream", "stderr")
                   .Attr("end", "\n")
                   .Stateful()
                   .Shape(PrintFormattedShape)
                   .Kernel("CPU", PrintFormattedKernel)
                   .NotDifferentiable()
                   .Doc("tf.print: the template with each placeholder replaced by the next "
                        "tensor (first and last `summarize` entries per dimension), then `end`, "
                        "written to output_stream. TensorFlow builds this from StringFormat and "
                        "PrintV2, which need a string dtype."));

// --- StringFormat and PrintV2: the ops TensorFlow's tf.print and tf.strings.format emit ------

Status StringFormatKernel(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  *out->data<std::string>() = FormatTemplate(ctx);
  return Status::OK();
}

Status StringFormatShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(PrintFormattedShape(ctx));
  ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringFormat")
                   .InputTypeList("inputs", "T")
                   .Output("output", "string")
                   .Attr("template", "%s")
                   .Attr("placeholder", "%s")
                   .Attr("summarize", 3)
                   .Shape(StringFormatShape)
                   .Kernel("CPU", StringFormatKernel)
                   .NotDifferentiable()
                   .Doc("The template with each placeholder replaced by the next tensor "
                        "(first and last `summarize` entries per dimension), as a string "
                        "(tf.strings.format)."));

Status PrintV2Kernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  if (input.rank() != 0) {
    return errors::InvalidArgument("Input is expected to be scalar, but got ",
                                   input.shape().ToString());
  }
  return WriteToStream(ctx.attrs().GetOr<std::string>("output_stream", "stderr"),
                       *input.data<std::string>() + ctx.attrs().GetOr<std::string>("end", "\n"));
}

FS_REGISTER_OP(OpBuilder("PrintV2")
                   .Input("input", "string")
                   .Attr("output_stream", "stderr")
                   .Attr("end", "\n")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", PrintV2Kernel)
                   .NotDifferentiable()
                   .Doc("Writes a string scalar and `end` to output_stream (stderr, stdout, "
                        "log(info|warning|error) or file://path)."));

}  // namespace
}  // namespace flowstone
