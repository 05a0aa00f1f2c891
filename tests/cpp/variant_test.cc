// Variant tensors: element lifetime, sharing on copy, copy on write, and lists in a session.
#include "flowstone/variant.h"

#include <gtest/gtest.h>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"
#include "flowstone/tensor.h"

namespace flowstone {
namespace {

// Counts live instances so that the tests see every object destroyed exactly once.
class Counted final : public VariantValue {
 public:
  explicit Counted(int value) : value(value) { ++live; }
  Counted(const Counted& other) : VariantValue(), value(other.value) { ++live; }
  ~Counted() override { --live; }
  std::string TypeName() const override { return "Counted"; }
  std::string DebugString() const override { return std::to_string(value); }
  std::unique_ptr<VariantValue> Clone() const override { return std::make_unique<Counted>(*this); }

  int value;
  static int live;
};
int Counted::live = 0;

TEST(VariantTest, TensorElementsAreDestroyedWithTheBuffer) {
  {
    Tensor t = Tensor::Host(DType::kVariant, TensorShape{3});
    for (int i = 0; i < 3; ++i) t.data<Variant>()[i] = Variant(std::make_shared<Counted>(i));
    EXPECT_EQ(Counted::live, 3);
    Tensor shared = t;  // shares the buffer
    Tensor copy = t.Copy();
    EXPECT_EQ(Counted::live, 3);  // copies share each element's object
    EXPECT_EQ(copy.data<Variant>()[2].get<Counted>()->value, 2);
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(VariantTest, GetMutableCopiesOnlyWhenShared) {
  Variant a(std::make_shared<Counted>(1));
  Counted* own = a.GetMutable<Counted>();
  EXPECT_EQ(own, a.get<Counted>());  // sole holder: updated in place
  Variant b = a;
  Counted* copy = b.GetMutable<Counted>();
  EXPECT_NE(copy, a.get<Counted>());
  copy->value = 5;
  EXPECT_EQ(a.get<Counted>()->value, 1);
  EXPECT_EQ(Counted::live, 2);
  EXPECT_EQ(Variant().GetMutable<Counted>(), nullptr);
}

TEST(VariantTest, TensorListsKeepValueSemanticsInASession) {
  GraphBuilder b;
  AttrMap list_attrs;
  list_attrs.Set("element_dtype", DType::kFloat32);
  Endpoint shape = b.Const(Tensor::FromVector<int32_t>({2}, {1}));
  Endpoint reserved =
      b.Op("TensorListReserve", {shape, b.Const(Tensor::Scalar<int32_t>(2))}, list_attrs);
  Endpoint item = b.Const(Tensor::FromVector<float>({1.0f, 2.0f}, {2}));
  Endpoint zero = b.Const(Tensor::Scalar<int32_t>(0));
  Endpoint one = b.Const(Tensor::Scalar<int32_t>(1));
  // Two updates of one list value: neither may see the other's.
  Endpoint first = b.Op("TensorListSetItem", {reserved, zero, item}, list_attrs);
  Endpoint second = b.Op("TensorListSetItem", {reserved, one, item}, list_attrs);
  Endpoint stack_first = b.Op("TensorListStack", {first, shape}, list_attrs);
  Endpoint stack_second = b.Op("TensorListStack", {second, shape}, list_attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();

  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(b.graph(), {}, &session).ok());
  std::vector<Tensor> out;
  Status s = session->Run({}, {stack_first, stack_second}, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out[0].shape(), (TensorShape{2, 2}));
  const float* a = out[0].data<float>();
  const float* c = out[1].data<float>();
  EXPECT_EQ(std::vector<float>(a, a + 4), (std::vector<float>{1, 2, 0, 0}));
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{0, 0, 1, 2}));

  // The C++ API may fetch a list (Python may not: python/src/session.cc).
  s = session->Run({}, {first}, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out[0].dtype(), DType::kVariant);
  EXPECT_NE(out[0].data<Variant>()[0].value()->DebugString().find("size=2"), std::string::npos);
  // Out of range: the index and the valid range.
  Endpoint far =
      b.Op("TensorListGetItem", {first, b.Const(Tensor::Scalar<int32_t>(7)), shape}, list_attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  s = session->Run({}, {far}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(
                "Trying to access element 7 in a list with 2 elements; valid indices are 0 to 1"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace flowstone
