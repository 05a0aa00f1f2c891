// PrefetchDataset: a background thread fills a buffer of up to buffer_size elements of the input
// while the consumer works on earlier ones, so the input pipeline overlaps with the training step.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

// tf.data.experimental.AUTOTUNE's buffer: TF tunes it while running; this is a fixed size that
// hides the latency of one slow element at a time (see docs/COMPAT.md).
constexpr int64_t kAutotuneBufferSize = 4;

class PrefetchDataset final : public DatasetBase {
 public:
  PrefetchDataset(const Node& node, DatasetPtr input, int64_t buffer_size)
      : DatasetBase("PrefetchDataset", node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)),
        buffer_size_(buffer_size) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    if (buffer_size_ == 0) return input_->MakeIterator();  // no buffer: no thread
    return std::make_unique<Iterator>(std::static_pointer_cast<const PrefetchDataset>(self()));
  }
  int64_t Cardinality() const override { return input_->Cardinality(); }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const PrefetchDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    ~Iterator() override {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
      }
      // The thread may be waiting inside its input (a parallel map's call): that wait ends too.
      cancellation_.Cancel(errors::Cancelled("The iterator of PrefetchDataset '", dataset_->node(),
                                             "' was destroyed"));
      changed_.notify_all();
      if (thread_.joinable()) thread_.join();
    }

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      std::unique_lock<std::mutex> lock(mu_);
      // The thread starts with the first request: it runs user functions with the session
      // resources of that request's context.
      if (!thread_.joinable()) {
        KernelContext::Params params = BackgroundCallParams(ctx);
        params.cancellation = &cancellation_;
        thread_ = std::thread([this, params] { Fill(params); });
      }
      FS_RETURN_IF_ERROR(WaitUnlessCancelled(ctx, changed_, lock,
                                             [&] { return !buffer_.empty() || input_done_; }));
      if (buffer_.empty()) {  // the input ended, or failed: report that once, then end
        *end = true;
        Status s = std::move(status_);
        status_ = Status::OK();
        return s;
      }
      *out = std::move(buffer_.front());
      buffer_.pop_front();
      *end = false;
      changed_.notify_all();
      return Status::OK();
    }

   private:
    void Fill(KernelContext::Params params) {
      KernelContext ctx(params);
      const int64_t capacity = dataset_->buffer_size_;
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          changed_.wait(
              lock, [&] { return stopping_ || static_cast<int64_t>(buffer_.size()) < capacity; });
          if (stopping_) return;
        }
        Element element;
        bool end = false;
        Status s = input_->GetNext(ctx, &element, &end);
        std::lock_guard<std::mutex> lock(mu_);
        if (!s.ok() || end) {
          status_ = s;
          input_done_ = true;
          changed_.notify_all();
          return;
        }
        buffer_.push_back(std::move(element));
        changed_.notify_all();
      }
    }

    std::shared_ptr<const PrefetchDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;  // used by the thread only
    std::mutex mu_;
    std::condition_variable changed_;
    std::deque<Element> buffer_;
    bool input_done_ = false;
    bool stopping_ = false;
    Status status_;
    CancellationToken cancellation_;  // the thread's calls stop with the iterator
    std::thread thread_;
  };

  DatasetPtr input_;
  int64_t buffer_size_;
};

Status PrefetchKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t buffer_size = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "buffer_size", &buffer_size));
  if (buffer_size == -1) buffer_size = kAutotuneBufferSize;
  if (buffer_size < 0) {
    return errors::InvalidArgument("buffer_size must be >= 0 or AUTOTUNE (-1), got ", buffer_size);
  }
  return SetOutputDataset(ctx, std::make_shared<PrefetchDataset>(ctx.node(), input, buffer_size));
}

FS_REGISTER_OP(OpBuilder("PrefetchDataset")
                   .Input("input_dataset", "variant")
                   .Input("buffer_size", "int64")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("slack_period", 0)
                   .Attr("legacy_autotune", true)
                   .Attr("buffer_size_min", 0)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", PrefetchKernel)
                   .NotDifferentiable()
                   .Doc("The input's elements, produced ahead by a background thread into a "
                        "buffer of buffer_size (AUTOTUNE: -1)."));

}  // namespace
}  // namespace flowstone::data
