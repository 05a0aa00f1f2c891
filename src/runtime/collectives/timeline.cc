#include "runtime/collectives/timeline.h"

namespace flowstone::collectives {
namespace {

// Tensor names are op names: letters, digits, '_', '/', '.', '-'; anything else is dropped
// rather than escaped.
std::string JsonSafe(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) out += c;
  return out;
}

}  // namespace

Timeline::~Timeline() { Close(); }

bool Timeline::Open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ != nullptr) std::fputs("[\n", file_);
  return file_ != nullptr;
}

int Timeline::RowOf(const std::string& tensor) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  const int row = static_cast<int>(rows_.size()) + 1;
  rows_[tensor] = row;
  std::fprintf(file_,
               "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": "
               "{\"name\": \"%s\"}}",
               first_ ? "" : ",\n", row, JsonSafe(tensor).c_str());
  first_ = false;
  return row;
}

void Timeline::Event(const std::string& tensor, const std::string& phase, const char* kind) {
  if (file_ == nullptr) return;
  const int row = RowOf(tensor);
  const long long us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - start_)
                           .count();
  std::fprintf(file_,
               ",\n{\"name\": \"%s\", \"ph\": \"%s\", \"ts\": %lld, \"pid\": %d, \"tid\": 1}",
               JsonSafe(phase).c_str(), kind, us, row);
}

void Timeline::Begin(const std::string& tensor, const std::string& phase) {
  Event(tensor, phase, "B");
}
void Timeline::End(const std::string& tensor, const std::string& phase) {
  Event(tensor, phase, "E");
}

void Timeline::Flush() {
  if (file_ != nullptr) std::fflush(file_);
}

void Timeline::Close() {
  if (file_ == nullptr) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace flowstone::collectives
