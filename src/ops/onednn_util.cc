#include "ops/onednn_util.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace flowstone::onednn {

const dnnl::engine& Engine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

bool Enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("FLOWSTONE_ONEDNN");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

// OpenMP keeps the thread limit per thread, so restoring it leaves other users of the thread
// (oneDNN's sgemm in gemm.cc limits it the same way) unaffected.
OneOpenMpThread::OneOpenMpThread() : saved_(omp_get_max_threads()) {
  if (saved_ != 1) omp_set_num_threads(1);
}

OneOpenMpThread::~OneOpenMpThread() {
  if (saved_ != 1) omp_set_num_threads(saved_);
}

BatchChunks::BatchChunks(int64_t batch, int64_t work_per_image, int64_t work_per_chunk) {
  const int64_t wanted = std::max<int64_t>(work_per_image, 1) * batch / work_per_chunk;
  count = std::clamp<int64_t>(wanted, 1, std::max<int64_t>(batch, 1));
  size = (batch + count - 1) / count;
  count = size > 0 ? (batch + size - 1) / size : 1;
}

bool IsGeneric(const char* impl_info) {
  return std::strstr(impl_info, "gemm") != nullptr || std::strstr(impl_info, "ref") != nullptr;
}

dnnl::primitive_attr DefaultAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Status Guard(const char* what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return errors::Internal("oneDNN failed to ", what, ": ", e.what());
  }
  return Status::OK();
}

Primitive::Primitive(dnnl::primitive prim, const dnnl::primitive_desc_base& pd,
                     const std::vector<ArgSpec>& args)
    : prim_(std::move(prim)),
      scratchpad_(pd.scratchpad_desc()),
      implementation_(pd.impl_info_str()) {
  for (const ArgSpec& spec : args) {
    Arg arg;
    arg.id = spec.id;
    arg.output = spec.output;
    arg.user = spec.user;
    arg.internal = pd.query_md(dnnl::query::exec_arg_md, spec.id);
    if (arg.internal != arg.user) {
      arg.needs_convert = true;
      const dnnl::engine& engine = Engine();
      arg.convert =
          spec.output
              ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, arg.internal, engine, arg.user))
              : dnnl::reorder(
                    dnnl::reorder::primitive_desc(engine, arg.user, engine, arg.internal));
    }
    args_.push_back(std::move(arg));
  }
}

bool Primitive::SameLayoutsAs(const Primitive& other) const {
  if (args_.size() != other.args_.size()) return false;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].internal != other.args_[i].internal) return false;
  }
  return true;
}

size_t PickDirectImplementation(const std::vector<Primitive>& candidates) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!IsGeneric(candidates[i].implementation().c_str())) return i;
  }
  return 0;
}

namespace {

// Scratch memory for oneDNN from the kernel's allocator (64-byte aligned, as oneDNN prefers).
Status AllocateBytes(KernelContext& ctx, size_t bytes, Tensor* out) {
  return ctx.AllocateTemp(DType::kUInt8, TensorShape{static_cast<int64_t>(bytes)}, out);
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

}  // namespace

Status Primitive::Convert(int i, const void* from, void* to) const {
  const Arg& arg = args_[i];
  OneOpenMpThread one_thread;
  return Guard("reorder an argument", [&] {
    const dnnl::engine& engine = Engine();
    const dnnl::memory::desc& from_desc = arg.output ? arg.internal : arg.user;
    const dnnl::memory::desc& to_desc = arg.output ? arg.user : arg.internal;
    dnnl::memory src(from_desc, engine, const_cast<void*>(from));
    dnnl::memory dst(to_desc, engine, to);
    dnnl::stream& stream = ThreadStream();
    arg.convert.execute(stream, src, dst);
    stream.wait();
  });
}

Status Primitive::Execute(KernelContext& ctx, const std::vector<void*>& data,
                          const std::vector<bool>& internal) const {
  auto converts = [&](size_t i) {
    return args_[i].needs_convert && (internal.empty() || !internal[i]);
  };
  // Temporaries are allocated before entering oneDNN so that an allocation failure is a Status.
  std::vector<Tensor> temps(args_.size() + 1);
  for (size_t i = 0; i < args_.size(); ++i) {
    if (converts(i)) {
      FS_RETURN_IF_ERROR(AllocateBytes(ctx, args_[i].internal.get_size(), &temps[i]));
    }
  }
  const size_t scratch_bytes = scratchpad_.get_size();
  if (scratch_bytes > 0) FS_RETURN_IF_ERROR(AllocateBytes(ctx, scratch_bytes, &temps.back()));
  OneOpenMpThread one_thread;
  return Guard("execute a primitive", [&] {
    const dnnl::engine& engine = Engine();
    dnnl::stream& stream = ThreadStream();
    std::unordered_map<int, dnnl::memory> exec_args;
    std::vector<std::pair<dnnl::memory, dnnl::memory>> outputs_to_convert;
    for (size_t i = 0; i < args_.size(); ++i) {
      const Arg& arg = args_[i];
      if (!converts(i)) {
        exec_args.emplace(
            arg.id, dnnl::memory(arg.needs_convert ? arg.internal : arg.user, engine, data[i]));
        continue;
      }
      dnnl::memory user(arg.user, engine, data[i]);
      dnnl::memory internal(arg.internal, engine, temps[i].raw_data());
      if (arg.output) {
        outputs_to_convert.emplace_back(internal, user);
      } else {
        arg.convert.execute(stream, user, internal);
      }
      exec_args.emplace(arg.id, internal);
    }
    if (scratch_bytes > 0) {
      exec_args.emplace(DNNL_ARG_SCRATCHPAD,
                        dnnl::memory(scratchpad_, engine, temps.back().raw_data()));
    }
    prim_.execute(stream, exec_args);
    size_t k = 0;
    for (size_t i = 0; i < args_.size(); ++i) {
      if (converts(i) && args_[i].output) {
        auto& [from, to] = outputs_to_convert[k++];
        args_[i].convert.execute(stream, from, to);
      }
    }
    stream.wait();
  });
}

}  // namespace flowstone::onednn
