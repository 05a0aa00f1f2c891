// String tensors (element lifetime, copies) and the tf.data hook that eager iteration is meant to
// call: IteratorResource::GetNext over a dataset made by the graph's dataset ops.
#include <gtest/gtest.h>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"
#include "flowstone/tensor.h"
#include "ops/data/dataset.h"
#include "ops/data/iterator_resource.h"

namespace flowstone {
namespace {

TEST(StringTensorTest, ElementsAreConstructedCopiedAndSharedLikeValues) {
  Tensor t = Tensor::Host(DType::kString, TensorShape{3});
  EXPECT_EQ(t.data<std::string>()[1], "");  // constructed empty
  t.data<std::string>()[0] = "short";
  t.data<std::string>()[1] = std::string(100, 'x');  // past the small-string buffer
  t.data<std::string>()[2] = std::string("nul\0byte", 8);
  Tensor copy = t.Copy();
  t.data<std::string>()[0] = "changed";
  EXPECT_EQ(copy.data<std::string>()[0], "short");
  EXPECT_EQ(copy.data<std::string>()[1], std::string(100, 'x'));
  EXPECT_EQ(copy.data<std::string>()[2].size(), 8u);
  Tensor view = t.Reshaped(TensorShape{3, 1});  // shares the buffer
  EXPECT_EQ(view.data<std::string>()[0], "changed");
  Tensor target = Tensor::Host(DType::kString, TensorShape{2});
  CopyElements(DType::kString, t.raw_data(), target.raw_data(), 2);
  EXPECT_EQ(target.data<std::string>()[1], std::string(100, 'x'));
  EXPECT_EQ(t.SummarizeValue(-1), "changed " + std::string(100, 'x') + " nul\\000byte");
}

TEST(DatasetTest, IteratorResourceGetNextIsTheOneNextElementEntryPoint) {
  GraphBuilder b;
  AttrMap spec;
  spec.Set("output_types", std::vector<DType>{DType::kInt64});
  spec.Set("output_shapes", std::vector<PartialShape>{PartialShape(Dims{})});
  Endpoint range = b.Op("RangeDataset",
                        {b.Const(Tensor::Scalar<int64_t>(10)), b.Const(Tensor::Scalar<int64_t>(20)),
                         b.Const(Tensor::Scalar<int64_t>(4))},
                        spec);
  Endpoint take = b.Op("TakeDataset", {range, b.Const(Tensor::Scalar<int64_t>(2))}, spec);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(b.graph(), {}, &session).ok());
  std::vector<Tensor> out;
  Status s = session->Run({}, {take}, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto* dataset = out[0].data<Variant>()[0].get<data::DatasetVariant>();
  ASSERT_NE(dataset, nullptr);

  // No user functions in this pipeline, so a context without a session's runtime will do.
  data::IteratorResource iterator(dataset->dataset());
  KernelContext ctx(KernelContext::Params{});
  data::Element element;
  ASSERT_TRUE(iterator.GetNext(ctx, &element).ok());
  EXPECT_EQ(element[0].data<int64_t>()[0], 10);
  ASSERT_TRUE(iterator.GetNext(ctx, &element).ok());
  EXPECT_EQ(element[0].data<int64_t>()[0], 14);
  Status end = iterator.GetNext(ctx, &element);
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_EQ(end.message(), "End of sequence");
}

// The values of a dataset of int64 scalars, read through its own iterator.
std::vector<int64_t> Int64Values(const data::DatasetBase& dataset) {
  std::unique_ptr<data::IteratorBase> it = dataset.MakeIterator();
  KernelContext ctx(KernelContext::Params{});
  std::vector<int64_t> values;
  while (true) {
    data::Element element;
    bool end = false;
    EXPECT_TRUE(it->GetNext(ctx, &element, &end).ok());
    if (end) return values;
    values.push_back(element[0].data<int64_t>()[0]);
  }
}

TEST(DatasetTest, WindowElementsAreDatasetsOfTheirValues) {
  GraphBuilder b;
  AttrMap spec;
  spec.Set("output_types", std::vector<DType>{DType::kInt64});
  spec.Set("output_shapes", std::vector<PartialShape>{PartialShape(Dims{})});
  Endpoint range = b.Op("RangeDataset",
                        {b.Const(Tensor::Scalar<int64_t>(0)), b.Const(Tensor::Scalar<int64_t>(7)),
                         b.Const(Tensor::Scalar<int64_t>(1))},
                        spec);
  AttrMap window_spec;
  window_spec.Set("output_types", std::vector<DType>{DType::kVariant});
  window_spec.Set("output_shapes", std::vector<PartialShape>{PartialShape(Dims{})});
  // size 3, shift 2, stride 2, keeping the short windows at the end.
  Endpoint window =
      b.Op("WindowDataset",
           {range, b.Const(Tensor::Scalar<int64_t>(3)), b.Const(Tensor::Scalar<int64_t>(2)),
            b.Const(Tensor::Scalar<int64_t>(2)), b.Const(Tensor::Scalar<bool>(false))},
           window_spec);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(b.graph(), {}, &session).ok());
  std::vector<Tensor> out;
  Status s = session->Run({}, {window}, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto* windows = out[0].data<Variant>()[0].get<data::DatasetVariant>();
  ASSERT_NE(windows, nullptr);

  std::vector<std::vector<int64_t>> got;
  std::unique_ptr<data::IteratorBase> it = windows->dataset()->MakeIterator();
  KernelContext ctx(KernelContext::Params{});
  while (true) {
    data::Element element;
    bool end = false;
    ASSERT_TRUE(it->GetNext(ctx, &element, &end).ok());
    if (end) break;
    const auto* inner = element[0].data<Variant>()[0].get<data::DatasetVariant>();
    ASSERT_NE(inner, nullptr);
    got.push_back(Int64Values(*inner->dataset()));
  }
  const std::vector<std::vector<int64_t>> expected = {{0, 2, 4}, {2, 4, 6}, {4, 6}, {6}};
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace flowstone
