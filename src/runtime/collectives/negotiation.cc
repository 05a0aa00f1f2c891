#include "runtime/collectives/negotiation.h"

#include <cstring>

namespace flowstone::collectives {
namespace {

// Little-endian fixed-width fields and length-prefixed strings and vectors: every rank runs the
// same build, so no versioning is needed.
class Writer {
 public:
  void Int(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void Str(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    out_ += s;
  }
  void Ints(const std::vector<int64_t>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (int64_t x : v) Int(x);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool Int(int64_t* v) {
    if (pos_ + sizeof(*v) > in_.size()) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(*v));
    pos_ += sizeof(*v);
    return true;
  }
  bool Str(std::string* s) {
    int64_t n;
    if (!Int(&n) || n < 0 || pos_ + n > in_.size()) return false;
    s->assign(in_, pos_, n);
    pos_ += n;
    return true;
  }
  bool Ints(std::vector<int64_t>* v) {
    int64_t n;
    if (!Int(&n) || n < 0 || n > static_cast<int64_t>(in_.size())) return false;
    v->resize(n);
    for (int64_t& x : *v)
      if (!Int(&x)) return false;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

Status Corrupt(const char* what) {
  return errors::Internal("a Horovod ", what, " message from another rank is malformed; do all ",
                          "ranks run the same Flowstone build?");
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

std::string Serialize(const RankMessage& m) {
  Writer w;
  w.Int(m.shutdown);
  w.Int(static_cast<int64_t>(m.requests.size()));
  for (const RequestInfo& r : m.requests) {
    w.Str(r.name);
    w.Int(static_cast<int64_t>(r.kind));
    w.Int(static_cast<int64_t>(r.dtype));
    w.Ints(r.shape);
    w.Int(r.root);
    w.Ints(r.splits);
    w.Int(r.on_device);
  }
  return w.Take();
}

Status Parse(const std::string& bytes, RankMessage* m) {
  Reader r(bytes);
  int64_t shutdown, n;
  if (!r.Int(&shutdown) || !r.Int(&n) || n < 0) return Corrupt("request");
  m->shutdown = shutdown != 0;
  m->requests.clear();
  for (int64_t i = 0; i < n; ++i) {
    RequestInfo q;
    int64_t kind, dtype, root, on_device;
    if (!r.Str(&q.name) || !r.Int(&kind) || !r.Int(&dtype) || !r.Ints(&q.shape) || !r.Int(&root) ||
        !r.Ints(&q.splits) || !r.Int(&on_device)) {
      return Corrupt("request");
    }
    q.on_device = on_device != 0;
    q.kind = static_cast<CollectiveKind>(kind);
    q.dtype = static_cast<DType>(dtype);
    q.root = static_cast<int>(root);
    m->requests.push_back(std::move(q));
  }
  return r.done() ? Status::OK() : Corrupt("request");
}

std::string Serialize(const ResponseList& l) {
  Writer w;
  w.Int(l.shutdown);
  w.Int(static_cast<int64_t>(l.shutdown_code));
  w.Str(l.shutdown_reason);
  w.Int(static_cast<int64_t>(l.responses.size()));
  for (const Response& r : l.responses) {
    w.Int(static_cast<int64_t>(r.kind));
    w.Int(static_cast<int64_t>(r.names.size()));
    for (const std::string& name : r.names) w.Str(name);
    w.Int(static_cast<int64_t>(r.error_code));
    w.Str(r.error);
    w.Ints(r.sizes);
  }
  return w.Take();
}

Status Parse(const std::string& bytes, ResponseList* l) {
  Reader r(bytes);
  int64_t shutdown, code, n;
  if (!r.Int(&shutdown) || !r.Int(&code) || !r.Str(&l->shutdown_reason) || !r.Int(&n) || n < 0)
    return Corrupt("response");
  l->shutdown = shutdown != 0;
  l->shutdown_code = static_cast<Code>(code);
  l->responses.clear();
  for (int64_t i = 0; i < n; ++i) {
    Response resp;
    int64_t kind, names, error_code;
    if (!r.Int(&kind) || !r.Int(&names) || names < 0) return Corrupt("response");
    resp.kind = static_cast<CollectiveKind>(kind);
    resp.names.resize(names);
    for (std::string& name : resp.names)
      if (!r.Str(&name)) return Corrupt("response");
    if (!r.Int(&error_code) || !r.Str(&resp.error) || !r.Ints(&resp.sizes))
      return Corrupt("response");
    resp.error_code = static_cast<Code>(error_code);
    l->responses.push_back(std::move(resp));
  }
  return r.done() ? Status::OK() : Corrupt("response");
}

Coordinator::Coordinator(int size, int64_t fusion_threshold, double stall_timeout_s)
    : size_(size), fusion_threshold_(fusion_threshold), stall_timeout_s_(stall_timeout_s) {}

void Coordinator::Add(int rank, const RankMessage& message, double now_s) {
  if (message.shutdown && !shutdown_requested_) {
    shutdown_requested_ = true;
    shutdown_rank_ = rank;
  }
  for (const RequestInfo& q : message.requests) {
    Pending& p = pending_[q.name];
    if (p.by_rank.empty()) {
      p.by_rank.resize(size_);
      p.first_seen_s = now_s;
    }
    if (!p.by_rank[rank].name.empty()) continue;  // a kernel cannot submit a name twice
    p.by_rank[rank] = q;
    if (++p.count == size_) ready_.push_back(q.name);
  }
}

Response Coordinator::Validate(const std::string& name, const Pending& p) const {
  Response resp;
  const RequestInfo& first = p.by_rank[0];
  resp.kind = first.kind;
  resp.names = {name};
  auto fail = [&](const std::string& message) {
    resp.error_code = Code::kFailedPrecondition;
    resp.error = StrCat(message, " (tensor '", name, "'). Every rank must run the same ",
                        "collectives on tensors of the same dtype and shape.");
    return resp;
  };
  for (int r = 1; r < size_; ++r) {
    const RequestInfo& q = p.by_rank[r];
    if (q.kind != first.kind) {
      return fail(StrCat("Mismatched Horovod operations: rank 0 did an ",
                         CollectiveKindName(first.kind), ", but rank ", r, " did an ",
                         CollectiveKindName(q.kind)));
    }
    if (q.dtype != first.dtype) {
      return fail(StrCat("Mismatched data types: rank 0 had type ", DTypeName(first.dtype),
                         ", but rank ", r, " had type ", DTypeName(q.dtype)));
    }
    if (q.on_device != first.on_device) {
      auto where = [](bool device) { return device ? "a device's (GPU) memory" : "host memory"; };
      return fail(StrCat("Mismatched memory: rank 0's tensor is in ", where(first.on_device),
                         ", but rank ", r, "'s is in ", where(q.on_device),
                         "; place the collective on the same device type on every rank"));
    }
    const bool whole_shape =
        first.kind == CollectiveKind::kAllreduce || first.kind == CollectiveKind::kBroadcast;
    bool same = q.shape.size() == first.shape.size();
    for (size_t d = whole_shape ? 0 : 1; same && d < q.shape.size(); ++d)
      same = q.shape[d] == first.shape[d];
    if (!same) {
      return fail(StrCat("Mismatched ", CollectiveKindName(first.kind), " tensor shapes: rank 0 ",
                         "sent a tensor of shape ", ShapeString(first.shape), ", but rank ", r,
                         " sent a tensor of shape ", ShapeString(q.shape),
                         whole_shape ? "" : " (only the first dimension may differ)"));
    }
    if (first.kind == CollectiveKind::kBroadcast && q.root != first.root) {
      return fail(StrCat("Mismatched broadcast root ranks: rank 0 named root ", first.root,
                         ", but rank ", r, " named root ", q.root));
    }
  }
  if (first.kind == CollectiveKind::kBroadcast && (first.root < 0 || first.root >= size_)) {
    return fail(
        StrCat("broadcast root_rank ", first.root, " is not a rank of this job of size ", size_));
  }
  if (first.kind == CollectiveKind::kAllgather) {
    for (int r = 0; r < size_; ++r)
      resp.sizes.push_back(p.by_rank[r].shape.empty() ? 1 : p.by_rank[r].shape[0]);
  }
  if (first.kind == CollectiveKind::kAlltoall) {
    for (int r = 0; r < size_; ++r) {
      const RequestInfo& q = p.by_rank[r];
      if (static_cast<int>(q.splits.size()) != size_) {
        return fail(StrCat("alltoall on rank ", r, " gave ", q.splits.size(),
                           " splits for a job of size ", size_, "; give one per rank"));
      }
      resp.sizes.insert(resp.sizes.end(), q.splits.begin(), q.splits.end());
    }
  }
  return resp;
}

ResponseList Coordinator::Compute(double now_s) {
  ResponseList list;
  auto bytes_of = [&](const std::string& name) {
    const RequestInfo& q = pending_[name].by_rank[0];
    int64_t n = static_cast<int64_t>(DTypeSize(q.dtype));
    for (int64_t d : q.shape) n *= d;
    return n;
  };
  int64_t fused_bytes = 0;
  for (const std::string& name : ready_) {
    Response resp = Validate(name, pending_[name]);
    const int64_t bytes = bytes_of(name);
    // Allreduces of one dtype go into the previous response while the fusion buffer has room.
    if (!list.responses.empty() && resp.error_code == Code::kOk &&
        resp.kind == CollectiveKind::kAllreduce) {
      Response& last = list.responses.back();
      if (last.kind == CollectiveKind::kAllreduce && last.error_code == Code::kOk &&
          pending_[last.names[0]].by_rank[0].dtype == pending_[name].by_rank[0].dtype &&
          pending_[last.names[0]].by_rank[0].on_device == pending_[name].by_rank[0].on_device &&
          fused_bytes + bytes <= fusion_threshold_) {
        last.names.push_back(name);
        fused_bytes += bytes;
        continue;
      }
    }
    fused_bytes = bytes;
    list.responses.push_back(std::move(resp));
  }
  for (const std::string& name : ready_) pending_.erase(name);
  ready_.clear();
  if (shutdown_requested_) {
    list.shutdown = true;
    list.shutdown_code = Code::kAborted;
    list.shutdown_reason = StrCat(
        "Horovod has been shut down: rank ", shutdown_rank_,
        " called hvd.shutdown() or exited (an exception on that rank, or it finished training ",
        "while this rank still submitted collectives)");
    return list;
  }
  for (const auto& [name, p] : pending_) {
    if (now_s - p.first_seen_s <= stall_timeout_s_) continue;
    std::vector<int> have, missing;
    for (int r = 0; r < size_; ++r) (p.by_rank[r].name.empty() ? missing : have).push_back(r);
    list.shutdown = true;
    list.shutdown_code = Code::kAborted;
    list.shutdown_reason = StrCat(
        "Horovod stalled: tensor '", name, "' (", CollectiveKindName(p.by_rank[have[0]].kind),
        ") was submitted by rank(s) ", RankList(have), " but not by rank(s) ", RankList(missing),
        " for more than ", stall_timeout_s_, " s. Every rank must run the same collectives; ",
        "raise the limit with FLOWSTONE_HOROVOD_TIMEOUT_SECONDS if a rank is just slow");
    break;
  }
  return list;
}

}  // namespace flowstone::collectives
