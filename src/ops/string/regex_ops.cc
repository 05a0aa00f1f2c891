// Regular expressions over strings with RE2 (Debian's libre2-dev): RegexReplace and
// RegexFullMatch, whose pattern is an input tensor, and their Static variants, whose pattern is
// an attr compiled once per kernel.
#include <re2/re2.h>

#include <memory>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

Status Compile(const std::string& pattern, std::unique_ptr<RE2>* out) {
  auto re = std::make_unique<RE2>(pattern, RE2::Quiet);
  if (!re->ok()) {
    return errors::InvalidArgument("Invalid pattern: ", pattern, ", error: ", re->error());
  }
  *out = std::move(re);
  return Status::OK();
}

Status Replace(KernelContext& ctx, const RE2& re, const std::string& rewrite, bool global) {
  std::string check;
  if (!re.CheckRewriteString(rewrite, &check)) {
    return errors::InvalidArgument("Invalid rewrite pattern: ", rewrite, ", error: ", check);
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    std::string s = in.data<std::string>()[i];
    if (global) {
      RE2::GlobalReplace(&s, re, rewrite);
    } else {
      RE2::Replace(&s, re, rewrite);
    }
    out->data<std::string>()[i] = std::move(s);
  }
  return Status::OK();
}

Status FullMatch(KernelContext& ctx, const RE2& re) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    out->data<bool>()[i] = RE2::FullMatch(in.data<std::string>()[i], re);
  }
  return Status::OK();
}

Status RegexReplaceKernel(KernelContext& ctx) {
  std::string pattern, rewrite;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "Pattern", &pattern));
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(2), "Rewrite", &rewrite));
  std::unique_ptr<RE2> re;
  FS_RETURN_IF_ERROR(Compile(pattern, &re));
  return Replace(ctx, *re, rewrite, ctx.attrs().GetOr<bool>("replace_global", true));
}

FS_REGISTER_OP(OpBuilder("RegexReplace")
                   .Input("input", "string")
                   .Input("pattern", "string")
                   .Input("rewrite", "string")
                   .Output("output", "string")
                   .Attr("replace_global", true)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", RegexReplaceKernel)
                   .NotDifferentiable()
                   .Doc("Matches of the RE2 pattern replaced by rewrite (\\1 for groups)."));

Status RegexFullMatchKernel(KernelContext& ctx) {
  std::string pattern;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "Pattern", &pattern));
  std::unique_ptr<RE2> re;
  FS_RETURN_IF_ERROR(Compile(pattern, &re));
  return FullMatch(ctx, *re);
}

FS_REGISTER_OP(OpBuilder("RegexFullMatch")
                   .Input("input", "string")
                   .Input("pattern", "string")
                   .Output("output", "bool")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", RegexFullMatchKernel)
                   .NotDifferentiable()
                   .Doc("Whether each whole string matches the RE2 pattern."));

// The Static variants compile their pattern attr once, when the kernel is made.
class StaticRegexReplaceKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override {
    FS_RETURN_IF_ERROR(Compile(node().attrs().GetOr<std::string>("pattern", ""), &re_));
    rewrite_ = node().attrs().GetOr<std::string>("rewrite", "");
    global_ = node().attrs().GetOr<bool>("replace_global", true);
    return Status::OK();
  }
  Status Compute(KernelContext& ctx) override { return Replace(ctx, *re_, rewrite_, global_); }

 private:
  std::unique_ptr<RE2> re_;
  std::string rewrite_;
  bool global_ = true;
};

FS_REGISTER_OP(OpBuilder("StaticRegexReplace")
                   .Input("input", "string")
                   .Output("output", "string")
                   .RequiredAttr("pattern", AttrType::kString)
                   .RequiredAttr("rewrite", AttrType::kString)
                   .Attr("replace_global", true)
                   .Shape(shape_fns::Unchanged)
                   .KernelClass<StaticRegexReplaceKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("RegexReplace with the pattern and rewrite as attrs."));

class StaticRegexFullMatchKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return Compile(node().attrs().GetOr<std::string>("pattern", ""), &re_); }
  Status Compute(KernelContext& ctx) override { return FullMatch(ctx, *re_); }

 private:
  std::unique_ptr<RE2> re_;
};

FS_REGISTER_OP(OpBuilder("StaticRegexFullMatch")
                   .Input("input", "string")
                   .Output("output", "bool")
                   .RequiredAttr("pattern", AttrType::kString)
                   .Shape(shape_fns::Unchanged)
                   .KernelClass<StaticRegexFullMatchKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("RegexFullMatch with the pattern as an attr."));

}  // namespace
}  // namespace flowstone
