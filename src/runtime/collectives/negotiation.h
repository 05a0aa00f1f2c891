// Negotiation: what each rank tells rank 0 every cycle, what rank 0 answers, and rank 0's
// bookkeeping (the Coordinator) that decides which tensors are ready on every rank, in which
// order they run, which allreduces are fused, and which submissions disagree or stall.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flowstone/collectives.h"
#include "flowstone/status.h"

namespace flowstone::collectives {

// One tensor a rank submitted.
struct RequestInfo {
  std::string name;
  CollectiveKind kind = CollectiveKind::kAllreduce;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  int root = 0;
  std::vector<int64_t> splits;  // alltoall
  bool on_device = false;       // in a device's own memory (a GPU), not host memory
};

// A rank's message for one cycle: its new submissions, and whether it is shutting down.
struct RankMessage {
  bool shutdown = false;
  std::vector<RequestInfo> requests;
};

// One operation every rank runs: a fused group of allreduces, or one other collective, or an
// error for the ranks that submitted the named tensors.
struct Response {
  CollectiveKind kind = CollectiveKind::kAllreduce;
  std::vector<std::string> names;
  Code error_code = Code::kOk;
  std::string error;
  // Allgather: each rank's first dimension. Alltoall: the size x size matrix of splits, row =
  // sender.
  std::vector<int64_t> sizes;
};

struct ResponseList {
  bool shutdown = false;
  Code shutdown_code = Code::kOk;
  std::string shutdown_reason;
  std::vector<Response> responses;
};

std::string Serialize(const RankMessage& m);
std::string Serialize(const ResponseList& l);
Status Parse(const std::string& bytes, RankMessage* m);
Status Parse(const std::string& bytes, ResponseList* l);

// Rank 0's table of submissions.
class Coordinator {
 public:
  Coordinator(int size, int64_t fusion_threshold, double stall_timeout_s);

  // Records rank `rank`'s message received at `now_s` (seconds on a steady clock).
  void Add(int rank, const RankMessage& message, double now_s);
  // The responses for the tensors every rank has submitted, in the order they became ready.
  // A tensor some ranks submitted more than the stall timeout ago shuts everything down with a
  // message naming the ranks that did not submit it.
  ResponseList Compute(double now_s);

 private:
  struct Pending {
    std::vector<RequestInfo> by_rank;  // indexed by rank; name empty = not yet submitted
    int count = 0;
    double first_seen_s = 0;
  };
  // Checks that all ranks agree; the response (maybe an error) for a ready tensor.
  Response Validate(const std::string& name, const Pending& p) const;

  int size_;
  int64_t fusion_threshold_;
  double stall_timeout_s_;
  std::map<std::string, Pending> pending_;
  std::vector<std::string> ready_;  // in the order they became ready
  bool shutdown_requested_ = false;
  int shutdown_rank_ = -1;
};

}  // namespace flowstone::collectives
