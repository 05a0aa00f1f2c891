// Open MPI behind CollectiveTransport. The control plane uses point-to-point messages polled
// against a deadline, so a rank that died or hangs is named instead of waited for forever; the
// data plane uses MPI's own collectives, which every rank enters right after a negotiation that
// showed all of them alive.
#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include "flowstone/collectives.h"

namespace flowstone {
namespace {

constexpr int kTagRequest = 0x4856;   // a rank's cycle message to rank 0
constexpr int kTagResponse = 0x4857;  // rank 0's answer
// MPI counts are ints: bigger payloads go in chunks of this many elements.
constexpr int64_t kMaxChunk = INT_MAX / 16;

Status MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return errors::Internal("Horovod: ", call, " failed: ", std::string(text, len));
}

#define MPI_CHECK(call)                                            \
  do {                                                             \
    int mpi_code = (call);                                         \
    if (mpi_code != MPI_SUCCESS) return MpiError(#call, mpi_code); \
  } while (0)

// Calls `done` until it returns true or `timeout_s` passes: yielding at first (a negotiation
// answer usually comes within microseconds), then sleeping so that idle ranks leave the CPU to
// the ranks still computing.
template <typename F>
bool PollUntil(F done, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0; !done(); ++spins) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_s) {
      return false;
    }
    if (spins < 200) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

MPI_Datatype MpiType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kFloat16:
      return MPI_UINT16_T;  // summed by the Float16Sum op below
    default:
      return MPI_DATATYPE_NULL;
  }
}

// MPI has no half type: sums float16 elements through float.
void Float16Sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const Half* a = static_cast<const Half*>(in);
  Half* b = static_cast<Half*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Half(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

class MpiTransport final : public CollectiveTransport {
 public:
  Status Start() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided_));
      owns_mpi_ = true;
    } else {
      MPI_Query_thread(&provided_);
    }
    if (provided_ < MPI_THREAD_SERIALIZED) {
      return errors::FailedPrecondition(
          "Horovod needs MPI_THREAD_SERIALIZED or better (MPI is started by one thread and "
          "called from the background thread); this MPI provides level ",
          provided_);
    }
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
    MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_));
    MPI_CHECK(MPI_Comm_rank(local_, &local_rank_));
    MPI_CHECK(MPI_Comm_size(local_, &local_size_));
    MPI_CHECK(MPI_Comm_split(comm_, local_rank_, rank_, &cross_));
    MPI_CHECK(MPI_Comm_rank(cross_, &cross_rank_));
    MPI_CHECK(MPI_Comm_size(cross_, &cross_size_));
    MPI_CHECK(MPI_Op_create(&Float16Sum, /*commute=*/1, &float16_sum_));
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    name_ = std::string(version, len);
    name_ = name_.substr(0, name_.find_first_of(",\n"));
    return Status::OK();
  }

  ~MpiTransport() override {
    // After a rank went missing, MPI_Finalize would wait for it: leave MPI as it is.
    if (!healthy_ || !owns_mpi_) return;
    MPI_Op_free(&float16_sum_);
    MPI_Comm_free(&cross_);
    MPI_Comm_free(&local_);
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  std::string name() const override { return name_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int cross_rank() const override { return cross_rank_; }
  int cross_size() const override { return cross_size_; }
  bool threads_supported() const override { return provided_ == MPI_THREAD_MULTIPLE; }

  Status GatherToRoot(const std::string& mine, std::vector<std::string>* all,
                      double timeout_s) override {
    if (rank_ != 0) {
      outgoing_ = mine;  // outlives the send even if the deadline passes
      MPI_Request request;
      MPI_CHECK(MPI_Isend(outgoing_.data(), static_cast<int>(outgoing_.size()), MPI_BYTE, 0,
                          kTagRequest, comm_, &request));
      if (!PollUntil([&] { return Test(&request); }, timeout_s)) {
        return Missing(0, timeout_s);
      }
      return Status::OK();
    }
    all->assign(size_, std::string());
    (*all)[0] = mine;
    for (int r = 1; r < size_; ++r) {
      MPI_Status status;
      int flag = 0;
      auto arrived = [&] {
        MPI_Iprobe(r, kTagRequest, comm_, &flag, &status);
        return flag != 0;
      };
      if (!PollUntil(arrived, timeout_s)) return Missing(r, timeout_s);
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      (*all)[r].resize(count);
      MPI_CHECK(
          MPI_Recv((*all)[r].data(), count, MPI_BYTE, r, kTagRequest, comm_, MPI_STATUS_IGNORE));
    }
    return Status::OK();
  }

  Status BroadcastFromRoot(std::string* message, double timeout_s) override {
    if (rank_ == 0) {
      outgoing_ = *message;
      std::vector<MPI_Request> requests(size_ - 1);
      for (int r = 1; r < size_; ++r) {
        MPI_CHECK(MPI_Isend(outgoing_.data(), static_cast<int>(outgoing_.size()), MPI_BYTE, r,
                            kTagResponse, comm_, &requests[r - 1]));
      }
      for (int r = 1; r < size_; ++r) {
        if (!PollUntil([&] { return Test(&requests[r - 1]); }, timeout_s))
          return Missing(r, timeout_s);
      }
      return Status::OK();
    }
    MPI_Status status;
    int flag = 0;
    auto arrived = [&] {
      MPI_Iprobe(0, kTagResponse, comm_, &flag, &status);
      return flag != 0;
    };
    // Rank 0 answers late when it waited the whole timeout for another rank, and then names
    // that rank: give it the time to do so before blaming rank 0 itself.
    const double coordinator_timeout_s = 2 * timeout_s + 1;
    if (!PollUntil(arrived, coordinator_timeout_s)) return Missing(0, coordinator_timeout_s);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    message->resize(count);
    MPI_CHECK(
        MPI_Recv(message->data(), count, MPI_BYTE, 0, kTagResponse, comm_, MPI_STATUS_IGNORE));
    return Status::OK();
  }

  Status Allreduce(void* data, int64_t count, DType dtype) override {
    MPI_Datatype type = MpiType(dtype);
    if (type == MPI_DATATYPE_NULL) {
      return errors::InvalidArgument("Horovod allreduce has no MPI type for ", DTypeName(dtype));
    }
    MPI_Op op = dtype == DType::kFloat16 ? float16_sum_ : MPI_SUM;
    char* p = static_cast<char*>(data);
    for (int64_t done = 0; done < count; done += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, count - done));
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p + done * DTypeSize(dtype), n, type, op, comm_));
    }
    return Status::OK();
  }

  Status Allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) override {
    std::vector<int> counts, displs;
    FS_RETURN_IF_ERROR(Layout("allgather", recv_bytes, &counts, &displs));
    MPI_CHECK(MPI_Allgatherv(send, static_cast<int>(send_bytes), MPI_BYTE, recv, counts.data(),
                             displs.data(), MPI_BYTE, comm_));
    return Status::OK();
  }

  Status Broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes; done += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
      MPI_CHECK(MPI_Bcast(p + done, n, MPI_BYTE, root, comm_));
    }
    return Status::OK();
  }

  Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override {
    std::vector<int> scounts, sdispls, rcounts, rdispls;
    FS_RETURN_IF_ERROR(Layout("alltoall", send_bytes, &scounts, &sdispls));
    FS_RETURN_IF_ERROR(Layout("alltoall", recv_bytes, &rcounts, &rdispls));
    MPI_CHECK(MPI_Alltoallv(send, scounts.data(), sdispls.data(), MPI_BYTE, recv, rcounts.data(),
                            rdispls.data(), MPI_BYTE, comm_));
    return Status::OK();
  }

 private:
  bool Test(MPI_Request* request) {
    int flag = 0;
    MPI_Test(request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }

  Status Missing(int peer, double timeout_s) {
    healthy_ = false;
    if (peer == 0) {
      return errors::Unavailable(
          "Horovod: rank ", rank_, " heard nothing from rank 0 (the coordinator) for ", timeout_s,
          " s: rank 0 exited, was killed or hangs. Set FLOWSTONE_HOROVOD_TIMEOUT_SECONDS to "
          "wait longer");
    }
    return errors::Unavailable("Horovod: rank ", peer, " has not reported to the coordinator ",
                               "(rank 0) for ", timeout_s, " s: rank ", peer,
                               " exited, was killed or hangs. Set "
                               "FLOWSTONE_HOROVOD_TIMEOUT_SECONDS to wait longer");
  }

  // MPI's int counts and displacements for per-rank byte counts.
  Status Layout(const char* op, const std::vector<int64_t>& bytes, std::vector<int>* counts,
                std::vector<int>* displs) {
    int64_t offset = 0;
    for (int64_t b : bytes) {
      if (offset + b > INT_MAX) {
        return errors::Unimplemented("Horovod ", op, " of more than 2 GiB in one tensor; split ",
                                     "the tensor");
      }
      counts->push_back(static_cast<int>(b));
      displs->push_back(static_cast<int>(offset));
      offset += b;
    }
    return Status::OK();
  }

  MPI_Comm comm_ = MPI_COMM_NULL, local_ = MPI_COMM_NULL, cross_ = MPI_COMM_NULL;
  MPI_Op float16_sum_ = MPI_OP_NULL;
  int provided_ = 0;
  bool owns_mpi_ = false;
  bool healthy_ = true;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, cross_rank_ = 0, cross_size_ = 1;
  std::string name_;
  std::string outgoing_;
};

}  // namespace
}  // namespace flowstone

extern "C" flowstone::CollectiveTransport* flowstone_create_mpi_transport(std::string* error) {
  auto transport = std::make_unique<flowstone::MpiTransport>();
  flowstone::Status s = transport->Start();
  if (!s.ok()) {
    *error = s.message();
    return nullptr;
  }
  return transport.release();
}
