// CacheDataset with filename "": the first iterator to reach the end of its input publishes the
// elements it saw, and later iterators of the same dataset (the epochs of a repeat() after it)
// read them from memory instead of running the input again (Dataset.cache()). An iterator that
// stops early publishes nothing, as in TensorFlow.
#include <mutex>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

class CacheDataset final : public DatasetBase {
 public:
  CacheDataset(const Node& node, DatasetPtr input)
      : DatasetBase("CacheDataset", node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_ != nullptr) return std::make_unique<CachedIterator>(cache_);
    return std::make_unique<FillingIterator>(std::static_pointer_cast<const CacheDataset>(self()));
  }
  int64_t Cardinality() const override { return input_->Cardinality(); }

 private:
  using Cache = std::shared_ptr<const std::vector<Element>>;

  class CachedIterator final : public IteratorBase {
   public:
    explicit CachedIterator(Cache cache) : cache_(std::move(cache)) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      *end = next_ >= cache_->size();
      if (!*end) *out = (*cache_)[next_++];
      return Status::OK();
    }

   private:
    Cache cache_;
    size_t next_ = 0;
  };

  class FillingIterator final : public IteratorBase {
   public:
    explicit FillingIterator(std::shared_ptr<const CacheDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
      if (!*end) {
        seen_.push_back(*out);
      } else if (!published_) {
        published_ = true;
        dataset_->Publish(std::make_shared<const std::vector<Element>>(std::move(seen_)));
      }
      return Status::OK();
    }

   private:
    std::shared_ptr<const CacheDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    std::vector<Element> seen_;
    bool published_ = false;
  };

  void Publish(Cache cache) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_ == nullptr) cache_ = std::move(cache);
  }

  DatasetPtr input_;
  mutable std::mutex mu_;
  mutable Cache cache_;
};

Status CacheKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  const Tensor& filename = ctx.input(1);
  if (filename.num_elements() != 1 || !filename.data<std::string>()->empty()) {
    return errors::Unimplemented(
        "Dataset.cache(filename) is not in Flowstone yet: only the "
        "in-memory cache (filename \"\") is");
  }
  return SetOutputDataset(ctx, std::make_shared<CacheDataset>(ctx.node(), input));
}

FS_REGISTER_OP(OpBuilder("CacheDataset")
                   .Input("input_dataset", "variant")
                   .Input("filename", "string")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", CacheKernel)
                   .NotDifferentiable()
                   .Doc("The input's elements, kept in memory after a first complete pass "
                        "(Dataset.cache)."));

}  // namespace
}  // namespace flowstone::data
