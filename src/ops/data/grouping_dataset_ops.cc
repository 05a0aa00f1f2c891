// Datasets that route elements by a key or a selector: GroupByWindowDataset (windows of the
// elements of one key, each reduced to a dataset by a user function: Dataset.group_by_window and
// bucket_by_sequence_length) and DirectedInterleaveDataset (the element of the input a selector
// dataset names: Dataset.choose_from_datasets and sample_from_datasets).
#include <map>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "user_function.h"

namespace flowstone::data {
namespace {

// The elements of one group, as the dataset reduce_func receives: of the input's element spec,
// named after the GroupByWindowDataset node `node` in messages.
class GroupDataset final : public DatasetBase {
 public:
  GroupDataset(const std::string& node, const DatasetBase& input, std::vector<Element> elements)
      : DatasetBase("GroupByWindowDataset", node, input.output_types(), input.output_shapes()),
        elements_(std::move(elements)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const GroupDataset>(self()));
  }
  int64_t Cardinality() const override { return static_cast<int64_t>(elements_.size()); }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const GroupDataset> dataset) : dataset_(std::move(dataset)) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      *end = next_ == dataset_->elements_.size();
      if (!*end) *out = dataset_->elements_[next_++];
      return Status::OK();
    }

   private:
    std::shared_ptr<const GroupDataset> dataset_;
    size_t next_ = 0;
  };

  std::vector<Element> elements_;
};

// A scalar int64 that function `what` returned, or InvalidArgument saying so.
Status ScalarInt64Result(const Element& result, const char* what, int64_t* out) {
  if (result.size() != 1 || result[0].dtype() != DType::kInt64 || result[0].num_elements() != 1) {
    return errors::InvalidArgument(
        "`", what, "` must return a scalar int64, got ",
        result.empty() ? std::string("nothing") : result[0].DebugString());
  }
  *out = *result[0].data<int64_t>();
  return Status::OK();
}

// The one dataset a user function returned.
Status ReturnedDataset(const Element& result, const char* what, DatasetPtr* out) {
  const DatasetVariant* value = nullptr;
  if (result.size() == 1 && result[0].dtype() == DType::kVariant && result[0].num_elements() == 1) {
    value = result[0].data<Variant>()[0].get<DatasetVariant>();
  }
  if (value == nullptr) {
    return errors::InvalidArgument("`", what, "` must return a single dataset");
  }
  *out = value->dataset();
  return Status::OK();
}

// --- GroupByWindowDataset -------------------------------------------------------------------

class GroupByWindowDataset final : public DatasetBase {
 public:
  GroupByWindowDataset(const Node& node, DatasetPtr input, std::unique_ptr<UserFunction> key_func,
                       std::unique_ptr<UserFunction> reduce_func,
                       std::unique_ptr<UserFunction> window_size_func, std::vector<DType> types,
                       std::vector<PartialShape> shapes)
      : DatasetBase("GroupByWindowDataset", node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)),
        key_func_(std::move(key_func)),
        reduce_func_(std::move(reduce_func)),
        window_size_func_(std::move(window_size_func)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const GroupByWindowDataset>(self()));
  }

 private:
  // Gathers elements by key until a group fills its window, then hands out the elements of the
  // dataset reduce_func(key, group) returns. At the input's end the partial groups are flushed
  // in key order, as TF does.
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const GroupByWindowDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        if (group_ != nullptr) {
          bool group_end = false;
          FS_RETURN_IF_ERROR(group_->GetNext(ctx, out, &group_end));
          if (!group_end) {
            *end = false;
            return dataset_->Annotate(CheckElement(*dataset_, *out));
          }
          group_.reset();
        }
        int64_t full_key = 0;
        bool full = false;
        while (!input_end_ && !full) {
          FS_RETURN_IF_ERROR(AddNext(ctx, &full_key, &full));
        }
        if (full) {
          FS_RETURN_IF_ERROR(Flush(ctx, full_key));
        } else if (!groups_.empty()) {
          FS_RETURN_IF_ERROR(Flush(ctx, groups_.begin()->first));
        } else {
          *end = true;
          return Status::OK();
        }
      }
    }

   private:
    // Reads one input element into its group; *full says that group filled its window.
    Status AddNext(KernelContext& ctx, int64_t* key, bool* full) {
      Element element;
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, &input_end_));
      if (input_end_) return Status::OK();
      Element result;
      FS_RETURN_IF_ERROR(dataset_->Annotate(dataset_->key_func_->Call(ctx, element, &result)));
      FS_RETURN_IF_ERROR(dataset_->Annotate(ScalarInt64Result(result, "key_func", key)));
      auto size = window_sizes_.find(*key);
      if (size == window_sizes_.end()) {
        Element window;
        FS_RETURN_IF_ERROR(
            dataset_->Annotate(dataset_->window_size_func_->Call(ctx, result, &window)));
        int64_t window_size = 0;
        FS_RETURN_IF_ERROR(
            dataset_->Annotate(ScalarInt64Result(window, "window_size_func", &window_size)));
        if (window_size <= 0) {
          return dataset_->Annotate(errors::InvalidArgument(
              "Window size must be greater than zero, but got ", window_size, "."));
        }
        size = window_sizes_.emplace(*key, window_size).first;
      }
      std::vector<Element>& group = groups_[*key];
      group.push_back(std::move(element));
      *full = static_cast<int64_t>(group.size()) == size->second;
      return Status::OK();
    }

    // Runs reduce_func on the group of `key` and starts reading the dataset it returns.
    Status Flush(KernelContext& ctx, int64_t key) {
      auto group = groups_.find(key);
      Tensor key_tensor, window;
      FS_RETURN_IF_ERROR(AllocateHost(DType::kInt64, TensorShape{}, &key_tensor));
      *key_tensor.data<int64_t>() = key;
      FS_RETURN_IF_ERROR(AllocateHost(DType::kVariant, TensorShape{}, &window));
      window.data<Variant>()[0] =
          Variant(std::make_shared<DatasetVariant>(std::make_shared<GroupDataset>(
              dataset_->node(), *dataset_->input_, std::move(group->second))));
      groups_.erase(group);
      Element result;
      FS_RETURN_IF_ERROR(
          dataset_->Annotate(dataset_->reduce_func_->Call(ctx, {key_tensor, window}, &result)));
      DatasetPtr reduced;
      FS_RETURN_IF_ERROR(dataset_->Annotate(ReturnedDataset(result, "reduce_func", &reduced)));
      group_ = reduced->MakeIterator();
      return Status::OK();
    }

    std::shared_ptr<const GroupByWindowDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    bool input_end_ = false;
    std::map<int64_t, std::vector<Element>> groups_;
    std::map<int64_t, int64_t> window_sizes_;
    std::unique_ptr<IteratorBase> group_;  // the reduced dataset being read
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> key_func_, reduce_func_, window_size_func_;
};

Status GroupByWindowKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  // The three functions' captured tensors follow the input, in this order.
  const char* const kFuncs[] = {"key_func", "reduce_func", "window_size_func"};
  const char* const kCounts[] = {"Tkey_func_other_arguments", "Treduce_func_other_arguments",
                                 "Twindow_size_func_other_arguments"};
  std::unique_ptr<UserFunction> funcs[3];
  int next = 1;
  for (int f = 0; f < 3; ++f) {
    std::vector<DType> captured_types;
    FS_RETURN_IF_ERROR(ctx.attrs().Get(kCounts[f], &captured_types));
    std::string name;
    FS_RETURN_IF_ERROR(FunctionAttr(ctx.node(), kFuncs[f], &name));
    std::vector<Tensor> captured;
    for (size_t i = 0; i < captured_types.size(); ++i) captured.push_back(ctx.input(next++));
    funcs[f] = std::make_unique<UserFunction>(std::move(name), std::move(captured));
  }
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  return SetOutputDataset(ctx, std::make_shared<GroupByWindowDataset>(
                                   ctx.node(), input, std::move(funcs[0]), std::move(funcs[1]),
                                   std::move(funcs[2]), std::move(types), std::move(shapes)));
}

FS_REGISTER_OP(OpBuilder("GroupByWindowDataset")
                   .Input("input_dataset", "variant")
                   .InputTypeList("key_func_other_arguments", "Tkey_func_other_arguments")
                   .InputTypeList("reduce_func_other_arguments", "Treduce_func_other_arguments")
                   .InputTypeList("window_size_func_other_arguments",
                                  "Twindow_size_func_other_arguments")
                   .Output("handle", "variant")
                   .RequiredAttr("key_func", AttrType::kFunc)
                   .RequiredAttr("reduce_func", AttrType::kFunc)
                   .RequiredAttr("window_size_func", AttrType::kFunc)
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", GroupByWindowKernel)
                   .NotDifferentiable()
                   .Doc("The elements of the datasets reduce_func(key, window) returns for each "
                        "window of window_size_func(key) elements of one key_func key "
                        "(Dataset.group_by_window)."));

// --- DirectedInterleaveDataset --------------------------------------------------------------

class DirectedInterleaveDataset final : public DatasetBase {
 public:
  DirectedInterleaveDataset(const Node& node, DatasetPtr selector, std::vector<DatasetPtr> inputs,
                            bool stop_on_empty, std::vector<DType> types,
                            std::vector<PartialShape> shapes)
      : DatasetBase("DirectedInterleaveDataset", node.name(), std::move(types), std::move(shapes)),
        selector_(std::move(selector)),
        inputs_(std::move(inputs)),
        stop_on_empty_(stop_on_empty) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(
        std::static_pointer_cast<const DirectedInterleaveDataset>(self()));
  }

  // Endless when an input is (the selector may come back to it forever); unknown otherwise.
  int64_t Cardinality() const override {
    for (const DatasetPtr& input : inputs_) {
      if (input->Cardinality() == kInfiniteCardinality) return kInfiniteCardinality;
    }
    return kUnknownCardinality;
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const DirectedInterleaveDataset> dataset)
        : dataset_(std::move(dataset)), selector_(dataset_->selector_->MakeIterator()) {
      for (const DatasetPtr& input : dataset_->inputs_) inputs_.push_back(input->MakeIterator());
      active_ = inputs_.size();
    }

    // Reads the input each selector element names; an ended input is skipped (or ends it all
    // with stop_on_empty_dataset), and the output ends with the selector or the last input.
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (!done_) {
        Element choice;
        bool selector_end = false;
        FS_RETURN_IF_ERROR(selector_->GetNext(ctx, &choice, &selector_end));
        if (selector_end) break;
        if (choice.size() != 1 || choice[0].dtype() != DType::kInt64 ||
            choice[0].num_elements() != 1) {
          return dataset_->Annotate(errors::InvalidArgument(
              "The selector dataset must produce scalar int64 elements, got ",
              choice.empty() ? std::string("nothing") : choice[0].DebugString()));
        }
        const int64_t index = *choice[0].data<int64_t>();
        if (index < 0 || index >= static_cast<int64_t>(inputs_.size())) {
          return dataset_->Annotate(errors::InvalidArgument(
              "Selector index out of range: ", index, " >= ", inputs_.size(),
              " (the selector must name one of the ", inputs_.size(), " datasets)"));
        }
        std::unique_ptr<IteratorBase>& input = inputs_[index];
        if (input == nullptr) continue;  // an ended input: TF skips the choice
        bool input_end = false;
        FS_RETURN_IF_ERROR(input->GetNext(ctx, out, &input_end));
        if (!input_end) {
          *end = false;
          return dataset_->Annotate(CheckElement(*dataset_, *out));
        }
        input.reset();
        if (dataset_->stop_on_empty_ || --active_ == 0) break;
      }
      done_ = *end = true;
      return Status::OK();
    }

   private:
    std::shared_ptr<const DirectedInterleaveDataset> dataset_;
    std::unique_ptr<IteratorBase> selector_;
    std::vector<std::unique_ptr<IteratorBase>> inputs_;
    size_t active_ = 0;
    bool done_ = false;
  };

  DatasetPtr selector_;
  std::vector<DatasetPtr> inputs_;
  bool stop_on_empty_;
};

Status DirectedInterleaveKernel(KernelContext& ctx) {
  DatasetPtr selector;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &selector));
  std::vector<DatasetPtr> inputs(ctx.num_inputs() - 1);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    FS_RETURN_IF_ERROR(GetInputDataset(ctx, i, &inputs[i - 1]));
  }
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->output_types() != types) {
      return errors::InvalidArgument("DirectedInterleaveDataset (node '", ctx.node().name(),
                                     "'): data input ", i,
                                     " has other component types than output_types; every "
                                     "dataset to choose from must have the same types");
    }
  }
  return SetOutputDataset(ctx, std::make_shared<DirectedInterleaveDataset>(
                                   ctx.node(), selector, std::move(inputs),
                                   ctx.attrs().GetOr<bool>("stop_on_empty_dataset", false),
                                   std::move(types), std::move(shapes)));
}

Status DirectedInterleaveShape(InferenceContext& ctx) {
  if (ctx.num_inputs() < 2) {
    return errors::InvalidArgument(
        "DirectedInterleaveDataset needs a selector and at least one data input dataset");
  }
  return shape_fns::Scalar(ctx);
}

FS_REGISTER_OP(OpBuilder("DirectedInterleaveDataset")
                   .Input("selector_input_dataset", "variant")
                   .InputList("data_input_datasets", "variant", "N")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("stop_on_empty_dataset", false)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(DirectedInterleaveShape)
                   .Kernel("CPU", DirectedInterleaveKernel)
                   .NotDifferentiable()
                   .Doc("The next element of the data input each selector element names "
                        "(Dataset.choose_from_datasets, sample_from_datasets)."));

}  // namespace
}  // namespace flowstone::data
