// Datasets whose output depends on the elements seen so far: ScanDataset (a running state that a
// user function updates per element, Dataset.scan), TakeWhileDataset (the elements until a
// predicate is first false), UniqueDataset (each distinct element once, in first-seen order) and
// AssertCardinalityDataset (the input, checked to have a given number of elements).
#include <unordered_set>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "user_function.h"

namespace flowstone::data {
namespace {

// --- ScanDataset ----------------------------------------------------------------------------

class ScanDataset final : public DatasetBase {
 public:
  ScanDataset(const Node& node, DatasetPtr input, std::unique_ptr<UserFunction> fn,
              Element initial_state, bool preserve_cardinality, std::vector<DType> types,
              std::vector<PartialShape> shapes)
      : DatasetBase("ScanDataset", node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        initial_state_(std::move(initial_state)),
        preserve_cardinality_(preserve_cardinality) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const ScanDataset>(self()));
  }
  int64_t Cardinality() const override {
    return preserve_cardinality_ ? input_->Cardinality() : kUnknownCardinality;
  }

 private:
  // Calls f(state..., element..., captured...) -> (new state..., output...) per element.
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const ScanDataset> dataset)
        : dataset_(std::move(dataset)),
          input_(dataset_->input_->MakeIterator()),
          state_(dataset_->initial_state_) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      Element element;
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, end));
      if (*end) return Status::OK();
      Element args = state_;
      args.insert(args.end(), element.begin(), element.end());
      Element result;
      Status s = dataset_->fn_->Call(ctx, args, &result);
      if (s.code() == Code::kOutOfRange && dataset_->preserve_cardinality_) {
        s = errors::InvalidArgument("Function invocation produced OutOfRangeError: ", s.message());
      }
      if (s.code() == Code::kOutOfRange) {  // the function ended the dataset
        *end = true;
        return Status::OK();
      }
      FS_RETURN_IF_ERROR(dataset_->Annotate(s));
      FS_RETURN_IF_ERROR(dataset_->Annotate(SplitResult(std::move(result), out)));
      return dataset_->Annotate(CheckElement(*dataset_, *out));
    }

   private:
    // The first components of `result` become the state (of the initial state's dtypes); the
    // rest are the output element.
    Status SplitResult(Element result, Element* out) {
      const size_t n = state_.size();
      if (result.size() < n) {
        return errors::InvalidArgument("The scan function returned ", result.size(),
                                       " components, fewer than the ", n,
                                       " of the state it must return first");
      }
      for (size_t i = 0; i < n; ++i) {
        if (result[i].dtype() != state_[i].dtype()) {
          return errors::InvalidArgument("The scan function returned ",
                                         DTypeName(result[i].dtype()), " for state component ", i,
                                         ", which is ", DTypeName(state_[i].dtype()),
                                         "; return a new state of the initial state's dtypes");
        }
      }
      state_.assign(std::make_move_iterator(result.begin()),
                    std::make_move_iterator(result.begin() + n));
      out->assign(std::make_move_iterator(result.begin() + n),
                  std::make_move_iterator(result.end()));
      return Status::OK();
    }

    std::shared_ptr<const ScanDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    Element state_;
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> fn_;
  Element initial_state_;
  bool preserve_cardinality_;
};

Status ScanKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  std::vector<DType> state_types;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tstate", &state_types));
  const int num_state = static_cast<int>(state_types.size());
  Element initial_state;
  for (int i = 0; i < num_state; ++i) initial_state.push_back(ctx.input(1 + i));
  // Captured tensors follow the initial state.
  std::string name;
  FS_RETURN_IF_ERROR(FunctionAttr(ctx.node(), "f", &name));
  std::vector<Tensor> captured;
  for (int i = 1 + num_state; i < ctx.num_inputs(); ++i) captured.push_back(ctx.input(i));
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  return SetOutputDataset(
      ctx, std::make_shared<ScanDataset>(
               ctx.node(), input, std::make_unique<UserFunction>(name, std::move(captured)),
               std::move(initial_state), ctx.attrs().GetOr<bool>("preserve_cardinality", false),
               std::move(types), std::move(shapes)));
}

FS_REGISTER_OP(OpBuilder("ScanDataset")
                   .Input("input_dataset", "variant")
                   .InputTypeList("initial_state", "Tstate")
                   .InputTypeList("other_arguments", "Targuments")
                   .Output("handle", "variant")
                   .RequiredAttr("f", AttrType::kFunc)
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("preserve_cardinality", false)
                   .Attr("use_default_device", true)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ScanKernel)
                   .NotDifferentiable()
                   .Doc("The outputs of f(state, element) -> (new_state, output) over the input, "
                        "starting from initial_state (Dataset.scan)."));

// --- TakeWhileDataset -----------------------------------------------------------------------

class TakeWhileDataset final : public DatasetBase {
 public:
  TakeWhileDataset(const Node& node, DatasetPtr input, std::unique_ptr<UserFunction> predicate)
      : DatasetBase("TakeWhileDataset", node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)),
        predicate_(std::move(predicate)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const TakeWhileDataset>(self()));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const TakeWhileDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      if (!done_) FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, &done_));
      if (!done_) {
        Element keep;
        FS_RETURN_IF_ERROR(dataset_->Annotate(dataset_->predicate_->Call(ctx, *out, &keep)));
        if (keep.size() != 1 || keep[0].dtype() != DType::kBool || keep[0].rank() != 0) {
          return dataset_->Annotate(errors::InvalidArgument(
              "`predicate` of take_while must return a scalar bool, got ",
              keep.empty() ? std::string("nothing") : keep[0].DebugString()));
        }
        done_ = !*keep[0].data<bool>();
      }
      *end = done_;
      return Status::OK();
    }

   private:
    std::shared_ptr<const TakeWhileDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    bool done_ = false;  // the input ended or the predicate was false: ended for good
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> predicate_;
};

Status TakeWhileKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  std::unique_ptr<UserFunction> predicate;
  FS_RETURN_IF_ERROR(ReadUserFunction(ctx, "predicate", ctx.num_inputs(), &predicate));
  return SetOutputDataset(
      ctx, std::make_shared<TakeWhileDataset>(ctx.node(), input, std::move(predicate)));
}

FS_REGISTER_OP(FunctionDatasetOp("TakeWhileDataset", "predicate", {})
                   .Kernel("CPU", TakeWhileKernel)
                   .Doc("The elements of the input until `predicate` first returns false "
                        "(Dataset.take_while)."));

// --- UniqueDataset --------------------------------------------------------------------------

class UniqueDataset final : public DatasetBase {
 public:
  UniqueDataset(const Node& node, DatasetPtr input)
      : DatasetBase("UniqueDataset", node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const UniqueDataset>(self()));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const UniqueDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
        if (*end || seen_.insert(Key((*out)[0])).second) return Status::OK();
      }
    }

   private:
    // The shape and values of `t` as one string: equal keys, equal tensors.
    static std::string Key(const Tensor& t) {
      std::string key = t.shape().ToString();
      if (t.dtype() == DType::kString) {
        for (int64_t i = 0; i < t.num_elements(); ++i) {
          const std::string& s = t.data<std::string>()[i];
          key += std::to_string(s.size()) + ":" + s;
        }
      } else {
        key.append(static_cast<const char*>(t.raw_data()),
                   static_cast<size_t>(t.num_elements()) * DTypeSize(t.dtype()));
      }
      return key;
    }

    std::shared_ptr<const UniqueDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    std::unordered_set<std::string> seen_;
  };

  DatasetPtr input_;
};

Status UniqueKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  const std::vector<DType>& types = input->output_types();
  if (types.size() != 1) {
    return errors::InvalidArgument("UniqueDataset only supports inputs with a single component, ",
                                   "got ", types.size(), " components.");
  }
  if (types[0] != DType::kInt32 && types[0] != DType::kInt64 && types[0] != DType::kString) {
    return errors::InvalidArgument(
        "UniqueDataset only supports inputs with a single `tf.int32`, `tf.int64`, or "
        "`tf.string` component, got ",
        DTypeName(types[0]), ".");
  }
  return SetOutputDataset(ctx, std::make_shared<UniqueDataset>(ctx.node(), input));
}

FS_REGISTER_OP(OpBuilder("UniqueDataset")
                   .Input("input_dataset", "variant")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", UniqueKernel)
                   .NotDifferentiable()
                   .Doc("Each distinct element of the input once, in the order first seen "
                        "(Dataset.unique; one int32, int64 or string component)."));

// --- AssertCardinalityDataset ---------------------------------------------------------------

class AssertCardinalityDataset final : public DatasetBase {
 public:
  AssertCardinalityDataset(const Node& node, DatasetPtr input, int64_t cardinality)
      : DatasetBase("AssertCardinalityDataset", node.name(), input->output_types(),
                    input->output_shapes()),
        input_(std::move(input)),
        cardinality_(cardinality) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(
        std::static_pointer_cast<const AssertCardinalityDataset>(self()));
  }
  int64_t Cardinality() const override { return cardinality_; }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const AssertCardinalityDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
      const int64_t expected = dataset_->cardinality_;
      if (!*end) ++seen_;
      if (!*end && expected != kInfiniteCardinality && seen_ > expected) {
        return dataset_->Annotate(
            errors::FailedPrecondition("Input dataset was expected to contain ", Elements(expected),
                                       " but contained at least ", Elements(seen_), "."));
      }
      if (*end && seen_ != expected) {
        return dataset_->Annotate(
            errors::FailedPrecondition("Input dataset was expected to contain ", Elements(expected),
                                       " but contained only ", Elements(seen_), "."));
      }
      return Status::OK();
    }

   private:
    static std::string Elements(int64_t n) {
      if (n == kInfiniteCardinality) return "an infinite number of elements";
      return StrCat(n, " element", n == 1 ? "" : "s");
    }

    std::shared_ptr<const AssertCardinalityDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    int64_t seen_ = 0;
  };

  DatasetPtr input_;
  int64_t cardinality_;
};

Status AssertCardinalityKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t cardinality = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "cardinality", &cardinality));
  return SetOutputDataset(
      ctx, std::make_shared<AssertCardinalityDataset>(ctx.node(), input, cardinality));
}

FS_REGISTER_OP(OpBuilder("AssertCardinalityDataset")
                   .Input("input_dataset", "variant")
                   .Input("cardinality", "int64")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", AssertCardinalityKernel)
                   .NotDifferentiable()
                   .Doc("The input, failing with FailedPrecondition once it has more or fewer "
                        "than `cardinality` elements (tf.data.experimental.assert_cardinality)."));

}  // namespace
}  // namespace flowstone::data
