// HOROVOD_TIMELINE: a Chrome trace (chrome://tracing, Perfetto) of each tensor's life on rank 0:
// NEGOTIATE_<OP> from submission until every rank submitted it, then the operation itself. Each
// tensor is a "process" row named after it, as in Horovod's timeline.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace flowstone::collectives {

class Timeline {
 public:
  ~Timeline();
  // Opens (truncates) the file and writes the array's opening bracket; false on failure.
  bool Open(const std::string& path);
  bool enabled() const { return file_ != nullptr; }
  // Phase `phase` of tensor `tensor` begins ("B") or ends ("E").
  void Begin(const std::string& tensor, const std::string& phase);
  void End(const std::string& tensor, const std::string& phase);
  // Flushes what was written, so a job killed later still leaves a readable prefix.
  void Flush();
  // Closes the JSON array.
  void Close();

 private:
  int RowOf(const std::string& tensor);
  void Event(const std::string& tensor, const std::string& phase, const char* kind);

  std::FILE* file_ = nullptr;
  bool first_ = true;
  std::map<std::string, int> rows_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace flowstone::collectives
