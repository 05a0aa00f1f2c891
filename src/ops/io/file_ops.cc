// Whole-file ops: ReadFile and WriteFile (tf.io.read_file / write_file) and MatchingFiles (the
// file names a glob pattern matches, sorted; Dataset.list_files).
#include <glob.h>

#include <algorithm>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "io/record_io.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

Status ReadFileKernel(KernelContext& ctx) {
  std::string path;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(0), "filename", &path));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return io::ReadFileToString(path, out->data<std::string>());
}

FS_REGISTER_OP(OpBuilder("ReadFile")
                   .Input("filename", "string")
                   .Output("contents", "string")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ReadFileKernel)
                   .NotDifferentiable()
                   .Doc("The bytes of a file, as a scalar string."));

Status WriteFileKernel(KernelContext& ctx) {
  std::string path, contents;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(0), "filename", &path));
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "contents", &contents));
  return io::WriteStringToFile(path, contents);
}

FS_REGISTER_OP(OpBuilder("WriteFile")
                   .Input("filename", "string")
                   .Input("contents", "string")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", WriteFileKernel)
                   .NotDifferentiable()
                   .Doc("Writes `contents` to a file, replacing it."));

Status MatchingFilesKernel(KernelContext& ctx) {
  const Tensor& patterns = ctx.input(0);
  if (patterns.rank() > 1) {
    return errors::InvalidArgument(
        "MatchingFiles: pattern must be a scalar or a vector, got "
        "shape ",
        patterns.shape().ToString());
  }
  std::vector<std::string> files;
  for (int64_t i = 0; i < patterns.num_elements(); ++i) {
    glob_t found{};
    const int rc = glob(patterns.data<std::string>()[i].c_str(), 0, nullptr, &found);
    if (rc == 0) files.insert(files.end(), found.gl_pathv, found.gl_pathv + found.gl_pathc);
    globfree(&found);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      return errors::Unknown("MatchingFiles: could not read the directories of ",
                             patterns.data<std::string>()[i]);
    }
  }
  std::sort(files.begin(), files.end());
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{static_cast<int64_t>(files.size())}, &out));
  std::move(files.begin(), files.end(), out->data<std::string>());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MatchingFiles")
                   .Input("pattern", "string")
                   .Output("filenames", "string")
                   .Stateful()
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape{-1});
                     return Status::OK();
                   })
                   .Kernel("CPU", MatchingFilesKernel)
                   .NotDifferentiable()
                   .Doc("The sorted names of the files that glob patterns match."));

}  // namespace
}  // namespace flowstone
