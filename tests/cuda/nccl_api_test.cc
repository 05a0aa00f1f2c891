// The NCCL loader without NCCL: what a machine with a GPU but a missing or wrong libnccl.so.2
// reports, and the dtype mapping. Collectives on real GPUs are tested on a machine with GPUs
// (tests/gpu/).
#include "nccl_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace flowstone::cuda {
namespace {

TEST(NcclApi, MissingLibraryIsNotFound) {
  std::unique_ptr<NcclApi> api;
  Status s = LoadNcclApi(nullptr, &api);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("libnccl.so.2"), std::string::npos);
  EXPECT_EQ(api, nullptr);
}

TEST(NcclApi, ALibraryWithoutNcclsSymbolsIsNamed) {
  void* self = dlopen(nullptr, RTLD_NOW);  // this test program: no NCCL symbols
  ASSERT_NE(self, nullptr);
  std::unique_ptr<NcclApi> api;
  Status s = LoadNcclApi(self, &api);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("no symbol ncclGetVersion"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("nvidia-nccl-cu13"), std::string::npos);
}

TEST(NcclApi, DataTypesAreNcclsValues) {
  EXPECT_EQ(NcclDataType(DType::kFloat32), 7);  // ncclFloat32
  EXPECT_EQ(NcclDataType(DType::kFloat64), 8);  // ncclFloat64
  EXPECT_EQ(NcclDataType(DType::kFloat16), 6);  // ncclFloat16
  EXPECT_EQ(NcclDataType(DType::kInt32), 2);    // ncclInt32
  EXPECT_EQ(NcclDataType(DType::kInt64), 4);    // ncclInt64
  EXPECT_EQ(NcclDataType(DType::kBool), -1);
}

}  // namespace
}  // namespace flowstone::cuda
