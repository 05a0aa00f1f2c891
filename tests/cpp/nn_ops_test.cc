// The neural-network kernels of src/ops/nn/ through the C++ API, with valid and hostile inputs:
// each bad input is a clear InvalidArgument and the session keeps working. Run under `make asan`
// this also checks the kernels' memory accesses (out-of-range argmax indices, empty tensors,
// mismatched shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

std::unique_ptr<Session> NewSession(const GraphBuilder& b) {
  std::unique_ptr<Session> session;
  Status s = Session::Create(b.graph(), {}, &session);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return session;
}

Tensor Filled(const TensorShape& shape, float start = 0.25f) {
  std::vector<float> values(shape.num_elements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + 0.5f * float(i % 7) - float(i % 3);
  return Tensor::FromVector<float>(values, shape);
}

AttrMap Attrs(std::initializer_list<std::pair<const char*, AttrValue>> entries) {
  AttrMap attrs;
  for (const auto& [name, value] : entries) attrs.Set(name, value);
  return attrs;
}

void ExpectInvalid(Session* session, const std::vector<std::pair<Endpoint, Tensor>>& feeds,
                   Endpoint fetch, const std::string& needle) {
  std::vector<Tensor> out;
  Status s = session->Run(feeds, {fetch}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(NnOpsTest, MaxPoolGradWithArgmaxRejectsIndicesOutsideTheInput) {
  GraphBuilder b;
  Endpoint x = b.Const(Filled(TensorShape({1, 4, 4, 2})));
  Endpoint argmax = b.Placeholder(DType::kInt64, PartialShape({1, 2, 2, 2}), "argmax");
  const AttrMap attrs = Attrs({{"ksize", std::vector<int64_t>{1, 2, 2, 1}},
                               {"strides", std::vector<int64_t>{1, 2, 2, 1}},
                               {"padding", std::string("VALID")}});
  Endpoint grad =
      b.Op("MaxPoolGradWithArgmax", {x, b.Const(Filled(TensorShape({1, 2, 2, 2}))), argmax}, attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  for (int64_t bad : {int64_t{-1}, int64_t{32}, int64_t{1} << 40}) {
    std::vector<int64_t> ids(8, 0);
    ids[5] = bad;
    ExpectInvalid(session.get(), {{argmax, Tensor::FromVector<int64_t>(ids, {1, 2, 2, 2})}}, grad,
                  "Invalid argmax index");
  }
  std::vector<Tensor> out;
  std::vector<int64_t> ids = {0, 1, 2, 3, 28, 29, 30, 31};
  ASSERT_TRUE(
      session->Run({{argmax, Tensor::FromVector<int64_t>(ids, {1, 2, 2, 2})}}, {grad}, {}, &out)
          .ok());
  EXPECT_EQ(out[0].shape(), TensorShape({1, 4, 4, 2}));
}

TEST(NnOpsTest, Conv3DAndPool3DCheckShapesAtRunTime) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "x");
  const AttrMap conv_attrs =
      Attrs({{"strides", std::vector<int64_t>{1, 1, 2, 1, 1}}, {"padding", std::string("SAME")}});
  Endpoint y = b.Op("Conv3D", {x, b.Const(Filled(TensorShape({2, 2, 2, 3, 4})))}, conv_attrs);
  const AttrMap pool_attrs = Attrs({{"ksize", std::vector<int64_t>{1, 2, 2, 2, 1}},
                                    {"strides", std::vector<int64_t>{1, 2, 2, 2, 1}},
                                    {"padding", std::string("VALID")}});
  Endpoint p = b.Op("MaxPool3D", {x}, pool_attrs);
  Endpoint sizes = b.Placeholder(DType::kInt32, PartialShape({5}), "sizes");
  Endpoint dx =
      b.Op("AvgPool3DGrad", {sizes, b.Const(Filled(TensorShape({1, 1, 1, 1, 3})))}, pool_attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  ExpectInvalid(session.get(), {{x, Filled(TensorShape({1, 3, 3, 3, 2}))}}, y, "in_depth");
  ExpectInvalid(session.get(), {{x, Filled(TensorShape({3, 3, 3, 3}))}}, y, "5-dimensional");
  ExpectInvalid(session.get(), {{sizes, Tensor::FromVector<int32_t>({1, -3, 2, 2, 3}, {5})}}, dx,
                "non-negative");
  ExpectInvalid(session.get(), {{sizes, Tensor::FromVector<int32_t>({1, 4, 4, 4, 3}, {5})}}, dx,
                "grad must have the shape");

  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{x, Filled(TensorShape({2, 3, 5, 4, 3}))}}, {y, p}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3, 3, 4, 4}));
  EXPECT_EQ(out[1].shape(), TensorShape({2, 1, 2, 2, 3}));
  // Empty batches produce empty outputs without touching memory.
  ASSERT_TRUE(session->Run({{x, Filled(TensorShape({0, 3, 5, 4, 3}))}}, {y, p}, {}, &out).ok());
  EXPECT_EQ(out[0].num_elements(), 0);
}

TEST(NnOpsTest, FusedBatchNormAndLrnRejectMismatchedInputs) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "x");
  Endpoint scale = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "scale");
  Endpoint empty = b.Const(Tensor::FromVector<float>({}, {0}));
  Endpoint y = b.Op("FusedBatchNormV3", {x, scale, scale, empty, empty}, {});
  Endpoint inference =
      b.Op("FusedBatchNormV3", {x, scale, scale, empty, empty}, Attrs({{"is_training", false}}));
  Endpoint lrn = b.Op("LRN", {x}, Attrs({{"depth_radius", int64_t{3}}}));
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  const Tensor image = Filled(TensorShape({2, 3, 3, 4}));
  ExpectInvalid(session.get(), {{x, image}, {scale, Filled(TensorShape({3}))}}, y,
                "scale must have the same number of elements as the channels of x, got 3 and 4");
  ExpectInvalid(session.get(),
                {{x, Filled(TensorShape({3, 4}))}, {scale, Filled(TensorShape({4}))}}, y,
                "4-dimensional");
  ExpectInvalid(session.get(), {{x, image}, {scale, Filled(TensorShape({4}))}}, inference,
                "When is_training=false, mean must have the same number of elements");
  ExpectInvalid(session.get(), {{x, Filled(TensorShape({3, 4}))}}, lrn, "4-dimensional");
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session->Run({{x, image}, {scale, Filled(TensorShape({4}))}}, {y, lrn}, {}, &out).ok());
  // A batch of nothing: the statistics are NaN, and nothing is read.
  ASSERT_TRUE(session
                  ->Run({{x, Filled(TensorShape({0, 3, 3, 4}))}, {scale, Filled(TensorShape({4}))}},
                        {Endpoint{y.node, 1}, lrn}, {}, &out)
                  .ok());
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
}

TEST(NnOpsTest, CandidateSamplersCheckTheirArguments) {
  GraphBuilder b;
  Endpoint classes = b.Placeholder(DType::kInt64, PartialShape::Unknown(), "classes");
  const AttrMap attrs = Attrs({{"num_true", int64_t{2}},
                               {"num_sampled", int64_t{4}},
                               {"unique", true},
                               {"range_max", int64_t{4}},
                               {"seed", int64_t{3}}});
  Endpoint sampled = b.Op("LogUniformCandidateSampler", {classes}, attrs);
  Endpoint hits =
      b.Op("ComputeAccidentalHits", {classes, sampled}, Attrs({{"num_true", int64_t{2}}}));
  AttrMap too_many = attrs;
  too_many.Set("num_sampled", int64_t{5});
  Endpoint impossible = b.Op("UniformCandidateSampler", {classes}, too_many);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  ExpectInvalid(session.get(), {{classes, Tensor::FromVector<int64_t>({1, 2, 3}, {3})}}, sampled,
                "true_classes must be a matrix");
  ExpectInvalid(session.get(), {{classes, Tensor::FromVector<int64_t>({1, 2}, {1, 2})}}, impossible,
                "range_max = 4");
  std::vector<Tensor> out;
  ASSERT_TRUE(session
                  ->Run({{classes, Tensor::FromVector<int64_t>({1, 2, 0, 3}, {2, 2})}},
                        {sampled, hits}, {}, &out)
                  .ok());
  // All four classes are sampled, so every true class is an accidental hit.
  EXPECT_EQ(out[0].num_elements(), 4);
  EXPECT_EQ(out[1].num_elements(), 4);
}

TEST(NnOpsTest, DilationChecksShapesAtRunTime) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "x");
  Endpoint dy = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "dy");
  const AttrMap attrs = Attrs({{"strides", std::vector<int64_t>{1, 1, 1, 1}},
                               {"rates", std::vector<int64_t>{1, 2, 2, 1}},
                               {"padding", std::string("VALID")}});
  Endpoint f = b.Const(Filled(TensorShape({2, 2, 3})));
  Endpoint y = b.Op("Dilation2D", {x, f}, attrs);
  Endpoint dx = b.Op("Dilation2DBackpropInput", {x, f, dy}, attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  ExpectInvalid(session.get(), {{x, Filled(TensorShape({1, 4, 4, 2}))}}, y, "same depth");
  ExpectInvalid(session.get(), {{x, Filled(TensorShape({1, 1, 4, 3}))}}, y, "");
  ExpectInvalid(session.get(),
                {{x, Filled(TensorShape({1, 4, 4, 3}))}, {dy, Filled(TensorShape({1, 3, 2, 3}))}},
                dx, "out_backprop must have the output's shape [1,2,2,3]");
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session
          ->Run({{x, Filled(TensorShape({1, 4, 4, 3}))}, {dy, Filled(TensorShape({1, 2, 2, 3}))}},
                {y, dx}, {}, &out)
          .ok());
  EXPECT_EQ(out[0].shape(), TensorShape({1, 2, 2, 3}));
  EXPECT_EQ(out[1].shape(), TensorShape({1, 4, 4, 3}));
}

}  // namespace
}  // namespace flowstone
